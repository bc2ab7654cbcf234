//! The tile scheduler of the warp-specialized kernels: which output tiles a CTA computes, in
//! which order. Producer and consumers walk the same sequence, so their rings stay in step.

use crate::prelude::*;
use crate::tensor_core::implicit_gemm::divmod;

/// The output tiles one CTA computes, in order: one tile, or with a persistent grid every
/// `stride`-th cluster tile from its own on (a static round-robin over the grid). A cluster
/// tile is `CLUSTER` consecutive M tiles of one N tile (N tiles fastest, or image by image with
/// [`Tiles::by_image`]); the CTA of rank `rank` takes the `rank`-th of them. Every CTA of a
/// cluster walks the same cluster tiles.
#[derive(Clone, Copy)]
pub(super) struct Tiles {
    next: u32,
    stride: u32,
    end: u32,
    /// N tiles of the GEMM, each `bn` columns.
    pub(super) n_tiles: u32,
    /// M tiles per image in [`Tiles::by_image`] order, else 0.
    per_image: u32,
    /// A tile's rows and columns.
    pub(super) bm: u32,
    pub(super) bn: u32,
    pub(super) rank: u32,
}

impl Tiles {
    /// This CTA's tiles of a `gemm_m x gemm_n` output in tiles `bm x bn`, for a grid of one CTA
    /// per tile or (`PERSISTENT`) fewer walking them.
    #[inline(always)]
    pub(super) fn of<const CLUSTER: u32, const PERSISTENT: bool>(gemm_m: u32, gemm_n: u32, bm: u32, bn: u32) -> Tiles {
        // The CTAs of a cluster share the N tile and take consecutive M tiles (the last cluster's
        // may lie past M: it computes zeros and stores nothing, and still loads its share of B).
        let n_tiles = gemm_n.div_ceil(bn);
        let first = block_x() as u32 / CLUSTER;
        let tiles = if PERSISTENT {
            let end = gemm_m.div_ceil(bm * CLUSTER) * n_tiles;
            Tiles { next: first, stride: grid_dim_x() as u32 / CLUSTER, end, n_tiles, per_image: 0, bm, bn, rank: 0 }
        } else {
            Tiles { next: first, stride: 1, end: first + 1, n_tiles, per_image: 0, bm, bn, rank: 0 }
        };
        Tiles { rank: if CLUSTER > 1 { crate::prelude::mbarrier::cluster_ctarank() } else { 0 }, ..tiles }
    }

    /// The same tiles image by image (no clusters), for `Producer::PlaneRows`, whose M tiles
    /// are `per_image` tiles of output channels for each image in turn: an image's M tiles
    /// fastest (they share each pixel tile's activations: the CTAs reading one run side by
    /// side, and all but the first find it in L2), then its pixel tiles (neighbouring CTAs read
    /// neighbouring stretches of the same channel planes), then the images. `Producer::Planes`
    /// takes it with all its M tiles as one "image" (its columns span the images): M tiles
    /// fastest, then the column tiles.
    #[inline(always)]
    pub(super) fn by_image(self, per_image: u32) -> Tiles {
        Tiles { per_image, ..self }
    }

    /// Whether [`Tiles::next`] has another tile.
    #[inline(always)]
    pub(super) fn more(&self) -> bool {
        self.next < self.end
    }

    /// The next tile's first (row, column) of the GEMM output.
    #[inline(always)]
    pub(super) fn next<const CLUSTER: u32>(&mut self) -> Option<(u32, u32)> {
        if self.next >= self.end {
            return None;
        }
        let (cm, nt) = if self.per_image > 0 {
            // SAFETY: per_image >= 1 and n_tiles >= 1.
            let (rest, mt) = unsafe { divmod(self.next, self.per_image) };
            // SAFETY: as above.
            let (image, nt) = unsafe { divmod(rest, self.n_tiles) };
            (image * self.per_image + mt, nt)
        } else {
            // SAFETY: N >= 1 (n_tiles >= 1).
            unsafe { divmod(self.next, self.n_tiles) }
        };
        self.next += self.stride;
        Some(((cm * CLUSTER + self.rank) * self.bm, nt * self.bn))
    }
}
