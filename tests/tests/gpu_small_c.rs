//! GPU tests of `wmma_smallc` on fp16 and bf16 data (tensor cores for few input channels: the
//! reduction over taps and channels together, operands gathered element by element) against
//! the f64 CPU reference on the same rounded inputs, both output types, NaN-poisoned outputs.
//! Without a GPU each test announces that it was skipped.

use convrs::{Algorithm, Conv2d, DType};
use convrs_tests::{check_shapes_both_outputs, gpu_or_skip, property_test_gpu};

const ALGOS: [(Algorithm, DType); 2] = [(Algorithm::WmmaSmallC, DType::F16), (Algorithm::WmmaSmallC, DType::BF16)];

/// Random problems with every C from 1 (no multiple required) and K a multiple of 8.
#[test]
fn smallc_matches_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("smallc_matches_cpu_on_random_problems") else { return };
    for (algo, dtype) in ALGOS {
        property_test_gpu(&gpu, algo, dtype, 64);
    }
}

/// The layers it is for at small batch, and the corners of its gather: a k-tile ending inside a
/// tap, a tap's channels split across k-tiles, R*S*C a multiple of 32 and not, taps in padding.
#[test]
fn smallc_matches_cpu_on_named_shapes() {
    let Some(gpu) = gpu_or_skip("smallc_matches_cpu_on_named_shapes") else { return };
    let shapes = [
        Conv2d::new(1, 1, 41, 70, 32, 5, 20).with_stride(2),             // speech front end (R*S = 100: 4 k-tiles, the last partial)
        Conv2d::new(2, 3, 30, 31, 64, 7, 7).with_pad(3).with_stride(2), // first layer 7x7 s2 (147 = 4.6 k-tiles)
        Conv2d::new(2, 3, 32, 33, 64, 3, 3).with_pad(1),                // first layer 3x3 (27: one partial k-tile)
        Conv2d::new(1, 1, 48, 48, 16, 3, 3).with_pad(1),                // K = 16 < the 32-wide tile
        Conv2d::new(3, 5, 17, 13, 40, 3, 3).with_pad(2).with_dilation(2), // C = 5: taps straddle k-tiles; K tail
        Conv2d::new(2, 32, 9, 9, 24, 1, 1),                             // R*S*C = 32: exactly one k-tile
        Conv2d { stride: (2, 1), ..Conv2d::new(1, 7, 12, 10, 136, 2, 3) },  // K spans three 64-wide tiles
        Conv2d { n: 2, c: 2, h: 23, w: 64, k: 8, r: 3, s: 5, pad: (1, 2), stride: (2, 1), dilation: (1, 3), precision: Default::default(), groups: 1, epilogue: Default::default() }, // per-axis values
        Conv2d::new(1, 1, 1, 1, 8, 1, 1),                               // the smallest problem
        Conv2d::new(1, 3, 5, 5, 8, 5, 5).with_pad(4),                   // most taps in the padding
    ];
    for (algo, dtype) in ALGOS {
        check_shapes_both_outputs(&gpu, algo, dtype, &shapes, 13);
    }
}

/// The 16-bit epilogue rounds the fp32 accumulators and does nothing else.
#[test]
fn smallc_sixteen_bit_outputs_are_the_rounded_fp32_outputs() {
    let Some(gpu) = gpu_or_skip("smallc_sixteen_bit_outputs_are_the_rounded_fp32_outputs") else { return };
    for (algo, dtype) in ALGOS {
        convrs_tests::check_sixteen_bit_rounding(&gpu, algo, dtype);
    }
}
