//! The producer/consumer ring of the warp-specialized Hopper kernels (sm_90a build only), in the
//! shape of CUTLASS's `PipelineTmaAsync`: STAGES stages of shared memory, each guarded by a
//! `full` mbarrier (its k-tile has landed) and an `empty` one (the tensor cores are done with
//! it), and the (stage, phase) position each side keeps.
//!
//! Stage s of the n-th k-tile through the ring is n % STAGES; the consumers wait on `full` for
//! parity (n / STAGES) & 1 and the producer on `empty` for the opposite parity: a fresh barrier
//! counts its "previous" phase (parity 1) as complete, so the producer's first round does not
//! wait and it runs up to a whole ring ahead of the consumers.

use super::mbarrier::{mapa_shared, mbar_arrive, mbar_arrive_cluster, mbar_init, mbar_wait};
use super::{thread_x, unroll};

/// Where a block's ring and barriers are (shared window addresses): STAGES stages of `stage`
/// bytes from `smem` (1024-aligned), then the STAGES `full` barriers, then the STAGES `empty`
/// ones, 8 bytes each.
#[derive(Clone, Copy)]
pub struct Ring<const STAGES: usize> {
    /// The first stage.
    pub smem: u32,
    /// Bytes per stage.
    pub stage: u32,
}

/// A side's position in the ring: the stage it uses next and that use's phase parity.
#[derive(Clone, Copy)]
pub struct Position {
    pub stage: u32,
    pub phase: u32,
}

impl Position {
    /// The first stage, phase 0.
    pub const START: Position = Position { stage: 0, phase: 0 };

    /// The stage used before this position's in a ring of `STAGES` stages.
    #[inline(always)]
    pub fn prev_stage<const STAGES: usize>(self) -> u32 {
        if self.stage == 0 { STAGES as u32 - 1 } else { self.stage - 1 }
    }

    /// The next position of a ring of `STAGES` stages.
    #[inline(always)]
    pub fn next<const STAGES: usize>(self) -> Position {
        if self.stage + 1 == STAGES as u32 { Position { stage: 0, phase: self.phase ^ 1 } } else { Position { stage: self.stage + 1, phase: self.phase } }
    }
}

impl Position {
    /// The position `n` uses further on, in a ring of `STAGES` stages: what a ping-pong
    /// consumer skips while the other warpgroup reads a tile's `n` k-tiles.
    #[inline(always)]
    pub fn advance<const STAGES: usize>(self, n: u32) -> Position {
        let s = self.stage + n;
        Position { stage: s % STAGES as u32, phase: self.phase ^ ((s / STAGES as u32) & 1) }
    }
}

impl<const STAGES: usize> Ring<STAGES> {
    /// The shared address of stage `s`.
    #[inline(always)]
    pub fn stage_addr(self, s: u32) -> u32 {
        self.smem + s * self.stage
    }

    /// Stage `s`'s full barrier: its k-tile is in shared memory.
    #[inline(always)]
    pub fn full(self, s: u32) -> u32 {
        self.smem + STAGES as u32 * self.stage + 8 * s
    }

    /// Stage `s`'s empty barrier: the wgmmas that read it have retired.
    #[inline(always)]
    pub fn empty(self, s: u32) -> u32 {
        self.full(s) + 8 * STAGES as u32
    }

    /// Initialises every stage's barriers: `full` expecting `full_arrivals`, `empty` expecting
    /// `empty_arrivals` per phase.
    ///
    /// # Safety
    /// One thread calls it once, before any use of the barriers, which lie inside the launch's
    /// shared memory; the others use them only after `fence_mbarrier_init` and a barrier.
    #[inline(always)]
    pub unsafe fn init(self, full_arrivals: u32, empty_arrivals: u32) {
        unroll!(8: STAGES, s => {
            // SAFETY: 8-byte aligned slots after the stages, as the caller guarantees.
            unsafe {
                mbar_init(self.full(s as u32), full_arrivals);
                mbar_init(self.empty(s as u32), empty_arrivals);
            }
        });
    }

    /// The producer's wait until stage `at.stage` is free for this use.
    ///
    /// # Safety
    /// Initialised barriers; every use of the stage before the previous one was released (the
    /// phase waited for is the current or the one just completed).
    #[inline(always)]
    pub unsafe fn wait_empty(self, at: Position) {
        // SAFETY: as the caller guarantees.
        unsafe { mbar_wait(self.empty(at.stage), at.phase ^ 1) };
    }

    /// The consumers' wait until stage `at.stage` holds this use's k-tile.
    ///
    /// # Safety
    /// Initialised barriers; the producer cannot refill the stage before this side releases it.
    #[inline(always)]
    pub unsafe fn wait_full(self, at: Position) {
        // SAFETY: as the caller guarantees.
        unsafe { mbar_wait(self.full(at.stage), at.phase) };
    }

    /// This thread's share of the arrivals that free stage `s` for the producers of a cluster of
    /// `CLUSTER` CTAs: alone, each thread arrives ([`empty_arrivals`] counts them); in a cluster
    /// lane 0 of each warp arrives on every CTA's barrier (each CTA's filter copy writes into all
    /// of them).
    ///
    /// # Safety
    /// Every thread of the warp calls it together, once per use of the stage, after the wgmmas
    /// that read it retired. In a cluster, every CTA runs until every CTA's consumers passed a
    /// cluster barrier after their last release.
    #[inline(always)]
    pub unsafe fn release<const CLUSTER: u32>(self, s: u32) {
        // SAFETY: as the caller guarantees; the producers wait for this phase before refilling.
        unsafe {
            if CLUSTER == 1 {
                mbar_arrive(self.empty(s));
            } else if thread_x() % 32 == 0 {
                // The wgmma waits are warp-synchronous: lane 0 speaks for the warp.
                unroll!(4: CLUSTER as usize, r => { mbar_arrive_cluster(mapa_shared(self.empty(s), r as u32)) });
            }
        }
    }
}

/// Arrivals that free a stage when `consumer_threads` threads release it: every one of them,
/// or in a cluster one lane of every consumer warp of every CTA (see [`Ring::release`]).
pub const fn empty_arrivals<const CLUSTER: u32>(consumer_threads: u32) -> u32 {
    if CLUSTER == 1 { consumer_threads } else { consumer_threads / 32 * CLUSTER }
}
