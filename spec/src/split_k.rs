//! Split-K (step 8 of family 3, the host's `wgmma_sk_nhwc`): when a layer has too few output
//! tiles to fill the GPU, the reduction's k-tiles are split over `splits` slices of the grid
//! (its z dimension); slice `z` adds up its share of every tile's k-tiles and writes the fp32
//! partial sums to slice `z` of a workspace (`splits` output-sized M x K arrays), and the
//! `split_k_sum_*` kernels add the slices in order, rounding once to the output type.

/// Threads per block of the `split_k_sum_*` kernels.
pub const SUM_THREADS: u32 = 256;

/// Output elements each thread of the `split_k_sum_*` kernels sums: one 16-byte fp32 load per
/// slice. The slice length is a multiple of it (K is a multiple of 8 on the wgmma path).
pub const SUM_VEC: usize = 4;

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
}
