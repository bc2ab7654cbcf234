//! GPU tests of family 2 (tiled shared-memory kernels) against the f64 CPU reference.
//! Without a GPU each test announces that it was skipped (see `convrs_tests::gpu_or_skip`).

use convrs::{Algorithm, Conv2d, DType};
use convrs_tests::{gpu_or_skip, gpu_vs_cpu, property_test_gpu};

/// fp32 products summed in fp32 (`convrs::bench::FP32_REL_L2_TOLERANCE`): rounding grows like
/// sqrt(terms) * 2^-24; an indexing mistake gives errors near 1.
const TOL: f64 = convrs::bench::FP32_REL_L2_TOLERANCE;

const CASES: u32 = 96;

#[test]
fn tiled_hwcn_matches_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("tiled_hwcn_matches_cpu_on_random_problems") else { return };
    property_test_gpu(&gpu, Algorithm::TiledHwcn, DType::F32, CASES);
}

#[test]
fn tiled_nchw_matches_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("tiled_nchw_matches_cpu_on_random_problems") else { return };
    property_test_gpu(&gpu, Algorithm::TiledNchw, DType::F32, CASES);
}

/// The shapes at small batch, and the corners a random draw may miss: every tile shape,
/// ragged edges on every tile dimension, K and N not multiples of 4 (4-byte copy fallback),
/// stride 2, dilation 2, 1x1, 7x7, padding that leaves whole taps outside the image.
#[test]
fn tiled_kernels_match_cpu_on_named_shapes() {
    let Some(gpu) = gpu_or_skip("tiled_kernels_match_cpu_on_named_shapes") else { return };
    let shapes = [
        Conv2d::new(8, 256, 14, 14, 512, 3, 3).with_pad(1),           // the speed target, batch 8
        Conv2d::new(256, 32, 6, 6, 256, 3, 3).with_pad(1),            // batch 256: 128x128 tiles
        Conv2d::new(4, 64, 56, 56, 64, 3, 3).with_pad(1),             // second shape, batch 4
        Conv2d::new(32, 64, 7, 7, 512, 3, 3).with_pad(1),             // third shape, fewer channels
        Conv2d::new(1, 1, 1, 1, 1, 1, 1),                             // the smallest problem
        Conv2d::new(3, 7, 31, 29, 5, 1, 1).with_stride(2),            // 1x1, stride 2, odd sizes
        Conv2d::new(2, 3, 33, 35, 9, 7, 7).with_pad(3),               // 7x7 filter
        Conv2d::new(2, 4, 40, 41, 6, 3, 3).with_pad(2).with_dilation(2), // dilation 2
        Conv2d::new(1, 2, 5, 5, 3, 5, 5).with_pad(4),                 // taps wholly in the padding
        Conv2d { n: 2, c: 5, h: 23, w: 64, k: 10, r: 3, s: 5, pad: (1, 2), stride: (2, 1), dilation: (1, 3), precision: Default::default(), groups: 1, epilogue: Default::default() },
        Conv2d::new(130, 9, 5, 6, 131, 3, 3).with_pad(1),             // ragged 128-tiles, N, K % 4 != 0
        Conv2d::new(132, 17, 4, 4, 68, 3, 2).with_pad(1),             // N, K % 4 == 0, C % 8 != 0
        Conv2d::new(36, 12, 9, 9, 20, 3, 3).with_pad(1).with_stride(2), // narrow tiles
        Conv2d::new(1, 1, 3, 3, 1, 1, 1).with_pad(4),                 // pixels that see only padding
    ];
    for algo in [Algorithm::TiledHwcn, Algorithm::TiledNchw] {
        for p in &shapes {
            let c = gpu_vs_cpu(&gpu, algo, DType::F32, p, 42).unwrap_or_else(|e| panic!("{algo} on {p}: {e}"));
            assert_eq!(c.non_finite, 0, "{algo} on {p}: {c}");
            assert!(c.rel_l2_err <= TOL, "{algo} on {p}: {c}");
        }
    }
}
