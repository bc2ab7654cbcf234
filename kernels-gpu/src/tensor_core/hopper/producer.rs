//! The warp-specialized kernels' producer warpgroup: for every tile of its CTA's schedule it
//! fills the ring's next stages with the tile's k-tiles, up to a whole ring ahead of the
//! consumers (into the next tile while they run the epilogue).
//!
//! - [`produce_cp_async`] (`Producer::WsCpAsync`): one thread issues the filter tile's TMA copy,
//!   all 128 copy the activation tile with `cp.async` (4 rows a thread) and arrive on the stage's
//!   `full` barrier when their copies land: 128 + 1 arrivals and the filter's bytes a phase.
//! - [`produce_tma`] (`Producer::WsTma`): one thread issues both copies, the activations as one
//!   im2col TMA copy of the tile's rows (128, or 64 under step 12; taps in the padding and rows
//!   past the last image arrive as zeros): one arrival, both tiles' bytes.
//!   With the fused residual by TMA, thread 32 copies each tile's residual into its buffer
//!   ([`super::residual`]).
//!
//! A grouped problem's tiles each read their group's channels of the input (the TMA producer
//! only; the host refuses groups for the others).
//!
//! In a cluster each CTA copies its `bn / CLUSTER` rows of the filter tile into every CTA of the
//! cluster ([`load_filter_tile`]).

use convrs_spec::hopper::{a_tile_bytes, b_tile_bytes, Math, BLOCK_M, K_TILE, ROW_BYTES, WARPGROUP};

use super::residual::ResidualTiles;
use super::scheduler::Tiles;
use crate::prelude::mbarrier::{cp_async_mbar_arrive_noinc, mbar_arrive_expect_tx, setmaxnreg_dec_56, tma_load_3d, tma_load_3d_multicast, tma_load_im2col_4d};
use crate::prelude::pipeline::{Position, Ring};
use crate::prelude::wgmma::Accumulators;
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::{a_rows, chan, divmod, Operands, Tap};

/// Bytes per shared row.
const ROW: u32 = ROW_BYTES as u32;
/// Threads of a warpgroup.
const WG: u32 = WARPGROUP as u32;

/// The `cp.async` producer. Each tile's reduction is its `ktiles` k-tiles.
///
/// # Safety
/// All 128 threads of warpgroup 0 call it together, after the barriers' initialisation, with
/// `full` expecting 128 + 1 arrivals; `x` and `sh` as the kernel requires, `wmap` the filter's
/// tensor map.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn produce_cp_async<O: Operands, const STAGES: usize, const CLUSTER: u32>(
    x: *const u16,
    wmap: *const u8,
    sh: &ConvShape,
    ring: Ring<STAGES>,
    mut tiles: Tiles,
    ktiles: i32,
    tid: u32,
) {
    // SAFETY: the whole warpgroup, at entry ptxas's count is 168 (.maxntid 384 from xtask).
    unsafe { setmaxnreg_dec_56() };
    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    // This thread copies chunks `chunk` and `chunk + 4` of A rows `lrow + 32i`; all its rows
    // share one swizzle (32 is a multiple of 8), chunk + 4 lands at `ldst ^ 64`.
    const A_LOADS: usize = BLOCK_M * 4 / WARPGROUP;
    let row_step = WG / 4;
    let chunk = (tid % 4) as i32;
    let lrow = tid / 4;
    let ldst = lrow * ROW + (((chunk as u32) ^ (lrow & 7)) << 4);
    let (h, wd) = (sh.h as u32, sh.w as u32);
    let mut at = Position::START;
    let bn = tiles.bn;
    while let Some((m0, n0)) = tiles.next::<CLUSTER>() {
        a_rows!(O, sh, [a_ih, a_iw, a_base; A_LOADS], A_LOADS, gemm_m, m0 + lrow, row_step, chunk * 8);
        let mut tap = Tap::START;
        // The filter map's middle coordinate, r * S + s.
        let mut rs = 0i32;
        let mut kt = 0;
        while kt < ktiles {
            // SAFETY: the consumers released every earlier use of the stage before this one's.
            // In a cluster the arrivals come from every CTA, whose stage this CTA's copy
            // overwrites too.
            unsafe { ring.wait_empty(at) };
            let stage = ring.stage_addr(at.stage);
            let full = ring.full(at.stage);
            if tid == 0 {
                // SAFETY: the stage is free (empty waited); the filter tile's bytes are announced
                // first on the same phase.
                unsafe {
                    mbar_arrive_expect_tx(full, b_tile_bytes(bn as usize) as u32);
                    load_filter_tile::<CLUSTER>(stage + BLOCK_M as u32 * ROW, wmap, tap.c0, rs, n0, bn, tiles.rank, full);
                }
            }
            let xc = tap.c0 * O::x_chan(sh);
            unroll!(4: 2, u => {
                let cu = chunk * 8 + 32 * u as i32;
                let c_ok = tap.c0 + cu < sh.c;
                let slot = 64 * u as u32;
                unroll!(8: A_LOADS, i => {
                    let ok = c_ok && ((a_ih[i] + tap.rdh) as u32) < h && ((a_iw[i] + tap.sdw) as u32) < wd;
                    let off = if ok { a_base[i].wrapping_add(tap.x_off).wrapping_add(xc + 32 * u as i32 * O::x_chan(sh)) } else { 0 };
                    let dst = stage + (ldst ^ slot) + i as u32 * row_step * ROW;
                    // SAFETY: dst is inside the free stage's A tile (row < 128), 16-byte aligned; off
                    // is an in-bounds, 8-element aligned index of x when ok, nothing is read otherwise.
                    unsafe { cp_async_16(dst, x.wrapping_add(off as u32 as usize) as *const f32, if ok { 16 } else { 0 }) };
                });
            });
            // SAFETY: one of the 128 + 1 arrivals the full barrier expects per phase.
            unsafe { cp_async_mbar_arrive_noinc(full) };
            tap.advance::<O>(sh, K_TILE as i32);
            if tap.c0 == 0 {
                rs += 1;
            }
            at = at.next::<STAGES>();
            kt += 1;
        }
    }
    // Leave no copy of this thread in flight when it exits.
    cp_async_wait_all();
}

/// Issues the TMA copy of a k-tile's filter tile (rows `n0..n0 + bn` of the map's tap `rs`,
/// channels `c0..c0 + 64`) into the B tile at `b` (a stage's, after its A tile), completing on
/// `full`. In a cluster this CTA (of rank `rank`) copies its `bn / CLUSTER` rows into every CTA
/// of the cluster.
///
/// # Safety
/// One thread calls it per stage use, the stage free and the tile's bytes announced on `full`
/// (or announced before the phase can complete). The B tile is 1024-aligned with room for the
/// BN x 64 tile; in a cluster every CTA announces the whole tile on its own barrier, and this
/// CTA's part (a multiple of 8 rows: the swizzle pattern's 1024 bytes) lands at the same offset
/// in every CTA; another CTA's part may land before the announcement, which the barrier's
/// signed transaction count allows.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn load_filter_tile<const CLUSTER: u32>(b: u32, wmap: *const u8, c0: i32, rs: i32, n0: u32, bn: u32, rank: u32, full: u32) {
    // SAFETY: as the caller guarantees.
    unsafe {
        if CLUSTER == 1 {
            tma_load_3d(b, wmap, c0, rs, n0 as i32, full);
        } else {
            let part = bn / CLUSTER;
            tma_load_3d_multicast(b + rank * part * ROW, wmap, c0, rs, (n0 + rank * part) as i32, full, (1 << CLUSTER) - 1);
        }
    }
}

/// The TMA producer: one thread issues both copies of each k-tile (three under 3xTF32), k-tiles
/// of `math.k_tile()` channels; with a `residual` by TMA, another copies each tile's residual.
/// Each tile's reduction is its `ktiles` k-tiles from k-tile `kt0` on (a slice's share under the
/// split-K schedule).
///
/// # Safety
/// As [`produce_cp_async`], with `full` expecting one arrival and `xmap` the input's im2col
/// tensor map.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn produce_tma<O: Operands, Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const BM: usize>(
    math: Math,
    xmap: *const u8,
    wmap: *const u8,
    sh: &ConvShape,
    ring: Ring<STAGES>,
    mut tiles: Tiles,
    kt0: u32,
    ktiles: i32,
    residual: Option<ResidualTiles<Acc, BM>>,
    tid: u32,
) {
    // SAFETY: the whole warpgroup, as in `produce_cp_async`.
    unsafe { setmaxnreg_dec_56() };
    if let Some(r) = &residual {
        if tid == 32 {
            // Warp 1 copies the residuals, each as soon as its buffer is free, so that thread 0
            // never waits for an epilogue's reads. SAFETY: one thread, every tile in order.
            unsafe { r.load_all::<CLUSTER>(sh, tiles) };
            return;
        }
    }
    if tid != 0 {
        return;
    }
    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    // The taps walk one group's channels (all C for a dense problem); the input map's channel
    // coordinate starts at the tile's group, the filter map's at 0 (it holds C / G a row).
    // SAFETY: G >= 1 (validated problems).
    let group = &ConvShape { c: unsafe { group_channels(sh) }, ..*sh };
    // SAFETY: G divides K (validated), so K / G >= 1.
    let group_k = unsafe { divmod(sh.k as u32, sh.groups as u32) }.0;
    // Every tile's reduction starts at the same k-tile: its tap and channel, found once.
    // SAFETY: C / G >= 1 and S >= 1 (validated problems).
    let kc = math.k_tile() as u32;
    let (rs0, cc) = unsafe { divmod(kt0, (group.c as u32).div_ceil(kc)) };
    // SAFETY: S >= 1.
    let start = unsafe { Tap::at::<O>(group, rs0, (cc * kc) as i32) };
    let b_bytes = math.b_tiles() * b_tile_bytes(tiles.bn as usize);
    // The A tile's bytes: `bm` pixels, the B tile(s) after it.
    let (a_bytes, bm) = (a_tile_bytes(tiles.bm as usize), tiles.bm);
    let mut at = Position::START;
    let bn = tiles.bn;
    while let Some((m0, n0)) = tiles.next::<CLUSTER>() {
        // The window origin of the tile's first row; a cluster's tile wholly past M (computed,
        // never stored) reads the first rows instead.
        // SAFETY: P*Q >= 1 and Q >= 1 (validated problems have non-empty outputs).
        let (n, p, q) = unsafe { O::pixel(sh, if m0 < gemm_m { m0 } else { 0 }) };
        let ih = p as i32 * sh.stride_h - sh.pad_h;
        let iw = q as i32 * sh.stride_w - sh.pad_w;
        // The tile's group (the host plans tiles within one): its first input channel.
        // SAFETY: K / G >= 1.
        let c_base = unsafe { divmod(n0, group_k) }.0 as i32 * group.c;
        let mut tap = start;
        let mut rs = rs0 as i32;
        let mut kt = 0;
        while kt < ktiles {
            // SAFETY: as in `produce_cp_async`.
            unsafe { ring.wait_empty(at) };
            let stage = ring.stage_addr(at.stage);
            let full = ring.full(at.stage);
            // SAFETY: the stage is free; its A tile (1024-aligned, bm rows of 128 bytes) and B
            // tile(s) receive exactly the announced bytes; tap offsets fit u16 (the host's map
            // requires them within the bounding box's range).
            unsafe {
                mbar_arrive_expect_tx(full, (a_bytes + b_bytes) as u32);
                tma_load_im2col_4d(stage, xmap, c_base + tap.c0, iw, ih, n as i32, tap.sdw as u16, tap.rdh as u16, full);
                load_filter_tile::<CLUSTER>(stage + bm * ROW, wmap, tap.c0, rs, n0, bn, tiles.rank, full);
                if math.b_tiles() == 2 {
                    // 3xTF32: the remainders, rows K.. of the split filter, into the second B
                    // tile (no clusters). The high tile's rows past K (outputs never stored)
                    // read remainders, not zeros.
                    tma_load_3d(stage + (bm + bn) * ROW, wmap, tap.c0, rs, sh.k + n0 as i32, full);
                }
            }
            tap.advance::<O>(group, kc as i32);
            if tap.c0 == 0 {
                rs += 1;
            }
            at = at.next::<STAGES>();
            kt += 1;
        }
    }
}

/// Input channels a group reduces over: C / G (C for a dense problem).
///
/// # Safety
/// `sh.groups >= 1`.
#[inline(always)]
pub(super) unsafe fn group_channels(sh: &ConvShape) -> i32 {
    // SAFETY: as the caller guarantees.
    unsafe { divmod(sh.c as u32, sh.groups as u32) }.0 as i32
}
