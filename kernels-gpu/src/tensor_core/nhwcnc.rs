//! Family 3, step 1: tensor-core convolution on the blocked layouts (input NHWC16n16c, filter
//! RSCK16k16c, output NPQK16n16k; fp16 in, fp32 accumulate, fp16 or fp32 out), on the same implicit-GEMM
//! mainloop as `wmma_nhwc` ([`super::implicit_gemm`]: tile hierarchy, pipeline, swizzle).
//!
//! # The blocked layouts
//!
//! ```text
//! x  (N/16, H, W, C/16, 16 n, 16 c)    x[n][h][w][c] at ((n/16*H + h)*W + w)*16C + (c/16)*256 + (n%16)*16 + c%16
//! w  (R, S, C/16, K/16, 16 k, 16 c)    w[k][c][r][s] at (r*S + s)*C*K + (c/16)*16K + (k/16)*256 + (k%16)*16 + c%16
//! y  (N/16, P, Q, K/16, 16 n, 16 k)    y[n][k][p][q] at ((n/16*P + p)*Q + q)*16K + (k/16)*256 + (n%16)*16 + k%16
//! ```
//!
//! Each (h, w) position of `x` holds 16 x 16 tiles of batch x input channel and each filter tap
//! 16 x 16 tiles of output x input channel, both with the reduction index (input channel)
//! innermost: the same "reduction-contiguous" property that NHWC / KRSC give, in runs of 16
//! channels (32 bytes). N, C and K must be multiples of 16.
//!
//! # The GEMM mapping
//!
//! GEMM row m = ((n/16*P + p)*Q + q)*16 + n%16: a batch tile's 16 images of one output pixel are
//! 16 consecutive rows, so the 16 rows x 16 channels of A for one tap are one contiguous 512-byte
//! input tile, the 16 columns x 16 channels of B one contiguous filter tile, and rows m of `y` are
//! the output's tiles in memory order. Every address is still a linear map:
//!
//! ```text
//! A row m, tap (r, s), channel c (c multiple of 8; an 8-channel chunk never straddles a
//! 16-channel block since C % 16 == 0):
//!   origin(n, ih, iw) + (r*dil_h*W + s*dil_w)*16C + (c/16)*256 + c%16
//!   origin(n, ih, iw) = ((n/16*H + ih)*W + iw)*16C + (n%16)*16        pixel stride 16C
//! B column k:  (k/16)*256 + (k%16)*16 + (r*S + s)*C*K + (c/16)*16K + c%16   tap stride C*K
//! y (m, k):    (m/16)*16K + (m%16)*16 + (k/16)*256 + k%16   (the epilogue's (k, k+1) pairs stay
//!              inside one 16-block)
//! ```
//!
//! so the mainloop is `wmma_nhwc`'s with other strides: the row decomposition happens once
//! before it, a k-tile of 32 or 64 channels advances by `c0*16` in `x` and `c0*K` in `w`, and
//! the taps by running offsets (no divisions in the mainloop). The plan is `wmma_nhwc`'s tile
//! choice with M = N*P*Q.
//!
//! # History
//!
//! The first version used the `wmma.*` PTX API (filter tiles then (16 c, 16 k), so B was
//! row-major) with its own mainloop: 32-channel steps, 3 stages, padded shared rows, no
//! fragment pipelining. ncu showed it L2-bandwidth bound (L2 86%, tensor pipes 37% on a 128x128
//! tile) and it ran far behind cuDNN (BENCHMARKS.md, "Figures moved out of code comments"). It
//! was replaced by this shared mainloop; the filter layout became RSCK16k16c so that B is
//! reduction-contiguous like A.
//!
//! # Shared memory: whole tiles
//!
//! `Blocked` sets [`Operands::TILED`]: a k-tile sits in shared memory as the global 16 x 16
//! tiles themselves (512 bytes each, rows of 32 bytes, halves XORed with `(row >> 2) & 1`), and
//! each warp copies whole tiles, lane i the i-th 16-byte piece (see
//! [`super::implicit_gemm`]'s "Swizzle"). The first version used `wmma_nhwc`'s swizzled rows,
//! where a tile's 16 rows land in 16 different shared rows; ncu on the 128x256k64 entries and
//! the speed-target shape then showed 42.0 M L2 read requests carrying one 32-byte sector each
//! (`wmma_nhwc`: 19.3 M requests for 38.7 M sectors), L2 throughput 66% against 45%, SM
//! throughput 55% against 70%, and it ran 25% slower than `wmma_nhwc`. Remapping only the
//! copying lanes (a warp reading one 512-byte tile in lane order, shared rows unchanged) changed
//! neither the request count nor the time; keeping the tile contiguous in shared memory as well
//! made the blocked kernel as fast as `wmma_nhwc` (BENCHMARKS.md, "Figures moved out of code
//! comments"). This fits a `cp.async` request carrying several sectors only where they land
//! contiguously in shared memory (not confirmed with ncu after the change: no profile was
//! taken). ptxas: 80 to 238 registers, no spills.

use super::implicit_gemm::{divmod, Operands};
use crate::prelude::ConvShape;

/// NHWC16n16c input, RSCK16k16c filter, NPQK16n16k output (N, C, K multiples of 16).
pub struct Blocked;

impl Operands for Blocked {
    /// A 16-row group's 16 channels are one 512-byte tile of `x` or `w`: copied whole.
    const TILED: bool = true;
    #[inline(always)]
    fn supports(sh: &ConvShape) -> bool {
        sh.n % 16 == 0 && sh.c % 16 == 0 && sh.k % 16 == 0
    }
    #[inline(always)]
    unsafe fn pixel(sh: &ConvShape, m: u32) -> (u32, u32, u32) {
        // SAFETY: the caller guarantees P*Q >= 1 and Q >= 1.
        let (nb, pq) = unsafe { divmod(m >> 4, (sh.p * sh.q) as u32) };
        // SAFETY: as above.
        let (p, q) = unsafe { divmod(pq, sh.q as u32) };
        (nb * 16 + (m & 15), p, q)
    }
    #[inline(always)]
    fn x_origin(sh: &ConvShape, n: i32, ih: i32, iw: i32) -> i32 {
        ((n >> 4) * sh.h).wrapping_add(ih).wrapping_mul(sh.w).wrapping_add(iw).wrapping_mul(16 * sh.c).wrapping_add((n & 15) * 16)
    }
    #[inline(always)]
    fn x_pixel(sh: &ConvShape) -> i32 {
        16 * sh.c
    }
    #[inline(always)]
    fn x_chan(_: &ConvShape) -> i32 {
        16
    }
    #[inline(always)]
    fn w_chan(sh: &ConvShape) -> i32 {
        sh.k
    }
    #[inline(always)]
    fn w_row(_: &ConvShape, k: i32) -> i32 {
        (k >> 4) * 256 + (k & 15) * 16
    }
    #[inline(always)]
    fn w_tap(sh: &ConvShape) -> i32 {
        sh.c * sh.k
    }
    #[inline(always)]
    fn y_off(sh: &ConvShape, m: u32, col: u32) -> u32 {
        (m >> 4) * 16 * sh.k as u32 + (m & 15) * 16 + (col >> 4) * 256 + (col & 15)
    }
}

// One entry per block tile of the shared table (convrs_spec::tensor_core_tiles!).
convrs_spec::tensor_core_tiles!(super::implicit_gemm::entries, nhwcnc, Blocked);
// The same tiles on bf16 data.
convrs_spec::tensor_core_tiles!(super::implicit_gemm::entries, nhwcnc_bf16, Blocked);
