//! GPU tests of family 1 (direct convolution) against the f64 CPU reference.
//! Without a GPU each test announces that it was skipped (see `convrs_tests::gpu_or_skip`).

use convrs::{Algorithm, Conv2d, DType};
use convrs_tests::{gpu_or_skip, gpu_vs_cpu, property_test_gpu};

/// fp32 products summed in fp32 over at most C*R*S = 20*64 terms: rounding error grows like
/// sqrt(terms) * 2^-24 (about 2e-6 here); an indexing mistake gives errors near 1.
const TOL: f64 = 1e-5;

const CASES: u32 = 96;

#[test]
fn direct_naive_matches_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("direct_naive_matches_cpu_on_random_problems") else { return };
    property_test_gpu(&gpu, Algorithm::DirectNaive, DType::F32, CASES);
}

#[test]
fn direct_smem_matches_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("direct_smem_matches_cpu_on_random_problems") else { return };
    property_test_gpu(&gpu, Algorithm::DirectSmem, DType::F32, CASES);
}

/// The shapes the issue names, and the corners a random draw may miss.
#[test]
fn direct_kernels_match_cpu_on_named_shapes() {
    let Some(gpu) = gpu_or_skip("direct_kernels_match_cpu_on_named_shapes") else { return };
    let shapes = [
        Conv2d::new(1, 6, 768, 512, 6, 6, 6),                       // the speed target
        Conv2d::new(2, 16, 56, 56, 24, 3, 3).with_pad(1),           // a small 3x3 network layer
        Conv2d::new(1, 1, 1, 1, 1, 1, 1),                           // the smallest problem
        Conv2d::new(3, 7, 31, 29, 5, 1, 1).with_stride(2),          // 1x1, stride 2, odd sizes
        Conv2d::new(2, 3, 33, 35, 9, 7, 7).with_pad(3),             // 7x7 filter
        Conv2d::new(2, 4, 40, 41, 6, 3, 3).with_pad(2).with_dilation(2), // dilation 2, padding > 1
        Conv2d::new(1, 2, 5, 5, 3, 5, 5).with_pad(4),               // padding near the filter size
        Conv2d { n: 2, c: 5, h: 23, w: 64, k: 10, r: 3, s: 5, pad: (1, 2), stride: (2, 1), dilation: (1, 3), precision: Default::default(), groups: 1, epilogue: Default::default() }, // per-axis values
        Conv2d::new(1, 3, 64, 256, 4, 3, 3).with_pad(1),            // W a multiple of 4: 16-byte loads
    ];
    for algo in [Algorithm::DirectNaive, Algorithm::DirectSmem] {
        for p in &shapes {
            let c = gpu_vs_cpu(&gpu, algo, DType::F32, p, 42).unwrap_or_else(|e| panic!("{algo} on {p}: {e}"));
            assert_eq!(c.non_finite, 0, "{algo} on {p}: {c}");
            assert!(c.rel_l2_err <= TOL, "{algo} on {p}: {c}");
        }
    }
}
