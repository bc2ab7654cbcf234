//! The split-K schedule's meeting (`convrs_spec::split_k`): the grid's z slices each reduce a
//! share of every tile's k-tiles, and each consumer warp's partial sums of a 16-row strip (a
//! *unit*) meet the other slices' in the workspace, where the warp that counts in last adds them
//! all up in slice order and writes the output.

use convrs_spec::split_k;

use crate::prelude::matrix::shfl_idx;
use crate::prelude::wgmma::Accumulators;
use crate::prelude::*;

/// Where a split reduction's slices meet.
pub(super) struct Split {
    /// The workspace: the units' counters, then the partial sums.
    pub(super) ws: *mut u32,
    /// This CTA's slice and the slice count.
    pub(super) z: u32,
    pub(super) splits: u32,
    /// Units (16-row strips of a tile) of the whole output.
    pub(super) units: u32,
}

impl Split {
    /// Writes this warp's partial sums `acc` of unit `unit` (lane `lane`'s part) and counts
    /// them in; the warp counting last replaces `acc` by the sum of every slice's partial sums,
    /// in slice order, resets the counter and returns true (it writes the output).
    ///
    /// # Safety
    /// Every lane of the warp calls it together, once per unit and launch in each slice; the
    /// workspace is as large as `convrs_spec::split_k::workspace_bytes` says for the launch,
    /// and its counters are zero at the launch's start.
    #[inline(always)]
    pub(super) unsafe fn meet<Acc: Accumulators>(&self, acc: &mut Acc, unit: u32, lane: u32) -> bool {
        let pieces = Acc::N / 8;
        // SAFETY (the offsets): inside the workspace as the caller guarantees.
        let sums = unsafe { (self.ws as *mut u8).add(split_k::COUNTER_BYTES) as *mut f32 };
        let part = |z: u32, i: usize| sums.wrapping_add(split_k::partial_offset(z, self.units, unit, Acc::N) + (i * 32 + lane as usize) * 4);
        unroll!(32: pieces, i => {
            // SAFETY: this slice's region of the unit, this lane's 16 bytes; 16-byte aligned.
            unsafe { store_global_f32x4(part(self.z, i), F32x4([acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]])) };
        });
        // Release: every lane's stores before the count that announces them.
        fence_acq_rel_gpu();
        sync_warp();
        let counter = self.ws.wrapping_add(unit as usize);
        // SAFETY: the unit's counter, only ever reached atomically while slices count in; the
        // whole warp takes part in the shuffle.
        let before = unsafe { shfl_idx(if lane == 0 { atom_add_acq_rel_gpu(counter, 1) } else { 0 }, 0) };
        if before + 1 != self.splits {
            return false;
        }
        // Acquire: lane 0's count saw every other slice's release; the warp barrier and each
        // lane's fence carry that to the loads.
        sync_warp();
        fence_acq_rel_gpu();
        *acc = Acc::ZERO;
        let mut z = 0;
        while z < self.splits {
            unroll!(32: pieces, i => {
                // SAFETY: slice z's region of the unit, written and released before its count.
                let v = unsafe { load_global_cg_f32x4(part(z, i)) };
                unroll!(4: 4, e => { acc[4 * i + e] += v.0[e] });
            });
            z += 1;
        }
        if lane == 0 {
            // SAFETY: every slice has counted in; nothing reaches the counter again this launch.
            unsafe { store_global_u32(counter, 0) };
        }
        true
    }
}
