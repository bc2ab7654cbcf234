//! The `convrs` command: device info, one checked run, and the benchmark against cuDNN.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use convrs::bench::pytorch::{self, TorchMode, TorchOutcome};
use convrs::bench::report::{self, GroupResult};
use convrs::bench::{self, BenchOptions};
use convrs::cudnn_graph::SearchBudget;
use convrs::plot::PlotPoint;
use convrs::suite::Suite;
use convrs::timing::{time_runs, TimingConfig, TimingMethod};
use convrs::prepared::{Prepared, Runnable};
use convrs::bench::{EpilogueData, EPILOGUE_SEED_OFFSET};
use convrs::{compare, conv2d_cpu, Activation, Algorithm, Conv2d, DType, DeviceModel, Element, Epilogue, Gpu, Layout, Tensor};

#[derive(Parser)]
#[command(name = "convrs", version, about = "conv2d kernels written in Rust, run on an NVIDIA GPU and checked against a CPU reference",
    long_about = "conv2d kernels written in Rust, compiled to PTX and run on an NVIDIA GPU (compute capability 8.0 or newer).\n\
Every GPU result printed is checked against an f64 CPU reference computed on the same random inputs, and every\n\
time is a median after warm-up, by CUDA events around replays of a captured CUDA graph (device time per run;\n\
--timing events times each run alone, host enqueue included). Shapes are N,C,H,W,K,R,S: batch, input channels,\n\
input height and width, output channels, filter height and width.\n\n\
Exit status: 0 success; 1 a result failed its check against the CPU reference; 2 error; 3 the chosen kernel\n\
cannot take the shape; 4 (bench) our kernels ran and passed but no baseline could be measured (cuDNN missing).")]
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
    /// List the kernels (name, family, element types, layouts, what it does), one per line.
    List,
    /// Run one kernel (or the automatic choice) once on random data, check it against the CPU reference, and time it.
    ///
    /// With an epilogue, its operands are random too (scale uniform in [0.5, 1.5], bias and the
    /// residual in [-1, 1), from --seed) and the reference applies it.
    Run {
        /// Kernel (see `convrs list`), or auto: the lowest predicted time for --dtype and --layout.
        #[arg(long, default_value = "auto")]
        algo: Algorithm,
        /// Element type of the data: fp32, fp16 or bf16. Default: fp32 for auto and --tune, the
        /// first type a named kernel reads (`convrs list`) otherwise.
        #[arg(long)]
        dtype: Option<DType>,
        /// The layout the data is held in (auto prices converting it to each kernel's layout).
        #[arg(long, default_value = "NCHW")]
        layout: Layout,
        /// Time every kernel that takes the shape once and run the fastest; the winner is kept in
        /// the tuning cache (CONVRS_TUNE_CACHE, default ~/.cache/convrs/tune.json) for next time.
        #[arg(long)]
        tune: bool,
        #[command(flatten)]
        shape: ShapeArgs,
        /// Timed runs (the median is printed).
        #[arg(long, default_value_t = 20)]
        runs: usize,
        /// How to time: graph (replays of a captured CUDA graph: device time per run, host
        /// enqueue hidden) or events (each run between its own events: host enqueue included).
        #[arg(long, default_value = "graph")]
        timing: TimingMethod,
        /// Seed of the random input data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write fp32 outputs (the accumulators unrounded) instead of the input's type; only
        /// changes fp16/bf16 runs, whose outputs are otherwise rounded to fp16/bf16.
        #[arg(long)]
        f32_out: bool,
    },
    /// Every kernel's predicted time for a problem (layout conversions included), why each refused
    /// one refused, and the automatic choice; works without a GPU through built-in device models.
    Explain {
        #[command(flatten)]
        shape: ShapeArgs,
        /// Element type of the data: fp32, fp16 or bf16.
        #[arg(long, default_value = "fp32")]
        dtype: DType,
        /// The layout the data is held in: NCHW or NHWC (or any layout `convrs list` shows).
        #[arg(long, default_value = "NCHW")]
        layout: Layout,
        /// A built-in device model instead of the GPU: h100, h200, a100, l40s, rtx4090. Without it
        /// the GPU given by --device is read, and without a GPU the h100 model is used.
        #[arg(long, value_name = "NAME")]
        device_model: Option<String>,
    },
    /// Time our kernels next to the strongest baselines (cuDNN graph and legacy APIs, PyTorch) and print tables.
    #[command(long_about = "Time our kernels next to the strongest baselines on the same shapes, in the same run, and print\n\
Markdown tables (per shape, then a summary per suite).\n\n\
Baselines: cuDNN through its graph API (engines from the heuristics, the fallback list and every global engine\n\
index, the fastest kept), cuDNN through the legacy API (fastest of its 8 algorithms), and PyTorch's conv2d timed\n\
by a child python3 (cudnn.benchmark on). fp32 is compared with FMA arithmetic on both sides (TF32 off); a second\n\
line shows the TF32 baselines, PyTorch's default for fp32 convolutions. fp16 is compared in NHWC with tensor cores.\n\
The ratio of a row is the best baseline's median time over our kernel's. An in-process cuDNN baseline more than 5%\n\
slower than PyTorch's is FLAGged: a bug in the baseline, not a win.\n\n\
For fp16/bf16 (and fp32) shapes an NCHW caller's row follows: device tensors through DeviceConv, the transforms\n\
timed, the fastest of the routes tried (the fastest kernel, the fastest on NCHW, the fastest writing NCHW, and\n\
the kernel Auto picks for that caller), judged against cuDNN and PyTorch given NCHW; the summary also counts the\n\
shapes where Auto's route is within 5% of that best route (what a caller who leaves the choice to convrs gets).\n\n\
With an epilogue (--epilogue or its flags), every shape, of a suite or --shape, is the whole layer: our kernels\n\
that fuse it run it on random operands, checked against the f64 reference with the epilogue applied; PyTorch\n\
computes it in eager mode (conv2d, then the epilogue's elementwise calls, timed together); and cuDNN's fused\n\
graph computes it in-process (the convolution, then pointwise nodes for scale, bias, residual and activation;\n\
engines searched like the bare graph's, the runtime-fusion ones taking it; on the same operands, checked against\n\
the same reference). The ratio is to the faster of PyTorch eager and cuDNN's fused graph, named per shape; the\n\
summary gives the geomean against each. cuDNN's bare-convolution rows are shown, marked `bare conv`, and left out\n\
of every ratio and flag; a fused graph no engine took says why under the table. The NCHW caller's row (device\n\
tensors, DeviceConv::fused) runs the whole layer too: scale and bias cached, the residual given in NCHW.\n\n\
cuDNN is loaded from the library path (LD_LIBRARY_PATH first); `convrs info` says which version loads.\n\
Exit status: 0 all checks passed; 1 a check failed; 2 error; 4 our kernels passed but cuDNN was not available\n\
(with an epilogue: neither PyTorch eager nor cuDNN's fused graph gave a figure to judge them by).")]
    Bench {
        /// A suite to time (repeatable): seed, deepbench, resnet50, mobilenet, or a path to a suite .csv file. Default: seed.
        #[arg(long = "suite", value_name = "NAME|PATH")]
        suites: Vec<String>,
        /// Shapes N,C,H,W,K,R,S to time instead of a suite (repeatable).
        #[arg(long = "shape", value_name = "N,C,H,W,K,R,S")]
        shapes: Vec<String>,
        /// Padding, stride, dilation and groups of the --shape shapes.
        #[command(flatten)]
        geometry: Geometry,
        /// The fused epilogue of every shape (suites' and --shape's).
        #[command(flatten)]
        epilogue: EpilogueArgs,
        /// Algorithms to time (repeatable); default: all.
        #[arg(long = "algo")]
        algos: Vec<Algorithm>,
        /// Only part I of N of each suite (every N-th shape from the I-th on), so a long suite fits
        /// several time-limited commands; the parts' JSON files together hold every shape once.
        #[arg(long, value_name = "I/N")]
        part: Option<String>,
        /// Only the kernels (and baselines) of these element types (repeatable: fp32, fp16, bf16);
        /// default: all. A long suite fits a time limit better split by type.
        #[arg(long = "dtype")]
        dtypes: Vec<DType>,
        /// Show every kernel's row, not only the best kernel per shape and type.
        #[arg(long)]
        all_kernels: bool,
        /// Leave out the NCHW caller's rows and their NCHW baselines (fp16 and bf16 shapes run
        /// about twice as fast when only the NHWC figures matter).
        #[arg(long)]
        no_nchw_caller: bool,
        /// Time PyTorch's conv2d on the same shapes (auto: when python3 has a CUDA-enabled torch).
        #[arg(long, value_enum, default_value_t = TorchMode::Auto)]
        pytorch: TorchMode,
        /// Timed runs per kernel and baseline (the median is reported; at least 10).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(10..))]
        runs: u64,
        /// Untimed warm-up runs per kernel.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// How every row is timed, baselines and engine search included: graph (replays of a
        /// captured CUDA graph behind a lead replay: device time per convolution, host enqueue
        /// hidden; PyTorch the same with torch.cuda.CUDAGraph) or events (each run between its
        /// own events on an idle stream: host enqueue included; PyTorch back-to-back calls).
        #[arg(long, default_value = "graph")]
        timing: TimingMethod,
        /// Wall-clock budget of each cuDNN graph engine search, in seconds.
        #[arg(long, default_value_t = 3.0)]
        search_seconds: f64,
        /// Seed of the random input data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also write every figure as JSON to this file.
        #[arg(long, value_name = "PATH")]
        json: Option<std::path::PathBuf>,
        /// Draw the per-shape speed ratio to the best baseline as an SVG (log scale, colour by family).
        #[arg(long, value_name = "PATH.svg")]
        plot: Option<std::path::PathBuf>,
    },
}

#[derive(clap::Args)]
struct ShapeArgs {
    /// Problem shape N,C,H,W,K,R,S.
    #[arg(long, value_name = "N,C,H,W,K,R,S")]
    shape: String,
    #[command(flatten)]
    geometry: Geometry,
    #[command(flatten)]
    epilogue: EpilogueArgs,
    /// How fp32 data may be multiplied: tf32 (TF32 tensor cores, PyTorch's default), fp32
    /// (fp32 accuracy: 3xTF32 tensor cores or FMA) or fma (FMA kernels only). Default: a named
    /// kernel's own (`convrs list`), fp32 for auto. 16-bit data ignores it.
    #[arg(long)]
    precision: Option<convrs::Precision>,
}

#[derive(clap::Args)]
struct Geometry {
    /// Zero padding: one value for both axes, or H,W.
    #[arg(long, default_value = "0", value_name = "P|PH,PW")]
    pad: String,
    /// Stride: one value for both axes, or H,W.
    #[arg(long, default_value = "1", value_name = "S|SH,SW")]
    stride: String,
    /// Dilation: one value for both axes, or H,W.
    #[arg(long, default_value = "1", value_name = "D|DH,DW")]
    dilation: String,
    /// Groups: G divides C and K; each group's K/G output channels read only its C/G input
    /// channels (filter K x C/G x R x S). G = C is a depthwise convolution.
    #[arg(long, default_value = "1", value_name = "G")]
    groups: String,
}

/// The fused epilogue `y = act(alpha * conv(x, w) * scale[k] + bias[k] + beta * residual)`:
/// either `--epilogue SPEC` or the flags that build the same thing (never both: one spelling
/// per command line, so nothing is silently overridden).
#[derive(clap::Args, Default)]
struct EpilogueArgs {
    /// Fused epilogue y = act(alpha * conv(x, w) * scale[k] + bias[k] + beta * residual), computed
    /// on the fp32 sums and rounded once: parts joined by `+`, any of scale, bias, residual,
    /// alpha=F, beta=F and one activation (identity, relu, relu6, leaky_relu[:SLOPE], silu,
    /// gelu_tanh, gelu), e.g. bias+relu or scale+bias+residual+silu; none (the default) is the
    /// bare convolution. Only the kernels that fuse it take the problem (`convrs explain` says
    /// which, and why the others refuse). Not with --scale, --bias, --residual, --act, --alpha
    /// or --beta, which spell the same thing as flags.
    #[arg(long, value_name = "SPEC")]
    epilogue: Option<Epilogue>,
    /// Multiply by a per-output-channel scale[k] (K values: a folded BatchNorm's factors);
    /// `scale` in --epilogue.
    #[arg(long, conflicts_with = "epilogue")]
    scale: bool,
    /// Add a per-output-channel bias[k] (K values); `bias` in --epilogue.
    #[arg(long, conflicts_with = "epilogue")]
    bias: bool,
    /// Add a residual tensor of the output's shape (a ResNet shortcut), times --beta; `residual`
    /// in --epilogue.
    #[arg(long, conflicts_with = "epilogue")]
    residual: bool,
    /// The activation applied last: identity, relu, relu6, leaky_relu[:SLOPE] (slope 0.01 by
    /// default), silu, gelu_tanh (tanh approximation) or gelu (erf).
    #[arg(long, value_name = "NAME", conflicts_with = "epilogue")]
    act: Option<Activation>,
    /// Factor on the convolution's sum (default 1); `alpha=F` in --epilogue.
    #[arg(long, value_name = "F", allow_negative_numbers = true, conflicts_with = "epilogue")]
    alpha: Option<f32>,
    /// Factor on the residual (default 1; needs --residual); `beta=F` in --epilogue.
    #[arg(long, value_name = "F", allow_negative_numbers = true, conflicts_with = "epilogue", requires = "residual")]
    beta: Option<f32>,
}

impl EpilogueArgs {
    /// The epilogue the options describe, its numbers checked.
    fn epilogue(&self) -> convrs::Result<Epilogue> {
        let ep = match self.epilogue {
            Some(ep) => ep,
            None => {
                let mut ep = Epilogue::NONE;
                for (on, with) in [(self.scale, Epilogue::with_scale as fn(Epilogue) -> Epilogue), (self.bias, Epilogue::with_bias), (self.residual, Epilogue::with_residual)] {
                    if on {
                        ep = with(ep);
                    }
                }
                let ep = ep.with_activation(self.act.unwrap_or(Activation::Identity));
                let ep = self.alpha.map_or(ep, |a| ep.with_alpha(a));
                self.beta.map_or(ep, |b| ep.with_beta(b))
            }
        };
        // A beta without a residual multiplies nothing; it would only make a bare convolution
        // look fused (and refused by every kernel that does not fuse).
        if ep.beta() != 1.0 && !ep.residual {
            return Err(convrs::Error::InvalidArgument(format!("--epilogue {ep}: beta is the residual's factor, and there is no residual")));
        }
        ep.validate()?;
        Ok(ep)
    }
}

/// `ep` written out as the formula it computes (`y = relu(conv(x, w) + bias[k])`).
fn formula(ep: &Epilogue) -> String {
    let mut v = "conv(x, w)".to_string();
    if ep.alpha() != 1.0 {
        v = format!("{} * {v}", ep.alpha());
    }
    if ep.scale {
        v += " * scale[k]";
    }
    if ep.bias {
        v += " + bias[k]";
    }
    if ep.residual {
        v += &if ep.beta() != 1.0 { format!(" + {} * residual", ep.beta()) } else { " + residual".into() };
    }
    match ep.activation {
        Activation::Identity => format!("y = {v}"),
        a => format!("y = {}({v})", a.name()),
    }
}

fn problem(shape: &str, g: &Geometry, ep: Epilogue) -> convrs::Result<Conv2d> {
    use convrs::problem::{parse_groups, parse_pair, parse_shape};
    let p = Conv2d {
        pad: parse_pair("--pad", &g.pad)?,
        stride: parse_pair("--stride", &g.stride)?,
        dilation: parse_pair("--dilation", &g.dilation)?,
        groups: parse_groups("--groups", &g.groups)?,
        epilogue: ep,
        ..parse_shape(shape)?
    };
    p.validate()?;
    Ok(p)
}

impl ShapeArgs {
    /// The problem the shape options describe (precision aside).
    fn problem(&self) -> convrs::Result<Conv2d> {
        problem(&self.shape, &self.geometry, self.epilogue.epilogue()?)
    }
}

/// How a command ended, beyond errors (each has its exit status; see the long help).
enum Outcome {
    Passed,
    Failed,
    NoBaseline,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info => info(cli.device),
        Command::List => {
            let width = convrs::registry::KERNELS.iter().map(|k| k.name.len()).max().unwrap_or(0);
            for k in &convrs::registry::KERNELS {
                let (x, w, y) = k.layouts;
                println!("{:<width$} {:<11} {:<9} {}/{}/{}  {}", k.name, k.family.name(), k.dtypes_label(), x, w, y, k.describe());
            }
            Ok(Outcome::Passed)
        }
        Command::Run { algo, dtype, layout, tune, shape, runs, timing, seed, f32_out } => run(cli.device, algo, dtype, layout, tune, &shape, TimingConfig { warmup: 3, runs: runs.max(1), method: timing }, seed, f32_out),
        Command::Explain { shape, dtype, layout, device_model } => explain(cli.device, &shape, dtype, layout, device_model.as_deref()),
        Command::Bench { suites, shapes, geometry, epilogue, algos, part, dtypes, all_kernels, no_nchw_caller, pytorch, runs, warmup, timing, search_seconds, seed, json, plot } => {
            if algos.contains(&Algorithm::Auto) {
                eprintln!("convrs: bench times kernels (--algo NAME, repeatable); the automatic choice is judged in its own table against every kernel");
                return ExitCode::from(2);
            }
            let algos = if algos.is_empty() { Algorithm::ALL.to_vec() } else { algos };
            let algos: Vec<Algorithm> = algos.into_iter().filter(|a| dtypes.is_empty() || a.dtypes().iter().any(|d| dtypes.contains(d))).collect();
            if algos.is_empty() {
                eprintln!("convrs: no kernel left: --algo and --dtype exclude each other");
                return ExitCode::from(2);
            }
            let opts = BenchOptions {
                timing: TimingConfig { warmup, runs: runs as usize, method: timing },
                search: SearchBudget { max_seconds: search_seconds, method: timing, ..SearchBudget::default() },
                seed,
                dtypes,
                nchw_caller: !no_nchw_caller,
            };
            epilogue
                .epilogue()
                .and_then(|ep| bench_suites(&suites, &shapes, &geometry, ep))
                .and_then(|s| match &part {
                    Some(part) => {
                        let (i, n) = parse_part(part)?;
                        s.into_iter().map(|suite| suite.part(i, n)).collect()
                    }
                    None => Ok(s),
                })
                .and_then(|s| bench_cmd(cli.device, &s, &algos, &opts, BenchOutput { all_kernels, pytorch, json, plot }))
        }
    };
    match result {
        Ok(Outcome::Passed) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::FAILURE,
        Ok(Outcome::NoBaseline) => ExitCode::from(4),
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

fn info(device: usize) -> convrs::Result<Outcome> {
    let gpu = Gpu::new(device)?;
    let i = gpu.info();
    println!("device {}: {}", i.ordinal, i.name);
    println!("  compute capability  {}.{}", i.compute_capability.0, i.compute_capability.1);
    println!("  driver (CUDA)       {}.{}", i.driver_cuda_version / 1000, (i.driver_cuda_version % 1000) / 10);
    println!("  multiprocessors     {}", i.multiprocessors);
    println!("  memory              {:.1} GiB total, {:.1} GiB free", i.total_memory_bytes as f64 / 1073741824.0, i.free_memory_bytes as f64 / 1073741824.0);
    println!("  L2 cache            {} MiB", i.l2_cache_bytes >> 20);
    println!("  shared memory/block {} KiB (opt-in)", i.max_shared_bytes_per_block_optin >> 10);
    let m = gpu.model();
    println!("  SM clock (max)      {} MHz", m.clock_mhz);
    println!("  memory bandwidth    {:.0} GB/s (peak)", m.mem_gbps);
    println!("  peak rates          {:.1} TFLOP/s fp32, {:.0} TFLOP/s fp16 tensor (fp32 accumulate)", m.fp32_tflops, m.f16_tflops);
    let hopper = if convrs::ptx::loads_sm90a(i.compute_capability) { " and the sm_90a PTX (wgmma entries)" } else { "" };
    println!("  kernels loaded from {} PTX{hopper}", i.ptx_arch);
    let launches = if gpu.programmatic_launch() { "programmatic (each may start while the previous kernel ends; CONVRS_PDL=0 turns it off)" } else { "stream-ordered" };
    println!("  launches            {launches}");
    println!("  cuDNN               {}", if convrs::cudnn::available() { convrs::cudnn::version() } else { "not found".into() });
    Ok(Outcome::Passed)
}

#[allow(clippy::too_many_arguments)]
fn run(device: usize, algo: Algorithm, dtype: Option<DType>, layout: Layout, tune: bool, s: &ShapeArgs, timing: TimingConfig, seed: u64, f32_out: bool) -> convrs::Result<Outcome> {
    let own = algo.kernel().filter(|_| !tune).map_or(convrs::Precision::Fp32, |k| k.precision);
    let p = s.problem()?.with_precision(s.precision.unwrap_or(own));
    if tune && (p.epilogue.scale || p.epilogue.bias || p.epilogue.residual) {
        // select::tune times each kernel without epilogue operands, which a launch refuses.
        return Err(convrs::Error::InvalidArgument(format!("--tune cannot time an epilogue with operands yet (here {}): choose with auto or name a kernel with --algo", p.epilogue)));
    }
    // The data's type: as given; else a named kernel's first, or fp32.
    let dtype = match (dtype, algo.dtypes().first()) {
        (Some(d), _) => d,
        (None, Some(&first)) if !tune => first,
        (None, _) => DType::F32,
    };
    if algo != Algorithm::Auto && !tune && !algo.dtypes().contains(&dtype) {
        let reads: Vec<_> = algo.dtypes().iter().map(|d| d.name()).collect();
        return Err(convrs::Error::InvalidArgument(format!("{algo} reads {} data, not {dtype} (--dtype)", reads.join("/"))));
    }
    let gpu = Gpu::new(device)?;
    let algo = if tune {
        let t = convrs::select::tune(&gpu, &p, dtype, layout)?;
        if t.from_cache {
            println!("tuned pick {} (from the tuning cache)", t.pick);
        } else {
            let times: Vec<String> = t.times_us.iter().map(|(k, us)| format!("{k} {us:.1} us")).collect();
            println!("tuned pick {} after timing {} kernels in {:.2} s: {}", t.pick, t.times_us.len(), t.seconds, times.join(", "));
        }
        t.pick
    } else if algo == Algorithm::Auto {
        let choice = convrs::select::choose(&p, dtype, layout, gpu.model())?;
        if let Some(e) = choice.estimate() {
            println!("auto picks {} for {dtype} {layout} data (predicted {:.1} us + {:.1} us conversions)", choice.pick, e.kernel_us, e.conversion_us);
        }
        choice.pick
    } else {
        algo
    };
    match dtype {
        DType::F32 => run_typed::<f32, f32>(&gpu, algo, &p, timing, seed),
        DType::F16 if f32_out => run_typed::<half::f16, f32>(&gpu, algo, &p, timing, seed),
        DType::F16 => run_typed::<half::f16, half::f16>(&gpu, algo, &p, timing, seed),
        DType::BF16 if f32_out => run_typed::<half::bf16, f32>(&gpu, algo, &p, timing, seed),
        DType::BF16 => run_typed::<half::bf16, half::bf16>(&gpu, algo, &p, timing, seed),
    }
}

fn explain(device: usize, s: &ShapeArgs, dtype: DType, layout: Layout, model: Option<&str>) -> convrs::Result<Outcome> {
    let p = s.problem()?.with_precision(s.precision.unwrap_or_default());
    let model = match model {
        Some(name) => DeviceModel::named(name)?,
        None => match Gpu::new(device) {
            Ok(gpu) => gpu.model().clone(),
            Err(e) => {
                eprintln!("convrs: no GPU ({e}); explaining for the built-in h100 model (choose one with --device-model)");
                DeviceModel::named("h100")?
            }
        },
    };
    println!("{p}");
    if !p.epilogue.is_none() {
        let fusing: Vec<_> = convrs::registry::KERNELS.iter().filter(|k| k.fuses_epilogue()).map(|k| k.name).collect();
        println!("epilogue {}: {}, on the fp32 sums, rounded once; fused by {}", p.epilogue, formula(&p.epilogue), fusing.join(", "));
    }
    println!("{dtype} data held in {layout}, on {} ({} SMs, {} MHz, {:.0} GB/s)", model.name, model.sms, model.clock_mhz, model.mem_gbps);
    println!(
        "conversions: per call, the input, output and residual into and out of the kernel's layouts ({} us a pass plus its bytes at {:.0}% of the bandwidth, {:.0}% sampled); the filter is converted once per weights, not counted\n",
        convrs::select::TRANSFORM_PASS_US,
        100.0 * convrs::select::TRANSPOSE_RATE,
        100.0 * convrs::select::SAMPLED_RATE
    );
    let candidates = convrs::select::candidates(&p, dtype, layout, &model);
    let choice = convrs::select::pick(candidates.clone(), dtype);
    println!("| kernel | family | layouts | kernel us | conversions us | total us | launch |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for c in &candidates {
        let (x, w, y) = c.kernel.layouts;
        match &c.outcome {
            Ok(e) => {
                let padded = e.padded.map(|r| run_note(&p, &r)).unwrap_or_default();
                let run = e.padded.unwrap_or(p);
                let folded = e.plan.kernel_problem(&run).ok().filter(|_| e.plan.fold_w).map(|f| format!("; {}", fold_note(&run, &f))).unwrap_or_default();
                // The kernel copies a 16-bit residual into shared memory (an fp32 one its threads load).
                let by_tma = if e.plan.residual_map_rows.is_some() { "; a 16-bit residual by TMA" } else { "" };
                println!(
                    "| {} | {} | {x}/{w}/{y} | {:.1} | {:.1} | {:.1} | {} grid {:?} block {:?} {} B{padded}{folded}{by_tma} |",
                    c.kernel.name, c.kernel.family.name(), e.kernel_us, e.conversion_us, e.total_us(), e.plan.kernel, e.plan.grid, e.plan.block, e.plan.shared_bytes
                )
            }
            Err(why) => println!("| {} | {} | {x}/{w}/{y} | - | - | - | refused: {why} |", c.kernel.name, c.kernel.family.name()),
        }
    }
    match choice {
        Ok(c) => {
            println!("\npick: {} (lowest predicted total)", c.pick);
            if let Some(k) = c.pick.kernel() {
                println!("      {}", k.describe());
            }
            Ok(Outcome::Passed)
        }
        Err(e) => Err(e),
    }
}

/// What folding `run`'s column stride into its channels (`Conv2d::folded_w`) makes of it.
fn fold_note(run: &Conv2d, folded: &Conv2d) -> String {
    format!(
        "with its column stride {} folded into the channels: {} channels a tap, {} taps a row, column stride 1, on the same bytes",
        run.stride.1, folded.c, folded.s
    )
}

fn run_typed<T: Element, O: Element>(gpu: &Gpu, algo: Algorithm, p: &Conv2d, timing: TimingConfig, seed: u64) -> convrs::Result<Outcome> {
    let x = Tensor::random(p.input_shape(), Layout::Nchw, seed)?.map(T::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed.wrapping_add(1))?.map(T::from_f32);
    // The epilogue's operands (none without one), the residual in the output's type; the same
    // seeds as the bench's first input set.
    let ep = EpilogueData::random(p, seed.wrapping_add(EPILOGUE_SEED_OFFSET))?.rounded::<O>();
    // One upload: the checked run and the timed runs share the prepared operands.
    let mut prepared = Prepared::<T, O>::new_fused(gpu, algo, p, &x, &w, &ep.tensors())?;
    let plan = *prepared.plan();
    println!("{p}");
    if !p.epilogue.is_none() {
        println!("epilogue  {}{}", formula(&p.epilogue), operand_words(&ep));
    }
    println!("{algo} ({} in, {} out) on {}: {} grid {:?}, block {:?}, {} B shared memory, predicted {:.1} us", T::DTYPE, O::DTYPE, gpu.info().name, plan.kernel, plan.grid, plan.block, plan.shared_bytes, plan.predicted_us);
    let r = prepared.run_problem();
    if r.groups != p.groups {
        println!("runs in {} groups of {} channels, {} of the problem's merged into each (the filter block diagonal)", r.groups, r.group_c(), p.groups / r.groups);
    }
    if (r.n, r.c, r.k) != (p.n, p.c, p.k) {
        println!("runs zero-padded to N={} C={} K={} (the kernel needs multiples; the padding is dropped from the output)", r.n, r.c, r.k);
    }
    if p.sampling(r) != (1, 1) {
        println!("runs at stride 1 on the input sampled on the stride's grid ({}x{} pixels, sampled as the input is converted to the kernel's layout)", r.h, r.w);
    }
    if plan.fold_w {
        println!("runs {}", fold_note(r, &plan.kernel_problem(r)?));
    }
    prepared.poison_output(gpu)?;
    prepared.enqueue(gpu)?;
    gpu.synchronize()?;
    let y = prepared.output(gpu)?;
    eprintln!("computing the f64 CPU reference ({:.2} GFLOP)...", p.flops() / 1e9);
    let conv = conv2d_cpu(p, &x, &w)?;
    let reference = ep.reference(p, conv.clone())?;
    let check = compare(y.data(), reference.data());
    let t = time_runs(gpu, timing, |_| prepared.enqueue(gpu))?;
    // At the precision of the kernel that ran (TF32 reads fp32 data with 10 mantissa bits).
    let precision = prepared.algorithm().kernel().map_or(p.precision, |k| k.precision);
    let tol = ep.tolerance(p, bench::tolerance_at(T::DTYPE, O::DTYPE, precision), &conv, &reference);
    println!("time      {:.4} ms (median of {} {}; min {:.4}, max {:.4})", t.median_ms, t.runs, sample_words(&t), t.min_ms, t.max_ms);
    println!("speed     {:.2} TFLOP/s", p.flops() / (t.median_ms * 1e-3) / 1e12);
    println!("max abs   {:.3e}", check.max_abs_err);
    println!("rel L2    {:.3e} (tolerance {tol:.1e})", check.rel_l2_err);
    println!("worst at  {} (non-finite outputs: {})", check.worst_index, check.non_finite);
    let ok = check.passes(tol);
    println!("check     {}", if ok { "PASSED" } else { "FAILED" });
    Ok(if ok { Outcome::Passed } else { Outcome::Failed })
}

/// The ranges of the random epilogue operands of a run, for its `epilogue` line.
fn operand_words<O>(ep: &EpilogueData<O>) -> String {
    let words: Vec<&str> = [
        (ep.scale.is_some(), "scale in [0.5, 1.5]"),
        (ep.bias.is_some(), "bias in [-1, 1)"),
        (ep.residual.is_some(), "residual in [-1, 1)"),
    ]
    .into_iter()
    .filter_map(|(on, w)| on.then_some(w))
    .collect();
    if words.is_empty() {
        String::new()
    } else {
        format!(" on random operands: {}", words.join(", "))
    }
}

/// What one timed sample was, for the `time` line.
fn sample_words(t: &convrs::timing::Timing) -> String {
    match t.method {
        TimingMethod::Graph => format!("{}, {} runs a replay", t.method.describe(), t.batch),
        TimingMethod::Events => t.method.describe().into(),
    }
}

/// `I/N` of `--part`.
fn parse_part(text: &str) -> convrs::Result<(usize, usize)> {
    let bad = || convrs::Error::InvalidArgument(format!("--part `{text}`: expected I/N, e.g. 1/2"));
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    Ok((i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?))
}

/// The suites to bench: `--shape`s as one suite named `shapes`, else `--suite`s, else `seed`;
/// every shape with the epilogue `ep`.
fn bench_suites(suites: &[String], shapes: &[String], g: &Geometry, ep: Epilogue) -> convrs::Result<Vec<Suite>> {
    if !shapes.is_empty() {
        if !suites.is_empty() {
            return Err(convrs::Error::InvalidArgument("give either --shape or --suite, not both".into()));
        }
        let shapes = shapes.iter().map(|s| problem(s, g, ep)).collect::<convrs::Result<Vec<_>>>()?;
        return Ok(vec![Suite { name: "shapes".into(), shapes, duplicates: 0 }]);
    }
    let names = if suites.is_empty() { vec!["seed".to_string()] } else { suites.to_vec() };
    names
        .iter()
        .map(|s| {
            let suite = Suite::load(s)?;
            Ok(Suite { shapes: suite.shapes.into_iter().map(|p| p.with_epilogue(ep)).collect(), ..suite })
        })
        .collect()
}

/// Where `convrs bench` puts its results besides the table.
struct BenchOutput {
    all_kernels: bool,
    pytorch: TorchMode,
    json: Option<std::path::PathBuf>,
    plot: Option<std::path::PathBuf>,
}

/// Writes `report` to `path` as JSON.
fn write_json(path: &std::path::Path, report: &BenchReport) -> convrs::Result<()> {
    let text = serde_json::to_string_pretty(report).map_err(|e| convrs::Error::InvalidArgument(format!("JSON: {e}")))?;
    std::fs::write(path, text).map_err(|e| convrs::Error::InvalidArgument(format!("cannot write {}: {e}", path.display())))
}

/// Everything one bench run measured, for `--json`.
#[derive(serde::Serialize)]
struct BenchReport {
    gpu: String,
    date: String,
    commit: Option<String>,
    cudnn_version: Option<String>,
    pytorch: String,
    /// Set where PyTorch ran a newer cuDNN than the in-process baseline's: that baseline is then
    /// not the newest on the machine, and the tables say so.
    #[serde(skip_serializing_if = "Option::is_none")]
    stale_cudnn: Option<String>,
    /// The fused epilogue of every shape (`none`: bare convolutions). With one, each group's
    /// ratio is to the faster of PyTorch eager and cuDNN's fused graph (its `judgement` names
    /// which); cuDNN's bare-convolution rows are shown, not judged.
    epilogue: String,
    timing_runs: usize,
    /// Whether our kernels were launched with programmatic stream serialization
    /// (`Gpu::programmatic_launch`): a graph's back-to-back runs then overlap each launch with
    /// the previous run's end.
    programmatic_launch: bool,
    /// While the run is under way (the file is rewritten after every shape), how far it got;
    /// absent once it finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    partial: Option<String>,
    /// Wall time of the whole run, PyTorch included.
    seconds: f64,
    suites: Vec<SuiteReport>,
}

#[derive(Clone, serde::Serialize)]
struct SuiteReport {
    name: String,
    groups: Vec<GroupResult>,
    summary: Vec<report::Summary>,
    /// Shapes that could not be measured at all, and why.
    errors: Vec<String>,
}

fn bench_cmd(device: usize, suites: &[Suite], algos: &[Algorithm], opts: &BenchOptions, out: BenchOutput) -> convrs::Result<Outcome> {
    let started = std::time::Instant::now();
    // bench_suites gives every shape the same epilogue.
    let epilogue = suites.iter().flat_map(|s| &s.shapes).map(|p| p.epilogue).next().unwrap_or(Epilogue::NONE);
    let gpu = Gpu::new(device)?;
    let total: usize = suites.iter().map(|s| s.shapes.len()).sum();
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(total as u64);
        b.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} shapes {elapsed} {msg}").expect("static template"));
        Some(b)
    } else {
        None
    };
    let mut progress = |msg: &str| match &bar {
        Some(b) => b.set_message(msg.to_string()),
        // The seconds say where a device call's time went (searches, references, kernels).
        None => eprintln!("[bench {:6.1}s] {msg}", started.elapsed().as_secs_f64()),
    };

    // PyTorch first, in its own process, on every shape of every suite: it releases the GPU
    // before our measurements start.
    let dtypes = bench::run_dtypes(algos, &opts.dtypes);
    let torch_shapes: Vec<_> = suites.iter().flat_map(|s| s.shapes.iter()).map(|p| bench::torch_shape(&gpu, p, &dtypes)).collect();
    progress(&format!("PyTorch conv2d on {} shapes", torch_shapes.len()));
    let torch = pytorch::run(out.pytorch, device, &torch_shapes, opts.seed, opts.timing.method)?;
    if let TorchOutcome::NotRun(why) = &torch {
        eprintln!("convrs: WARNING: PyTorch was NOT RUN ({why}): the PyTorch column is empty and the flag rule cannot apply");
    }

    let cudnn_version = convrs::cudnn::available().then(convrs::cudnn::version);
    if cudnn_version.is_none() {
        eprintln!("convrs: WARNING: libcudnn was not found on the library path: the cuDNN baseline is unavailable");
    }
    let stale_cudnn = cudnn_version.as_deref().and_then(|v| torch.newer_cudnn(v).map(|t| (v.to_string(), t)));
    if let Some((ours, theirs)) = &stale_cudnn {
        eprintln!(
            "convrs: WARNING: the in-process cuDNN is {ours} but PyTorch ran cuDNN {theirs}: the cuDNN baseline is not the \
             newest on this machine (run through run-gpu.sh, or put PyTorch's cudnn/lib first on LD_LIBRARY_PATH)"
        );
    }
    // The report of `suites` measured so far; `partial` says how far a run under way got.
    let report_of = |suites: Vec<SuiteReport>, partial: Option<String>| BenchReport {
        gpu: gpu.info().name.clone(),
        date: bench::today(),
        commit: std::env::var("CONVRS_COMMIT").ok(),
        cudnn_version: cudnn_version.clone(),
        pytorch: torch.describe(),
        stale_cudnn: stale_cudnn.as_ref().map(|(ours, theirs)| format!("in-process cuDNN {ours} is older than PyTorch's {theirs}")),
        epilogue: epilogue.to_string(),
        timing_runs: opts.timing.runs,
        programmatic_launch: gpu.programmatic_launch(),
        partial,
        seconds: started.elapsed().as_secs_f64(),
        suites,
    };
    let mut reports = Vec::new();
    for suite in suites {
        let (mut groups, mut errors) = (Vec::new(), Vec::new());
        for (i, p) in suite.shapes.iter().enumerate() {
            let shape_opts = BenchOptions { seed: opts.seed.wrapping_add(1000 * i as u64), ..opts.clone() };
            match bench::bench_shape(&gpu, p, algos, &shape_opts, &torch, &mut progress) {
                Ok(g) => groups.extend(g),
                // One shape that cannot be measured (e.g. too large for this GPU) is reported, not fatal.
                Err(e) => errors.push(format!("{}: {e}", bench::shape_label(p))),
            }
            if let Some(b) = &bar {
                b.inc(1);
            }
            // The JSON so far, after every shape: a run cut off by a time limit keeps what it measured.
            if let Some(path) = &out.json {
                let partial = SuiteReport { name: suite.name.clone(), groups: groups.clone(), summary: Vec::new(), errors: errors.clone() };
                let so_far = format!("{} of suite {}'s {} shapes", i + 1, suite.name, suite.shapes.len());
                write_json(path, &report_of(reports.iter().cloned().chain([partial]).collect(), Some(so_far)))?;
            }
        }
        let summary = report::summarize(&suite.name, &groups);
        reports.push(SuiteReport { name: suite.name.clone(), groups, summary, errors });
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report_of(reports, None);
    print_report(&report, opts, out.all_kernels);
    if let Some(path) = &out.json {
        write_json(path, &report)?;
    }
    if let Some(path) = &out.plot {
        let groups: Vec<&GroupResult> = report.suites.iter().flat_map(|s| &s.groups).collect();
        let points: Vec<PlotPoint> = groups
            .iter()
            .filter_map(|g| Some(PlotPoint { shape: g.shape.clone(), family: g.best_kernel()?.family.clone(), dtype: g.precision.clone(), ratio: g.ratio()? }))
            .collect();
        let names: Vec<&str> = report.suites.iter().map(|s| s.name.as_str()).collect();
        let against = if epilogue.is_none() { "best baseline".to_string() } else { format!("the faster of PyTorch eager and cuDNN's fused graph, epilogue {epilogue}") };
        let title = format!("convrs vs {against}: {} on {}, {}", names.join(" + "), report.gpu, report.date);
        convrs::plot::write_svg(path, &title, &points)?;
    }

    let groups = || report.suites.iter().flat_map(|s| &s.groups);
    let failed: Vec<String> = groups()
        .flat_map(|g| g.kernels.iter().chain(&g.cudnn).chain(&g.cudnn_fused).chain(&g.tf32_cudnn).chain(&g.tf32_cudnn_fused).map(move |m| (g, m)))
        .filter(|(_, m)| m.timing.is_some() && !m.passed)
        .map(|(g, m)| format!("{} on {} ({})", m.name, g.shape, g.precision))
        .collect();
    for f in &failed {
        eprintln!("convrs: {f} FAILED its check against the CPU reference");
    }
    let errors: Vec<&String> = report.suites.iter().flat_map(|s| &s.errors).collect();
    for e in &errors {
        eprintln!("convrs: could not measure {e}");
    }
    // The judged baseline that is missing: cuDNN for bare convolutions; under an epilogue both
    // baselines computing the layer, PyTorch eager and cuDNN's fused graph.
    let no_baseline = |g: &GroupResult| if g.epilogue.is_some() { g.best_baseline().is_none() } else { g.best_cudnn().is_none() };
    Ok(if !failed.is_empty() || !errors.is_empty() {
        Outcome::Failed
    } else if groups().all(no_baseline) {
        Outcome::NoBaseline
    } else {
        Outcome::Passed
    })
}

fn print_report(report: &BenchReport, opts: &BenchOptions, all_kernels: bool) {
    println!(
        "{} | {} | commit {} | cuDNN {} in-process | {} | median of {} {} after {} warm-up | our launches {} | {:.0} s",
        report.gpu,
        report.date,
        report.commit.as_deref().unwrap_or("unknown"),
        report.cudnn_version.as_deref().unwrap_or("NOT FOUND"),
        report.pytorch,
        opts.timing.runs,
        opts.timing.method.describe(),
        opts.timing.warmup,
        if report.programmatic_launch { "programmatic" } else { "stream-ordered" },
        report.seconds
    );
    if let Some(stale) = &report.stale_cudnn {
        println!("\n**WARNING: {stale}: the cuDNN in-process columns are not the newest cuDNN on this machine (PyTorch's columns are).**");
    }
    if report.epilogue != Epilogue::NONE.to_string() {
        println!(
            "\nEpilogue {} on every shape: our fused kernels, PyTorch eager and cuDNN's fused graph (the convolution, then pointwise \
             nodes) compute the whole layer on the same operands; each ratio is to the faster of PyTorch eager and cuDNN's fused \
             graph, named in the `strongest baseline` column. cuDNN's bare-convolution rows (marked `bare conv`) are shown last, \
             left out of every ratio and flag.",
            report.epilogue
        );
    }
    for s in &report.suites {
        println!("\n## Suite {}\n", s.name);
        print!("{}", report::table(&s.groups, all_kernels));
        for e in &s.errors {
            println!("\nnot measured: {e}");
        }
    }
    for s in &report.suites {
        println!("\n## Suite {}: the automatic choice (kernel time alone) against the fastest kernel\n", s.name);
        print!("{}", report::heuristic_table(&s.groups));
    }
    let summaries: Vec<_> = report.suites.iter().flat_map(|s| s.summary.clone()).collect();
    println!("\n## Summary\n");
    print!("{}", report::summary_table(&summaries));
    println!();
    print!("{}", report::summary_lines(&summaries, report.epilogue != Epilogue::NONE.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn explain_problem(args: &[&str]) -> convrs::Result<Conv2d> {
        let cli = Cli::try_parse_from([&["convrs", "explain"], args].concat()).map_err(|e| convrs::Error::InvalidArgument(e.to_string()))?;
        let Command::Explain { shape, .. } = cli.command else { panic!("not explain") };
        shape.problem()
    }

    #[test]
    fn groups_default_to_one_and_take_a_value() {
        let p = explain_problem(&["--shape", "2,8,9,9,8,3,3", "--pad", "1"]).unwrap();
        assert_eq!(p.groups, 1);
        let p = explain_problem(&["--shape", "2,8,9,9,8,3,3", "--pad", "1", "--groups", "4"]).unwrap();
        assert_eq!(p, Conv2d { groups: 4, ..Conv2d::new(2, 8, 9, 9, 8, 3, 3).with_pad(1) });
        assert_eq!(p.filter_shape(), [8, 2, 3, 3]);
        // Depthwise, with the other geometry options beside it.
        let p = explain_problem(&["--shape", "2,16,9,9,16,3,3", "--pad", "1", "--stride", "2", "--groups", "16"]).unwrap();
        assert_eq!(p, Conv2d::new(2, 16, 9, 9, 16, 3, 3).with_pad(1).with_stride(2).with_groups(16));
        assert!(p.is_depthwise());
    }

    /// `explain` and `run` say when a plan folds the column stride, with the folded geometry.
    #[test]
    fn a_folded_plan_is_described_with_its_folded_geometry() {
        let p = explain_problem(&["--shape", "32,32,79,341,32,5,10", "--stride", "2"]).unwrap();
        let d = convrs::DeviceModel::named("h100").unwrap();
        let plan = convrs::registry::by_name("wgmma_ws_tma_persistent").unwrap().plan(&p, DType::F16, &d).unwrap();
        assert!(plan.fold_w);
        let note = fold_note(&p, &plan.kernel_problem(&p).unwrap());
        assert!(note.contains("stride 2 folded") && note.contains("64 channels a tap, 5 taps a row"), "{note}");
    }

    #[test]
    fn bad_groups_are_refused() {
        // 3 divides neither C = 8 nor K = 8: the problem's own check.
        let e = explain_problem(&["--shape", "2,8,9,9,8,3,3", "--groups", "3"]).unwrap_err();
        assert_eq!(e, convrs::Error::Groups { groups: 3, c: 8, k: 8 });
        // Divides C, not K.
        assert!(matches!(explain_problem(&["--shape", "1,8,9,9,6,3,3", "--groups", "4"]), Err(convrs::Error::Groups { groups: 4, c: 8, k: 6 })));
        assert_eq!(explain_problem(&["--shape", "1,8,9,9,8,3,3", "--groups", "0"]).unwrap_err(), convrs::Error::ZeroSize { dim: "groups" });
        for bad in ["x", "-1", "2,2", ""] {
            let e = explain_problem(&["--shape", "1,8,9,9,8,3,3", &format!("--groups={bad}")]).unwrap_err().to_string();
            assert!(e.contains("--groups"), "{bad}: {e}");
        }
    }

    #[test]
    fn bench_shapes_take_groups_too() {
        let cli = Cli::try_parse_from(["convrs", "bench", "--shape", "1,32,56,56,32,3,3", "--shape", "1,64,56,56,64,3,3", "--pad", "1", "--groups", "32"]).unwrap();
        let Command::Bench { suites, shapes, geometry, .. } = cli.command else { panic!("not bench") };
        let s = bench_suites(&suites, &shapes, &geometry, Epilogue::NONE).unwrap();
        assert_eq!(s[0].shapes.iter().map(|p| (p.c, p.groups)).collect::<Vec<_>>(), vec![(32, 32), (64, 32)]);
    }

    #[test]
    fn epilogue_spec_and_flags_build_the_same_epilogue() {
        let shape = ["--shape", "2,8,9,9,8,3,3", "--pad", "1"];
        let with = |extra: &[&str]| explain_problem(&[&shape[..], extra].concat()).map(|p| p.epilogue);
        assert_eq!(with(&[]).unwrap(), Epilogue::NONE);
        let want = Epilogue::NONE.with_bias().with_activation(Activation::Relu);
        assert_eq!(with(&["--epilogue", "bias+relu"]).unwrap(), want);
        assert_eq!(with(&["--bias", "--act", "relu"]).unwrap(), want);
        let full: Epilogue = "alpha=0.5+scale+bias+residual+beta=-2+leaky_relu:0.2".parse().unwrap();
        assert_eq!(with(&["--epilogue", &full.to_string()]).unwrap(), full);
        assert_eq!(with(&["--scale", "--bias", "--residual", "--alpha", "0.5", "--beta", "-2", "--act", "leaky_relu:0.2"]).unwrap(), full);
        // The problem carries it, whatever the geometry.
        let p = explain_problem(&[&shape[..], &["--groups", "8", "--epilogue", "scale+bias+residual+silu"]].concat()).unwrap();
        assert_eq!((p.groups, p.epilogue.to_string()), (8, "scale+bias+residual+silu".to_string()));
    }

    #[test]
    fn bad_epilogues_are_refused_with_the_reason() {
        let shape = ["--shape", "2,8,9,9,8,3,3"];
        let err = |extra: &[&str]| explain_problem(&[&shape[..], extra].concat()).unwrap_err().to_string();
        assert!(err(&["--epilogue", "bias+tanh"]).contains("unknown activation `tanh`"));
        assert!(err(&["--epilogue", "bias+alpha=x"]).contains("alpha=x"));
        assert!(err(&["--act", "swishy"]).contains("unknown activation"));
        // One spelling at a time.
        assert!(err(&["--epilogue", "bias", "--act", "relu"]).contains("cannot be used with"));
        assert!(err(&["--epilogue", "relu", "--bias"]).contains("cannot be used with"));
        // beta is the residual's factor.
        assert!(err(&["--beta", "0.5"]).contains("--residual"));
        assert!(err(&["--epilogue", "bias+beta=0.5"]).contains("no residual"));
        assert!(err(&["--alpha", "nan"]).contains("must be finite"));
    }

    #[test]
    fn bench_applies_the_epilogue_to_every_suite_shape() {
        let cli = Cli::try_parse_from(["convrs", "bench", "--suite", "seed", "--suite", "resnet50", "--epilogue", "bias+relu"]).unwrap();
        let Command::Bench { suites, shapes, geometry, epilogue, .. } = cli.command else { panic!("not bench") };
        let ep = epilogue.epilogue().unwrap();
        let s = bench_suites(&suites, &shapes, &geometry, ep).unwrap();
        assert_eq!(s.len(), 2);
        assert!(s.iter().flat_map(|s| &s.shapes).all(|p| p.epilogue == ep));
        // And to --shape shapes, by the flags too.
        let cli = Cli::try_parse_from(["convrs", "bench", "--shape", "1,32,56,56,32,3,3", "--pad", "1", "--residual", "--act", "gelu"]).unwrap();
        let Command::Bench { suites, shapes, geometry, epilogue, .. } = cli.command else { panic!("not bench") };
        let s = bench_suites(&suites, &shapes, &geometry, epilogue.epilogue().unwrap()).unwrap();
        assert_eq!(s[0].shapes[0].epilogue, Epilogue::NONE.with_residual().with_activation(Activation::GeluErf));
        assert!(convrs::bench::shape_label(&s[0].shapes[0]).ends_with(" ep=residual+gelu"));
    }

    #[test]
    fn formulas_say_what_is_computed() {
        let f = |spec: &str| formula(&spec.parse().unwrap());
        assert_eq!(f("none"), "y = conv(x, w)");
        assert_eq!(f("bias+relu"), "y = relu(conv(x, w) + bias[k])");
        assert_eq!(f("alpha=0.5+scale+bias+residual+beta=2+leaky_relu:0.2"), "y = leaky_relu:0.2(0.5 * conv(x, w) * scale[k] + bias[k] + 2 * residual)");
        assert_eq!(f("residual+silu"), "y = silu(conv(x, w) + residual)");
    }

    #[test]
    fn help_documents_the_epilogue() {
        for sub in ["run", "explain", "bench"] {
            let mut cmd = Cli::command();
            let help = cmd.find_subcommand_mut(sub).unwrap().render_long_help().to_string();
            for option in ["--epilogue <SPEC>", "--scale", "--bias", "--residual", "--act <NAME>", "--alpha <F>", "--beta <F>"] {
                assert!(help.contains(option), "{sub} lacks {option}: {help}");
            }
            assert!(help.contains("y = act(alpha * conv(x, w) * scale[k] + bias[k] + beta * residual)"), "{sub}: {help}");
            assert!(help.contains("bias+relu") && help.contains("leaky_relu[:SLOPE]") && help.contains("needs --residual"), "{sub}: {help}");
        }
        let mut cmd = Cli::command();
        let bench = cmd.find_subcommand_mut("bench").unwrap().render_long_help().to_string();
        assert!(bench.contains("The ratio is to the faster of PyTorch eager and cuDNN's fused") && bench.contains("graph"), "{bench}");
    }

    #[test]
    fn help_documents_groups() {
        for sub in ["run", "explain", "bench"] {
            let mut cmd = Cli::command();
            let help = cmd.find_subcommand_mut(sub).unwrap().render_long_help().to_string();
            assert!(help.contains("--groups <G>"), "{sub}: {help}");
            assert!(help.contains("G divides C and K") && help.contains("G = C is a depthwise convolution"), "{sub}: {help}");
        }
    }
}

/// How the problem a kernel runs (`run`) differs from the caller's `p`, for `explain`'s launch
/// column: merged groups, zero padding, a subsampled input.
fn run_note(p: &Conv2d, run: &Conv2d) -> String {
    let mut note = String::new();
    if run.groups != p.groups {
        note += &format!(", in {} merged groups of {} channels", run.groups, run.group_c());
    }
    if (run.n, run.c, run.k) != (p.n, p.c, p.k) {
        note += &format!(", zero-padded to N={} C={} K={}", run.n, run.c, run.k);
    }
    if p.sampling(run) != (1, 1) {
        note += &format!(", on the input sampled on the stride's grid ({}x{})", run.h, run.w);
    }
    note
}
