//! Family 3 on Hopper, steps 4 to 6, one kernel with two switches. Compiled only into the
//! sm_90a PTX.
//! - Step 4 (the host's `wgmma_ws_nhwc`, `wgmma_ws_nhwc_bf16`): `wgmma_ws_nhwc_128x{BN}k64`
//!   (and `wgmma_ws_nhwc_bf16_*`), step 3's wgmma implicit GEMM ([`super::wgmma`]) made
//!   warp-specialized.
//! - Step 5 (`wgmma_mc_*`, `CLUSTER` = 2): clusters of two CTAs along M (the entries carry
//!   `.reqnctapercluster 2, 1, 1`) that share each filter tile: each copies half of it, multicast
//!   into both (the map's box has BN / 2 rows), and both CTAs' consumers release every stage.
//! - Step 6 (`wgmma_pws_*`, and `wgmma_pmc_*` in clusters, `PERSISTENT`): a persistent grid
//!   (`min(tiles, SMs)` blocks, whole clusters) walking the output tiles round-robin, the ring
//!   carried from tile to tile so the producer loads the next tile during the epilogue.
//! - Step 7 (`wgmma_tma_*`, and `wgmma_tmc_*` in clusters, `IM2COL`): step 6 with the activation
//!   tile brought in by one im2col TMA copy per k-tile instead of 128 threads' `cp.async`
//!   ([`produce_im2col`]): one producer thread, one arrival per stage, no proxy fence.
//! - Step 8 (`wgmma_sk_*` on the host: step 7's entries on a grid of z > 1 slices, tiles up to
//!   128 wide): split-K. Slice z reduces its share of every tile's k-tiles
//!   (`convrs_spec::split_k::k_range`); `w`, which step 7 does not read, then points to the
//!   workspace where each consumer warp leaves its partial sums and counts itself in, and the
//!   last warp of each 16-row strip adds them all in slice order and writes the output
//!   ([`Split::meet`]).
//!
//! # Contract
//!
//! Step 1's problem and arguments (NHWC x, KRSC w, NHWK y; C and K multiples of 8; the 16
//! trailing [`ConvShape`] `i32`s, `y_bits` 32 or 16) with ONE extra pointer right after `y`:
//! `wmap`, a 128-byte CUDA tensor map of the filter in global memory (64-byte aligned, written
//! before the launch and unchanged during it), encoded by `cuTensorMapEncodeTiled` as a 3-D
//! tensor {C, R*S, K} (innermost first; byte strides C*2 and R*S*C*2) of the input's 16-bit type,
//! box {64, 1, BN}, element strides 1, no interleave, 128B swizzle, zero fill for out-of-range
//! elements. `w` itself is not read (the map holds its address). Launch: 384 threads, a 1-D grid
//! of `ceil(M / 128) * ceil(K / BN)` blocks (N tile fastest; in clusters the M tiles rounded up
//! to whole clusters; persistent: fewer, any multiple of the cluster size),
//! `convrs_spec::wgmma::ws_smem_bytes(BN, STAGES)` bytes of dynamic shared memory. Step 7 takes
//! one more pointer after `wmap`: `xmap`, the input's im2col tensor map, encoded by
//! `cuTensorMapEncodeIm2col` as a 4-D tensor {C, W, H, N} (byte strides C*2, W*C*2, H*W*C*2),
//! bounding box corners {-pad_w, -pad_h} and {pad_w - (S-1)*dil_w, pad_h - (R-1)*dil_h},
//! element strides {1, stride_w, stride_h, 1}, 64 channels per pixel, 128 pixels per column,
//! 128B swizzle, zero fill; so the copy for output row m0 and tap (r, s) brings rows m0.. of
//! the im2col matrix, exactly the A tile step 1's addressing builds.
//!
//! # Roles
//!
//! - Warpgroup 0, the producer (`setmaxnreg.dec` to 56): for each k-tile it waits for the
//!   stage's `empty` barrier, then thread 0 announces the filter tile's bytes on the stage's
//!   `full` barrier and issues one TMA for it (BN rows of 64 channels, which the 128B swizzle
//!   lays out exactly as step 1's `cp.async` did), and all 128 threads copy the activation tile
//!   with `cp.async` (step 1's addressing, 4 rows a thread) and arrive on `full` when their
//!   copies land (`cp.async.mbarrier.arrive.noinc`). `full` thus expects 128 + 1 arrivals and
//!   BN * 128 transaction bytes.
//! - Warpgroups 1 and 2, the consumers (`setmaxnreg.inc` to 224): rows 64(g-1).. of the block
//!   tile. For each k-tile: wait for `full`, proxy fence (the `cp.async` data was written
//!   through the generic proxy; wgmma reads through the async one), 4 x m64nBNk16 wgmma, commit,
//!   `wait_group 1` (k-tile kt-1's wgmmas retired), then arrive on kt-1's `empty` (256 arrivals;
//!   in clusters lane 0 of each consumer warp arrives on every CTA's barrier, 16 arrivals). After
//!   the last k-tile of a tile, `wait_group 0`, release the last stage, and the epilogue
//!   (`store_tile`).
//!
//! # Ring
//!
//! STAGES stages, each step 1's (A tile then B tile, both 1024-byte aligned); the barriers lie
//! after the last stage. Stage s of k-tile kt is kt % STAGES; the n-th use (n = kt / STAGES)
//! waits for parity n & 1 on `full` (consumers) and for parity (n & 1) ^ 1 on `empty` (the
//! producer: a fresh barrier counts its "previous" phase, parity 1, as complete, so the first
//! round does not wait). So the producer runs a whole ring ahead of the tensor cores.

use convrs_spec::split_k;
use convrs_spec::wgmma::{stage_bytes, ws_b_bytes, ws_smem_bytes, BLOCK_M, K_TILE, WS_A_BYTES, WS_THREADS};

use super::implicit_gemm::{chan, divmod, Operands, Tap};
use crate::prelude::mbarrier::{
    cluster_arrive, cluster_ctarank, cluster_wait, cp_async_mbar_arrive_noinc, fence_mbarrier_init, mapa_shared, mbar_arrive,
    mbar_arrive_cluster, mbar_arrive_expect_tx, mbar_init, mbar_wait, prefetch_tensormap, setmaxnreg_dec_56,
    setmaxnreg_inc_224, tma_load_3d, tma_load_3d_multicast, tma_load_im2col_4d,
};
use crate::prelude::matrix::{pack_16x2, shfl_idx, shfl_xor, store_global_f32x2, store_global_v4, store_global_v4_if};
use crate::prelude::wgmma::{commit_group, desc_sw128, fence_proxy_async_shared, Accumulators, DESC_K16};
use crate::prelude::*;

/// Bytes per shared row: 64 fp16 channels, one 128-byte swizzle row.
const ROW: u32 = 2 * K_TILE as u32;
/// Threads of a warpgroup.
const WG: u32 = 128;
/// Warps of the two consumer warpgroups.
const CONSUMER_WARPS: u32 = 2 * WG / 32;

/// Where a block's ring and barriers are (shared window addresses).
#[derive(Clone, Copy)]
struct Ring<const STAGES: usize> {
    /// The 1024-aligned first stage.
    smem: u32,
    /// Bytes per stage.
    stage: u32,
}

impl<const STAGES: usize> Ring<STAGES> {
    /// The stage's full barrier: its k-tile is in shared memory.
    #[inline(always)]
    fn full(self, s: u32) -> u32 {
        self.smem + STAGES as u32 * self.stage + 8 * s
    }

    /// The stage's empty barrier: the wgmmas that read it have retired.
    #[inline(always)]
    fn empty(self, s: u32) -> u32 {
        self.full(s) + 8 * STAGES as u32
    }

    /// The next (stage, phase) of the ring.
    #[inline(always)]
    fn next(s: u32, phase: u32) -> (u32, u32) {
        if s + 1 == STAGES as u32 { (0, phase ^ 1) } else { (s + 1, phase) }
    }
}

/// The output tiles one CTA computes, in order: one tile, or with `PERSISTENT` every
/// `stride`-th cluster tile from its own on (a static round-robin over the grid). A cluster
/// tile is `CLUSTER` consecutive M tiles of one N tile (N tiles fastest); the CTA of rank `rank`
/// takes the `rank`-th of them. Every CTA of a cluster walks the same cluster tiles, so their
/// rings stay in step.
#[derive(Clone, Copy)]
struct Tiles {
    next: u32,
    stride: u32,
    end: u32,
    /// N tiles of the GEMM, each `bn` columns.
    n_tiles: u32,
    bn: u32,
    rank: u32,
}

impl Tiles {
    /// The next tile's first (row, column) of the GEMM output.
    #[inline(always)]
    fn next<const CLUSTER: u32>(&mut self) -> Option<(u32, u32)> {
        if self.next >= self.end {
            return None;
        }
        // SAFETY: N >= 128 (n_tiles >= 1).
        let (cm, nt) = unsafe { divmod(self.next, self.n_tiles) };
        self.next += self.stride;
        Some(((cm * CLUSTER + self.rank) * BLOCK_M as u32, nt * self.bn))
    }
}

/// Where a split reduction's slices meet (step 8, `convrs_spec::split_k`).
struct Split {
    /// The workspace: the units' counters, then the partial sums.
    ws: *mut u32,
    /// This CTA's slice and the slice count.
    z: u32,
    splits: u32,
    /// Units (16-row strips of a tile) of the whole output.
    units: u32,
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
    unsafe fn meet<Acc: Accumulators>(&self, acc: &mut Acc, unit: u32, lane: u32) -> bool {
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

/// Steps 4 to 6's entries: [`conv`] with activations by `cp.async`.
///
/// # Safety
/// As [`conv`].
#[inline(always)]
pub unsafe fn conv_cp<O: Operands, Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const PERSISTENT: bool, const BF16: bool>(
    x: *const u16,
    w: *const u16,
    y: *mut f32,
    wmap: *const u8,
    sh: ConvShape,
) {
    // SAFETY: as the caller guarantees; without IM2COL the input map is not read.
    unsafe { conv::<O, Acc, STAGES, CLUSTER, PERSISTENT, BF16, false>(x, w, y, wmap, core::ptr::null(), sh) }
}

/// Step 7's entries: [`conv`] with activations by im2col TMA copies through `xmap`.
///
/// # Safety
/// As [`conv`].
#[inline(always)]
pub unsafe fn conv_im2col<O: Operands, Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const PERSISTENT: bool, const BF16: bool>(
    x: *const u16,
    w: *const u16,
    y: *mut f32,
    wmap: *const u8,
    xmap: *const u8,
    sh: ConvShape,
) {
    // SAFETY: as the caller guarantees.
    unsafe { conv::<O, Acc, STAGES, CLUSTER, PERSISTENT, BF16, true>(x, w, y, wmap, xmap, sh) }
}

/// The kernel; see the module docs. Block tile 128 x `Acc::N` x 64, `STAGES` k-tiles in the
/// ring, operands addressed by `O` (plain NHWC), clusters of `CLUSTER` CTAs sharing the filter
/// tile, a persistent grid if `PERSISTENT`, bf16 data if `BF16`, activations by im2col TMA
/// copies if `IM2COL`.
///
/// # Safety
/// `x`, `y` hold N*H*W*C and N*P*Q*K elements in `O`'s layouts, 16-byte aligned; `wmap` (and
/// with `IM2COL`, `xmap`) is the filter's (the input's) tensor map as the module docs describe;
/// C and K are multiples of 8 and `sh` describes them with every index in `i32`.
#[inline(always)]
unsafe fn conv<O: Operands, Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const PERSISTENT: bool, const BF16: bool, const IM2COL: bool>(
    x: *const u16,
    w: *const u16,
    y: *mut f32,
    wmap: *const u8,
    xmap: *const u8,
    sh: ConvShape,
) {
    const {
        assert!(!O::TILED);
        assert!(STAGES >= 2 && STAGES <= 8);
        // 64 and 32 only with IM2COL (step 7's narrow tiles for K <= 64 and K <= 32).
        assert!(Acc::N == 128 || Acc::N == 256 || (IM2COL && (Acc::N == 64 || Acc::N == 32)));
        assert!(CLUSTER == 1 || CLUSTER == 2);
    }
    let raw = dynamic_smem_u32();
    // 1024-byte aligned start of the ring: the swizzle pattern repeats every 1024 bytes and
    // the descriptors and the TMA assume it starts on that boundary.
    let smem = (raw + 1023) & !1023;
    if block_dim_x() != WS_THREADS as i32 || dynamic_smem_bytes() + raw < smem + (ws_smem_bytes(Acc::N, STAGES) as u32 - 1024) {
        trap();
    }
    let ring = Ring::<STAGES> { smem, stage: stage_bytes(Acc::N) as u32 };
    let tid = thread_x() as u32;
    if tid == 0 {
        unroll!(8: STAGES, s => {
            // SAFETY: 8-byte aligned slots after the stages (inside the launch's shared memory,
            // checked above), initialised once, before any use (the barrier below).
            unsafe {
                mbar_init(ring.full(s as u32), if IM2COL { 1 } else { WG + 1 });
                mbar_init(ring.empty(s as u32), empty_arrivals::<CLUSTER>());
            }
        });
        fence_mbarrier_init();
        // SAFETY: the contract's tensor maps.
        unsafe {
            prefetch_tensormap(wmap);
            if IM2COL {
                prefetch_tensormap(xmap);
            }
        }
    }
    if CLUSTER == 1 {
        sync_threads();
    } else {
        // Every barrier of the cluster is initialised before any CTA's copies or arrivals reach
        // it. SAFETY: every thread of the cluster, once, in uniform control flow.
        unsafe {
            cluster_arrive();
            cluster_wait();
        }
    }

    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    let gemm_n = sh.k as u32;
    // The CTAs of a cluster share the N tile and take consecutive M tiles (the last cluster's
    // may lie past M: it computes zeros and stores nothing, and still loads its share of B).
    let n_tiles = gemm_n.div_ceil(Acc::N as u32);
    let first = block_x() as u32 / CLUSTER;
    let tiles = if PERSISTENT {
        let end = gemm_m.div_ceil(BLOCK_M as u32 * CLUSTER) * n_tiles;
        Tiles { next: first, stride: grid_dim_x() as u32 / CLUSTER, end, n_tiles, bn: Acc::N as u32, rank: 0 }
    } else {
        Tiles { next: first, stride: 1, end: first + 1, n_tiles, bn: Acc::N as u32, rank: 0 }
    };
    let tiles = Tiles { rank: if CLUSTER > 1 { cluster_ctarank() } else { 0 }, ..tiles };
    let cchunks = (sh.c + K_TILE as i32 - 1) / K_TILE as i32;
    // Step 8 (split-K: step 7's entries on a grid of z > 1 slices): slice z reduces its share
    // of every tile's k-tiles, and the slices meet in the workspace `w` points to
    // (`convrs_spec::split_k`).
    let all = sh.r * sh.s * cchunks;
    let (kt0, ktiles, split) = if IM2COL && grid_dim_z() > 1 {
        let splits = grid_dim_z() as u32;
        let units = gemm_m.div_ceil(BLOCK_M as u32) * n_tiles * split_k::WARPS_PER_TILE as u32;
        // Not in clusters: their last M tiles lie past M, where the units are not counted.
        if CLUSTER > 1 || Acc::N > split_k::MAX_BN || splits > all as u32 || units > split_k::MAX_UNITS as u32 {
            trap();
        }
        let (first, end) = split_k::k_range(block_z() as u32, splits, all as u32);
        (first, (end - first) as i32, Some(Split { ws: w as *mut u32, z: block_z() as u32, splits, units }))
    } else {
        (0, all, None)
    };

    // The role is uniform per warpgroup, as setmaxnreg and wgmma require.
    if tid < WG {
        // SAFETY: the whole warpgroup; the caller's contract.
        unsafe {
            if IM2COL {
                produce_im2col::<O, STAGES, CLUSTER>(xmap, wmap, &sh, ring, tiles, kt0, ktiles, tid);
            } else {
                produce::<O, STAGES, CLUSTER>(x, wmap, &sh, ring, tiles, ktiles, tid);
            }
        }
        // An exited thread no longer counts at the cluster barrier below.
        return;
    }
    let cw = tid / WG - 1;
    // SAFETY: the whole warpgroup; 56 x 128 + 224 x 256 <= 65536.
    unsafe { setmaxnreg_inc_224() };
    let mut tiles = tiles;
    let (mut s, mut phase) = (0u32, 0u32);
    // Step 7 with 16-bit outputs defers each tile's stores into the next tile's first k-tiles.
    let defer = IM2COL && sh.y_bits == 16 && split.is_none();
    let mut pending = Pending { v: [[0; 4]; DEFERRED], m0: 0, n0: 0, live: false };
    while let Some((m0, n0)) = tiles.next::<CLUSTER>() {
        // SAFETY: the whole warpgroup, for every tile the producer fills; the stores as
        // `store_pending` requires (the previous tile's, this thread's part).
        let acc = unsafe {
            consume::<Acc, STAGES, CLUSTER, BF16, IM2COL>(ring, cw, ktiles, &mut s, &mut phase, |kt| {
                if defer {
                    store_pending::<O, Acc>(&sh, y, &pending, cw, tid, kt, kt + 1);
                }
            })
        };
        if let Some(split) = &split {
            let mut acc = acc;
            let warp = (tid % WG) / 32;
            let unit = ((m0 / BLOCK_M as u32) * n_tiles + n0 / Acc::N as u32) * split_k::WARPS_PER_TILE as u32 + cw * 4 + warp;
            // SAFETY: the whole warp, converged; this unit's region and counter, once per
            // launch by each slice (the grid's z slices walk the same tiles).
            if unsafe { split.meet(&mut acc, unit, tid % 32) } {
                // SAFETY: as below (each warp writes its own 16 rows; shuffles within the
                // warp); of the slices, only this warp writes them.
                unsafe { store_tile::<O, Acc, BF16>(&sh, y, &acc, m0, n0, cw, tid) };
            }
        } else if defer {
            // SAFETY: as above; the slices the k-tiles did not reach.
            unsafe { store_pending::<O, Acc>(&sh, y, &pending, cw, tid, (ktiles as u32).min(SLICES), SLICES) };
            // SAFETY: the whole warp together.
            let v = unsafe { pack_tile::<Acc, BF16>(&acc, tid % 4) };
            let first = Acc::N / 16 - deferred::<Acc>();
            unroll!(16: first, i => {
                // SAFETY: as `store_tile`; the stores not deferred, now.
                unsafe { store_one::<O, Acc>(&sh, y, m0, n0, cw, tid, i, v[i], true) };
            });
            pending = Pending { v: core::array::from_fn(|i| if i < deferred::<Acc>() { v[first + i] } else { [0; 4] }), m0, n0, live: true };
        } else {
            // SAFETY: the caller's contract; this CTA's tile.
            unsafe { store_tile::<O, Acc, BF16>(&sh, y, &acc, m0, n0, cw, tid) };
        }
    }
    // SAFETY: the last tile's stores, as above.
    unsafe { store_pending::<O, Acc>(&sh, y, &pending, cw, tid, 0, SLICES) };
    if CLUSTER > 1 {
        // This thread's last arrivals on the other CTAs' barriers are done: no CTA exits while
        // another may still arrive on its barriers. SAFETY: every consumer thread, once.
        unsafe {
            cluster_arrive();
            cluster_wait();
        }
    }
}

/// Epilogue: writes consumer warpgroup `cw`'s 64 rows of the tile at (`m0`, `n0`). Register
/// 4j+e' (e' < 2) is D[16*warp + lane/4][8j + 2*(lane%4) + e'], 4j+2+e' the same 8 rows further
/// (notes/hopper.md §1.4), warp and lane within the warpgroup. So the four lanes of a quad hold
/// one row's 8-column chunk j in 4- (fp32: 8-) byte pieces. For 16-bit outputs, storing those
/// directly writes each 32-byte sector in halves, which measured slower than writing twice the
/// bytes in fp32 (0.194 against 0.180 ms on the seed shape); instead the quad trades pieces by
/// shuffles so that each lane stores 16 contiguous bytes, a quad 64 of a row at once (0.161 ms).
///
/// # Safety
/// `y` and `sh` as [`conv`] requires; each (row, column) of the output is written by one
/// thread of one CTA. Every lane of the warp calls it together (shuffles).
#[inline(always)]
unsafe fn store_tile<O: Operands, Acc: Accumulators, const BF16: bool>(sh: &ConvShape, y: *mut f32, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32) {
    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    let gemm_n = sh.k as u32;
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let q = lane % 4;
    let row0 = m0 + cw * 64 + warp * 16 + lane / 4;
    if sh.y_bits == 16 {
        unroll!(4: 2, e => {
            let row = row0 + 8 * e as u32;
            // Chunks 4g..4g+4: lane q ends with chunk 4g+q whole.
            unroll!(8: Acc::N / 32, g => {
                let mut v = [0u32; 4];
                unroll!(4: 4, t => {
                    let j = 4 * g + t;
                    v[t] = pack_16x2::<BF16>(acc[4 * j + 2 * e], acc[4 * j + 2 * e + 1]);
                });
                // SAFETY: the whole warp, in uniform control flow.
                let v = unsafe { quad_transpose(v, q) };
                let col = n0 + 8 * (4 * g as u32 + q);
                if row < gemm_m && col < gemm_n {
                    // SAFETY: row < M, col..col+8 < K (K a multiple of 8), 16-byte aligned (so
                    // is K * 2 bytes); this thread's alone.
                    unsafe { store_global_v4((y as *mut u16).add(O::y_off(sh, row, col) as usize) as *mut u32, v) };
                }
            });
        });
    } else {
        // fp32: each lane's pair is a full 8 bytes, a quad's a whole 32-byte sector. Trading
        // pieces for 16-byte stores here measured 1.2-1.4x slower on the H100 (the 1x1 layers
        // most), so the pairs are stored as they are.
        unroll!(32: Acc::N / 8, j => {
            let col = n0 + 8 * j as u32 + 2 * q;
            if col < gemm_n {
                unroll!(4: 2, e => {
                    let row = row0 + 8 * e as u32;
                    if row < gemm_m {
                        // SAFETY: row < M, col + 1 < K (K and col's 8-column group multiples
                        // of 8); each (row, col) belongs to one thread of one block.
                        unsafe { store_global_f32x2(y.add(O::y_off(sh, row, col) as usize), acc[4 * j + 2 * e], acc[4 * j + 2 * e + 1]) };
                    }
                });
            }
        });
    }
}

/// Slices a deferred tile's stores are spread over: one after each of the next tile's first
/// SLICES k-tiles' wgmmas are issued, so the tensor cores keep working while the stores drain
/// (every CTA would otherwise write its tile at the same moment, a wave's worth of output
/// competing for memory while the tensor cores idle).
const SLICES: u32 = 4;

/// Stores a tile's epilogue defers, at most: the last 8 of a thread's Acc::N / 16 (half of a
/// 128x256 tile's, all of a 128x128 tile's). The registers they take (32 a thread) are what the
/// consumers have left beside the next tile's accumulators (64 spilled).
const DEFERRED: usize = 8;

/// Stores deferred with accumulators `Acc`: [`DEFERRED`], or all of a narrower tile's.
const fn deferred<Acc: Accumulators>() -> usize {
    if Acc::N / 16 < DEFERRED { Acc::N / 16 } else { DEFERRED }
}

/// One consumer thread's deferred stores of a finished tile in 16-bit outputs, packed and
/// traded across its quad into store order: `v[i]` (i < `deferred::<Acc>()`) is store
/// `Acc::N / 16 - deferred::<Acc>() + i` of [`store_one`].
struct Pending {
    v: [[u32; 4]; DEFERRED],
    m0: u32,
    n0: u32,
    live: bool,
}

/// Packs and quad-transposes the accumulators for [`store_pending`].
///
/// # Safety
/// Every lane of the warp calls it together (shuffles); `q` is the lane's index in its quad.
#[inline(always)]
unsafe fn pack_tile<Acc: Accumulators, const BF16: bool>(acc: &Acc, q: u32) -> [[u32; 4]; 16] {
    let mut out = [[0u32; 4]; 16];
    unroll!(4: 2, e => {
        unroll!(8: Acc::N / 32, g => {
            let mut v = [0u32; 4];
            unroll!(4: 4, t => {
                let j = 4 * g + t;
                v[t] = pack_16x2::<BF16>(acc[4 * j + 2 * e], acc[4 * j + 2 * e + 1]);
            });
            // SAFETY: as the caller guarantees.
            out[e * (Acc::N / 32) + g] = unsafe { quad_transpose(v, q) };
        });
    });
    out
}

/// Writes slices `from..to` (of [`SLICES`]) of a pending tile's deferred stores (none if the
/// tile is not live). Branch-free: it runs between the next tile's wgmmas in flight.
///
/// # Safety
/// As [`store_tile`]; each slice of each pending tile is written once.
#[inline(always)]
unsafe fn store_pending<O: Operands, Acc: Accumulators>(sh: &ConvShape, y: *mut f32, p: &Pending, cw: u32, tid: u32, from: u32, to: u32) {
    let d = deferred::<Acc>();
    let per = (d as u32).div_ceil(SLICES);
    unroll!(8: d, i => {
        let slice = i as u32 / per;
        let ok = p.live & (slice >= from) & (slice < to);
        // SAFETY: as the caller guarantees.
        unsafe { store_one::<O, Acc>(sh, y, p.m0, p.n0, cw, tid, Acc::N / 16 - d + i, p.v[i], ok) };
    });
}

/// Store `i` (< Acc::N / 16) of consumer thread `tid`'s share of the tile at (`m0`, `n0`) in
/// 16-bit outputs: the 16 bytes [`pack_tile`] left in slot `i`, row half e = i / (N/32) and
/// chunk group g = i % (N/32) of [`store_tile`]'s order, if `ok` and inside the output (one
/// predicated store, no branch).
///
/// # Safety
/// As [`store_tile`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_one<O: Operands, Acc: Accumulators>(sh: &ConvShape, y: *mut f32, m0: u32, n0: u32, cw: u32, tid: u32, i: usize, v: [u32; 4], ok: bool) {
    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    let gemm_n = sh.k as u32;
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let (e, g) = (i / (Acc::N / 32), i % (Acc::N / 32));
    let row = m0 + cw * 64 + warp * 16 + lane / 4 + 8 * e as u32;
    let col = n0 + 8 * (4 * g as u32 + lane % 4);
    let ok = ok & (row < gemm_m) & (col < gemm_n);
    // SAFETY: as in `store_tile` when ok: in bounds, 16-byte aligned, this thread's alone
    // (otherwise the address is only computed, wrapping).
    unsafe { store_global_v4_if((y as *mut u16).wrapping_add(O::y_off(sh, row, col) as usize) as *mut u32, v, ok) };
}

/// A 4 x 4 transpose across the lanes of a quad: lane `q` gives `v[t]` (piece q of chunk t)
/// and gets back piece p of chunk q in slot p. Two butterfly stages; in stage b (1, 2) a lane
/// sends the two slots whose bit b differs from its own lane bit and takes its partner's into
/// them.
///
/// # Safety
/// Every lane of the warp calls it together.
#[inline(always)]
unsafe fn quad_transpose(mut v: [u32; 4], q: u32) -> [u32; 4] {
    unroll!(4: 2, stage => {
        let b = 1u32 << stage;
        // The slots with bit b clear and with it set.
        let (c0, c1, s0, s1) = if b == 1 { (0, 2, 1, 3) } else { (0, 1, 2, 3) };
        let hi = q & b != 0;
        let (x0, x1) = if hi { (v[c0], v[c1]) } else { (v[s0], v[s1]) };
        // SAFETY: as the caller guarantees.
        let (r0, r1) = unsafe { (shfl_xor(x0, b), shfl_xor(x1, b)) };
        if hi {
            (v[c0], v[c1]) = (r0, r1);
        } else {
            (v[s0], v[s1]) = (r0, r1);
        }
    });
    v
}

/// Arrivals that free a stage: every consumer thread of the CTA, or in a cluster one lane of
/// every consumer warp of every CTA (each CTA's filter copy writes into all of them).
const fn empty_arrivals<const CLUSTER: u32>() -> u32 {
    if CLUSTER == 1 { 2 * WG } else { CONSUMER_WARPS * CLUSTER }
}

/// The producer warpgroup: for every tile of `tiles`, fills the ring's next stages with its
/// k-tiles, up to a whole ring ahead of the consumers (into the next tile while they run the
/// epilogue). The filter tile is `tiles.bn` rows, `ws_b_bytes(bn)` bytes; in a cluster each CTA
/// copies `bn / CLUSTER` of them (the TMA box) into every CTA of the cluster.
///
/// # Safety
/// All 128 threads of warpgroup 0 call it together, after the barriers' initialisation; the
/// pointers and shape as [`conv`] requires.
#[inline(always)]
unsafe fn produce<O: Operands, const STAGES: usize, const CLUSTER: u32>(
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
    const A_LOADS: usize = BLOCK_M * 4 / WG as usize;
    let row_step = WG / 4;
    let chunk = (tid % 4) as i32;
    let lrow = tid / 4;
    let ldst = lrow * ROW + (((chunk as u32) ^ (lrow & 7)) << 4);
    let (h, wd) = (sh.h as u32, sh.w as u32);
    let (mut s, mut phase) = (0u32, 0u32);
    let bn = tiles.bn;
    while let Some((m0, n0)) = tiles.next::<CLUSTER>() {
        let mut a_ih = [0i32; A_LOADS];
        let mut a_iw = [0i32; A_LOADS];
        let mut a_base = [0i32; A_LOADS];
        unroll!(8: A_LOADS, i => {
            let m = m0 + lrow + i as u32 * row_step;
            if m < gemm_m {
                // SAFETY: P*Q >= 1 and Q >= 1 (validated problems have non-empty outputs).
                let (n, p, q) = unsafe { O::pixel(sh, m) };
                a_ih[i] = p as i32 * sh.stride_h - sh.pad_h;
                a_iw[i] = q as i32 * sh.stride_w - sh.pad_w;
                // The window origin, maybe in the padding (wrapping; only summed with in-image taps).
                a_base[i] = O::x_origin(sh, n as i32, a_ih[i], a_iw[i]).wrapping_add(chan(chunk * 8, O::x_chan(sh)));
            } else {
                // A row past M: an origin so far above the image that no tap reaches it.
                a_ih[i] = i32::MIN;
            }
        });
        let mut tap = Tap { c0: 0, s: 0, rdh: 0, sdw: 0, x_off: 0, w_off: 0 };
        // The filter map's middle coordinate, r * S + s.
        let mut rs = 0i32;
        let mut kt = 0;
        while kt < ktiles {
            // SAFETY: an initialised barrier; the phase waited for is the current or the previous
            // one (the consumers released every earlier use of the stage before this one's). In a
            // cluster the arrivals come from every CTA, whose stage this CTA's copy overwrites too.
            unsafe { mbar_wait(ring.empty(s), phase ^ 1) };
            let stage = ring.smem + s * ring.stage;
            let full = ring.full(s);
            if tid == 0 {
                // SAFETY: the stage is free (empty waited); the filter tile's bytes are announced
                // first on the same phase.
                unsafe {
                    mbar_arrive_expect_tx(full, ws_b_bytes(bn as usize) as u32);
                    load_filter_tile::<CLUSTER>(stage, wmap, tap.c0, rs, n0, bn, tiles.rank, full);
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
            (s, phase) = Ring::<STAGES>::next(s, phase);
            kt += 1;
        }
    }
    // Leave no copy of this thread in flight when it exits.
    cp_async_wait_all();
}

/// Issues the TMA copy of a k-tile's filter tile (rows `n0..n0 + bn` of the map's tap `rs`,
/// channels `c0..c0 + 64`) into the B tile of `stage`, completing on `full`. In a cluster this
/// CTA (of rank `rank`) copies its `bn / CLUSTER` rows into every CTA of the cluster.
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
unsafe fn load_filter_tile<const CLUSTER: u32>(stage: u32, wmap: *const u8, c0: i32, rs: i32, n0: u32, bn: u32, rank: u32, full: u32) {
    let b = stage + BLOCK_M as u32 * ROW;
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

/// Step 7's producer: [`produce`] with one thread issuing both copies of each k-tile, the
/// activations as one im2col TMA copy of the tile's 128 rows (their windows' taps in the
/// padding and rows past the last image arrive as zeros). The full barrier's one arrival is the
/// byte announcement. Each tile's reduction is its `ktiles` k-tiles from k-tile `kt0` on (a
/// split's share in step 8).
///
/// # Safety
/// As [`produce`], with `xmap` the input's im2col tensor map (module docs).
#[inline(always)]
unsafe fn produce_im2col<O: Operands, const STAGES: usize, const CLUSTER: u32>(
    xmap: *const u8,
    wmap: *const u8,
    sh: &ConvShape,
    ring: Ring<STAGES>,
    mut tiles: Tiles,
    kt0: u32,
    ktiles: i32,
    tid: u32,
) {
    // SAFETY: the whole warpgroup, as in `produce`.
    unsafe { setmaxnreg_dec_56() };
    if tid != 0 {
        return;
    }
    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    // Every tile's reduction starts at the same k-tile: its tap and channel, found once.
    // SAFETY: C >= 1 and S >= 1 (validated problems).
    let (rs0, cc) = unsafe { divmod(kt0, (sh.c as u32).div_ceil(K_TILE as u32)) };
    // SAFETY: S >= 1.
    let start = unsafe { Tap::at::<O>(sh, rs0, (cc * K_TILE as u32) as i32) };
    let (mut s, mut phase) = (0u32, 0u32);
    let bn = tiles.bn;
    while let Some((m0, n0)) = tiles.next::<CLUSTER>() {
        // The window origin of the tile's first row; a cluster's tile wholly past M (computed,
        // never stored) reads the first rows instead.
        // SAFETY: P*Q >= 1 and Q >= 1 (validated problems have non-empty outputs).
        let (n, p, q) = unsafe { O::pixel(sh, if m0 < gemm_m { m0 } else { 0 }) };
        let ih = p as i32 * sh.stride_h - sh.pad_h;
        let iw = q as i32 * sh.stride_w - sh.pad_w;
        let mut tap = start;
        let mut rs = rs0 as i32;
        let mut kt = 0;
        while kt < ktiles {
            // SAFETY: as in `produce`.
            unsafe { mbar_wait(ring.empty(s), phase ^ 1) };
            let stage = ring.smem + s * ring.stage;
            let full = ring.full(s);
            // SAFETY: the stage is free; its A tile (1024-aligned, 128 rows of 128 bytes) and B
            // tile receive exactly the announced bytes, as in `produce`; tap offsets fit u16
            // (the host's map requires them within the bounding box's range).
            unsafe {
                mbar_arrive_expect_tx(full, (WS_A_BYTES + ws_b_bytes(bn as usize)) as u32);
                tma_load_im2col_4d(stage, xmap, tap.c0, iw, ih, n as i32, tap.sdw as u16, tap.rdh as u16, full);
                load_filter_tile::<CLUSTER>(stage, wmap, tap.c0, rs, n0, bn, tiles.rank, full);
            }
            tap.advance::<O>(sh, K_TILE as i32);
            if tap.c0 == 0 {
                rs += 1;
            }
            (s, phase) = Ring::<STAGES>::next(s, phase);
            kt += 1;
        }
    }
}

/// A consumer warpgroup (`cw` 0 or 1: block-tile rows 64cw..) on one tile: runs every k-tile's
/// wgmmas as soon as its stage (from `s`, `phase`, which it advances) is full and hands each
/// stage back once they retired, the last one too; calls `under(kt)` after issuing each of the
/// first [`SLICES`] k-tiles' wgmmas (work that overlaps them). Returns the accumulators with
/// every wgmma retired.
///
/// # Safety
/// All 128 threads of warpgroup cw + 1 call it together, after the barriers' initialisation,
/// once for each tile the producer fills.
#[inline(always)]
unsafe fn consume<Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const BF16: bool, const IM2COL: bool>(
    ring: Ring<STAGES>,
    cw: u32,
    ktiles: i32,
    s: &mut u32,
    phase: &mut u32,
    mut under: impl FnMut(u32),
) -> Acc {
    let a_desc = desc_sw128(ring.smem + cw * 64 * ROW);
    let b_desc = desc_sw128(ring.smem + BLOCK_M as u32 * ROW);
    let mut acc = Acc::ZERO;
    let mut prev = 0u32;
    let mut kt = 0;
    while kt < ktiles {
        // SAFETY: an initialised barrier; this is the current phase or the one just completed
        // (the producer cannot refill the stage before this warpgroup's release).
        unsafe { mbar_wait(ring.full(*s), *phase) };
        // The A tile was written by cp.async (generic proxy) and made visible to this thread by
        // the barrier; wgmma reads it through the async proxy. (TMA writes through the async
        // proxy already.)
        if !IM2COL {
            fence_proxy_async_shared();
        }
        // Descriptor start fields count 16-byte units.
        let at = ((*s * ring.stage) >> 4) as u64;
        // SAFETY (the blocks below): uniform control flow (every thread of the warpgroup runs
        // every k-tile); the descriptors are the same in the whole warpgroup and describe stage
        // s, full and fenced, which the producer leaves alone until this warpgroup releases it
        // after the wgmmas retire; the fence orders the accumulator accesses before.
        unsafe { acc.fence() };
        unroll!(4: 4, ks => {
            let step = at + ks as u64 * DESC_K16;
            // Scale-d 0 on the very first step: the accumulators start from A * B.
            let scale = if ks == 0 { (kt != 0) as u32 } else { 1 };
            unsafe { acc.mma::<BF16>(a_desc + step, b_desc + step, scale) };
        });
        unsafe { commit_group() };
        // Every k-tile, branch-free (`under` predicates its own work on kt).
        under(kt as u32);
        unsafe { acc.wait_1() };
        if kt > 0 {
            // k-tile kt-1's wgmmas (this warp's) retired. SAFETY: as `release` requires.
            unsafe { release::<STAGES, CLUSTER>(ring, prev) };
        }
        prev = *s;
        (*s, *phase) = Ring::<STAGES>::next(*s, *phase);
        kt += 1;
    }
    // SAFETY: uniform, as above.
    unsafe { acc.wait_0() };
    // SAFETY: the last k-tile's wgmmas retired with the others.
    unsafe { release::<STAGES, CLUSTER>(ring, prev) };
    acc
}

/// This warp's share of the arrivals (`empty_arrivals`) that free stage `s` for the producers.
///
/// # Safety
/// Every thread of the warp calls it together, once per use of the stage, after the wgmmas that
/// read it retired. In a cluster, every CTA runs until every CTA's consumers passed the cluster
/// barrier after their last release.
#[inline(always)]
unsafe fn release<const STAGES: usize, const CLUSTER: u32>(ring: Ring<STAGES>, s: u32) {
    // SAFETY: as the caller guarantees; the producers wait for this phase before refilling.
    unsafe {
        if CLUSTER == 1 {
            mbar_arrive(ring.empty(s));
        } else if thread_x() % 32 == 0 {
            // The wgmma waits are warp-synchronous: lane 0 speaks for the warp.
            unroll!(4: CLUSTER as usize, r => { mbar_arrive_cluster(mapa_shared(ring.empty(s), r as u32)) });
        }
    }
}

/// Declares the entries of a tile list (`convrs_spec::wgmma_ws_tiles!`, `wgmma_mc_tiles!`) on
/// operands `$ops` for clusters of `$cluster` CTAs: the fp16 and the bf16 twin of each tile,
/// with the filter tensor map after `y`.
macro_rules! entries {
    ($ops:ident $cluster:tt $persistent:literal $(($fp16:ident, $bf16:ident, $bn:literal, $stages:literal))*) => {
        $(
            $crate::conv_kernel!(
                fn $fp16(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8) => $crate::tensor_core::wgmma_ws::conv_cp::<$ops, [f32; $bn / 2], $stages, $cluster, $persistent, false>
            );
            $crate::conv_kernel!(
                fn $bf16(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8) => $crate::tensor_core::wgmma_ws::conv_cp::<$ops, [f32; $bn / 2], $stages, $cluster, $persistent, true>
            );
        )*
    };
}

/// Step 7's entries (persistent; the input's im2col map after the filter's).
macro_rules! im2col_entries {
    ($ops:ident $cluster:tt $(($fp16:ident, $bf16:ident, $bn:literal, $stages:literal))*) => {
        $(
            $crate::conv_kernel!(
                fn $fp16(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::wgmma_ws::conv_im2col::<$ops, [f32; $bn / 2], $stages, $cluster, true, false>
            );
            $crate::conv_kernel!(
                fn $bf16(x: *const u16, w: *const u16, y: *mut f32, wmap: *const u8, xmap: *const u8) => $crate::tensor_core::wgmma_ws::conv_im2col::<$ops, [f32; $bn / 2], $stages, $cluster, true, true>
            );
        )*
    };
}

use super::nhwc::Nhwc;
convrs_spec::wgmma_ws_tiles!(entries, Nhwc, 1, false);
convrs_spec::wgmma_mc_tiles!(entries, Nhwc, { convrs_spec::wgmma::MC_CLUSTER as u32 }, false);
convrs_spec::wgmma_pws_tiles!(entries, Nhwc, 1, true);
convrs_spec::wgmma_pmc_tiles!(entries, Nhwc, { convrs_spec::wgmma::MC_CLUSTER as u32 }, true);
convrs_spec::wgmma_tma_tiles!(im2col_entries, Nhwc, 1);
convrs_spec::wgmma_tmc_tiles!(im2col_entries, Nhwc, { convrs_spec::wgmma::MC_CLUSTER as u32 });
