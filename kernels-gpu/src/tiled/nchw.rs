//! Step 2 of the tiled family: the same mainloop as an implicit GEMM over NCHW input
//! (`X[n][c][h][w]`), KCRS filter (`W[k][c][r][s]`) and NKPQ output (`Y[n][k][p][q]`), fp32.
//!
//! GEMM view: M = K output channels, J = N*P*Q output positions (j = (n*P + p)*Q + q), reduction
//! over (c, r, s) visited as channel blocks of BK (outer) times every tap (inner), so the BK*R*S
//! filter values a block row needs per channel block are one contiguous run of W, fetched once
//! into L1 (`cp.async.ca`) and reused by the R*S steps that follow; the input window of a channel
//! block is reused across taps the same way.
//!
//! im2col on the fly: the copy threads own fixed tile columns. Thread `tid` copies the B
//! column `j = tid % BN` for channels `kk = tid / BN + i * (T / BN)`; it decomposes j into
//! (n, p, q) once, and per tap forms `ih = p*stride_h - pad_h + r*dil_h` (likewise iw) and one
//! predicate, so the per-step cost is an add and a select per copied value. Everything outside
//! the image, past C, past K or past N*P*Q is a `cp.async` zero-fill. The A slice is copied the
//! same way (thread owns row m = tid % BM), transposed into `[BK][BM]` by 4-byte copies.
//!
//! Grid: 1-D, block -> (channel tile, column tile), channel tile fastest (the blocks that share
//! an input tile run together). Block: 1-D, `threads(BM, BN, TM, TN)`. Tile numbers: see the
//! parent module.

use super::mainloop::{ceil_div, divmod, mainloop, thread_groups, threads, tile_index, Reduction};
use crate::prelude::*;

/// The whole kernel. See the module docs.
///
/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*C*R*S and N*K*P*Q `f32`s in the layouts above; `y` does not
/// alias the inputs; the launch follows host/src/plan/tiled_nchw.rs (the kernel traps on a
/// wrong block size or too little shared memory).
#[inline(always)]
pub unsafe fn conv<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize, const STAGES: usize>(
    x: *const f32,
    w: *const f32,
    y: *mut f32,
    sh: ConvShape,
) {
    let nthreads = threads(BM, BN, TM, TN);
    const {
        // Each copy thread owns one A row and one B column: the block covers them evenly.
        assert!(threads(BM, BN, TM, TN) % BM == 0 && threads(BM, BN, TM, TN) % BN == 0);
        assert!((BK * BM) % threads(BM, BN, TM, TN) == 0 && (BK * BN) % threads(BM, BN, TM, TN) == 0);
    }
    if block_dim_x() != nthreads as i32 {
        trap();
    }
    let tid = thread_x();
    let pq = sh.p * sh.q;
    let cols = sh.n * pq;
    let hw = sh.h * sh.w;
    let rs = sh.r * sh.s;
    // SAFETY (both): K >= 1 and N*P*Q >= 1.
    let (jt, kt) = unsafe { divmod(block_x(), ceil_div(sh.k, BM as i32)) };
    if jt >= ceil_div(cols, BN as i32) {
        return; // whole block, before any barrier: cannot happen with the plan's grid
    }
    let (j0, k0) = (jt * BN as i32, kt * BM as i32);

    // A: this thread copies row m of the tile for channels kq_a + i * T / BM.
    let (m, kq_a) = (tid % BM as i32, tid / BM as i32);
    let a_ok = k0 + m < sh.k;
    let a_row = if a_ok { (k0 + m) * sh.c * rs } else { 0 };
    // B: column j of the tile, i.e. output (n, p, q), for channels kq_b + i * T / BN.
    let (jc, kq_b) = (tid % BN as i32, tid / BN as i32);
    let jg = j0 + jc;
    let b_ok = jg < cols;
    // SAFETY: P*Q >= 1 and Q >= 1.
    let (n, pix) = unsafe { divmod(if b_ok { jg } else { 0 }, pq) };
    let (p, q) = unsafe { divmod(pix, sh.q) };
    let (ih0, iw0) = (p * sh.stride_h - sh.pad_h, q * sh.stride_w - sh.pad_w);
    let x_img = n * sh.c * hw;

    let stage = |a_dst: u32, b_dst: u32, c0: i32, r: i32, s: i32| {
        let tap = r * sh.s + s;
        unroll!(16: BK * BM / nthreads, i => {
            let kk = kq_a + (i * (nthreads / BM)) as i32;
            let ok = a_ok && c0 + kk < sh.c;
            let (from, bytes) = if ok { (w.wrapping_add((a_row + (c0 + kk) * rs + tap) as usize), 4) } else { (w, 0) };
            // SAFETY: (kk, m) < (BK, BM) is inside the A slice; `from` is W[k0+m][c0+kk][r][s] when
            // ok (all indices in range); nothing is read otherwise.
            unsafe { cp_async_4(a_dst + ((kk * BM as i32 + m) * 4) as u32, from, bytes) };
        });
        let (ih, iw) = (ih0 + r * sh.dil_h, iw0 + s * sh.dil_w);
        let tap_ok = b_ok && ih >= 0 && ih < sh.h && iw >= 0 && iw < sh.w;
        let at = x_img + ih * sh.w + iw;
        unroll!(16: BK * BN / nthreads, i => {
            let kk = kq_b + (i * (nthreads / BN)) as i32;
            let ok = tap_ok && c0 + kk < sh.c;
            let (from, bytes) = if ok { (x.wrapping_add((at + (c0 + kk) * hw) as usize), 4) } else { (x, 0) };
            // SAFETY: (kk, jc) < (BK, BN) is inside the B slice; `from` is X[n][c0+kk][ih][iw]
            // when ok (all indices in range); nothing is read otherwise.
            unsafe { cp_async_4(b_dst + ((kk * BN as i32 + jc) * 4) as u32, from, bytes) };
        });
    };
    let (tm, tn) = thread_groups::<BM, BN, TM, TN>(tid);
    let red = Reduction { c: sh.c, r_lo: 0, r_hi: sh.r, s_lo: 0, s_hi: sh.s };
    // SAFETY: every thread reaches this with the same reduction; the block size was checked.
    let acc = unsafe { mainloop::<BM, BN, BK, TM, TN, STAGES>(red, tm, tn, stage) };

    // Epilogue: Y[n][k][p][q]; a thread's columns come in runs of 4 adjacent j.
    unroll!(8: TN, j => {
        let jg = j0 + tile_index(tn, j, BN / (TN / 4));
        if jg < cols {
            // SAFETY: P*Q >= 1.
            let (n, pix) = unsafe { divmod(jg, pq) };
            let base = n * sh.k * pq + pix;
            unroll!(8: TM, i => {
                let k = k0 + tile_index(tm, i, BM / (TM / 4));
                if k < sh.k {
                    // SAFETY: (n, k, pix) is an output; only this thread writes it.
                    unsafe { *y.add((base + k * pq) as usize) = acc[i][j] };
                }
            });
        }
    });
}

// Entry points `tiled_nchw_{BM}x{BN}`: the instantiations the host plan chooses from (the table
// in the parent module). BK = 8, 3 stages throughout.
crate::conv_kernel!(fn tiled_nchw_128x128(x: *const f32, w: *const f32, y: *mut f32) => conv::<128, 128, 8, 8, 8, 3>);
crate::conv_kernel!(fn tiled_nchw_128x64(x: *const f32, w: *const f32, y: *mut f32) => conv::<128, 64, 8, 8, 8, 3>);
crate::conv_kernel!(fn tiled_nchw_64x128(x: *const f32, w: *const f32, y: *mut f32) => conv::<64, 128, 8, 8, 8, 3>);
crate::conv_kernel!(fn tiled_nchw_64x64(x: *const f32, w: *const f32, y: *mut f32) => conv::<64, 64, 8, 8, 8, 3>);
crate::conv_kernel!(fn tiled_nchw_128x32(x: *const f32, w: *const f32, y: *mut f32) => conv::<128, 32, 8, 8, 4, 3>);
crate::conv_kernel!(fn tiled_nchw_32x128(x: *const f32, w: *const f32, y: *mut f32) => conv::<32, 128, 8, 4, 8, 3>);
