//! Depthwise convolution on NHWC data: a thread per `VEC` channels of [`COLS`] adjacent outputs.

use convrs_spec::depthwise::{BLOCK_THREADS, NHWC_COLS};

use crate::prelude::elem::Elem;
use crate::prelude::*;

use super::{Finish, Window};

const COLS: usize = NHWC_COLS as usize;
/// The largest compiled filter size whose taps unroll completely.
const FULL_UNROLL: usize = 5;
/// Input pixels a row of the widest compiled filter (7) spans for [`COLS`] adjacent outputs at
/// stride and dilation 1: the register window of [`window_row`].
const MAX_SPAN: usize = COLS + 7 - 1;

/// Work item `blockIdx.x * BLOCK_THREADS + threadIdx.x` = ((n*P + p) * column groups + group) *
/// (K / VEC) + kv computes outputs (n, p, q0..q0 + COLS, VEC*kv..VEC*kv + VEC), q0 = group * COLS.
/// `VEC` is 4 (one vector access per pixel; the host launches it for K = C, C a multiple of 4
/// only) or 1 (any multiplier m = K / C: channel k reads input channel k / m). `TAPS` is the
/// compiled filter size R = S, or 0 for any.
///
/// # Safety
/// `x`, `w`, `y` hold N*H*W*C, R*S*K and N*P*Q*K elements (y of `sh.y_bits` bits), C divides K,
/// `y` does not alias the inputs; for `VEC = 4`, K = C is a multiple of 4 and the buffers are
/// 16-byte aligned.
#[inline(always)]
pub unsafe fn conv<E: Elem, const TAPS: usize, const VEC: usize>(x: *const E::Raw, w: *const E::Raw, y: *mut f32, sh: ConvShape) {
    let col_groups = convrs_spec::depthwise_tiles!(sh.q, COLS as i32);
    let channel_groups = sh.k / VEC as i32;
    let item = block_x() * BLOCK_THREADS as i32 + thread_x();
    if item >= sh.n * sh.p * col_groups * channel_groups {
        return;
    }
    // SAFETY (divmods): the channel and column groups, P and K / C are at least 1.
    let (rest, kv) = unsafe { divmod(item, channel_groups) };
    let (row, group) = unsafe { divmod(rest, col_groups) };
    let (n, p) = unsafe { divmod(row, sh.p) };
    let k0 = kv * VEC as i32;
    // VEC = 4 runs with m = 1; the scalar entry reads channel k / m.
    let c0 = if VEC == 1 { unsafe { divmod(k0, sh.k / sh.c) }.0 } else { k0 };
    let (r, s) = if TAPS > 0 { (TAPS as i32, TAPS as i32) } else { (sh.r, sh.s) };
    let q0 = group * COLS as i32;
    let (iy0, ix0) = (p * sh.stride_h - sh.pad_h, q0 * sh.stride_w - sh.pad_w);
    let last_x = ix0 + (COLS as i32 - 1) * sh.stride_w + (s - 1) * sh.dil_w;
    let inside = q0 + COLS as i32 <= sh.q && iy0 >= 0 && iy0 + (r - 1) * sh.dil_h < sh.h && ix0 >= 0 && last_x < sh.w;
    let image = x.wrapping_add((n * sh.h * sh.w * sh.c + c0) as usize);
    let taps = w.wrapping_add(k0 as usize);
    let win = Window { iy0, ix0, r, s };
    // SAFETY: the unchecked copy only runs when every pixel it reads is inside the image.
    let acc = unsafe { if inside { pixels::<E, TAPS, VEC, false>(image, taps, &sh, win) } else { pixels::<E, TAPS, VEC, true>(image, taps, &sh, win) } };
    // SAFETY: k0 + VEC <= K; the epilogue's buffers as the host planned them.
    let finish = unsafe { Finish::<VEC>::new(&sh, k0) };
    // Unrolled by hand: with the epilogue's asm (ex2, rcp) in the body the compiler kept these
    // loops, and `acc` went to local memory.
    unroll!(8: COLS, j => {
        if q0 + (j as i32) < sh.q {
            let out = (((n * sh.p + p) * sh.q + q0 + j as i32) * sh.k + k0) as usize;
            // SAFETY: the VEC channels of output pixel (n, p, q0 + j) are inside the output and
            // this thread's alone; with VEC = 4, `out` is a multiple of 4 (K is).
            unsafe { finish.store::<E>(y, &sh, out, acc[j]) };
        }
    });
}

/// `VEC` channels of the [`COLS`] sums: taps outer, so each tap's channels are loaded once.
/// `CHECK` tests each input pixel against the image (zero outside: the padding).
///
/// # Safety
/// `image` points at channel c0 of pixel (0, 0) of the thread's image, `taps` at channel k0 of
/// tap (0, 0); without `CHECK`, every pixel the window reads is inside the image.
#[inline(always)]
unsafe fn pixels<E: Elem, const TAPS: usize, const VEC: usize, const CHECK: bool>(image: *const E::Raw, taps: *const E::Raw, sh: &ConvShape, win: Window) -> [[f32; VEC]; COLS] {
    let mut acc = [[0.0f32; VEC]; COLS];
    // The compiled sizes up to 5x5 unroll every tap, so all of a thread's loads are in flight
    // together; 7x7 unrolls each row (all 49 taps at once would need 128-168 registers).
    if TAPS > 0 && TAPS <= FULL_UNROLL {
        unroll!(8: TAPS, ry => {
            // SAFETY: the caller's guarantee, passed on.
            unsafe { taps_row::<E, TAPS, VEC, CHECK>(&mut acc, image, taps, sh, win, ry as i32) };
        });
    } else {
        for ry in 0..win.r {
            // SAFETY: the caller's guarantee, passed on.
            unsafe { taps_row::<E, TAPS, VEC, CHECK>(&mut acc, image, taps, sh, win, ry) };
        }
    }
    acc
}

/// Adds filter row `ry`'s taps to the sums (see [`pixels`]).
///
/// # Safety
/// As [`pixels`], with `ry < R`.
#[inline(always)]
unsafe fn taps_row<E: Elem, const TAPS: usize, const VEC: usize, const CHECK: bool>(acc: &mut [[f32; VEC]; COLS], image: *const E::Raw, taps: *const E::Raw, sh: &ConvShape, win: Window, ry: i32) {
    // Adjacent outputs at stride and dilation 1 share input pixels: load and widen each once.
    if TAPS > 0 && sh.stride_w == 1 && sh.dil_w == 1 {
        // SAFETY: the caller's guarantee, passed on.
        return unsafe { window_row::<E, TAPS, VEC, CHECK>(acc, image, taps, sh, win, ry) };
    }
    let iy = win.iy0 + ry * sh.dil_h;
    let row_ok = !CHECK || (iy as u32) < sh.h as u32;
    let mut tap = |rx: i32| {
        // SAFETY: tap (ry, rx) of channels k0..k0 + VEC: inside the R*S*K filter.
        let wv = unsafe { load::<E, VEC>(taps.add(((ry * win.s + rx) * sh.k) as usize)) };
        for (j, a) in acc.iter_mut().enumerate() {
            let ix = win.ix0 + j as i32 * sh.stride_w + rx * sh.dil_w;
            let ok = row_ok && (!CHECK || (ix as u32) < sh.w as u32);
            // SAFETY: pixel (iy, ix) is inside the image: checked, or guaranteed by the caller.
            let v = if ok { unsafe { load::<E, VEC>(image.add(((iy * sh.w + ix) * sh.c) as usize)) } } else { [0.0; VEC] };
            for i in 0..VEC {
                a[i] = fma(v[i], wv[i], a[i]);
            }
        }
    };
    if TAPS > 0 {
        unroll!(8: TAPS, rx => { tap(rx as i32) });
    } else {
        for rx in 0..win.s {
            tap(rx);
        }
    }
}

/// [`taps_row`] for a compiled filter size at horizontal stride and dilation 1: the row's
/// `COLS + TAPS - 1` input pixels are loaded once into registers, then each tap's filter vector
/// meets the `COLS` pixels it multiplies.
///
/// # Safety
/// As [`taps_row`], with `TAPS` in 1..=7 and unit horizontal stride and dilation.
#[inline(always)]
unsafe fn window_row<E: Elem, const TAPS: usize, const VEC: usize, const CHECK: bool>(acc: &mut [[f32; VEC]; COLS], image: *const E::Raw, taps: *const E::Raw, sh: &ConvShape, win: Window, ry: i32) {
    let iy = win.iy0 + ry * sh.dil_h;
    let row_ok = !CHECK || (iy as u32) < sh.h as u32;
    let mut px = [[0.0f32; VEC]; MAX_SPAN];
    unroll!(8: COLS + TAPS - 1, t => {
        let ix = win.ix0 + t as i32;
        if row_ok && (!CHECK || (ix as u32) < sh.w as u32) {
            // SAFETY: pixel (iy, ix) is inside the image: checked, or guaranteed by the caller
            // (the window ends at the last column the thread's outputs read).
            px[t] = unsafe { load::<E, VEC>(image.add(((iy * sh.w + ix) * sh.c) as usize)) };
        }
    });
    unroll!(8: TAPS, rx => {
        // SAFETY: tap (ry, rx) of channels k0..k0 + VEC: inside the R*S*K filter.
        let wv = unsafe { load::<E, VEC>(taps.add(((ry * TAPS as i32 + rx as i32) * sh.k) as usize)) };
        for (j, a) in acc.iter_mut().enumerate() {
            for i in 0..VEC {
                a[i] = fma(px[j + rx][i], wv[i], a[i]);
            }
        }
    });
}

/// `VEC` consecutive elements: one vector access for 4, a scalar load for 1.
///
/// # Safety
/// `p` is valid for `VEC` elements nobody writes during the launch, aligned to the access.
#[inline(always)]
unsafe fn load<E: Elem, const VEC: usize>(p: *const E::Raw) -> [f32; VEC] {
    let mut v = [0.0f32; VEC];
    // SAFETY: as the caller guarantees.
    unsafe {
        if VEC == 4 {
            v.copy_from_slice(&E::load4(p));
        } else {
            v[0] = E::load(p);
        }
    }
    v
}
