//! The mainloop both tiled kernels share: the `cp.async` pipeline over reduction steps, the
//! thread -> (virtual-thread quadrant) mapping, and the fully unrolled register-tile update.
//! The kernels supply only how one step's A and B slices are copied ([`mainloop`]'s `stage`)
//! and their epilogue. Shared memory per stage: `A[BK][BM + A_PAD]` then `B[BK][BN]` floats.
//!
//! The A rows carry `A_PAD` = 4 spare floats: a copy that writes a column of A (several kk of
//! one m per warp, as `tiled_nchw` does) then lands in distinct banks, and 16-byte accesses
//! along a row stay aligned.

pub use convrs_spec::tiled::{quadrant_stride, smem_bytes, thread_groups, threads, tile_index, A_PAD};

use crate::prelude::*;

/// `ceil(a / b)` for `a >= 0` and `b >= 1` (in u32, so `a + b - 1` cannot overflow).
#[inline(always)]
pub fn ceil_div(a: i32, b: i32) -> i32 {
    ((a as u32 + b as u32 - 1) / b as u32) as i32
}

/// `%tid.x`, read anew at each call: a volatile asm statement is neither hoisted nor merged, so
/// values derived from it inside the mainloop are recomputed (a few integer instructions per
/// step) rather than held in registers across it. The copy code of both kernels uses it.
#[inline(always)]
pub fn tid_x_volatile() -> i32 {
    let t: u32;
    // SAFETY: reading a special register has no preconditions.
    unsafe { core::arch::asm!("mov.u32 {t}, %tid.x;", t = out(reg32) t, options(nomem, nostack)) };
    t as i32
}

/// The reduction a block walks: input channels in steps of BK (outer) times the filter taps
/// `[r_lo, r_hi) x [s_lo, s_hi)` (inner). Every field is block-uniform.
#[derive(Clone, Copy)]
pub struct Reduction {
    pub c: i32,
    pub r_lo: i32,
    pub r_hi: i32,
    pub s_lo: i32,
    pub s_hi: i32,
}

/// Runs the whole reduction and returns the thread's `TM x TN` accumulators, register
/// `[i][j]` holding block-tile row `tile_index(tm, i, quadrant_stride(BM, TM))` and column
/// `tile_index(tn, j, quadrant_stride(BN, TN))`.
///
/// `stage(a_dst, b_dst, c0, r, s)` must start this thread's share of the `cp.async` copies of
/// step (c0, r, s): `A[kk][m]` for channel c0 + kk of tap (r, s) into the `[BK][BM + A_PAD]`
/// floats at shared address `a_dst`, likewise `B[kk][j]` at `b_dst`, zero-filling what lies outside the
/// problem; it must not commit or wait.
///
/// # Safety
/// Every thread of the block calls it with the same `red` (the barriers inside), the block has
/// `threads(BM, BN, TM, TN)` threads, and `stage` writes only inside the slices it is given.
#[inline(always)]
pub unsafe fn mainloop<const BM: usize, const BN: usize, const BK: usize, const TM: usize, const TN: usize, const STAGES: usize>(
    red: Reduction,
    tm: i32,
    tn: i32,
    mut stage: impl FnMut(u32, u32, i32, i32, i32),
) -> [[f32; TN]; TM] {
    const {
        assert!(TM % 4 == 0 && TN % 4 == 0 && TM <= 8 && TN <= 8 && BK <= 16 && BK % 4 == 0);
        assert!(BM % TM == 0 && BN % TN == 0 && (BM / TM) % 4 == 0 && (BN / TN) % 8 == 0);
        assert!(STAGES >= 2 && STAGES <= 4);
    }
    let stage_bytes = smem_bytes(BM, BN, BK, 1) as u32;
    let ring_bytes = STAGES as u32 * stage_bytes;
    if dynamic_smem_bytes() < ring_bytes {
        trap(); // launched with less shared memory than the plan computes
    }
    let smem = dynamic_smem_u32();
    let (nr, ns) = (red.r_hi - red.r_lo, red.s_hi - red.s_lo);
    let steps = if nr > 0 && ns > 0 { ceil_div(red.c, BK as i32) * nr * ns } else { 0 };

    // The next step to copy, (c0, r, s), and the ring slot it goes to.
    let (mut c0, mut r, mut s) = (0i32, red.r_lo, red.s_lo);
    let mut write_at = 0u32;
    let mut copy_next = |write_at: &mut u32| {
        stage(smem + *write_at, smem + *write_at + (BK * (BM + A_PAD) * 4) as u32, c0, r, s);
        s += 1;
        if s == red.s_hi {
            s = red.s_lo;
            r += 1;
            if r == red.r_hi {
                r = red.r_lo;
                c0 += BK as i32;
            }
        }
        *write_at = if *write_at + stage_bytes == ring_bytes { 0 } else { *write_at + stage_bytes };
    };

    let mut acc = [[0.0f32; TN]; TM];
    // This thread's first 16-byte operand words in a stage: A row 0, column tm*4; B likewise.
    let a_off = (tm * 16) as u32;
    let b_off = (BK * (BM + A_PAD) * 4) as u32 + (tn * 16) as u32;
    let (qm, qn) = (quadrant_stride(BM, TM), quadrant_stride(BN, TN));

    // One loop for the prologue (the first STAGES-1 iterations only copy) and the steady state,
    // so the copy code exists once and inlines. Iteration `it` copies step `it` and computes
    // step `it - (STAGES-1)`.
    let mut read_at = 0u32;
    for it in 0..steps + (STAGES as i32 - 1) {
        let computing = it >= STAGES as i32 - 1;
        if computing {
            // The step to compute is the oldest copy group still in flight; after the barrier
            // every thread's copies of it are visible, and every thread is done with the
            // previous step's slot, which the copy below overwrites.
            cp_async_wait_group(match STAGES {
                2 => 0,
                3 => 1,
                _ => 2,
            });
            sync_threads();
        }
        if it < steps {
            copy_next(&mut write_at);
        }
        cp_async_commit(); // possibly empty: keeps one group per step for the wait above
        if !computing {
            continue;
        }

        let a = smem + read_at + a_off;
        let b = smem + read_at + b_off;
        unroll!(16: BK, kk => {
            let mut av = [0.0f32; TM];
            let mut bv = [0.0f32; TN];
            unroll!(4: TM / 4, v => {
                // SAFETY: row kk < BK, column v*qm + tm*4 + 3 < BM: inside this stage's A slice, 16-byte aligned.
                let q = unsafe { ld_shared_f32x4(a + ((kk * (BM + A_PAD) + v * qm) * 4) as u32) };
                q.write_to(&mut av, 4 * v);
            });
            unroll!(4: TN / 4, v => {
                // SAFETY: row kk < BK, column v*qn + tn*4 + 3 < BN: inside this stage's B slice, 16-byte aligned.
                let q = unsafe { ld_shared_f32x4(b + ((kk * BN + v * qn) * 4) as u32) };
                q.write_to(&mut bv, 4 * v);
            });
            unroll!(8: TM, i => {
                unroll!(8: TN, j => {
                    acc[i][j] = fma(av[i], bv[j], acc[i][j]);
                });
            });
        });
        read_at = if read_at + stage_bytes == ring_bytes { 0 } else { read_at + stage_bytes };
    }
    // No copies are pending (the last groups are empty) and no thread reads shared memory after
    // this: the epilogue works from registers.
    acc
}

/// Declares the entry points of one tiled kernel from `convrs_spec::tiled_tiles!`, called as
/// `tiled_tiles!(entries, hwcn, conv)` (or `nchw`): one `conv::<BM, BN, BK, TM, TN, STAGES>` per
/// tile, named by the table's column for that kernel.
macro_rules! entries {
    (hwcn $conv:ident $(($hwcn:ident, $nchw:ident, $bm:literal, $bn:literal, $bk:literal, $tm:literal, $tn:literal, $stages:literal))*) => {
        $($crate::conv_kernel!(fn $hwcn(x: *const f32, w: *const f32, y: *mut f32) => $conv::<$bm, $bn, $bk, $tm, $tn, $stages>);)*
    };
    (nchw $conv:ident $(($hwcn:ident, $nchw:ident, $bm:literal, $bn:literal, $bk:literal, $tm:literal, $tn:literal, $stages:literal))*) => {
        $($crate::conv_kernel!(fn $nchw(x: *const f32, w: *const f32, y: *mut f32) => $conv::<$bm, $bn, $bk, $tm, $tn, $stages>);)*
    };
}
pub(crate) use entries;
