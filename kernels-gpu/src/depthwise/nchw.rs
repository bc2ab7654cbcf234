//! Depthwise convolution on NCHW data: a thread per column of [`ROWS`] outputs of one plane.

use convrs_spec::depthwise::{BLOCK_THREADS, NCHW_ROWS};

use crate::prelude::elem::{store_out, Elem};
use crate::prelude::epilogue::{residual_one, Activation, Epilogue};
use crate::prelude::*;

use super::Window;

const ROWS: usize = NCHW_ROWS as usize;
/// The largest compiled filter size whose taps unroll completely.
const FULL_UNROLL: usize = 5;
/// Slots of the register window of [`window_column`]: the widest compiled filter (7) spans
/// `ROWS + 6` input rows for [`ROWS`] adjacent outputs at vertical stride and dilation 1; the
/// window is as long as the 16-way unroll that fills it (slots past the span are never used).
const MAX_SPAN: usize = 16;
const _: () = assert!(ROWS + 7 - 1 <= MAX_SPAN);

/// Work item `blockIdx.x * BLOCK_THREADS + threadIdx.x` = ((n*K + k) * row groups + group) * Q + q
/// computes outputs (n, k, p0..p0 + ROWS, q), p0 = group * ROWS, from input channel k / m.
/// `TAPS` is the compiled filter size R = S, or 0 for any.
///
/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*R*S and N*K*P*Q elements (y of `sh.y_bits` bits), C divides
/// K, and `y` does not alias the inputs.
#[inline(always)]
pub unsafe fn conv<E: Elem, const TAPS: usize>(x: *const E::Raw, w: *const E::Raw, y: *mut f32, sh: ConvShape) {
    let row_groups = convrs_spec::depthwise_tiles!(sh.p, ROWS as i32);
    let item = block_x() * BLOCK_THREADS as i32 + thread_x();
    if item >= sh.n * sh.k * row_groups * sh.q {
        return;
    }
    // SAFETY (divmods): Q, the row groups, K and K / C are at least 1 for a validated problem.
    let (rest, q) = unsafe { divmod(item, sh.q) };
    let (plane, group) = unsafe { divmod(rest, row_groups) };
    let (n, k) = unsafe { divmod(plane, sh.k) };
    let (c, _) = unsafe { divmod(k, sh.k / sh.c) };
    let (r, s) = if TAPS > 0 { (TAPS as i32, TAPS as i32) } else { (sh.r, sh.s) };
    let p0 = group * ROWS as i32;
    let win = Window { iy0: p0 * sh.stride_h - sh.pad_h, ix0: q * sh.stride_w - sh.pad_w, r, s };
    let x_plane = x.wrapping_add(((n * sh.c + c) * sh.h * sh.w) as usize);
    let taps = w.wrapping_add((k * r * s) as usize);
    let last_y = win.iy0 + (ROWS as i32 - 1) * sh.stride_h + (r - 1) * sh.dil_h;
    let inside = p0 + ROWS as i32 <= sh.p && win.iy0 >= 0 && last_y < sh.h && win.ix0 >= 0 && win.ix0 + (s - 1) * sh.dil_w < sh.w;
    // SAFETY: the unchecked copy only runs when every row and column it reads is inside the plane.
    let acc = unsafe { if inside { column::<E, TAPS, false>(x_plane, taps, &sh, win) } else { column::<E, TAPS, true>(x_plane, taps, &sh, win) } };
    let out = ((plane * sh.p + p0) * sh.q + q) as usize;
    let half = sh.y_bits == 16;
    let ep = &sh.ep;
    // SAFETY: k < K; the epilogue's buffers as the host planned them.
    let finish = if ep.is_identity() { None } else { Some(unsafe { Epilogue::of(ep, k as u32) }) };
    let act = Activation::of(ep);
    for (j, a) in acc.iter().enumerate() {
        if p0 + (j as i32) < sh.p {
            let at = out + j * sh.q as usize;
            // SAFETY: (n, k, p0 + j, q) is inside the output (and the residual, of its shape),
            // and this thread's alone.
            unsafe {
                let v = match finish {
                    Some(f) => f.finish(ep, &act, *a, if ep.residual != 0 { residual_one(ep.residual, at, half, E::BF16) } else { 0.0 }),
                    None => *a,
                };
                store_out::<E>(y, at, v, half)
            };
        }
    }
}

/// The [`ROWS`] sums of one output column: taps outer, so each is loaded once. `CHECK` tests
/// each input position against the plane (zero outside: the padding).
///
/// # Safety
/// `x_plane` is the input plane (H*W elements) and `taps` the channel's R*S taps; without
/// `CHECK`, every position the window reads is inside the plane.
#[inline(always)]
unsafe fn column<E: Elem, const TAPS: usize, const CHECK: bool>(x_plane: *const E::Raw, taps: *const E::Raw, sh: &ConvShape, win: Window) -> [f32; ROWS] {
    // Adjacent output rows at stride and dilation 1 share input rows: load each once.
    if TAPS > 0 && sh.stride_h == 1 && sh.dil_h == 1 {
        // SAFETY: the caller's guarantee, passed on.
        return unsafe { window_column::<E, TAPS, CHECK>(x_plane, taps, sh, win) };
    }
    let mut acc = [0.0f32; ROWS];
    let mut tap = |ry: i32, rx: i32| {
        // SAFETY: ry < R, rx < S: inside the channel's taps.
        let wv = unsafe { E::load(taps.add((ry * win.s + rx) as usize)) };
        let ix = win.ix0 + rx * sh.dil_w;
        for (j, a) in acc.iter_mut().enumerate() {
            let iy = win.iy0 + j as i32 * sh.stride_h + ry * sh.dil_h;
            let ok = !CHECK || ((iy as u32) < sh.h as u32 && (ix as u32) < sh.w as u32);
            // SAFETY: (iy, ix) is inside the plane: checked, or guaranteed by the caller.
            let v = if ok { unsafe { E::load(x_plane.add((iy * sh.w + ix) as usize)) } } else { 0.0 };
            *a = fma(v, wv, *a);
        }
    };
    // The compiled sizes up to 5x5 unroll every tap, so all of a thread's loads are in flight
    // together; 7x7 unrolls each row (all 49 taps at once would need 168 registers).
    if TAPS > 0 && TAPS <= FULL_UNROLL {
        unroll!(8: TAPS, ry => { unroll!(8: TAPS, rx => { tap(ry as i32, rx as i32) }) });
    } else if TAPS > 0 {
        for ry in 0..TAPS as i32 {
            unroll!(8: TAPS, rx => { tap(ry, rx as i32) });
        }
    } else {
        for ry in 0..win.r {
            for rx in 0..win.s {
                tap(ry, rx);
            }
        }
    }
    acc
}

/// [`column`] for a compiled filter size at vertical stride and dilation 1: per filter column,
/// the `ROWS + TAPS - 1` input values the thread's outputs read are loaded once into registers,
/// then each of the column's taps meets the `ROWS` values it multiplies.
///
/// # Safety
/// As [`column`], with `TAPS` in 1..=7 and unit vertical stride and dilation.
#[inline(always)]
unsafe fn window_column<E: Elem, const TAPS: usize, const CHECK: bool>(x_plane: *const E::Raw, taps: *const E::Raw, sh: &ConvShape, win: Window) -> [f32; ROWS] {
    let mut acc = [0.0f32; ROWS];
    let mut filter_column = |rx: i32| {
        let ix = win.ix0 + rx * sh.dil_w;
        let col_ok = !CHECK || (ix as u32) < sh.w as u32;
        let mut v = [0.0f32; MAX_SPAN];
        unroll!(16: ROWS + TAPS - 1, t => {
            let iy = win.iy0 + t as i32;
            if col_ok && (!CHECK || (iy as u32) < sh.h as u32) {
                // SAFETY: (iy, ix) is inside the plane: checked, or guaranteed by the caller
                // (the window ends at the last row the thread's outputs read).
                v[t] = unsafe { E::load(x_plane.add((iy * sh.w + ix) as usize)) };
            }
        });
        unroll!(8: TAPS, ry => {
            // SAFETY: ry, rx < TAPS = R = S: inside the channel's taps.
            let wv = unsafe { E::load(taps.add(ry * TAPS + rx as usize)) };
            for (j, a) in acc.iter_mut().enumerate() {
                *a = fma(v[j + ry], wv, *a);
            }
        });
    };
    // As in `column`: every tap unrolled up to 5x5, each filter column for 7x7.
    if TAPS <= FULL_UNROLL {
        unroll!(8: TAPS, rx => { filter_column(rx as i32) });
    } else {
        for rx in 0..TAPS as i32 {
            filter_column(rx);
        }
    }
    acc
}
