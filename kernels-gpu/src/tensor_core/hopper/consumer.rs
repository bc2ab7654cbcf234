//! The consumers: warpgroups that run `wgmma` on the ring's stages. [`consume`] is a
//! warp-specialized consumer warpgroup's whole reduction of one tile, each k-tile's MMAs those
//! of its [`Math`] (which the multistage kernel issues too).

use convrs_spec::hopper::ROW_BYTES;

use super::math::Math;
use crate::prelude::pipeline::{Position, Ring};
use crate::prelude::wgmma::{desc_sw128, fence_proxy_async_shared, Accumulators};

/// A consumer warpgroup (`cw` 0 or 1: rows 64cw.. of a block tile `BM` rows high, whose B tile
/// follows its A tile in each stage) on one tile: runs every k-tile's wgmmas as soon as its stage (from `at`, which it advances) is full and hands each stage back
/// once they retired, the last one too unless `hold` (then the caller releases it, after using its
/// A tile as the fused epilogue's staging: `store_fused`); calls `under(kt)` after issuing each k-tile's wgmmas
/// (work that overlaps them, predicated on kt by the caller). Returns the accumulators with
/// every wgmma retired. An `idle` warpgroup (all its rows outside the output, the same for the
/// whole warpgroup) only waits and releases: its accumulators are never stored. Without `IM2COL` (activations written by `cp.async`, through the
/// generic proxy), or where `fence` (plane B tiles so written), each full stage is fenced for
/// the async proxy before the wgmmas read it.
///
/// # Safety
/// All 128 threads of warpgroup cw + 1 call it together (`tid` the thread's index in the block), after the barriers' initialisation,
/// once for each tile the producer fills.
#[inline(always)]
pub(super) unsafe fn consume<Acc: Accumulators, M: Math, const STAGES: usize, const CLUSTER: u32, const IM2COL: bool, const BM: usize>(
    ring: Ring<STAGES>,
    cw: u32,
    tid: u32,
    ktiles: i32,
    idle: bool,
    hold: bool,
    fence: bool,
    at: &mut Position,
    mut under: impl FnMut(u32),
) -> Acc {
    let a_desc = desc_sw128(ring.smem + cw * 64 * ROW_BYTES as u32);
    let b_desc = M::b_desc(ring.smem + (BM * ROW_BYTES) as u32);
    let a_row = M::a_base(ring.smem, cw, tid);
    let mut acc = Acc::ZERO;
    // A second set of accumulators and the running sum of `Math::finish` (3xTF32 only; unused
    // otherwise).
    let mut spare = Acc::ZERO;
    let mut total = Acc::ZERO;
    let mut prev = 0u32;
    let mut kt = 0;
    while kt < ktiles {
        // SAFETY: the barriers are initialised; the producer cannot refill the stage before this
        // warpgroup's release.
        unsafe { ring.wait_full(*at) };
        // The A tile was written by cp.async (generic proxy) and made visible to this thread by
        // the barrier; wgmma reads it through the async proxy. (TMA writes through the async
        // proxy already.)
        if !IM2COL || fence {
            fence_proxy_async_shared();
        }
        // SAFETY: uniform control flow (every thread of the warpgroup runs every k-tile); stage
        // `at` is full and fenced, and the producer leaves it alone until its release below.
        if !idle {
            unsafe { M::k_tile(&mut acc, &mut spare, &mut total, a_desc, b_desc, a_row, at.stage * ring.stage, kt, ktiles) };
        }
        // Every k-tile, branch-free (`under` predicates its own work on kt).
        under(kt as u32);
        unsafe { acc.wait_1() };
        if kt > 0 {
            // k-tile kt-1's wgmmas (this warp's) retired. SAFETY: as `release` requires.
            unsafe { ring.release::<CLUSTER>(prev) };
        }
        prev = at.stage;
        *at = at.next::<STAGES>();
        kt += 1;
    }
    // SAFETY: uniform, as above.
    unsafe { acc.wait_0() };
    if !hold {
        // SAFETY: the last k-tile's wgmmas retired with the others.
        unsafe { ring.release::<CLUSTER>(prev) };
    }
    // SAFETY: the whole warpgroup, after the wait above.
    unsafe { M::finish(acc, &mut spare, &total, ktiles) }
}
