//! The warp-specialized kernel (steps 4 to 8): one function whose const parameters are a
//! configuration's policy (`convrs_spec::hopper::Policy`) and tile. This file sets the block up
//! and hands each warpgroup its role; the roles are in [`super::producer`], [`super::consumer`]
//! and [`super::epilogue`], the order of the tiles in [`super::scheduler`], the split-K meeting
//! in [`super::split_k`], the ring in `prelude::pipeline`.
//!
//! # Contract
//!
//! Step 3's problem and arguments (NHWC x, KRSC w, NHWK y; C and K multiples of 8; the 17
//! trailing [`ConvShape`] `i32`s, `y_bits` 32 or 16), then after `y`:
//! - `wmap`, a 128-byte CUDA tensor map of the filter in global memory (64-byte aligned,
//!   written before the launch and unchanged during it), encoded by `cuTensorMapEncodeTiled` as
//!   a 3-D tensor {C, R*S, K} (innermost first; byte strides C*2 and R*S*C*2) of the input's
//!   16-bit type, box {64, 1, BN / CLUSTER}, element strides 1, no interleave, 128B swizzle,
//!   zero fill for out-of-range elements. `w` itself is not read (the map holds its address).
//! - With `Producer::WsTma`, `xmap`, the input's im2col tensor map, encoded by
//!   `cuTensorMapEncodeIm2col` as a 4-D tensor {C, W, H, N} (byte strides C*2, W*C*2, H*W*C*2),
//!   bounding box corners {-pad_w, -pad_h} and {pad_w - (S-1)*dil_w, pad_h - (R-1)*dil_h},
//!   element strides {1, stride_w, stride_h, 1}, 64 channels per pixel, BM pixels per column (the
//!   block tile's rows: 128, or 64 for step 12's ping-pong),
//!   128B swizzle, zero fill; so the copy for output row m0 and tap (r, s) brings rows m0.. of
//!   the im2col matrix, exactly the A tile step 3's addressing builds.
//! - fp32 entries (`Math::Tf32`, `Math::Tf32x3`): both maps of FLOAT32 tensors, boxes of 32
//!   channels (the same 128 bytes a row); under 3xTF32 the filter map is over the split filter,
//!   {C, R*S, 2K}: rows 0..K the TF32 high parts, K..2K the remainders.
//! - With `Producer::Planes` (a 1x1, stride-1, unpadded convolution on NCHW x, KCRS w, NCHW y;
//!   H*W and C multiples of 8), the GEMM is transposed: rows are output channels, K rounded
//!   up to whole tiles, columns every image's pixels in turn, H*W rounded up to whole 64-pixel
//!   copies an image (`convrs_spec::hopper::plane_gemm`). `wmap` is the filter's map as above with boxes of
//!   BM rows (the A tile: 128, or 64 under step 15's ping-pong); `xmap` the input's tiled map, a 3-D tensor {H*W, C, N} (byte strides
//!   H*W*2 and C*H*W*2), box {64, 64, 1}, 128B swizzle, zero fill ([`super::planes`]).
//! - With `Producer::PlaneRows` (NCHW x, KRSC w, NCHW y at column stride 1; W, Q and C
//!   multiples of 8), rows (image, output channel) pairs, K rounded up to whole tiles an image
//!   (`convrs_spec::hopper::plane_rows`), and columns an image's output rows of
//!   `convrs_spec::hopper::plane_row_pitch` columns; `wmap` as for `Producer::Planes`, `xmap`
//!   the input's tiled map, a 4-D tensor {W, H, C, N} (byte strides W*2, H*W*2, C*H*W*2), box
//!   {72, 1, 64, 1}, no swizzle, zero fill ([`super::plane_rows`]). Each stage is
//!   `convrs_spec::hopper::ring_stage_bytes`, and a third barrier array follows the
//!   `empty` one.
//! - With `Producer::PlanePixels` (the same layers on fp32 data), the GEMM of `Producer::WsTma`
//!   on NCHW data: rows are (image, pixel) pairs, H*W rounded up to whole 32-pixel copies an image
//!   (`convrs_spec::hopper::plane_pixel_rows`), columns output channels. `wmap` is the fp32
//!   filter's map as above (boxes of BN rows: the B tile); `xmap` the input's tiled map
//!   {H*W, C, N} (byte strides H*W*4 and C*H*W*4), box {32, 32, 1}, 128B swizzle, zero fill.
//!   H*W and C multiples of 4. No fused epilogue ([`super::planes`]).
//! - Grouped problems (`ConvShape::groups` G > 1; im2col TMA entries only): w is K x R x S x
//!   C/G (the filter map's C is C/G), K/G is a multiple of the tile width, so each tile's
//!   output channels lie in one group g, and its reduction runs over the C/G channels from
//!   g * C/G on ([`super::producer`]). C/G need not be a multiple of the k-tile: the last copy
//!   of a group brings the next group's channels (or zeros past C), which meet the filter map's
//!   zero fill.
//! - With `Schedule::SplitK`, `ws`, the workspace (`convrs_spec::split_k::workspace_bytes` for
//!   the launch, its counters zero), where the grid's z slices meet.
//!
//! Launch: 384 threads; a 1-D grid of `ceil(M / BM) * ceil(K / BN)` blocks (N tile fastest; in
//! clusters the M tiles rounded up to whole clusters), or with a persistent schedule fewer (a
//! multiple of the cluster size), times the split count in z; `Config::smem_bytes` of dynamic
//! shared memory, or `Config::smem_bytes_with_residual` where the epilogue's arguments pass a
//! residual map (`Config::takes_residual_map`; [`super::residual`]).
//!
//! # Roles
//!
//! - Warpgroup 0, the producer (`setmaxnreg.dec` to 56): fills the ring ([`super::producer`]),
//!   and with the fused residual by TMA copies each tile's residual ([`super::residual`]).
//! - Warpgroups 1 and 2, the consumers (`setmaxnreg.inc` to 224): rows 64(g-1).. of the block
//!   tile. For each k-tile: wait for `full`, (with `cp.async` activations) the proxy fence, 4 x
//!   m64nBNk16 wgmma, commit, `wait_group 1` (k-tile kt-1's wgmmas retired), then release kt-1's
//!   stage ([`super::consumer`]). After the last k-tile of a tile, `wait_group 0`, release the
//!   last stage, and the epilogue ([`super::epilogue`]), or under split-K the meeting first. A
//!   fused epilogue that does not run in registers keeps the last stage until it is done: it
//!   stages the accumulators in the stage's A tile.
//! - Under `Schedule::PingPong` (steps 10, 12, 15 and 18), each consumer warpgroup takes every other
//!   tile whole, as two m64 blocks (BM = 128) or one (BM = 64), and the mainloops take turns
//!   ([`ping_pong`]).

use convrs_spec::hopper::{fuses_epilogue, nchw_store_runs, plane_copies_direct, plane_rows, ring_stage_bytes, thread_accumulators, Math as Spec, BARRIER_BYTES, BLOCK_M, NCHW_STAGING_BYTES, PINGPONG_MAX_ACC, PLANE_ROW_SHIFTERS, WARPGROUP, WGMMA_M};
use convrs_spec::split_k;
use convrs_spec::EpilogueArgs;

use super::consumer::consume;
use super::math::Math;
use super::epilogue::{finish_in_registers, prefetch_residual, prefetch_residual_nchw, residual_ahead, store_deferring, store_fused, store_pending, store_tile, Ahead, Pending, SLICES};
use super::nchw_out::NhwcToNchw;
use super::plane_rows::{init_landed, produce_plane_rows};
use super::planes::{produce_plane_pixels, produce_planes};
use super::producer::{group_channels, produce_cp_async, produce_tma};
use super::nchw_residual;
use super::residual::ResidualTiles;
use super::scheduler::Tiles;
use super::split_k::Split;
use crate::prelude::mbarrier::{cluster_arrive, cluster_wait, fence_mbarrier_init, named_arrive, named_sync, prefetch_tensormap, setmaxnreg_inc_224};
use crate::prelude::pipeline::{empty_arrivals, Position, Ring};
use crate::prelude::wgmma::{fence_proxy_async_shared, Accumulators, TwoBlocks};
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::Operands;

/// Threads of a warpgroup.
const WG: u32 = WARPGROUP as u32;

/// The ping-pong schedule's named barriers: `ORDER + cw` is where consumer warpgroup `cw` waits
/// for the other's mainloop (0 is the block's `__syncthreads`).
const ORDER: u32 = 1;

/// `Producer::WsCpAsync` entries: [`conv`] with activations by `cp.async`.
///
/// # Safety
/// As [`conv`].
#[inline(always)]
pub unsafe fn conv_cp_async<O: Operands, Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const PERSISTENT: bool, M: Math>(
    x: *const u16,
    w: *const u16,
    y: *mut f32,
    wmap: *const u8,
    sh: ConvShape,
) {
    // SAFETY: as the caller guarantees; without IM2COL the input map is not read, without SPLIT
    // the workspace.
    unsafe { conv::<O, Acc, STAGES, CLUSTER, PERSISTENT, false, M, false, false, BLOCK_M>(x, w, y, wmap, core::ptr::null(), core::ptr::null_mut(), sh) }
}

/// `Producer::WsTma` entries: [`conv`] with activations by im2col TMA copies through `xmap`,
/// tiles `BM` rows high.
///
/// # Safety
/// As [`conv`].
#[inline(always)]
pub unsafe fn conv_tma<O: Operands, Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const PERSISTENT: bool, const PINGPONG: bool, M: Math, const BM: usize>(
    x: *const u16,
    w: *const u16,
    y: *mut f32,
    wmap: *const u8,
    xmap: *const u8,
    sh: ConvShape,
) {
    // SAFETY: as the caller guarantees; without SPLIT the workspace is not read.
    unsafe { conv::<O, Acc, STAGES, CLUSTER, PERSISTENT, PINGPONG, M, true, false, BM>(x, w, y, wmap, xmap, core::ptr::null_mut(), sh) }
}

/// The fp32 entries (`Math::Tf32`, `Math::Tf32x3`; persistent, no cluster): [`conv_tma`] on
/// fp32 data, which only the tensor maps address.
///
/// # Safety
/// As [`conv`].
#[inline(always)]
pub unsafe fn conv_tma_f32<O: Operands, Acc: Accumulators, const STAGES: usize, const PINGPONG: bool, M: Math, const BM: usize>(
    x: *const f32,
    w: *const f32,
    y: *mut f32,
    wmap: *const u8,
    xmap: *const u8,
    sh: ConvShape,
) {
    // SAFETY: as the caller guarantees; x and w are not read.
    unsafe { conv::<O, Acc, STAGES, 1, true, PINGPONG, M, true, false, BM>(x as *const u16, w as *const u16, y, wmap, xmap, core::ptr::null_mut(), sh) }
}

/// The fp32 `Schedule::SplitK` entries: [`conv_split_k`] on fp32 data, which only the tensor
/// maps address.
///
/// # Safety
/// As [`conv`].
#[inline(always)]
pub unsafe fn conv_split_k_f32<O: Operands, Acc: Accumulators, const STAGES: usize, M: Math>(
    x: *const f32,
    w: *const f32,
    y: *mut f32,
    wmap: *const u8,
    xmap: *const u8,
    ws: *mut u32,
    sh: ConvShape,
) {
    // SAFETY: as the caller guarantees; x and w are not read.
    unsafe { conv::<O, Acc, STAGES, 1, true, false, M, true, true, BLOCK_M>(x as *const u16, w as *const u16, y, wmap, xmap, ws, sh) }
}

/// `Schedule::SplitK` entries (always `Producer::WsTma`, persistent, no cluster): [`conv`] with
/// the grid's z slices meeting in the workspace `ws`.
///
/// # Safety
/// As [`conv`].
#[inline(always)]
pub unsafe fn conv_split_k<O: Operands, Acc: Accumulators, const STAGES: usize, M: Math>(
    x: *const u16,
    w: *const u16,
    y: *mut f32,
    wmap: *const u8,
    xmap: *const u8,
    ws: *mut u32,
    sh: ConvShape,
) {
    // SAFETY: as the caller guarantees.
    unsafe { conv::<O, Acc, STAGES, 1, true, false, M, true, true, BLOCK_M>(x, w, y, wmap, xmap, ws, sh) }
}

/// The kernel; see the module docs. Block tile `BM` x `Acc::N` x one 128-byte row of channels,
/// `STAGES` k-tiles in the ring, operands addressed by `O` (plain NHWC), clusters of `CLUSTER`
/// CTAs sharing the filter tile, a persistent grid if `PERSISTENT`, the data and arithmetic of
/// `M`, activations by im2col TMA
/// copies if `IM2COL`, the reduction split over the grid's z slices if `SPLIT`.
///
/// # Safety
/// `x`, `y` hold N*H*W*C and N*P*Q*K elements in `O`'s layouts, 16-byte aligned; `wmap` (and
/// with `IM2COL`, `xmap`) is the filter's (the input's) tensor map as the module docs describe;
/// with `SPLIT`, `ws` is the launch's workspace; C and K are multiples of 8 and `sh` describes
/// them with every index in `i32`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn conv<O: Operands, Acc: Accumulators, const STAGES: usize, const CLUSTER: u32, const PERSISTENT: bool, const PINGPONG: bool, M: Math, const IM2COL: bool, const SPLIT: bool, const BM: usize>(
    x: *const u16,
    _w: *const u16,
    y: *mut f32,
    wmap: *const u8,
    xmap: *const u8,
    ws: *mut u32,
    sh: ConvShape,
) {
    const {
        assert!(!O::TILED);
        assert!(STAGES >= 2 && STAGES <= 8);
        // 64 and 32 only with IM2COL (the cp.async producer copies 4 rows a thread).
        assert!(Acc::N == 128 || Acc::N == 256 || (IM2COL && (Acc::N == 64 || Acc::N == 32)));
        assert!(CLUSTER == 1 || CLUSTER == 2);
        // Split-K: persistent im2col tiles without clusters (the last cluster's M tiles would lie
        // past M, where no units are counted), no wider than the split path's registers allow.
        assert!(!SPLIT || (IM2COL && PERSISTENT && CLUSTER == 1 && Acc::N <= split_k::MAX_BN));
        // fp32 data comes by TMA only (the cp.async producer copies 16-bit chunks); 3xTF32's
        // two filter copies are not multicast.
        assert!(matches!(M::SPEC, Spec::Half) || IM2COL);
        assert!(!matches!(M::SPEC, Spec::Tf32x3) || CLUSTER == 1);
        // NCHW planes: by TMA, unclustered, unsplit, 16-bit, whole plane copies a tile; the
        // pixel-row planes fp32, persistent, not ping-pong, 128-row tiles.
        assert!(!O::PLANE_ROWS || O::PLANES);
        assert!(!O::PLANES || (IM2COL && CLUSTER == 1 && !SPLIT && matches!(M::SPEC, Spec::Half) && Acc::N % 64 == 0));
        assert!(!O::PIXEL_PLANES || (IM2COL && CLUSTER == 1 && PERSISTENT && !SPLIT && !PINGPONG && !matches!(M::SPEC, Spec::Half) && BM == BLOCK_M));
        // NCHW output from NHWC pixel rows: im2col TMA, unclustered, unsplit, 16-bit data.
        assert!(!O::Y_NCHW || (IM2COL && CLUSTER == 1 && !SPLIT && matches!(M::SPEC, Spec::Half) && !O::PLANES && !O::PIXEL_PLANES));
        // Ping-pong: persistent im2col tiles (or NCHW planes) without
        // clusters, each warpgroup's whole tile in its registers
        // (`convrs_spec::hopper::Schedule::PingPong`).
        assert!(!PINGPONG || (IM2COL && PERSISTENT && CLUSTER == 1 && !SPLIT && !O::PLANE_ROWS && !matches!(M::SPEC, Spec::Tf32x3) && BM * Acc::N / WG as usize <= PINGPONG_MAX_ACC));
        // 64-row tiles (step 12) are one warpgroup's m64 block: ping-pong only.
        assert!(BM == BLOCK_M || (BM == WGMMA_M && PINGPONG));
    }
    let raw = dynamic_smem_u32();
    // 1024-byte aligned start of the ring: the swizzle pattern repeats every 1024 bytes and
    // the descriptors and the TMA assume it starts on that boundary.
    let smem = (raw + 1023) & !1023;
    let stage = ring_stage_bytes(O::PLANE_ROWS, BM, Acc::N, M::SPEC);
    // NCHW output stages its stores in the last bytes (`epilogue::store_nchw`).
    let staging = if O::Y_NCHW { NCHW_STAGING_BYTES } else { 0 };
    // The residual by TMA, where the launch passes its map: its region after the ring.
    let ring_end = smem + (STAGES * stage) as u32;
    let residual = ResidualTiles::<Acc, BM>::of::<O, M>(&sh, IM2COL && PERSISTENT && CLUSTER == 1 && !SPLIT, PINGPONG, ring_end, STAGES * stage);
    let after_ring = residual.map_or((BARRIER_BYTES + staging) as u32, |r| r.region_bytes());
    // NCHW output's residual slots, where the launch gives their room (`nchw_residual`); each
    // path takes them only for an epilogue in the staged store.
    let slots = if O::Y_NCHW && !SPLIT && matches!(M::SPEC, Spec::Half) { nchw_residual::slots_of(&NhwcToNchw::rows(&sh), &sh.ep, PINGPONG, BM, Acc::N, ring_end, raw) } else { 0 };
    if block_dim_x() != 3 * WG as i32 || dynamic_smem_bytes() + raw < ring_end + after_ring {
        trap();
    }
    let ring = Ring::<STAGES> { smem, stage: stage as u32 };
    let tid = thread_x() as u32;
    // NCHW 1x1 planes whose B tiles the producer copies by `cp.async` (generic proxy).
    let direct = O::PLANES && !O::PLANE_ROWS && plane_copies_direct((sh.h * sh.w) as usize);
    if tid == 0 {
        // SAFETY: the slots after the stages are inside the launch's shared memory (checked
        // above), initialised once, before any use (the barrier below).
        // Each stage is read by both consumer warpgroups, or under ping-pong by one.
        // Under NCHW rows the shifting warps arrive on `full` too, after writing the B tile.
        // On planes TMA cannot step, the producer's 128 threads copy the B tiles (`cp.async`).
        let full = if O::PLANE_ROWS { 1 + PLANE_ROW_SHIFTERS as u32 } else if IM2COL && !direct { 1 } else { WG + 1 };
        unsafe { ring.init(full, empty_arrivals::<CLUSTER>(if PINGPONG { WG } else { 2 * WG })) };
        if O::PLANE_ROWS {
            // SAFETY: as above; the third barrier array fits (`convrs_spec::hopper` checks 3 x 8 x STAGES <= BARRIER_BYTES).
            unsafe { init_landed(ring) };
        }
        if let Some(r) = &residual {
            // SAFETY: as above (the region's size checked above); its map is the launch's.
            unsafe { r.init(&sh) };
        }
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
    // The entries are `set_up_first`: everything above touches shared memory and prefetches
    // host-written tensor maps, so it runs while the previous grid in the stream finishes;
    // every global access below (copies, the residual, the workspace, stores) comes after.
    entry_wait();

    let (gemm_m, gemm_n) = O::gemm_mn(&sh);
    let tiles = Tiles::of::<CLUSTER, PERSISTENT>(gemm_m, gemm_n, BM as u32, Acc::N as u32);
    // Under NCHW planes (`Planes<BM>`, the entries pair them) the M tiles of one column tile
    // run side by side, sharing its activations; under NCHW rows also, image by image, each
    // image `plane_rows(K, BM)` rows.
    let tiles = if O::PLANES { tiles.by_image(plane_rows(sh.k as usize, BM) as u32 / BM as u32) } else { tiles };
    let n_tiles = tiles.n_tiles;
    let kc = M::SPEC.k_tile() as i32;
    // A grouped problem reduces each tile over its group's C / G channels (the producer's
    // `group_channels`); dense ones over all C.
    // SAFETY: G >= 1 (validated problems).
    let cchunks = (unsafe { group_channels(&sh) } + kc - 1) / kc;
    // Split-K: slice z reduces its share of every tile's k-tiles, and the slices meet in the
    // workspace (`convrs_spec::split_k`).
    let all = sh.r * sh.s * cchunks;
    let (kt0, ktiles, split) = if SPLIT {
        let splits = grid_dim_z() as u32;
        let units = gemm_m.div_ceil(BLOCK_M as u32) * n_tiles * split_k::WARPS_PER_TILE as u32;
        if splits > all as u32 || units > split_k::MAX_UNITS as u32 {
            trap();
        }
        let (first, end) = split_k::k_range(block_z() as u32, splits, all as u32);
        (first, (end - first) as i32, Some(Split { ws, z: block_z() as u32, splits, units }))
    } else {
        (0, all, None)
    };

    // The role is uniform per warpgroup, as setmaxnreg and wgmma require.
    if tid < WG {
        // SAFETY: the whole warpgroup; the caller's contract.
        unsafe {
            if O::PLANE_ROWS {
                produce_plane_rows::<STAGES>(xmap, wmap, &sh, ring, tiles, tid);
            } else if O::PLANES {
                produce_planes::<STAGES, BM>(x, xmap, wmap, &sh, ring, tiles, ktiles, tid);
            } else if O::PIXEL_PLANES {
                produce_plane_pixels::<STAGES>(M::SPEC, xmap, wmap, &sh, ring, tiles, ktiles, tid);
            } else if IM2COL {
                produce_tma::<O, Acc, STAGES, CLUSTER, BM>(M::SPEC, xmap, wmap, &sh, ring, tiles, kt0, ktiles, residual, tid);
            } else {
                produce_cp_async::<O, STAGES, CLUSTER>(x, wmap, &sh, ring, tiles, ktiles, tid);
            }
        }
        if tid == 0 {
            // Every copy of this block is issued: the next grid may be scheduled.
            launch_dependents();
        }
        // An exited thread no longer counts at the cluster barrier below.
        return;
    }
    let cw = tid / WG - 1;
    // SAFETY: the whole warpgroup; 56 x 128 + 224 x 256 <= 65536.
    unsafe { setmaxnreg_inc_224() };
    if PINGPONG {
        // SAFETY: the whole warpgroup, for the tiles the producer fills; the caller's contract.
        unsafe { ping_pong::<O, Acc, STAGES, M, BM>(&sh, y, ring, tiles, ktiles, residual, slots, cw, tid) };
        return;
    }
    let mut tiles = tiles;
    let mut at = Position::START;
    // Which steps fuse the epilogue: `convrs_spec::hopper::Config::fuses_epilogue`. A constant
    // of the instantiation, so the others compile none of it.
    let fuses = fuses_epilogue(IM2COL, CLUSTER as usize, O::PIXEL_PLANES);
    let sh = &ConvShape { ep: if fuses { sh.ep } else { EpilogueArgs::NONE }, ..sh };
    // A piecewise linear epilogue runs on the accumulators (`finish_in_registers`; a thread
    // holds N / 2), then the bare store does. An NCHW output applies any other in its staged
    // store (`epilogue::store_nchw`), with no stage held.
    let regs = fuses && !sh.ep.is_identity() && sh.ep.in_registers_on(thread_accumulators(false, BM, Acc::N), O::Y_NCHW);
    // What the store applies: nothing after the register epilogue.
    let stored = ConvShape { ep: if regs { EpilogueArgs::NONE } else { sh.ep }, ..*sh };
    // With im2col copies and 16-bit outputs each tile's last stores go under the next tile's
    // first k-tiles (bare convolutions and register epilogues: see `store_deferring`).
    // Not under NCHW planes or rows: each slice's addresses take divisions (the image; under
    // rows the output row pitch too), which ran between the wgmmas of every k-tile (ncu's
    // source view of the rows: 178 instructions a k-tile in the consumers' loop, 72% of the
    // stall samples); their tiles store whole.
    let defer = matches!(M::SPEC, Spec::Half) && IM2COL && !SPLIT && sh.y_bits == 16 && (sh.ep.is_identity() || regs);
    // (NCHW rows are planes too: `O::PLANE_ROWS` implies `O::PLANES`, a const check above.)
    let defer = if O::PLANES || O::Y_NCHW { false } else { defer };
    // Any other fused epilogue holds each tile's last stage for its staging (`store_fused`).
    let hold = fuses && !O::Y_NCHW && !sh.ep.is_identity() && !regs;
    // The staged NCHW store's residual in this thread's slots (not under split-K: 0 there).
    let slot = if fuses && !regs { nchw_residual::lane_slot(slots, Acc::N, cw, tid) } else { 0 };
    let mut pending = Pending::NONE;
    // The CTA's tiles so far (the residual buffers' uses).
    let mut t = 0u32;
    while let Some((m0, n0)) = tiles.next::<CLUSTER>() {
        // A warpgroup whose first row (so every row) lies outside the output: a ragged last M
        // tile, a cluster's tile past M, or K <= 64 under NCHW planes. Uniform per warpgroup.
        // Split-K keeps every warp in its meeting; 3xTF32 computes it anyway (the branch around
        // its register fragments measured 144 bytes of spills in ptxas).
        let idle = !SPLIT && !matches!(M::SPEC, Spec::Tf32x3) && !O::block_in(&sh, m0 + cw * 64, n0);
        if O::Y_NCHW && !idle && slot != 0 {
            // SAFETY: the caller's contract (the residual is output-shaped, NCHW, 16-bit); this
            // thread's slots, whose last tile's reads are done (its stores used them).
            unsafe {
                match nchw_store_runs(false, BM, Acc::N) {
                    true => nchw_residual::copy_residual::<_, true>(Acc::N, &NhwcToNchw::rows(sh), &sh.ep, m0, n0, cw, slot, tid),
                    false => nchw_residual::copy_residual::<_, false>(Acc::N, &NhwcToNchw::rows(sh), &sh.ep, m0, n0, cw, slot, tid),
                }
            };
        } else if O::Y_NCHW && !idle {
            // SAFETY: the caller's contract (the residual is output-shaped, NCHW).
            unsafe { prefetch_residual_nchw::<_, Acc>(&NhwcToNchw::rows(sh), &sh.ep, m0, n0, cw, tid) };
        } else if (hold || regs) && !idle && residual.is_none() {
            // SAFETY: the caller's contract (the residual is output-shaped).
            unsafe { prefetch_residual::<O, Acc, M>(&sh, m0, n0, cw, tid) };
        }
        // SAFETY: the whole warpgroup, for every tile the producer fills; the stores as
        // `store_pending` requires (the previous tile's, this thread's part).
        let mut acc = unsafe {
            consume::<Acc, M, STAGES, CLUSTER, IM2COL, BM>(ring, cw, tid, ktiles, idle, hold, direct, &mut at, |kt| {
                if defer {
                    store_pending::<O, Acc>(&sh, y, &pending, cw, tid, kt, kt + 1);
                }
            })
        };
        // Whether this warp writes the tile: under split-K, the last slice's warp of each strip
        // (after the meeting), otherwise a warpgroup with rows in the output.
        let write = match &split {
            Some(split) => {
                let warp = (tid % WG) / 32;
                let unit = ((m0 / BLOCK_M as u32) * n_tiles + n0 / Acc::N as u32) * split_k::WARPS_PER_TILE as u32 + cw * 4 + warp;
                // SAFETY: the whole warp, converged; this unit's region and counter, once per
                // launch by each slice (the grid's z slices walk the same tiles).
                unsafe { split.meet(&mut acc, unit, tid % 32) }
            }
            None => !idle,
        };
        match &residual {
            // The residual from the tile's buffer: both warpgroups, every tile (an idle one
            // too, whose arrival frees the buffer), waiting before they release it.
            // SAFETY: the whole warpgroup, once a tile, in order (the producer copies every
            // tile's); the reads between wait and release; the epilogue's operands as below.
            Some(r) => unsafe {
                r.wait(t);
                if regs && write {
                    finish_in_registers::<O, Acc, M, _, true>(&sh, &mut acc, &r.pairs(t, cw, tid), m0, n0, cw, tid);
                }
                r.release(t);
            },
            // SAFETY: the caller's contract (the epilogue's operands). One call site: each
            // form of the register epilogue is straight-line code of its own.
            None if regs && write => unsafe { finish_in_registers::<O, Acc, M, Ahead, false>(&sh, &mut acc, &Ahead::NONE, m0, n0, cw, tid) },
            None => {}
        }
        t += 1;
        if split.is_some() {
            if write {
                // SAFETY: as below (each warp writes its own 16 rows; shuffles and staging
                // within the warp); of the slices, only this warp writes them.
                unsafe {
                    if hold {
                        store_fused::<O, Acc, M>(&sh, y, &acc, m0, n0, cw, tid, ring.stage_addr(at.prev_stage::<STAGES>()));
                    } else {
                        store_tile::<O, Acc, M>(&stored, y, &acc, m0, n0, cw, tid, 0, true, false);
                    }
                }
            }
        } else if defer && idle {
            // Nothing of this tile to store: the last tile's remaining stores, now.
            // SAFETY: as `store_deferring`.
            unsafe { store_pending::<O, Acc>(&sh, y, &pending, cw, tid, (ktiles as u32).min(SLICES), SLICES) };
            pending = Pending::NONE;
        } else if defer {
            // SAFETY: the caller's contract; this CTA's tile, the last tile's remaining stores.
            pending = unsafe { store_deferring::<O, Acc, M>(&sh, y, &pending, &acc, m0, n0, cw, tid, ktiles) };
        } else if hold && !idle {
            // SAFETY: the caller's contract; this CTA's tile, staged in the last stage's A
            // tile, which this warpgroup still holds.
            unsafe { store_fused::<O, Acc, M>(&sh, y, &acc, m0, n0, cw, tid, ring.stage_addr(at.prev_stage::<STAGES>())) };
        } else if !idle {
            // SAFETY: the caller's contract; this CTA's tile.
            unsafe { store_tile::<O, Acc, M>(&stored, y, &acc, m0, n0, cw, tid, slot, nchw_store_runs(false, BM, Acc::N), true) };
        }
        if hold {
            // The staging's generic-proxy writes before the producer's next copies into the
            // stage (async proxy), then the release consume left to this point.
            fence_proxy_async_shared();
            // SAFETY: every thread of the warpgroup, once for the tile's last stage.
            unsafe { ring.release::<CLUSTER>(at.prev_stage::<STAGES>()) };
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

/// A consumer warpgroup under the ping-pong schedule: of the CTA's tiles, those at even (`cw`
/// 0) or odd (`cw` 1) places of its sequence, each whole: `BM` = 128 rows as two m64 blocks
/// ([`TwoBlocks`]), or (step 12) `BM` = 64 rows, one block. The ring is filled in the tiles'
/// order, so the warpgroup skips the other's k-tiles ([`Position::advance`]). The mainloops take turns (CUTLASS's math order barrier):
/// a warpgroup starts a tile's mainloop only once the other has waited for every stage of the
/// tile before (named barrier `ORDER + cw`, which the other arrives at). So the other's MMAs
/// run under this one's epilogue, and no wait on a stage's `full` barrier is for a phase more
/// than one ahead of it (its parity would be ambiguous: a skipped-ahead wait returned at once
/// on the H100, reading stages not yet landed). No stores are deferred (the other warpgroup's
/// mainloop hides them), and a tile's second block past M (a ragged last tile) is computed and
/// not stored. A fused epilogue keeps the tile's last stage, as in [`conv`]; a register one
/// reads its residual from the `residual` buffers where the launch passes their map, otherwise
/// loads it into registers before the tile's mainloop.
///
/// # Safety
/// All 128 threads of consumer warpgroup `cw` call it together, after the barriers'
/// initialisation, with the kernel's arguments (`conv`'s contract) and the tiles the producer
/// fills, each of `ktiles` k-tiles.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn ping_pong<O: Operands, Acc: Accumulators, const STAGES: usize, M: Math, const BM: usize>(
    sh: &ConvShape,
    y: *mut f32,
    ring: Ring<STAGES>,
    mut tiles: Tiles,
    ktiles: i32,
    residual: Option<ResidualTiles<Acc, BM>>,
    slots: u32,
    cw: u32,
    tid: u32,
) {
    // Planes whose B tiles the producer copies by `cp.async` (`conv`'s `direct`).
    let direct = O::PLANES && !O::PLANE_ROWS && plane_copies_direct((sh.h * sh.w) as usize);
    // A tile of one m64 block (a constant of the instantiation: the other form compiles away).
    let one = BM == WGMMA_M;
    // Every ping-pong configuration fuses the epilogue (`fuses_epilogue`: TMA, no cluster): a
    // piecewise linear one on the accumulators (a thread holds N / 2 a block), any other through
    // the held stage, or under NCHW output in the staged store (`epilogue::store_nchw`).
    let fused = !sh.ep.is_identity();
    let regs = fused && sh.ep.in_registers_on(thread_accumulators(true, BM, Acc::N), O::Y_NCHW);
    let hold = fused && !regs && !O::Y_NCHW;
    // Planes' 16-bit store staged in the tile's last stage (`planes::store_tile_staged`) where
    // every 8-pixel run lies in one image; the stage is held for it like `hold`'s.
    let staged = !hold && O::PLANES && !O::PLANE_ROWS && M::SPEC == Spec::Half && sh.y_bits == 16 && (sh.p * sh.q) % 8 == 0;
    // The staged NCHW store's residual in this thread's slots, a pair for its two blocks.
    let blocks = (BM / WGMMA_M) as u32;
    let slot = |b: u32| if fused && !regs { nchw_residual::lane_slot(slots, Acc::N, nchw_residual::slot_key(true, blocks, b, tid), tid) } else { 0 };
    // What the store applies: nothing after the register epilogue.
    let stored = ConvShape { ep: if regs { EpilogueArgs::NONE } else { sh.ep }, ..*sh };
    // The staged NCHW store's fused short runs along the planes, where they fit the registers.
    let runs = nchw_store_runs(true, BM, Acc::N);
    let mut at = Position::START;
    let mut place = 0u32;
    while let Some((m0, n0)) = tiles.next::<1>() {
        place += 1;
        if (place - 1) % 2 != cw {
            at = at.advance::<STAGES>(ktiles as u32);
            continue;
        }
        let second = !one && O::y_in(sh, m0 + WGMMA_M as u32, n0);
        if hold {
            // SAFETY: the caller's contract (the residual is output-shaped).
            unsafe {
                prefetch_residual::<O, Acc, M>(sh, m0, n0, 0, tid);
                if second {
                    prefetch_residual::<O, Acc, M>(sh, m0, n0, 1, tid);
                }
            }
        } else if O::Y_NCHW && slot(0) != 0 {
            // SAFETY: as above (an NCHW residual, 16-bit); this thread's slots, whose last
            // tile's reads are done (its stores used them).
            unsafe {
                let copy = |b: u32| match runs {
                    true => nchw_residual::copy_residual::<_, true>(Acc::N, &NhwcToNchw::rows(sh), &sh.ep, m0, n0, b, slot(b), tid),
                    false => nchw_residual::copy_residual::<_, false>(Acc::N, &NhwcToNchw::rows(sh), &sh.ep, m0, n0, b, slot(b), tid),
                };
                copy(0);
                if second {
                    copy(1);
                }
            }
        } else if O::Y_NCHW {
            // SAFETY: as above (an NCHW residual).
            unsafe {
                prefetch_residual_nchw::<_, Acc>(&NhwcToNchw::rows(sh), &sh.ep, m0, n0, 0, tid);
                if second {
                    prefetch_residual_nchw::<_, Acc>(&NhwcToNchw::rows(sh), &sh.ep, m0, n0, 1, tid);
                }
            }
        }
        // The register epilogue's residual, loaded while the other warpgroup's mainloop runs and
        // this one's does. SAFETY: as above.
        let ahead = if regs && residual.is_none() && !O::Y_NCHW { unsafe { [residual_ahead::<O, Acc, M>(sh, m0, n0, 0, tid), if second { residual_ahead::<O, Acc, M>(sh, m0, n0, 1, tid) } else { Ahead::NONE }] } } else { [Ahead::NONE, Ahead::NONE] };
        if place > 1 {
            // The other warpgroup's mainloop of the tile before. SAFETY: both consumer
            // warpgroups, whole; the other arrives once per tile of its that a tile follows.
            unsafe { named_sync(ORDER + cw, 2 * WG) };
        }
        // SAFETY: the whole warpgroup, for this tile's k-tiles, the A tile's BM rows from block 0.
        // A one-block tile's second block is never stored (`second` is false).
        let acc = unsafe {
            if one {
                TwoBlocks(consume::<Acc, M, STAGES, 1, true, BM>(ring, 0, tid, ktiles, false, hold || staged, direct, &mut at, |_| {}), Acc::ZERO)
            } else {
                consume::<TwoBlocks<Acc>, M, STAGES, 1, true, BM>(ring, 0, tid, ktiles, false, hold || staged, direct, &mut at, |_| {})
            }
        };
        if tiles.more() {
            // The next tile's mainloop (the other's) may start. SAFETY: as above.
            unsafe { named_arrive(ORDER + 1 - cw, 2 * WG) };
        }
        if hold {
            let stage = at.prev_stage::<STAGES>();
            // SAFETY: the caller's contract; this warpgroup's tile, each block staged in its rows
            // of the last stage's A tile, which this warpgroup still holds.
            unsafe {
                store_fused::<O, Acc, M>(sh, y, &acc.0, m0, n0, 0, tid, ring.stage_addr(stage));
                if second {
                    store_fused::<O, Acc, M>(sh, y, &acc.1, m0, n0, 1, tid, ring.stage_addr(stage));
                }
            }
            // As in `conv`: the staging's writes before the producer's next copies, then the release.
            fence_proxy_async_shared();
            // SAFETY: every thread of the warpgroup, once for the tile's last stage.
            unsafe { ring.release::<1>(stage) };
        } else {
            let mut acc = acc;
            // SAFETY: the caller's contract; this warpgroup's tile (and the epilogue's operands); where
            // `staged`, the tile's last stage, which consume left held with its wgmmas retired.
            unsafe {
                match &residual {
                    // Its residual from shared memory: the whole warpgroup, once for each of its
                    // tiles, in order (the producer copies every tile's); the reads between
                    // wait and release.
                    Some(r) if regs => {
                        let t = place - 1;
                        r.wait(t);
                        finish_in_registers::<O, Acc, M, _, true>(sh, &mut acc.0, &r.pairs(t, 0, tid), m0, n0, 0, tid);
                        if second {
                            finish_in_registers::<O, Acc, M, _, true>(sh, &mut acc.1, &r.pairs(t, 1, tid), m0, n0, 1, tid);
                        }
                        r.release(t);
                    }
                    // NCHW output: no residual here (`residual_in_registers`), so none ahead.
                    _ if regs && O::Y_NCHW => {
                        finish_in_registers::<O, Acc, M, Ahead, false>(sh, &mut acc.0, &Ahead::NONE, m0, n0, 0, tid);
                        if second {
                            finish_in_registers::<O, Acc, M, Ahead, false>(sh, &mut acc.1, &Ahead::NONE, m0, n0, 1, tid);
                        }
                    }
                    _ if regs => {
                        finish_in_registers::<O, Acc, M, _, true>(sh, &mut acc.0, &ahead[0], m0, n0, 0, tid);
                        if second {
                            finish_in_registers::<O, Acc, M, _, true>(sh, &mut acc.1, &ahead[1], m0, n0, 1, tid);
                        }
                    }
                    _ => {}
                }
                if staged {
                    let stage = at.prev_stage::<STAGES>();
                    super::planes::store_tile_staged::<Acc, M>(&stored, y, &acc.0, m0, n0, 0, tid, ring.stage_addr(stage));
                    if second {
                        super::planes::store_tile_staged::<Acc, M>(&stored, y, &acc.1, m0, n0, 1, tid, ring.stage_addr(stage));
                    }
                    // As `hold`'s: the staging's writes before the producer's next copies into
                    // the stage, then its release (every thread, once for the tile's last stage).
                    fence_proxy_async_shared();
                    ring.release::<1>(stage);
                } else {
                    store_tile::<O, Acc, M>(&stored, y, &acc.0, m0, n0, 0, tid, slot(0), runs, true);
                    if second {
                        store_tile::<O, Acc, M>(&stored, y, &acc.1, m0, n0, 1, tid, slot(1), runs, true);
                    }
                }
            }
        }
    }
}
