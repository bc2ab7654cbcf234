//! Family 3 for few input channels, staged through shared memory (`wmma_patch`, fp16 and bf16;
//! sm_80 and sm_90 PTX): `wmma_smallc`'s reduction over (r, s, c) together, with the input
//! patch an output tile reads copied into shared memory once, so the tensor cores' A fragments
//! are gathered from shared memory through a table of tap offsets instead of from global memory.
//!
//! A block is 4 warps (128 threads) and owns one output-channel tile of BN columns; it walks
//! output tiles of [`BLOCK_M`] pixels, `tp x tq` of one image ([`Geometry`]), persistently, so
//! its filter tile and offset table are loaded once. Warp w computes tile rows 32w..32w+32.
//! Shared memory, in this order (byte offsets from [`Geometry`]):
//!
//! ```text
//! filter  BN rows (output channels) x kpad 16-bit values, rows of filter_pitch bytes
//! table   kpad u32: byte offset of reduction index kr's tap in the patch (0 past R*S*C)
//! patch   ph rows x pw pixels x C values: the input under the output tile (zeros outside the image)
//!         ... reused, once the tile's MMAs are done, as the output tile on its way to the
//!         coalesced stores: BLOCK_M rows x BN values of up to 4 bytes, rows of stage_pitch bytes
//! ```

use crate::ConvShape;

/// Calls `$callback! { $ctx... (fp16_entry, bf16_entry, fp16_c8_entry, bf16_c8_entry,
/// fp16_nchw_entry, bf16_nchw_entry, BN) ... }`, one row per compiled tile; the `c8` entries
/// copy in 16-byte units and take C multiples of 8 only, the others copy value by value and take
/// any C. The `nchw` entries read NCHW input and a KCRS filter and write NCHW output
/// (`wmma_patch_nchw`), copying value by value.
#[macro_export]
macro_rules! patch_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            // K <= 32 (speech front ends: K = 16, 32).
            (wmma_patch_128x32, wmma_patch_bf16_128x32, wmma_patch_128x32c8, wmma_patch_bf16_128x32c8, wmma_patch_nchw_128x32, wmma_patch_nchw_bf16_128x32, 32)
            // K = 64 (image networks' first layers) and above.
            (wmma_patch_128x64, wmma_patch_bf16_128x64, wmma_patch_128x64c8, wmma_patch_bf16_128x64c8, wmma_patch_nchw_128x64, wmma_patch_nchw_bf16_128x64, 64)
        }
    };
}

/// Output pixels per tile (GEMM rows): 4 warps of 32.
pub const BLOCK_M: usize = 128;
/// Threads per block.
pub const THREADS: usize = 128;
/// Reduction elements per `mma.sync` k-step.
pub const K_STEP: usize = 16;
/// The widest output tile row: a tile is `tq` pixels of `tp` output rows, `tp * tq` = [`BLOCK_M`].
pub const MAX_TQ: i32 = 128;
/// The narrowest output tile row.
pub const MIN_TQ: i32 = 8;
/// Blocks each tile's entries are built to fit on an SM at once (`.minnctapersm`, which caps
/// their registers), in the order of [`TILES`]: the kernel waits on its copies, and resident
/// blocks hide that; ptxas would otherwise take 127 registers for the 128x32 tile (4 blocks).
pub const MIN_BLOCKS: [u32; 2] = [5, 4];

/// One compiled tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// The fp16 entry point (any C).
    pub fp16: &'static str,
    /// The bf16 entry point (any C).
    pub bf16: &'static str,
    /// The fp16 entry point for C a multiple of 8.
    pub fp16_c8: &'static str,
    /// The bf16 entry point for C a multiple of 8.
    pub bf16_c8: &'static str,
    /// The fp16 entry point on NCHW data (any C).
    pub fp16_nchw: &'static str,
    /// The bf16 entry point on NCHW data (any C).
    pub bf16_nchw: &'static str,
    /// Block tile columns (GEMM N = output channels).
    pub bn: usize,
}

macro_rules! declare {
    ($(($fp16:ident, $bf16:ident, $fp16_c8:ident, $bf16_c8:ident, $fp16_nchw:ident, $bf16_nchw:ident, $bn:literal))*) => {
        /// Every compiled tile, in the kernels' declaration order.
        pub const TILES: [Tile; [$($bn),*].len()] = [$(Tile {
            fp16: stringify!($fp16),
            bf16: stringify!($bf16),
            fp16_c8: stringify!($fp16_c8),
            bf16_c8: stringify!($bf16_c8),
            fp16_nchw: stringify!($fp16_nchw),
            bf16_nchw: stringify!($bf16_nchw),
            bn: $bn,
        }),*];
    };
}

impl Tile {
    /// The entry for `c` input channels of bf16 data (or fp16).
    pub const fn entry(&self, bf16: bool, c: usize) -> &'static str {
        match (bf16, c % 8 == 0) {
            (false, false) => self.fp16,
            (true, false) => self.bf16,
            (false, true) => self.fp16_c8,
            (true, true) => self.bf16_c8,
        }
    }

    /// All six entry points of the tile (what the host lists and the linker bounds).
    pub const fn entries(&self) -> [&'static str; 6] {
        [self.fp16, self.bf16, self.fp16_c8, self.bf16_c8, self.fp16_nchw, self.bf16_nchw]
    }

    /// The entry on NCHW data (KCRS filter, NCHW output) for bf16 data (or fp16).
    pub const fn entry_nchw(&self, bf16: bool) -> &'static str {
        if bf16 {
            self.bf16_nchw
        } else {
            self.fp16_nchw
        }
    }
}
crate::patch_tiles!(declare);

/// Where a problem's tiles, patch and shared regions lie; the kernel and the host both derive it
/// from the shape with [`Geometry::of`], so neither keeps the other's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Output pixels per tile row (a power of two, [`MIN_TQ`]..=[`MAX_TQ`]).
    pub tq: i32,
    /// Output rows per tile, `BLOCK_M / tq`.
    pub tp: i32,
    /// Input rows and pixels per row of the patch under one tile.
    pub ph: i32,
    /// See `ph`.
    pub pw: i32,
    /// R*S*C rounded up to [`K_STEP`].
    pub kpad: i32,
    /// Tiles along Q and P of one image, and all output tiles (N of each).
    pub tiles_q: i32,
    /// See `tiles_q`.
    pub tiles_p: i32,
    /// See `tiles_q`.
    pub tiles: i32,
}

impl Geometry {
    /// The geometry of `sh`, whose extents are positive and whose products fit in `i32` (the
    /// host validates both before it plans). Tiles are `tq` pixels wide, a power of two up to
    /// [`MAX_TQ`]: at stride 1 the narrowest that holds a whole output row; strided, the width
    /// with the fewest tiles (the least output computed past the edges), then the smallest
    /// patch, then the widest. A strided one-row tile copies a patch `stride` times its width
    /// for every window row (7x7 stride 2: 7 x 261 pixels for 128 outputs; 16 x 8 tiles copy
/// 21 x 37), and measured slower. At stride 1 the same rule measured faster at C = 1 and
/// slower at C = 3, so it is not used there (BENCHMARKS.md, seventh session).
    pub const fn of(sh: &ConvShape) -> Geometry {
        // The narrowest power of two that holds a whole output row, within MIN_TQ..=MAX_TQ.
        let mut row = MIN_TQ;
        while row < MAX_TQ && row < sh.q {
            row *= 2;
        }
        if sh.stride_h == 1 && sh.stride_w == 1 {
            return Geometry::with(sh, row);
        }
        let (mut best, mut least) = (MAX_TQ, Geometry::cost(sh, MAX_TQ));
        let mut tq = MAX_TQ / 2;
        while tq >= MIN_TQ {
            let c = Geometry::cost(sh, tq);
            if c.0 < least.0 || (c.0 == least.0 && c.1 < least.1) {
                (best, least) = (tq, c);
            }
            tq /= 2;
        }
        Geometry::with(sh, best)
    }

    /// (Tiles per image, patch pixels) with tiles `tq` pixels wide: what [`Geometry::of`]
    /// compares, without the rest of the geometry (fewer live values in the kernel).
    const fn cost(sh: &ConvShape, tq: i32) -> (i32, i32) {
        let tp = BLOCK_M as i32 / tq;
        let tiles = ((sh.q + tq - 1) / tq) * ((sh.p + tp - 1) / tp);
        (tiles, ((tp - 1) * sh.stride_h + (sh.r - 1) * sh.dil_h + 1) * ((tq - 1) * sh.stride_w + (sh.s - 1) * sh.dil_w + 1))
    }

    /// The geometry of `sh` with tiles `tq` pixels wide.
    const fn with(sh: &ConvShape, tq: i32) -> Geometry {
        let tp = BLOCK_M as i32 / tq;
        let (tiles_q, tiles_p) = ((sh.q + tq - 1) / tq, (sh.p + tp - 1) / tp);
        Geometry {
            tq,
            tp,
            ph: (tp - 1) * sh.stride_h + (sh.r - 1) * sh.dil_h + 1,
            pw: (tq - 1) * sh.stride_w + (sh.s - 1) * sh.dil_w + 1,
            kpad: (sh.r * sh.s * sh.c + K_STEP as i32 - 1) / K_STEP as i32 * K_STEP as i32,
            tiles_q,
            tiles_p,
            tiles: sh.n * tiles_p * tiles_q,
        }
    }

    /// Tile row `m`'s place in the tile: output row `m / tq` and column `m % tq` (a shift and a
    /// mask: tq is a power of two).
    pub const fn row_col(&self, m: u32) -> (u32, u32) {
        (m >> self.tq.trailing_zeros(), m & (self.tq as u32 - 1))
    }

    /// Bytes per shared filter row: kpad 16-bit values and 16 bytes more, so the 8 rows an
    /// `ldmatrix` phase reads start in 8 distinct 16-byte bank groups (kpad/8 is even).
    pub const fn filter_pitch(&self) -> u32 {
        2 * self.kpad as u32 + 16
    }

    /// Byte offset of the offset table.
    pub const fn table_at(&self, bn: usize) -> u32 {
        bn as u32 * self.filter_pitch()
    }

    /// Byte offset of the patch.
    pub const fn patch_at(&self, bn: usize) -> u32 {
        self.table_at(bn) + 4 * self.kpad as u32
    }

    /// 16-bit values in the patch.
    pub const fn patch_len(&self, c: i32) -> u32 {
        (self.ph * self.pw * c) as u32
    }

    /// Dynamic shared memory bytes of the launch: up to the patch, then the larger of the patch
    /// and the staged output tile (sized for fp32, the widest output), which share the region.
    pub const fn smem_bytes(&self, bn: usize, c: i32) -> u32 {
        let patch = (2 * self.patch_len(c)).div_ceil(16) * 16;
        let stage = BLOCK_M as u32 * stage_pitch(bn, 4);
        self.patch_at(bn) + if patch > stage { patch } else { stage }
    }
}

/// Bytes per row of the staged output tile for `out_bytes`-byte outputs: BN values and 16 bytes
/// more, so a quad's 8 rows of fragment stores fall in distinct banks.
pub const fn stage_pitch(bn: usize, out_bytes: u32) -> u32 {
    bn as u32 * out_bytes + 16
}

/// Bytes per row of the NCHW entries' staged output tile, which is transposed (a row per output
/// channel, its [`BLOCK_M`] pixels contiguous, so 8 of them leave in one 16-byte store): the
/// pixels and 16 bytes more, so a fragment store's 4 channels x 8 pixels fall in distinct banks.
/// It fits where the untransposed stage does ([`Geometry::smem_bytes`]).
pub const fn stage_nchw_pitch(out_bytes: u32) -> u32 {
    BLOCK_M as u32 * out_bytes + 16
}

/// Output pixels of one channel an NCHW entry's thread stores at once (16 bytes of 16-bit
/// values, two 16-byte stores of fp32).
pub const NCHW_RUN: u32 = 8;

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(n: i32, c: i32, h: i32, w: i32, k: i32, r: i32, s: i32, pad: i32, stride: i32) -> ConvShape {
        let p = (h + 2 * pad - r) / stride + 1;
        let q = (w + 2 * pad - s) / stride + 1;
        ConvShape { n, c, h, w, k, r, s, p, q, pad_h: pad, pad_w: pad, stride_h: stride, stride_w: stride, dil_h: 1, dil_w: 1, groups: 1, y_bits: 16, ep: crate::epilogue::EpilogueArgs::NONE }
    }

    #[test]
    fn tiles_hold_whole_rows_or_waste_least_when_strided() {
        // Stride 1, 224 wide: two 128-pixel tiles per row.
        let g = Geometry::of(&shape(16, 3, 224, 224, 64, 3, 3, 1, 1));
        assert_eq!((g.tq, g.tp, g.tiles_q, g.tiles_p, g.tiles), (128, 1, 2, 224, 16 * 224 * 2));
        assert_eq!((g.ph, g.pw, g.kpad), (3, 130, 32));
        // 112 x 112 at stride 2 (7 x 7): 16 x 8 tiles cover it exactly, 98 an image (one-row
        // tiles need 112), each copying a 21 x 37 patch (8 x 16 ones too: the wider is kept).
        let g = Geometry::of(&shape(16, 3, 224, 224, 64, 7, 7, 3, 2));
        assert_eq!((g.tq, g.tp, g.ph, g.pw, g.tiles), (16, 8, 21, 37, 16 * 98));
        // 54 x 54 at stride 2: 64 x 2 tiles cover it in 27 (every narrower width needs 28).
        let g = Geometry::of(&shape(8, 3, 108, 108, 64, 3, 3, 1, 2));
        assert_eq!((g.tq, g.tp, g.tiles_q, g.tiles_p), (64, 2, 1, 27));
        assert_eq!((g.ph, g.pw), (5, 129));
        // Tile row 130 of 16-pixel rows: output row 8, column 2.
        assert_eq!(Geometry::with(&shape(1, 1, 9, 9, 8, 1, 1, 0, 1), 16).row_col(130), (8, 2));
        let tiny = Geometry::of(&shape(1, 1, 1, 1, 8, 1, 1, 0, 1));
        assert_eq!((tiny.tq, tiny.tp, tiny.tiles), (MIN_TQ, 16, 1));
    }

    #[test]
    fn shared_regions_are_aligned_and_the_filter_rows_avoid_bank_conflicts() {
        let g = Geometry::of(&shape(16, 3, 224, 224, 64, 7, 7, 3, 2));
        assert_eq!(g.kpad, 160);
        for t in TILES {
            assert_eq!(g.table_at(t.bn) % 16, 0);
            assert_eq!(g.patch_at(t.bn) % 16, 0);
            assert_eq!((g.filter_pitch() / 16) % 2, 1);
            assert!(g.smem_bytes(t.bn, 3) >= g.patch_at(t.bn) + (2 * g.patch_len(3)).max(BLOCK_M as u32 * stage_pitch(t.bn, 4)));
        }
        assert_eq!(stage_pitch(64, 2) % 16, 0);
        for t in TILES {
            for ob in [2, 4] {
                // The transposed stage fits in the region sized for the other; its runs are
                // 16-byte aligned, and a fragment store's channels 2 apart land 8 banks apart.
                assert!(t.bn as u32 * stage_nchw_pitch(ob) <= BLOCK_M as u32 * stage_pitch(t.bn, 4));
                assert_eq!(stage_nchw_pitch(ob) % 16, 0);
                assert_eq!((2 * stage_nchw_pitch(ob) / 4) % 32, 8);
            }
        }
        assert_eq!(MIN_TQ as u32 % NCHW_RUN, 0, "a run must not cross a tile row");
    }
}
