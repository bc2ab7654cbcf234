//! Depthwise convolution on NCHW data, step 2: a thread per `ROWS` x `COLS` block of outputs of
//! one plane. Step 1 ([`super::nchw`]) computes a column of outputs a thread, each filter column
//! reading its input column anew, one element a load; here each input row a thread reads is
//! loaded once and feeds every output row and column it belongs to, through the NHWC strip's sums
//! ([`super::strip::sums`]) with one channel a thread.
//!
//! The lanes walk along Q, `COLS` outputs apart, so element-wise loads and stores touch a sector
//! for every few bytes they move (ncu, H100, 32,144,56,56 fp16: 4.9 and 6.7 bytes of 32 used, the
//! L2 at 77% of its throughput for 0.64 TB/s of DRAM). Where the rows allow it (W a multiple of
//! 4, the padding `TAPS / 2`), a thread reads its rows as aligned 4-element vectors and stores its
//! rows of 4 outputs as one vector (Q a multiple of 4). Those tests are the launch's, not the
//! thread's, and every thread checks its own window against the plane: no warp runs two copies
//! of the loop (step 1's border lanes sent most warps through both).

use convrs_spec::depthwise::{nchw_strip_row_stores, nchw_strip_row_vectors};

use crate::prelude::elem::{store_out4, Elem};
use crate::prelude::*;

use super::strip::{load_vec, sums, window};
use super::Finish;

/// Work item `blockIdx.x * blockDim.x + threadIdx.x` = ((n * K + k) * strips + strip) * column
/// groups + group computes outputs (n, k, p0..p0 + ROWS, q0..q0 + COLS), p0 = strip * ROWS,
/// q0 = group * COLS, from input channel k / (K / C) and an R = S = `TAPS` filter at stride
/// `STRIDE` in both axes (dilation 1). The host picks the block size from the work (`blockDim.x`).
///
/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*R*S and N*K*P*Q elements (y of `sh.y_bits` bits), C divides K,
/// R = S = `TAPS`, the strides are `STRIDE` and the dilations 1, the buffers are 16-byte aligned,
/// and `y` does not alias the inputs.
#[inline(always)]
pub unsafe fn conv<E: Elem, const TAPS: usize, const STRIDE: usize, const ROWS: usize, const COLS: usize>(x: *const E::Raw, w: *const E::Raw, y: *mut f32, sh: ConvShape) {
    let strips = convrs_spec::depthwise_tiles!(sh.p, ROWS as i32);
    let col_groups = convrs_spec::depthwise_tiles!(sh.q, COLS as i32);
    let item = block_x() * block_dim_x() + thread_x();
    if item >= sh.n * sh.k * strips * col_groups {
        return;
    }
    // SAFETY (divmods): the column groups, strips, K and K / C are at least 1.
    let (rest, group) = unsafe { divmod(item, col_groups) };
    let (plane, strip) = unsafe { divmod(rest, strips) };
    let (n, k) = unsafe { divmod(plane, sh.k) };
    let (c, _) = unsafe { divmod(k, sh.k / sh.c) };
    let (p0, q0) = (strip * ROWS as i32, group * COLS as i32);
    let (iy0, ix0) = (p0 * STRIDE as i32 - sh.pad_h, q0 * STRIDE as i32 - sh.pad_w);
    let x_plane = x.wrapping_add(((n * sh.c + c) * sh.h * sh.w) as usize);
    let taps = w.wrapping_add(k as usize * TAPS * TAPS);
    // SAFETY (rows): each pixel read is tested against the plane; with W a multiple of 4 and the
    // padding TAPS / 2, the vectors are aligned as `vector_row` requires (a0 = q0 * STRIDE - 4,
    // q0 a multiple of COLS = 4).
    let vectors = |i: usize| unsafe { vector_row::<E, TAPS, STRIDE, COLS>(x_plane, &sh, iy0 + i as i32, q0 * STRIDE as i32 - 4) };
    let pixels = |i: usize| unsafe { window::<E, TAPS, STRIDE, COLS, 1, true>(x_plane, &sh, 1, iy0 + i as i32, ix0) };
    // SAFETY (sums): channel k's R*S taps, one element apart.
    let acc = if nchw_strip_row_vectors(sh.w, sh.pad_w, TAPS as i32, COLS as i32) { unsafe { sums::<E, TAPS, STRIDE, ROWS, COLS, 1>(taps, 1, vectors) } } else { unsafe { sums::<E, TAPS, STRIDE, ROWS, COLS, 1>(taps, 1, pixels) } };
    // SAFETY: outputs (n, k, p0.., q0..) as `sums` computed them; the caller's buffers.
    unsafe { store::<E, ROWS, COLS>(y, &sh, acc, plane, p0, q0, k) };
}

/// Input row `iy`'s window (`(COLS - 1) * STRIDE + TAPS` pixels from column q0 * STRIDE - TAPS /
/// 2 on) from the 4-element vectors of the row from column `a0` = q0 * STRIDE - 4 on: with W a
/// multiple of 4 each is wholly inside the row or outside it (zero), and the window starts
/// `4 - TAPS / 2` elements into the first.
///
/// # Safety
/// `plane` is the input plane (H*W elements, 16-byte aligned), W a multiple of 4, `a0` a multiple
/// of 4, and the padding of the columns `TAPS / 2`.
#[inline(always)]
unsafe fn vector_row<E: Elem, const TAPS: usize, const STRIDE: usize, const COLS: usize>(plane: *const E::Raw, sh: &ConvShape, iy: i32, a0: i32) -> [[f32; 1]; 16] {
    let (skip, span) = (4 - TAPS / 2, (COLS - 1) * STRIDE + TAPS);
    const { assert!(TAPS / 2 < 4 && 4 - TAPS / 2 + (COLS - 1) * STRIDE + TAPS <= 16) };
    let row_ok = (iy as u32) < sh.h as u32;
    let mut v = [[0.0f32; 4]; 4];
    unroll!(4: (skip + span).div_ceil(4), j => {
        let a = a0 + 4 * j as i32;
        if row_ok && (a as u32) < sh.w as u32 {
            // SAFETY: columns a..a + 4 of row iy are inside the plane (W is a multiple of 4 and a
            // too), 4-element aligned as the plane and the rows are.
            v[j] = unsafe { load_vec::<E, 4>(plane.add((iy * sh.w + a) as usize)) };
        }
    });
    let mut px = [[0.0f32; 1]; 16];
    unroll!(16: span, t => { px[t] = [v[(skip + t) / 4][(skip + t) % 4]]; });
    px
}

/// Applies the fused epilogue (if any) and stores the sums of the outputs inside P x Q: a row of
/// 4 as one vector where Q is a multiple of 4 (so the row's 4 outputs are inside and aligned).
///
/// # Safety
/// `y` holds the N*K*P*Q output (of `sh.y_bits` bits, 16-byte aligned) and the epilogue's buffers
/// are as the host planned them; this thread alone writes these outputs of plane `plane` = n * K + k.
#[inline(always)]
unsafe fn store<E: Elem, const ROWS: usize, const COLS: usize>(y: *mut f32, sh: &ConvShape, acc: [[[f32; 1]; COLS]; ROWS], plane: i32, p0: i32, q0: i32, k: i32) {
    // SAFETY: k < K; the epilogue's buffers as the host planned them.
    let finish = unsafe { Finish::<1>::new(sh, k) };
    let vector = nchw_strip_row_stores(sh.q, COLS as i32);
    unroll!(8: ROWS, j => {
        let p = p0 + j as i32;
        if p < sh.p {
            let row = ((plane * sh.p + p) * sh.q + q0) as usize;
            if vector {
                // SAFETY: outputs q0..q0 + 4 of row p are inside the output (q0 < Q, both
                // multiples of 4) and this thread's alone; `row` is a multiple of 4.
                let mut a: [f32; 4] = [0, 1, 2, 3].map(|c| acc[j][c % COLS][0]);
                if finish.fused {
                    unroll!(4: 4, c => {
                        // SAFETY: as above.
                        a[c] = unsafe { finish.fused_one::<E>(sh, row + c, 0, a[c]) };
                    });
                }
                // SAFETY: as above.
                unsafe { store_out4::<E>(y, row, a, sh.y_bits == 16) };
            } else {
                unroll!(8: COLS, c => {
                    if q0 + (c as i32) < sh.q {
                        // SAFETY: output (n, k, p, q0 + c) is inside the output and this thread's alone.
                        unsafe { finish.store::<E>(y, sh, row + c, acc[j][c]) };
                    }
                });
            }
        }
    });
}
