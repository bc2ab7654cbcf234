//! Family 2, tiled shared-memory convolution (kernels-gpu/src/tiled/): both kernels share one
//! tile list and one cost model (`hwcn::choose`).

pub mod hwcn;
pub mod nchw;
