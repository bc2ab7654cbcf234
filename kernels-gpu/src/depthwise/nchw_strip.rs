//! Depthwise convolution on NCHW data, step 2: a thread per `ROWS` x `COLS` block of outputs of
//! one plane. Step 1 ([`super::nchw`]) computes a column of outputs a thread, each filter column
//! reading its input column anew, one element a load, and a warp whose lanes straddle the border
//! runs the checked and the unchecked copy both; here each input row a thread reads is loaded
//! once and feeds every output row and column it belongs to, through the NHWC strip's sums
//! ([`super::strip::sums`]) with one channel a thread.

use crate::prelude::elem::Elem;
use crate::prelude::*;

use super::strip::sums;
use super::Finish;

/// Work item `blockIdx.x * blockDim.x + threadIdx.x` = ((n * K + k) * strips + strip) * column
/// groups + group computes outputs (n, k, p0..p0 + ROWS, q0..q0 + COLS), p0 = strip * ROWS,
/// q0 = group * COLS, from input channel k / (K / C) and an R = S = `TAPS` filter at stride
/// `STRIDE` in both axes (dilation 1). The lanes walk along Q. The host picks the block size
/// from the work (`blockDim.x`).
///
/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*R*S and N*K*P*Q elements (y of `sh.y_bits` bits), C divides K,
/// R = S = `TAPS`, the strides are `STRIDE` and the dilations 1, and `y` does not alias the inputs.
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
    let (span_y, span_x) = (((ROWS - 1) * STRIDE + TAPS) as i32, ((COLS - 1) * STRIDE + TAPS) as i32);
    let (iy0, ix0) = (p0 * STRIDE as i32 - sh.pad_h, q0 * STRIDE as i32 - sh.pad_w);
    // Outputs past P or Q are computed from whatever the window holds and never stored, so only
    // the input window decides.
    let inside = iy0 >= 0 && ix0 >= 0 && iy0 + span_y <= sh.h && ix0 + span_x <= sh.w;
    let x_plane = x.wrapping_add(((n * sh.c + c) * sh.h * sh.w) as usize);
    let taps = w.wrapping_add(k as usize * TAPS * TAPS);
    // SAFETY: the unchecked copy only runs when every pixel it reads is inside the plane; pixels
    // and taps are one element apart, one channel a thread.
    let acc = unsafe {
        if inside {
            sums::<E, TAPS, STRIDE, ROWS, COLS, 1, false>(x_plane, taps, &sh, 1, 1, iy0, ix0)
        } else {
            sums::<E, TAPS, STRIDE, ROWS, COLS, 1, true>(x_plane, taps, &sh, 1, 1, iy0, ix0)
        }
    };
    // SAFETY: outputs (n, k, p0.., q0..) as `sums` computed them; the caller's buffers.
    unsafe { store::<E, ROWS, COLS>(y, &sh, acc, plane, p0, q0, k) };
}

/// Applies the fused epilogue (if any) and stores the sums of the outputs inside P x Q.
///
/// # Safety
/// `y` holds the N*K*P*Q output (of `sh.y_bits` bits) and the epilogue's buffers are as the host
/// planned them; this thread alone writes these outputs of plane `plane` = n * K + k.
#[inline(always)]
unsafe fn store<E: Elem, const ROWS: usize, const COLS: usize>(y: *mut f32, sh: &ConvShape, acc: [[[f32; 1]; COLS]; ROWS], plane: i32, p0: i32, q0: i32, k: i32) {
    // SAFETY: k < K; the epilogue's buffers as the host planned them.
    let finish = unsafe { Finish::<1>::new(sh, k) };
    unroll!(8: ROWS, j => {
        unroll!(8: COLS, c => {
            let (p, q) = (p0 + j as i32, q0 + c as i32);
            if p < sh.p && q < sh.q {
                let out = ((plane * sh.p + p) * sh.q + q) as usize;
                // SAFETY: output (n, k, p, q) is inside the output and this thread's alone.
                unsafe { finish.store::<E>(y, sh, out, acc[j][c]) };
            }
        });
    });
}
