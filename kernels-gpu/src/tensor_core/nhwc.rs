//! Family 3, step 2: conv2d as an implicit GEMM on tensor cores over plain channels-last data
//! (fp16 NHWC input, fp16 KRSC filter, NHWK output in fp16 or fp32; fp32 accumulate).
//!
//! The mainloop, its tile hierarchy, pipeline and swizzle are [`super::implicit_gemm`]'s; this
//! module is the addressing of plain channels-last data and the entries.
//!
//! # Addressing
//!
//! GEMM row m = (n*P + p)*Q + q, i.e. the output pixels in memory order, so `y` is the row-major
//! M x K result. Channels-last makes both operands K-major (the reduction index is contiguous):
//! a row of A for one (r, s) is 16-byte chunks of `x`, a column of B is 16-byte chunks of `w`.
//! That is why C and K must be multiples of 8 (one chunk = 8 halves): a chunk is wholly inside or
//! wholly outside the tensor. The fp32 entries (`wmma_nhwc_[3x]tf32_*`) need C a multiple of 4
//! (one chunk = 4 fp32) and K of 2 (the output pair stores).
//!
//! ```text
//! x[n][h][w][c]  at ((n*H + h)*W + w)*C + c     pixel stride C, channel stride 1
//! w[k][r][s][c]  at k*R*S*C + (r*S + s)*C + c   tap stride C
//! y[m][k]        at m*K + k
//! ```
//!
//! # Measured
//!
//! On an H100 its best tile reaches about half of cuDNN's wgmma kernels on the large layers
//! (BENCHMARKS.md): ncu shows the tensor pipe ~64% busy with 8 warps per SM, registers capping
//! residency, which is as far as `mma.sync` goes on Hopper.

use super::implicit_gemm::{divmod, Operands};
use crate::prelude::ConvShape;

/// Plain NHWC input, KRSC filter, NHWK output (C and K multiples of 8; fp32: C of 4, K of 2).
pub struct Nhwc;

impl Operands for Nhwc {
    /// C or K not a multiple of 8 (which the plan refuses) would misalign the 16-byte
    /// `cp.async`, a launch error rather than a wrong answer; checking it here too measured 9
    /// more registers on two entries (ptxas), so the kernel leaves it to the plan.
    #[inline(always)]
    fn supports(_: &ConvShape) -> bool {
        true
    }
    #[inline(always)]
    unsafe fn pixel(sh: &ConvShape, m: u32) -> (u32, u32, u32) {
        // SAFETY: the caller guarantees P*Q >= 1 and Q >= 1.
        let (n, rest) = unsafe { divmod(m, (sh.p * sh.q) as u32) };
        // SAFETY: as above.
        let (p, q) = unsafe { divmod(rest, sh.q as u32) };
        (n, p, q)
    }
    #[inline(always)]
    fn x_origin(sh: &ConvShape, n: i32, ih: i32, iw: i32) -> i32 {
        (n * sh.h).wrapping_add(ih).wrapping_mul(sh.w).wrapping_add(iw).wrapping_mul(sh.c)
    }
    #[inline(always)]
    fn x_pixel(sh: &ConvShape) -> i32 {
        sh.c
    }
    #[inline(always)]
    fn x_chan(_: &ConvShape) -> i32 {
        1
    }
    #[inline(always)]
    fn w_chan(_: &ConvShape) -> i32 {
        1
    }
    #[inline(always)]
    fn w_row(sh: &ConvShape, k: i32) -> i32 {
        k.wrapping_mul(sh.r * sh.s * sh.c)
    }
    #[inline(always)]
    fn w_tap(sh: &ConvShape) -> i32 {
        sh.c
    }
    #[inline(always)]
    fn y_off(sh: &ConvShape, m: u32, col: u32) -> u32 {
        m * sh.k as u32 + col
    }
}

// One entry per block tile of the shared table (convrs_spec::tensor_core_tiles!); the sm_90a
// module has only the wgmma entries on these operands.
#[cfg(not(target_feature = "sm_90a"))]
convrs_spec::tensor_core_tiles!(super::implicit_gemm::entries, nhwc, Nhwc);
// The same tiles on bf16 data.
#[cfg(not(target_feature = "sm_90a"))]
convrs_spec::tensor_core_tiles!(super::implicit_gemm::entries, nhwc_bf16, Nhwc);
// fp32 data on TF32 tensor cores (`wmma_nhwc_tf32_*`, `wmma_nhwc_3xtf32_*`): a 16-byte chunk is
// 4 channels, so C must be a multiple of 4 (K of 2: the fp32 pair stores).
#[cfg(not(target_feature = "sm_90a"))]
convrs_spec::tensor_core_f32_tiles!(super::implicit_gemm::f32_entries, Nhwc);
