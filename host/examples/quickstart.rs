//! Quick start: one conv2d with the automatic choice, timed on the GPU and checked against the
//! f64 CPU reference.
//!
//! ```sh
//! cargo run --release -p convrs --example quickstart
//! ```

use std::process::ExitCode;

use convrs::prepared::{Prepared, Runnable};
use convrs::timing::{time_runs, TimingConfig};
use convrs::{compare, conv2d_cpu, select, Algorithm, Conv2d, DType, Gpu, Layout, Tensor};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quickstart: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> convrs::Result<()> {
    let gpu = Gpu::new(0)?; // a clear error, not a panic, on a machine without a GPU
    let p = Conv2d::new(16, 64, 56, 56, 64, 3, 3).with_pad(1);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 1)?;
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 2)?;

    let choice = select::choose(&p, DType::F32, Layout::Nchw, gpu.model())?;
    let predicted = choice.estimate().map_or(f64::NAN, |e| e.total_us());
    println!("{p}\non {}: auto picks {} (predicted {predicted:.1} us)", gpu.info().name, choice.pick);

    let mut conv: Prepared<f32> = Prepared::new(&gpu, Algorithm::Auto, &p, &x, &w)?;
    conv.poison_output(&gpu)?;
    conv.enqueue(&gpu)?;
    gpu.synchronize()?;
    let y = conv.output(&gpu)?;
    let t = time_runs(&gpu, TimingConfig::default(), |_| conv.enqueue(&gpu))?;
    println!("time   {:.4} ms (median of {}), {:.1} TFLOP/s", t.median_ms, t.runs, p.flops() / (t.median_ms * 1e-3) / 1e12);

    let check = compare(y.data(), conv2d_cpu(&p, &x, &w)?.data());
    println!("check  rel L2 error {:.2e} against the f64 CPU reference", check.rel_l2_err);
    if !check.passes(convrs::bench::FP32_REL_L2_TOLERANCE) {
        return Err(convrs::Error::InvalidArgument(format!("the result failed its check: {check}")));
    }
    Ok(())
}
