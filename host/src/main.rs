//! The `convrs` command: device info, one checked run, and the benchmark against cuDNN.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use convrs::bench::{self, BenchReport};
use convrs::timing::{time_runs, TimingConfig};
use convrs::{compare, conv2d_cpu, launch, Algorithm, Conv2d, DType, Element, Gpu, Layout, Tensor};

#[derive(Parser)]
#[command(name = "convrs", version, about = "conv2d kernels written in Rust, run on an NVIDIA GPU and checked against a CPU reference",
    long_about = "conv2d kernels written in Rust, compiled to PTX and run on an NVIDIA GPU (compute capability 8.0 or newer).\n\
Every GPU result printed is checked against an f64 CPU reference computed on the same random inputs, and every\n\
time is a median of CUDA-event-timed runs after warm-up. Shapes are N,C,H,W,K,R,S: batch, input channels, input\n\
height and width, output channels, filter height and width.\n\n\
Exit status: 0 success, 1 a result failed its check, 2 error, 3 the chosen kernel cannot take the shape.")]
struct Cli {
    /// Which GPU to use (CUDA device ordinal).
    #[arg(long, global = true, default_value_t = 0)]
    device: usize,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the driver, device, multiprocessors, memory and cuDNN version.
    Info,
    /// List the algorithm names, one per line.
    List,
    /// Run one algorithm once on random data, check it against the CPU reference, and time it.
    Run {
        /// Algorithm (see `convrs list`): direct_naive, direct_smem, tiled_hwcn, tiled_nchw, wmma_nhwcnc, wmma_nhwc.
        #[arg(long)]
        algo: Algorithm,
        #[command(flatten)]
        shape: ShapeArgs,
        /// Timed runs (the median is printed).
        #[arg(long, default_value_t = 20)]
        runs: usize,
        /// Seed of the random input data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Time every algorithm next to cuDNN (same process, same shapes, same data) and print a table.
    Bench {
        /// Shapes N,C,H,W,K,R,S to time (repeatable); default: the issues' target shapes, each with its own padding.
        #[arg(long = "shape", value_name = "N,C,H,W,K,R,S")]
        shapes: Vec<String>,
        /// Padding, stride and dilation of the --shape shapes.
        #[command(flatten)]
        geometry: Geometry,
        /// Algorithms to time (repeatable); default: all.
        #[arg(long = "algo")]
        algos: Vec<Algorithm>,
        /// Timed runs per kernel (the median is reported; at least 20).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(20..))]
        runs: u64,
        /// Untimed warm-up runs per kernel.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Seed of the random input data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also write every figure as JSON to this file.
        #[arg(long, value_name = "PATH")]
        json: Option<std::path::PathBuf>,
    },
}

#[derive(clap::Args)]
struct ShapeArgs {
    /// Problem shape N,C,H,W,K,R,S.
    #[arg(long, value_name = "N,C,H,W,K,R,S")]
    shape: String,
    #[command(flatten)]
    geometry: Geometry,
}

#[derive(clap::Args)]
struct Geometry {
    /// Zero padding (both axes).
    #[arg(long, default_value_t = 0)]
    pad: usize,
    /// Stride (both axes).
    #[arg(long, default_value_t = 1)]
    stride: usize,
    /// Dilation (both axes).
    #[arg(long, default_value_t = 1)]
    dilation: usize,
}

fn problem(shape: &str, g: &Geometry) -> convrs::Result<Conv2d> {
    let p = convrs::problem::parse_shape(shape)?.with_pad(g.pad).with_stride(g.stride).with_dilation(g.dilation);
    p.validate()?;
    Ok(p)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info => info(cli.device),
        Command::List => {
            Algorithm::ALL.iter().for_each(|a| println!("{a}"));
            Ok(true)
        }
        Command::Run { algo, shape, runs, seed } => run(cli.device, algo, &shape, runs, seed),
        Command::Bench { shapes, geometry, algos, runs, warmup, seed, json } => {
            let shapes = if shapes.is_empty() {
                Ok(bench::default_shapes())
            } else {
                shapes.iter().map(|s| problem(s, &geometry)).collect()
            };
            let algos = if algos.is_empty() { Algorithm::ALL.to_vec() } else { algos };
            shapes.and_then(|s| bench_cmd(cli.device, &s, &algos, TimingConfig { warmup, runs: runs as usize }, seed, json))
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        // A kernel refusing a shape is not a failure of the tool: scripts can tell it apart.
        Err(e @ convrs::Error::Unsupported { .. }) => {
            eprintln!("convrs: {e}");
            ExitCode::from(3)
        }
        Err(e) => {
            eprintln!("convrs: {e}");
            ExitCode::from(2)
        }
    }
}

fn info(device: usize) -> convrs::Result<bool> {
    let gpu = Gpu::new(device)?;
    let i = gpu.info();
    println!("device {}: {}", i.ordinal, i.name);
    println!("  compute capability  {}.{}", i.compute_capability.0, i.compute_capability.1);
    println!("  driver (CUDA)       {}.{}", i.driver_cuda_version / 1000, (i.driver_cuda_version % 1000) / 10);
    println!("  multiprocessors     {}", i.multiprocessors);
    println!("  memory              {:.1} GiB total, {:.1} GiB free", i.total_memory_bytes as f64 / 1073741824.0, i.free_memory_bytes as f64 / 1073741824.0);
    println!("  L2 cache            {} MiB", i.l2_cache_bytes >> 20);
    println!("  shared memory/block {} KiB (opt-in)", i.max_shared_bytes_per_block_optin >> 10);
    println!("  kernels loaded from {} PTX", i.ptx_arch);
    println!("  cuDNN               {}", if convrs::cudnn::available() { convrs::cudnn::version() } else { "not found".into() });
    Ok(true)
}

fn run(device: usize, algo: Algorithm, s: &ShapeArgs, runs: usize, seed: u64) -> convrs::Result<bool> {
    match algo.dtype() {
        DType::F32 => run_typed::<f32>(device, algo, s, runs, seed),
        DType::F16 => run_typed::<half::f16>(device, algo, s, runs, seed),
    }
}

fn run_typed<T: Element>(device: usize, algo: Algorithm, s: &ShapeArgs, runs: usize, seed: u64) -> convrs::Result<bool> {
    let p = problem(&s.shape, &s.geometry)?;
    let gpu = Gpu::new(device)?;
    let plan = algo.plan(&p, &gpu.limits())?;
    p.check_device_memory(T::DTYPE.size(), 4, gpu.info().free_memory_bytes)?;
    println!("{p}");
    println!("{algo} ({}) on {}: grid {:?}, block {:?}, {} B shared memory", T::DTYPE, gpu.info().name, plan.grid, plan.block, plan.shared_bytes);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, seed)?.map(T::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed.wrapping_add(1))?.map(T::from_f32);
    let y = convrs::conv2d(&gpu, algo, &p, &x, &w)?;
    eprintln!("computing the f64 CPU reference ({:.2} GFLOP)...", p.flops() / 1e9);
    let reference = conv2d_cpu(&p, &x, &w)?;
    let check = compare(y.data(), reference.data());
    let (in_layout, filter_layout, _) = algo.layouts();
    let dx = gpu.upload(x.to_layout(in_layout)?.data())?;
    let dw = gpu.upload(w.to_layout(filter_layout)?.data())?;
    let mut dy = gpu.alloc_zeros::<f32>(p.output_len())?;
    let t = time_runs(&gpu, TimingConfig { warmup: 3, runs: runs.max(1) }, |_| launch(&gpu, &plan, &p, &dx, &dw, &mut dy))?;
    let tol = bench::tolerance(T::DTYPE);
    println!("time      {:.4} ms (median of {} runs; min {:.4}, max {:.4})", t.median_ms, t.runs, t.min_ms, t.max_ms);
    println!("speed     {:.2} TFLOP/s", p.flops() / (t.median_ms * 1e-3) / 1e12);
    println!("max abs   {:.3e}", check.max_abs_err);
    println!("rel L2    {:.3e} (tolerance {tol:.0e})", check.rel_l2_err);
    println!("worst at  {} (non-finite outputs: {})", check.worst_index, check.non_finite);
    let ok = check.passes(tol);
    println!("check     {}", if ok { "PASSED" } else { "FAILED" });
    Ok(ok)
}

fn bench_cmd(device: usize, shapes: &[Conv2d], algos: &[Algorithm], cfg: TimingConfig, seed: u64, json: Option<std::path::PathBuf>) -> convrs::Result<bool> {
    let gpu = Gpu::new(device)?;
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new((shapes.len() * (algos.len() + 6)) as u64);
        b.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}").expect("static template"));
        Some(b)
    } else {
        None
    };
    let mut progress = |msg: &str| match &bar {
        Some(b) => {
            b.inc(1);
            b.set_message(msg.to_string());
        }
        None => eprintln!("[bench] {msg}"),
    };
    let mut rows = Vec::new();
    for (i, p) in shapes.iter().enumerate() {
        rows.extend(bench::bench_shape(&gpu, p, algos, cfg, seed.wrapping_add(1000 * i as u64), &mut progress)?);
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = BenchReport {
        gpu: gpu.info().name.clone(),
        date: bench::today(),
        cudnn_version: convrs::cudnn::available().then(convrs::cudnn::version),
        timing_runs: cfg.runs,
        rows,
    };
    println!("{} | {} | cuDNN {} | median of {} runs after {} warm-up", report.gpu, report.date, report.cudnn_version.as_deref().unwrap_or("not found"), cfg.runs, cfg.warmup);
    print!("{}", bench::table(&report));
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| convrs::Error::InvalidArgument(format!("JSON: {e}")))?;
        std::fs::write(&path, text).map_err(|e| convrs::Error::InvalidArgument(format!("cannot write {}: {e}", path.display())))?;
    }
    let failed: Vec<_> = report.rows.iter().filter(|r| r.algorithm != "cudnn" && r.note.is_none() && !r.passed).collect();
    for r in &failed {
        eprintln!("convrs: {} on {} FAILED its check against the CPU reference", r.algorithm, r.shape);
    }
    Ok(failed.is_empty())
}
