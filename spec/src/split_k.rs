//! Split-K (the Hopper schedule [`crate::hopper::Schedule::SplitK`], step 8 of family 3, the
//! host's `wgmma_ws_tma_splitk`): when a layer has too few output
//! tiles to fill the GPU, the reduction's k-tiles are split over `splits` slices of the grid
//! (its z dimension), and the slices of each output tile meet in a workspace:
//!
//! - every consumer warp (a 16-row strip of a 128-row tile: a *unit*) writes its fp32 partial
//!   sums to its own region of the workspace, then counts itself in the unit's counter;
//! - the warp that counts last adds every slice's partial sums in slice order (so the result
//!   does not depend on which came last), writes the output, and sets the counter back to zero
//!   for the next launch.
//!
//! The workspace (zeroed when allocated, owned by whoever runs the plan, passed to the kernel as
//! its own argument) holds the counters, one `u32` per unit in a region
//! of fixed size, then the partial sums: per slice and unit, [`unit_floats`] values in the
//! warp's register order, each lane's four-value pieces interleaved so that a warp's loads and
//! stores are whole 512-byte lines.

/// The widest tile the split-K schedule takes: the 128x256 tile's registers hold no more than its own
/// epilogue (the split path spilled there).
pub const MAX_BN: usize = 128;

/// Consumer warps per 128-row tile, each a unit of 16 rows.
pub const WARPS_PER_TILE: usize = 8;

/// The k-tiles `first..end` of split `split` of `splits` over `ktiles` k-tiles: consecutive,
/// disjoint, covering `0..ktiles`, their lengths differing by at most one (every one non-empty
/// when `splits <= ktiles`).
///
/// ```
/// use convrs_spec::split_k::k_range;
/// assert_eq!([0, 1, 2].map(|z| k_range(z, 3, 10)), [(0, 3), (3, 6), (6, 10)]);
/// ```
#[inline(always)]
pub fn k_range(split: u32, splits: u32, ktiles: u32) -> (u32, u32) {
    let at = |z: u32| (z as u64 * ktiles as u64 / splits as u64) as u32;
    (at(split), at(split + 1))
}

/// fp32 values of one unit's partial sums with tiles `bn` columns wide: 16 rows by `bn`.
#[inline(always)]
pub const fn unit_floats(bn: usize) -> usize {
    16 * bn
}

/// The most units a split launch may have: the counters take the workspace's first
/// [`COUNTER_BYTES`] whatever the launch, so that no launch's counters lie where an earlier
/// one left partial sums (the counters are zeroed only when the workspace is allocated; each
/// launch leaves its own at zero). 8192 tiles: splitting pays only below a few hundred.
pub const MAX_UNITS: usize = 1 << 16;

/// Bytes of the counters at the start of every workspace.
pub const COUNTER_BYTES: usize = MAX_UNITS * 4;

/// Offset, in fp32 values from the start of the partial sums, of slice `split`'s partial sums
/// of unit `unit` (of `units`) with tiles `bn` columns wide.
#[inline(always)]
pub fn partial_offset(split: u32, units: u32, unit: u32, bn: usize) -> usize {
    (split as usize * units as usize + unit as usize) * unit_floats(bn)
}

/// Bytes of the workspace of a split over `splits` slices of `tiles` output tiles `bn`
/// columns wide (at most [`MAX_UNITS`] / [`WARPS_PER_TILE`] tiles).
pub const fn workspace_bytes(tiles: usize, bn: usize, splits: usize) -> usize {
    COUNTER_BYTES + splits * tiles * WARPS_PER_TILE * unit_floats(bn) * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_reduction_once() {
        for ktiles in 1..40u32 {
            for splits in 1..=ktiles {
                let mut next = 0;
                for z in 0..splits {
                    let (a, b) = k_range(z, splits, ktiles);
                    assert_eq!(a, next);
                    assert!(b > a && b - a <= ktiles.div_ceil(splits), "{ktiles} {splits} {z}");
                    next = b;
                }
                assert_eq!(next, ktiles);
            }
        }
    }

    #[test]
    fn partial_sums_tile_the_workspace() {
        // 3 tiles of 64 columns in 4 slices: 24 units; the last unit's region of the last
        // slice ends exactly at the end.
        let (tiles, bn, splits) = (3, 64, 4);
        let units = (tiles * WARPS_PER_TILE) as u32;
        let end = partial_offset(splits - 1, units, units - 1, bn) + unit_floats(bn);
        assert_eq!(COUNTER_BYTES + end * 4, workspace_bytes(tiles, bn, splits as usize));
        assert_eq!(COUNTER_BYTES % 256, 0);
    }
}
