//! The consumers: warpgroups that run `wgmma` on the ring's stages. [`k_tile`] is one k-tile's
//! MMAs, which the multistage kernel issues too; [`consume`] is a warp-specialized consumer
//! warpgroup's whole reduction of one tile.

use convrs_spec::hopper::{BLOCK_M, ROW_BYTES};

use crate::prelude::pipeline::{Position, Ring};
use crate::prelude::wgmma::{commit_group, desc_sw128, fence_proxy_async_shared, Accumulators, DESC_K16};
use crate::prelude::*;

/// Issues k-tile `kt`'s wgmmas on a stage `offset` bytes into the ring whose A and B tiles the
/// descriptors `a_desc`, `b_desc` describe at offset 0: a fence, the 4 m64nNk16 steps (the very
/// first, of k-tile 0, with scale-d 0: the accumulators start from A * B), one commit group.
///
/// # Safety
/// All 128 threads of the warpgroup call it together (uniform control flow) with the same
/// descriptors, which describe a stage written and made visible to the async proxy, left alone
/// until a wait retires these wgmmas; nothing else touches the accumulators until then.
#[inline(always)]
pub(super) unsafe fn k_tile<Acc: Accumulators, const BF16: bool>(acc: &mut Acc, a_desc: u64, b_desc: u64, offset: u32, kt: i32) {
    // Descriptor start fields count 16-byte units.
    let at = (offset >> 4) as u64;
    // SAFETY (the blocks below): as the caller guarantees; the fence orders the accumulator
    // accesses before.
    unsafe { acc.fence() };
    unroll!(4: 4, ks => {
        let step = at + ks as u64 * DESC_K16;
        let scale = if ks == 0 { (kt != 0) as u32 } else { 1 };
        unsafe { acc.mma::<BF16>(a_desc + step, b_desc + step, scale) };
    });
    unsafe { commit_group() };
}

/// A consumer warpgroup (`cw` 0 or 1: block-tile rows 64cw..) on one tile: runs every k-tile's
/// wgmmas as soon as its stage (from `at`, which it advances) is full and hands each stage back
/// once they retired, the last one too; calls `under(kt)` after issuing each k-tile's wgmmas
/// (work that overlaps them, predicated on kt by the caller). Returns the accumulators with
/// every wgmma retired. Without `IM2COL` (activations written by `cp.async`, through the
/// generic proxy) each full stage is fenced for the async proxy before the wgmmas read it.
///
/// # Safety
/// All 128 threads of warpgroup cw + 1 call it together, after the barriers' initialisation,
/// once for each tile the producer fills.
#[inline(always)]
pub(super) unsafe fn consume<Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const BF16: bool, const IM2COL: bool>(
    ring: Ring<STAGES>,
    cw: u32,
    ktiles: i32,
    at: &mut Position,
    mut under: impl FnMut(u32),
) -> Acc {
    let a_desc = desc_sw128(ring.smem + cw * 64 * ROW_BYTES as u32);
    let b_desc = desc_sw128(ring.smem + (BLOCK_M * ROW_BYTES) as u32);
    let mut acc = Acc::ZERO;
    let mut prev = 0u32;
    let mut kt = 0;
    while kt < ktiles {
        // SAFETY: the barriers are initialised; the producer cannot refill the stage before this
        // warpgroup's release.
        unsafe { ring.wait_full(*at) };
        // The A tile was written by cp.async (generic proxy) and made visible to this thread by
        // the barrier; wgmma reads it through the async proxy. (TMA writes through the async
        // proxy already.)
        if !IM2COL {
            fence_proxy_async_shared();
        }
        // SAFETY: uniform control flow (every thread of the warpgroup runs every k-tile); stage
        // `at` is full and fenced, and the producer leaves it alone until its release below.
        unsafe { k_tile::<Acc, BF16>(&mut acc, a_desc, b_desc, at.stage * ring.stage, kt) };
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
    // SAFETY: the last k-tile's wgmmas retired with the others.
    unsafe { ring.release::<CLUSTER>(prev) };
    acc
}
