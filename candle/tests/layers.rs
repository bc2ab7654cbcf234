//! convrs-candle against candle's own convolution on the CPU in f64: the expected values come
//! from candle (a different implementation), on the same rounded inputs.
//!
//! CPU tests (run everywhere, CI included): the problem each layer maps to, the fallback to
//! candle's convolution for CPU tensors, clear errors for mismatched channels. GPU tests say
//! loudly that they were skipped where there is no CUDA device.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Conv1dConfig, Conv2dConfig};
use convrs_candle::{Conv1d, Conv2d, Precision};

/// candle's CUDA device 0, or `None` after a SKIPPED banner written straight to stderr (past the
/// harness's capture, so CI's log shows it); a panic where `CONVRS_REQUIRE_GPU=1` (the GPU
/// machine's run). Device::new_cuda's error is not printed: without a driver, formatting it
/// calls the driver.
fn cuda_or_skip(test: &str) -> Option<Device> {
    use std::io::Write;
    match Device::new_cuda(0) {
        Ok(d) => Some(d),
        Err(_) if std::env::var("CONVRS_REQUIRE_GPU").is_ok_and(|v| v == "1") => panic!("CONVRS_REQUIRE_GPU=1 but candle found no CUDA device"),
        Err(_) => {
            let _ = writeln!(std::io::stderr(), "\n*** SKIPPED GPU test `{test}`: no CUDA device (this is not a pass) ***\n");
            None
        }
    }
}

fn cfg(padding: usize, stride: usize, dilation: usize, groups: usize) -> Conv2dConfig {
    Conv2dConfig { padding, stride, dilation, groups, cudnn_fwd_algo: None }
}

#[test]
fn layers_map_to_convrs_problems() {
    let w = Tensor::zeros((64, 16, 3, 5), DType::F32, &Device::Cpu).unwrap();
    let conv = Conv2d::new(w, None, cfg(2, 2, 1, 2)).with_precision(Precision::Tf32);
    let p = conv.problem([8, 32, 30, 40]).unwrap();
    assert_eq!((p.n, p.c, p.h, p.w, p.k, p.r, p.s), (8, 32, 30, 40, 64, 3, 5));
    assert_eq!((p.pad, p.stride, p.dilation, p.groups, p.precision), ((2, 2), (2, 2), (1, 1), 2, Precision::Tf32));
    // The weight's second dim must be C / groups.
    let err = conv.problem([8, 16, 30, 40]).unwrap_err().to_string();
    assert!(err.contains("input channels per group"), "{err}");

    // A 1-D layer runs as H = 1, padded, strided and dilated along W only.
    let w = Tensor::zeros((32, 8, 5), DType::F32, &Device::Cpu).unwrap();
    let conv = Conv1d::new(w, None, Conv1dConfig { padding: 2, stride: 3, dilation: 2, groups: 1, cudnn_fwd_algo: None }).unwrap();
    let p = conv.as_conv2d().problem([4, 8, 1, 100]).unwrap();
    assert_eq!((p.h, p.w, p.r, p.s, p.pad, p.stride, p.dilation), (1, 100, 1, 5, (0, 2), (1, 3), (1, 2)));
}

#[test]
fn cpu_tensors_run_on_candles_convolution() {
    let dev = Device::Cpu;
    let x = Tensor::randn(0f32, 1.0, (2, 6, 9, 7), &dev).unwrap();
    let w = Tensor::randn(0f32, 1.0, (4, 6, 3, 3), &dev).unwrap();
    let b = Tensor::randn(0f32, 1.0, 4, &dev).unwrap();
    let c = cfg(1, 2, 1, 1);
    let ours = Conv2d::new(w.clone(), Some(b.clone()), c).forward(&x).unwrap();
    let theirs = candle_nn::Conv2d::new(w, Some(b), c).forward(&x).unwrap();
    // The same implementation runs both: equal to the bit.
    assert_eq!(ours.dims(), theirs.dims());
    assert_eq!(ours.flatten_all().unwrap().to_vec1::<f32>().unwrap(), theirs.flatten_all().unwrap().to_vec1::<f32>().unwrap());
    assert_eq!(Conv2d::new(Tensor::zeros((4, 6, 3, 3), DType::F32, &dev).unwrap(), None, c).kernel_for([2, 6, 9, 7], &dev).unwrap(), None);
}

/// Relative L2 error of `got` against candle's CPU convolution in f64 of the same (rounded)
/// inputs.
fn rel_l2(got: &Tensor, want: &Tensor) -> f64 {
    let got = got.to_device(&Device::Cpu).unwrap().to_dtype(DType::F64).unwrap();
    let num = (&got - want).unwrap().sqr().unwrap().sum_all().unwrap().to_scalar::<f64>().unwrap();
    let den = want.sqr().unwrap().sum_all().unwrap().to_scalar::<f64>().unwrap();
    (num / den).sqrt()
}

/// Bounds on the relative L2 error, by what each precision rounds: f16 and bf16 outputs are
/// rounded once (2^-11 and 2^-8 relative per element), fp32 accumulation adds far less; TF32
/// rounds both operands to 10 mantissa bits (2^-11 each, so up to 2^-10 per product); 3xTF32
/// and FMA are fp32-accurate (sums of a few hundred products: about 1e-6).
fn bound(dtype: DType, precision: Precision) -> f64 {
    match (dtype, precision) {
        (DType::F16, _) => 1e-3,
        (DType::BF16, _) => 8e-3,
        (_, Precision::Tf32) => 2e-3,
        _ => 1e-5,
    }
}

/// One layer through convrs-candle against candle on the CPU in f64.
fn check_layer(dev: &Device, dtype: DType, precision: Precision, x_dims: (usize, usize, usize, usize), k: usize, rs: (usize, usize), c: Conv2dConfig, bias: bool) -> Conv2d {
    let (n, ch, h, w) = x_dims;
    let x = Tensor::randn(0f32, 1.0, x_dims, dev).unwrap().to_dtype(dtype).unwrap();
    let wt = Tensor::randn(0f32, 0.2, (k, ch / c.groups, rs.0, rs.1), dev).unwrap().to_dtype(dtype).unwrap();
    let b = bias.then(|| Tensor::randn(0f32, 1.0, k, dev).unwrap().to_dtype(dtype).unwrap());
    let conv = Conv2d::new(wt.clone(), b.clone(), c).with_precision(precision);
    let y = conv.forward(&x).unwrap();
    let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F64).unwrap();
    let mut want = cpu(&x).conv2d(&cpu(&wt), c.padding, c.stride, c.dilation, c.groups).unwrap();
    if let Some(b) = &b {
        want = want.broadcast_add(&cpu(b).reshape((1, k, 1, 1)).unwrap()).unwrap();
    }
    assert_eq!(y.dims(), want.dims());
    assert_eq!(y.dtype(), dtype);
    let err = rel_l2(&y, &want);
    assert!(err <= bound(dtype, precision), "{dtype:?} {precision} x {n}x{ch}x{h}x{w} -> {k} {rs:?} {c:?}: rel L2 {err:.3e}");
    conv
}

#[test]
fn layers_match_candle_in_f64() {
    let Some(dev) = cuda_or_skip("layers_match_candle_in_f64") else { return };
    let shapes = [
        ((2, 16, 20, 20), 32, (3, 3), cfg(1, 1, 1, 1)),
        ((3, 5, 17, 15), 7, (3, 3), cfg(1, 2, 1, 1)),
        ((1, 64, 14, 14), 128, (1, 1), cfg(0, 1, 1, 1)),
        ((4, 3, 32, 32), 16, (7, 7), cfg(3, 2, 1, 1)),
        ((2, 24, 12, 12), 24, (3, 3), cfg(2, 1, 2, 1)),
        ((2, 32, 16, 16), 32, (3, 3), cfg(1, 1, 1, 32)), // depthwise
    ];
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let precisions: &[Precision] = if dtype == DType::F32 { &[Precision::Fp32, Precision::Tf32] } else { &[Precision::Fp32] };
        for &precision in precisions {
            for (i, &(x, k, rs, c)) in shapes.iter().enumerate() {
                let conv = check_layer(&dev, dtype, precision, x, k, rs, c, i % 2 == 0);
                let kernel = conv.kernel_for([x.0, x.1, x.2, x.3], &dev).unwrap();
                assert!(kernel.is_some(), "{dtype:?} {x:?}: convrs should run it, candle did");
            }
        }
    }
}

/// Grouped layers (1 < groups < C) run on convrs's Hopper kernels in merged groups; elsewhere
/// on candle's convolution. Either way the output is candle's in f64.
#[test]
fn grouped_layers_run_on_convrs_on_hopper() {
    let Some(dev) = cuda_or_skip("grouped_layers_run_on_convrs_on_hopper") else { return };
    let hopper = convrs::Gpu::new(0).is_ok_and(|g| g.model().compute_capability == (9, 0));
    // ResNeXt-like (8 channels a group, merged), and 4 groups of 4 -> 8 (merged into one).
    let shapes = [((2, 256, 10, 10), 256, cfg(1, 1, 1, 32)), ((2, 16, 10, 10), 32, cfg(1, 1, 1, 4))];
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for (i, &(x, k, c)) in shapes.iter().enumerate() {
            let conv = check_layer(&dev, dtype, Precision::Fp32, x, k, (3, 3), c, i == 0);
            let kernel = conv.kernel_for([x.0, x.1, x.2, x.3], &dev).unwrap();
            assert_eq!(kernel.is_some(), hopper, "{dtype:?} {x:?} {c:?}: {kernel:?}");
        }
    }
}

#[test]
fn views_and_strided_inputs_are_read_correctly() {
    let Some(dev) = cuda_or_skip("views_and_strided_inputs_are_read_correctly") else { return };
    let big = Tensor::randn(0f32, 1.0, (6, 16, 12, 12), &dev).unwrap().to_dtype(DType::F16).unwrap();
    let w = Tensor::randn(0f32, 0.2, (24, 16, 3, 3), &dev).unwrap().to_dtype(DType::F16).unwrap();
    let conv = Conv2d::new(w.clone(), None, cfg(1, 1, 1, 1));
    let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F64).unwrap();
    // A batch view at an offset (read in place: 2 images of 16*144 halves, 16-byte aligned)...
    let view = big.narrow(0, 2, 3).unwrap();
    assert!(view.layout().start_offset() > 0);
    let want = cpu(&view).conv2d(&cpu(&w), 1, 1, 1, 1).unwrap();
    assert!(rel_l2(&conv.forward(&view).unwrap(), &want) <= 1e-3);
    // ... one at an unaligned offset, and a transposed (non-contiguous) input: copied first.
    let odd = big.narrow(3, 1, 11).unwrap();
    let want = cpu(&odd).conv2d(&cpu(&w), 1, 1, 1, 1).unwrap();
    assert!(rel_l2(&conv.forward(&odd).unwrap(), &want) <= 1e-3);
    let t = big.transpose(2, 3).unwrap();
    let want = cpu(&t).conv2d(&cpu(&w), 1, 1, 1, 1).unwrap();
    assert!(rel_l2(&conv.forward(&t).unwrap(), &want) <= 1e-3);
}

#[test]
fn conv1d_matches_candle_in_f64() {
    let Some(dev) = cuda_or_skip("conv1d_matches_candle_in_f64") else { return };
    for (c, l, k, s, cfg1) in [(16, 100, 32, 5, Conv1dConfig { padding: 2, stride: 1, dilation: 1, groups: 1, cudnn_fwd_algo: None }), (8, 64, 8, 3, Conv1dConfig { padding: 2, stride: 2, dilation: 2, groups: 8, cudnn_fwd_algo: None })] {
        let x = Tensor::randn(0f32, 1.0, (3, c, l), &dev).unwrap();
        let w = Tensor::randn(0f32, 0.2, (k, c / cfg1.groups, s), &dev).unwrap();
        let conv = Conv1d::new(w.clone(), None, cfg1).unwrap();
        let y = conv.forward(&x).unwrap();
        let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F64).unwrap();
        let want = cpu(&x).conv1d(&cpu(&w), cfg1.padding, cfg1.stride, cfg1.dilation, cfg1.groups).unwrap();
        assert_eq!(y.dims(), want.dims());
        let err = rel_l2(&y, &want);
        assert!(err <= 1e-5, "conv1d {c}x{l} -> {k}x{s} {cfg1:?}: {err:.3e}");
        assert!(conv.as_conv2d().kernel_for([3, c, 1, l], &dev).unwrap().is_some());
    }
}

/// A batch norm with random statistics and affine terms, on `dev`.
fn random_bn(k: usize, dev: &Device) -> candle_nn::BatchNorm {
    let u = |lo: f32, hi: f32| Tensor::rand(lo, hi, k, dev).unwrap();
    candle_nn::BatchNorm::new(k, u(-0.2, 0.2), u(0.5, 1.5), u(0.5, 1.5), u(-0.5, 0.5), 1e-5).unwrap()
}

/// The fused layer in f64 by candle's CPU ops: batch norm in inference mode, residual, ReLU.
fn fused_reference(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, bn: &candle_nn::BatchNorm, residual: &Tensor, c: Conv2dConfig) -> Tensor {
    let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F64).unwrap();
    let mut y = cpu(x).conv2d(&cpu(w), c.padding, c.stride, c.dilation, c.groups).unwrap();
    let k = w.dim(0).unwrap();
    let ch = |t: &Tensor| cpu(t).reshape((1, k, 1, 1)).unwrap();
    if let Some(b) = bias {
        y = y.broadcast_add(&ch(b)).unwrap();
    }
    let (gamma, beta) = bn.weight_and_bias().unwrap();
    let inv = (cpu(bn.running_var()) + bn.eps()).unwrap().sqrt().unwrap().recip().unwrap();
    let y = y.broadcast_sub(&ch(bn.running_mean())).unwrap().broadcast_mul(&inv.reshape((1, k, 1, 1)).unwrap()).unwrap();
    let y = y.broadcast_mul(&ch(gamma)).unwrap().broadcast_add(&ch(beta)).unwrap();
    (y + cpu(residual)).unwrap().relu().unwrap()
}

#[test]
fn fused_layers_match_candle_in_f64() {
    let Some(dev) = cuda_or_skip("fused_layers_match_candle_in_f64") else { return };
    for (dtype, tol) in [(DType::F16, 2e-3), (DType::BF16, 1.2e-2), (DType::F32, 1e-5)] {
        for (x_dims, k, rs, c) in [((2, 32, 14, 14), 64, 3, cfg(1, 1, 1, 1)), ((4, 64, 8, 8), 256, 1, cfg(0, 1, 1, 1)), ((2, 16, 15, 15), 32, 3, cfg(1, 2, 1, 1))] {
            let x = Tensor::randn(0f32, 1.0, x_dims, &dev).unwrap().to_dtype(dtype).unwrap();
            let w = Tensor::randn(0f32, 0.2, (k, x_dims.1, rs, rs), &dev).unwrap().to_dtype(dtype).unwrap();
            let b = Tensor::randn(0f32, 1.0, k, &dev).unwrap().to_dtype(dtype).unwrap();
            let bn = random_bn(k, &dev);
            let conv = Conv2d::new(w.clone(), Some(b.clone()), c).fuse_batch_norm(&bn).unwrap().with_activation(convrs_candle::Activation::Relu);
            let plain = conv.forward(&Tensor::zeros(x_dims, dtype, &dev).unwrap()).unwrap();
            let residual = Tensor::randn(0f32, 1.0, plain.dims(), &dev).unwrap().to_dtype(dtype).unwrap();
            let y = conv.forward_residual(&x, &residual).unwrap();
            let want = fused_reference(&x, &w, Some(&b), &bn, &residual, c);
            let err = rel_l2(&y, &want);
            assert!(err <= tol, "{dtype:?} {x_dims:?} -> {k} {rs}x{rs}: rel L2 {err:.3e}");
            assert!(conv.kernel_for([x_dims.0, x_dims.1, x_dims.2, x_dims.3], &dev).unwrap().is_some());
        }
    }
}

#[test]
fn fused_layers_on_the_cpu_run_candles_ops() {
    let dev = Device::Cpu;
    let c = cfg(1, 1, 1, 1);
    let x = Tensor::randn(0f32, 1.0, (2, 8, 6, 6), &dev).unwrap();
    let w = Tensor::randn(0f32, 0.2, (16, 8, 3, 3), &dev).unwrap();
    let b = Tensor::randn(0f32, 1.0, 16, &dev).unwrap();
    let bn = random_bn(16, &dev);
    let residual = Tensor::randn(0f32, 1.0, (2, 16, 6, 6), &dev).unwrap();
    let conv = Conv2d::new(w.clone(), Some(b.clone()), c).fuse_batch_norm(&bn).unwrap().with_activation(convrs_candle::Activation::Relu);
    let y = conv.forward_residual(&x, &residual).unwrap();
    // fp32 ops in another order than the f64 reference: a few fp32 roundings apart.
    let err = rel_l2(&y, &fused_reference(&x, &w, Some(&b), &bn, &residual, c));
    assert!(err <= 1e-6, "rel L2 {err:.3e}");
}

/// Transposed convolutions: (input dims, C_out, kernel, padding, output_padding, stride, dilation).
const TRANSPOSED: [((usize, usize, usize, usize), usize, usize, usize, usize, usize, usize); 5] = [
    ((2, 16, 9, 9), 8, 4, 1, 0, 2, 1),  // the usual 2x upsampling
    ((1, 8, 7, 6), 12, 3, 1, 1, 2, 1),  // output padding
    ((2, 8, 10, 10), 8, 3, 1, 0, 1, 2), // stride 1, dilated: one phase
    ((1, 6, 5, 7), 4, 5, 2, 0, 3, 1),   // stride 3
    ((2, 4, 6, 6), 4, 1, 0, 0, 1, 1),   // 1x1
];

fn transposed_case(dev: &Device, dtype: DType, i: usize, tol: f64) {
    let (x_dims, k, r, p, op, s, d) = TRANSPOSED[i];
    let x = Tensor::randn(0f32, 1.0, x_dims, dev).unwrap().to_dtype(dtype).unwrap();
    let w = Tensor::randn(0f32, 0.2, (x_dims.1, k, r, r), dev).unwrap().to_dtype(dtype).unwrap();
    let b = Tensor::randn(0f32, 1.0, k, dev).unwrap().to_dtype(dtype).unwrap();
    let cfg = candle_nn::ConvTranspose2dConfig { padding: p, output_padding: op, stride: s, dilation: d };
    let layer = convrs_candle::ConvTranspose2d::new(w.clone(), Some(b.clone()), cfg).unwrap();
    assert!(layer.runs_on_convrs(x_dims.2, x_dims.3).unwrap(), "case {i} should map onto convolutions");
    let y = layer.forward(&x).unwrap();
    let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F64).unwrap();
    let want = cpu(&x).conv_transpose2d(&cpu(&w), p, op, s, d).unwrap().broadcast_add(&cpu(&b).reshape((1, k, 1, 1)).unwrap()).unwrap();
    assert_eq!(y.dims(), want.dims(), "case {i}");
    let err = rel_l2(&y, &want);
    assert!(err <= tol, "{dtype:?} case {i}: rel L2 {err:.3e}");
}

#[test]
fn transposed_convolutions_by_phases_match_candle_on_the_cpu() {
    // On the CPU each phase runs on candle's conv2d: this checks the decomposition and the
    // interleaving (f32 sums in another order than the f64 reference).
    for i in 0..TRANSPOSED.len() {
        transposed_case(&Device::Cpu, DType::F32, i, 1e-6);
    }
    // A stride larger than the filter leaves phases without taps: candle's own runs it.
    let w = Tensor::randn(0f32, 0.2, (4, 4, 2, 2), &Device::Cpu).unwrap();
    let cfg = candle_nn::ConvTranspose2dConfig { padding: 0, output_padding: 0, stride: 3, dilation: 1 };
    let layer = convrs_candle::ConvTranspose2d::new(w.clone(), None, cfg).unwrap();
    assert!(!layer.runs_on_convrs(5, 5).unwrap());
    let x = Tensor::randn(0f32, 1.0, (1, 4, 5, 5), &Device::Cpu).unwrap();
    let y = layer.forward(&x).unwrap();
    let want = x.conv_transpose2d(&w, 0, 0, 3, 1).unwrap();
    assert_eq!(y.flatten_all().unwrap().to_vec1::<f32>().unwrap(), want.flatten_all().unwrap().to_vec1::<f32>().unwrap());
}

#[test]
fn transposed_convolutions_match_candle_in_f64() {
    let Some(dev) = cuda_or_skip("transposed_convolutions_match_candle_in_f64") else { return };
    for i in 0..TRANSPOSED.len() {
        transposed_case(&dev, DType::F32, i, 1e-5);
        transposed_case(&dev, DType::F16, i, 2e-3);
    }
}
