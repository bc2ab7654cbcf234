//! GPU tests of family 4 (depthwise convolution, groups = C) against the f64 CPU reference, on
//! NaN-poisoned outputs, in every element type; and the automatic choice routing depthwise
//! problems to them (CPU only). Without a GPU the GPU tests announce that they were skipped.

use convrs::registry::Family;
use convrs::select::choose;
use convrs::{Algorithm, Conv2d, DType, DeviceModel, Layout};
use convrs_tests::{check_shapes_both_outputs, check_sixteen_bit_rounding_on, gpu_or_skip, kernels, property_test_gpu};

const CASES: u32 = 64;

fn depthwise_kernels() -> Vec<(Algorithm, DType)> {
    kernels(|k| k.family == Family::Depthwise)
}

/// Depthwise layers of real networks and the corners of the entries: each compiled filter size
/// (3, 5, 7) at stride 1 and 2, the generic one (9x9, 3x5, dilation), multiplier 2 (the scalar
/// NHWC entry), C not a multiple of 4, C = 1 (a dense convolution), an image smaller than the
/// filter's reach (every thread on the border path), and Q, P not multiples of the thread tiles.
fn shapes() -> Vec<Conv2d> {
    let dw = |n, c, hw, r: usize, stride| Conv2d::new(n, c, hw, hw, c, r, r).with_pad(r / 2).with_stride(stride).with_groups(c);
    vec![
        dw(4, 144, 56, 3, 1),                                            // MobileNetV2 block 2
        dw(4, 96, 112, 3, 2),                                            // MobileNetV2 downsampling
        dw(2, 96, 56, 7, 1),                                             // ConvNeXt-T stage 1
        dw(3, 40, 27, 5, 2),                                             // EfficientNet-like 5x5 s2
        dw(2, 20, 31, 5, 1),                                             // 5x5, odd size
        dw(2, 12, 23, 9, 1),                                             // 9x9: the generic entries
        Conv2d::new(2, 16, 19, 21, 16, 3, 5).with_pad(1).with_groups(16), // R != S
        dw(2, 24, 20, 3, 1).with_dilation(2).with_pad(2),                 // dilation 2
        Conv2d::new(3, 8, 17, 17, 16, 3, 3).with_pad(1).with_groups(8),   // multiplier 2
        dw(2, 30, 15, 3, 1),                                             // C not a multiple of 4
        Conv2d::new(2, 1, 33, 35, 4, 3, 3).with_pad(1),                  // C = 1, groups = 1
        dw(1, 8, 2, 7, 1),                                               // 2x2 image, 7x7 filter, pad 3
        dw(5, 4, 7, 3, 1),                                               // 7x7: P, Q ragged against 4 and 2
    ]
}

#[test]
fn depthwise_kernels_match_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("depthwise_kernels_match_cpu_on_random_problems") else { return };
    for (algo, dtype) in depthwise_kernels() {
        property_test_gpu(&gpu, algo, dtype, CASES);
    }
}

/// The shapes `algo` takes on `dtype` data: all of [`shapes`] but for the strip and tile entries,
/// which refuse those outside their domain (NHWC strip: multiplier 1, C a multiple of 4,
/// 3x3/5x5/7x7 at stride 1; NCHW strip: 3x3/5x5/7x7 at stride 1 or 2; tile: multiplier 1, C in
/// 16-byte chunks, 3x3/5x5/7x7 at stride 1 or 2) and must take the rest.
fn taken_shapes(algo: Algorithm, dtype: DType) -> Vec<Conv2d> {
    let d = DeviceModel::named("h100").unwrap();
    let all = shapes();
    let expected = match algo {
        // MobileNetV2 (3x3), ConvNeXt (7x7), 5x5, the 2x2 image, the ragged 3x3.
        Algorithm::DepthwiseNhwcStrip => 5,
        // Those, the stride-2 ones (3x3, 5x5), multiplier 2 (C = 8 and C = 1) and C = 30.
        Algorithm::DepthwiseNchwStrip => 10,
        // MobileNetV2 at stride 1 and 2, ConvNeXt, the 5x5 s2 and the 2x2 image (C multiples of
        // 8); for fp32 (multiples of 4) also the odd 5x5 (C = 20) and the ragged 3x3 (C = 4).
        Algorithm::DepthwiseNhwcTile if dtype == DType::F32 => 7,
        Algorithm::DepthwiseNhwcTile => 5,
        _ => return all,
    };
    let taken: Vec<Conv2d> = all.iter().copied().filter(|p| algo.plan(p, dtype, &d).is_ok()).collect();
    assert_eq!(taken.len(), expected, "{algo} ({dtype}) takes {taken:?}");
    taken
}

#[test]
fn depthwise_kernels_match_cpu_on_named_shapes() {
    let Some(gpu) = gpu_or_skip("depthwise_kernels_match_cpu_on_named_shapes") else { return };
    for (algo, dtype) in depthwise_kernels() {
        check_shapes_both_outputs(&gpu, algo, dtype, &taken_shapes(algo, dtype), 7);
    }
}

/// The 16-bit outputs are the fp32 outputs rounded, bit for bit, on the border-heavy shapes.
#[test]
fn depthwise_sixteen_bit_outputs_are_the_rounded_fp32_outputs() {
    let Some(gpu) = gpu_or_skip("depthwise_sixteen_bit_outputs_are_the_rounded_fp32_outputs") else { return };
    for (algo, dtype) in depthwise_kernels().into_iter().filter(|(_, d)| *d != DType::F32) {
        let all = taken_shapes(algo, dtype);
        let taken: Vec<usize> = (0..all.len()).filter(|&i| all[i].input_len() < 1 << 20).collect();
        check_sixteen_bit_rounding_on(&gpu, algo, dtype, &all, &taken);
    }
}

/// Auto routes a depthwise problem to a depthwise kernel; a grouped one with 1 < G < C goes to a Hopper kernel (tests/tests/gpu_grouped.rs)
/// and is refused elsewhere, with the reason.
#[test]
fn auto_takes_depthwise_problems_to_the_depthwise_kernels() {
    let d = DeviceModel::named("h100").unwrap();
    let p = Conv2d::new(32, 144, 56, 56, 144, 3, 3).with_pad(1).with_groups(144);
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        // From NCHW: a depthwise kernel, an NCHW one or an NHWC one between two transposes; on
        // a batch-1 layer the transposes cost more than an NCHW kernel's whole time.
        let pick = choose(&p, dtype, Layout::Nchw, &d).unwrap().pick;
        assert_eq!(pick.family(), Some(Family::Depthwise), "{dtype}: {pick}");
        let pick = choose(&Conv2d { n: 1, ..p }, dtype, Layout::Nchw, &d).unwrap().pick;
        assert!(matches!(pick, Algorithm::DepthwiseNchw | Algorithm::DepthwiseNchwStrip), "{dtype}: {pick}");
        // The strip and tile entries take this layer (3x3, stride 1, multiplier 1), and issue
        // fewer instructions an output than step 1 (fp32 is memory-bound on all three; the two
        // steps measured within 10% of each other on the H200).
        let pick = choose(&p, dtype, Layout::Nhwc, &d).unwrap().pick;
        let steps = [Algorithm::DepthwiseNhwcStrip, Algorithm::DepthwiseNhwcTile];
        assert!(steps.contains(&pick) || (dtype == DType::F32 && pick == Algorithm::DepthwiseNhwc), "{dtype}: {pick}");
        let p2 = Conv2d { k: 2 * p.c, ..p };
        // Multiplier 2: the scalar NHWC entry, or an NCHW kernel (which takes any) between transposes.
        let pick = choose(&p2, dtype, Layout::Nhwc, &d).unwrap().pick;
        assert!(matches!(pick, Algorithm::DepthwiseNhwc | Algorithm::DepthwiseNchw | Algorithm::DepthwiseNchwStrip), "multiplier 2, {dtype}: {pick}");
    }
    let a100 = DeviceModel::named("a100").unwrap();
    let e = choose(&p.with_groups(4), DType::F16, Layout::Nhwc, &a100).unwrap_err().to_string();
    assert!(e.contains("1 < groups < C") && e.contains("compute capability 9.0"), "{e}");
}
