//! GPU tests of `wmma_patch` and `wmma_patch_nchw` (the same kernel on NCHW data) on fp16 and bf16 data (step 2b's reduction over taps and channels,
//! operands from a shared-memory patch of the input, output staged in shared memory) against
//! the f64 CPU reference on the same rounded inputs, both output types, NaN-poisoned outputs.
//! Without a GPU each test announces that it was skipped.

use convrs::{Algorithm, Conv2d, DType};
use convrs_tests::{check_shapes_both_outputs, gpu_or_skip, property_test_gpu};

const ALGOS: [(Algorithm, DType); 4] = [(Algorithm::WmmaPatch, DType::F16), (Algorithm::WmmaPatch, DType::BF16), (Algorithm::WmmaPatchNchw, DType::F16), (Algorithm::WmmaPatchNchw, DType::BF16)];

/// Random problems with every C from 1 (no multiple required) and K a multiple of 8.
#[test]
fn patch_matches_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("patch_matches_cpu_on_random_problems") else { return };
    for (algo, dtype) in ALGOS {
        property_test_gpu(&gpu, algo, dtype, 64);
    }
}

/// The layers it is for at small batch, and the corners of its tiles and patch: output rows
/// wider and narrower than a tile row (tiles of several rows), taps in the padding on every
/// side, strides and dilation per axis, K over several output-channel tiles, blocks that walk
/// many tiles.
#[test]
fn patch_matches_cpu_on_named_shapes() {
    let Some(gpu) = gpu_or_skip("patch_matches_cpu_on_named_shapes") else { return };
    let shapes = [
        Conv2d::new(1, 1, 41, 170, 32, 5, 20).with_stride(2),           // speech front end: Q = 76, R*S = 100
        Conv2d::new(2, 3, 30, 31, 64, 7, 7).with_pad(3).with_stride(2), // first layer 7x7 s2 (147)
        Conv2d::new(2, 3, 32, 133, 64, 3, 3).with_pad(1),               // Q = 133: a 128-pixel tile and a ragged one
        Conv2d::new(3, 3, 27, 27, 64, 3, 3).with_pad(1).with_stride(2), // Q = 14: tiles of 16 x 8
        Conv2d::new(2, 16, 6, 40, 32, 3, 3).with_pad(1),                // C = 16 (144 = 9 k-steps)
        Conv2d::new(1, 1, 48, 48, 16, 3, 3).with_pad(1),                // K = 16 < the 32-wide tile
        Conv2d::new(3, 5, 17, 13, 40, 3, 3).with_pad(2).with_dilation(2), // C = 5; K tail
        Conv2d { stride: (2, 1), ..Conv2d::new(1, 7, 12, 10, 136, 2, 3) },  // K over 3 or 5 channel tiles
        Conv2d { n: 2, c: 2, h: 23, w: 64, k: 8, r: 3, s: 5, pad: (1, 2), stride: (2, 1), dilation: (1, 3), precision: Default::default(), groups: 1, epilogue: Default::default() }, // per-axis values
        Conv2d::new(1, 1, 1, 1, 8, 1, 1),                               // the smallest problem
        Conv2d::new(1, 3, 5, 5, 8, 5, 5).with_pad(4),                   // most taps in the padding
        Conv2d::new(40, 3, 20, 20, 8, 3, 3).with_pad(1),                // 1000 tiles: each block walks several
    ];
    for (algo, dtype) in ALGOS {
        check_shapes_both_outputs(&gpu, algo, dtype, &shapes, 17);
    }
}

/// The NCHW entries' own corners: K not a multiple of 8 (a channel tile's last columns past
/// K), output rows whose runs of 8 pixels are ragged or unaligned (Q = 9, 13, 20: the run at a
/// row's end, and runs starting off a 16-byte boundary, go value by value), a 7x7 stride-2 first
/// layer at Q = 112 (every run whole), C = 16 (the NHWC kernel's 16-byte copies; here plane rows).
#[test]
fn patch_nchw_matches_cpu_on_its_corners() {
    let Some(gpu) = gpu_or_skip("patch_nchw_matches_cpu_on_its_corners") else { return };
    let shapes = [
        Conv2d::new(2, 3, 19, 17, 12, 3, 3).with_pad(1).with_stride(2), // K = 12, Q = 9
        Conv2d::new(3, 2, 13, 13, 70, 3, 3).with_pad(1),                // K = 70: 3 tiles of 32, Q = 13
        Conv2d::new(1, 4, 9, 20, 8, 3, 3).with_pad(1),                  // Q = 20: runs off 16-byte boundaries
        Conv2d::new(1, 3, 224, 224, 64, 7, 7).with_pad(3).with_stride(2), // ResNet's first layer
        Conv2d::new(2, 16, 12, 40, 24, 3, 3).with_pad(1),               // C = 16
    ];
    for dtype in [DType::F16, DType::BF16] {
        check_shapes_both_outputs(&gpu, Algorithm::WmmaPatchNchw, dtype, &shapes, 23);
    }
}

/// The 16-bit epilogue rounds the fp32 accumulators and does nothing else.
#[test]
fn patch_sixteen_bit_outputs_are_the_rounded_fp32_outputs() {
    let Some(gpu) = gpu_or_skip("patch_sixteen_bit_outputs_are_the_rounded_fp32_outputs") else { return };
    for (algo, dtype) in ALGOS {
        convrs_tests::check_sixteen_bit_rounding(&gpu, algo, dtype);
    }
}
