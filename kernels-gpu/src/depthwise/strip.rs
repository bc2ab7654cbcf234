//! Depthwise convolution on NHWC data, step 2: a thread per [`CHANNELS`] channels of a `ROWS` x
//! `COLS` block of outputs. Step 1 ([`super::nhwc`]) computes one output row a thread, so an
//! R-row filter loads and widens each input row R times, the rows above and below through L2;
//! here each input row a thread reads is loaded once and feeds every output row it belongs to,
//! and the filter is widened once per use of a row rather than per output.
//!
//! The sums ([`sums`]) are generic over the channels a thread computes and the pitches of a pixel
//! and a filter tap, so the NCHW step 2 ([`super::nchw_strip`], one channel a thread) shares them.

use convrs_spec::depthwise::NHWC_VEC;

use crate::prelude::elem::Elem;
use crate::prelude::*;

use super::Finish;

/// Channels a thread of the NHWC entries computes: one vector access.
const CHANNELS: usize = NHWC_VEC as usize;

/// Work item `blockIdx.x * blockDim.x + threadIdx.x` = ((n * strips + strip) * column groups +
/// group) * (K / CHANNELS) + kv computes outputs (n, p0..p0 + ROWS, q0..q0 + COLS, 4kv..4kv + 4),
/// p0 = strip * ROWS, q0 = group * COLS, from an R = S = `TAPS` filter at stride `STRIDE` in both
/// axes (dilation 1). The host picks the block size from the work (`blockDim.x`).
///
/// # Safety
/// `x`, `w`, `y` hold N*H*W*C, R*S*K and N*P*Q*K elements (y of `sh.y_bits` bits), K = C is a
/// multiple of 4, R = S = `TAPS`, the strides are `STRIDE` and the dilations 1, the buffers are
/// 16-byte aligned and `y` does not alias the inputs.
#[inline(always)]
pub unsafe fn conv<E: Elem, const TAPS: usize, const STRIDE: usize, const ROWS: usize, const COLS: usize>(x: *const E::Raw, w: *const E::Raw, y: *mut f32, sh: ConvShape) {
    let strips = convrs_spec::depthwise_tiles!(sh.p, ROWS as i32);
    let col_groups = convrs_spec::depthwise_tiles!(sh.q, COLS as i32);
    let channel_groups = sh.k / CHANNELS as i32;
    let item = block_x() * block_dim_x() + thread_x();
    if item >= sh.n * strips * col_groups * channel_groups {
        return;
    }
    // SAFETY (divmods): the channel groups, column groups and strips are at least 1.
    let (rest, kv) = unsafe { divmod(item, channel_groups) };
    let (rest, group) = unsafe { divmod(rest, col_groups) };
    let (n, strip) = unsafe { divmod(rest, strips) };
    let (k0, p0, q0) = (kv * CHANNELS as i32, strip * ROWS as i32, group * COLS as i32);
    let (span_y, span_x) = (((ROWS - 1) * STRIDE + TAPS) as i32, ((COLS - 1) * STRIDE + TAPS) as i32);
    let (iy0, ix0) = (p0 * STRIDE as i32 - sh.pad_h, q0 * STRIDE as i32 - sh.pad_w);
    // Outputs past P or Q are computed from whatever the window holds and never stored, so only
    // the input window decides.
    let inside = iy0 >= 0 && ix0 >= 0 && iy0 + span_y <= sh.h && ix0 + span_x <= sh.w;
    let image = x.wrapping_add((n * sh.h * sh.w * sh.c + k0) as usize);
    let taps = w.wrapping_add(k0 as usize);
    // SAFETY (windows): the unchecked copy only runs when every pixel it reads is inside the
    // image; channels k0..k0 + 4 of a pixel are 16-byte aligned as C is a multiple of 4.
    let unchecked = |i: usize| unsafe { window::<E, TAPS, STRIDE, COLS, CHANNELS, false>(image, &sh, sh.c, iy0 + i as i32, ix0) };
    let checked = |i: usize| unsafe { window::<E, TAPS, STRIDE, COLS, CHANNELS, true>(image, &sh, sh.c, iy0 + i as i32, ix0) };
    // SAFETY (sums): channels k0..k0 + 4 of the RSK filter, 16-byte aligned as K is a multiple of 4.
    let acc = if inside { unsafe { sums::<E, TAPS, STRIDE, ROWS, COLS, CHANNELS>(taps, sh.k as usize, unchecked) } } else { unsafe { sums::<E, TAPS, STRIDE, ROWS, COLS, CHANNELS>(taps, sh.k as usize, checked) } };
    // SAFETY: outputs (n, p0.., q0.., k0..k0 + 4) as `sums` computed them; the caller's buffers.
    unsafe { store::<E, ROWS, COLS>(y, &sh, acc, n, p0, q0, k0) };
}

/// The `ROWS` x `COLS` sums of `VEC` channels (4 or 1): input rows outer, each loaded and widened
/// once into a register window, then met by the filter row each output row takes from it. The
/// 3x3 entries unroll the rows, the whole filter held in registers (9 `VEC` values); the others
/// loop over the rows, loading a filter row where an output row meets it, so that ptxas, which
/// hoists every load of an unrolled body, stays within the registers (unrolled, the 7x7 entries
/// took 255 on the H100, one block an SM). `row(i)` is the thread's input row i (of
/// `(ROWS - 1) * STRIDE + TAPS`), its `(COLS - 1) * STRIDE + TAPS` pixels widened, zero outside
/// the image (the padding): the layouts read rows their own way.
///
/// # Safety
/// `taps` points at channel k0 of tap (0, 0), the taps `tap` elements apart (K for RSK, 1 for one
/// channel of KCRS); `VEC` channels are contiguous and, for 4, a vector access (aligned for it).
#[inline(always)]
pub(super) unsafe fn sums<E: Elem, const TAPS: usize, const STRIDE: usize, const ROWS: usize, const COLS: usize, const VEC: usize>(
    taps: *const E::Raw,
    tap: usize,
    mut row: impl FnMut(usize) -> [[f32; VEC]; 16],
) -> [[[f32; VEC]; COLS]; ROWS] {
    // The `unroll!` bounds an entry must fit: the output rows (4) and columns (8), the taps (8),
    // a window row (16), the unrolled 3x3 rows (8), and the channels (a vector of 4, or 1).
    const { assert!(ROWS <= 4 && COLS <= 8 && TAPS <= 8 && (COLS - 1) * STRIDE + TAPS <= 16 && (TAPS != 3 || (ROWS - 1) * STRIDE + 3 <= 8) && (VEC == 4 || VEC == 1)) };
    let mut acc = [[[0.0f32; VEC]; COLS]; ROWS];
    let span_y = (ROWS - 1) * STRIDE + TAPS;
    if TAPS == 3 {
        let mut whole = [[0.0f32; VEC]; 9];
        unroll!(16: 9, t => {
            // SAFETY: tap t of channels k0..k0 + VEC: inside the filter.
            whole[t] = unsafe { load_vec::<E, VEC>(taps.add(t * tap)) };
        });
        unroll!(8: span_y, i => {
            let px = row(i);
            unroll!(4: ROWS, j => {
                // Output row j reads input rows j * STRIDE .. j * STRIDE + 3: this is its filter row i - j * STRIDE.
                if i >= j * STRIDE && i < j * STRIDE + 3 {
                    meet::<TAPS, STRIDE, COLS, VEC>(&mut acc[j], &px, |rx| whole[(i - j * STRIDE) * 3 + rx]);
                }
            });
        });
    } else {
        // A loop LLVM must not unroll: its trip count through an opaque register.
        for i in 0..opaque_u32(span_y as u32) as usize {
            let px = row(i);
            unroll!(4: ROWS, j => {
                // Output row j reads input rows j * STRIDE .. j * STRIDE + TAPS: this is its filter row i - j * STRIDE.
                let ry = i.wrapping_sub(j * STRIDE);
                if ry < TAPS {
                    let frow = taps.wrapping_add(ry * TAPS * tap);
                    // SAFETY: tap (ry, rx) of channels k0..k0 + VEC: inside the filter.
                    meet::<TAPS, STRIDE, COLS, VEC>(&mut acc[j], &px, |rx| unsafe { load_vec::<E, VEC>(frow.add(rx * tap)) });
                }
            });
        }
    }
    acc
}

/// Input row `iy`'s `(COLS - 1) * STRIDE + TAPS` pixels from column `ix0` on, widened (zero
/// outside the image under `CHECK`). Sized for the unrolled loop's bound (16).
///
/// # Safety
/// `image` points at channel k0 of pixel (0, 0) of the thread's image or plane, whose pixels lie
/// `pixel` elements apart (C for NHWC, 1 for NCHW) in rows of `sh.w`, `VEC` channels contiguous
/// (for 4, aligned for a vector access); without `CHECK`, the pixels are inside the image.
#[inline(always)]
pub(super) unsafe fn window<E: Elem, const TAPS: usize, const STRIDE: usize, const COLS: usize, const VEC: usize, const CHECK: bool>(
    image: *const E::Raw,
    sh: &ConvShape,
    pixel: i32,
    iy: i32,
    ix0: i32,
) -> [[f32; VEC]; 16] {
    let mut px = [[0.0f32; VEC]; 16];
    let row_ok = !CHECK || (iy as u32) < sh.h as u32;
    unroll!(16: (COLS - 1) * STRIDE + TAPS, t => {
        let ix = ix0 + t as i32;
        if row_ok && (!CHECK || (ix as u32) < sh.w as u32) {
            // SAFETY: pixel (iy, ix) is inside the image: checked, or guaranteed by the caller.
            px[t] = unsafe { load_vec::<E, VEC>(image.add(((iy * sh.w + ix) * pixel) as usize)) };
        }
    });
    px
}

/// Adds a filter row (`tap(rx)`, the `TAPS` taps' `VEC` channels) times the window to one
/// output row's `COLS` sums. The loops without a load (whose asm keeps LLVM from unrolling a
/// loop) are plain loops, which LLVM unrolls; `unroll!` copies to the largest bounds there would
/// multiply the IR the compiler must discard (out of memory at 8 x 8 x 4 x 4).
#[inline(always)]
fn meet<const TAPS: usize, const STRIDE: usize, const COLS: usize, const VEC: usize>(acc: &mut [[f32; VEC]; COLS], px: &[[f32; VEC]; 16], mut tap: impl FnMut(usize) -> [f32; VEC]) {
    unroll!(8: TAPS, rx => {
        let wv = tap(rx);
        for (c, a) in acc.iter_mut().enumerate() {
            for v in 0..VEC {
                a[v] = fma(px[c * STRIDE + rx][v], wv[v], a[v]);
            }
        }
    });
}

/// `VEC` consecutive elements from `p`, widened: one vector access for 4, else one load each.
///
/// # Safety
/// `p..p + VEC` is inside a buffer no one writes during the kernel; for `VEC = 4`, aligned for a
/// vector access (16 bytes of fp32, 8 of 16-bit data).
#[inline(always)]
pub(super) unsafe fn load_vec<E: Elem, const VEC: usize>(p: *const E::Raw) -> [f32; VEC] {
    if VEC == 4 {
        // SAFETY: the caller's guarantee, passed on.
        let v = unsafe { E::load4(p) };
        core::array::from_fn(|i| v[i])
    } else {
        // SAFETY: the caller's guarantee, passed on.
        core::array::from_fn(|i| unsafe { E::load(p.add(i)) })
    }
}

/// `v` through an asm statement LLVM cannot see through: a loop bound it must not unroll by.
#[inline(always)]
fn opaque_u32(v: u32) -> u32 {
    let mut v = v;
    // SAFETY: a register move.
    unsafe { core::arch::asm!("mov.b32 {v}, {v};", v = inout(reg32) v, options(pure, nomem, nostack, preserves_flags)) };
    v
}

/// Applies the fused epilogue (if any) and stores the sums of the outputs inside P x Q.
///
/// # Safety
/// `y` holds the N*P*Q*K output (of `sh.y_bits` bits) and the epilogue's buffers are as the host
/// planned them; this thread alone writes channels k0..k0 + 4 of these outputs.
#[inline(always)]
pub(super) unsafe fn store<E: Elem, const ROWS: usize, const COLS: usize>(y: *mut f32, sh: &ConvShape, acc: [[[f32; CHANNELS]; COLS]; ROWS], n: i32, p0: i32, q0: i32, k0: i32) {
    // SAFETY: k0 + 4 <= K; the epilogue's buffers as the host planned them.
    let finish = unsafe { Finish::<CHANNELS>::new(sh, k0) };
    unroll!(8: ROWS, j => {
        unroll!(8: COLS, c => {
            let (p, q) = (p0 + j as i32, q0 + c as i32);
            if p < sh.p && q < sh.q {
                let out = (((n * sh.p + p) * sh.q + q) * sh.k + k0) as usize;
                // SAFETY: the 4 channels of output pixel (n, p, q) are inside the output and this
                // thread's alone; `out` is a multiple of 4 (K is).
                unsafe { finish.store::<E>(y, sh, out, acc[j][c]) };
            }
        });
    });
}
