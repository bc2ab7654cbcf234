//! A ResNet-50 bottleneck (1x1 256->64, 3x3 64->64, 1x1 64->256 at batch 32, 56x56), fp16
//! channels-last on the GPU: each layer through the automatic choice, timed beside cuDNN's
//! fastest engine (graph API) on the same inputs, and checked against the f64 CPU reference.
//! Each layer runs on its own random inputs (our kernels write fp32; the next layer reads fp16).
//!
//! ```sh
//! cargo run --release -p convrs --example resnet_block
//! ```

use std::process::ExitCode;

use convrs::cudnn_graph::{GraphConv, Math, SearchBudget};
use convrs::prepared::{Prepared, Runnable};
use convrs::timing::{time_runs, TimingConfig};
use convrs::{compare, conv2d_cpu, Algorithm, Conv2d, Gpu, Layout, Tensor};
use half::f16;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("resnet_block: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> convrs::Result<()> {
    let gpu = Gpu::new(0)?;
    let layers = [
        ("1x1 reduce", Conv2d::new(32, 256, 56, 56, 64, 1, 1)),
        ("3x3", Conv2d::new(32, 64, 56, 56, 64, 3, 3).with_pad(1)),
        ("1x1 expand", Conv2d::new(32, 64, 56, 56, 256, 1, 1)),
    ];
    println!("ResNet-50 bottleneck, fp16 NHWC, on {}", gpu.info().name);
    println!("| layer | convrs kernel | convrs ms | cuDNN ms (engine) | speed vs cuDNN | rel L2 err |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let cfg = TimingConfig::default();
    let (mut ours_total, mut cudnn_total) = (0.0, 0.0);
    for (i, (name, p)) in layers.iter().enumerate() {
        let x = Tensor::random(p.input_shape(), Layout::Nchw, 10 + i as u64)?.map(f16::from_f32).to_layout(Layout::Nhwc)?;
        let w = Tensor::random(p.filter_shape(), Layout::Nchw, 20 + i as u64)?.map(f16::from_f32).to_layout(Layout::Nhwc)?;
        // fp16 outputs, like cuDNN's beside it.
        let mut conv: Prepared<f16> = Prepared::new(&gpu, Algorithm::Auto, p, &x, &w)?;
        conv.poison_output(&gpu)?;
        conv.enqueue(&gpu)?;
        gpu.synchronize()?;
        let check = compare(conv.output(&gpu)?.data(), conv2d_cpu(p, &x, &w)?.data());
        let ours = time_runs(&gpu, cfg, |_| conv.enqueue(&gpu))?.median_ms;

        let (dx, dw) = (gpu.upload(x.data())?, gpu.upload(w.data())?);
        let mut dy = gpu.alloc_zeros::<f16>(p.output_len())?;
        let cudnn = match GraphConv::new(&gpu, p, Layout::Nhwc, Math::TensorCore, &SearchBudget::default(), &dx, &dw, &mut dy) {
            Ok(mut g) => Some((time_runs(&gpu, cfg, |_| g.run(&dx, &dw, &mut dy))?.median_ms, g.engine_name())),
            Err(e) => {
                eprintln!("resnet_block: cuDNN baseline unavailable for {name}: {e}");
                None
            }
        };
        ours_total += ours;
        let (cudnn_cell, ratio) = match &cudnn {
            Some((ms, engine)) => {
                cudnn_total += ms;
                (format!("{ms:.4} ({engine})"), format!("{:.2}x", ms / ours))
            }
            None => ("n/a".into(), "n/a".into()),
        };
        println!("| {name} | {} | {ours:.4} | {cudnn_cell} | {ratio} | {:.1e} |", conv.algorithm(), check.rel_l2_err);
        if !check.passes(convrs::bench::tolerance(convrs::DType::F16, convrs::DType::F16)) {
            return Err(convrs::Error::InvalidArgument(format!("{name}: the result failed its check: {check}")));
        }
    }
    println!("block: convrs {ours_total:.4} ms, cuDNN {cudnn_total:.4} ms");
    Ok(())
}
