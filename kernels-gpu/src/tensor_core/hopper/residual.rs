//! The fused residual by TMA, for the ping-pong tiles whose epilogue runs in registers
//! (`convrs_spec::hopper::Config::takes_residual_map`; the launch passes the residual's map in
//! `EpilogueArgs::residual_map`). The producer copies each tile's residual into its consumer
//! warpgroup's buffer once it has issued the tile's k-tiles, so the copy lands under the
//! mainloops; the warpgroup reads its pairs from shared memory after its own mainloop, frees the
//! buffer, and finishes as with pairs loaded ahead ([`super::epilogue::finish_in_registers`]).
//!
//! Why: loaded by the threads before the tile's mainloop (thirty-fifth session), the residual
//! still cost 12-15 us over bias + ReLU on a 1x1 layer of 2 k-tiles (32,128,28,28->512, H200),
//! for 25.7 MB that take 5.4 us to read: the loads had no mainloop to arrive under. A copy issued
//! by the producer, which runs a ring ahead, has the tile before's mainloop and epilogue too.
//!
//! Layout (`convrs_spec::hopper::residual_region_bytes`): after the ring's barriers, the four
//! mbarriers of the two buffers; from the next 1024-byte boundary the buffers, one a consumer
//! warpgroup, each the tile's `BN / 64` boxes of {64 channels, BM rows} side by side in the
//! 128B swizzle (16-byte unit u of row r at `(u ^ r % 8) * 16`).

use core::marker::PhantomData;

use convrs_spec::epilogue::IN_REGISTERS_MAX_ACC;
use convrs_spec::hopper::{residual_tile_bytes, Math as Spec, BARRIER_BYTES, K_TILE, RESIDUAL_BUFFERS_AT, ROW_BYTES, WARPGROUP};

use super::epilogue::Pairs;
use super::math::Math;
use crate::prelude::mbarrier::{mbar_arrive, mbar_arrive_expect_tx, mbar_init, mbar_wait, prefetch_tensormap, tma_load_2d};
use crate::prelude::wgmma::{fence_proxy_async_shared, Accumulators};
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::Operands;

/// Threads of a warpgroup.
const WG: u32 = WARPGROUP as u32;

/// A launch's residual buffers for tiles `BM x Acc::N`, after the ring's stages, which end at
/// `ring_end` (a shared window address). The map is read from the epilogue's arguments where
/// the producer copies: the consumers, at the register cap, keep only this address live.
pub(super) struct ResidualTiles<Acc, const BM: usize> {
    ring_end: u32,
    tile: PhantomData<Acc>,
}

impl<Acc, const BM: usize> Clone for ResidualTiles<Acc, BM> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Acc, const BM: usize> Copy for ResidualTiles<Acc, BM> {}

impl<Acc: Accumulators, const BM: usize> ResidualTiles<Acc, BM> {
    /// A tile's columns.
    const BN: usize = Acc::N;

    /// The residual by TMA for an instantiation with operands `O` and data `M` under ping-pong
    /// (`PINGPONG`), and `sh`'s epilogue; `None` where the launch passes no map, its epilogue
    /// does not run in registers or has no residual, or the instantiation cannot take it (the
    /// same rule as `Config::takes_residual_map`).
    #[inline(always)]
    pub(super) fn of<O: Operands, M: Math, const PINGPONG: bool>(sh: &ConvShape, ring_end: u32) -> Option<Self> {
        let nhwc = !O::PLANES && !O::PIXEL_PLANES && !O::Y_NCHW && !O::TILED;
        let acc = BM * Self::BN / WARPGROUP;
        let takes = PINGPONG && nhwc && M::SPEC == Spec::Half && acc <= IN_REGISTERS_MAX_ACC && Self::BN % K_TILE == 0;
        let ep = &sh.ep;
        if !takes || ep.residual_map == 0 || ep.residual == 0 || sh.y_bits != 16 || !ep.in_registers(acc) {
            return None;
        }
        Some(ResidualTiles { ring_end, tile: PhantomData })
    }

    /// The region's bytes from the ring's end (`convrs_spec::hopper::residual_region_bytes`).
    #[inline(always)]
    pub(super) fn region_bytes(&self) -> u32 {
        RESIDUAL_BUFFERS_AT as u32 + 2 * Self::TILE
    }

    /// Bytes of a buffer.
    const TILE: u32 = residual_tile_bytes(BM, Self::BN) as u32;

    /// The four mbarriers: `full` of buffers 0 and 1, then `empty` of both.
    #[inline(always)]
    fn full(&self, b: u32) -> u32 {
        self.ring_end + BARRIER_BYTES as u32 + 8 * b
    }

    #[inline(always)]
    fn empty(&self, b: u32) -> u32 {
        self.full(b) + 16
    }

    #[inline(always)]
    fn buffer(&self, b: u32) -> u32 {
        self.ring_end + RESIDUAL_BUFFERS_AT as u32 + b * Self::TILE
    }

    /// Initialises the barriers (`full`: the producer's one arrival and the copy's bytes;
    /// `empty`: every thread of the consumer warpgroup) and prefetches the map `sh` passes.
    ///
    /// # Safety
    /// As `Ring::init`: one thread, once, before any use; the region lies inside the launch's
    /// shared memory; the map is valid for the launch.
    #[inline(always)]
    pub(super) unsafe fn init(&self, sh: &ConvShape) {
        // SAFETY: as the caller guarantees.
        unsafe {
            for b in 0..2 {
                mbar_init(self.full(b), 1);
                mbar_init(self.empty(b), WG);
            }
            prefetch_tensormap(sh.ep.residual_map as *const u8);
        }
    }

    /// The producer's copy of the residual of its `t`-th tile (from 0), at (`m0`, `n0`), through
    /// `sh`'s map into
    /// buffer `t % 2` (the tile's consumer warpgroup's), once that warpgroup has freed it from
    /// tile `t - 2`. Rows past M and channels past K land as zeros (never stored).
    ///
    /// # Safety
    /// The producer thread, once per tile of the CTA's sequence, in order; initialised barriers.
    #[inline(always)]
    pub(super) unsafe fn load(&self, sh: &ConvShape, t: u32, m0: u32, n0: u32) {
        let b = t % 2;
        let map = sh.ep.residual_map as *const u8;
        let box_bytes = (BM * ROW_BYTES) as u32;
        // SAFETY: as the caller guarantees; the buffer is free (its previous use released: a
        // fresh barrier's parity-1 phase counts as complete), 1024-aligned, and receives exactly
        // the announced bytes.
        unsafe {
            mbar_wait(self.empty(b), ((t / 2) & 1) ^ 1);
            mbar_arrive_expect_tx(self.full(b), Self::TILE);
            unroll!(4: Self::BN / K_TILE, j => {
                tma_load_2d(self.buffer(b) + j as u32 * box_bytes, map, (n0 + (j * K_TILE) as u32) as i32, m0 as i32, self.full(b));
            });
        }
    }

    /// Consumer warpgroup `cw`'s wait for the residual of its `u`-th tile (from 0).
    ///
    /// # Safety
    /// Every thread of the warpgroup, once per tile of its, in order; initialised barriers.
    #[inline(always)]
    pub(super) unsafe fn wait(&self, cw: u32, u: u32) {
        // SAFETY: as the caller guarantees.
        unsafe { mbar_wait(self.full(cw), u & 1) };
    }

    /// A thread's residual pairs of m64 block `block` of warpgroup `cw`'s tile, read from the
    /// buffer where [`finish_in_registers`](super::epilogue::finish_in_registers) uses them.
    ///
    /// # Safety
    /// Used after [`ResidualTiles::wait`] for the tile and before [`ResidualTiles::release`].
    #[inline(always)]
    pub(super) unsafe fn pairs(&self, cw: u32, block: u32, tid: u32) -> SharedPairs<BM> {
        let (warp, lane) = ((tid % WG) / 32, tid % 32);
        let row0 = block * 64 + warp * 16 + lane / 4;
        // Bits 4..7 of the rest are zero (a 1024-aligned buffer, 128-byte rows, 4-byte pairs):
        // the swizzle's unit goes there, by the row (row0 % 8 = lane / 4, for both rows of e).
        SharedPairs { base: self.buffer(cw) + row0 * ROW_BYTES as u32 + ((lane / 4) << 4) + 4 * (lane % 4) }
    }

    /// Frees warpgroup `cw`'s buffer for the producer's next copy into it.
    ///
    /// # Safety
    /// Every thread of the warpgroup, once per tile, after its reads.
    #[inline(always)]
    pub(super) unsafe fn release(&self, cw: u32) {
        // The reads (generic proxy) before the next copy's writes (async proxy).
        fence_proxy_async_shared();
        // SAFETY: as the caller guarantees: one of the WG arrivals the phase expects.
        unsafe { mbar_arrive(self.empty(cw)) };
    }
}

/// A thread's residual pairs in a landed buffer of tiles `BM` rows high ([`ResidualTiles`]):
/// pair (j, e) of [`Ahead`](super::epilogue::Ahead)'s order (row `16 warp + lane / 4 + 8e` of
/// the block, columns `8j + 2 (lane % 4)..`) in 16-byte unit `j % 8` of its row, swizzled, of box
/// `j / 8`. A warp's 32 loads of one (j, e) hit 8 rows' different units: no bank conflicts.
pub(super) struct SharedPairs<const BM: usize> {
    /// The thread's first row's pair in unit 0 of box 0, with the row's swizzle in bits 4..7.
    base: u32,
}

impl<const BM: usize> Pairs for SharedPairs<BM> {
    const RESIDUAL: bool = true;

    /// # Safety
    /// The buffer has landed and is not yet released; `i` is a pair of the tile's width.
    #[inline(always)]
    unsafe fn pair(&self, i: usize) -> [u32; 2] {
        let (j, e) = (i / 2, i % 2);
        let addr = (self.base ^ ((j as u32 % 8) << 4)) + (j / 8 * BM * ROW_BYTES + e * 8 * ROW_BYTES) as u32;
        // SAFETY: inside the landed buffer (row < BM, column < BN), 4-byte aligned.
        [unsafe { ld_shared_u32(addr) }, 0]
    }
}
