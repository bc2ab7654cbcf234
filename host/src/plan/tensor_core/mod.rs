//! Family 3, tensor-core implicit GEMM (kernels-gpu/src/tensor_core/): both `mma.sync` layouts
//! share the mainloop's tiles and one cost model ([`nhwc`]), which the fp32 entries of the same
//! mainloop ([`nhwc_f32`], TF32 and 3xTF32) use at their own rate; the Hopper steps (`wgmma`) are
//! `plan::hopper`, their own tiles and rates on the same wave model; [`small_c`] takes layers
//! with few input channels, [`patch`] the same layers from a shared-memory patch.

pub mod nhwc;
pub mod nhwc_f32;
pub mod nhwcnc;
pub mod patch;
pub mod small_c;

use crate::Conv2d;

/// GEMM M of the implicit GEMM: the output pixels N*P*Q, one row each.
pub(crate) fn gemm_m(p: &Conv2d) -> usize {
    let (out_p, out_q) = p.output_hw();
    p.n * out_p * out_q
}
