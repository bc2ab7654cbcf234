//! Step 2 of the tiled family: the same mainloop as an implicit GEMM over NCHW input
//! (`X[n][c][h][w]`), KCRS filter (`W[k][c][r][s]`) and NKPQ output (`Y[n][k][p][q]`), fp32.
//!
//! GEMM view: M = K output channels, J = N*P*Q output positions (j = (n*P + p)*Q + q), and the
//! reduction over crs = (c*R + r)*S + s in steps of BK consecutive values: the filter's own
//! memory order, so each step's A slice is BM runs of BK adjacent floats of W.
//!
//! Copies (all `cp.async`, 4 bytes each; everything outside the image, past C*R*S, past K or
//! past N*P*Q is a zero-fill, never a branch around the copy):
//! - A: lane -> (kk = lane % BK, m = lane / BK + ...): a warp reads 32/BK rows of W, BK
//!   adjacent floats each (a few sectors per instruction instead of one per lane), and writes a
//!   column of the shared A slice, whose padded rows (`A_PAD`) put the lanes in distinct banks.
//! - B (im2col on the fly): thread `tid` owns column `j = tid % BN`, i.e. output (n, p, q),
//!   decomposed once, and EB = BK*BN/T adjacent reduction indices `(tid / BN) * EB + i` of every
//!   step. It tracks their (c, r, s) incrementally (one mixed-radix add of BK per step, +1 per
//!   element) instead of dividing, and forms `ih = p*stride_h - pad_h + r*dil_h` (likewise iw)
//!   and one predicate per value. Lanes hold adjacent j, so a warp reads along an input row.
//!
//! Epilogue: a thread's columns come in runs of 4 adjacent j; when P*Q % 4 == 0 a run is 4
//! adjacent outputs of one (n, k) row and goes out as one 16-byte store.
//!
//! Grid: 1-D, block -> (channel tile, column tile), channel tile fastest (the blocks that share
//! an input tile run together). Block: 1-D, `threads(BM, BN, TM, TN)`. Tile numbers: see the
//! parent module.

use super::mainloop::{ceil_div, mainloop, quadrant_stride, thread_groups, threads, tid_x_volatile, tile_index, Reduction, A_PAD};
use crate::prelude::*;

/// `p`, through an empty asm statement: the optimizer cannot relate it to other pointers, so it
/// does not turn address arithmetic on it into extra loop-carried pointers.
#[inline(always)]
fn opaque_ptr(p: *const f32) -> *const f32 {
    let o: *const f32;
    // SAFETY: a register move; it reads and writes no memory.
    unsafe { core::arch::asm!("mov.b64 {o}, {i};", o = out(reg64) o, i = in(reg64) p, options(pure, nomem, nostack)) };
    o
}

/// The whole kernel. See the module docs.
///
/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*C*R*S and N*K*P*Q `f32`s in the layouts above; `y` does not
/// alias the inputs; the launch follows host/src/plan/tiled/nchw.rs (the kernel traps on a
/// wrong block size or too little shared memory).
#[inline(always)]
#[allow(unused_assignments)] // the carry after the last B element of a step is not read
pub unsafe fn conv<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize, const STAGES: usize>(
    x: *const f32,
    w: *const f32,
    y: *mut f32,
    sh: ConvShape,
) {
    let nthreads = threads(BM, BN, TM, TN);
    const {
        let t = threads(BM, BN, TM, TN);
        // A: each thread copies one kk of several rows; B: one column, EB adjacent kk.
        assert!(t % BK == 0 && (BK * BM) % t == 0);
        assert!(t % BN == 0 && (BK * BN) % t == 0);
    }
    if block_dim_x() != nthreads as i32 {
        trap();
    }
    let tid = thread_x();
    let pq = sh.p * sh.q;
    let cols = sh.n * pq;
    let hw = sh.h * sh.w;
    let crs = sh.c * sh.r * sh.s;
    // SAFETY (both): K >= 1 and N*P*Q >= 1.
    let (jt, kt) = unsafe { divmod(block_x(), ceil_div(sh.k, BM as i32)) };
    if jt >= ceil_div(cols, BN as i32) {
        return; // whole block, before any barrier: cannot happen with the plan's grid
    }
    let (j0, k0) = (jt * BN as i32, kt * BM as i32);

    // A: this thread copies A[kk_a][m_a + i * T/BK] for i < BK*BM/T (see `stage`).
    // B: column jc, i.e. output (n, p, q), for kk = kk_b + i, i < EB.
    let eb = BK * BN / nthreads;
    let (jc, kk_b) = (tid % BN as i32, (tid / BN as i32) * eb as i32);
    let jg = j0 + jc;
    let b_ok = jg < cols;
    // SAFETY: P*Q >= 1 and Q >= 1.
    let (n, pix) = unsafe { divmod(if b_ok { jg } else { 0 }, pq) };
    let (p, q) = unsafe { divmod(pix, sh.q) };
    let (ih0, iw0) = (p * sh.stride_h - sh.pad_h, q * sh.stride_w - sh.pad_w);
    let x_img = n * sh.c * hw;
    // (c, r, s) of reduction index kk_b of the next step, and BK in the same mixed radix.
    // SAFETY (all four): R*S >= 1 and S >= 1.
    let (mut c, rs) = unsafe { divmod(kk_b, sh.r * sh.s) };
    let (mut r, mut s) = unsafe { divmod(rs, sh.s) };
    let (dc, drs) = unsafe { divmod(BK as i32, sh.r * sh.s) };
    let (dr, ds) = unsafe { divmod(drs, sh.s) };
    // Each digit is at most BK (< 256): one register holds all three across the mainloop.
    let step_digits = ds | (dr << 8) | (dc << 16);

    let stage = |a_dst: u32, b_dst: u32, crs0: i32, _: i32, _: i32| {
        // The per-thread copy coordinates are re-derived from %tid.x every step (a few integer
        // instructions) instead of being held across the mainloop: that keeps the 128x128 tile
        // at 128 registers, i.e. two blocks per SM instead of one.
        let tid = tid_x_volatile();
        let (kk_a, m_a) = (tid % BK as i32, tid / BK as i32);
        // Rows of W this thread may read: k0 + m_a + i * T/BK < K  <=>  i * T/BK < a_rows.
        let a_rows = sh.k - k0 - m_a;
        let a_first = if a_rows > 0 { (k0 + m_a) * crs + kk_a } else { 0 };
        let a_dst0 = ((kk_a * (BM + A_PAD) as i32 + m_a) * 4) as u32;
        // Bytes from one of this thread's W rows to the next (T/BK rows apart).
        let a_row_step = (nthreads / BK) * crs as usize * 4;
        let (jc, kk_b) = (tid % BN as i32, (tid / BN as i32) * eb as i32);
        let col_ok = crs0 + kk_a < crs;
        // W[k0 + m_a][crs0 + kk_a]; the following elements are a_row_step bytes apart. Hidden
        // from the optimizer so that it walks one pointer instead of keeping one per element
        // alive across the mainloop (that cost 17 registers and half the occupancy).
        let mut from = opaque_ptr(w.wrapping_add((a_first + crs0) as usize));
        unroll!(16: BK * BM / nthreads, i => {
            let dm = (i * (nthreads / BK)) as i32;
            let ok = col_ok && dm < a_rows;
            // SAFETY: (kk_a, m_a + dm) < (BK, BM) is inside the A slice (rows BM + A_PAD apart);
            // `from` is W[k0 + m_a + dm][crs0 + kk_a], inside W when ok (row and column in range);
            // nothing is read otherwise.
            unsafe { cp_async_4(a_dst + a_dst0 + (dm * 4) as u32, if ok { from } else { w }, if ok { 4 } else { 0 }) };
            from = from.wrapping_byte_add(a_row_step);
        });
        let (mut cc, mut rr, mut ss) = (c, r, s);
        unroll!(16: eb, i => {
            let (ih, iw) = (ih0 + rr * sh.dil_h, iw0 + ss * sh.dil_w);
            let ok = b_ok && cc < sh.c && ih >= 0 && ih < sh.h && iw >= 0 && iw < sh.w;
            let (from, bytes) = if ok { (x.wrapping_add((x_img + cc * hw + ih * sh.w + iw) as usize), 4) } else { (x, 0) };
            // SAFETY: (kk_b + i, jc) < (BK, BN) is inside the B slice; `from` is X[n][cc][ih][iw]
            // when ok (all indices in range); nothing is read otherwise.
            unsafe { cp_async_4(b_dst + (((kk_b + i as i32) * BN as i32 + jc) * 4) as u32, from, bytes) };
            // Next reduction index: s + 1 with carries into r and c.
            ss += 1;
            if ss == sh.s {
                ss = 0;
                rr += 1;
                if rr == sh.r {
                    rr = 0;
                    cc += 1;
                }
            }
        });
        // Advance to the next step: + BK = (dc, dr, ds), each digit carrying at most once.
        let (dc, dr, ds) = (step_digits >> 16, (step_digits >> 8) & 0xff, step_digits & 0xff);
        s += ds;
        r += dr;
        if s >= sh.s {
            s -= sh.s;
            r += 1;
        }
        c += dc;
        if r >= sh.r {
            r -= sh.r;
            c += 1;
        }
    };
    let (tm, tn) = thread_groups::<BM, BN, TM, TN>(tid);
    // The reduction as one flat axis of C*R*S (the mainloop's "channels"), one "tap".
    let red = Reduction { c: crs, r_lo: 0, r_hi: 1, s_lo: 0, s_hi: 1 };
    // SAFETY: every thread reaches this with the same reduction; the block size was checked.
    let acc = unsafe { mainloop::<BM, BN, BK, TM, TN, STAGES>(red, tm, tn, stage) };

    // Epilogue: Y[n][k][p][q]. A run of 4 adjacent j starts at a multiple of 4; with P*Q % 4 == 0
    // it lies in one image and is 16-byte aligned in Y.
    let vec_y = pq % 4 == 0 && (y as usize) % 16 == 0;
    unroll!(4: TN / 4, v => {
        let jv = j0 + tile_index(tn, 4 * v, quadrant_stride(BN, TN));
        if vec_y && jv < cols {
            // SAFETY: P*Q >= 1.
            let (n, pix) = unsafe { divmod(jv, pq) };
            let base = n * sh.k * pq + pix;
            unroll!(8: TM, i => {
                let k = k0 + tile_index(tm, i, quadrant_stride(BM, TM));
                if k < sh.k {
                    let out = F32x4([acc[i][4 * v], acc[i][4 * v + 1], acc[i][4 * v + 2], acc[i][4 * v + 3]]);
                    // SAFETY: outputs (n, k, pix..pix+4) exist (pix % 4 == 0, P*Q % 4 == 0) and are
                    // 16-byte aligned; only this thread writes them.
                    unsafe { store_global_f32x4(y.add((base + k * pq) as usize), out) };
                }
            });
        } else if !vec_y {
            unroll!(4: 4, jj => {
                let jg = jv + jj as i32;
                if jg < cols {
                    // SAFETY: P*Q >= 1.
                    let (n, pix) = unsafe { divmod(jg, pq) };
                    let base = n * sh.k * pq + pix;
                    unroll!(8: TM, i => {
                        let k = k0 + tile_index(tm, i, quadrant_stride(BM, TM));
                        if k < sh.k {
                            // SAFETY: (n, k, pix) is an output; only this thread writes it.
                            unsafe { *y.add((base + k * pq) as usize) = acc[i][4 * v + jj] };
                        }
                    });
                }
            });
        }
    });
}

// Entry points `tiled_nchw_{BM}x{BN}[_k{BK}]`, one per tile of the shared table: the shapes the host
// plan chooses from (timings in the parent module).
convrs_spec::tiled_tiles!(super::mainloop::entries, nchw, conv);
