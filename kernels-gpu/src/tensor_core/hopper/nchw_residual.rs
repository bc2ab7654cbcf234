//! Step 16's NCHW residual in shared memory (`convrs_spec::hopper::nchw_residual_slot_bytes`):
//! before a tile's mainloop, each consumer thread copies by `cp.async` the residual its staged
//! NCHW store will read (`epilogue::store_nchw`: 8 pixels of one channel for each of its
//! columns) into 16-byte slots of its own, and reads them back after its own wait, so no
//! barrier is needed and the loads land under the mainloop.
//!
//! Why: loaded by the store itself, a chunk at a time, the residual's latency came in every
//! chunk (the stores before it may alias, so no load moves above them), and bias + residual +
//! ReLU took 24.8 us where the bare store took 15.2 (32,128,28,28->128 3x3 bf16, 64x128 tiles;
//! H200, fortieth session); an L2 prefetch before the mainloop did not help.
//!
//! Layout: slot j (chunk j / 2, half j % 2) of thread t (of its warpgroup) of key b at
//! `slots + ((b * J + j) * 128 + t) * 16`, J = BN / 16 slots a thread (tiles BN wide); the key
//! is the consumer warpgroup's block of the tile (`cw`), under ping-pong its warpgroup's blocks
//! apart ([`slot_key`]). A warp's 32 slots of one j are 512 contiguous bytes: no bank conflicts.
//! Where the runs are shorter than 8 pixels and the store takes them along the planes, a
//! thread's slots hold what that store's lanes finish instead ([`copy_residual_runs`]), in
//! the same bytes.

use convrs_spec::hopper::{nchw_residual_slot_bytes, nchw_slots_copy, BARRIER_BYTES, NCHW_STAGING_BYTES, WARPGROUP};
use convrs_spec::EpilogueArgs;

use super::epilogue::{run_width, NchwRows, CHUNK};
use crate::prelude::*;

/// Threads of a warpgroup.
const WG: u32 = WARPGROUP as u32;

/// The slots' shared address for a launch with ring end `ring_end` (its dynamic shared memory
/// from the shared window address `raw`), or 0 where it has none: a residual, 16-bit data, runs
/// of 2 pixels or more, and room given between the ring's barriers and the NCHW staging. (The
/// callers take them only for an epilogue in the staged store.)
#[inline(always)]
pub(super) fn slots_of<R: NchwRows>(rows: &R, ep: &EpilogueArgs, ping_pong: bool, bm: usize, bn: usize, ring_end: u32, raw: u32) -> u32 {
    let bytes = nchw_residual_slot_bytes(ping_pong, bm, bn) as u32;
    let start = ring_end + BARRIER_BYTES as u32;
    let room = raw + dynamic_smem_bytes() >= start + bytes + NCHW_STAGING_BYTES as u32;
    if ep.residual != 0 && rows.sixteen() && nchw_slots_copy(rows.run()) && room {
        start
    } else {
        0
    }
}

/// The key of consumer thread `tid`'s slots for block `cw` of its tile: `cw` where both
/// warpgroups share each tile; under ping-pong (`blocks` m64 blocks a tile) its warpgroup's.
#[inline(always)]
pub(super) fn slot_key(ping_pong: bool, blocks: u32, cw: u32, tid: u32) -> u32 {
    if ping_pong { (tid / WG - 1) * blocks + cw } else { cw }
}

/// Thread `tid`'s first slot of key `key` in `slots` for tiles `bn` wide (0 where there are none).
#[inline(always)]
pub(super) fn lane_slot(slots: u32, bn: usize, key: u32, tid: u32) -> u32 {
    if slots == 0 { 0 } else { slots + ((key * (bn / 16) as u32) * WG + tid % WG) * 16 }
}

/// Copies consumer warpgroup `cw`'s NCHW residual of the `bn`-wide tile at (`m0`, `n0`) into this
/// thread's slots from `slot` ([`lane_slot`]): for each of the store's columns of this thread
/// (its read-back's, `epilogue::store_nchw`: where `runs`, which step 16 passes as the store's
/// `wide`, column `t / 8 + 16 k` of each [`CHUNK`] and pixels `8 (t % 8)..+8` of the
/// warpgroup's 64 rows for thread t of the warpgroup; else column `L / 2 + 16 k` and pixels
/// `8 (L % 2)..+8` of the warp's 16 for lane L), in runs of [`run_width`]; runs outside the
/// output land as zeros. Where the runs are shorter than 8 pixels and `runs`, in the mapping
/// of the store along the planes instead ([`copy_residual_runs`]).
///
/// # Safety
/// `slot` is this thread's (the launch has the slots, [`slots_of`]); the residual holds an
/// output-shaped NCHW tensor of 16-bit values; the slots' previous reads are done.
#[inline(always)]
pub(super) unsafe fn copy_residual<R: NchwRows, const RUNS: bool>(bn: usize, rows: &R, ep: &EpilogueArgs, m0: u32, n0: u32, cw: u32, slot: u32, tid: u32) {
    let runs = RUNS;
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    // The store's read-back: its first row and its column of each half chunk.
    let row = if runs { m0 + cw * 64 + 8 * (tid % WG % 8) } else { m0 + cw * 64 + warp * 16 + 8 * (lane % 2) };
    let v0 = if runs { tid % WG / 8 } else { lane / 2 };
    let base = rows.row_base(row);
    let res = ep.residual as *const u16;
    let w = run_width(rows.run());
    if R::ALONG_PLANES && runs && w < 8 {
        // SAFETY: as this function's.
        return unsafe { copy_residual_runs(bn, rows, res, m0 + cw * 64 + warp * 16, n0, w, slot, lane) };
    }
    let mut j = 0;
    while j < (bn / 16) as u32 {
        let col = n0 + CHUNK as u32 * (j / 2) + v0 + 16 * (j % 2);
        let dst = slot + j * WG * 16;
        let mut s = 0;
        while s < 8 {
            let inside = rows.inside(row + s, col);
            let at = if s == 0 { base } else { rows.row_base(row + s) } + col * rows.plane();
            let src = res.wrapping_add(if inside { at as usize } else { 0 }) as *const f32;
            let bytes = if inside { 2 * w } else { 0 };
            // SAFETY: inside the thread's slot (s < 8 pixels of 2 bytes); the run lies in the
            // residual and is aligned to its bytes (the run's width divides the rows' offsets),
            // or nothing is read.
            unsafe {
                match w {
                    8 => cp_async_16(dst, src, bytes),
                    4 => cp_async_8(dst + 2 * s, src, bytes),
                    _ => cp_async_4(dst + 2 * s, src, bytes),
                }
            }
            s += w;
        }
        j += 1;
    }
    cp_async_commit();
}

/// [`copy_residual`] for runs of `w` = 4 or 2 pixels, in the mapping of the store along the
/// planes (`epilogue::store_nchw_runs_fused`): lane `L` finishes pixels `w (L % (16 / w))..+w`
/// of the warp's 16 rows (from `first`) in column `2 w i + L / (16 / w)` of each chunk, `i <
/// 16 / w`; run `i` of chunk `c` lands in slot `2 c + i w / 8` at byte `2 (i w % 8)`
/// ([`slot_run`]).
///
/// # Safety
/// As [`copy_residual`], `res` the residual; `w` 4 or 2.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn copy_residual_runs<R: NchwRows>(bn: usize, rows: &R, res: *const u16, first: u32, n0: u32, w: u32, slot: u32, lane: u32) {
    let lanes = 16 / w;
    let (g, s) = (lane % lanes, lane / lanes);
    let row = first + w * g;
    let base = rows.row_base(row);
    let mut j = 0;
    while j < (bn / 16) as u32 {
        let per = 8 / w;
        let mut i = (j % 2) * per;
        while i < (j % 2 + 1) * per {
            let col = n0 + CHUNK as u32 * (j / 2) + 2 * w * i + s;
            let inside = rows.inside(row, col);
            let src = res.wrapping_add(if inside { (base + col * rows.plane()) as usize } else { 0 }) as *const f32;
            let bytes = if inside { 2 * w } else { 0 };
            let dst = slot + j * WG * 16 + 2 * (i * w % 8);
            // SAFETY: inside the thread's slot j (w pixels of 2 bytes from byte 2 (i w % 8));
            // the run lies in the residual, in one plane, aligned to its bytes (w divides the
            // rows' offsets), or nothing is read.
            unsafe {
                if w == 4 {
                    cp_async_8(dst, src, bytes)
                } else {
                    cp_async_4(dst, src, bytes)
                }
            }
            i += 1;
        }
        j += 1;
    }
    cp_async_commit();
}

/// The `W` residual values of run `i` of the chunk whose first slot is `j` ([`copy_residual_runs`]'s
/// layout) from this thread's first slot `slot`, once its copies landed ([`landed`]), widened
/// from bf16 where `bf16`, else fp16. (`W` = 1 has no copies; it reads the run's 2 bytes all the
/// same.)
///
/// # Safety
/// `slot` is this thread's, filled by [`copy_residual`] for the tile, after [`landed`].
#[inline(always)]
pub(super) unsafe fn slot_run<const W: usize>(slot: u32, j: u32, i: u32, bf16: bool) -> [f32; W] {
    let at = slot + (j + i * W as u32 / 8) * WG * 16 + 2 * (i * W as u32 % 8);
    let pair = |v: u32| crate::prelude::epilogue::widen_pair([v, 0], true, bf16);
    // SAFETY (each): as the caller guarantees; aligned to the load (a run of W from a multiple of W).
    let v: [u32; 2] = unsafe {
        match W {
            4 => ld_shared_u32x2(at),
            2 => [ld_shared_u32(at), 0],
            _ => [ld_shared_u32(at & !3) >> (8 * (at & 2)), 0],
        }
    };
    let (a, b) = (pair(v[0]), pair(v[1]));
    core::array::from_fn(|t| [a[0], a[1], b[0], b[1]][t])
}

/// The 8 residual values of slot `j` from this thread's first slot `slot`, once its copies
/// landed ([`landed`]), widened from bf16 where `bf16`, else fp16.
///
/// # Safety
/// `slot` is this thread's, filled by [`copy_residual`] for the tile, after [`landed`].
#[inline(always)]
pub(super) unsafe fn slot_eight(slot: u32, j: u32, bf16: bool) -> [f32; 8] {
    // SAFETY: as the caller guarantees; 16-byte aligned.
    let v = unsafe { ld_shared_u32x4(slot + j * WG * 16) };
    let p = |i: usize| crate::prelude::epilogue::widen_pair([v[i], 0], true, bf16);
    let (a, b, c, d) = (p(0), p(1), p(2), p(3));
    [a[0], a[1], b[0], b[1], c[0], c[1], d[0], d[1]]
}

/// Waits for this thread's copies into its slots.
#[inline(always)]
pub(super) fn landed() {
    cp_async_wait_all();
}
