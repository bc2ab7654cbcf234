//! Family 2, tiled shared-memory GEMMs (`tiled_hwcn`, `tiled_nchw`): the compiled block tiles,
//! the mainloop's shared-memory size, and which thread holds which output of the block tile.
//!
//! A block tile is BM x BN outputs (output channels x columns) computed by
//! `(BM/TM) * (BN/TN)` threads, each holding TM x TN outputs as (TM/4) x (TN/4) quadrants of
//! 4 x 4 ("virtual threads"), quadrants [`quadrant_stride`] rows (columns) apart.

/// Calls `$callback! { $ctx... (hwcn_entry, nchw_entry, BM, BN, BK, TM, TN, STAGES) ... }`, one
/// row per compiled tile; both kernels compile every tile, in this order.
#[macro_export]
macro_rules! tiled_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (tiled_hwcn_128x128, tiled_nchw_128x128, 128, 128, 8, 8, 8, 3)
            (tiled_hwcn_128x64, tiled_nchw_128x64, 128, 64, 8, 8, 8, 3)
            (tiled_hwcn_64x128, tiled_nchw_64x128, 64, 128, 8, 8, 8, 3)
            (tiled_hwcn_64x64, tiled_nchw_64x64, 64, 64, 8, 8, 8, 3)
            (tiled_hwcn_128x32, tiled_nchw_128x32, 128, 32, 8, 8, 4, 3)
            (tiled_hwcn_32x128, tiled_nchw_32x128, 32, 128, 8, 4, 8, 3)
            (tiled_hwcn_256x128, tiled_nchw_256x128, 256, 128, 8, 8, 8, 3)
            (tiled_hwcn_128x128_k16, tiled_nchw_128x128_k16, 128, 128, 16, 8, 8, 3)
        }
    };
}

/// The body of [`thread_groups`] and [`Tile::thread_groups`], written once.
macro_rules! groups {
    ($bn:expr, $tn:expr, $tid:expr) => {{
        let warps_n = ($bn / $tn / 8) as i32;
        let (warp, lane) = ($tid / 32, $tid % 32);
        ((warp / warps_n) * 4 + lane / 8, (warp % warps_n) * 8 + lane % 8)
    }};
}

/// Spare floats at the end of each shared A row: a copy that writes a column of A lands in
/// distinct banks, and 16-byte accesses along a row stay aligned.
pub const A_PAD: usize = 4;

/// One compiled tile: `conv::<BM, BN, BK, TM, TN, STAGES>` of both kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// The `tiled_hwcn` entry point.
    pub hwcn: &'static str,
    /// The `tiled_nchw` entry point.
    pub nchw: &'static str,
    /// Block tile rows (output channels).
    pub bm: usize,
    /// Block tile columns (HWCN: batch entries; NCHW: output positions).
    pub bn: usize,
    /// Reduction indices per step.
    pub bk: usize,
    /// Rows per thread.
    pub tm: usize,
    /// Columns per thread.
    pub tn: usize,
    /// Shared buffers of the `cp.async` pipeline.
    pub stages: usize,
}

impl Tile {
    /// [`thread_groups`] of this tile, for tile sizes known only at run time (the host's replay).
    pub fn thread_groups(&self, tid: i32) -> (i32, i32) {
        groups!(self.bn, self.tn, tid)
    }
    /// Threads per block.
    pub const fn threads(&self) -> usize {
        threads(self.bm, self.bn, self.tm, self.tn)
    }
    /// Dynamic shared memory bytes per block.
    pub const fn smem_bytes(&self) -> usize {
        smem_bytes(self.bm, self.bn, self.bk, self.stages)
    }
}

macro_rules! declare_tiles {
    ($(($hwcn:ident, $nchw:ident, $bm:literal, $bn:literal, $bk:literal, $tm:literal, $tn:literal, $stages:literal))*) => {
        /// Every compiled tile, in the kernels' declaration order.
        pub const TILES: [Tile; [$($bm),*].len()] = [$(Tile {
            hwcn: stringify!($hwcn), nchw: stringify!($nchw), bm: $bm, bn: $bn, bk: $bk, tm: $tm, tn: $tn, stages: $stages,
        }),*];
    };
}
crate::tiled_tiles!(declare_tiles);

/// Threads of a block with tile `BM x BN` and thread tile `TM x TN`.
#[inline(always)]
pub const fn threads(bm: usize, bn: usize, tm: usize, tn: usize) -> usize {
    (bm / tm) * (bn / tn)
}

/// Dynamic shared memory bytes of the pipeline: per stage `A[BK][BM + A_PAD]` then `B[BK][BN]`
/// floats.
#[inline(always)]
pub const fn smem_bytes(bm: usize, bn: usize, bk: usize, stages: usize) -> usize {
    stages * bk * (bm + A_PAD + bn) * 4
}

/// Distance between a thread's quadrants along a tile side of `b` outputs with `t` outputs per
/// thread (`t / 4` quadrants).
#[inline(always)]
pub const fn quadrant_stride(b: usize, t: usize) -> usize {
    b / (t / 4)
}

/// Thread `tid`'s place in a block tile `BN` columns wide with `TN` columns per thread: row
/// group `tm` and column group `tn` of 4 x 4 outputs within each quadrant. A warp is 4 row
/// groups x 8 column groups, so its operand loads read 4 and 8 adjacent 16-byte words
/// (conflict-free, one wavefront each). Generic over the whole tile like the kernel that calls
/// it (BM and TM do not enter), so it compiles exactly as the kernel's own function did.
#[inline(always)]
pub fn thread_groups<const BM: usize, const BN: usize, const TM: usize, const TN: usize>(tid: i32) -> (i32, i32) {
    groups!(BN, TN, tid)
}

/// Row (or column) of the block tile that register `i` of a thread in group `g` holds: quadrant
/// `i / 4` starts `quadrant_stride` apart, and the thread holds 4 adjacent ones in each.
#[inline(always)]
pub fn tile_index(g: i32, i: usize, quadrant_stride: usize) -> i32 {
    (i / 4 * quadrant_stride) as i32 + g * 4 + (i % 4) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_sizes() {
        assert_eq!(TILES.len(), 8);
        assert_eq!((TILES[0].hwcn, TILES[0].nchw), ("tiled_hwcn_128x128", "tiled_nchw_128x128"));
        assert_eq!(TILES[0].smem_bytes(), 3 * 8 * (128 + 4 + 128) * 4); // 24960
        assert_eq!(TILES[7].smem_bytes(), 3 * 16 * 260 * 4);
        assert_eq!(TILES.map(|t| t.threads()), [256, 128, 128, 64, 128, 128, 512, 256]);
    }

    #[test]
    fn thread_mapping_of_the_64x64_tile() {
        // 8 x 8 threads, one warp wide (64 / 8 / 8 = 1): warp w holds row groups 4w..4w+3.
        assert_eq!(thread_groups::<64, 64, 8, 8>(0), (0, 0));
        assert_eq!(thread_groups::<64, 64, 8, 8>(9), (1, 1));
        assert_eq!(thread_groups::<64, 64, 8, 8>(40), (5, 0));
        assert_eq!(TILES[3].thread_groups(40), (5, 0));
        // Quadrants 32 apart: registers 0-3 at 4g.., 4-7 at 32 + 4g..
        assert_eq!(quadrant_stride(64, 8), 32);
        assert_eq!([0, 3, 4, 7].map(|i| tile_index(1, i, 32)), [4, 7, 36, 39]);
    }

    #[test]
    fn registers_cover_every_tile_exactly_once() {
        for t in TILES {
            let mut seen = [false; 256 * 128];
            for tid in 0..t.threads() as i32 {
                let (gm, gn) = t.thread_groups(tid);
                for i in 0..t.tm {
                    for j in 0..t.tn {
                        let r = tile_index(gm, i, quadrant_stride(t.bm, t.tm)) as usize;
                        let c = tile_index(gn, j, quadrant_stride(t.bn, t.tn)) as usize;
                        assert!(r < t.bm && c < t.bn && !core::mem::replace(&mut seen[r * t.bn + c], true), "{t:?}");
                    }
                }
            }
            assert!(seen[..t.bm * t.bn].iter().all(|&s| s), "{t:?}");
        }
    }
}
