//! GPU tests of `wmma_nhwc` (tensor-core implicit GEMM, fp16 NHWC in, fp16 or fp32 out) against the f64
//! CPU reference on the fp16-rounded inputs, and of every tile entry of both `wmma_nhwc` and
//! `wmma_nhwcnc` (which share the kernel and its tiles). Without a GPU each test announces that
//! it was skipped.

use convrs::bench::FP16_REL_L2_TOLERANCE;
use convrs::plan::tensor_core::{nhwc as wmma_nhwc, nhwcnc as wmma_nhwcnc};
use convrs::plan::LaunchPlan;
use convrs::DeviceModel;
use convrs::timing::{time_runs, TimingConfig};
use convrs::workspace::Workspace;
use convrs::{compare, conv2d_cpu, launch, Algorithm, Comparison, Conv2d, DType, Error, Gpu, Layout, Tensor};
use convrs_tests::{check_shapes_both_outputs, gpu_or_skip, gpu_vs_cpu_to, property_test_gpu, tolerance, Out};
use half::f16;

const ALGO: Algorithm = Algorithm::WmmaNhwc;

#[test]
fn wmma_nhwc_matches_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("wmma_nhwc_matches_cpu_on_random_problems") else { return };
    property_test_gpu(&gpu, ALGO, DType::F16, 64);
}

/// The speed shapes at small batch, each tile entry, and the corners a random draw may miss.
#[test]
fn wmma_nhwc_matches_cpu_on_named_shapes() {
    let Some(gpu) = gpu_or_skip("wmma_nhwc_matches_cpu_on_named_shapes") else { return };
    let shapes = [
        Conv2d::new(2, 256, 14, 14, 512, 3, 3).with_pad(1), // the speed target at batch 2
        Conv2d::new(2, 64, 56, 56, 64, 3, 3).with_pad(1),   // 128x64 tile
        Conv2d::new(2, 512, 7, 7, 512, 3, 3).with_pad(1),   // 64x64 tile, C spans 16 k-tiles per tap
        Conv2d::new(3, 8, 13, 11, 8, 3, 3).with_pad(1),     // C = 8, K = 8: one partial chunk each
        Conv2d::new(1, 24, 9, 7, 40, 3, 3),                 // ragged M (35 pixels), K not a tile multiple
        Conv2d::new(3, 40, 31, 29, 24, 1, 1).with_stride(2), // 1x1, stride 2, odd sizes
        Conv2d::new(2, 16, 33, 35, 136, 7, 7).with_pad(3),  // 7x7, K spans two 128 tiles
        Conv2d::new(2, 32, 40, 41, 16, 3, 3).with_pad(2).with_dilation(2), // dilation 2
        Conv2d { n: 2, c: 48, h: 23, w: 64, k: 72, r: 3, s: 5, pad: (1, 2), stride: (2, 1), dilation: (1, 3), precision: Default::default(), groups: 1, epilogue: Default::default() }, // per-axis values
        Conv2d::new(1, 8, 1, 1, 8, 1, 1),                   // the smallest problem
        Conv2d::new(1, 16, 5, 5, 8, 5, 5).with_pad(4),      // padding near the filter size: most taps are zeros
    ];
    check_shapes_both_outputs(&gpu, ALGO, DType::F16, &shapes, 7);
}

/// C or K not a multiple of 8 is refused by the plan (on the GPU path too), never launched.
/// The bf16 entries (the same kernels with the bf16 `mma.sync`): random problems at each
/// kernel's multiples, against the f64 sum of the same bf16-rounded inputs (tolerance as fp16:
/// bf16 products are exact in fp32 too).
#[test]
fn bf16_kernels_match_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("bf16_kernels_match_cpu_on_random_problems") else { return };
    property_test_gpu(&gpu, Algorithm::WmmaNhwc, DType::BF16, 64);
    property_test_gpu(&gpu, Algorithm::WmmaNhwcnc, DType::BF16, 64);
}

#[test]
fn wmma_plans_refuse_channels_not_multiple_of_8() {
    // The kernel itself needs multiples (16-byte channel copies); the host API pads instead.
    for p in [Conv2d::new(1, 12, 8, 8, 16, 3, 3), Conv2d::new(1, 16, 8, 8, 20, 3, 3)] {
        match ALGO.plan(&p, DType::F16, &DeviceModel::named("h100").unwrap()) {
            Err(Error::Unsupported { algorithm: "wmma_nhwc", .. }) => {}
            other => panic!("{p}: expected Unsupported, got {other:?}"),
        }
    }
}

/// Any N, C and K through the host API: the tensor-core kernels run the problem zero-padded to
/// their multiples (C, K to 8; N, C, K to 16 for the blocked layouts) and the padding is dropped
/// from the output. C and K from every value 1..=80, N 1..=20, odd sizes, strides, dilation.
#[test]
fn wmma_kernels_take_any_channel_count_by_padding() {
    let Some(gpu) = gpu_or_skip("wmma_kernels_take_any_channel_count_by_padding") else { return };
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let problems = (1usize..=20, 1usize..=80, 1usize..=80, 3usize..12, 3usize..12, 1usize..=3, 0usize..=1, 1usize..=2, 1usize..=2, any::<u64>())
        .prop_map(|(n, c, k, h, w, r, pad, stride, dil, seed)| (Conv2d { pad: (pad, pad), stride: (stride, 1), dilation: (1, dil), ..Conv2d::new(n, c, h, w, k, r, r) }, seed))
        .prop_filter("valid", |(p, _)| p.validate().is_ok());
    for (algo, dtype) in convrs_tests::kernels(|k| matches!(k.algorithm, Algorithm::WmmaNhwc | Algorithm::WmmaNhwcnc)) {
        let mut runner = TestRunner::new(Config { cases: 64, failure_persistence: None, ..Config::default() });
        let result = runner.run(&problems, |(p, seed)| {
            let out = if seed & 1 == 1 { Out::F32 } else { Out::Input };
            let c = gpu_vs_cpu_to(&gpu, algo, dtype, &p, seed, out).map_err(|e| TestCaseError::fail(format!("{algo} ({dtype}) on {p} ({out:?} output): {e}")))?;
            prop_assert_eq!(c.non_finite, 0, "{} ({}) on {} ({:?} output): {}", algo, dtype, p, out, c);
            prop_assert!(c.rel_l2_err <= tolerance(dtype, out), "{} ({}) on {} ({:?} output): {}", algo, dtype, p, out, c);
            Ok(())
        });
        if let Err(e) = result {
            panic!("{algo} ({dtype}): {e}");
        }
    }
}

/// The 16-bit epilogue rounds, and only rounds: on the same data, each kernel's fp16 (bf16) output
/// is bit for bit the round-to-nearest-even of its own fp32 output, on ragged shapes whose edges
/// predicate the stores.
#[test]
fn sixteen_bit_outputs_are_the_rounded_fp32_outputs() {
    let Some(gpu) = gpu_or_skip("sixteen_bit_outputs_are_the_rounded_fp32_outputs") else { return };
    for (algo, dtype) in convrs_tests::kernels(|k| matches!(k.algorithm, Algorithm::WmmaNhwc | Algorithm::WmmaNhwcnc)) {
        convrs_tests::check_sixteen_bit_rounding(&gpu, algo, dtype);
    }
}

/// Random fp16 input and filter for `p` (NCHW / KCRS) and the f64 CPU reference output.
fn data(p: &Conv2d, seed: u64) -> (Tensor<f16>, Tensor<f16>, Tensor<f64>) {
    let x = Tensor::random(p.input_shape(), Layout::Nchw, seed).unwrap().map(f16::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed + 1).unwrap().map(f16::from_f32);
    let reference = conv2d_cpu(p, &x, &w).unwrap();
    (x, w, reference)
}

/// Every tile entry of `algo` and the plan of `p` for one of them.
type TilePlanner = fn(&Conv2d, &DeviceModel, &str) -> convrs::Result<LaunchPlan>;
fn tiles(algo: Algorithm) -> (Vec<&'static str>, TilePlanner) {
    match algo {
        Algorithm::WmmaNhwc => (wmma_nhwc::kernel_names(), wmma_nhwc::plan_for_kernel),
        Algorithm::WmmaNhwcnc => (wmma_nhwcnc::kernel_names(), wmma_nhwcnc::plan_for_kernel),
        other => panic!("{other} has no tile entries here"),
    }
}

/// Runs `plan` (any tile of `algo`, not only the one the planner picks) on `data` in `algo`'s
/// layouts and compares with its reference; the output is poisoned with NaN first. With `time`,
/// also returns the median of 50 timed launches in ms.
fn run_plan(gpu: &Gpu, algo: Algorithm, p: &Conv2d, plan: &LaunchPlan, (x, w, reference): &(Tensor<f16>, Tensor<f16>, Tensor<f64>), time: bool) -> (Comparison, Option<f64>) {
    let (lx, lw, ly) = algo.layouts().expect("a kernel");
    let dx = gpu.upload(x.to_layout(lx).unwrap().data()).unwrap();
    let dw = gpu.upload(w.to_layout(lw).unwrap().data()).unwrap();
    let mut dy = gpu.alloc_zeros::<f32>(p.output_len()).unwrap();
    gpu.poison(&mut dy).unwrap();
    let mut ws = Workspace::none();
    launch(gpu, plan, p, &dx, &dw, &mut dy, &mut ws).unwrap();
    gpu.synchronize().unwrap();
    let y = Tensor::new(p.output_shape(), ly, gpu.download(&dy).unwrap()).unwrap().to_layout(Layout::Nchw).unwrap();
    let c = compare(y.data(), reference.data());
    let t = time.then(|| {
        time_runs(gpu, TimingConfig::new(5, 50), |_| launch(gpu, plan, p, &dx, &dw, &mut dy, &mut ws)).unwrap().median_ms
    });
    (c, t)
}

/// Every tile entry of both layout families, not only those the planner picks on the named
/// shapes, on ragged shapes (M and K not tile multiples; C/64 not whole for the 64-channel
/// k-tiles).
#[test]
fn wmma_every_tile_matches_cpu() {
    let Some(gpu) = gpu_or_skip("wmma_every_tile_matches_cpu") else { return };
    let nhwc = [
        Conv2d::new(3, 72, 13, 11, 264, 3, 3).with_pad(1),
        Conv2d { n: 2, c: 8, h: 19, w: 17, k: 24, r: 2, s: 3, pad: (0, 1), stride: (2, 1), dilation: (2, 1), precision: Default::default(), groups: 1, epilogue: Default::default() },
    ];
    let blocked = [
        Conv2d::new(16, 80, 13, 11, 272, 3, 3).with_pad(1),
        Conv2d { n: 32, c: 16, h: 19, w: 17, k: 48, r: 2, s: 3, pad: (0, 1), stride: (2, 1), dilation: (2, 1), precision: Default::default(), groups: 1, epilogue: Default::default() },
    ];
    for (algo, shapes) in [(Algorithm::WmmaNhwc, &nhwc), (Algorithm::WmmaNhwcnc, &blocked)] {
        let (names, plan_for_kernel) = tiles(algo);
        for p in shapes {
            let d = data(p, 3);
            for &name in &names {
                let plan = plan_for_kernel(p, gpu.model(), name).unwrap();
                let (c, _) = run_plan(&gpu, algo, p, &plan, &d, false);
                assert!(c.non_finite == 0 && c.rel_l2_err <= FP16_REL_L2_TOLERANCE, "{name} on {p}: {c}");
            }
        }
    }
}

/// Times every tile of both layout families on the speed shapes (run with `--ignored
/// --nocapture` on a GPU).
#[test]
#[ignore]
fn wmma_tile_timings() {
    let Some(gpu) = gpu_or_skip("wmma_tile_timings") else { return };
    let shapes = [
        Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1),
        Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1),
        Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1),
    ];
    for (p, algo) in shapes.iter().flat_map(|p| [(p, Algorithm::WmmaNhwc), (p, Algorithm::WmmaNhwcnc)]) {
        let picked = algo.plan(p, DType::F16, gpu.model()).unwrap().kernel;
        let d = data(p, 5);
        let (names, plan_for_kernel) = tiles(algo);
        for name in names {
            let plan = plan_for_kernel(p, gpu.model(), name).unwrap();
            let (c, t) = run_plan(&gpu, algo, p, &plan, &d, true);
            let t = t.unwrap();
            println!(
                "TIMING {p} {name}{} grid {}: {t:.4} ms {:.1} TFLOP/s rel_l2 {:.1e}",
                if name == picked { " (picked)" } else { "" },
                plan.grid.0,
                p.flops() / (t * 1e-3) / 1e12,
                c.rel_l2_err
            );
            assert!(c.non_finite == 0 && c.rel_l2_err <= FP16_REL_L2_TOLERANCE, "{name} on {p}: {c}");
        }
    }
}
