//! The bench's baselines give right answers: cuDNN through its graph API (each `Math` policy)
//! and through the legacy API, checked against the f64 CPU reference on fresh random inputs into
//! NaN-poisoned outputs, like every convrs row. A wrong layout or stride description gives a
//! relative error near 1; the tolerances are the bench's (`baseline_tolerance`). Grouped and
//! depthwise shapes check the filter's C/G channels and the group count each API is given.

use convrs::bench::baseline_tolerance;
use convrs::cudnn::CudnnConv;
use convrs::cudnn_graph::{GraphConv, Math, SearchBudget};
use convrs::{compare, conv2d_cpu, Conv2d, Element, Layout, Tensor};
use convrs_tests::gpu_or_skip;
use half::f16;

/// Small and ragged: per-axis padding and stride, odd sizes, C and K not multiples of 8; then a
/// grouped convolution (4 groups of 2 channels) and a depthwise one with stride 2.
fn shapes() -> Vec<Conv2d> {
    vec![
        Conv2d::new(2, 16, 15, 17, 24, 3, 3).with_pad(1),
        Conv2d { pad: (2, 1), stride: (2, 1), ..Conv2d::new(3, 5, 19, 13, 7, 5, 3) },
        Conv2d::new(4, 32, 9, 9, 64, 1, 1),
        Conv2d::new(2, 8, 9, 9, 8, 3, 3).with_pad(1).with_groups(4),
        Conv2d::new(2, 16, 9, 9, 16, 3, 3).with_pad(1).with_stride(2).with_groups(16),
    ]
}

/// Random input and filter for `p` (NCHW / KCRS) and the f64 reference on them.
fn operands<T: Element>(p: &Conv2d, seed: u64) -> (Tensor<T>, Tensor<T>, Tensor<f64>) {
    let x = Tensor::random(p.input_shape(), Layout::Nchw, seed).unwrap().map(T::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed + 1).unwrap().map(T::from_f32);
    let reference = conv2d_cpu(p, &x, &w).unwrap();
    (x, w, reference)
}

fn check<T: Element>(gpu: &convrs::Gpu, p: &Conv2d, layout: Layout, math: Math, seed: u64) -> Result<f64, String> {
    let (x, w, reference) = operands::<T>(p, seed);
    let dx = gpu.upload(x.to_layout(layout).unwrap().data()).unwrap();
    let dw = gpu.upload(w.to_layout(layout).unwrap().data()).unwrap();
    let mut dy = gpu.alloc_zeros::<T>(p.output_len()).unwrap();
    let budget = SearchBudget { max_seconds: 1.0, ..SearchBudget::default() };
    let mut conv = GraphConv::new(gpu, p, layout, math, &budget, &dx, &dw, &mut dy).map_err(|e| format!("{p} {math:?}: {e}"))?;
    gpu.poison(&mut dy).unwrap();
    conv.run(&dx, &dw, &mut dy).map_err(|e| e.to_string())?;
    gpu.synchronize().unwrap();
    let got = Tensor::new(p.output_shape(), layout, gpu.download(&dy).unwrap()).unwrap().to_layout(Layout::Nchw).unwrap();
    let c = compare(got.data(), reference.data());
    let tol = baseline_tolerance(T::DTYPE, math == Math::Tf32);
    eprintln!("{p}: {} {math:?}: rel L2 {:.2e} (tolerance {tol:.0e})", conv.engine_name(), c.rel_l2_err);
    if c.passes(tol) { Ok(c.rel_l2_err) } else { Err(format!("{p} {math:?} {}: rel L2 {:.3e} over {tol:.0e}", conv.engine_name(), c.rel_l2_err)) }
}

#[test]
fn cudnn_graph_baseline_matches_cpu() {
    let Some(gpu) = gpu_or_skip("cudnn_graph_baseline_matches_cpu") else { return };
    assert!(convrs::cudnn::available(), "the GPU machine must have cuDNN for the baseline");
    for (i, p) in shapes().iter().enumerate() {
        let seed = 100 + 10 * i as u64;
        check::<f32>(&gpu, p, Layout::Nchw, Math::Fma, seed).unwrap();
        check::<f32>(&gpu, p, Layout::Nchw, Math::Tf32, seed).unwrap();
        check::<f16>(&gpu, p, Layout::Nhwc, Math::TensorCore, seed).unwrap();
    }
}

/// The legacy API's baseline on `p`: fp32 in NCHW with FMA math, or fp16 in NHWC (KRSC filter
/// with C/G channels) with tensor cores, as the bench runs it.
fn check_legacy(gpu: &convrs::Gpu, p: &Conv2d, fp16: bool, seed: u64) -> Result<f64, String> {
    macro_rules! run {
        ($t:ty, $layout:expr, $plan:path) => {{
            let (x, w, reference) = operands::<$t>(p, seed);
            let dx = gpu.upload(x.to_layout($layout).unwrap().data()).unwrap();
            let dw = gpu.upload(w.to_layout($layout).unwrap().data()).unwrap();
            let mut dy = gpu.alloc_zeros::<$t>(p.output_len()).unwrap();
            let mut conv = $plan(gpu, p, &dx, &dw, &mut dy).map_err(|e| format!("{p} legacy: {e}"))?;
            gpu.poison(&mut dy).unwrap();
            conv.run(&dx, &dw, &mut dy).map_err(|e| e.to_string())?;
            gpu.synchronize().unwrap();
            let got = Tensor::new(p.output_shape(), $layout, gpu.download(&dy).unwrap()).unwrap().to_layout(Layout::Nchw).unwrap();
            (compare(got.data(), reference.data()), conv.algo_name(), <$t as Element>::DTYPE)
        }};
    }
    let (c, algo, dtype) = if fp16 { run!(f16, Layout::Nhwc, CudnnConv::<f16>::nhwc_tensor_op) } else { run!(f32, Layout::Nchw, CudnnConv::<f32>::fp32_nchw) };
    let tol = baseline_tolerance(dtype, false);
    eprintln!("{p}: legacy {algo} {dtype}: rel L2 {:.2e} (tolerance {tol:.0e})", c.rel_l2_err);
    if c.passes(tol) { Ok(c.rel_l2_err) } else { Err(format!("{p} legacy {algo} {dtype}: rel L2 {:.3e} over {tol:.0e}", c.rel_l2_err)) }
}

#[test]
fn cudnn_legacy_baseline_matches_cpu() {
    let Some(gpu) = gpu_or_skip("cudnn_legacy_baseline_matches_cpu") else { return };
    assert!(convrs::cudnn::available(), "the GPU machine must have cuDNN for the baseline");
    for (i, p) in shapes().iter().enumerate() {
        let seed = 200 + 10 * i as u64;
        check_legacy(&gpu, p, false, seed).unwrap();
        check_legacy(&gpu, p, true, seed).unwrap();
    }
}

#[test]
fn cudnn_graph_refuses_a_layout_it_cannot_describe() {
    let Some(gpu) = gpu_or_skip("cudnn_graph_refuses_a_layout_it_cannot_describe") else { return };
    let p = Conv2d::new(1, 4, 8, 8, 4, 3, 3);
    let x = gpu.alloc_zeros::<f32>(p.input_len()).unwrap();
    let w = gpu.alloc_zeros::<f32>(p.filter_len()).unwrap();
    let mut y = gpu.alloc_zeros::<f32>(p.output_len()).unwrap();
    let e = GraphConv::new(&gpu, &p, Layout::Hwcn, Math::Fma, &SearchBudget::default(), &x, &w, &mut y);
    assert!(matches!(e, Err(convrs::Error::InvalidArgument(_))), "{:?}", e.err());
}
