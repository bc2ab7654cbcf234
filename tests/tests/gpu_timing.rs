//! The timing method every bench figure rests on ([`convrs::timing`]): on a GPU our kernels and
//! the cuDNN baseline are captured into CUDA graphs and replayed (a failed capture would fall back
//! to events and say so in `Timing::method`, which these tests forbid), the replays compute the
//! right output, and the graph figure (device time) is no longer than the per-run event figure
//! (device time plus the host's enqueue).

use convrs::bench::tolerance;
use convrs::cudnn_graph::{GraphConv, Math, SearchBudget};
use convrs::device_conv::DeviceConv;
use convrs::device_tensor::DeviceTensor;
use convrs::prepared::{Prepared, Runnable};
use convrs::timing::{time_runs, Timing, TimingConfig, TimingMethod};
use convrs::{compare, conv2d_cpu, Algorithm, Conv2d, DType, Layout, Tensor};
use convrs_tests::gpu_or_skip;
use half::f16;

/// A small, launch-bound layer, and one with few output tiles and a deep reduction (on Hopper the
/// automatic choice splits it over the grid, whose counters every replay must leave at
/// zero for the next).
fn shapes() -> [Conv2d; 2] {
    [Conv2d::new(8, 256, 14, 14, 256, 1, 1), Conv2d::new(16, 832, 7, 7, 128, 5, 5).with_pad(2)]
}

fn graph(warmup: usize, runs: usize) -> TimingConfig {
    TimingConfig { warmup, runs, method: TimingMethod::Graph }
}

fn captured(t: &Timing, what: &str) {
    assert_eq!(t.method, TimingMethod::Graph, "{what}: the runs could not be captured into a graph (see the warning on stderr)");
    assert!(t.batch >= 8 && t.runs == 10, "{what}: {t:?}");
}

#[test]
fn graph_replays_of_our_kernels_compute_the_right_output_and_time_device_work() {
    let Some(gpu) = gpu_or_skip("graph_replays_of_our_kernels_compute_the_right_output_and_time_device_work") else { return };
    for (i, p) in shapes().iter().enumerate() {
        let x = Tensor::random(p.input_shape(), Layout::Nchw, 40 + i as u64).unwrap().map(f16::from_f32);
        let w = Tensor::random(p.filter_shape(), Layout::Nchw, 50 + i as u64).unwrap().map(f16::from_f32);
        let reference = conv2d_cpu(p, &x, &w).unwrap();
        let mut run: Prepared<f16> = Prepared::new(&gpu, Algorithm::Auto, p, &x, &w).unwrap();
        let what = format!("{p} {}", run.name());

        // Each captured run poisons the output before the kernel, so what is there after the
        // replays is what the last replay's kernel wrote.
        let checked = time_runs(&gpu, graph(0, 10), |_| run.poison_output(&gpu).and_then(|()| run.enqueue(&gpu))).unwrap();
        captured(&checked, &what);
        let c = compare(run.output(&gpu).unwrap().data(), reference.data());
        let tol = tolerance(DType::F16, DType::F16);
        assert!(c.passes(tol), "{what}: after graph replays rel L2 {:.3e} (tolerance {tol:.1e}), {} non-finite", c.rel_l2_err, c.non_finite);

        let by_graph = time_runs(&gpu, graph(2, 10), |_| run.enqueue(&gpu)).unwrap();
        captured(&by_graph, &what);
        let by_events = time_runs(&gpu, TimingConfig { warmup: 2, runs: 10, method: TimingMethod::Events }, |_| run.enqueue(&gpu)).unwrap();
        assert_eq!(by_events.method, TimingMethod::Events);
        // Device time cannot exceed device time plus host enqueue beyond noise (10%, 2 us).
        assert!(
            by_graph.median_ms <= 1.1 * by_events.median_ms + 0.002,
            "{what}: graph {:.4} ms per run against events {:.4} ms",
            by_graph.median_ms,
            by_events.median_ms
        );
        eprintln!("{what}: graph {:.4} ms per run ({} a replay), events {:.4} ms", by_graph.median_ms, by_graph.batch, by_events.median_ms);
    }
}

/// A dependent chain under graph replays: an NCHW caller of an NHWC kernel is three launches a
/// run (the input's transpose, the kernel, the output's transpose), each reading what the one
/// before wrote. Under programmatic launch (compute capability 9.0 on) each may be scheduled
/// before the one before has retired, and only its `griddepcontrol.wait` holds it until that
/// one's writes are visible. The runs alternate two inputs and poison the output first, so a
/// launch that read its predecessor's buffer early would pass the other input's values (or NaN)
/// on.
#[test]
fn graph_replays_of_a_dependent_chain_compute_the_right_output() {
    let Some(gpu) = gpu_or_skip("graph_replays_of_a_dependent_chain_compute_the_right_output") else { return };
    let p = Conv2d::new(2, 24, 13, 11, 40, 3, 3).with_pad(1);
    let tensor = |dims, seed| Tensor::random(dims, Layout::Nchw, seed).unwrap().map(f16::from_f32);
    let xs = [tensor(p.input_shape(), 60), tensor(p.input_shape(), 61)];
    let w = tensor(p.filter_shape(), 62);
    let dxs = xs.iter().map(|x| DeviceTensor::upload(&gpu, x).unwrap()).collect::<Vec<_>>();
    let dw = DeviceTensor::upload(&gpu, &w).unwrap();
    let mut conv = DeviceConv::<f16>::new(&gpu, "wmma_nhwc".parse().unwrap(), &p, &dw, Layout::Nchw, Layout::Nchw).unwrap();
    assert_eq!(conv.direct(), (false, false), "the chain must run both transposes");
    let mut y = conv.new_output(&gpu).unwrap();
    // Each input once outside the capture: whatever a first run sets up.
    for dx in &dxs {
        conv.run(&gpu, dx, &mut y).unwrap();
    }
    gpu.synchronize().unwrap();
    let batch = 8;
    let graph = convrs::timing::capture(&gpu, batch, &mut |i| gpu.poison(y.data_mut()).and_then(|()| conv.run(&gpu, &dxs[i % 2], &mut y))).unwrap();
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    gpu.synchronize().unwrap();
    let last = (batch - 1) % 2;
    let c = compare(y.download(&gpu).unwrap().data(), conv2d_cpu(&p, &xs[last], &w).unwrap().data());
    assert!(c.non_finite == 0 && c.passes(tolerance(DType::F16, DType::F16)), "{p} through {}: {c}", conv.name());
}

#[test]
fn the_cudnn_baseline_is_captured_too() {
    let Some(gpu) = gpu_or_skip("the_cudnn_baseline_is_captured_too") else { return };
    assert!(convrs::cudnn::available(), "the GPU machine must have cuDNN for the baseline");
    let p = shapes()[0];
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 7).unwrap().map(f16::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 8).unwrap().map(f16::from_f32);
    let reference = conv2d_cpu(&p, &x, &w).unwrap();
    let dx = gpu.upload(x.to_layout(Layout::Nhwc).unwrap().data()).unwrap();
    let dw = gpu.upload(w.to_layout(Layout::Nhwc).unwrap().data()).unwrap();
    let mut dy = gpu.alloc_zeros::<f16>(p.output_len()).unwrap();
    let budget = SearchBudget { max_seconds: 1.0, ..SearchBudget::default() };
    let mut conv = GraphConv::new(&gpu, &p, Layout::Nhwc, Math::TensorCore, &budget, &dx, &dw, &mut dy).unwrap();
    let t = time_runs(&gpu, graph(1, 10), |_| gpu.poison(&mut dy).and_then(|()| conv.run(&dx, &dw, &mut dy))).unwrap();
    captured(&t, &conv.engine_name());
    let got = Tensor::new(p.output_shape(), Layout::Nhwc, gpu.download(&dy).unwrap()).unwrap().to_layout(Layout::Nchw).unwrap();
    let c = compare(got.data(), reference.data());
    let tol = convrs::bench::baseline_tolerance(DType::F16, false);
    assert!(c.passes(tol), "{}: after graph replays rel L2 {:.3e} (tolerance {tol:.0e})", conv.engine_name(), c.rel_l2_err);
}

/// A split-K plan's workspace belongs to the plan: a graph captured from one replays correctly
/// after a larger split-K problem has been prepared and run, and again after that (each replay
/// leaves the counters at zero). Until the workspace moved into the plan it was one buffer of
/// the `Gpu` that grew by reallocation, so the larger problem freed the memory the captured
/// graph still wrote to. Hopper only (split-K is a Hopper schedule).
#[test]
fn a_captured_split_k_graph_replays_after_a_larger_split_k_problem() {
    let Some(gpu) = convrs_tests::hopper_or_skip("a_captured_split_k_graph_replays_after_a_larger_split_k_problem") else { return };
    let split: Algorithm = "wgmma_ws_tma_splitk".parse().unwrap();
    let data = |p: &Conv2d, seed: u64| {
        let x = Tensor::random(p.input_shape(), Layout::Nchw, seed).unwrap().map(f16::from_f32);
        let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed + 1).unwrap().map(f16::from_f32);
        let reference = conv2d_cpu(p, &x, &w).unwrap();
        (x, w, reference)
    };
    let tol = tolerance(DType::F16, DType::F16);
    let check = |what: &str, y: Tensor<f16>, reference: &Tensor<f64>| {
        let c = compare(y.data(), reference.data());
        assert!(c.passes(tol), "{what}: rel L2 {:.3e} (tolerance {tol:.1e}), {} non-finite", c.rel_l2_err, c.non_finite);
    };
    let small = Conv2d::new(2, 256, 7, 7, 64, 3, 3).with_pad(1);
    let large = Conv2d::new(16, 832, 7, 7, 128, 5, 5).with_pad(2);
    let (xs, ws, ys) = data(&small, 60);
    let mut a: Prepared<f16> = Prepared::new(&gpu, split, &small, &xs, &ws).unwrap();
    assert!(a.plan().workspace_bytes > 0 && a.plan().grid.2 > 1, "{small} should split: {:?}", a.plan());
    let graph = convrs::timing::capture(&gpu, 1, &mut |_| a.enqueue(&gpu)).unwrap();

    let (xl, wl, yl) = data(&large, 70);
    let mut b: Prepared<f16> = Prepared::new(&gpu, split, &large, &xl, &wl).unwrap();
    assert!(b.plan().workspace_bytes > a.plan().workspace_bytes, "{:?} vs {:?}", b.plan(), a.plan());
    b.poison_output(&gpu).unwrap();
    b.enqueue(&gpu).unwrap();
    check(&format!("{large}"), b.output(&gpu).unwrap(), &yl);

    for replay in 0..2 {
        a.poison_output(&gpu).unwrap();
        graph.launch().unwrap();
        gpu.synchronize().unwrap();
        check(&format!("{small}, graph replay {replay} after {large}"), a.output(&gpu).unwrap(), &ys);
    }
    // And the larger plan's workspace was left alone by the replays.
    b.poison_output(&gpu).unwrap();
    b.enqueue(&gpu).unwrap();
    check(&format!("{large} after the replays"), b.output(&gpu).unwrap(), &yl);
}
