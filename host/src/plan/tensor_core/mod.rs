//! Family 3, tensor-core implicit GEMM (kernels-gpu/src/tensor_core/): both layouts share the
//! mainloop's tiles and one cost model ([`nhwc`]).

pub mod nhwc;
pub mod nhwcnc;
