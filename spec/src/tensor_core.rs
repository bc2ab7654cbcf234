//! Family 3, tensor-core implicit GEMM (`wmma_nhwc`, `wmma_nhwcnc`): the compiled block tiles
//! and the launch each needs.
//!
//! A block is WARPS_M x WARPS_N warps, each an MT x NT grid of m16n8 mma tiles, so the block
//! tile is BM = WARPS_M*MT*16 GEMM rows (output pixels) x BN = WARPS_N*NT*8 columns (output
//! channels); a k-tile is BK = 8*KCH fp16 channels, i.e. KCH 16-byte chunks per shared row.

/// Calls `$callback! { $ctx... (nhwc_entry, nhwcnc_entry, WARPS_M, WARPS_N, MT, NT, STAGES, KCH) ... }`,
/// one row per compiled tile; both layout families compile every tile, in this order.
#[macro_export]
macro_rules! tensor_core_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            // 128x256x64, 8 warps of 64x64, 4 stages (192 KiB): large M and K.
            (wmma_nhwc_128x256k64, wmma_nhwcnc_128x256k64, wmma_nhwc_bf16_128x256k64, wmma_nhwcnc_bf16_128x256k64, 2, 4, 4, 8, 4, 8)
            // 128x128x64, 4 warps of 64x64, 3 stages (96 KiB, 2 blocks per SM).
            (wmma_nhwc_128x128k64, wmma_nhwcnc_128x128k64, wmma_nhwc_bf16_128x128k64, wmma_nhwcnc_bf16_128x128k64, 2, 2, 4, 8, 3, 8)
            // 128x128x32, 4 warps of 64x64, 4 stages (64 KiB): C of at most 32 (mod 64).
            (wmma_nhwc_128x128, wmma_nhwcnc_128x128, wmma_nhwc_bf16_128x128, wmma_nhwcnc_bf16_128x128, 2, 2, 4, 8, 4, 4)
            // 128x64x32, 4 warps of 64x32, 4 stages (48 KiB): K of 64 or less.
            (wmma_nhwc_128x64, wmma_nhwcnc_128x64, wmma_nhwc_bf16_128x64, wmma_nhwcnc_bf16_128x64, 2, 2, 4, 4, 4, 4)
            // 64x64x32, 4 warps of 32x32, 4 stages (32 KiB): grids that would not fill the GPU.
            (wmma_nhwc_64x64, wmma_nhwcnc_64x64, wmma_nhwc_bf16_64x64, wmma_nhwcnc_bf16_64x64, 2, 2, 2, 4, 4, 4)
        }
    };
}

/// One compiled tile: `conv::<_, WARPS_M, WARPS_N, MT, NT, STAGES, KCH>` of both layouts, with
/// the sizes derived from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// The `wmma_nhwc` (plain channels-last) entry point.
    pub nhwc: &'static str,
    /// The `wmma_nhwcnc` (blocked NHWC16n16c) entry point.
    pub nhwcnc: &'static str,
    /// The `wmma_nhwc` entry on bf16 data (the `mma.sync` bf16 form; all else the same).
    pub nhwc_bf16: &'static str,
    /// The `wmma_nhwcnc` entry on bf16 data.
    pub nhwcnc_bf16: &'static str,
    /// Warps along M.
    pub warps_m: usize,
    /// Warps along N.
    pub warps_n: usize,
    /// m16 tiles per warp along M.
    pub mt: usize,
    /// n8 tiles per warp along N.
    pub nt: usize,
    /// k-tiles in flight.
    pub stages: usize,
    /// 16-byte chunks per shared row (BK / 8).
    pub kch: usize,
    /// Block tile rows, [`block_m`].
    pub bm: usize,
    /// Block tile columns, [`block_n`].
    pub bn: usize,
    /// Channels per k-tile, [`k_tile`].
    pub bk: usize,
    /// Threads per block, [`threads`].
    pub threads: usize,
}

impl Tile {
    #[allow(clippy::too_many_arguments)]
    const fn new(names: [&'static str; 4], warps_m: usize, warps_n: usize, mt: usize, nt: usize, stages: usize, kch: usize) -> Tile {
        let (bm, bn) = (block_m(warps_m, mt), block_n(warps_n, nt));
        let [nhwc, nhwcnc, nhwc_bf16, nhwcnc_bf16] = names;
        Tile { nhwc, nhwcnc, nhwc_bf16, nhwcnc_bf16, warps_m, warps_n, mt, nt, stages, kch, bm, bn, bk: k_tile(kch), threads: threads(warps_m, warps_n) }
    }
    /// Dynamic shared memory bytes per block.
    pub const fn smem_bytes(&self) -> usize {
        smem_bytes(self.bm, self.bn, self.kch, self.stages)
    }
}

macro_rules! declare_tiles {
    ($(($nhwc:ident, $nhwcnc:ident, $nhwc_bf16:ident, $nhwcnc_bf16:ident, $wm:literal, $wn:literal, $mt:literal, $nt:literal, $stages:literal, $kch:literal))*) => {
        /// Every compiled tile, in the kernels' declaration order.
        pub const TILES: [Tile; [$($wm),*].len()] =
            [$(Tile::new([stringify!($nhwc), stringify!($nhwcnc), stringify!($nhwc_bf16), stringify!($nhwcnc_bf16)], $wm, $wn, $mt, $nt, $stages, $kch)),*];
    };
}
crate::tensor_core_tiles!(declare_tiles);

/// Calls `$callback! { $ctx... (entry, MATH, WARPS_M, WARPS_N, MT, NT, STAGES, KCH) ... }`, one
/// row per compiled fp32 tile: the same kernel on fp32 NHWC data with `mma.sync` m16n8k8 tf32,
/// MATH one of [`crate::hopper::Math`]'s fp32 variants (`Tf32`: `wmma_nhwc_tf32_*`; `Tf32x3`:
/// `wmma_nhwc_3xtf32_*`). A 16-byte chunk holds 4 fp32 channels, so a k-tile is BK = 4*KCH
/// ([`k_tile_f32`]); the shared bytes per stage are the 16-bit tiles' ([`stage_bytes`]). 3xTF32
/// keeps a k-tile's partial sums and both halves of each fragment in registers: 64x32 and 32x32
/// warp tiles only.
#[macro_export]
macro_rules! tensor_core_f32_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            // 128x256x32, 8 warps of 64x64, 4 stages (192 KiB): large M and K.
            (wmma_nhwc_tf32_128x256k32, Tf32, 2, 4, 4, 8, 4, 8)
            // 128x128x32, 4 warps of 64x64, 3 stages (96 KiB, 2 blocks per SM).
            (wmma_nhwc_tf32_128x128k32, Tf32, 2, 2, 4, 8, 3, 8)
            // 128x64x16, 4 warps of 64x32, 4 stages (48 KiB): K of 64 or less.
            (wmma_nhwc_tf32_128x64, Tf32, 2, 2, 4, 4, 4, 4)
            // 64x64x16, 4 warps of 32x32, 4 stages (32 KiB): grids that would not fill the GPU.
            (wmma_nhwc_tf32_64x64, Tf32, 2, 2, 2, 4, 4, 4)
            // 3xTF32: 128x64x32, 4 warps of 64x32, 3 stages (72 KiB).
            (wmma_nhwc_3xtf32_128x64k32, Tf32x3, 2, 2, 4, 4, 3, 8)
            // 3xTF32: 64x64x16, 4 warps of 32x32, 4 stages (32 KiB).
            (wmma_nhwc_3xtf32_64x64, Tf32x3, 2, 2, 2, 4, 4, 4)
        }
    };
}

/// One compiled fp32 tile (`tensor_core_f32_tiles!`): its entry, math and sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct F32Tile {
    /// The entry point.
    pub name: &'static str,
    /// [`crate::hopper::Math::Tf32`] or [`crate::hopper::Math::Tf32x3`].
    pub math: crate::hopper::Math,
    /// Warps along M.
    pub warps_m: usize,
    /// Warps along N.
    pub warps_n: usize,
    /// m16 tiles per warp along M.
    pub mt: usize,
    /// n8 tiles per warp along N.
    pub nt: usize,
    /// k-tiles in flight.
    pub stages: usize,
    /// 16-byte chunks per shared row (BK / 4).
    pub kch: usize,
    /// Block tile rows, [`block_m`].
    pub bm: usize,
    /// Block tile columns, [`block_n`].
    pub bn: usize,
    /// Channels per k-tile, [`k_tile_f32`].
    pub bk: usize,
    /// Threads per block, [`threads`].
    pub threads: usize,
}

impl F32Tile {
    #[allow(clippy::too_many_arguments)]
    const fn new(name: &'static str, math: crate::hopper::Math, warps_m: usize, warps_n: usize, mt: usize, nt: usize, stages: usize, kch: usize) -> F32Tile {
        let (bm, bn) = (block_m(warps_m, mt), block_n(warps_n, nt));
        F32Tile { name, math, warps_m, warps_n, mt, nt, stages, kch, bm, bn, bk: k_tile_f32(kch), threads: threads(warps_m, warps_n) }
    }
    /// Dynamic shared memory bytes per block.
    pub const fn smem_bytes(&self) -> usize {
        smem_bytes(self.bm, self.bn, self.kch, self.stages)
    }
}

macro_rules! declare_f32_tiles {
    ($(($name:ident, $math:ident, $wm:literal, $wn:literal, $mt:literal, $nt:literal, $stages:literal, $kch:literal))*) => {
        /// Every compiled fp32 tile, in the kernels' declaration order.
        pub const F32_TILES: [F32Tile; [$($wm),*].len()] =
            [$(F32Tile::new(stringify!($name), crate::hopper::Math::$math, $wm, $wn, $mt, $nt, $stages, $kch)),*];
    };
}
crate::tensor_core_f32_tiles!(declare_f32_tiles);

/// Channels per k-tile of the fp32 entries: KCH 16-byte chunks of 4 fp32 each.
#[inline(always)]
pub const fn k_tile_f32(kch: usize) -> usize {
    4 * kch
}

/// Threads per block: one warp per warp tile.
#[inline(always)]
pub const fn threads(warps_m: usize, warps_n: usize) -> usize {
    32 * warps_m * warps_n
}

/// Block tile rows (GEMM M): MT m16 tiles per warp.
#[inline(always)]
pub const fn block_m(warps_m: usize, mt: usize) -> usize {
    warps_m * mt * 16
}

/// Block tile columns (GEMM N): NT n8 tiles per warp.
#[inline(always)]
pub const fn block_n(warps_n: usize, nt: usize) -> usize {
    warps_n * nt * 8
}

/// Channels per k-tile: KCH 16-byte chunks of 8 fp16 each.
#[inline(always)]
pub const fn k_tile(kch: usize) -> usize {
    8 * kch
}

/// Bytes of one pipeline stage: BM + BN shared rows of KCH 16-byte chunks.
#[inline(always)]
pub const fn stage_bytes(bm: usize, bn: usize, kch: usize) -> usize {
    (bm + bn) * 16 * kch
}

/// Dynamic shared memory bytes per block: `stages` stages.
#[inline(always)]
pub const fn smem_bytes(bm: usize, bn: usize, kch: usize, stages: usize) -> usize {
    stages * stage_bytes(bm, bn, kch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_sizes() {
        let sizes = TILES.map(|t| (t.bm, t.bn, t.bk, t.threads, t.stages, t.smem_bytes()));
        assert_eq!(
            sizes,
            [
                (128, 256, 64, 256, 4, 192 * 1024),
                (128, 128, 64, 128, 3, 96 * 1024),
                (128, 128, 32, 128, 4, 64 * 1024),
                (128, 64, 32, 128, 4, 48 * 1024),
                (64, 64, 32, 128, 4, 32 * 1024),
            ]
        );
        assert_eq!((TILES[4].nhwc, TILES[4].nhwcnc), ("wmma_nhwc_64x64", "wmma_nhwcnc_64x64"));
        assert_eq!((TILES[4].nhwc_bf16, TILES[4].nhwcnc_bf16), ("wmma_nhwc_bf16_64x64", "wmma_nhwcnc_bf16_64x64"));
    }

    #[test]
    fn f32_tile_sizes() {
        use crate::hopper::Math;
        let sizes = F32_TILES.map(|t| (t.math, t.bm, t.bn, t.bk, t.threads, t.smem_bytes()));
        assert_eq!(
            sizes,
            [
                (Math::Tf32, 128, 256, 32, 256, 192 * 1024),
                (Math::Tf32, 128, 128, 32, 128, 96 * 1024),
                (Math::Tf32, 128, 64, 16, 128, 48 * 1024),
                (Math::Tf32, 64, 64, 16, 128, 32 * 1024),
                (Math::Tf32x3, 128, 64, 32, 128, 72 * 1024),
                (Math::Tf32x3, 64, 64, 16, 128, 32 * 1024),
            ]
        );
        assert_eq!(F32_TILES[5].name, "wmma_nhwc_3xtf32_64x64");
    }
}
