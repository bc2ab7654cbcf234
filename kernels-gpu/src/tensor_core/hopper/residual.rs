//! The fused residual by TMA, for the persistent and ping-pong tiles whose epilogue runs in
//! registers (`convrs_spec::hopper::Config::takes_residual_map`; the launch passes the
//! residual's map in `EpilogueArgs::residual_map`). A thread of the producer warpgroup of its
//! own (not the ring's) copies each tile's residual into a buffer as soon as the buffer is free,
//! so the copy lands under the mainloops; the consumers read their pairs from shared memory after
//! the mainloop, free the buffer, and finish as with pairs loaded ahead
//! ([`super::epilogue::finish_in_registers`]). Under ping-pong each consumer warpgroup has a
//! buffer (the CTA's tiles alternate between them); on step 7's shared tiles both read each
//! buffer, their own 64 rows.
//!
//! Why: loaded by the threads before the tile's mainloop (thirty-fifth session), the residual
//! still cost 12-15 us over bias + ReLU on a 1x1 layer of 2 k-tiles (32,128,28,28->512, H200),
//! for 25.7 MB that take 5.4 us to read: the loads had no mainloop to arrive under. A copy issued
//! once the buffer is free has the tile before's mainloop and epilogue too.
//!
//! Layout (`convrs_spec::hopper::residual_region_bytes`): after the ring's barriers, the four
//! mbarriers of the (one or two) buffers; from the next 1024-byte boundary the buffers
//! (`convrs_spec::hopper::residual_buffers`), each the tile's `BN / 64` boxes of {64 channels,
//! BM rows} side by side in the 128B swizzle (16-byte unit u of row r at `(u ^ r % 8) * 16`).

use core::marker::PhantomData;

use convrs_spec::hopper::{residual_buffers, residual_region_bytes, residual_tile_bytes, takes_residual_map, thread_accumulators, Math as Spec, BARRIER_BYTES, K_TILE, RESIDUAL_BUFFERS_AT, ROW_BYTES, WARPGROUP};

use super::epilogue::Pairs;
use super::math::Math;
use super::scheduler::Tiles;
use crate::prelude::mbarrier::{mbar_arrive, mbar_arrive_expect_tx, mbar_init, mbar_wait, prefetch_tensormap, tma_load_2d};
use crate::prelude::wgmma::{fence_proxy_async_shared, Accumulators};
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::Operands;

/// Threads of a warpgroup.
const WG: u32 = WARPGROUP as u32;

/// A launch's residual buffers for tiles `BM x Acc::N`, after the ring's stages, which end at
/// `ring_end` (a shared window address); `buffers` of them, each read by `readers` threads (the
/// other fields are constants of the instantiation). The map is read from the epilogue's
/// arguments where the producer copies: the consumers, at the register cap, keep only the
/// address live.
pub(super) struct ResidualTiles<Acc, const BM: usize> {
    ring_end: u32,
    buffers: u32,
    readers: u32,
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

    /// The residual by TMA for an instantiation with operands `O` and data `M` whose schedule
    /// can take it (`schedule`: im2col copies, persistent, no cluster, no split; ping-pong where
    /// `ping_pong`), its ring's stages `ring_bytes` from `ring_end`, and `sh`'s epilogue; `None`
    /// where the launch passes no map, its epilogue does not run in registers or has no residual,
    /// or the instantiation cannot take it (the same rule as `Config::takes_residual_map`).
    #[inline(always)]
    pub(super) fn of<O: Operands, M: Math>(sh: &ConvShape, schedule: bool, ping_pong: bool, ring_end: u32, ring_bytes: usize) -> Option<Self> {
        let nhwc = !O::PLANES && !O::PIXEL_PLANES && !O::Y_NCHW && !O::TILED;
        let acc = thread_accumulators(ping_pong, BM, Self::BN);
        let takes = takes_residual_map(schedule && nhwc, M::SPEC == Spec::Half, acc, Self::BN);
        let ep = &sh.ep;
        if !takes || ep.residual_map == 0 || ep.residual == 0 || sh.y_bits != 16 || !ep.in_registers(acc) {
            return None;
        }
        let buffers = residual_buffers(ping_pong, ring_bytes, BM, Self::BN) as u32;
        Some(ResidualTiles { ring_end, buffers, readers: if ping_pong { WG } else { 2 * WG }, tile: PhantomData })
    }

    /// The region's bytes from the ring's end (`convrs_spec::hopper::residual_region_bytes`).
    #[inline(always)]
    pub(super) fn region_bytes(&self) -> u32 {
        residual_region_bytes(BM, Self::BN, self.buffers as usize) as u32
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
    /// `empty`: every thread that reads the buffer) and prefetches the map `sh` passes.
    ///
    /// # Safety
    /// As `Ring::init`: one thread, once, before any use; the region lies inside the launch's
    /// shared memory; the map is valid for the launch.
    #[inline(always)]
    pub(super) unsafe fn init(&self, sh: &ConvShape) {
        // SAFETY: as the caller guarantees.
        unsafe {
            for b in 0..self.buffers {
                mbar_init(self.full(b), 1);
                mbar_init(self.empty(b), self.readers);
            }
            prefetch_tensormap(sh.ep.residual_map as *const u8);
        }
    }

    /// The copies of the residual of each of the CTA's `tiles` through `sh`'s map, in order
    /// ([`ResidualTiles::load`]).
    ///
    /// # Safety
    /// One thread of the producer warpgroup (not the ring's), once; initialised barriers.
    #[inline(always)]
    pub(super) unsafe fn load_all<const CLUSTER: u32>(&self, sh: &ConvShape, mut tiles: Tiles) {
        let mut t = 0;
        while let Some((m0, n0)) = tiles.next::<CLUSTER>() {
            // SAFETY: as the caller guarantees, once a tile in order.
            unsafe { self.load(sh, t, m0, n0) };
            t += 1;
        }
    }

    /// The copy of the residual of the CTA's `t`-th tile (from 0), at (`m0`, `n0`), through
    /// `sh`'s map into buffer `t % buffers` (under ping-pong, the tile's consumer warpgroup's),
    /// once its readers have freed it from the tile `buffers` before: it lands under the
    /// mainloops. Rows past M and channels past K land as zeros (never stored).
    ///
    /// # Safety
    /// One thread, once per tile of the CTA's sequence, in order; initialised barriers.
    #[inline(always)]
    unsafe fn load(&self, sh: &ConvShape, t: u32, m0: u32, n0: u32) {
        let b = t % self.buffers;
        let map = sh.ep.residual_map as *const u8;
        let box_bytes = (BM * ROW_BYTES) as u32;
        // SAFETY: as the caller guarantees; the buffer is free (its previous use released: a
        // fresh barrier's parity-1 phase counts as complete), 1024-aligned, and receives exactly
        // the announced bytes.
        unsafe {
            mbar_wait(self.empty(b), ((t / self.buffers) & 1) ^ 1);
            mbar_arrive_expect_tx(self.full(b), Self::TILE);
            unroll!(4: Self::BN / K_TILE, j => {
                tma_load_2d(self.buffer(b) + j as u32 * box_bytes, map, (n0 + (j * K_TILE) as u32) as i32, m0 as i32, self.full(b));
            });
        }
    }

    /// A reader's wait for the residual of the CTA's `t`-th tile (from 0).
    ///
    /// # Safety
    /// Every thread that reads the tile's buffer, once per tile it reads, in order; initialised
    /// barriers.
    #[inline(always)]
    pub(super) unsafe fn wait(&self, t: u32) {
        // SAFETY: as the caller guarantees.
        unsafe { mbar_wait(self.full(t % self.buffers), (t / self.buffers) & 1) };
    }

    /// A thread's residual pairs of m64 block `block` of the CTA's `t`-th tile, read from the
    /// buffer where [`finish_in_registers`](super::epilogue::finish_in_registers) uses them.
    ///
    /// # Safety
    /// Used after [`ResidualTiles::wait`] for the tile and before [`ResidualTiles::release`].
    #[inline(always)]
    pub(super) unsafe fn pairs(&self, t: u32, block: u32, tid: u32) -> SharedPairs<BM> {
        let (warp, lane) = ((tid % WG) / 32, tid % 32);
        let row0 = block * 64 + warp * 16 + lane / 4;
        // Bits 4..7 of the rest are zero (a 1024-aligned buffer, 128-byte rows, 4-byte pairs):
        // the swizzle's unit goes there, by the row (row0 % 8 = lane / 4, for both rows of e).
        SharedPairs { base: self.buffer(t % self.buffers) + row0 * ROW_BYTES as u32 + ((lane / 4) << 4) + 4 * (lane % 4) }
    }

    /// Frees the `t`-th tile's buffer for the producer's next copy into it.
    ///
    /// # Safety
    /// Every reader of the buffer, once per tile, after its [`ResidualTiles::wait`] for the tile
    /// (so no reader's arrival can count towards an earlier use) and its reads.
    #[inline(always)]
    pub(super) unsafe fn release(&self, t: u32) {
        // The reads (generic proxy) before the next copy's writes (async proxy).
        fence_proxy_async_shared();
        // SAFETY: as the caller guarantees: one of the arrivals the phase expects.
        unsafe { mbar_arrive(self.empty(t % self.buffers)) };
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
