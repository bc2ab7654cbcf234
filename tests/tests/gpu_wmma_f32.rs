//! GPU tests of the fp32 `mma.sync` kernels, `wmma_nhwc_tf32` and `wmma_nhwc_3xtf32` (sm_80 PTX,
//! run here on whatever GPU the machine has), against the f64 CPU reference: TF32 on the inputs
//! as the tensor cores read them (low 13 bits dropped; `convrs_tests::gpu_vs_cpu_to`), within
//! the fp32 accumulation's tolerance; 3xTF32 on the unrounded inputs, within fp32's
//! (`FP32_REL_L2_TOLERANCE`: its products are within about 2^-21 of the exact ones). Every
//! tile entry, not only the planner's picks. Without a GPU each test announces that it was
//! skipped.

use convrs::bench::{FP16_REL_L2_TOLERANCE, FP32_REL_L2_TOLERANCE};
use convrs::plan::tensor_core::nhwc_f32;
use convrs::workspace::Workspace;
use convrs::{compare, conv2d_cpu, launch, Algorithm, Conv2d, DType, Layout, Precision, Tensor};
use convrs_spec::hopper::Math;
use convrs_tests::{check_shapes_both_outputs, gpu_or_skip, property_test_gpu};

fn f32_kernels() -> Vec<(Algorithm, DType)> {
    convrs_tests::kernels(|k| matches!(k.algorithm, Algorithm::WmmaNhwcTf32 | Algorithm::WmmaNhwc3xTf32))
}

/// 64 random problems per kernel (odd sizes, padding, stride, dilation, N up to 20; C, K at the
/// kernels' multiples of 4 and 2), NaN-poisoned outputs.
#[test]
fn wmma_f32_kernels_match_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("wmma_f32_kernels_match_cpu_on_random_problems") else { return };
    for (algo, dtype) in f32_kernels() {
        property_test_gpu(&gpu, algo, dtype, 64);
    }
}

/// The corners a random draw may miss, through the planner's picks.
#[test]
fn wmma_f32_kernels_match_cpu_on_named_shapes() {
    let Some(gpu) = gpu_or_skip("wmma_f32_kernels_match_cpu_on_named_shapes") else { return };
    let shapes = [
        Conv2d::new(2, 256, 14, 14, 512, 3, 3).with_pad(1), // C*R*S = 2304: a long reduction
        Conv2d::new(2, 64, 56, 56, 64, 3, 3).with_pad(1),
        Conv2d::new(3, 4, 13, 11, 2, 3, 3).with_pad(1),     // C = 4, K = 2: one chunk, one pair
        Conv2d::new(1, 20, 9, 7, 42, 3, 3),                 // C not a k-tile multiple, ragged M and K
        Conv2d::new(3, 36, 31, 29, 24, 1, 1).with_stride(2), // 1x1, stride 2, odd sizes
        Conv2d::new(2, 32, 40, 41, 16, 3, 3).with_pad(2).with_dilation(2),
        Conv2d::new(1, 4, 1, 1, 2, 1, 1),                   // the smallest problem
        Conv2d::new(1, 16, 5, 5, 8, 5, 5).with_pad(4),      // most taps in the padding
    ];
    for (algo, dtype) in f32_kernels() {
        check_shapes_both_outputs(&gpu, algo, dtype, &shapes, 11);
    }
}

/// Every tile entry of both kernels on ragged shapes (M, K not tile multiples; C not a whole
/// number of 32-channel k-tiles), through `plan_for_kernel`: the data in the kernels' NHWC
/// layouts, the output poisoned with NaN first.
#[test]
fn wmma_f32_every_tile_matches_cpu() {
    let Some(gpu) = gpu_or_skip("wmma_f32_every_tile_matches_cpu") else { return };
    let shapes = [
        Conv2d::new(3, 76, 13, 11, 266, 3, 3).with_pad(1),
        Conv2d { pad: (0, 1), stride: (2, 1), dilation: (2, 1), ..Conv2d::new(2, 8, 19, 17, 24, 2, 3) },
    ];
    let tf32 = |t: &Tensor<f32>| t.map(|v| f32::from_bits(v.to_bits() & !0x1FFF));
    for math in [Math::Tf32, Math::Tf32x3] {
        for p in &shapes {
            let p = p.with_precision(if math == Math::Tf32 { Precision::Tf32 } else { Precision::Fp32 });
            let x = Tensor::random(p.input_shape(), Layout::Nchw, 5).unwrap();
            let w = Tensor::random(p.filter_shape(), Layout::Nchw, 6).unwrap();
            let (reference, tolerance) = if math == Math::Tf32 {
                (conv2d_cpu(&p, &tf32(&x), &tf32(&w)).unwrap(), FP16_REL_L2_TOLERANCE)
            } else {
                (conv2d_cpu(&p, &x, &w).unwrap(), FP32_REL_L2_TOLERANCE)
            };
            let dx = gpu.upload(x.to_layout(Layout::Nhwc).unwrap().data()).unwrap();
            let dw = gpu.upload(w.to_layout(Layout::Nhwc).unwrap().data()).unwrap();
            for name in nhwc_f32::kernel_names(math) {
                let plan = nhwc_f32::plan_for_kernel(&p, gpu.model(), name).unwrap();
                let mut dy = gpu.alloc_zeros::<f32>(p.output_len()).unwrap();
                gpu.poison(&mut dy).unwrap();
                launch(&gpu, &plan, &p, &dx, &dw, &mut dy, &mut Workspace::none()).unwrap();
                gpu.synchronize().unwrap();
                let y = Tensor::new(p.output_shape(), Layout::Nhwc, gpu.download(&dy).unwrap()).unwrap().to_layout(Layout::Nchw).unwrap();
                let c = compare(y.data(), reference.data());
                assert!(c.non_finite == 0 && c.rel_l2_err <= tolerance, "{name} on {p}: {c}");
            }
        }
    }
}

/// The plans refuse what the kernels cannot take, with the reason, and the host API runs it
/// zero-padded instead.
#[test]
fn wmma_f32_plans_refuse_channels_off_the_chunk() {
    let d = convrs::DeviceModel::named("a100").unwrap();
    for algo in [Algorithm::WmmaNhwcTf32, Algorithm::WmmaNhwc3xTf32] {
        let precision = algo.kernel().unwrap().precision;
        let e = algo.plan(&Conv2d::new(1, 6, 8, 8, 8, 3, 3).with_precision(precision), DType::F32, &d).unwrap_err().to_string();
        assert!(e.contains("multiple of 4"), "{algo}: {e}");
        assert!(algo.plan(&Conv2d::new(1, 8, 8, 8, 8, 3, 3).with_precision(precision), DType::F16, &d).is_err(), "{algo} on fp16");
    }
    // 3xTF32 is as accurate as fp32 asks; TF32 is not.
    let e = Algorithm::WmmaNhwcTf32.plan(&Conv2d::new(1, 8, 8, 8, 8, 3, 3), DType::F32, &d).unwrap_err().to_string();
    assert!(e.contains("asks for fp32"), "{e}");
}

/// `wmma_nhwc_3xtf32` (each k-step's three MMAs summed apart) on short reductions is no less
/// accurate than the FMA kernels on the same data.
#[test]
fn wmma_3xtf32_is_as_accurate_as_fma_on_short_reductions() {
    let Some(gpu) = gpu_or_skip("wmma_3xtf32_is_as_accurate_as_fma_on_short_reductions") else { return };
    let x3: Vec<Algorithm> = f32_kernels().into_iter().map(|(a, _)| a).filter(|a| *a == Algorithm::WmmaNhwc3xTf32).collect();
    let shapes = convrs_tests::short_reduction_shapes();
    let ran = convrs_tests::check_as_accurate_as_fma(&gpu, &x3, &shapes);
    assert_eq!(ran, x3.len() * shapes.len());
}
