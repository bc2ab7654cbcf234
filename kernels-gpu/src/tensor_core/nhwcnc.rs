//! Family 3, step 1: tensor-core convolution with `wmma` on the blocked layouts
//! (input NHWC16n16c, filter RSCK16c16k, output NPQK16n16k; fp16 in, fp32 accumulate and out).
//!
//! # The GEMM
//!
//! For one output pixel (p, q) the convolution is a GEMM of (batch x input channels) by (input
//! channels x output channels), summed over the R*S filter taps. The blocked layouts store
//! exactly the 16x16 tiles of those GEMMs contiguously: input tile (n/16, h, w, c/16) is a
//! row-major 16 (batch) x 16 (channel) A operand, filter tile (r, s, c/16, k/16) a row-major
//! 16 (channel) x 16 (output channel) B operand, output tile (n/16, p, q, k/16) a row-major
//! 16 x 16 fp32 result. The kernel runs the implicit GEMM
//!
//! ```text
//! M = P*Q*N/16 row tiles of 16, row tile t = (pixel t / (N/16), batch tile t % (N/16))
//! N = K output channels          reduction = R*S*C: (r, s, 16-channel chunk), chunk fastest
//! ```
//!
//! so one block may cover several batch tiles of one pixel (large N) or several pixels (small
//! N, e.g. 32 images of 7x7); no tile is wasted on a batch smaller than the block tile.
//!
//! # Tile hierarchy (`conv::<BM, BN, WM, WN, CH, ST, ALD, BLD>`)
//!
//! ```text
//! grid        1-D: blocks = ceil(M row tiles / (BM/16)) x ceil(K / BN), K block fastest
//! block tile  BM (rows: batch x pixels) x BN (output channels); WM x WN warps
//! warp tile   BM/WM x BN/WN = FM x FN fragments of 16 x 16 (FM, FN <= 4)
//! fragment    wmma m16n16k16: 16x16 fp16 A and B, 16x16 fp32 accumulator (8 floats a lane)
//! mainloop    step = one filter tap (r, s) x CH 16-channel chunks (reduction depth 16*CH);
//!             ST-stage cp.async pipeline, one barrier per step
//! epilogue    each accumulator straight to its output tile with wmma.store (global, 1 KiB)
//! ```
//!
//! Entries (all CH = 2: 32 channels a step, ST = 3 stages; warp tile 64 x 32 = 4 x 2
//! fragments = 64 fp32 accumulators a lane, except 64x64's 32 x 32):
//!
//! | entry | BM x BN | warps | threads | registers (sm_90) | shared memory | blocks / SM |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | `wmma_nhwcnc_m128n256` | 128 x 256 | 2 x 8 | 512 | 126 | 3 x (10240 + 16896) B | 1 |
//! | `wmma_nhwcnc_m256n128` | 256 x 128 | 4 x 4 | 512 | 126 | 3 x (20480 + 8704) B | 1 |
//! | `wmma_nhwcnc_m128n128` | 128 x 128 | 2 x 4 | 256 | 126 | 3 x (10240 + 8704) B | 2 |
//! | `wmma_nhwcnc_m256n64` | 256 x 64 | 4 x 2 | 256 | 124 | 3 x (20480 + 4608) B | 2 |
//! | `wmma_nhwcnc_m128n64` | 128 x 64 | 2 x 2 | 128 | 125 | 3 x (10240 + 4608) B | 4 |
//! | `wmma_nhwcnc_m64n128` | 64 x 128 | 1 x 4 | 128 | 124 | 3 x (5120 + 8704) B | 4 |
//! | `wmma_nhwcnc_m64n64` | 64 x 64 | 2 x 2 | 128 | 78 | 3 x (5120 + 4608) B | 6 |
//!
//! A warp loads 4 A + 2 B fragments per 8 mma per 16-channel chunk (ptxas turns them into
//! `LDSM.16.M88.4` / `LDSM.16.MT88.4` and each mma into two `HMMA.16816.F32`). The 512-thread
//! entries need at most 128 registers a thread to launch; ptxas gives 126 (sm_90) and 128
//! (sm_80 PTX), with no spills.
//!
//! # Why the large tiles (H100, speed-target shape 256,256,14,14 -> 512, 3x3, pad 1)
//!
//! ncu on the 128 x 128 tile: L2 throughput 86%, tensor pipes 37% active, no shared-memory
//! bank conflicts on the stores and 0.1% extra wavefronts on the loads. Each block copies
//! (BM + BN) x 32 halves from L2 per step for BM x BN x 32 MACs, so the mainloop is L2-bandwidth
//! bound and only a larger tile raises the FLOPs per byte: 128 x 128 ran 0.59 ms (200 TFLOP/s),
//! 128 x 256 0.486 ms (244 TFLOP/s); cuDNN's fp16 NHWC kernel (9.14) took 0.154 to 0.157 ms in
//! the same runs. 64-channel steps and 4 stages changed nothing measurable. Issuing the next
//! stage's copies after the step's mma instead of before gained 5% on 256 x 128 (0.516 ->
//! 0.489 ms) and nothing on 128 x 128.
//!
//! # Shared memory, per stage
//!
//! ```text
//! A  BM rows x (16*CH + 8) halves   row = (row tile, batch row), column = channel of the step
//! B  16*CH rows x (BN + 8) halves   row = channel of the step, column = output channel
//! ```
//!
//! The 8 halves (16 bytes) of padding per row make consecutive rows start one 16-byte bank group
//! apart (row pitch 80 B = 5 groups for CH = 2; 144, 272 and 528 B = 9, 17 and 33 groups for
//! BN = 64, 128 and 256), so the eight
//! 16-byte row pieces each phase of `wmma.load` (an `ldmatrix` underneath) reads fall in eight
//! different bank groups: no conflicts. Every fragment address stays 32-byte aligned, as `wmma`
//! requires.
//!
//! # Copies
//!
//! Each step copies BM*CH*2 A pieces and 2*CH*BN B pieces of 16 bytes with `cp.async.cg`. A
//! warp's 32 lanes take one whole 512-byte input or filter tile, so every global read is
//! coalesced. Padding, batch rows past the last row tile, output channels past K and the
//! second chunk when C/16 is odd are zero-filled by the copy itself (`src-size` 0, nothing
//! read), so the mainloop has no edge cases and padding costs no extra pass.

#![allow(unused_comparisons)]

use core::num::NonZeroU32;

use crate::prelude::wmma::{self, FragF16, FragF32};
use crate::prelude::*;

/// Repeats `$body` with `$i` bound to 0, 1, ... `$n - 1` (at most 8) as straight-line copies,
/// so every fragment index is a compile-time constant and fragments live in registers.
macro_rules! unroll8 {
    ($n:expr, $i:ident => $body:block) => {{
        unroll8!(@each $n, $i, $body, 0 1 2 3 4 5 6 7)
    }};
    (@each $n:expr, $i:ident, $body:block, $($k:literal)*) => {{
        $( if $k < $n { let $i: usize = $k; $body } )*
    }};
}

/// [`unroll8`] for fragment loops (at most 4 fragments per warp-tile side).
macro_rules! unroll4 {
    ($n:expr, $i:ident => $body:block) => {{
        unroll8!(@each $n, $i, $body, 0 1 2 3)
    }};
}

/// `(a / b, a % b)` for `a >= 0` and `b >= 1`, unsigned and without a panic branch.
///
/// # Safety
/// `b >= 1`.
#[inline(always)]
unsafe fn divmod(a: i32, b: i32) -> (i32, i32) {
    // SAFETY: the caller guarantees b >= 1.
    let d = unsafe { NonZeroU32::new_unchecked(b as u32) };
    ((a as u32 / d) as i32, (a as u32 % d) as i32)
}

/// Halves of one 16x16 tile.
const TILE: i32 = 256;

/// Where the producer is in the reduction: filter tap (r, s) and the first 16-channel chunk
/// `cb` of the step, with the offsets derived from them.
#[derive(Clone, Copy)]
struct Cursor {
    r: i32,
    s: i32,
    cb: i32,
    /// r * dil_h and s * dil_w: the tap's shift in the input.
    dh: i32,
    dw: i32,
    /// Halves from the filter's start to tile (r, s, cb, 0).
    w_off: i32,
}

/// Shared-memory bytes one launch of `conv::<BM, BN, .., CH, ST, ..>` needs (the host plan
/// computes the same): ST stages of A and B plus 32 bytes to align the first stage.
pub const fn shared_bytes(bm: usize, bn: usize, ch: usize, st: usize) -> usize {
    st * (bm * (16 * ch + 8) * 2 + 16 * ch * (bn + 8) * 2) + 32
}

/// The whole kernel. See the module docs for the tiling; `ALD = 16*CH + 8` and `BLD = BN + 8`
/// are the shared row pitches in halves (const parameters so `wmma.load` gets an immediate stride).
///
/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*C*R*S halves and N*K*P*Q floats in the blocked layouts, with N,
/// C and K multiples of 16 (the kernel traps otherwise); `y` does not alias the inputs; the
/// launch has 32*WM*WN threads in x, the plan's 1-D grid and at least [`shared_bytes`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn conv<
    const BM: usize,
    const BN: usize,
    const WM: usize,
    const WN: usize,
    const CH: usize,
    const ST: usize,
    const ALD: u32,
    const BLD: u32,
>(
    x: *const u16,
    w: *const u16,
    y: *mut f32,
    sh: ConvShape,
) {
    const {
        assert!(BM % (16 * WM) == 0 && BN % (16 * WN) == 0);
        assert!(BM / 16 / WM <= 4 && BN / 16 / WN <= 4);
        assert!((BM * CH * 2) % (32 * WM * WN) == 0 && (BM * CH * 2) / (32 * WM * WN) <= 8);
        assert!((BN * CH * 2) % (32 * WM * WN) == 0 && (BN * CH * 2) / (32 * WM * WN) <= 8);
        assert!(ST >= 2 && ST <= 4 && CH >= 1 && CH <= 4);
        assert!(ALD as usize == 16 * CH + 8 && BLD as usize == BN + 8);
    }
    let nt = (32 * WM * WN) as i32;
    let (fm, fn_) = (BM / 16 / WM, BN / 16 / WN);
    let a_per = BM * CH * 2 / (32 * WM * WN);
    let b_per = BN * CH * 2 / (32 * WM * WN);
    let a_bytes = (BM as u32) * ALD * 2;
    let stage_bytes = a_bytes + (16 * CH as u32) * BLD * 2;

    if block_dim_x() != nt || sh.n % 16 != 0 || sh.c % 16 != 0 || sh.k % 16 != 0 {
        trap(); // the plan launches 32*WM*WN threads and refuses other sizes
    }
    if dynamic_smem_bytes() < shared_bytes(BM, BN, CH, ST) as u32 {
        trap(); // launched with less shared memory than the plan computes
    }
    // The array is declared 16-byte aligned; wmma needs 32 (the plan adds 32 bytes of slack).
    let smem = (dynamic_smem_u32() + 31) & !31;

    let tid = thread_x();
    // Warp index is the same on all lanes: every branch on it below is warp-uniform.
    let warp = tid / 32;
    let (wm, wn) = (warp / WN as i32, warp % WN as i32);
    let (cbs, kbs, nbs) = (sh.c / 16, sh.k / 16, sh.n / 16);
    let m_tiles = sh.p * sh.q * nbs;
    let bnt = (BN / 16) as i32;
    let k_blocks = (kbs + bnt - 1) / bnt;
    // SAFETY: k_blocks >= 1 (K >= 16).
    let (mbi, kbi) = unsafe { divmod(block_x(), k_blocks) };
    let t0 = mbi * (BM / 16) as i32;
    let kb0 = kbi * bnt;

    // A pieces of this thread: piece i = tid + i*NT is lane tid%32 of (row tile, chunk kk):
    // batch row (tid%32)/2, 8-channel half tid%2 of the 512-byte input tile.
    let inner = tid % 32;
    let mut a_ok = [false; 8];
    let mut a_ih0 = [0i32; 8];
    let mut a_iw0 = [0i32; 8];
    let mut a_nbh = [0i32; 8];
    let mut a_kk = [0i32; 8];
    let mut a_dst = [0u32; 8];
    unroll8!(a_per, i => {
        let ci = tid + i as i32 * nt;
        let kk = (ci / 32) % CH as i32;
        let t = ci / (32 * CH as i32);
        let tg = t0 + t;
        a_ok[i] = tg < m_tiles;
        let tg = if a_ok[i] { tg } else { 0 };
        // SAFETY: nbs >= 1 and Q >= 1.
        let (pix, nb) = unsafe { divmod(tg, nbs) };
        let (p, q) = unsafe { divmod(pix, sh.q) };
        a_ih0[i] = p * sh.stride_h - sh.pad_h;
        a_iw0[i] = q * sh.stride_w - sh.pad_w;
        a_nbh[i] = nb * sh.h;
        a_kk[i] = kk;
        a_dst[i] = ((t * 16 + inner / 2) as u32) * ALD * 2 + (kk as u32) * 32 + (inner as u32 % 2) * 16;
    });
    // B pieces: piece i = tid + i*NT is lane tid%32 of (chunk kk, output tile kbt): channel row
    // (tid%32)/2, 8-output-channel half tid%2 of the 512-byte filter tile.
    let mut b_ok = [false; 8];
    let mut b_kk = [0i32; 8];
    let mut b_src = [0i32; 8];
    let mut b_dst = [0u32; 8];
    unroll8!(b_per, i => {
        let ci = tid + i as i32 * nt;
        let kbt = (ci / 32) % bnt;
        let kk = ci / (32 * bnt);
        b_ok[i] = kb0 + kbt < kbs;
        b_kk[i] = kk;
        b_src[i] = (kk * kbs + kb0 + kbt) * TILE + inner * 8;
        b_dst[i] = ((kk * 16 + inner / 2) as u32) * BLD * 2 + (kbt as u32) * 32 + (inner as u32 % 2) * 16;
    });

    // Starts the copies of the step at `cur` into the stage at `base`.
    let load = |base: u32, cur: &Cursor| {
        unroll8!(a_per, i => {
            let ih = a_ih0[i] + cur.dh;
            let iw = a_iw0[i] + cur.dw;
            let cb = cur.cb + a_kk[i];
            let ok = a_ok[i] && (ih as u32) < sh.h as u32 && (iw as u32) < sh.w as u32 && cb < cbs;
            // Inside the input when ok: (nb, ih, iw, cb) are all in range.
            let off = (((a_nbh[i] + ih) * sh.w + iw) * cbs + cb) * TILE + inner * 8;
            let src = if ok { x.wrapping_add(off as usize) } else { x };
            // SAFETY: the destination is a 16-byte piece of this stage's A (row < BM, column < 16*CH);
            // src is 16-byte aligned and valid for 16 bytes when ok, and nothing is read otherwise.
            unsafe { cp_async_16(base + a_dst[i], src as *const f32, if ok { 16 } else { 0 }) };
        });
        unroll8!(b_per, i => {
            let ok = b_ok[i] && cur.cb + b_kk[i] < cbs;
            let src = if ok { w.wrapping_add((cur.w_off + b_src[i]) as usize) } else { w };
            // SAFETY: as for A: a piece of this stage's B (row < 16*CH, column < BN); the tile
            // (r, s, cb + kk, kb0 + kbt) exists when ok.
            unsafe { cp_async_16(base + a_bytes + b_dst[i], src as *const f32, if ok { 16 } else { 0 }) };
        });
    };
    let chunk_groups = (cbs + CH as i32 - 1) / CH as i32;
    let steps = sh.r * sh.s * chunk_groups;
    let advance = |cur: &mut Cursor| {
        cur.cb += CH as i32;
        cur.w_off += CH as i32 * kbs * TILE;
        if cur.cb >= cbs {
            // The filter's next tap starts right after this tap's cbs chunks.
            cur.w_off += (cbs - cur.cb) * kbs * TILE;
            cur.cb = 0;
            cur.s += 1;
            cur.dw += sh.dil_w;
            if cur.s == sh.s {
                cur.s = 0;
                cur.dw = 0;
                cur.r += 1;
                cur.dh += sh.dil_h;
            }
        }
    };

    let mut acc = [[FragF32::default(); 4]; 4];
    let a_warp = (wm as u32) * (fm as u32) * 16 * ALD * 2;
    let b_warp = a_bytes + (wn as u32) * (fn_ as u32) * 32;
    // Every thread runs the same number of steps: the barriers below are reached uniformly.
    let compute = |acc: &mut [[FragF32; 4]; 4], base: u32| {
        unroll4!(CH, kk => {
            let mut b = [FragF16::default(); 4];
            unroll4!(fn_, j => {
                // SAFETY: rows 16kk.. of B, columns of this warp's fragment j: inside the stage;
                // 32-byte aligned (BLD*2*16 and 32j are multiples of 32); written before the barrier.
                b[j] = unsafe { wmma::load_b_shared::<BLD>(base + b_warp + (kk as u32) * 16 * BLD * 2 + (j as u32) * 32) };
            });
            unroll4!(fm, i => {
                // SAFETY: rows of this warp's fragment i, channels 16kk..: inside the stage, aligned.
                let a = unsafe { wmma::load_a_shared::<ALD>(base + a_warp + (i as u32) * 16 * ALD * 2 + (kk as u32) * 32) };
                unroll4!(fn_, j => {
                    wmma::mma(&mut acc[i][j], &a, &b[j]);
                });
            });
        });
    };

    let mut cur = Cursor { r: 0, s: 0, cb: 0, dh: 0, dw: 0, w_off: 0 };
    // Prologue: the first ST-1 steps in flight, one commit group each (empty past the end).
    unroll8!(ST - 1, st => {
        if (st as i32) < steps {
            load(smem + st as u32 * stage_bytes, &cur);
            advance(&mut cur);
        }
        cp_async_commit();
    });
    let mut rd = 0u32;
    let mut wr = (ST - 1) as u32;
    for step in 0..steps {
        // Step `step`'s group has landed (at most ST-2 newer ones pending); the barrier makes all
        // threads' copies visible and proves everyone finished step-1, whose stage `wr` is
        // refilled below.
        if ST == 2 {
            wmma::cp_async_wait_group::<0>();
        } else if ST == 3 {
            wmma::cp_async_wait_group::<1>();
        } else {
            wmma::cp_async_wait_group::<2>();
        }
        sync_threads();
        compute(&mut acc, smem + rd * stage_bytes);
        // The refill goes after this step's mma, so the warp's tensor-core work starts right
        // after the barrier (measured: 256x128 tile 0.489 ms with, 0.516 ms without, on the
        // speed-target shape); stage `wr` is free since the barrier.
        if step + (ST as i32 - 1) < steps {
            load(smem + wr * stage_bytes, &cur);
            advance(&mut cur);
        }
        cp_async_commit();
        wr = if wr + 1 == ST as u32 { 0 } else { wr + 1 };
        rd = if rd + 1 == ST as u32 { 0 } else { rd + 1 };
    }

    // Epilogue: row tile t of the block is output tile (nb, p, q, kb): 16 x 16 floats, contiguous.
    unroll4!(fm, i => {
        let tg = t0 + wm * fm as i32 + i as i32;
        if tg < m_tiles {
            // SAFETY: nbs >= 1, Q >= 1.
            let (pix, nb) = unsafe { divmod(tg, nbs) };
            let (p, q) = unsafe { divmod(pix, sh.q) };
            let row = ((nb * sh.p + p) * sh.q + q) * kbs;
            unroll4!(fn_, j => {
                let kb = kb0 + wn * fn_ as i32 + j as i32;
                if kb < kbs {
                    // SAFETY: tile (nb, p, q, kb) is inside y (all four in range), 1 KiB aligned,
                    // and only this warp of this block writes it; tg and kb are warp-uniform.
                    unsafe { wmma::store_global_f32::<16>(y.wrapping_add(((row + kb) * TILE) as usize), &acc[i][j]) };
                }
            });
        }
    });
}

crate::conv_kernel!(fn wmma_nhwcnc_m128n256(x: *const u16, w: *const u16, y: *mut f32) => conv::<128, 256, 2, 8, 2, 3, 40, 264>);
crate::conv_kernel!(fn wmma_nhwcnc_m256n128(x: *const u16, w: *const u16, y: *mut f32) => conv::<256, 128, 4, 4, 2, 3, 40, 136>);
crate::conv_kernel!(fn wmma_nhwcnc_m128n128(x: *const u16, w: *const u16, y: *mut f32) => conv::<128, 128, 2, 4, 2, 3, 40, 136>);
crate::conv_kernel!(fn wmma_nhwcnc_m256n64(x: *const u16, w: *const u16, y: *mut f32) => conv::<256, 64, 4, 2, 2, 3, 40, 72>);
crate::conv_kernel!(fn wmma_nhwcnc_m128n64(x: *const u16, w: *const u16, y: *mut f32) => conv::<128, 64, 2, 2, 2, 3, 40, 72>);
crate::conv_kernel!(fn wmma_nhwcnc_m64n128(x: *const u16, w: *const u16, y: *mut f32) => conv::<64, 128, 1, 4, 2, 3, 40, 136>);
crate::conv_kernel!(fn wmma_nhwcnc_m64n64(x: *const u16, w: *const u16, y: *mut f32) => conv::<64, 64, 2, 2, 2, 3, 40, 72>);
