//! Family 2, tiled shared-memory convolution (fp32): not implemented yet.

pub mod hwcn;
pub mod nchw;
