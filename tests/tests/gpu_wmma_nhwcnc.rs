//! GPU tests of `wmma_nhwcnc` (tensor cores on the blocked NHWC16n16c layouts, fp16 in, fp16 or
//! fp32 out) against the f64 CPU reference on the same fp16-rounded inputs. Every tile entry runs in
//! gpu_wmma_nhwc.rs's `wmma_every_tile_matches_cpu` (the two algorithms share the kernel).
//! Without a GPU each test announces that it was skipped (see `convrs_tests::gpu_or_skip`).

use convrs::DeviceModel;
use convrs::{Algorithm, Conv2d, DType, Error};
use convrs_tests::{check_shapes_both_outputs, gpu_or_skip, property_test_gpu};

const ALGO: Algorithm = Algorithm::WmmaNhwcnc;

#[test]
fn wmma_nhwcnc_matches_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("wmma_nhwcnc_matches_cpu_on_random_problems") else { return };
    property_test_gpu(&gpu, ALGO, DType::F16, 64);
}

/// The shapes at small batch, and the corners a random draw may miss: ragged edge tiles
/// in M (N*P*Q not a multiple of the block tile) and in K, odd C/16 (a half-empty 32-channel
/// k-tile), C = 32 mod 64 (a half-empty 64-channel k-tile).
#[test]
fn wmma_nhwcnc_matches_cpu_on_named_shapes() {
    let Some(gpu) = gpu_or_skip("wmma_nhwcnc_matches_cpu_on_named_shapes") else { return };
    let shapes = [
        Conv2d::new(16, 256, 14, 14, 512, 3, 3).with_pad(1),  // the speed target at batch 16
        Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1),    // 32 images of 7x7: several pixels a block
        Conv2d::new(16, 64, 56, 56, 64, 3, 3).with_pad(1),    // K = 64
        Conv2d::new(144, 32, 5, 5, 48, 1, 1),                 // 1x1, N not a multiple of 128
        Conv2d::new(16, 48, 17, 15, 208, 7, 7).with_pad(3),   // 7x7, odd C/16, K/16 = 13
        Conv2d::new(32, 32, 19, 21, 32, 3, 3).with_pad(1).with_stride(2), // stride 2
        Conv2d::new(16, 32, 20, 23, 48, 3, 3).with_pad(2).with_dilation(2), // dilation 2
        Conv2d::new(16, 16, 9, 9, 16, 3, 3).with_pad(1),      // C = K = N = 16
        Conv2d::new(16, 16, 1, 1, 16, 1, 1),                  // the smallest problem
        Conv2d::new(48, 80, 3, 2, 144, 2, 2).with_pad(1),     // tiny, ragged H and W
        Conv2d { n: 16, c: 32, h: 11, w: 13, k: 32, r: 3, s: 5, pad: (0, 2), stride: (2, 1), dilation: (1, 2), precision: Default::default(), groups: 1, epilogue: Default::default() }, // per-axis values
        Conv2d::new(272, 16, 3, 3, 16, 3, 3).with_pad(1),     // many batch tiles, one pixel per block row
        Conv2d::new(16, 16, 28, 28, 256, 3, 3).with_pad(1),   // K edge tiles
        Conv2d::new(32, 32, 28, 28, 96, 3, 3).with_pad(1),    // C = 32: half-empty 64-channel k-tiles
        Conv2d::new(16, 96, 9, 9, 512, 3, 3).with_pad(1),     // C = 96: 1.5 k-tiles of 64 per tap
    ];
    check_shapes_both_outputs(&gpu, ALGO, DType::F16, &shapes, 7);
}

/// N, C or K not a multiple of 16 is refused by the plan (CPU-only), pointing to the NHWC kernel.
#[test]
fn wmma_nhwcnc_refuses_sizes_not_multiples_of_16() {
    for p in [
        Conv2d::new(8, 16, 8, 8, 16, 3, 3),
        Conv2d::new(16, 24, 8, 8, 16, 3, 3).with_pad(1),
        Conv2d::new(16, 16, 8, 8, 40, 1, 1),
    ] {
        match ALGO.plan(&p, DType::F16, &DeviceModel::named("a100").unwrap()) {
            Err(Error::Unsupported { algorithm, reason }) => {
                assert_eq!(algorithm, "wmma_nhwcnc");
                assert!(reason.contains("wmma_nhwc "), "{p}: {reason}");
            }
            other => panic!("{p}: expected Unsupported, got {other:?}"),
        }
    }
}
