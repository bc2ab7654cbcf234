//! Step 1 of the tiled family: HWCN input (`X[h][w][c][n]`), RSCK filter (`W[r][s][c][k]`),
//! HWKN output (`Y[p][q][k][n]`), fp32.
//!
//! A block computes one output pixel (p, q) for a BM x BN tile of (output channel, batch).
//! For that pixel the conv is a plain GEMM `Y[k][n] = sum_(c,r,s) W[r][s][c][k] * X[ih][iw][c][n]`
//! whose operand rows are contiguous in memory, so each step copies BK rows of BM filter values
//! and BK rows of BN input values with 16-byte `cp.async` (when K % 4 == 0, resp. N % 4 == 0,
//! and the buffer is 16-byte aligned; otherwise four 4-byte copies per word, each predicated).
//! Taps that fall in the padding are the same for the whole block (one pixel), so they are
//! skipped outright rather than multiplied by zeros: 3x3 pad 1 on 14 x 14 saves 9% of the FMAs.
//!
//! Grid: 1-D, block -> (batch tile, channel tile, pixel), batch tile fastest. Block: 1-D,
//! `threads(BM, BN, TM, TN)`. Tile numbers: see the parent module.

use super::mainloop::{ceil_div, mainloop, quadrant_stride, thread_groups, threads, tid_x_volatile, tile_index, Reduction, A_PAD};
use crate::prelude::*;

/// Copies the 16-byte words of a `[BK][COLS]` slice (rows `pitch` floats apart in shared
/// memory) whose row `kk` starts at global float `row_start(kk)` (or is zero when `row_start`
/// says `None`), columns `col0..col0 + COLS` of `limit`. Thread `tid` of `nthreads` (a
/// constant after inlining) takes words `tid, tid + nthreads, ...`.
///
/// # Safety
/// `dst` is the slice's 16-byte aligned shared address; `row_start(kk) = Some(o)` only when
/// floats `o .. o + (limit - col0)` (capped at COLS) are valid global memory nobody writes.
#[inline(always)]
unsafe fn copy_rows<const BK: usize, const COLS: usize>(
    nthreads: usize,
    pitch: usize,
    dst: u32,
    src: *const f32,
    tid: i32,
    col0: i32,
    limit: i32,
    vec: bool,
    row_start: impl Fn(i32) -> Option<i32>,
) {
    let words = BK * COLS / 4;
    unroll!(16: words.div_ceil(nthreads), i => {
        let e = tid + (i * nthreads) as i32;
        if e < words as i32 {
            let (kk, col4) = (e / (COLS / 4) as i32, e % (COLS / 4) as i32);
            let col = col0 + 4 * col4;
            let d = dst + ((kk * pitch as i32 + 4 * col4) * 4) as u32;
            let row = row_start(kk);
            if vec {
                // limit % 4 == 0 and col % 4 == 0: the word is wholly inside or wholly outside.
                let (from, n) = match row { Some(o) if col < limit => (src.wrapping_add((o + col) as usize), 16), _ => (src, 0) };
                // SAFETY: d is inside the slice and 16-byte aligned; `from` is 16-byte aligned (the
                // kernel checked src and limit) and valid for 16 bytes when n = 16; nothing is read otherwise.
                unsafe { cp_async_16(d, from, n) };
            } else {
                unroll!(4: 4, t => {
                    let c = col + t as i32;
                    let (from, n) = match row { Some(o) if c < limit => (src.wrapping_add((o + c) as usize), 4), _ => (src, 0) };
                    // SAFETY: d + 4t is inside the slice; `from` is valid when n = 4; nothing is read otherwise.
                    unsafe { cp_async_4(d + 4 * t as u32, from, n) };
                });
            }
        }
    });
}

/// The whole kernel. See the module docs.
///
/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*C*R*S and N*K*P*Q `f32`s in the layouts above; `y` does not
/// alias the inputs; the launch follows host/src/plan/tiled/hwcn.rs (the kernel traps on a
/// wrong block size or too little shared memory).
#[inline(always)]
pub unsafe fn conv<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize, const STAGES: usize>(
    x: *const f32,
    w: *const f32,
    y: *mut f32,
    sh: ConvShape,
) {
    let nthreads = threads(BM, BN, TM, TN);
    if block_dim_x() != nthreads as i32 {
        trap();
    }
    let tid = thread_x();
    // SAFETY (all three): N, K, Q >= 1, so every divisor is at least 1.
    let (rest, nt) = unsafe { divmod(block_x(), ceil_div(sh.n, BN as i32)) };
    let (pix, kt) = unsafe { divmod(rest, ceil_div(sh.k, BM as i32)) };
    if pix >= sh.p * sh.q {
        return; // whole block, before any barrier: cannot happen with the plan's grid
    }
    let (oh, ow) = unsafe { divmod(pix, sh.q) };
    let (n0, k0) = (nt * BN as i32, kt * BM as i32);

    // Taps whose input row / column is inside the image: a contiguous range on each axis.
    let (ih0, iw0) = (oh * sh.stride_h - sh.pad_h, ow * sh.stride_w - sh.pad_w);
    let range = |first: i32, dil: i32, taps: i32, size: i32| {
        let (mut lo, mut hi) = (taps, 0);
        for t in 0..taps {
            let i = first + t * dil;
            if i >= 0 && i < size {
                lo = if lo > t { t } else { lo };
                hi = t + 1;
            }
        }
        (lo, hi)
    };
    let (r_lo, r_hi) = range(ih0, sh.dil_h, sh.r, sh.h);
    let (s_lo, s_hi) = range(iw0, sh.dil_w, sh.s, sh.w);
    let red = Reduction { c: sh.c, r_lo, r_hi, s_lo, s_hi };

    let vec_a = sh.k % 4 == 0 && (w as usize) % 16 == 0;
    let vec_b = sh.n % 4 == 0 && (x as usize) % 16 == 0;
    let stage = |a_dst: u32, b_dst: u32, c0: i32, r: i32, s: i32| {
        // Filter rows W[r][s][c0 + kk][k0..], input rows X[ih][iw][c0 + kk][n0..]; channels past C are zeros.
        let w_tap = (r * sh.s + s) * sh.c;
        let x_pix = ((ih0 + r * sh.dil_h) * sh.w + iw0 + s * sh.dil_w) * sh.c;
        let ok = |kk: i32| c0 + kk < sh.c;
        let tid = tid_x_volatile(); // recomputed per step rather than held: fewer registers
        // SAFETY: (r, s) is a tap of the block's reduction, so (ih, iw) is inside the image; a row
        // is read only for channel c0 + kk < C and columns below K (resp. N).
        unsafe {
            copy_rows::<BK, BM>(nthreads, BM + A_PAD, a_dst, w, tid, k0, sh.k, vec_a, |kk| ok(kk).then(|| (w_tap + c0 + kk) * sh.k));
            copy_rows::<BK, BN>(nthreads, BN, b_dst, x, tid, n0, sh.n, vec_b, |kk| ok(kk).then(|| (x_pix + c0 + kk) * sh.n));
        }
    };
    let (tm, tn) = thread_groups::<BM, BN, TM, TN>(tid);
    // SAFETY: every thread reaches this with the same block-uniform reduction; the block size was checked.
    let acc = unsafe { mainloop::<BM, BN, BK, TM, TN, STAGES>(red, tm, tn, stage) };

    // Epilogue: Y[p][q][k][n0..], 16-byte stores where N % 4 == 0 (then a word is wholly in or out).
    let vec_y = sh.n % 4 == 0 && (y as usize) % 16 == 0;
    unroll!(8: TM, i => {
        let k = k0 + tile_index(tm, i, quadrant_stride(BM, TM));
        if k < sh.k {
            let row = (pix * sh.k + k) * sh.n;
            unroll!(4: TN / 4, v => {
                let n = n0 + tile_index(tn, 4 * v, quadrant_stride(BN, TN));
                let q = F32x4([acc[i][4 * v], acc[i][4 * v + 1], acc[i][4 * v + 2], acc[i][4 * v + 3]]);
                if vec_y {
                    if n < sh.n {
                        // SAFETY: the four outputs exist (N % 4 == 0, n % 4 == 0) and are 16-byte
                        // aligned; only this thread writes them (tiles and threads partition Y).
                        unsafe { store_global_f32x4(y.add((row + n) as usize), q) };
                    }
                } else {
                    unroll!(4: 4, j => {
                        if n + (j as i32) < sh.n {
                            // SAFETY: the output exists and only this thread writes it.
                            unsafe { *y.add((row + n + j as i32) as usize) = q.0[j] };
                        }
                    });
                }
            });
        }
    });
}

// Entry points `tiled_hwcn_{BM}x{BN}[_k{BK}]`, one per tile of the shared table: the shapes the host
// plan chooses from (timings in the parent module).
convrs_spec::tiled_tiles!(super::mainloop::entries, hwcn, conv);
