//! Step 2: direct convolution through shared memory, register blocking and `cp.async`
//! prefetching (NCHW input, KCRS filter, NKPQ output, fp32, FMA only).
//!
//! # Tile hierarchy
//!
//! ```text
//! grid   1-D, blocks = column tiles x row tiles x K tiles x N  (column tile fastest)
//! block  TXC x TH threads (blockDim; the host plan picks them, 64..128 threads as a rule)
//!        -> TH output rows x TW = TXC*WPT output columns x KT output channels of one image
//! thread 1 output row x WPT output columns x KT output channels = KT*WPT accumulators
//!        fast path: columns tx*WPT .. tx*WPT+WPT-1 (adjacent: one register window serves all)
//!        generic:   columns tx, tx+TXC, ..        (lanes adjacent per column: no bank conflicts)
//! smem   per input channel c, two buffers (c+1 lands while c is computed):
//!          input tile with halo  IH x need_w floats, IH = (TH-1)*stride_h + (R-1)*dil_h + 1,
//!                                need_w = round4((TW-1)*stride_w + (S-1)*dil_w + 1)
//!          filter taps           fast path: per filter row S*KT floats packed [rx][k], rounded
//!                                up to 16 bytes; generic: [ry][rx][round4(KT)]
//! ```
//!
//! Variants (const generics `conv::<KT, WPT, S>`, listed once in
//! `convrs_spec::direct_smem_variants!`): KT in {4, 6, 8, 16} with WPT 8, 4, 8, 4
//! (KT*WPT <= 64 accumulators, about 80 to 128 registers), times S in {1, 3, 5, 6, 7} with
//! stride_w = dil_w = 1 (fast path, `direct_smem_k{KT}_s{S}`) or any S, stride and dilation
//! (generic path, `direct_smem_k{KT}_sx`): 24 entry points. R, stride_h and dil_h are always
//! run-time values.
//!
//! # Per channel
//!
//! `cp.async` zero-fills what lies outside the image (its `src-size` operand), so padding costs
//! nothing and no padded copy exists. When stride_w = 1, W % 4 == 0 and `x` is 16-byte aligned
//! (checked on the device), the tile is copied in 16-byte `cp.async.cg` pieces; tiles then start
//! `shift = (-pad_w) mod 4` columns early so that every piece is 16-byte aligned in global memory
//! (a piece is then wholly left of column 0 or starts inside the row). Otherwise 4-byte
//! `cp.async.ca`. The filter taps go through 4-byte copies (their rows are R*S floats, rarely
//! aligned), scattered into the layout the inner loop reads. One barrier per channel:
//!
//! ```text
//! stage(0); commit
//! for c: wait_all; barrier (c's data visible to all, and everyone is done with c-1's buffer)
//!        if c+1 < C: stage(c+1) into the other buffer; commit
//!        compute(c)
//! ```
//!
//! # Inner loop (fast path), per filter row
//!
//! The thread's input row segment, WPT + S - 1 values, is read once into registers as
//! ceil((WPT+S-1)/4) 16-byte loads; the row's S*KT taps as ceil(S*KT/4) 16-byte broadcasts
//! (every lane of a warp reads the same taps: one wavefront each), each quad just before the
//! first position that needs it; then S*KT*WPT FMAs. Shared loads per FMA, by variant and S:
//!
//! | variant | S | window + tap loads | FMAs | FMAs per load |
//! | --- | --- | --- | --- | --- |
//! | k6 (WPT 4) | 6 | 3 + 9 | 144 | 12 |
//! | k16 (WPT 4) | 3 | 2 + 12 | 192 | 13.7 |
//! | k16 (WPT 4) | 7 | 3 + 28 | 448 | 14.5 |
//! | k8 (WPT 8) | 3 | 3 + 6 | 192 | 21 |
//!
//! The SASS of the fast loop is the FFMAs, the LDS.128s and 4 instructions of loop overhead.
//! WPT = 8 has fewer loads per FMA but its lanes' 16-byte window loads are 32 bytes apart
//! (2-way bank conflicts) and it holds ~125 registers; on an H200 it measured ~20% slower per
//! FMA than WPT = 4, which is why K = 6 and K >= 9 run with WPT = 4.
//!
//! # The two target shapes
//!
//! - 1,6,768,512 -> 6, 6x6 (P, Q = 763, 507; 1.0 GFLOP): `direct_smem_k6_s6`, block (8, 16):
//!   tile 16 x 32 outputs x all 6 channels, 768 blocks of 4 warps; 80 registers allow 6 blocks
//!   (24 warps) per SM, so the whole grid is one wave (5.8 blocks per SM). 12 FMAs per shared
//!   load; ncu: FMAs are 78% of issued instructions, issue slots 79% busy.
//! - 64,64,56,56 -> 64, 3x3, pad 1 (14.8 GFLOP): `direct_smem_k16_s3`, block (15, 8): tile
//!   8 x 60 outputs (56 columns plus the 3-column shift) x 16 channels, 7 x 4 x 64 = 1792
//!   blocks; ~123 registers allow 4 blocks (16 warps) per SM. 13.7 FMAs per shared load.
//!
//! Their timings against cuDNN are in BENCHMARKS.md.

#![allow(unused_comparisons)]

use core::cmp::{max, min};

use convrs_spec::direct::smem::{packed_tap_row, tap_stride};
use convrs_spec::direct_smem_geometry as geometry;

use crate::prelude::*;

/// Smallest multiple of 4 not below `v` (`v >= 0`).
#[inline(always)]
fn round4(v: i32) -> i32 {
    geometry!(round4: v)
}

/// Generic path: the `KT` taps of one (ry, rx) position, stored `KTP = round4(KT)` floats apart
/// per position, 16-byte aligned: quads as 16-byte loads, a remaining pair as one 8-byte load,
/// a last odd one alone. Every lane of a warp reads the same address: one broadcast each.
#[inline(always)]
unsafe fn load_taps<const KT: usize>(addr: u32) -> [f32; KT] {
    let mut f = [0.0f32; KT];
    let quads = KT / 4;
    unroll!(8: quads, g => {
        // SAFETY: addr + 16g + 16 <= addr + 4*KTP, inside this position's taps; 16-byte aligned.
        let v = unsafe { ld_shared_f32x4(addr + 16 * g as u32) };
        v.write_to(&mut f, 4 * g);
    });
    let done = quads * 4;
    if KT - done >= 2 {
        // SAFETY: done + 2 <= KT; addr + 4*done is 16-byte aligned.
        let v = unsafe { ld_shared_f32x2(addr + 4 * done as u32) };
        f[done] = v[0];
        f[done + 1] = v[1];
    }
    if (KT - done) % 2 == 1 {
        // SAFETY: KT - 1 < KTP.
        f[KT - 1] = unsafe { ld_shared_f32(addr + 4 * (KT as u32 - 1)) };
    }
    f
}

/// One input channel, fast path (`S` taps along W known at compile time, stride_w = dil_w = 1).
///
/// Per filter row the thread loads its input row segment once into registers, WPT + S - 1
/// values as `ceil((WPT + S - 1) / 4)` 16-byte loads, and the row's S*KT taps (packed
/// [rx][k], `packed_tap_row` floats per row) as 16-byte broadcasts, each quad just before the
/// first position that needs it; then it runs S * KT * WPT FMAs.
#[inline(always)]
unsafe fn compute_fast<const KT: usize, const WPT: usize, const S: usize>(
    acc: &mut [[f32; WPT]; KT],
    win: u32,
    row_step: u32,
    taps: u32,
    r: i32,
) {
    let quads = packed_tap_row(KT, S) / 4;
    let mut a = win;
    let mut t = taps;
    for _ in 0..r {
        // SAFETY: the window lies inside the row's `need_w` columns of the staged tile (see `conv`).
        let xv = unsafe { load_window::<WPT, S>(a) };
        let mut f = [0.0f32; 128]; // S * KT <= 8 * 16
        unroll!(8: S, rx => {
            // Quads whose first element belongs to position rx: q with floor(4q / KT) == rx.
            unroll!(32: quads, q => {
                if 4 * q / KT == rx {
                    // SAFETY: q < quads: inside this filter row's packed taps; 16-byte aligned.
                    let v = unsafe { ld_shared_f32x4(t + 16 * q as u32) };
                    v.write_to(&mut f, 4 * q);
                }
            });
            unroll!(16: KT, k => {
                unroll!(8: WPT, j => {
                    acc[k][j] = fma(xv[j + rx], f[rx * KT + k], acc[k][j]);
                });
            });
        });
        a += row_step;
        t += (packed_tap_row(KT, S) * 4) as u32;
    }
}

/// The thread's input row segment for one filter row: WPT + S - 1 values (rounded up to whole
/// 16-byte loads; the extra values are never used).
///
/// # Safety
/// `a` is 16-byte aligned and the `ceil((WPT + S - 1) / 4)` chunks from it lie in the staged tile.
#[inline(always)]
unsafe fn load_window<const WPT: usize, const S: usize>(a: u32) -> [f32; 16] {
    let nch = (WPT + S - 1).div_ceil(4);
    let mut xv = [0.0f32; 16]; // nch <= 4: WPT + S - 1 <= 15
    unroll!(4: nch, ch => {
        // SAFETY: the caller guarantees the chunk lies in the tile and is aligned.
        let v = unsafe { ld_shared_f32x4(a + 16 * ch as u32) };
        v.write_to(&mut xv, 4 * ch);
    });
    xv
}

/// One input channel, any S, stride and dilation: per (ry, rx) WPT single loads of the input
/// and one broadcast read of the KT taps, then WPT * KT FMAs. The thread's outputs are strided
/// by TXC columns (`j_step` = TXC * stride_w floats), so for each j the warp's lanes read
/// consecutive columns (stride_w apart): conflict-free at stride 1.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn compute_generic<const KT: usize, const WPT: usize>(
    acc: &mut [[f32; WPT]; KT],
    win: u32,
    row_step: u32,
    taps: u32,
    r: i32,
    s: i32,
    j_step: u32,
    col_step: u32,
) {
    let ktp = tap_stride(KT);
    let mut a = win;
    let mut t = taps;
    for _ in 0..r {
        let mut ac = a;
        for _ in 0..s {
            let mut xv = [0.0f32; WPT];
            unroll!(8: WPT, j => {
                // SAFETY: column (tx + j*TXC)*stride_w + rx*dil_w <= (TW-1)*stride_w + (S-1)*dil_w < need_w.
                xv[j] = unsafe { ld_shared_f32(ac + j as u32 * j_step) };
            });
            // SAFETY: (ry, rx) < (R, S): inside this channel's taps.
            let f = unsafe { load_taps::<KT>(t) };
            unroll!(16: KT, k => {
                unroll!(8: WPT, j => {
                    acc[k][j] = fma(xv[j], f[k], acc[k][j]);
                });
            });
            ac += col_step;
            t += (ktp * 4) as u32;
        }
        a += row_step;
    }
}

/// The whole kernel; `S == 0` selects the generic path. See the module docs for the layout.
///
/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*C*R*S and N*K*P*Q `f32`s; `y` does not alias the inputs; the
/// launch follows the host plan (block (TXC, TH) with TXC*TH <= `MAX_BLOCK_THREADS` of
/// `convrs_spec::direct::smem`, the flattened grid, and
/// at least the shared memory its formula gives; the kernel traps on less).
#[inline(always)]
pub unsafe fn conv<const KT: usize, const WPT: usize, const S: usize>(x: *const f32, w: *const f32, y: *mut f32, sh: ConvShape) {
    const {
        assert!(KT >= 1 && KT <= 16 && WPT >= 4 && WPT <= 8 && WPT % 4 == 0 && S <= 8);
    }
    let txc = block_dim_x();
    let th = block_dim_y();
    let nthreads = txc * th;
    let tx = thread_x();
    let ty = thread_y();
    let tid = ty * txc + tx;
    let wpt = WPT as i32;
    let kt = KT as i32;
    let ktp = tap_stride(KT) as i32;
    let tw = txc * wpt;
    let (sw, dw) = (sh.stride_w, sh.dil_w);
    if S != 0 && (sh.s != S as i32 || sw != 1 || dw != 1) {
        trap(); // the plan picks a fast entry only for its own S with unit stride and dilation along W
    }

    // 16-byte copies need every tile's first global column to be a multiple of 4: shift the
    // tiles left by `shift` outputs (the host plan counts tiles with the same shift).
    let vec_shape = geometry!(vec_rows: sw, sh.w);
    let shift = geometry!(tile_shift: vec_shape, sh.pad_w);
    let vec16 = vec_shape && (x as usize) % 16 == 0;

    // Flattened grid: block -> (column tile, row tile, K tile, image), column tile fastest.
    let qtiles = geometry!(tiles: sh.q + shift, tw);
    let ptiles = geometry!(tiles: sh.p, th);
    let ktiles = geometry!(tiles: sh.k, kt);
    // SAFETY (all three): Q, P, K >= 1 make every tile count >= 1.
    let (b, xt) = unsafe { divmod(block_x(), qtiles) };
    let (b, yt) = unsafe { divmod(b, ptiles) };
    let (n, kti) = unsafe { divmod(b, ktiles) };
    if n >= sh.n {
        return; // whole block, before any barrier: cannot happen with the plan's grid
    }
    let oy0 = yt * th;
    let ox0 = xt * tw - shift;
    let k0 = kti * kt;
    // Global (row, column) of shared tile element (0, 0); may be negative (padding).
    let gy0 = oy0 * sh.stride_h - sh.pad_h;
    let gx0 = ox0 * sw - sh.pad_w;

    // Shared layout per buffer: input tile [IH][pitch], then the taps; two buffers.
    let ih = geometry!(input_rows: th, sh.stride_h, sh.r, sh.dil_h);
    let need_w = round4(geometry!(input_span: tw, sw, sh.s, dw));
    let pitch = need_w;
    let rs = sh.r * sh.s;
    let tile_floats = ih * pitch;
    let tap_floats = geometry!(taps: i32, S, KT, sh.r, rs, ktp);
    let buf_floats = tile_floats + tap_floats;
    if geometry!(smem_bytes: buf_floats as i64) > dynamic_smem_bytes() as i64 {
        trap(); // launched with less shared memory than the plan computes
    }
    let smem = dynamic_smem_u32();
    let buf_bytes = (buf_floats * 4) as u32;

    // Staging map: `cpar` threads across a row's units (16-byte chunks or single floats),
    // `rpar` rows at a time; the threads beyond cpar*rpar stage no input.
    let units = if vec16 { need_w / 4 } else { need_w };
    let cpar = min(units, nthreads);
    // SAFETY: units >= 4 / 4 = 1 (need_w >= 4) and nthreads >= 1, so cpar >= 1.
    let (rpar, _) = unsafe { divmod(nthreads, cpar) };
    let (r_first, u_start) = unsafe { divmod(tid, cpar) };
    let r_start = if r_first < rpar { r_first } else { ih };
    let plane_len = sh.h * sh.w;
    // Tile rows inside the image, [r_lo, r_hi): the others are zero padding. Channel-invariant.
    let r_lo = max(0, -gy0);
    let r_hi = min(ih, sh.h - gy0);
    let unit_floats = if vec16 { 4 } else { 1 };

    // Starts the copies of channel `c` (input tile and taps) into the buffer at `buf`.
    let stage = |c: i32, buf: u32| {
        let plane = x.wrapping_add(((n * sh.c + c) * plane_len) as usize);
        // This thread's units: columns u_start, u_start + cpar, ... (usually just one), and for
        // each, rows r_start, r_start + rpar, ...; everything but the plane is channel-invariant.
        let mut u = u_start;
        while u < units {
            let gx = gx0 + unit_floats * u;
            // Floats of this unit inside the row: 16-byte units start at multiples of 4, so a unit
            // is wholly left of column 0, or starts inside and may run past W (then zero-filled).
            let floats = if gx >= 0 { max(min(sh.w - gx, unit_floats), 0) } else { 0 };
            let span = if floats > 0 { max(r_hi - r_lo, 0) } else { 0 } as u32;
            let bytes = (4 * floats) as u32;
            let mut r = r_start;
            let mut dst = buf + ((r * pitch + unit_floats * u) * 4) as u32;
            let dst_step = (rpar * pitch * 4) as u32;
            while r < ih {
                let ok = ((r - r_lo) as u32) < span;
                // (row gy0 + r, column gx) of the plane: inside it when ok (then the offset is
                // non-negative and below H*W); otherwise nothing is read from `x`.
                let (from, n_bytes) = if ok { (plane.wrapping_add((gy0 + r).wrapping_mul(sh.w).wrapping_add(gx) as usize), bytes) } else { (x, 0) };
                if vec16 {
                    // SAFETY: dst is 16-byte aligned inside the tile (r < IH, u < need_w/4); when ok,
                    // `from` is 16-byte aligned (x is, W % 4 == 0, gx % 4 == 0) and valid for `floats`
                    // floats of row gy0 + r; otherwise nothing is read.
                    unsafe { cp_async_16(dst, from, n_bytes) };
                } else {
                    // SAFETY: dst inside the tile (r < IH, u < need_w); `from` valid when ok, unread otherwise.
                    unsafe { cp_async_4(dst, from, n_bytes) };
                }
                r += rpar;
                dst += dst_step;
            }
            u += cpar;
        }
        // Taps of output channels k0..k0+KT (zeros past K). Element e = (ry*S + rx)*KT + kk.
        // Fast path: packed rows [ry][rx*KT + kk], `packed_tap_row` floats per row, i.e. offset
        // e + ry * (row padding). Generic path: [ry][rx][KTP], i.e. offset (ry*S + rx)*KTP + kk.
        let taps = buf + (tile_floats * 4) as u32;
        let mut e = tid;
        while e < kt * rs {
            let t = (e as u32 / KT as u32) as i32;
            let kk = e - t * kt;
            let kg = k0 + kk;
            let ok = kg < sh.k;
            let src = if ok { w.wrapping_add(((kg * sh.c + c) * rs + t) as usize) } else { w };
            let off = if S != 0 {
                let ry = (e as u32 / (S * KT) as u32) as i32;
                e + ry * (packed_tap_row(KT, S) - S * KT) as i32
            } else {
                t * ktp + kk
            };
            // SAFETY: off < the taps' floats (see `tap_floats`); src valid when ok, unread otherwise.
            unsafe { cp_async_4(taps + (off * 4) as u32, src, if ok { 4 } else { 0 }) };
            e += nthreads;
        }
    };

    // This thread's outputs: row oy0+ty; columns ox0 + tx*WPT + j (fast path: adjacent, so one
    // register window serves all j) or ox0 + tx + j*TXC (generic path: lanes adjacent per j).
    // Its window starts at tile row ty*stride_h (+ ry*dil_h) and column (first output)*stride_w.
    let first_col = if S != 0 { tx * wpt } else { tx };
    let win_off = ((ty * sh.stride_h * pitch + first_col * sw) * 4) as u32;
    let row_step = (sh.dil_h * pitch * 4) as u32;
    let mut acc = [[0.0f32; WPT]; KT];

    stage(0, smem);
    cp_async_commit();
    for c in 0..sh.c {
        // Channel c landed (this thread's copies), then the barrier makes everyone's visible and
        // proves every thread finished channel c-1, whose buffer the next stage overwrites.
        cp_async_wait_all();
        sync_threads();
        let cur = smem + (c & 1) as u32 * buf_bytes;
        if c + 1 < sh.c {
            stage(c + 1, smem + ((c + 1) & 1) as u32 * buf_bytes);
            cp_async_commit();
        }
        let taps = cur + (tile_floats * 4) as u32;
        // SAFETY: the windows and taps read lie inside the buffer just staged and made visible.
        unsafe {
            if S != 0 {
                compute_fast::<KT, WPT, S>(&mut acc, cur + win_off, row_step, taps, sh.r);
            } else {
                compute_generic::<KT, WPT>(&mut acc, cur + win_off, row_step, taps, sh.r, sh.s, (txc * sw * 4) as u32, (dw * 4) as u32);
            }
        }
    }

    // Epilogue: write the outputs (k0+k, oy, column) that exist; nothing else is written.
    let oy = oy0 + ty;
    if oy < sh.p {
        let y_aligned = (y as usize) % 16 == 0;
        unroll!(16: KT, k => {
            let kg = k0 + k as i32;
            if kg < sh.k {
                let row = ((n * sh.k + kg) * sh.p + oy) * sh.q;
                if S != 0 {
                    // Adjacent columns: 16-byte stores where the 4 outputs exist and are aligned.
                    let oxb = ox0 + tx * wpt;
                    unroll!(8: WPT / 4, g => {
                        let ox = oxb + 4 * g as i32;
                        let v = F32x4([acc[k][4 * g], acc[k][4 * g + 1], acc[k][4 * g + 2], acc[k][4 * g + 3]]);
                        if ox >= 0 && ox + 3 < sh.q && y_aligned && (row + ox) % 4 == 0 {
                            // SAFETY: the four outputs exist (0 <= ox, ox+3 < Q) and are 16-byte aligned;
                            // no other thread writes them (tiles and threads partition the outputs).
                            unsafe { store_global_f32x4(y.add((row + ox) as usize), v) };
                        } else {
                            unroll!(4: 4, i => {
                                let o = ox + i as i32;
                                if o >= 0 && o < sh.q {
                                    // SAFETY: the output exists and only this thread writes it.
                                    unsafe { *y.add((row + o) as usize) = v.0[i] };
                                }
                            });
                        }
                    });
                } else {
                    // Strided columns: for each j the warp writes adjacent outputs (coalesced).
                    unroll!(8: WPT, j => {
                        let o = ox0 + tx + j as i32 * txc;
                        if o >= 0 && o < sh.q {
                            // SAFETY: the output exists and only this thread writes it.
                            unsafe { *y.add((row + o) as usize) = acc[k][j] };
                        }
                    });
                }
            }
        });
    }
}

/// Declares the entry points of `convrs_spec::direct_smem_variants!`: per variant (KT output
/// channels, WPT outputs along W per thread), one `conv::<KT, WPT, S>` per filter width S
/// (0: any S, stride and dilation). The host plan (host/src/plan/direct/smem.rs) picks one.
macro_rules! entries {
    ($widths:tt $(($kt:literal, $wpt:literal: $($name:ident),*))*) => {
        $(entries!(@variant $widths $kt, $wpt: $($name),*);)*
    };
    (@variant [$($s:literal),*] $kt:literal, $wpt:literal: $($name:ident),*) => {
        $(crate::conv_kernel!(fn $name(x: *const f32, w: *const f32, y: *mut f32) => conv::<$kt, $wpt, $s>);)*
    };
}
convrs_spec::direct_smem_variants!(entries);
