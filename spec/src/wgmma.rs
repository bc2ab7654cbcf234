//! Family 3 on Hopper (`wgmma_nhwc`, sm_90a PTX only): the compiled block tiles and the launch
//! each needs.
//!
//! A block is 2 warpgroups (256 threads); warpgroup g computes GEMM rows 64g..64g+64 of the
//! 128-row block tile and all its BN columns with `wgmma.mma_async` m64nBNk16. A k-tile is 64
//! channels; every stage holds the A tile (128 rows of 128 bytes) and the B tile (BN rows),
//! each on a 1024-byte boundary, which the kernel finds by aligning the dynamic shared memory's
//! start up: the launch asks for 1 KiB more than the stages.

/// Calls `$callback! { $ctx... (fp16_entry, bf16_entry, BN, STAGES) ... }`, one row per
/// compiled tile.
#[macro_export]
macro_rules! wgmma_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            // 128x256x64, 128 fp32 accumulators a thread, 4 stages (4 x 48 KiB).
            (wgmma_nhwc_128x256k64, wgmma_nhwc_bf16_128x256k64, 256, 4)
            // 128x128x64, 64 accumulators a thread, 5 stages (5 x 32 KiB).
            (wgmma_nhwc_128x128k64, wgmma_nhwc_bf16_128x128k64, 128, 5)
        }
    };
}

/// Block tile rows (GEMM M): two warpgroups of m64.
pub const BLOCK_M: usize = 128;
/// Channels per k-tile: one 128-byte swizzle row of fp16.
pub const K_TILE: usize = 64;
/// Threads per block: two warpgroups.
pub const THREADS: usize = 256;

/// Bytes of one pipeline stage: BLOCK_M + `bn` rows of 128 bytes.
#[inline(always)]
pub const fn stage_bytes(bn: usize) -> usize {
    (BLOCK_M + bn) * 2 * K_TILE
}

/// Dynamic shared memory bytes per block: `stages` stages plus 1 KiB to align them to 1024.
#[inline(always)]
pub const fn smem_bytes(bn: usize, stages: usize) -> usize {
    stages * stage_bytes(bn) + 1024
}

/// One compiled tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// The fp16 entry point.
    pub fp16: &'static str,
    /// The bf16 entry point.
    pub bf16: &'static str,
    /// Block tile columns (GEMM N = output channels).
    pub bn: usize,
    /// k-tiles the shared ring holds (STAGES - 2 are copied ahead of the one computed).
    pub stages: usize,
}

impl Tile {
    /// Dynamic shared memory bytes per block.
    pub const fn smem_bytes(&self) -> usize {
        smem_bytes(self.bn, self.stages)
    }
}

/// Declares `$name`, a table of [`Tile`]s, from a tile list (`wgmma_tiles!`, `wgmma_ws_tiles!`).
macro_rules! declare_tiles {
    ($name:ident $doc:literal $(($fp16:ident, $bf16:ident, $bn:literal, $stages:literal))*) => {
        #[doc = $doc]
        pub const $name: [Tile; [$($bn),*].len()] = [$(Tile { fp16: stringify!($fp16), bf16: stringify!($bf16), bn: $bn, stages: $stages }),*];
    };
}
crate::wgmma_tiles!(declare_tiles, TILES, "Every compiled tile, in the kernels' declaration order.");

/// The warp-specialized step (the host's `wgmma_ws_nhwc`): calls `$callback! { $ctx... (fp16_entry,
/// bf16_entry, BN, STAGES) ... }`, one row per compiled tile of the warp-specialized kernel
/// `wgmma_ws_nhwc_*` (kernels-gpu/src/tensor_core/wgmma_ws.rs). Its arguments are `wgmma_nhwc`'s with
/// one more pointer after `y`: the filter's TMA tensor map (128 bytes in global memory).
#[macro_export]
macro_rules! wgmma_ws_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            // 128x256x64, 4 stages (4 x 48 KiB), the producer a full ring ahead.
            (wgmma_ws_nhwc_128x256k64, wgmma_ws_nhwc_bf16_128x256k64, 256, 4)
            // 128x128x64, 6 stages (6 x 32 KiB).
            (wgmma_ws_nhwc_128x128k64, wgmma_ws_nhwc_bf16_128x128k64, 128, 6)
        }
    };
}

/// Threads per block of the warp-specialized kernel: warpgroup 0 moves data, warpgroups 1 and 2
/// run wgmma (rows 0..64 and 64..128 of the block tile).
pub const WS_THREADS: usize = 384;

/// Dynamic shared memory bytes per block of the warp-specialized kernel: `stages` stages, 1 KiB
/// to align them to 1024, and 128 bytes for the full and empty mbarriers (8 bytes each, 2 a
/// stage, at most 8 stages) after the stages.
#[inline(always)]
pub const fn ws_smem_bytes(bn: usize, stages: usize) -> usize {
    stages * stage_bytes(bn) + 1024 + 128
}

/// Bytes the filter TMA delivers per stage: BN rows of 64 16-bit channels (the whole box,
/// zero-filled parts included), the full barrier's expected transaction count.
#[inline(always)]
pub const fn ws_b_bytes(bn: usize) -> usize {
    bn * 2 * K_TILE
}

crate::wgmma_ws_tiles!(declare_tiles, WS_TILES, "Every compiled warp-specialized tile, in the kernels' declaration order.");

/// Step 5 (the host's `wgmma_mc_nhwc`): the warp-specialized kernel launched in clusters of
/// [`MC_CLUSTER`] CTAs along M that share the filter tile: each CTA's producer copies
/// BN / MC_CLUSTER of its rows and the TMA multicasts them into every CTA of the cluster, so the
/// filter crosses L2 once per cluster instead of once per CTA. Calls `$callback! { $ctx...
/// (fp16_entry, bf16_entry, BN, STAGES) ... }` as [`wgmma_ws_tiles!`] does; same arguments (the
/// filter map's box has BN / MC_CLUSTER rows).
#[macro_export]
macro_rules! wgmma_mc_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (wgmma_mc_nhwc_128x256k64, wgmma_mc_nhwc_bf16_128x256k64, 256, 4)
            (wgmma_mc_nhwc_128x128k64, wgmma_mc_nhwc_bf16_128x128k64, 128, 6)
        }
    };
}

/// CTAs per cluster of step 5 (`wgmma_mc_tiles!`): consecutive blocks, the same N tile,
/// consecutive M tiles. Compiled into the entries (`.reqnctapercluster`), so the grid is a
/// multiple of it.
pub const MC_CLUSTER: usize = 2;

crate::wgmma_mc_tiles!(declare_tiles, MC_TILES, "Every compiled tile of step 5, in the kernels' declaration order.");

/// Step 6 (the host's `wgmma_pws_nhwc`): step 4 on a persistent grid (one CTA per SM walks the
/// output tiles round-robin; the producer fills the next tile's stages while the consumers
/// write the last one). Same arguments; launch `min(tiles, SMs)` blocks.
#[macro_export]
macro_rules! wgmma_pws_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (wgmma_pws_nhwc_128x256k64, wgmma_pws_nhwc_bf16_128x256k64, 256, 4)
            (wgmma_pws_nhwc_128x128k64, wgmma_pws_nhwc_bf16_128x128k64, 128, 6)
        }
    };
}
crate::wgmma_pws_tiles!(declare_tiles, PWS_TILES, "Every compiled tile of step 6, in the kernels' declaration order.");

/// Step 6 with step 5's clusters (the host's `wgmma_pmc_nhwc`): persistent, in clusters of
/// [`MC_CLUSTER`] sharing each filter tile by multicast.
#[macro_export]
macro_rules! wgmma_pmc_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (wgmma_pmc_nhwc_128x256k64, wgmma_pmc_nhwc_bf16_128x256k64, 256, 4)
            (wgmma_pmc_nhwc_128x128k64, wgmma_pmc_nhwc_bf16_128x128k64, 128, 6)
        }
    };
}
crate::wgmma_pmc_tiles!(declare_tiles, PMC_TILES, "Every compiled tile of step 6 in clusters, in the kernels' declaration order.");

/// Step 7 (the host's `wgmma_tma_nhwc`): step 6 with the activations brought in by the tensor
/// memory accelerator too, in im2col mode: one `cp.async.bulk.tensor` per k-tile copies the
/// tile's 128 im2col rows (64 channels of one filter tap each, the padding zero-filled), so one
/// producer thread does all the copying. Arguments: step 4's with one more pointer after the
/// filter's map: the input's im2col tensor map ([`WS_A_BYTES`] per copy). Launch as step 6.
#[macro_export]
macro_rules! wgmma_tma_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (wgmma_tma_nhwc_128x256k64, wgmma_tma_nhwc_bf16_128x256k64, 256, 4)
            (wgmma_tma_nhwc_128x128k64, wgmma_tma_nhwc_bf16_128x128k64, 128, 6)
            // 128x64x64 for K <= 64 (the wider tiles would compute columns past K), 8 stages
            // (8 x 24 KiB).
            (wgmma_tma_nhwc_128x64k64, wgmma_tma_nhwc_bf16_128x64k64, 64, 8)
            // 128x32x64 for K <= 32: the filter copy is half as large again (no rows zero-filled
            // past K), 8 stages (8 x 20 KiB).
            (wgmma_tma_nhwc_128x32k64, wgmma_tma_nhwc_bf16_128x32k64, 32, 8)
        }
    };
}
crate::wgmma_tma_tiles!(declare_tiles, TMA_TILES, "Every compiled tile of step 7, in the kernels' declaration order.");

/// Step 7 in step 5's clusters (the host's `wgmma_tmc_nhwc`): persistent, im2col copies, the
/// filter tile shared by multicast.
#[macro_export]
macro_rules! wgmma_tmc_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (wgmma_tmc_nhwc_128x256k64, wgmma_tmc_nhwc_bf16_128x256k64, 256, 4)
            (wgmma_tmc_nhwc_128x128k64, wgmma_tmc_nhwc_bf16_128x128k64, 128, 6)
        }
    };
}
crate::wgmma_tmc_tiles!(declare_tiles, TMC_TILES, "Every compiled tile of step 7 in clusters, in the kernels' declaration order.");

/// Bytes one im2col copy of step 7 delivers: BLOCK_M pixels of 64 16-bit channels (zero-filled
/// ones included), part of the full barrier's expected transaction count.
pub const WS_A_BYTES: usize = BLOCK_M * 2 * K_TILE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_sizes() {
        assert_eq!(TILES.map(|t| (t.bn, t.stages, t.smem_bytes())), [(256, 4, 4 * 48 * 1024 + 1024), (128, 5, 5 * 32 * 1024 + 1024)]);
        // Within sm_90's 227 KiB of dynamic shared memory per block.
        assert!(TILES.iter().all(|t| t.smem_bytes() <= 232448));
    }

    #[test]
    fn ws_tile_sizes() {
        assert!(WS_TILES.iter().all(|t| ws_smem_bytes(t.bn, t.stages) <= 232448 && t.stages <= 8 && t.bn <= 256));
        assert_eq!(ws_b_bytes(256), 32768);
        // Each CTA's share of the filter tile is whole swizzle patterns (8 rows of 128 bytes).
        assert!(MC_TILES.iter().all(|t| t.bn % (8 * MC_CLUSTER) == 0 && ws_smem_bytes(t.bn, t.stages) <= 232448));
        assert!(TMA_TILES.iter().chain(&TMC_TILES).all(|t| ws_smem_bytes(t.bn, t.stages) <= 232448 && t.stages <= 8));
    }
}
