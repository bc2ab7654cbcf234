//! Family 3 on Hopper (sm_90a PTX only): every compiled configuration, one row each, read by the
//! kernels (which declare an entry per row and dtype) and the host (which plans from the rows).
//!
//! A configuration is a *policy* (how the operand tiles reach shared memory, how the output tiles
//! are scheduled, how many CTAs share a filter tile, the block tile's rows: 128, or 64 under
//! the ping-pong of steps 12 and 15) and a block tile (BM x BN x one 128-byte row of channels, with STAGES
//! k-tiles in the shared ring) and what the tensor cores compute ([`Math`]). The 16-bit rows of
//! [`hopper_configs!`] have an fp16 and a bf16 entry point, the same code with the other `wgmma`
//! type; the fp32 rows of [`hopper_f32_configs!`] one entry each, in TF32 or 3xTF32.
//!
//! Shared memory: each stage is the A tile (BM rows of 128 bytes: 64 16-bit or 32 fp32
//! channels, one 128-byte swizzle row) then the B tile (BN rows; 3xTF32: the filter's TF32 high
//! parts, then its remainders), each on a 1024-byte boundary, which the kernel finds by aligning
//! the dynamic shared memory's start up (the launch asks for 1 KiB more than the stages); the
//! warp-specialized kernels keep their mbarriers after the last stage.
//!
//! Adding a configuration is one row of [`hopper_configs!`] or [`hopper_f32_configs!`] (and its
//! rate in the host's cost model); a row with a new policy also needs that policy's name in
//! [`Policy::name`].

use crate::split_k;

/// Block tile rows (GEMM M) of every configuration but step 12's: two consumer warpgroups of
/// m64, or under ping-pong one warpgroup's two m64 blocks. [`Policy::block_m`] is a
/// configuration's own.
pub const BLOCK_M: usize = 128;
/// Rows of one `wgmma` block (m64): a warpgroup's share of a 128-row tile, and the whole tile
/// of step 12's ping-pong.
pub const WGMMA_M: usize = 64;
/// Bytes of one shared row of a tile: one 128-byte swizzle row, [`Math::k_tile`] channels.
pub const ROW_BYTES: usize = 128;
/// Channels per k-tile of 16-bit data ([`Math::Half`]); fp32 k-tiles have half as many.
pub const K_TILE: usize = ROW_BYTES / 2;
/// Threads of a warpgroup (4 warps), the unit that issues `wgmma`.
pub const WARPGROUP: usize = 128;
/// Bytes of the warp-specialized kernels' barriers after the stages: a `full` and an `empty`
/// mbarrier (8 bytes each) per stage, at most 8 stages.
pub const BARRIER_BYTES: usize = 128;
/// Dynamic shared memory a block may have on sm_90 (227 KiB).
pub const MAX_SMEM_BYTES: usize = 232448;

/// Where the residual region of a kernel that takes the fused residual by TMA
/// ([`Config::takes_residual_map`]) puts its buffers, from the end of the ring's stages: its four
/// mbarriers (`full` of buffers 0 and 1, then their `empty`) lie right after the ring's
/// [`BARRIER_BYTES`], the buffers from this 1024-byte boundary on (the 128B swizzle's pattern).
pub const RESIDUAL_BUFFERS_AT: usize = 1024;
/// Bytes of the residual region's mbarriers.
pub const RESIDUAL_BARRIER_BYTES: usize = 4 * 8;
const _: () = assert!(BARRIER_BYTES + RESIDUAL_BARRIER_BYTES <= RESIDUAL_BUFFERS_AT);

/// The fp32 accumulators a consumer thread holds on `bm x bn` tiles: a 64-row block's `bn / 2`,
/// twice that where a ping-pong warpgroup computes a 128-row tile alone
/// ([`Config::accumulators`]; the kernels read it too).
pub const fn thread_accumulators(ping_pong: bool, bm: usize, bn: usize) -> usize {
    let rows = if ping_pong { bm } else { WGMMA_M };
    rows / WGMMA_M * bn / 2
}

/// Whether the register epilogue takes a residual, where `nchw_output` says whether the output
/// is NCHW (step 16, [`Producer::WsTmaNchw`]): not there, where an accumulator pair's two
/// channels are a plane apart, two loads and two addresses a pair, and ptxas spilled 32-80
/// bytes beside 64 accumulators (fortieth session); such an epilogue runs in the staged NCHW
/// store ([`Policy::epilogue_in_nchw_store`]). The kernels evaluate it too.
pub const fn residual_in_registers(nchw_output: bool) -> bool {
    !nchw_output
}

/// The rule of [`Config::takes_residual_map`], which the kernels evaluate on their const
/// parameters too: a schedule that copies it (`schedule`: NHWC by im2col TMA, persistent or
/// ping-pong, no cluster, no split), 16-bit data, a register epilogue's `acc` accumulators a
/// thread, whole 64-channel boxes of `bn` columns.
pub const fn takes_residual_map(schedule: bool, half: bool, acc: usize, bn: usize) -> bool {
    schedule && half && acc <= crate::epilogue::IN_REGISTERS_MAX_ACC && bn % K_TILE == 0
}

/// Bytes of one residual buffer for `bm x bn` tiles: the tile in 16-bit values, as `bn / 64`
/// boxes of {64 channels, `bm` rows} (128-byte rows, 128B swizzle) side by side.
pub const fn residual_tile_bytes(bm: usize, bn: usize) -> usize {
    bm * bn * 2
}

/// Residual buffers of a configuration that takes the residual by TMA, whose ring's stages take
/// `ring_bytes`: under ping-pong two, one a consumer warpgroup (they take turns, and one's
/// epilogue may still read its buffer while the other's tile lands in the other); where both
/// warpgroups share each tile, two where they fit beside the ring (tile t's copy then waits for
/// tile t - 2's reads), else one.
pub const fn residual_buffers(ping_pong: bool, ring_bytes: usize, bm: usize, bn: usize) -> usize {
    if ping_pong || 1024 + ring_bytes + residual_region_bytes(bm, bn, 2) <= MAX_SMEM_BYTES { 2 } else { 1 }
}

/// Bytes from the end of the ring's stages to the end of the residual region of `buffers`
/// buffers ([`residual_buffers`]).
pub const fn residual_region_bytes(bm: usize, bn: usize, buffers: usize) -> usize {
    RESIDUAL_BUFFERS_AT + buffers * residual_tile_bytes(bm, bn)
}

/// Calls `$callback! { $ctx... (Producer, Schedule, CLUSTER, BM, BN, STAGES, fp16_entry, bf16_entry) ... }`,
/// one row per compiled configuration, in the order of the progression. `Producer` and
/// `Schedule` are variant names of [`Producer`] and [`Schedule`].
#[macro_export]
macro_rules! hopper_configs {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            // producer  schedule    cluster BM   BN  stages entries (fp16, bf16)
            // Step 3: every thread copies, both warpgroups compute (the ring runs STAGES-2 ahead).
            (Multistage, Tile,       1,      128, 256, 4, wgmma_multistage_128x256k64, wgmma_multistage_bf16_128x256k64)
            (Multistage, Tile,       1,      128, 128, 5, wgmma_multistage_128x128k64, wgmma_multistage_bf16_128x128k64)
            // Step 4: a producer warpgroup and two consumers on an mbarrier ring (a whole ring ahead).
            (WsCpAsync,  Tile,       1,      128, 256, 4, wgmma_ws_cpasync_128x256k64, wgmma_ws_cpasync_bf16_128x256k64)
            (WsCpAsync,  Tile,       1,      128, 128, 6, wgmma_ws_cpasync_128x128k64, wgmma_ws_cpasync_bf16_128x128k64)
            // Step 5: clusters of 2 along M sharing each filter tile by TMA multicast.
            (WsCpAsync,  Tile,       2,      128, 256, 4, wgmma_ws_cpasync_cluster2_128x256k64, wgmma_ws_cpasync_cluster2_bf16_128x256k64)
            (WsCpAsync,  Tile,       2,      128, 128, 6, wgmma_ws_cpasync_cluster2_128x128k64, wgmma_ws_cpasync_cluster2_bf16_128x128k64)
            // Step 6: a persistent grid, the next tile's loads under the epilogue.
            (WsCpAsync,  Persistent, 1,      128, 256, 4, wgmma_ws_cpasync_persistent_128x256k64, wgmma_ws_cpasync_persistent_bf16_128x256k64)
            (WsCpAsync,  Persistent, 1,      128, 128, 6, wgmma_ws_cpasync_persistent_128x128k64, wgmma_ws_cpasync_persistent_bf16_128x128k64)
            (WsCpAsync,  Persistent, 2,      128, 256, 4, wgmma_ws_cpasync_persistent_cluster2_128x256k64, wgmma_ws_cpasync_persistent_cluster2_bf16_128x256k64)
            (WsCpAsync,  Persistent, 2,      128, 128, 6, wgmma_ws_cpasync_persistent_cluster2_128x128k64, wgmma_ws_cpasync_persistent_cluster2_bf16_128x128k64)
            // Step 7: both tiles by TMA, the activations in im2col mode (one producer thread).
            (WsTma,      Persistent, 1,      128, 256, 4, wgmma_ws_tma_persistent_128x256k64, wgmma_ws_tma_persistent_bf16_128x256k64)
            (WsTma,      Persistent, 1,      128, 128, 6, wgmma_ws_tma_persistent_128x128k64, wgmma_ws_tma_persistent_bf16_128x128k64)
            // 128x64 for K <= 64 and 128x32 for K <= 32: no filter rows zero-filled past K.
            (WsTma,      Persistent, 1,      128,  64, 8, wgmma_ws_tma_persistent_128x64k64, wgmma_ws_tma_persistent_bf16_128x64k64)
            (WsTma,      Persistent, 1,      128,  32, 8, wgmma_ws_tma_persistent_128x32k64, wgmma_ws_tma_persistent_bf16_128x32k64)
            (WsTma,      Persistent, 2,      128, 256, 4, wgmma_ws_tma_persistent_cluster2_128x256k64, wgmma_ws_tma_persistent_cluster2_bf16_128x256k64)
            (WsTma,      Persistent, 2,      128, 128, 6, wgmma_ws_tma_persistent_cluster2_128x128k64, wgmma_ws_tma_persistent_cluster2_bf16_128x128k64)
            // Step 8: split-K, the slices meeting in a workspace (tiles up to split_k::MAX_BN).
            (WsTma,      SplitK,     1,      128, 128, 6, wgmma_ws_tma_splitk_128x128k64, wgmma_ws_tma_splitk_bf16_128x128k64)
            (WsTma,      SplitK,     1,      128,  64, 8, wgmma_ws_tma_splitk_128x64k64, wgmma_ws_tma_splitk_bf16_128x64k64)
            (WsTma,      SplitK,     1,      128,  32, 8, wgmma_ws_tma_splitk_128x32k64, wgmma_ws_tma_splitk_bf16_128x32k64)
            // Step 10: ping-pong, each consumer warpgroup a whole tile of its own (its 128 rows as two
            // m64 blocks), every other tile of the CTA's: one's epilogue under the other's mainloop.
            (WsTma,      PingPong,   1,      128, 128, 6, wgmma_ws_tma_pingpong_128x128k64, wgmma_ws_tma_pingpong_bf16_128x128k64)
            (WsTma,      PingPong,   1,      128,  64, 8, wgmma_ws_tma_pingpong_128x64k64, wgmma_ws_tma_pingpong_bf16_128x64k64)
            // Step 12: ping-pong on 64-row tiles, one m64 block a warpgroup (CUTLASS's): twice
            // the tiles of a small-M layer without splitting its reduction, and each epilogue
            // the size of step 7's, under the other warpgroup's mainloop (measured not to pay
            // under a fused epilogue: notes/hopper.md §16).
            (WsTma,      PingPong,   1,       64, 256, 5, wgmma_ws_tma_pingpong_m64_64x256k64, wgmma_ws_tma_pingpong_m64_bf16_64x256k64)
            (WsTma,      PingPong,   1,       64, 128, 8, wgmma_ws_tma_pingpong_m64_64x128k64, wgmma_ws_tma_pingpong_m64_bf16_64x128k64)
            (WsTma,      PingPong,   1,       64,  64, 8, wgmma_ws_tma_pingpong_m64_64x64k64, wgmma_ws_tma_pingpong_m64_bf16_64x64k64)
            (WsTma,      PingPong,   1,       64,  32, 8, wgmma_ws_tma_pingpong_m64_64x32k64, wgmma_ws_tma_pingpong_m64_bf16_64x32k64)
            // Step 9: NCHW data, 1x1 stride 1: a GEMM per image, the filter as A and the image's
            // C x HW plane as an MN-major B, both by tiled TMA; NCHW out, no transform.
            (Planes,     Persistent, 1,      128, 256, 4, wgmma_nchw1x1_persistent_128x256k64, wgmma_nchw1x1_persistent_bf16_128x256k64)
            (Planes,     Persistent, 1,      128, 128, 6, wgmma_nchw1x1_persistent_128x128k64, wgmma_nchw1x1_persistent_bf16_128x128k64)
            (Planes,     Persistent, 1,      128,  64, 8, wgmma_nchw1x1_persistent_128x64k64, wgmma_nchw1x1_persistent_bf16_128x64k64)
            // Step 14: NCHW data, any filter at column stride 1: step 9's GEMM per image with the
            // columns output rows of whole 64-pixel copies; per (tap, channel chunk) one tiled
            // copy of an input row from a 16-byte boundary, shifted into place by the producer
            // warpgroup; NCHW out, no transform of the activations. (Each stage also holds the
            // copies as they land, so 128x256 would have 2 stages; the ring's third barrier
            // array leaves room for 5.)
            (PlaneRows,  Persistent, 1,      128, 128, 4, wgmma_nchw_rows_persistent_128x128k64, wgmma_nchw_rows_persistent_bf16_128x128k64)
            (PlaneRows,  Persistent, 1,      128,  64, 5, wgmma_nchw_rows_persistent_128x64k64, wgmma_nchw_rows_persistent_bf16_128x64k64)
            // Step 15: step 9 on step 12's 64-row ping-pong tiles: each image's output channels
            // rounded up to 64 rather than 128 (K = 64 computes no idle rows), and one
            // warpgroup's stores under the other's mainloop.
            (Planes,     PingPong,   1,       64, 256, 5, wgmma_nchw1x1_pingpong_m64_64x256k64, wgmma_nchw1x1_pingpong_m64_bf16_64x256k64)
            (Planes,     PingPong,   1,       64, 128, 8, wgmma_nchw1x1_pingpong_m64_64x128k64, wgmma_nchw1x1_pingpong_m64_bf16_64x128k64)
            (Planes,     PingPong,   1,       64,  64, 8, wgmma_nchw1x1_pingpong_m64_64x64k64, wgmma_nchw1x1_pingpong_m64_bf16_64x64k64)
            // Step 16: steps 7, 10 and 12 writing NCHW: NHWC input (an NCHW caller's one
            // transpose), each output channel's pixels stored into its plane, so the caller's
            // output needs no transpose. The 128x128, 128x64 ping-pong and 64x128 rings are a
            // stage shorter than their NHWC twins' so that the residual slots fit beside them
            // (`nchw_residual_slot_bytes`).
            (WsTmaNchw,  Persistent, 1,      128, 128, 5, wgmma_ws_tma_persistent_to_nchw_128x128k64, wgmma_ws_tma_persistent_to_nchw_bf16_128x128k64)
            (WsTmaNchw,  Persistent, 1,      128,  64, 8, wgmma_ws_tma_persistent_to_nchw_128x64k64, wgmma_ws_tma_persistent_to_nchw_bf16_128x64k64)
            (WsTmaNchw,  Persistent, 1,      128,  32, 8, wgmma_ws_tma_persistent_to_nchw_128x32k64, wgmma_ws_tma_persistent_to_nchw_bf16_128x32k64)
            (WsTmaNchw,  PingPong,   1,      128, 128, 6, wgmma_ws_tma_pingpong_to_nchw_128x128k64, wgmma_ws_tma_pingpong_to_nchw_bf16_128x128k64)
            (WsTmaNchw,  PingPong,   1,      128,  64, 7, wgmma_ws_tma_pingpong_to_nchw_128x64k64, wgmma_ws_tma_pingpong_to_nchw_bf16_128x64k64)
            (WsTmaNchw,  PingPong,   1,       64, 256, 5, wgmma_ws_tma_pingpong_m64_to_nchw_64x256k64, wgmma_ws_tma_pingpong_m64_to_nchw_bf16_64x256k64)
            (WsTmaNchw,  PingPong,   1,       64, 128, 7, wgmma_ws_tma_pingpong_m64_to_nchw_64x128k64, wgmma_ws_tma_pingpong_m64_to_nchw_bf16_64x128k64)
            (WsTmaNchw,  PingPong,   1,       64,  64, 8, wgmma_ws_tma_pingpong_m64_to_nchw_64x64k64, wgmma_ws_tma_pingpong_m64_to_nchw_bf16_64x64k64)
            (WsTmaNchw,  PingPong,   1,       64,  32, 8, wgmma_ws_tma_pingpong_m64_to_nchw_64x32k64, wgmma_ws_tma_pingpong_m64_to_nchw_bf16_64x32k64)
            // Step 17: NCHW data, any filter at stride 1, read as it is: per 64-channel chunk,
            // the tile's input rows land by tiled TMA (pixels contiguous), the producer
            // warpgroup transposes them (ldmatrix.trans, stmatrix) into a K-major patch, and
            // each filter tap's A operand is the patch from a row offset; NCHW out through step
            // 16's staged stores. (Two patches and two landings take 130 KiB: 4 stages at 128,
            // 8 at 64, the ring as deep in time as step 7's 128x128 and 128x64.)
            (NchwPatch,  Persistent, 1,      128, 128, 4, wgmma_nchw_patch_persistent_128x128k64, wgmma_nchw_patch_persistent_bf16_128x128k64)
            (NchwPatch,  Persistent, 1,      128,  64, 8, wgmma_nchw_patch_persistent_128x64k64, wgmma_nchw_patch_persistent_bf16_128x64k64)
            // Step 18: step 9 on step 10's ping-pong tiles: each consumer warpgroup a whole
            // 128-row tile (two m64 blocks), so one's stores run under the other's mainloop,
            // with step 9's 128 output channels a tile (step 15 reads each pixel tile once per
            // 64 rows).
            (Planes,     PingPong,   1,      128, 128, 6, wgmma_nchw1x1_pingpong_128x128k64, wgmma_nchw1x1_pingpong_bf16_128x128k64)
            (Planes,     PingPong,   1,      128,  64, 8, wgmma_nchw1x1_pingpong_128x64k64, wgmma_nchw1x1_pingpong_bf16_128x64k64)
        }
    };
}

/// Calls `$callback! { $ctx... (Math, Producer, Schedule, CLUSTER, BM, BN, STAGES, entry) ... }`, one
/// row per compiled fp32 configuration: the tensor cores on fp32 data, in TF32 or 3xTF32
/// ([`Math`]). Each k-tile is 32 channels (the same 128 bytes a row as the 16-bit rows).
#[macro_export]
macro_rules! hopper_f32_configs {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            // math    producer schedule    cluster BM   BN  stages entry
            // Step 10: TF32, step 7's kernel with `wgmma .tf32` on 32-channel k-tiles.
            (Tf32,     WsTma,   Persistent, 1,      128, 256, 4, wgmma_ws_tma_persistent_tf32_128x256k32)
            (Tf32,     WsTma,   Persistent, 1,      128, 128, 6, wgmma_ws_tma_persistent_tf32_128x128k32)
            (Tf32,     WsTma,   Persistent, 1,      128,  64, 8, wgmma_ws_tma_persistent_tf32_128x64k32)
            (Tf32,     WsTma,   Persistent, 1,      128,  32, 8, wgmma_ws_tma_persistent_tf32_128x32k32)
            // Step 11: 3xTF32, each stage with the filter's high and low TF32 parts, the
            // activations split in registers: three wgmmas a step.
            (Tf32x3,   WsTma,   Persistent, 1,      128, 128, 4, wgmma_ws_tma_persistent_3xtf32_128x128k32)
            (Tf32x3,   WsTma,   Persistent, 1,      128,  64, 6, wgmma_ws_tma_persistent_3xtf32_128x64k32)
            (Tf32x3,   WsTma,   Persistent, 1,      128,  32, 8, wgmma_ws_tma_persistent_3xtf32_128x32k32)
            // Step 10's ping-pong schedule on fp32 data in TF32.
            (Tf32,     WsTma,   PingPong,   1,      128, 128, 6, wgmma_ws_tma_pingpong_tf32_128x128k32)
            (Tf32,     WsTma,   PingPong,   1,      128,  64, 8, wgmma_ws_tma_pingpong_tf32_128x64k32)
            // Step 12's 64-row ping-pong in TF32.
            (Tf32,     WsTma,   PingPong,   1,       64, 256, 5, wgmma_ws_tma_pingpong_m64_tf32_64x256k32)
            (Tf32,     WsTma,   PingPong,   1,       64, 128, 8, wgmma_ws_tma_pingpong_m64_tf32_64x128k32)
            (Tf32,     WsTma,   PingPong,   1,       64,  64, 8, wgmma_ws_tma_pingpong_m64_tf32_64x64k32)
            (Tf32,     WsTma,   PingPong,   1,       64,  32, 8, wgmma_ws_tma_pingpong_m64_tf32_64x32k32)
            // Step 8's split-K on fp32 data: layers with fewer output tiles than SMs.
            (Tf32,     WsTma,   SplitK,     1,      128, 128, 6, wgmma_ws_tma_splitk_tf32_128x128k32)
            (Tf32,     WsTma,   SplitK,     1,      128,  64, 8, wgmma_ws_tma_splitk_tf32_128x64k32)
            (Tf32,     WsTma,   SplitK,     1,      128,  32, 8, wgmma_ws_tma_splitk_tf32_128x32k32)
            (Tf32x3,   WsTma,   SplitK,     1,      128,  64, 6, wgmma_ws_tma_splitk_3xtf32_128x64k32)
            (Tf32x3,   WsTma,   SplitK,     1,      128,  32, 8, wgmma_ws_tma_splitk_3xtf32_128x32k32)
            // Step 13: NCHW data, 1x1 stride 1, in fp32: a GEMM per image with the pixels as
            // the rows (tf32 wgmma takes K-major operands only, so the MN-major pixel tile is
            // the A operand, loaded into registers) and the filter as a K-major B; NCHW out.
            (Tf32,     PlanePixels, Persistent, 1,   128, 256, 4, wgmma_nchw1x1_persistent_tf32_128x256k32)
            (Tf32,     PlanePixels, Persistent, 1,   128, 128, 6, wgmma_nchw1x1_persistent_tf32_128x128k32)
            (Tf32,     PlanePixels, Persistent, 1,   128,  64, 8, wgmma_nchw1x1_persistent_tf32_128x64k32)
            (Tf32x3,   PlanePixels, Persistent, 1,   128, 128, 4, wgmma_nchw1x1_persistent_3xtf32_128x128k32)
            (Tf32x3,   PlanePixels, Persistent, 1,   128,  64, 6, wgmma_nchw1x1_persistent_3xtf32_128x64k32)
        }
    };
}

/// What the tensor cores compute, on which data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Math {
    /// fp16 or bf16 data as it is (an entry point for each), fp32 accumulation.
    Half,
    /// fp32 data read as TF32 (`wgmma .tf32`, which uses an element's upper 19 bits: sign,
    /// exponent, 10 mantissa bits), fp32 accumulation: what PyTorch runs fp32 convolutions in
    /// by default.
    Tf32,
    /// fp32 data to about fp32 accuracy by 3xTF32: each operand is a TF32 high part plus a TF32
    /// remainder (both rounded to nearest), and each product is hi*hi + hi*lo + lo*hi (the
    /// lo*lo term, below 2^-22 of the product, dropped). The filter is split once, before the
    /// kernel runs (a 2K-row filter: the high parts, then the remainders); the activations are
    /// split in registers, the `wgmma`'s A operand.
    Tf32x3,
}

impl Math {
    /// Bytes per element of the data.
    pub const fn elem_bytes(self) -> usize {
        match self {
            Math::Half => 2,
            Math::Tf32 | Math::Tf32x3 => 4,
        }
    }

    /// Channels per k-tile: one 128-byte row.
    pub const fn k_tile(self) -> usize {
        ROW_BYTES / self.elem_bytes()
    }

    /// Filter tiles a stage holds: the high and low parts under 3xTF32, else one.
    pub const fn b_tiles(self) -> usize {
        match self {
            Math::Tf32x3 => 2,
            Math::Half | Math::Tf32 => 1,
        }
    }

    /// Tensor-core MMAs per product: three under 3xTF32.
    pub const fn passes(self) -> usize {
        match self {
            Math::Tf32x3 => 3,
            Math::Half | Math::Tf32 => 1,
        }
    }

    /// Whether a 3xTF32 tile `bn` columns wide, over `ktiles` k-tiles, sums each k-step's
    /// products (8 channels, three MMAs) from zero and adds them to its running sum in fp32,
    /// rather than each k-tile's (32 channels): [`STEP_SUMS_MAX_KTILES`], [`STEP_SUMS_MAX_N`].
    pub const fn step_sums(self, ktiles: i32, bn: usize) -> bool {
        matches!(self, Math::Tf32x3) && ktiles <= STEP_SUMS_MAX_KTILES && bn <= STEP_SUMS_MAX_N
    }

    /// Whether a tile `bn` columns wide reaches this math's accuracy over `ktiles` k-tiles:
    /// false where 3xTF32 needs step sums ([`STEP_SUMS_MAX_KTILES`]) that a tile wider than
    /// [`STEP_SUMS_MAX_N`] does not run. The plans refuse those tiles.
    pub const fn accurate(self, ktiles: i32, bn: usize) -> bool {
        !matches!(self, Math::Tf32x3) || ktiles > STEP_SUMS_MAX_KTILES || bn <= STEP_SUMS_MAX_N
    }
}

/// The longest reduction, in k-tiles, over which a 3xTF32 tile sums each k-step apart.
///
/// The tensor cores add each MMA's products to the accumulator with truncation, at a relative
/// error near 2^-24 of the accumulator a step. Over a k-tile's 12 MMAs (4 k-steps of 3) that
/// gives about 2.4e-7 relative L2 error whatever the reduction's length (measured on an H100;
/// a model of the truncation reproduces it), where fp32 FMA's grows with the length: measured
/// 1.4e-7 at 64 products, 2.0e-7 at 128, 2.5e-7 at 192 (against 3xTF32's 2.39e-7), 2.9e-7 at
/// 256. Summed a k-step at a time (3 MMAs from zero, then one fp32 add rounded to nearest),
/// measured 0.8e-7 at 64 and 1.2e-7 at 256. The step sums cost time (up to a third on
/// memory-bound 1x1 layers, measured), so they stop where the k-tile sums already beat FMA:
/// 6 k-tiles, 192 channels of a 1x1 layer (a 3x3 layer has at least 9 k-tiles, of at most 32
/// channels a tap).
pub const STEP_SUMS_MAX_KTILES: i32 = 6;

/// The widest 3xTF32 tile that runs step sums, which take two sets of accumulators (the k-steps
/// alternate between them) beside the running sums: 3 x 32 registers a thread at 64 wide, 3 x
/// 64 at 128 wide, past the consumers' 168 (even one set beside the running sums spilled 72 to
/// 168 bytes there, measured in ptxas).
pub const STEP_SUMS_MAX_N: usize = 64;

/// How the operand tiles reach shared memory, and which threads do what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Producer {
    /// Every thread copies both tiles with `cp.async` into a multistage ring, then both
    /// warpgroups compute: no warp specialization, 256 threads. Arguments `(x, w, y, shape)`.
    Multistage,
    /// Warp-specialized (384 threads): a producer warpgroup copies the activation tile with
    /// `cp.async` and one of its threads the filter tile by tiled TMA; two consumer warpgroups
    /// run `wgmma`. Arguments `(x, w, y, wmap, shape)`: `wmap` the filter's tensor map (`w`
    /// itself is not read).
    WsCpAsync,
    /// Warp-specialized, one producer thread issuing both copies by TMA, the activations in
    /// im2col mode. Arguments `(x, w, y, wmap, xmap, shape)`: `xmap` the input's im2col map.
    WsTma,
    /// [`Producer::WsTma`] with the output written NCHW (step 16): each output channel's pixels
    /// stored into its plane, so that an NCHW caller's output needs no transpose (its input
    /// still does). The fused epilogue runs in that store ([`Policy::epilogue_in_nchw_store`]).
    /// Arguments as [`Producer::WsTma`].
    WsTmaNchw,
    /// Warp-specialized, one producer thread issuing tiled TMA copies of NCHW data for a 1x1,
    /// stride-1, unpadded convolution, which is a GEMM per image: Y[n] (K x HW) = W (K x C) *
    /// X[n] (C x HW). The GEMM's rows are (image, output channel) pairs, [`plane_rows`] an
    /// image (the filter, K-major, is A), its columns the image's pixels (its C x HW plane,
    /// pixels contiguous, is an MN-major B), so the output tile is NCHW as it stands. Arguments
    /// as [`Producer::WsTma`], `xmap` the input's plane map ([`PLANE_BOX_PIXELS`]).
    Planes,
    /// [`Producer::Planes`]' GEMM the other way round, for fp32 data (`wgmma .tf32` takes
    /// K-major operands from shared memory only, and an NCHW plane is MN-major): the rows are
    /// (image, pixel) pairs, [`plane_pixel_rows`] an image, loaded from the image's C x HW plane
    /// (copies of 32 pixels by 32 channels) into registers as the A operand; the columns are
    /// output channels, the filter a K-major B tile as under [`Producer::WsTma`]; each output
    /// column is a run of pixels of one NCHW plane. Arguments as [`Producer::WsTma`], `xmap`
    /// the input's plane map.
    PlanePixels,
    /// [`Producer::Planes`]' GEMM for any filter at column stride 1 (step 14): the rows are
    /// (image, output channel) pairs as there, the columns an image's output rows, each
    /// [`plane_row_pitch`] columns (Q rounded up to whole 64-pixel copies). Each k-tile is one
    /// (filter tap, 64-channel chunk): the filter tile of that tap (KRSC, transformed once per
    /// weights) and, for each 64 columns of the tile, one tiled TMA copy of 72 pixels of one
    /// input row (the output row's, shifted by the tap, from the 16-byte boundary at or before
    /// its first column; padding arrives as the copy's zero fill) by 64 channels, which the
    /// producer warpgroup shifts into the MN-major B tile of [`Producer::Planes`]
    /// ([`PLANE_ROW_LANDED_PIXELS`]). Arguments as [`Producer::WsTma`], `xmap` the input's row map.
    PlaneRows,
    /// NCHW data, any filter at stride 1, read as it is (step 17): the GEMM of
    /// [`Producer::WsTma`] (rows output pixels, columns output channels, the KRSC filter the B
    /// tile), its rows a tile's [`PatchGeometry::out_rows`] output rows of
    /// [`PatchGeometry::wp`] pixels each (those past Q computed and never stored). Per
    /// 64-channel chunk of a tile, the input rows under it land by tiled TMA copies of the
    /// plane map (pixels contiguous, [`PATCH_LANDING_BOXES`] at most), and the producer
    /// warpgroup transposes them into a K-major patch ([`PATCH_ROWS`] rows of one pixel's 64
    /// channels; padding columns zero), so the A tile of tap (r, s) is the patch from row
    /// r*dil_h*wp + s*dil_w: a descriptor's start, no copy a tap. Arguments as
    /// [`Producer::WsTma`], `xmap` the input's plane map; output NCHW through
    /// [`NCHW_STAGING_BYTES`].
    NchwPatch,
}

/// Rows of one [`Producer::NchwPatch`] patch: 128-byte rows (a pixel's 64 channels), enough
/// for four input rows of 64 columns and a 3x3 filter's reach (258 rows), or eight of 32 and
/// a 5x5 filter's (260). (392 rows took Q up to 126 and 7x7 filters, but left room for one
/// landing and 3 filter stages: the landing's latency went unhidden.)
pub const PATCH_ROWS: usize = 264;
/// Bytes of one [`Producer::NchwPatch`] patch; the kernel keeps two (one filling, one read).
pub const PATCH_BYTES: usize = PATCH_ROWS * ROW_BYTES;
/// Tiled copies of [`PLANE_BOX_PIXELS`] pixels x 64 channels a [`Producer::NchwPatch`] chunk
/// may land: a tile's input rows, from the 16-byte boundary at or before the first.
pub const PATCH_LANDING_BOXES: usize = 4;
/// Bytes of one [`Producer::NchwPatch`] landing; the kernel keeps two, so that the next
/// chunk's copies fly while this one's are transposed.
pub const PATCH_LANDING_BYTES: usize = PATCH_LANDING_BOXES * PLANE_BOX_PIXELS * ROW_BYTES;
/// Threads of a [`Producer::NchwPatch`] producer warpgroup that transpose the landed rows into
/// the patch: warps 1 to 3 (warp 0's first thread issues the filter copies, its second the
/// landings).
pub const PATCH_TRANSPOSERS: usize = 96;
/// Bytes where the transposers' lanes store pixels that fall outside the patch (a slot of 16
/// bytes for each lane: `stmatrix` writes for every lane).
pub const PATCH_SCRATCH_BYTES: usize = 2048;

/// How a [`Producer::NchwPatch`] tile covers the output: rows of `wp` GEMM rows (a power of 2
/// from 8 to 128, at least Q + (S-1)*dil_w, so that a tap's 128-row window stays inside its
/// output rows), `out_rows` = 128 / `wp` of them, read from `in_rows` input rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatchGeometry {
    /// GEMM rows per output row.
    pub wp: usize,
    /// Output rows a tile: 128 / `wp`.
    pub out_rows: usize,
    /// Input rows under a tile's output rows.
    pub in_rows: usize,
}

/// The [`Producer::NchwPatch`] geometry of a stride-1 problem (input width `w`, output width
/// `q`, filter `r` x `s`, dilations), or `None` where its tile's patch or landing does not fit:
/// wider than 128 padded columns, or more than [`PATCH_ROWS`] patch rows, or more than
/// [`PATCH_LANDING_BOXES`] copies of input rows. The kernel and the plan both call it.
pub const fn patch_geometry(w: usize, q: usize, r: usize, s: usize, dil_h: usize, dil_w: usize) -> Option<PatchGeometry> {
    if r == 0 || s == 0 || w == 0 || q == 0 {
        return None;
    }
    let reach = (s - 1) * dil_w;
    let mut wp = 8;
    while wp < q + reach {
        wp *= 2;
    }
    if wp > BLOCK_M {
        return None;
    }
    let out_rows = BLOCK_M / wp;
    let in_rows = out_rows + (r - 1) * dil_h;
    if in_rows * wp + reach > PATCH_ROWS || in_rows * w + 7 > PATCH_LANDING_BOXES * PLANE_BOX_PIXELS {
        return None;
    }
    Some(PatchGeometry { wp, out_rows, in_rows })
}

/// Where a [`Producer::NchwPatch`] block keeps what, from its 1024-aligned start: the ring's
/// `stages` filter tiles (`bn` rows each), its barriers in the next KiB (the ring's, then the
/// two landings' full and empty, then the two patches' full and empty), the two patches, the
/// two landings, the scratch; the NCHW staging is the last [`NCHW_STAGING_BYTES`] of the
/// launch's dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatchLayout {
    /// Bytes of one filter stage.
    pub stage: usize,
    /// Offset of the barrier KiB.
    pub barriers: usize,
    /// Offset of the first patch (the second follows it).
    pub patch: usize,
    /// Offset of the first landing (the second follows it).
    pub landing: usize,
    /// Offset of the transposers' scratch slots.
    pub scratch: usize,
    /// The end of all of them.
    pub end: usize,
}

impl PatchLayout {
    /// The layout of tiles `bn` wide with `stages` stages.
    pub const fn of(bn: usize, stages: usize) -> PatchLayout {
        let stage = b_tile_bytes(bn);
        let barriers = stages * stage;
        let patch = barriers + 1024;
        let landing = patch + 2 * PATCH_BYTES;
        let scratch = landing + 2 * PATCH_LANDING_BYTES;
        PatchLayout { stage, barriers, patch, landing, scratch, end: scratch + PATCH_SCRATCH_BYTES }
    }
}

impl Producer {
    /// Whether it reads NCHW planes as they are (1x1, stride-1, unpadded layers), through the
    /// input's plane map.
    pub const fn nchw_planes(self) -> bool {
        matches!(self, Producer::Planes | Producer::PlanePixels)
    }

    /// Whether it runs a strided 1x1 layer without padding as the stride-1 layer of its input
    /// sampled on the stride's grid, the sampling done by the input's conversion: the plane
    /// kernels (stride 1 only), and [`Producer::WsTmaNchw`] (NHWC in, NCHW out: its caller holds
    /// NCHW, so the input is transposed anyway, and the sampled transpose writes a quarter of
    /// the bytes at stride 2).
    pub const fn samples_strided_1x1(self) -> bool {
        self.nchw_planes() || matches!(self, Producer::WsTmaNchw)
    }
}

/// Bytes of the [`Producer::WsTmaNchw`] kernels' staging, the last of the block's dynamic shared
/// memory: each of the 8 consumer warps stages 16 rows of [`ROW_BYTES`] (a chunk of 32 fp32
/// columns) there, to store them down the columns into the NCHW planes.
pub const NCHW_STAGING_BYTES: usize = 8 * 16 * ROW_BYTES;

/// Bytes of the [`Producer::WsTmaNchw`] kernels' residual slots for `bm x bn` tiles (under
/// `ping_pong` each consumer warpgroup its own tile): each consumer thread copies the NCHW
/// residual its staged store will read (8 pixels of one channel a 16-byte slot, 16-bit data)
/// into slots of its own before the tile's mainloop, by `cp.async`, so the loads land under the
/// mainloop. The slots lie after the ring's barriers, where the launch gives the bytes
/// ([`Config::smem_bytes_with_nchw_slots`]); without them the store loads the residual itself.
pub const fn nchw_residual_slot_bytes(ping_pong: bool, bm: usize, bn: usize) -> usize {
    (if ping_pong { 2 * bm } else { bm }) * bn * 2
}

/// The widest run of pixels the NCHW stores and their residual reads take in planes whose
/// runs are `run` pixels (`NchwRows::run` in the kernels; step 16's: P*Q): 8, 4, 2 or 1, the
/// largest power of 2 up to 8 dividing it.
pub const fn run_width(run: u32) -> u32 {
    if run % 8 == 0 {
        8
    } else if run % 4 == 0 {
        4
    } else if run % 2 == 0 {
        2
    } else {
        1
    }
}

/// Whether step 16's staged NCHW store may apply a fused epilogue along the planes where the
/// runs are shorter than 8 pixels (`epilogue::store_nchw_runs_fused` in the kernels) on tiles
/// `bm x bn` (`ping_pong`: [`Policy::ping_pong`]): where a consumer thread holds fewer than 128
/// accumulators ([`thread_accumulators`]). Beside 128 (step 12's 64x256, step 10's 128x128)
/// ptxas spilled 12-16 bytes; those tiles have no room for the residual slots either. Where it
/// may not, or a residual has no slots, the fused store goes down the columns.
pub const fn nchw_store_runs(ping_pong: bool, bm: usize, bn: usize) -> bool {
    thread_accumulators(ping_pong, bm, bn) < 128
}

/// Whether step 16's bare 16-bit store on runs of 8 pixels stages the rounded outputs
/// transposed (`epilogue::store_nchw_matrix` in the kernels, which reads back no fp32 values)
/// on a tile whose blocks are `bn` wide, `runs` its [`nchw_store_runs`]: through the
/// warpgroup-wide store where `runs`, and on blocks 256 wide (128 accumulators a thread: the
/// ping-pong m64 form's 64x256, the only such NCHW tile). The 128x128 ping-pong tiles (two blocks of 128 a
/// warpgroup) spilled 12-16 bytes with it, so they keep the fp32 staging. The kernels and the
/// host's planner (its `NCHW_MATRIX` rate) both ask this.
pub const fn nchw_store_transposed(runs: bool, bn: usize) -> bool {
    runs || bn >= 256
}

/// Whether planes whose runs are `run` pixels ([`run_width`]) can be copied into the NCHW
/// residual slots: 4, 8 or 16 bytes a copy (`cp.async`), so runs of 2 pixels or more.
pub const fn nchw_slots_copy(run: u32) -> bool {
    run_width(run) >= 2
}

/// Pixels of one plane-map copy ([`Producer::Planes`]): one 128-byte swizzle row of 16-bit
/// data. A tile `bn` pixels wide is `bn / 64` copies. (fp32 copies, [`Producer::PlanePixels`],
/// are one 128-byte row too: [`Math::k_tile`] = 32 pixels, [`BLOCK_M`] / 32 of them a tile.)
pub const PLANE_BOX_PIXELS: usize = 64;

/// Pixels of one [`Producer::PlaneRows`] copy as it lands: 64 and the 8 after, from the
/// 16-byte boundary at or before the tap's first column. A tiled TMA copy under 128B swizzle
/// must start its innermost dimension on 16 bytes (measured on the H100, `dev/tma4d_probe.py`:
/// starts -8, 0, 8, -16 copy right; -1, 1, 3 fault with an illegal instruction), and a tap's
/// first column `q0 - pad_w + t * dil_w` is anywhere, so the copy lands unswizzled, 144-byte
/// channel rows, and the producer warpgroup shifts each row's 64 pixels into the swizzled B tile.
pub const PLANE_ROW_LANDED_PIXELS: usize = PLANE_BOX_PIXELS + 8;

/// Bytes of the landed copies of a [`Producer::PlaneRows`] stage `bn` columns wide: `bn / 64`
/// copies of [`K_TILE`] channel rows of [`PLANE_ROW_LANDED_PIXELS`] 16-bit pixels.
pub const fn plane_row_landed_bytes(bn: usize) -> usize {
    bn / PLANE_BOX_PIXELS * K_TILE * PLANE_ROW_LANDED_PIXELS * 2
}

/// Bytes of one [`Producer::PlaneRows`] stage `bn` columns wide: the A and B tiles, then the
/// landed copies (a multiple of 1024 bytes for every width of 64).
pub const fn plane_row_stage_bytes(bn: usize) -> usize {
    stage_bytes(BLOCK_M, bn, Math::Half) + plane_row_landed_bytes(bn)
}

/// Bytes of one stage of a warp-specialized ring with tiles `bm x bn` under `math`:
/// [`plane_row_stage_bytes`] where the producer is [`Producer::PlaneRows`] (`rows`), else
/// [`stage_bytes`]. What the kernels lay their ring out by and [`Config::smem_bytes`] counts.
#[inline(always)]
pub const fn ring_stage_bytes(rows: bool, bm: usize, bn: usize, math: Math) -> usize {
    if rows { plane_row_stage_bytes(bn) } else { stage_bytes(bm, bn, math) }
}

/// Threads of a [`Producer::PlaneRows`] producer warpgroup that shift the landed copies into
/// the B tiles: warps 1 and 2, one of a copy's [`K_TILE`] channel rows each (warp 0's first
/// thread issues the copies, running ahead).
pub const PLANE_ROW_SHIFTERS: usize = K_TILE;

/// GEMM columns per output row of the [`Producer::PlaneRows`] kernels: Q rounded up to whole
/// copies of [`PLANE_BOX_PIXELS`], so that each copy's pixels lie in one output row (those past
/// Q are computed from the input row's continuation or its zero fill and never stored).
pub const fn plane_row_pitch(q: usize) -> usize {
    plane_pitch(q)
}

/// GEMM rows of the [`Producer::Planes`] kernels, and per image of the [`Producer::PlaneRows`]
/// kernels, with block tiles `bm` rows high: K rounded up to whole block tiles, so that a
/// tile's rows are output channels (of one image) that one filter box covers (the rows past K
/// are computed from zero-filled filter rows and never stored, and a warpgroup whose rows all
/// lie past K skips its MMAs).
pub const fn plane_rows(k: usize, bm: usize) -> usize {
    k.div_ceil(bm) * bm
}

/// GEMM columns per image of the [`Producer::Planes`] kernels: H*W rounded up to whole copies
/// of [`PLANE_BOX_PIXELS`]. The columns are the images' pixels one image after another, so a
/// block tile may span images while each of its copies lies in one (pixels past H*W arrive as
/// zeros and are never stored). Rounding each image up to whole tiles instead, as these kernels
/// first did, computed 1.31x the pixels of a 28x28 layer in tiles 256 wide and 1.14x in 128.
pub const fn plane_pitch(hw: usize) -> usize {
    hw.div_ceil(PLANE_BOX_PIXELS) * PLANE_BOX_PIXELS
}

/// Channel planes a row of the [`Producer::Planes`] plane map holds, for planes of `hw`
/// 16-bit pixels: TMA steps from row to row in multiples of 16 bytes, so where H*W*2 bytes is
/// not one (14x14 planes), the map's rows are `g` planes end to end (`g * hw` pixels, `g` = 8 /
/// gcd(H*W, 8)). Such a map is valid but no copy reads it: a tiled copy must also start its
/// innermost dimension on 16 bytes, which the second plane of a row does not (the launch died
/// with an illegal instruction, fiftieth session; notes/hopper.md §25 and §35), so the kernels
/// copy those planes by `cp.async` ([`plane_copies_direct`]). 1 where H*W is a multiple of 8.
pub const fn plane_channel_groups(hw: usize) -> usize {
    let mut g = 1;
    while (g * hw) % 8 != 0 {
        g *= 2;
    }
    g
}

/// Whether the [`Producer::Planes`] producer copies the B tiles of planes of `hw` 16-bit pixels
/// by `cp.async` from the input itself (all 128 producer threads, 8- or 4-byte pieces of a
/// channel's pixels, 128 + 1 arrivals a stage) rather than by TMA: H*W not a multiple of 8.
/// The plan takes it for even H*W (`cp.async` copies 4 bytes at least).
pub const fn plane_copies_direct(hw: usize) -> bool {
    hw % 8 != 0
}

/// The GEMM of the [`Producer::Planes`] kernels on `n` images of `hw` pixels, `k` output
/// channels, in block tiles `bm` rows high: rows output channels ([`plane_rows`]), columns
/// every image's pixels ([`plane_pitch`] each). The host sizes the grid by it and the kernels
/// walk it.
pub const fn plane_gemm(n: usize, k: usize, hw: usize, bm: usize) -> (usize, usize) {
    (plane_rows(k, bm), n * plane_pitch(hw))
}

/// Pixels of one [`Producer::PlanePixels`] copy: a 128-byte row of fp32 values.
pub const PLANE_PIXEL_COPY: usize = ROW_BYTES / 4;

/// GEMM rows per image of the [`Producer::PlanePixels`] kernels: H*W rounded up to whole
/// copies ([`PLANE_PIXEL_COPY`]), so that each copy's rows are pixels of one image (the pixels
/// past H*W arrive as zeros and are never stored). A block tile's four copies may come from
/// different images: rounding each image up to whole tiles instead left 60 of 256 rows empty
/// on 14x14 layers (twenty-first session).
pub const fn plane_pixel_rows(hw: usize) -> usize {
    hw.div_ceil(PLANE_PIXEL_COPY) * PLANE_PIXEL_COPY
}

/// How the output tiles are handed to the CTAs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// One CTA per output tile (1-D grid, N tiles fastest).
    Tile,
    /// A persistent grid: fewer CTAs (whole clusters) walk the tiles round-robin, the ring carried
    /// from tile to tile.
    Persistent,
    /// Persistent, each tile's reduction split over the grid's z slices, which meet in a
    /// workspace ([`crate::split_k`]). One more argument after the maps: the workspace.
    SplitK,
    /// Persistent, with the two consumer warpgroups taking alternate tiles of the CTA's
    /// sequence, each a whole tile (128 rows as two m64 blocks, or one of [`WGMMA_M`] rows):
    /// while one runs its epilogue the other's MMAs keep the tensor cores busy (CUTLASS's
    /// ping-pong kernel). The producer fills the ring in the tiles' order, as for
    /// [`Schedule::Persistent`]; each stage is released by the one warpgroup that read it.
    /// Tiles of at most [`PINGPONG_MAX_ACC`] outputs a thread (a thread holds its share of the
    /// whole tile's fp32 accumulators).
    PingPong,
}

/// The most fp32 accumulators a consumer thread holds: 128, as the 128x256 tiles of the
/// two-warpgroup schedules. A ping-pong tile BM x BN holds BM * BN / 128 a thread.
pub const PINGPONG_MAX_ACC: usize = 128;

/// A configuration's policy: what the kernel does, apart from the tile's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Policy {
    /// How the operand tiles reach shared memory.
    pub producer: Producer,
    /// How the output tiles are handed to the CTAs.
    pub schedule: Schedule,
    /// CTAs per cluster, consecutive along M, sharing each filter tile by TMA multicast (compiled
    /// into the entries: `.reqnctapercluster`).
    pub cluster: usize,
    /// What the tensor cores compute, on which data.
    pub math: Math,
    /// Block tile rows: [`BLOCK_M`], or [`WGMMA_M`] (one m64 block a tile: ping-pong only,
    /// where each consumer warpgroup computes a tile alone).
    pub block_m: usize,
}

impl Policy {
    /// The policy's name, the host's kernel name for it; every entry of a configuration with
    /// this policy starts with it. Empty for combinations no configuration compiles.
    pub const fn name(self) -> &'static str {
        if self.block_m != BLOCK_M {
            return match (self.producer, self.schedule, self.cluster, self.math, self.block_m) {
                (Producer::WsTma, Schedule::PingPong, 1, Math::Half, WGMMA_M) => "wgmma_ws_tma_pingpong_m64",
                (Producer::WsTma, Schedule::PingPong, 1, Math::Tf32, WGMMA_M) => "wgmma_ws_tma_pingpong_m64_tf32",
                (Producer::Planes, Schedule::PingPong, 1, Math::Half, WGMMA_M) => "wgmma_nchw1x1_pingpong_m64",
                (Producer::WsTmaNchw, Schedule::PingPong, 1, Math::Half, WGMMA_M) => "wgmma_ws_tma_pingpong_m64_to_nchw",
                _ => "",
            };
        }
        match (self.producer, self.schedule, self.cluster, self.math) {
            (Producer::Multistage, Schedule::Tile, 1, Math::Half) => "wgmma_multistage",
            (Producer::WsCpAsync, Schedule::Tile, 1, Math::Half) => "wgmma_ws_cpasync",
            (Producer::WsCpAsync, Schedule::Tile, 2, Math::Half) => "wgmma_ws_cpasync_cluster2",
            (Producer::WsCpAsync, Schedule::Persistent, 1, Math::Half) => "wgmma_ws_cpasync_persistent",
            (Producer::WsCpAsync, Schedule::Persistent, 2, Math::Half) => "wgmma_ws_cpasync_persistent_cluster2",
            (Producer::WsTma, Schedule::Persistent, 1, Math::Half) => "wgmma_ws_tma_persistent",
            (Producer::WsTma, Schedule::Persistent, 2, Math::Half) => "wgmma_ws_tma_persistent_cluster2",
            (Producer::WsTma, Schedule::SplitK, 1, Math::Half) => "wgmma_ws_tma_splitk",
            (Producer::WsTma, Schedule::PingPong, 1, Math::Half) => "wgmma_ws_tma_pingpong",
            (Producer::WsTma, Schedule::PingPong, 1, Math::Tf32) => "wgmma_ws_tma_pingpong_tf32",
            (Producer::WsTmaNchw, Schedule::Persistent, 1, Math::Half) => "wgmma_ws_tma_persistent_to_nchw",
            (Producer::WsTmaNchw, Schedule::PingPong, 1, Math::Half) => "wgmma_ws_tma_pingpong_to_nchw",
            (Producer::Planes, Schedule::Persistent, 1, Math::Half) => "wgmma_nchw1x1_persistent",
            (Producer::Planes, Schedule::PingPong, 1, Math::Half) => "wgmma_nchw1x1_pingpong",
            (Producer::PlaneRows, Schedule::Persistent, 1, Math::Half) => "wgmma_nchw_rows_persistent",
            (Producer::NchwPatch, Schedule::Persistent, 1, Math::Half) => "wgmma_nchw_patch_persistent",
            (Producer::PlanePixels, Schedule::Persistent, 1, Math::Tf32) => "wgmma_nchw1x1_persistent_tf32",
            (Producer::PlanePixels, Schedule::Persistent, 1, Math::Tf32x3) => "wgmma_nchw1x1_persistent_3xtf32",
            (Producer::WsTma, Schedule::Persistent, 1, Math::Tf32) => "wgmma_ws_tma_persistent_tf32",
            (Producer::WsTma, Schedule::Persistent, 1, Math::Tf32x3) => "wgmma_ws_tma_persistent_3xtf32",
            (Producer::WsTma, Schedule::SplitK, 1, Math::Tf32) => "wgmma_ws_tma_splitk_tf32",
            (Producer::WsTma, Schedule::SplitK, 1, Math::Tf32x3) => "wgmma_ws_tma_splitk_3xtf32",
            _ => "",
        }
    }

    /// Threads per block.
    pub const fn threads(self) -> usize {
        match self.producer {
            Producer::Multistage => 2 * WARPGROUP,
            Producer::WsCpAsync | Producer::WsTma | Producer::WsTmaNchw | Producer::Planes | Producer::PlanePixels | Producer::PlaneRows | Producer::NchwPatch => 3 * WARPGROUP,
        }
    }

    /// Whether a producer warpgroup feeds two consumer warpgroups (`setmaxnreg`, mbarriers).
    pub const fn warp_specialized(self) -> bool {
        !matches!(self.producer, Producer::Multistage)
    }

    /// Whether the kernel takes the filter's tiled TMA map after `y`.
    pub const fn filter_map(self) -> bool {
        self.warp_specialized()
    }

    /// Whether the kernel takes the input's TMA map (im2col, or the tiled map of NCHW planes
    /// of [`Producer::Planes`] and [`Producer::PlanePixels`], or of NCHW rows of
    /// [`Producer::PlaneRows`]) after the filter's.
    pub const fn input_map(self) -> bool {
        matches!(self.producer, Producer::WsTma | Producer::WsTmaNchw | Producer::Planes | Producer::PlanePixels | Producer::PlaneRows | Producer::NchwPatch)
    }

    /// Whether the activations come by im2col TMA copies of NHWC data ([`Producer::WsTma`],
    /// [`Producer::WsTmaNchw`]).
    pub const fn im2col(self) -> bool {
        matches!(self.producer, Producer::WsTma | Producer::WsTmaNchw)
    }

    /// Whether a grid walks the tiles on fewer CTAs than tiles.
    pub const fn persistent(self) -> bool {
        matches!(self.schedule, Schedule::Persistent | Schedule::SplitK | Schedule::PingPong)
    }

    /// Whether each consumer warpgroup computes whole tiles of its own ([`Schedule::PingPong`]).
    pub const fn ping_pong(self) -> bool {
        matches!(self.schedule, Schedule::PingPong)
    }

    /// Whether the kernel takes a workspace and splits the reduction over the grid's z slices.
    pub const fn split_k(self) -> bool {
        matches!(self.schedule, Schedule::SplitK)
    }

    /// Whether the kernel applies the fused epilogue (`crate::epilogue`): the steps with both
    /// tiles by TMA and no cluster, which Auto runs, on every tile width; the earlier steps of
    /// the progression (and the clusters) stay bare, which keeps their PTX as it was. The kernels
    /// decide it by the same rule ([`fuses_epilogue`]).
    pub const fn fuses_epilogue(self) -> bool {
        fuses_epilogue(self.input_map(), self.cluster, matches!(self.producer, Producer::PlanePixels))
    }

    /// Whether an epilogue that does not run on the accumulators in registers
    /// ([`Config::epilogue_in_registers`]; step 17 has no register form) runs in the staged NCHW
    /// store (steps 16 and 17: a lane finishes 8 pixels of one channel as it reads them from the
    /// staging) rather than in a held stage.
    pub const fn epilogue_in_nchw_store(self) -> bool {
        matches!(self.producer, Producer::WsTmaNchw | Producer::NchwPatch)
    }
}

/// The rule of [`Policy::fuses_epilogue`] and [`Config::fuses_epilogue`], which the kernels
/// evaluate on their const parameters too: the input's TMA map and a cluster of 1. (Every tile
/// width fuses since the epilogue works through shared memory; on the registers, the 128x256
/// tiles had none left for its operands and spilled.) Not [`Producer::PlanePixels`]
/// (`pixel_planes`): its output columns are channels a plane apart, where both epilogues read
/// and write 8 contiguous columns. (The NCHW-output steps fuse it in their staged store,
/// [`Policy::epilogue_in_nchw_store`], whose lanes hold 8 pixels of one channel.)
#[inline(always)]
pub const fn fuses_epilogue(input_map: bool, cluster: usize, pixel_planes: bool) -> bool {
    input_map && cluster == 1 && !pixel_planes
}

/// One compiled configuration: a row of [`hopper_configs!`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// What the kernel does.
    pub policy: Policy,
    /// Block tile columns (GEMM N: output channels; an image's pixels under [`Producer::Planes`]).
    pub bn: usize,
    /// k-tiles the shared ring holds.
    pub stages: usize,
    /// The entry points: fp16, then bf16 ([`Math::Half`]); the one fp32 entry otherwise.
    pub entries: &'static [&'static str],
}

/// Bytes of one pipeline stage with tiles `bm x bn` under `math`: `bm` rows of activations and
/// `bn` rows per filter tile, of [`ROW_BYTES`] each.
#[inline(always)]
pub const fn stage_bytes(bm: usize, bn: usize, math: Math) -> usize {
    (bm + math.b_tiles() * bn) * ROW_BYTES
}

/// Bytes the A tile's copy delivers for tiles `bm` rows high: `bm` pixels (or under
/// [`Producer::Planes`] filter rows) of one 128-byte row of channels, zero-filled ones included;
/// part of the full barrier's expected transaction count.
#[inline(always)]
pub const fn a_tile_bytes(bm: usize) -> usize {
    bm * ROW_BYTES
}

/// Bytes a filter copy of `rows` rows delivers (the whole box, zero-filled rows included).
#[inline(always)]
pub const fn b_tile_bytes(rows: usize) -> usize {
    rows * ROW_BYTES
}

impl Config {
    /// Whether its entries apply the fused epilogue: its policy's rule ([`fuses_epilogue`]).
    pub const fn fuses_epilogue(&self) -> bool {
        self.policy.fuses_epilogue()
    }

    /// Threads per block.
    pub const fn threads(&self) -> usize {
        self.policy.threads()
    }

    /// The fp32 accumulators a consumer thread holds: a 64-row block's `bn / 2`, twice that
    /// where a ping-pong warpgroup computes a 128-row tile alone.
    pub const fn accumulators(&self) -> usize {
        thread_accumulators(self.policy.ping_pong(), self.block_m(), self.bn)
    }

    /// Whether its entries apply an epilogue with activation `act` (and a bias where `bias`;
    /// a residual either way) on the accumulators in registers, the kernels' rule
    /// ([`crate::epilogue::in_registers`]); otherwise a fusing entry stages them through shared
    /// memory. Not step 17 ([`Producer::NchwPatch`]), whose consumers store from their staging
    /// alone.
    pub const fn epilogue_in_registers(&self, act: crate::epilogue::Act, bias: bool) -> bool {
        self.fuses_epilogue() && !matches!(self.policy.producer, Producer::NchwPatch) && crate::epilogue::in_registers(act, bias, self.accumulators())
    }

    /// [`Config::epilogue_in_registers`] for an epilogue that adds a residual where `residual`
    /// ([`residual_in_registers`]).
    pub const fn epilogue_in_registers_with(&self, act: crate::epilogue::Act, bias: bool, residual: bool) -> bool {
        self.epilogue_in_registers(act, bias) && (!residual || residual_in_registers(matches!(self.policy.producer, Producer::WsTmaNchw)))
    }

    /// Dynamic shared memory bytes per block: the stages, 1 KiB to align them to 1024, the
    /// barriers of the warp-specialized kernels, and under [`Producer::WsTmaNchw`] the NCHW
    /// stores' staging at the end ([`NCHW_STAGING_BYTES`]).
    pub const fn smem_bytes(&self) -> usize {
        if matches!(self.policy.producer, Producer::NchwPatch) {
            return 1024 + PatchLayout::of(self.bn, self.stages).end + NCHW_STAGING_BYTES;
        }
        let stage = ring_stage_bytes(matches!(self.policy.producer, Producer::PlaneRows), self.block_m(), self.bn, self.policy.math);
        let ring = self.stages * stage + 1024;
        let staging = if matches!(self.policy.producer, Producer::WsTmaNchw) { NCHW_STAGING_BYTES } else { 0 };
        if self.policy.warp_specialized() { ring + BARRIER_BYTES + staging } else { ring }
    }

    /// Output channels per filter copy (the filter map's box rows): the tile's share of one CTA
    /// of its cluster; under [`Producer::Planes`] and [`Producer::PlaneRows`] the filter is the
    /// A tile, [`Config::block_m`] rows.
    pub const fn filter_box_rows(&self) -> usize {
        if matches!(self.policy.producer, Producer::Planes | Producer::PlaneRows) { self.block_m() } else { self.bn / self.policy.cluster }
    }

    /// Block tile rows ([`Policy::block_m`]); with the im2col producer also the input map's
    /// pixels a copy.
    pub const fn block_m(&self) -> usize {
        self.policy.block_m
    }

    /// The entry point for fp16 (`bf16` false) or bf16 data; an fp32 configuration's one entry.
    pub const fn entry(&self, bf16: bool) -> &'static str {
        if bf16 && self.entries.len() > 1 { self.entries[1] } else { self.entries[0] }
    }

    /// Channels per k-tile.
    pub const fn k_tile(&self) -> usize {
        self.policy.math.k_tile()
    }

    /// Whether its entries take a fused residual by TMA (`EpilogueArgs::residual_map`): the
    /// producer copies each tile's residual into shared memory after the tile's k-tiles, and the
    /// register epilogue reads it there. The persistent and ping-pong tiles of 16-bit NHWC data
    /// (steps 7, 10 and 12) whose epilogue runs in registers
    /// ([`crate::epilogue::IN_REGISTERS_MAX_ACC`] a thread), whole 64-channel boxes wide;
    /// [`Config::smem_bytes_with_residual`] fits them all.
    pub const fn takes_residual_map(&self) -> bool {
        let schedule = matches!(self.policy.producer, Producer::WsTma) && matches!(self.policy.schedule, Schedule::Persistent | Schedule::PingPong) && self.policy.cluster == 1;
        takes_residual_map(schedule, matches!(self.policy.math, Math::Half), self.accumulators(), self.bn)
    }

    /// Its residual buffers where it takes the residual by TMA ([`residual_buffers`]).
    pub const fn residual_buffers(&self) -> usize {
        residual_buffers(self.policy.ping_pong(), self.stages * stage_bytes(self.block_m(), self.bn, self.policy.math), self.block_m(), self.bn)
    }

    /// [`Config::smem_bytes`] with the residual region ([`residual_region_bytes`]) after the
    /// stages, for a launch that passes a residual map.
    pub const fn smem_bytes_with_residual(&self) -> usize {
        self.smem_bytes() - BARRIER_BYTES + residual_region_bytes(self.block_m(), self.bn, self.residual_buffers())
    }

    /// Whether its entries take the NCHW residual slots ([`nchw_residual_slot_bytes`]): the
    /// 16-bit [`Producer::WsTmaNchw`] configurations without a split, for an epilogue with a
    /// residual in the staged store.
    pub const fn takes_nchw_slots(&self) -> bool {
        matches!(self.policy.producer, Producer::WsTmaNchw) && matches!(self.policy.math, Math::Half) && !self.policy.split_k()
    }

    /// [`Config::smem_bytes`] with the NCHW residual slots, for a launch with a residual in the
    /// staged store that has the room.
    pub const fn smem_bytes_with_nchw_slots(&self) -> usize {
        self.smem_bytes() + nchw_residual_slot_bytes(self.policy.ping_pong(), self.block_m(), self.bn)
    }

    /// The most registers a thread may have for the block to fit the register file: the
    /// warp-specialized entries carry `.maxntid THREADS` and `.minnctapersm 1` (inserted by the
    /// link step), so ptxas gives each thread at most 65536 / THREADS, rounded down to 8.
    pub const fn register_cap(&self) -> usize {
        65536 / self.threads() / 8 * 8
    }
}

macro_rules! declare_configs {
    ($(($producer:ident, $schedule:ident, $cluster:literal, $bm:literal, $bn:literal, $stages:literal, $fp16:ident, $bf16:ident))*) => {
        /// The 16-bit configurations, in the order of the progression.
        const HALF_CONFIGS: [Config; [$($bn),*].len()] = [$(Config {
            policy: Policy { producer: Producer::$producer, schedule: Schedule::$schedule, cluster: $cluster, math: Math::Half, block_m: $bm },
            bn: $bn,
            stages: $stages,
            entries: &[stringify!($fp16), stringify!($bf16)],
        }),*];
    };
}
crate::hopper_configs!(declare_configs);

macro_rules! declare_f32_configs {
    ($(($math:ident, $producer:ident, $schedule:ident, $cluster:literal, $bm:literal, $bn:literal, $stages:literal, $entry:ident))*) => {
        /// The fp32 configurations, in the order of the progression.
        const F32_CONFIGS: [Config; [$($bn),*].len()] = [$(Config {
            policy: Policy { producer: Producer::$producer, schedule: Schedule::$schedule, cluster: $cluster, math: Math::$math, block_m: $bm },
            bn: $bn,
            stages: $stages,
            entries: &[stringify!($entry)],
        }),*];
    };
}
crate::hopper_f32_configs!(declare_f32_configs);

/// Every compiled configuration, in the order of the progression: the 16-bit ones, then fp32.
pub const CONFIGS: [Config; HALF_CONFIGS.len() + F32_CONFIGS.len()] = {
    let mut all = [HALF_CONFIGS[0]; HALF_CONFIGS.len() + F32_CONFIGS.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = if i < HALF_CONFIGS.len() { HALF_CONFIGS[i] } else { F32_CONFIGS[i - HALF_CONFIGS.len()] };
        i += 1;
    }
    all
};

/// Whether `s` starts with `prefix`, in const code (the table's checks here and the host's).
pub const fn starts_with(s: &str, prefix: &str) -> bool {
    let (s, p) = (s.as_bytes(), prefix.as_bytes());
    if p.len() > s.len() {
        return false;
    }
    let mut i = 0;
    while i < p.len() {
        if s[i] != p[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// What every configuration must satisfy, checked when this crate compiles (so before any
/// kernel or plan is built from a bad row).
const fn check(c: &Config) {
    let p = c.policy;
    assert!(!p.name().is_empty(), "a configuration's policy has no name (Policy::name)");
    let mut e = 0;
    while e < c.entries.len() {
        assert!(starts_with(c.entries[e], p.name()), "an entry is not named after its policy");
        e += 1;
    }
    assert!(c.entries.len() == if matches!(p.math, Math::Half) { 2 } else { 1 }, "16-bit rows have an fp16 and a bf16 entry, fp32 rows one");
    // The fp32 kernels are the im2col TMA producer's or the pixel-row planes'; 3xTF32's two
    // filter copies are not multicast.
    assert!(matches!(p.math, Math::Half) || matches!(p.producer, Producer::WsTma | Producer::PlanePixels), "fp32 rows take the im2col TMA producer or PlanePixels");
    assert!(!matches!(p.math, Math::Tf32x3) || p.cluster == 1, "3xTF32 rows run without clusters");
    assert!(c.smem_bytes() <= MAX_SMEM_BYTES, "a configuration needs more shared memory than sm_90 gives a block");
    assert!(!c.takes_residual_map() || c.smem_bytes_with_residual() <= MAX_SMEM_BYTES, "a configuration that takes the residual by TMA has no room for its buffers");
    assert!(c.stages >= 2 && c.stages <= 8, "2 to 8 stages (the barrier region holds 8)");
    // The accumulator types the kernels implement: m64nBNk16 with BN / 2 registers a thread.
    assert!(c.bn == 32 || c.bn == 64 || c.bn == 128 || c.bn == 256, "BN is 32, 64, 128 or 256");
    assert!(p.cluster == 1 || p.cluster == 2, "clusters of 1 or 2 CTAs");
    // In a cluster each CTA copies whole swizzle patterns (8 rows of 128 bytes) of the filter tile.
    assert!(c.filter_box_rows() % 8 == 0, "a CTA's share of the filter tile is a multiple of 8 rows");
    match p.producer {
        // The ring runs STAGES-2 k-tiles ahead; the copies are 4 threads a row.
        Producer::Multistage => assert!(c.stages >= 3 && c.bn >= 128 && p.cluster == 1 && !p.persistent(), "multistage: 3+ stages, BN >= 128, one CTA per tile"),
        // The 128-thread cp.async producer copies 4 rows a thread; narrow tiles only with TMA.
        Producer::WsCpAsync => assert!(c.bn >= 128, "cp.async producers take tiles 128 or 256 wide"),
        Producer::WsTma => {}
        // The NCHW stores are 16-bit tiles' (the fp32 kernels' pair stores are NHWC).
        Producer::WsTmaNchw => assert!(matches!(p.math, Math::Half) && p.cluster == 1 && !p.split_k(), "NCHW-output im2col producers: 16-bit, no cluster, unsplit"),
        // Each tile is whole plane copies; the filter copy is the A tile (no multicast).
        Producer::PlaneRows => assert!(
            c.bn % PLANE_BOX_PIXELS == 0 && c.bn <= 4 * PLANE_BOX_PIXELS && p.cluster == 1 && matches!(p.math, Math::Half) && !p.split_k() && 3 * 8 * c.stages <= BARRIER_BYTES,
            "row producers: tiles of whole 64-pixel copies (at most 4), no cluster, 16-bit, unsplit, a full, an empty and a landed barrier a stage"
        ),
        // Two patches, two landings and the staging leave room for 4 stages of 128 columns;
        // the ring's barriers and eight more lie in the barrier KiB.
        Producer::NchwPatch => assert!(
            matches!(p.math, Math::Half) && p.cluster == 1 && matches!(p.schedule, Schedule::Persistent) && p.block_m == BLOCK_M && (c.bn == 64 || c.bn == 128) && 8 * (2 * c.stages + 8) <= 1024,
            "patch producers: 16-bit, no cluster, persistent, 128 x 64 or 128 x 128 tiles, the ring's barriers and eight more in the barrier KiB"
        ),
        Producer::Planes => assert!(c.bn % PLANE_BOX_PIXELS == 0 && p.cluster == 1 && matches!(p.math, Math::Half) && !p.split_k(), "plane producers: tiles of whole 64-pixel copies, no cluster, 16-bit, unsplit"),
        // The A tile is whole 32-pixel copies (BLOCK_M of them); fp32 only, persistent, unsplit.
        Producer::PlanePixels => assert!(
            p.cluster == 1 && !matches!(p.math, Math::Half) && matches!(p.schedule, Schedule::Persistent) && p.block_m == BLOCK_M && c.bn >= 64,
            "pixel-row plane producers: fp32, no cluster, persistent, 128-row tiles at least 64 wide"
        ),
    }
    // 64-row tiles are one warpgroup's m64 block: only where each warpgroup has tiles of its own.
    assert!(p.block_m == BLOCK_M || (p.block_m == WGMMA_M && p.ping_pong()), "block tiles of 128 rows, or 64 under ping-pong");
    if p.ping_pong() {
        // NCHW planes on 64-row tiles (step 15) and 128-row ones (step 18).
        let producer = matches!(p.producer, Producer::WsTma | Producer::WsTmaNchw | Producer::Planes);
        assert!(
            p.cluster == 1 && producer && !matches!(p.math, Math::Tf32x3) && p.block_m * c.bn / WARPGROUP <= PINGPONG_MAX_ACC,
            "ping-pong: im2col TMA or NCHW planes, no cluster, not 3xTF32, at most PINGPONG_MAX_ACC accumulators a thread"
        );
    }
    if p.split_k() {
        assert!(p.cluster == 1 && matches!(p.producer, Producer::WsTma) && c.bn <= split_k::MAX_BN, "split-K: im2col TMA, no cluster, BN <= split_k::MAX_BN");
    }
}

const _: () = {
    let mut i = 0;
    while i < CONFIGS.len() {
        check(&CONFIGS[i]);
        let mut j = 0;
        while j < i {
            assert!(!(CONFIGS[i].policy.producer as u8 == CONFIGS[j].policy.producer as u8
                && CONFIGS[i].policy.schedule as u8 == CONFIGS[j].policy.schedule as u8
                && CONFIGS[i].policy.cluster == CONFIGS[j].policy.cluster
                && CONFIGS[i].policy.math as u8 == CONFIGS[j].policy.math as u8
                && CONFIGS[i].policy.block_m == CONFIGS[j].policy.block_m
                && CONFIGS[i].bn == CONFIGS[j].bn), "two configurations with one policy and tile width");
            j += 1;
        }
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_accumulators_and_the_register_epilogue() {
        let find = |e: &str| CONFIGS.iter().find(|c| c.entries[0] == e).unwrap();
        let relu = crate::epilogue::Act::Relu;
        // Step 7: two warpgroups share a 128-row tile, 64 rows each.
        assert_eq!(find("wgmma_ws_tma_persistent_128x256k64").accumulators(), 128);
        assert_eq!(find("wgmma_ws_tma_persistent_128x128k64").accumulators(), 64);
        assert!(find("wgmma_ws_tma_persistent_128x128k64").epilogue_in_registers(relu, true));
        assert!(!find("wgmma_ws_tma_persistent_128x128k64").epilogue_in_registers(relu, false));
        assert!(!find("wgmma_ws_tma_persistent_128x256k64").epilogue_in_registers(relu, true));
        // Ping-pong: a warpgroup's tile is its own, 128 rows as two blocks or one 64-row block.
        assert_eq!(find("wgmma_ws_tma_pingpong_128x128k64").accumulators(), 128);
        assert_eq!(find("wgmma_ws_tma_pingpong_m64_64x128k64").accumulators(), 64);
        assert!(find("wgmma_ws_tma_pingpong_m64_64x128k64").epilogue_in_registers(relu, true));
        assert!(!find("wgmma_ws_tma_pingpong_128x128k64").epilogue_in_registers(relu, true));
        assert!(find("wgmma_ws_tma_pingpong_128x64k64").epilogue_in_registers(relu, true));
        // SiLU stages through shared memory; a cluster does not fuse at all.
        assert!(!find("wgmma_ws_tma_persistent_128x64k64").epilogue_in_registers(crate::epilogue::Act::Silu, true));
        assert!(!find("wgmma_ws_tma_persistent_cluster2_128x128k64").epilogue_in_registers(relu, true));
    }

    #[test]
    fn shared_memory_is_the_stages_the_alignment_and_the_barriers() {
        let ms = CONFIGS.iter().find(|c| c.entries[0] == "wgmma_multistage_128x256k64").unwrap();
        assert_eq!((ms.threads(), ms.smem_bytes()), (256, 4 * 48 * 1024 + 1024));
        let ws = CONFIGS.iter().find(|c| c.entries[0] == "wgmma_ws_cpasync_128x256k64").unwrap();
        assert_eq!((ws.threads(), ws.smem_bytes(), ws.register_cap()), (384, 4 * 48 * 1024 + 1024 + 128, 168));
        assert_eq!(b_tile_bytes(256), 32768);
        // 3xTF32 stages hold two filter tiles: 128 + 2 x 128 rows.
        let x3 = CONFIGS.iter().find(|c| c.entries[0] == "wgmma_ws_tma_persistent_3xtf32_128x128k32").unwrap();
        assert_eq!((x3.smem_bytes(), x3.k_tile()), (4 * 384 * 128 + 1024 + 128, 32));
        assert_eq!(a_tile_bytes(BLOCK_M), 16384);
        // Step 12's 64-row stages: 64 + BN rows.
        let pp = CONFIGS.iter().find(|c| c.entries[0] == "wgmma_ws_tma_pingpong_m64_64x128k64").unwrap();
        assert_eq!((pp.block_m(), pp.smem_bytes(), pp.policy.name()), (64, 8 * 192 * 128 + 1024 + 128, "wgmma_ws_tma_pingpong_m64"));
        // With the residual by TMA: the barriers' KiB, then two 64 x 128 16-bit tiles.
        assert_eq!(pp.smem_bytes_with_residual(), 8 * 192 * 128 + 1024 + 1024 + 2 * 64 * 128 * 2);
    }

    #[test]
    fn the_residual_by_tma_is_the_register_tiles_of_16_bit_nhwc_data() {
        let mut takes = CONFIGS.iter().filter(|c| c.takes_residual_map()).map(|c| (c.entries[0], c.residual_buffers()));
        // Step 7's 128x128 has room for one buffer beside its 6 stages, the others for two.
        for e in [
            ("wgmma_ws_tma_persistent_128x128k64", 1),
            ("wgmma_ws_tma_persistent_128x64k64", 2),
            ("wgmma_ws_tma_pingpong_128x64k64", 2),
            ("wgmma_ws_tma_pingpong_m64_64x128k64", 2),
            ("wgmma_ws_tma_pingpong_m64_64x64k64", 2),
        ] {
            assert_eq!(takes.next(), Some(e));
        }
        assert_eq!(takes.next(), None);
        for c in CONFIGS.iter().filter(|c| c.takes_residual_map()) {
            assert!(c.epilogue_in_registers(crate::epilogue::Act::Relu, true) && c.smem_bytes_with_residual() <= MAX_SMEM_BYTES, "{}", c.entries[0]);
        }
    }

    #[test]
    fn entries_are_unique_and_policies_named() {
        for (i, c) in CONFIGS.iter().enumerate() {
            for &e in c.entries {
                assert!(CONFIGS[..i].iter().all(|o| !o.entries.contains(&e)), "{e} twice");
                assert!(e.starts_with("wgmma_"), "{e}: the host loads entries named wgmma_* from the sm_90a module");
            }
            if c.policy.math == Math::Half {
                assert!(c.entries[1].contains("_bf16_"), "{}", c.entries[1]);
            } else {
                assert!(c.entries[0].ends_with("k32") && c.k_tile() == 32, "{}", c.entries[0]);
            }
        }
        // Clusters share each filter tile: boxes of half the tile.
        let c2 = CONFIGS.iter().find(|c| c.policy.cluster == 2 && c.bn == 128).unwrap();
        assert_eq!(c2.filter_box_rows(), 64);
    }
}
