//! `convrs bench`: our kernels next to the strongest baselines, on the same shapes, in the same run.
//!
//! Per shape and precision (fp32, fp16): several input sets of fresh random data (rotated
//! between timed runs, so the runs do not just re-read L2), one f64 CPU reference on the same
//! (rounded) inputs, then
//! - the baselines, each checked against that reference and timed the same way as our kernels:
//!   cuDNN through its graph API (every engine the heuristics, the fallback list and the global
//!   engine index offer, the fastest kept), cuDNN through the legacy API (the fastest of its 8
//!   algorithms), and PyTorch's `conv2d` timed by a child `python3` ([`pytorch`]); for fp32 also
//!   the TF32 tensor-core baselines, PyTorch's default for fp32 convolutions, shown beside;
//! - each of our kernels in its own layout: a checked run into a NaN-poisoned output, then
//!   warm-up and timed runs ([`crate::timing`]: CUDA graph replays by default), median kept.
//!
//! fp32 is compared in NCHW with FMA arithmetic on both sides (TF32 off); fp16 in NHWC with
//! tensor cores and fp32 accumulation. [`report`] turns the rows into ratios, flags and suite summaries.
//! Grouped shapes are labelled with their groups (` g4`); a depthwise shape (G = C > 1) also gets
//! every row's achieved bandwidth, its input + filter + output bytes ([`depthwise_bytes`]) over
//! the median time.
//!
//! A problem with a fused epilogue ([`crate::Epilogue`], `convrs bench --epilogue`) runs the whole
//! layer: our kernels through [`Prepared::new_fused`] on random operands ([`EpilogueData`]),
//! checked against the f64 reference with the epilogue applied; PyTorch in eager mode the way
//! its users write the layer ([`pytorch::eager_calls`]); and cuDNN's fused graph of the layer
//! ([`GraphConv::new_fused`]: the convolution, then pointwise nodes for the epilogue), searched
//! and timed like the bare graph, on the same operands, checked against the same fused
//! reference. The judged baseline is the faster of PyTorch eager and cuDNN's fused graph
//! ([`report::GroupResult::best_baseline`]); cuDNN's bare-convolution rows stay shown (checked
//! against the bare reference) and take no part in any ratio, flag or judged baseline
//! ([`report::GroupResult::epilogue`]). Our NCHW caller's row goes through
//! [`crate::device_conv::DeviceConv::fused`]: the epilogue's vectors on the device once, the
//! residual given to each run in NCHW.

pub mod pytorch;
pub mod report;

use std::cell::RefCell;
use std::rc::Rc;

use cudarc::driver::CudaSlice;

use crate::cudnn::CudnnConv;
use crate::cudnn_graph::{GraphConv, Math, SearchBudget};
use crate::epilogue::EpilogueOperands;
use crate::prepared::{Prepared, Rotation, Runnable};
use crate::timing::{time_runs, TimingConfig, TimingMethod};
use crate::prepared::EpilogueTensors;
use crate::{compare, conv2d_cpu, Activation, Algorithm, Comparison, Conv2d, DType, Element, Epilogue, Gpu, Layout, Precision, Result, Tensor};
use pytorch::{TorchOutcome, TorchShape};
use report::{GroupResult, Measurement};

/// fp32 results with sums in fp32 land far under this relative L2 error against the f64
/// reference (rounding grows like sqrt(C*R*S) * 2^-24); a wrong index lands far above it.
pub const FP32_REL_L2_TOLERANCE: f64 = 1e-5;

/// fp16 inputs with fp32 accumulation, against the f64 sum of the same fp16-rounded inputs:
/// each product of two fp16 values is exact in fp32, so only the fp32 accumulation rounds (the
/// tensor cores' adder truncates a few more bits than IEEE fp32, still far under 1e-4 for
/// C*R*S in the thousands). Accumulating in fp16 instead would give about 2^-11 = 5e-4, so
/// this tolerance also proves that the accumulators are fp32.
pub const FP16_REL_L2_TOLERANCE: f64 = 1e-4;

/// TF32 reading ([`Precision::Tf32`]): each fp32 operand keeps its upper 19 bits (10 mantissa
/// bits), losing less than 2^-10 of itself, so a product is within 2^-9 of the exact one; the
/// products of the kept values are exact in fp32 and only the accumulation rounds after that.
/// Against the reference on the unrounded data the output's relative L2 error is therefore at
/// most about 2^-9 where the sums do not cancel (about 2^-10 on the bench's zero-mean data).
pub const TF32_REL_L2_TOLERANCE: f64 = 1.0 / 512.0;

/// [`tolerance`] for a kernel computing fp32 data at `precision` ([`crate::registry::KernelDesc::precision`]):
/// TF32 adds [`TF32_REL_L2_TOLERANCE`] to the tensor cores' accumulation ([`FP16_REL_L2_TOLERANCE`]);
/// 3xTF32 and FMA keep fp32's (3xTF32's products are within about 2^-21 of the exact ones,
/// under the fp32 accumulation's rounding). 16-bit inputs ignore `precision`.
///
/// ```
/// use convrs::bench::{tolerance, tolerance_at, FP16_REL_L2_TOLERANCE, TF32_REL_L2_TOLERANCE};
/// use convrs::{DType, Precision};
/// assert_eq!(tolerance_at(DType::F32, DType::F32, Precision::Tf32), FP16_REL_L2_TOLERANCE + TF32_REL_L2_TOLERANCE);
/// assert_eq!(tolerance_at(DType::F32, DType::F32, Precision::Fp32), tolerance(DType::F32, DType::F32));
/// ```
pub fn tolerance_at(input: DType, output: DType, precision: Precision) -> f64 {
    match (input, precision) {
        (DType::F32, Precision::Tf32) => FP16_REL_L2_TOLERANCE + TF32_REL_L2_TOLERANCE + unit_roundoff(output),
        _ => tolerance(input, output),
    }
}

/// The relative L2 tolerance for a kernel reading `input` and writing `output` elements.
///
/// The accumulation: fp32 sums, [`FP32_REL_L2_TOLERANCE`] for fp32 inputs; for 16-bit inputs
/// [`FP16_REL_L2_TOLERANCE`] (bf16 gets fp16's: a product of two bf16 values, 8-bit
/// significands, is exact in fp32 just as one of two fp16 values, 11 bits, is, so again only the
/// fp32 accumulation rounds). Then the output rounding: each output rounded to nearest in a type
/// of unit roundoff u (2^-11 fp16, 2^-8 bf16) moves by at most u relative, so the L2 error of the
/// whole output grows by at most u.
///
/// ```
/// use convrs::bench::tolerance;
/// use convrs::DType;
/// assert_eq!(tolerance(DType::F16, DType::F32), 1e-4);
/// assert_eq!(tolerance(DType::BF16, DType::BF16), 1e-4 + 1.0 / 256.0);
/// ```
pub fn tolerance(input: DType, output: DType) -> f64 {
    let accumulation = match input {
        DType::F32 => FP32_REL_L2_TOLERANCE,
        DType::F16 | DType::BF16 => FP16_REL_L2_TOLERANCE,
    };
    accumulation + unit_roundoff(output)
}

/// Half the distance from 1 to the next value of `dtype` (0 for fp32, whose rounding the
/// accumulation tolerance already covers).
pub fn unit_roundoff(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 0.0,
        DType::F16 => 2f64.powi(-11),
        DType::BF16 => 2f64.powi(-8),
    }
}

/// A baseline's check only has to catch a wrong answer (a wrong index or layout gives a relative
/// error near 1), not grade its precision: cuDNN may use FFT or Winograd (extra roundings in the
/// transform domain, ~1e-6..1e-4 in fp32), TF32 operands (10-bit mantissas: ~5e-4 per product),
/// or round its output to fp16 (up to 2^-11 = 4.9e-4 per element) after fp16 Winograd transforms.
pub fn baseline_tolerance(dtype: DType, tf32: bool) -> f64 {
    match (dtype, tf32) {
        (DType::F32, false) => 1e-3,
        _ => 1e-2,
    }
}

/// The relative L2 tolerance of cuDNN's fused graph of `p` (its rows are checked against the
/// same fused reference `fused` as our fused rows, `conv` being the bare one): the baseline's
/// [`baseline_tolerance`] scaled by the epilogue's gain exactly as our rows' tolerance is
/// ([`EpilogueData::tolerance`]). A baseline's check catches a wrong answer; grading its
/// precision by our kernels' bound would drop a fast engine that rounds more (FFT, Winograd)
/// from the judged baselines, which could only flatter our ratio.
pub fn fused_baseline_tolerance<O>(data: &EpilogueData<O>, p: &Conv2d, dtype: DType, tf32: bool, conv: &Tensor<f64>, fused: &Tensor<f64>) -> f64 {
    data.tolerance(p, baseline_tolerance(dtype, tf32), conv, fused)
}

/// How long each row is timed, how hard the cuDNN engine search tries, and which element types
/// are measured.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub timing: TimingConfig,
    pub search: SearchBudget,
    pub seed: u64,
    /// The element types to measure (empty: every type some kernel of the run reads).
    pub dtypes: Vec<DType>,
    /// Whether to measure the NCHW caller's rows (and their NCHW baselines) too.
    pub nchw_caller: bool,
}

/// The element types a run measures: those of `wanted` (all if empty) that some of `algos` reads,
/// in the order fp32, fp16, bf16.
pub fn run_dtypes(algos: &[Algorithm], wanted: &[DType]) -> Vec<DType> {
    [DType::F32, DType::F16, DType::BF16].into_iter().filter(|d| (wanted.is_empty() || wanted.contains(d)) && algos.iter().any(|a| a.dtypes().contains(d))).collect()
}

/// Compact shape label: `N,C,H,W->K,RxS pPAD[ sSTRIDE][ dDIL][ gGROUPS][ ep=EPILOGUE]`, stride,
/// dilation and groups only where not 1, the epilogue only where there is one (the label keys
/// PyTorch's answers and the tuning cache, so a grouped shape must not share its dense
/// sibling's, nor a fused layer the bare convolution's: other kernels take it).
pub fn shape_label(p: &Conv2d) -> String {
    let pair = |v: (usize, usize)| if v.0 == v.1 { v.0.to_string() } else { format!("{},{}", v.0, v.1) };
    let mut s = format!("{},{},{},{}->{},{}x{} p{}", p.n, p.c, p.h, p.w, p.k, p.r, p.s, pair(p.pad));
    if p.stride != (1, 1) {
        s += &format!(" s{}", pair(p.stride));
    }
    if p.dilation != (1, 1) {
        s += &format!(" d{}", pair(p.dilation));
    }
    if p.groups != 1 {
        s += &format!(" g{}", p.groups);
    }
    if !p.epilogue.is_none() {
        s += &format!(" ep={}", p.epilogue);
    }
    s
}

/// Seeds of the epilogue operands start this far above a run's seed: clear of the input sets'
/// (`seed + 2i`, `seed + 2i + 1` for at most 8 sets) and below the next shape's (`seed + 1000`).
pub const EPILOGUE_SEED_OFFSET: u64 = 100;

/// Random operands of a fused epilogue for a checked run: exactly those the problem's
/// [`Epilogue`] names (the library refuses any other). `scale` is uniform in [0.5, 1.5] (a
/// folded BatchNorm's factors, which keep the output's magnitude), `bias` and the `residual`
/// (the output's shape, NCHW) uniform in [-1, 1), like the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct EpilogueData<O> {
    pub scale: Option<Vec<f32>>,
    pub bias: Option<Vec<f32>>,
    pub residual: Option<Tensor<O>>,
}

impl EpilogueData<f32> {
    /// The operands of `p`'s epilogue from the streams seeded `seed`, `seed + 1`, `seed + 2`.
    ///
    /// ```
    /// use convrs::bench::EpilogueData;
    /// use convrs::{Conv2d, Epilogue};
    /// let p = Conv2d::new(1, 4, 5, 5, 3, 3, 3).with_epilogue(Epilogue::NONE.with_scale().with_residual());
    /// let ep = EpilogueData::random(&p, 7)?;
    /// assert!(ep.scale.unwrap().iter().all(|s| (0.5..=1.5).contains(s)));
    /// assert_eq!((ep.bias, ep.residual.unwrap().dims()), (None, [1, 3, 3, 3]));
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn random(p: &Conv2d, seed: u64) -> Result<Self> {
        let ep = &p.epilogue;
        let scale = ep.scale.then(|| crate::random::uniform_vec_f32(p.k, seed).into_iter().map(|u| 1.0 + 0.5 * u).collect());
        let bias = ep.bias.then(|| crate::random::uniform_vec_f32(p.k, seed.wrapping_add(1)));
        let residual = if ep.residual { Some(Tensor::random(p.output_shape(), Layout::Nchw, seed.wrapping_add(2))?) } else { None };
        Ok(EpilogueData { scale, bias, residual })
    }

    /// The same with the residual rounded to `O` (the output's type: the kernel reads it so).
    pub fn rounded<O: Element>(&self) -> EpilogueData<O> {
        EpilogueData { scale: self.scale.clone(), bias: self.bias.clone(), residual: self.residual.as_ref().map(|r| r.map(O::from_f32)) }
    }
}

impl<O: Element> EpilogueData<O> {
    /// The operands as [`Prepared::new_fused`] takes them.
    pub fn tensors(&self) -> EpilogueTensors<'_, O> {
        EpilogueTensors { scale: self.scale.as_deref(), bias: self.bias.as_deref(), residual: self.residual.as_ref() }
    }

    /// The f64 reference of `p` with its epilogue: `conv`, the bare convolution's reference
    /// ([`conv2d_cpu`]), as it is when there is no epilogue, else with these operands applied
    /// ([`crate::reference::apply_epilogue`]).
    pub fn reference(&self, p: &Conv2d, conv: Tensor<f64>) -> Result<Tensor<f64>> {
        if p.epilogue.is_none() {
            return Ok(conv);
        }
        crate::reference::apply_epilogue(p, &conv, self.scale.as_deref(), self.bias.as_deref(), self.residual.as_ref())
    }
}

/// What a fused epilogue's own fp32 arithmetic adds to an output's relative L2 error: the
/// product alpha * scale, the bias and residual additions (2^-24 relative each, of operands
/// within a few times the output), `ex2.approx` in the sigmoid and erfc (about 2^-22 relative,
/// plus its argument's rounding: below 2e-6 for |v| < 30), and erfc's fit (1.2e-7). The GPU
/// tests (`tests/tests/gpu_epilogue.rs`) take the same.
pub const EPILOGUE_ARITHMETIC_TOLERANCE: f64 = 1e-5;

/// The largest slope of `act`: the factor by which an error of the sum before it can grow
/// through it (GELU's, erf form, 1.1289 at v = 1.414, and its tanh form's, rounded up; SiLU's is
/// 1.0998).
pub fn activation_max_slope(act: Activation) -> f64 {
    match act {
        Activation::Identity | Activation::Relu | Activation::Relu6 => 1.0,
        Activation::LeakyRelu(slope) => (slope.abs() as f64).max(1.0),
        Activation::Silu => 1.1,
        Activation::GeluTanh | Activation::GeluErf => 1.13,
    }
}

impl<O> EpilogueData<O> {
    /// The relative L2 tolerance of a fused run of `p` whose bare convolution gets `bare`
    /// ([`tolerance_at`]), given the bare reference `conv` and the fused one `fused`: `bare`
    /// scaled by how much the epilogue can enlarge the sum's error relative to the output (the
    /// largest |alpha * scale| times the activation's slope, over the ratio of the outputs'
    /// norms: a residual or bias that cancels the sum, or a ReLU that zeroes most of it, leaves
    /// the same absolute error on a smaller output), plus [`EPILOGUE_ARITHMETIC_TOLERANCE`].
    /// `bare` itself without an epilogue.
    pub fn tolerance(&self, p: &Conv2d, bare: f64, conv: &Tensor<f64>, fused: &Tensor<f64>) -> f64 {
        let ep = &p.epilogue;
        if ep.is_none() {
            return bare;
        }
        let scale = self.scale.as_deref().map_or(1.0, |s| s.iter().fold(0.0f64, |m, v| m.max(v.abs() as f64)));
        let norm = |t: &Tensor<f64>| t.data().iter().map(|v| v * v).sum::<f64>().sqrt();
        let gain = ep.alpha().abs() as f64 * scale * activation_max_slope(ep.activation) * norm(conv) / norm(fused).max(f64::MIN_POSITIVE);
        bare * gain.max(1.0) + EPILOGUE_ARITHMETIC_TOLERANCE
    }
}

/// The bytes a depthwise convolution moves at least: its input, filter and output once each, in
/// `dtype` elements (every row of a bench group writes its output in the input's type). `None`
/// unless the problem is depthwise with more than one group (G = C > 1): a depthwise layer does
/// about one multiply-add per filter tap and byte, so its speed is a bandwidth, not a FLOP rate
/// (with C = 1 the one group is a dense convolution, judged by its FLOPs as any other).
pub fn depthwise_bytes(p: &Conv2d, dtype: DType) -> Option<f64> {
    (p.is_depthwise() && p.groups > 1).then(|| p.tensor_elements() as f64 * dtype.size() as f64)
}

/// Input sets to rotate through: enough that they together exceed twice the L2 cache, at least
/// two, at most eight, and within a quarter of the free device memory (sized for fp32).
pub fn rotation_sets(gpu: &Gpu, p: &Conv2d) -> usize {
    let set_bytes = 4 * p.tensor_elements() as u64;
    let want = (2 * gpu.info().l2_cache_bytes as u64).div_ceil(set_bytes.max(1)) as usize;
    let fit = (gpu.info().free_memory_bytes / 4 / set_bytes.max(1)) as usize;
    want.clamp(2, 8).min(fit.max(1))
}

/// What PyTorch is asked to time for `problem` when `algos` are benchmarked on it in `dtypes`
/// ([`run_dtypes`]): those precisions (fp32 also in TF32, 16-bit types also on NCHW tensors),
/// over the same number of input sets.
pub fn torch_shape(gpu: &Gpu, problem: &Conv2d, dtypes: &[DType]) -> TorchShape {
    let mut configs = Vec::new();
    for d in dtypes {
        match d {
            DType::F32 => configs.extend(["fp32", "tf32"]),
            // 16-bit: channels-last (the judged NHWC baseline) and contiguous NCHW (the baseline
            // for a caller holding NCHW tensors).
            DType::F16 => configs.extend(["fp16", "fp16_nchw"]),
            DType::BF16 => configs.extend(["bf16", "bf16_nchw"]),
        }
    }
    TorchShape { label: shape_label(problem), problem: *problem, sets: rotation_sets(gpu, problem), configs }
}

/// Everything one shape's measurements share: the problem, options, PyTorch's figures.
struct ShapeBench<'a> {
    gpu: &'a Gpu,
    problem: &'a Conv2d,
    label: String,
    opts: &'a BenchOptions,
    torch: &'a TorchOutcome,
}

/// Benchmarks `algos` and the baselines on `problem`; `torch` holds PyTorch's times for it
/// (from [`pytorch::run`] on [`torch_shape`]); `progress` hears what is happening.
pub fn bench_shape(gpu: &Gpu, problem: &Conv2d, algos: &[Algorithm], opts: &BenchOptions, torch: &TorchOutcome, progress: &mut dyn FnMut(&str)) -> Result<Vec<GroupResult>> {
    problem.validate()?;
    let label = shape_label(problem);
    let nsets = rotation_sets(gpu, problem);
    // Each set's output, and its residual where the epilogue reads one.
    let out_bytes = 4 * nsets * if problem.epilogue.residual { 2 } else { 1 };
    problem.check_device_memory(4 * nsets, out_bytes, gpu.info().free_memory_bytes)?;
    progress(&format!("{label}: {nsets} random input sets"));
    let seed = opts.seed;
    let host_sets = (0..nsets as u64)
        .map(|i| {
            let x = Tensor::random(problem.input_shape(), Layout::Nchw, seed.wrapping_add(2 * i))?;
            let w = Tensor::random(problem.filter_shape(), Layout::Nchw, seed.wrapping_add(2 * i + 1))?;
            Ok((x, w))
        })
        .collect::<Result<Vec<_>>>()?;
    // One set of epilogue operands per input set: the residual is as large as the output, and
    // re-reading one from L2 would flatter the fused rows as one input would.
    let ep_sets = (0..nsets as u64).map(|i| EpilogueData::random(problem, seed.wrapping_add(EPILOGUE_SEED_OFFSET + 3 * i))).collect::<Result<Vec<_>>>()?;
    let bench = ShapeBench { gpu, problem, label, opts, torch };
    let mut groups = Vec::new();
    for dtype in run_dtypes(algos, &opts.dtypes) {
        let of: Vec<Algorithm> = algos.iter().copied().filter(|a| a.dtypes().contains(&dtype)).collect();
        groups.push(match dtype {
            DType::F32 => bench.dtype_group::<f32>(&host_sets, &ep_sets, &of, progress)?,
            DType::F16 => {
                let rounded: Vec<_> = host_sets.iter().map(|(x, w)| (x.map(half::f16::from_f32), w.map(half::f16::from_f32))).collect();
                let ep: Vec<_> = ep_sets.iter().map(EpilogueData::rounded).collect();
                bench.dtype_group::<half::f16>(&rounded, &ep, &of, progress)?
            }
            DType::BF16 => {
                let rounded: Vec<_> = host_sets.iter().map(|(x, w)| (x.map(half::bf16::from_f32), w.map(half::bf16::from_f32))).collect();
                let ep: Vec<_> = ep_sets.iter().map(EpilogueData::rounded).collect();
                bench.dtype_group::<half::bf16>(&rounded, &ep, &of, progress)?
            }
        });
    }
    Ok(groups)
}

/// The input sets uploaded for kernels of one (input layout, filter layout, run problem),
/// shared by the kernels that read them so.
type SharedUpload<T> = ((Layout, Layout, Conv2d), Vec<(CudaSlice<T>, CudaSlice<T>)>);

/// A baseline the bench can time like a kernel: it enqueues one forward convolution.
trait Baseline<T> {
    fn run(&mut self, x: &CudaSlice<T>, w: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()>;
    fn name(&self) -> String;
    /// The candidates its choice was made from, where it searched engines.
    fn candidates(&self) -> Vec<crate::cudnn_graph::Candidate> {
        Vec::new()
    }
}

impl<T: Element + cudarc::cudnn::CudnnDataType> Baseline<T> for CudnnConv<T> {
    fn run(&mut self, x: &CudaSlice<T>, w: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        CudnnConv::run(self, x, w, y)
    }
    fn name(&self) -> String {
        format!("legacy {}", self.algo_name())
    }
}

impl<T: Element> Baseline<T> for GraphConv<T> {
    fn run(&mut self, x: &CudaSlice<T>, w: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        GraphConv::run(self, x, w, y)
    }
    fn name(&self) -> String {
        self.engine_name()
    }
    fn candidates(&self) -> Vec<crate::cudnn_graph::Candidate> {
        GraphConv::candidates(self).to_vec()
    }
}

/// One input set of a baseline: the planned baseline (shared by the sets) and its buffers.
struct BaselineRun<'a, T> {
    baseline: Rc<RefCell<Box<dyn Baseline<T>>>>,
    x: &'a CudaSlice<T>,
    w: &'a CudaSlice<T>,
    y: CudaSlice<T>,
    problem: Conv2d,
    /// The output's layout (the operands').
    layout: Layout,
}

impl<T: Element + CudnnBaseline> Runnable for BaselineRun<'_, T> {
    fn name(&self) -> String {
        self.baseline.borrow().name()
    }
    fn enqueue(&mut self, _gpu: &Gpu) -> Result<()> {
        self.baseline.borrow_mut().run(self.x, self.w, &mut self.y)
    }
    fn poison_output(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.poison(&mut self.y)
    }
    fn output_nchw(&self, gpu: &Gpu) -> Result<Vec<f64>> {
        let y = Tensor::new(self.problem.output_shape(), self.layout, gpu.download(&self.y)?)?.to_layout(Layout::Nchw)?;
        Ok(y.data().iter().map(|&v| v.into()).collect())
    }
}

/// One input set's epilogue operands on the device, as cuDNN's fused graph reads them (the
/// residual in the graph's layout).
struct DeviceEpilogue<T> {
    scale: Option<CudaSlice<f32>>,
    bias: Option<CudaSlice<f32>>,
    residual: Option<CudaSlice<T>>,
}

impl<T> DeviceEpilogue<T> {
    fn operands(&self) -> EpilogueOperands<'_, T> {
        EpilogueOperands { scale: self.scale.as_ref(), bias: self.bias.as_ref(), residual: self.residual.as_ref() }
    }
}

/// One input set of cuDNN's fused graph: the planned graph (shared by the sets), the set's
/// input, filter and epilogue operands, and its output.
struct FusedGraphRun<'a, T> {
    graph: Rc<RefCell<GraphConv<T>>>,
    x: &'a CudaSlice<T>,
    w: &'a CudaSlice<T>,
    ep: &'a DeviceEpilogue<T>,
    y: CudaSlice<T>,
    problem: Conv2d,
    /// The output's layout (the operands').
    layout: Layout,
}

impl<T: Element> Runnable for FusedGraphRun<'_, T> {
    fn name(&self) -> String {
        format!("cudnn fused {}", self.graph.borrow().engine_name())
    }
    fn enqueue(&mut self, _gpu: &Gpu) -> Result<()> {
        self.graph.borrow_mut().run_fused(self.x, self.w, &self.ep.operands(), &mut self.y)
    }
    fn poison_output(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.poison(&mut self.y)
    }
    fn output_nchw(&self, gpu: &Gpu) -> Result<Vec<f64>> {
        let y = Tensor::new(self.problem.output_shape(), self.layout, gpu.download(&self.y)?)?.to_layout(Layout::Nchw)?;
        Ok(y.data().iter().map(|&v| v.into()).collect())
    }
}

impl ShapeBench<'_> {
    /// The host sets in `(input, filter)` layouts, zero-padded to `run`'s sizes, on the device.
    fn upload<T: Element>(&self, sets: &[(Tensor<T>, Tensor<T>)], layouts: (Layout, Layout), run: &Conv2d) -> Result<Vec<(CudaSlice<T>, CudaSlice<T>)>> {
        let gpu = self.gpu;
        let p = &self.problem.with_precision(run.precision);
        sets.iter()
            .map(|(x, w)| Ok((gpu.upload(x.sampled_padded(run.input_shape(), layouts.0, p.sampling(run))?.data())?, gpu.upload(crate::groups::expand_filter(w, p, run, layouts.1)?.data())?)))
            .collect()
    }

    /// The f64 references on set 0, the baselines for `T`, then each of `algos`; `ep_sets` are
    /// the epilogue operands of each input set (empty ones where the problem has no epilogue).
    fn dtype_group<T: Element + CudnnBaseline>(&self, sets: &[(Tensor<T>, Tensor<T>)], ep_sets: &[EpilogueData<T>], algos: &[Algorithm], progress: &mut dyn FnMut(&str)) -> Result<GroupResult> {
        let (label, p, gpu) = (self.label.clone(), self.problem, self.gpu);
        progress(&format!("{label}: f64 CPU reference on the {} inputs ({:.1} GFLOP)", T::DTYPE, p.flops() / 1e9));
        // cuDNN's rows compute the bare convolution and are checked against it; ours (and the
        // NCHW caller's) the problem with its epilogue, against `reference`.
        let bare_reference = conv2d_cpu(p, &sets[0].0, &sets[0].1)?;
        let fused_reference = if p.epilogue.is_none() { None } else { Some(ep_sets[0].reference(p, bare_reference.clone())?) };
        let reference = fused_reference.as_ref().unwrap_or(&bare_reference);
        // Our rows' tolerance at a kernel's precision, the epilogue's gain and arithmetic included.
        let tolerance = |precision: Precision| ep_sets[0].tolerance(p, tolerance_at(T::DTYPE, T::DTYPE, precision), &bare_reference, reference);
        let bare = &p.with_epilogue(Epilogue::NONE);
        let precision = T::DTYPE.name();
        let mut group = GroupResult {
            shape: label.clone(),
            precision: precision.into(),
            flops: p.flops(),
            epilogue: (!p.epilogue.is_none()).then(|| p.epilogue.to_string()),
            cudnn: Vec::new(),
            cudnn_fused: Vec::new(),
            pytorch: self.torch_row(precision, precision),
            tf32_cudnn: Vec::new(),
            tf32_cudnn_fused: Vec::new(),
            tf32_pytorch: None,
            kernels: Vec::new(),
            heuristic_pick: heuristic_pick(p, T::DTYPE, algos, gpu.model()),
            nchw_user: None,
            nchw_auto: None,
            nchw_user_tf32: None,
            nchw_cudnn: Vec::new(),
            nchw_cudnn_fused: Vec::new(),
            nchw_pytorch: None,
            bytes: None,
            judgement: None,
        };

        let layout = T::CUDNN_LAYOUT;
        progress(&format!("{label}: cuDNN engine search ({} {})", T::DTYPE, layout.name()));
        let operands = self.upload(sets, (layout, layout), p)?;
        let mut y0 = gpu.alloc_zeros::<T>(p.output_len())?;
        let (x0, w0) = (&operands[0].0, &operands[0].1);
        let search = &self.opts.search;
        let built = GraphConv::new(gpu, bare, layout, T::MATH, search, x0, w0, &mut y0).map(boxed);
        group.cudnn.push(self.baseline("cudnn graph", T::CUDNN_LAYOUT, false, built, &operands, &bare_reference, progress)?);
        let built = T::legacy(gpu, bare, x0, w0, &mut y0).map(boxed);
        group.cudnn.push(self.baseline("cudnn legacy", T::CUDNN_LAYOUT, false, built, &operands, &bare_reference, progress)?);
        if T::DTYPE == DType::F32 {
            let built = GraphConv::new(gpu, bare, layout, Math::Tf32, search, x0, w0, &mut y0).map(boxed);
            group.tf32_cudnn.push(self.baseline("cudnn graph tf32", T::CUDNN_LAYOUT, true, built, &operands, &bare_reference, progress)?);
            group.tf32_pytorch = Some(self.torch_row("tf32", "tf32"));
        }
        // With an epilogue, cuDNN's fused graph of the layer: the same operands as our fused
        // rows (each set its own, the residual in cuDNN's layout), the same fused reference.
        let fused_tolerance = |tf32: bool| fused_baseline_tolerance(&ep_sets[0], p, T::DTYPE, tf32, &bare_reference, reference);
        if fused_reference.is_some() {
            let eps = self.upload_epilogue(ep_sets, layout)?;
            group.cudnn_fused.push(self.fused_baseline("cudnn fused graph", layout, T::MATH, &operands, &eps, reference, fused_tolerance(false), progress)?);
            if T::DTYPE == DType::F32 {
                group.tf32_cudnn_fused.push(self.fused_baseline("cudnn fused graph tf32", layout, Math::Tf32, &operands, &eps, reference, fused_tolerance(true), progress)?);
            }
        }
        drop((operands, y0));

        let mut uploaded: Option<SharedUpload<T>> = None;
        for &algo in algos {
            progress(&format!("{label}: {algo}"));
            let Some(k) = algo.kernel() else { continue };
            let (in_layout, filter_layout, _) = k.layouts;
            let mut row = Measurement::new(k.name, k.family.name(), in_layout.name(), precision);
            // A kernel that needs N, C or K multiples runs the problem zero-padded; the padding
            // is done with the layout conversion, outside the timed runs, and the row says so.
            // Each kernel at its own precision (fp32 data: TF32, 3xTF32 or FMA; the report
            // judges each against the baselines of that precision).
            let p = &p.with_precision(k.precision);
            let run = k.run_problem(p);
            if let Err(e) = algo.plan(&run, T::DTYPE, gpu.model()) {
                group.kernels.push(row.not_run(e.to_string()));
                continue;
            }
            let padded = (run.input_shape(), run.output_shape()) != (p.input_shape(), p.output_shape());
            if p.sampling(&run) != (1, 1) {
                row.note = Some(format!("reads the input sampled on the stride's grid, {}x{} (sampling not timed)", run.h, run.w));
            } else if padded {
                row.note = Some(format!("runs zero-padded to N={} C={} K={} (padding not timed)", run.n, run.c, run.k));
            } else if run.groups != p.groups {
                row.note = Some(format!("runs in {} merged groups (the filter block diagonal, expanded once, not timed)", run.groups));
            }
            // The caller's layout is the activations': weights are constant, and a `DeviceConv`
            // brings the filter to the kernel's layout once and caches it (depthwise_nhwc's RSK,
            // a grouped filter expanded for merged groups).
            let user = T::CUDNN_LAYOUT;
            row.user_layout = k.layouts.0 == user && k.layouts.2 == user && !padded;
            let tol = tolerance(k.precision);
            if !p.epilogue.is_none() {
                // The fused layer: each set with its own operands, converted and padded by
                // new_fused (uploads not shared: few kernels fuse, and those the same few).
                drop(uploaded.take());
                let preps = sets.iter().zip(ep_sets).map(|((x, w), e)| Prepared::<T, T>::new_fused(gpu, algo, p, x, w, &e.tensors())).collect::<Result<Vec<_>>>()?;
                group.kernels.push(self.measure(row, reference, tol, &mut Rotation::new(preps)?)?);
                continue;
            }
            // Kernels reading the same layouts and sizes share one upload: each prepared run
            // borrows the operands and gives them back.
            let key = (in_layout, filter_layout, run);
            if uploaded.as_ref().is_none_or(|(l, _)| *l != key) {
                drop(uploaded.take()); // frees the previous sets first
                uploaded = Some((key, self.upload(sets, (in_layout, filter_layout), &run)?));
            }
            let (layouts, operands) = uploaded.take().expect("uploaded above");
            // Outputs in the input's type, as cuDNN's baselines write them.
            let preps = operands.into_iter().map(|(x, w)| Prepared::<T, T>::from_device(gpu, algo, p, x, w)).collect::<Result<Vec<_>>>()?;
            let mut rotation = Rotation::new(preps)?;
            let row = self.measure(row, reference, tol, &mut rotation);
            uploaded = Some((layouts, rotation.into_inner().into_iter().map(Prepared::into_operands).collect()));
            group.kernels.push(row?);
        }
        drop(uploaded);
        (group.nchw_user, group.nchw_auto) = if self.opts.nchw_caller { self.nchw_user(&group, sets, ep_sets, reference, &tolerance, progress)? } else { (None, None) };
        if self.opts.nchw_caller && T::DTYPE == DType::F32 && (!group.tf32_cudnn.is_empty() || group.tf32_pytorch.is_some()) {
            // A caller asking for TF32: the fastest kernel at TF32 precision or better, from
            // NCHW. Where that is no TF32 kernel, the fp32 caller's row is already the answer.
            // Also the fastest TF32 kernel reading NCHW where that is another one: with the
            // transforms timed it can win (a strided 1x1 layer's sampled input against the NHWC
            // kernel's transposes of the whole input).
            let kernel = |m: Option<&Measurement>| m.and_then(|m| crate::registry::by_name(&m.name)).filter(|k| k.on_plain_layouts() && k.precision == crate::Precision::Tf32);
            let (fastest, native) = (kernel(group.best_tf32_any_layout()), kernel(group.best_tf32_kernel_in(Layout::Nchw)));
            let mut best: Option<Measurement> = None;
            for k in [fastest, native.filter(|n| fastest.is_none_or(|f| f.name != n.name))].into_iter().flatten() {
                let row = self.nchw_user_of(k, crate::Precision::Tf32, sets, ep_sets, reference, tolerance(crate::Precision::Tf32), progress)?;
                if best.as_ref().is_none_or(|b| row.ms().unwrap_or(f64::INFINITY) < b.ms().unwrap_or(f64::INFINITY)) {
                    best = Some(row);
                }
            }
            group.nchw_user_tf32 = best;
        }
        match &group.nchw_user {
            None => {}
            // The fp32 baselines above were given NCHW tensors already.
            Some(_) if T::DTYPE == DType::F32 => {
                group.nchw_cudnn = group.cudnn.clone();
                group.nchw_cudnn_fused = group.cudnn_fused.clone();
                group.nchw_pytorch = Some(group.pytorch.clone());
            }
            Some(user) if user.timing.is_some() => {
                let fused = fused_reference.as_ref().map(|r| (ep_sets, r, fused_tolerance(false)));
                self.nchw_baselines(&mut group, sets, &bare_reference, fused, progress)?
            }
            // Nothing of ours ran for that caller: no engine search to compare with; PyTorch's
            // figure is already measured.
            Some(_) => group.nchw_pytorch = Some(self.torch_row(&format!("{}_nchw", T::DTYPE.name()), T::DTYPE.name())),
        }
        group.set_bytes(depthwise_bytes(p, T::DTYPE));
        group.record_judgement();
        Ok(group)
    }

    /// What a caller holding NCHW tensors on the device gets, through
    /// [`crate::device_conv::DeviceConv`]: the fastest of the fastest kernel on plain layouts,
    /// the fastest kernel on NCHW itself (which runs on the caller's tensors, no transform), the
    /// fastest writing NCHW (the input's transform alone) and the kernel `Algorithm::Auto` runs
    /// for that caller, each timed as that caller runs it; and the last of those apart (what a
    /// caller who leaves the choice to convrs gets, which the best route may beat). See
    /// [`Bench::nchw_user_of`].
    #[allow(clippy::type_complexity)]
    fn nchw_user<T: Element + CudnnBaseline>(
        &self,
        group: &GroupResult,
        sets: &[(Tensor<T>, Tensor<T>)],
        ep_sets: &[EpilogueData<T>],
        reference: &Tensor<f64>,
        tolerance: &dyn Fn(Precision) -> f64,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(Option<Measurement>, Option<Measurement>)> {
        let kernel = |m: Option<&Measurement>| m.and_then(|m| crate::registry::by_name(&m.name)).filter(|k| k.on_plain_layouts());
        let precision = self.problem.precision;
        let auto = crate::device_conv::auto_kernel(self.gpu.model(), &self.problem.with_precision(precision), T::DTYPE, Layout::Nchw).ok();
        let (mut best, mut auto_row): (Option<Measurement>, Option<Measurement>) = (None, None);
        // Auto's route, the fastest kernel (through both transposes), the fastest on NCHW as it
        // is, and the fastest writing NCHW (through the input's transpose alone), each once.
        let candidates = [auto, kernel(group.best_kernel()), kernel(group.best_kernel_in(Layout::Nchw)), kernel(group.best_kernel_writing(Layout::Nchw))];
        let mut tried: Vec<&str> = Vec::new();
        for k in candidates.into_iter().flatten() {
            if tried.contains(&k.name) {
                continue;
            }
            tried.push(k.name);
            let is_auto = auto.is_some_and(|a| a.name == k.name);
            let row = match self.nchw_user_of(k, precision, sets, ep_sets, reference, tolerance(precision), progress) {
                Ok(row) => row,
                // Auto's pick may be a kernel the run did not time (outside `--algo`): where it
                // cannot run for this caller, the row says why and the other routes stand.
                Err(e) if is_auto => Measurement::new(format!("{} from NCHW", k.name), k.family.name(), "NCHW", T::DTYPE.name()).not_run(e.to_string()),
                Err(e) => return Err(e),
            };
            if is_auto {
                auto_row = Some(row.clone());
            }
            if best.as_ref().is_none_or(|b| row.ms().unwrap_or(f64::INFINITY) < b.ms().unwrap_or(f64::INFINITY)) {
                best = Some(row);
            }
        }
        Ok((best, auto_row))
    }

    /// Kernel `k` for a caller holding NCHW tensors and asking for `precision`: each timed run
    /// transforms the input to the kernel's layout (zero-padded to its multiples), runs it, and
    /// transforms the output back to NCHW, or runs on the caller's tensors where the kernel reads
    /// NCHW as it is. The filter is transformed once per weights, as `DeviceConv` does; that
    /// one-time cost is timed on its own and given in the row's note. Checked against
    /// `reference` within `tol`. A fused epilogue runs in the kernel, its vectors given once, its
    /// residual (NCHW, one per set) with each run.
    #[allow(clippy::too_many_arguments)]
    fn nchw_user_of<T: Element + CudnnBaseline>(
        &self,
        k: &'static crate::registry::KernelDesc,
        precision: crate::Precision,
        sets: &[(Tensor<T>, Tensor<T>)],
        ep_sets: &[EpilogueData<T>],
        reference: &Tensor<f64>,
        tol: f64,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Measurement> {
        use crate::device_conv::{DeviceConv, DeviceVectors};
        use crate::device_tensor::DeviceTensor;
        let row = Measurement::new(format!("{} from NCHW", k.name), k.family.name(), "NCHW", T::DTYPE.name());
        progress(&format!("{}: {} for an NCHW caller", self.label, k.name));
        let gpu = self.gpu;
        let p = &self.problem.with_precision(precision);
        let mut runs = Vec::new();
        for ((x, w), e) in sets.iter().zip(ep_sets) {
            let (x, w) = (DeviceTensor::upload(gpu, x)?, DeviceTensor::upload(gpu, w)?);
            let vector = |v: &Option<Vec<f32>>| v.as_deref().map(|v| gpu.upload(v)).transpose();
            let (scale, bias) = (vector(&e.scale)?, vector(&e.bias)?);
            let vectors = DeviceVectors { scale: scale.as_ref(), bias: bias.as_ref() };
            let conv = DeviceConv::<T, T>::fused(gpu, k.algorithm, p, w.data(), w.layout(), Layout::Nchw, Layout::Nchw, vectors)?;
            let residual = e.residual.as_ref().map(|r| DeviceTensor::upload(gpu, r)).transpose()?;
            let y = conv.new_output(gpu)?;
            runs.push(NchwCallerRun { conv, x, w, residual, y });
        }
        // A kernel on the caller's tensors makes a tensor map per input buffer at its first run,
        // which a CUDA graph capture cannot: every set runs once before the timing.
        for r in &mut runs {
            r.enqueue(gpu)?;
        }
        gpu.synchronize()?;
        let mut row = row;
        let first = &mut runs[0];
        let filter = crate::timing::time_runs(gpu, self.opts.timing, |_| first.conv.set_filter(gpu, &first.w))?;
        row.note = Some(format!("filter to the kernel's layout once per weights: {:.4} ms, not in the time", filter.median_ms));
        self.measure(row, reference, tol, &mut Rotation::new(runs)?)
    }

    /// The baselines given what an NCHW caller of a 16-bit type holds: cuDNN's graph API on NCHW
    /// tensors (its own engine search, tensor-core engines; the bare convolution, checked
    /// against `bare_reference`), with an epilogue also cuDNN's fused graph on NCHW tensors
    /// (`fused`: each set's operands, the fused reference and the tolerance), and PyTorch on
    /// contiguous tensors (the layer, epilogue included).
    fn nchw_baselines<T: Element + CudnnBaseline>(
        &self,
        group: &mut GroupResult,
        sets: &[(Tensor<T>, Tensor<T>)],
        bare_reference: &Tensor<f64>,
        fused: Option<(&[EpilogueData<T>], &Tensor<f64>, f64)>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<()> {
        let (p, gpu) = (&self.problem.with_epilogue(Epilogue::NONE), self.gpu);
        progress(&format!("{}: cuDNN engine search ({} NCHW)", self.label, T::DTYPE));
        let operands = self.upload(sets, (Layout::Nchw, Layout::Nchw), p)?;
        let mut y0 = gpu.alloc_zeros::<T>(p.output_len())?;
        let built = GraphConv::new(gpu, p, Layout::Nchw, T::MATH, &self.opts.search, &operands[0].0, &operands[0].1, &mut y0).map(boxed);
        group.nchw_cudnn.push(self.baseline("cudnn graph", Layout::Nchw, false, built, &operands, bare_reference, progress)?);
        drop(y0);
        if let Some((ep_sets, reference, tol)) = fused {
            let eps = self.upload_epilogue(ep_sets, Layout::Nchw)?;
            group.nchw_cudnn_fused.push(self.fused_baseline("cudnn fused graph", Layout::Nchw, T::MATH, &operands, &eps, reference, tol, progress)?);
        }
        let config = format!("{}_nchw", T::DTYPE.name());
        group.nchw_pytorch = Some(self.torch_row(&config, T::DTYPE.name()));
        Ok(())
    }

    /// Each set's epilogue operands on the device for cuDNN's fused graph: scale and bias as
    /// they are, the residual in `layout` (the graph's output layout).
    fn upload_epilogue<T: Element>(&self, ep_sets: &[EpilogueData<T>], layout: Layout) -> Result<Vec<DeviceEpilogue<T>>> {
        let gpu = self.gpu;
        let vector = |v: &Option<Vec<f32>>| v.as_deref().map(|v| gpu.upload(v)).transpose();
        ep_sets
            .iter()
            .map(|e| {
                let residual = match &e.residual {
                    Some(r) => Some(gpu.upload(r.to_layout(layout)?.data())?),
                    None => None,
                };
                Ok(DeviceEpilogue { scale: vector(&e.scale)?, bias: vector(&e.bias)?, residual })
            })
            .collect()
    }

    /// cuDNN's fused graph of the layer ([`GraphConv::new_fused`]: the convolution, then
    /// pointwise nodes computing the epilogue) on `operands` in `layout` with the engines `math`
    /// allows: its engine search runs on set 0, then it is checked against `reference` within
    /// `tol` and timed over every set with that set's epilogue operands `eps`, the protocol of
    /// every row. Where no engine takes the graph, the row is not run and says why.
    #[allow(clippy::too_many_arguments)]
    fn fused_baseline<T: Element + CudnnBaseline>(
        &self,
        name: &str,
        layout: Layout,
        math: Math,
        operands: &[(CudaSlice<T>, CudaSlice<T>)],
        eps: &[DeviceEpilogue<T>],
        reference: &Tensor<f64>,
        tol: f64,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Measurement> {
        let (p, gpu) = (self.problem, self.gpu);
        progress(&format!("{}: {name} engine search ({} {}, conv + {})", self.label, T::DTYPE, layout.name(), p.epilogue));
        let row = Measurement::new(name, "cudnn", layout.name(), T::DTYPE.name());
        let (Some((x0, w0)), Some(e0)) = (operands.first(), eps.first()) else {
            return Ok(row.not_run("no input sets"));
        };
        let mut y0 = gpu.alloc_zeros::<T>(p.output_len())?;
        let graph = match GraphConv::new_fused(gpu, p, layout, math, &self.opts.search, x0, w0, &e0.operands(), &mut y0) {
            Err(e) => return Ok(row.not_run(format!("cuDNN's fused graph of conv + {}: {e}", p.epilogue))),
            Ok(g) => Rc::new(RefCell::new(g)),
        };
        drop(y0);
        let row = {
            let g = graph.borrow();
            Measurement { name: format!("cudnn fused {}", g.engine_name()), engines: g.candidates().to_vec(), note: Some(format!("graph {}", g.graph_description())), ..row }
        };
        let runs = operands
            .iter()
            .zip(eps)
            .map(|((x, w), ep)| Ok(FusedGraphRun { graph: graph.clone(), x, w, ep, y: gpu.alloc_zeros::<T>(p.output_len())?, problem: *p, layout }))
            .collect::<Result<Vec<_>>>()?;
        self.measure(row, reference, tol, &mut Rotation::new(runs)?)
    }

    /// Checks and times one baseline (already planned, or why not) on operands (input, filter,
    /// output) in `layout`.
    #[allow(clippy::too_many_arguments)]
    fn baseline<T: Element + CudnnBaseline>(
        &self,
        name: &str,
        layout: Layout,
        tf32: bool,
        built: Result<Box<dyn Baseline<T>>>,
        operands: &[(CudaSlice<T>, CudaSlice<T>)],
        reference: &Tensor<f64>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Measurement> {
        progress(&format!("{}: {name} {} {}", self.label, T::DTYPE, layout.name()));
        let row = Measurement::new(name, "cudnn", layout.name(), T::DTYPE.name());
        let b = match built {
            Err(e) => return Ok(row.not_run(e.to_string())),
            Ok(b) => Rc::new(RefCell::new(b)),
        };
        let row = Measurement { name: format!("cudnn {}", b.borrow().name()), engines: b.borrow().candidates(), ..row };
        let runs = operands
            .iter()
            .map(|(x, w)| Ok(BaselineRun { baseline: b.clone(), x, w, y: self.gpu.alloc_zeros::<T>(self.problem.output_len())?, problem: *self.problem, layout }))
            .collect::<Result<Vec<_>>>()?;
        self.measure(row, reference, baseline_tolerance(T::DTYPE, tf32), &mut Rotation::new(runs)?)
    }

    /// A checked run into a NaN-poisoned output, then the timed runs: the protocol every row
    /// follows, baselines included.
    fn measure(&self, mut row: Measurement, reference: &Tensor<f64>, tol: f64, run: &mut dyn Runnable) -> Result<Measurement> {
        let gpu = self.gpu;
        run.poison_output(gpu)?;
        if let Err(e) = run.enqueue(gpu).and_then(|_| gpu.synchronize()) {
            return Ok(row.not_run(e.to_string()));
        }
        let check: Comparison = compare(&run.output_nchw(gpu)?, reference.data());
        row.passed = check.passes(tol);
        row.check = Some(check);
        // At least as many warm-ups as a rotation has runs, so that each has run before the
        // timing's capture: a run's first launch may set something up (a tensor map), which a
        // capture refuses, and a refused capture is timed by events instead, host launch gaps
        // included (the thirty-sixth session's fused rows on small layers, 2x their graph time).
        let cfg = TimingConfig { warmup: self.opts.timing.warmup.max(run.distinct_runs()), ..self.opts.timing };
        let t = time_runs(gpu, cfg, |_| run.enqueue(gpu))?;
        if t.method != self.opts.timing.method {
            let why = "timed by events, host launch gaps included: its runs could not be captured into a CUDA graph";
            row.note = Some(row.note.map_or(why.into(), |n| format!("{n}; {why}")));
        }
        Ok(row.timed(t, self.problem.flops()))
    }

    /// PyTorch's figure for this shape in `config`, as a row (checked by PyTorch, not here).
    fn torch_row(&self, config: &str, dtype: &str) -> Measurement {
        let layout = if config == "fp16" || config == "bf16" { "NHWC" } else { "NCHW" };
        let ep = &self.problem.epilogue;
        // A layer with an epilogue is several eager calls; the row names them.
        let (name, calls) = if ep.is_none() {
            (format!("pytorch conv2d {config}"), String::new())
        } else {
            (format!("pytorch eager {config}"), format!("; eager calls {}", pytorch::eager_calls(ep).join(", ")))
        };
        let row = Measurement::new(name, "pytorch", layout, dtype);
        match self.torch.time(&self.label, config) {
            Err(why) => row.not_run(why),
            Ok(ms) => {
                let method = self.opts.timing.method;
                let mut row = row.timed(crate::timing::Timing { median_ms: ms, min_ms: ms, max_ms: ms, runs: 1, method, batch: 1 }, self.problem.flops());
                row.passed = true;
                let how = match method {
                    TimingMethod::Graph => "median per call of torch.cuda.CUDAGraph replays (each after another), eager calls where capture failed",
                    TimingMethod::Events => "median per call of back-to-back calls between CUDA events",
                };
                row.note = Some(format!("{how}{calls}"));
                row
            }
        }
    }
}

/// Among `algos`, the kernel whose predicted time alone (no conversions: the rows time each
/// kernel in its own layouts) is lowest.
fn heuristic_pick(p: &Conv2d, dtype: DType, algos: &[Algorithm], device: &crate::DeviceModel) -> Option<String> {
    crate::select::candidates(p, dtype, Layout::Nchw, device)
        .into_iter()
        .filter(|c| algos.contains(&c.kernel.algorithm))
        .filter_map(|c| Some((c.kernel.name, c.outcome.ok()?.kernel_us)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(name, _)| name.to_string())
}

/// One input set of the NCHW caller's row: the planned convolution (its filter and epilogue
/// vectors cached at set-up), the caller's NCHW input, filter, residual (where the epilogue adds
/// one) and output.
struct NchwCallerRun<T: Element> {
    conv: crate::device_conv::DeviceConv<T, T>,
    x: crate::device_tensor::DeviceTensor<T>,
    w: crate::device_tensor::DeviceTensor<T>,
    residual: Option<crate::device_tensor::DeviceTensor<T>>,
    y: crate::device_tensor::DeviceTensor<T>,
}

impl<T: Element> Runnable for NchwCallerRun<T> {
    fn name(&self) -> String {
        format!("{} from NCHW", self.conv.name())
    }
    fn enqueue(&mut self, gpu: &Gpu) -> Result<()> {
        self.conv.run_fused_on(gpu, self.x.data(), self.residual.as_ref().map(|r| r.data()), self.y.data_mut())
    }
    fn poison_output(&mut self, gpu: &Gpu) -> Result<()> {
        // The kernel's own output was poisoned when the plan was made, so an element the kernel
        // skips cannot come through the transform as a stale value.
        gpu.poison(self.y.data_mut())
    }
    fn output_nchw(&self, gpu: &Gpu) -> Result<Vec<f64>> {
        Ok(self.y.download(gpu)?.data().iter().map(|&v| v.into()).collect())
    }
}

fn boxed<T, B: Baseline<T> + 'static>(b: B) -> Box<dyn Baseline<T>> {
    Box::new(b)
}

/// The cuDNN configuration each input type is measured against: 16-bit types in NHWC with
/// tensor cores, fp32 (below) in NCHW with FMA arithmetic.
trait CudnnBaseline: Element + cudarc::cudnn::CudnnDataType {
    /// The layout of cuDNN's input, filter and output for this type.
    const CUDNN_LAYOUT: Layout = Layout::Nhwc;
    /// Which graph-API engines count for this type.
    const MATH: Math = Math::TensorCore;
    fn legacy(gpu: &Gpu, p: &Conv2d, x: &CudaSlice<Self>, w: &CudaSlice<Self>, y: &mut CudaSlice<Self>) -> Result<CudnnConv<Self>> {
        CudnnConv::nhwc_tensor_op(gpu, p, x, w, y)
    }
}

impl CudnnBaseline for f32 {
    const CUDNN_LAYOUT: Layout = Layout::Nchw;
    const MATH: Math = Math::Fma;
    fn legacy(gpu: &Gpu, p: &Conv2d, x: &CudaSlice<f32>, w: &CudaSlice<f32>, y: &mut CudaSlice<f32>) -> Result<CudnnConv<f32>> {
        CudnnConv::fp32_nchw(gpu, p, x, w, y)
    }
}

impl CudnnBaseline for half::f16 {}

impl CudnnBaseline for half::bf16 {}

/// Today's date (UTC) as YYYY-MM-DD, for the results table.
pub fn today() -> String {
    let days = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() / 86_400).unwrap_or(0) as i64;
    // Civil-from-days (Howard Hinnant's algorithm): avoids a date dependency for one line of output.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_show_only_non_default_stride_and_dilation() {
        assert_eq!(shape_label(&Conv2d::new(1, 6, 768, 512, 6, 6, 6)), "1,6,768,512->6,6x6 p0");
        assert_eq!(shape_label(&Conv2d::new(2, 3, 9, 9, 4, 3, 3).with_pad(2).with_stride(2).with_dilation(2)), "2,3,9,9->4,3x3 p2 s2 d2");
        let p = Conv2d { pad: (1, 2), stride: (2, 1), ..Conv2d::new(2, 3, 9, 9, 4, 3, 3) };
        assert_eq!(shape_label(&p), "2,3,9,9->4,3x3 p1,2 s2,1");
    }

    #[test]
    fn labels_show_groups_other_than_one() {
        let dense = Conv2d::new(2, 8, 9, 9, 8, 3, 3).with_pad(1);
        assert_eq!(shape_label(&dense.with_groups(4)), "2,8,9,9->8,3x3 p1 g4");
        assert_eq!(shape_label(&dense.with_groups(8).with_stride(2)), "2,8,9,9->8,3x3 p1 s2 g8");
        assert_eq!(shape_label(&dense.with_groups(1)), "2,8,9,9->8,3x3 p1");
    }

    #[test]
    fn labels_name_the_epilogue_so_fused_and_bare_shapes_differ() {
        let p = Conv2d::new(2, 8, 9, 9, 8, 3, 3).with_pad(1);
        let fused = p.with_epilogue("scale+bias+residual+silu".parse().unwrap());
        assert_eq!(shape_label(&fused), "2,8,9,9->8,3x3 p1 ep=scale+bias+residual+silu");
        assert_eq!(shape_label(&fused.with_groups(8)), "2,8,9,9->8,3x3 p1 g8 ep=scale+bias+residual+silu");
        assert_eq!(shape_label(&p.with_epilogue(Epilogue::NONE)), "2,8,9,9->8,3x3 p1");
    }

    #[test]
    fn epilogue_data_holds_exactly_the_named_operands() {
        let p = Conv2d::new(2, 3, 5, 5, 4, 3, 3).with_pad(1);
        assert_eq!(EpilogueData::random(&p, 1).unwrap(), EpilogueData { scale: None, bias: None, residual: None });
        let p = p.with_epilogue("scale+bias+residual+relu".parse().unwrap());
        let d = EpilogueData::random(&p, 1).unwrap();
        let (scale, bias, residual) = (d.scale.clone().unwrap(), d.bias.clone().unwrap(), d.residual.clone().unwrap());
        assert_eq!((scale.len(), bias.len(), residual.dims(), residual.layout()), (4, 4, [2, 4, 5, 5], Layout::Nchw));
        assert!(scale.iter().all(|s| (0.5..=1.5).contains(s)) && bias.iter().chain(residual.data()).all(|v| (-1.0..1.0).contains(v)));
        // Reproducible from the seed, other with another.
        assert_eq!(EpilogueData::random(&p, 1).unwrap(), d);
        assert_ne!(EpilogueData::random(&p, 2).unwrap().bias, d.bias);
        // The residual rounds to the output's type; the fp32 vectors stay.
        let h = d.rounded::<half::f16>();
        assert_eq!((h.scale.as_ref(), h.residual.unwrap().data()[0]), (Some(&scale), half::f16::from_f32(residual.data()[0])));
        let t = d.tensors();
        assert_eq!((t.scale, t.bias, t.residual.map(Tensor::dims)), (Some(&scale[..]), Some(&bias[..]), Some([2, 4, 5, 5])));
    }

    #[test]
    fn references_and_tolerances_follow_the_epilogue() {
        // K = 2 channels of 2 outputs: sums 1, -2 (channel 0) and 3, -4 (channel 1).
        let p = Conv2d::new(1, 1, 1, 2, 2, 1, 1);
        let conv = Tensor::new(p.output_shape(), Layout::Nchw, vec![1.0, -2.0, 3.0, -4.0]).unwrap();
        let none = EpilogueData::<f32> { scale: None, bias: None, residual: None };
        assert_eq!(none.reference(&p, conv.clone()).unwrap(), conv);
        assert_eq!(none.tolerance(&p, 1e-4, &conv, &conv), 1e-4);
        let p = p.with_epilogue("scale+bias+relu".parse().unwrap());
        let d = EpilogueData::<f32> { scale: Some(vec![1.5, 0.5]), bias: Some(vec![0.5, -0.5]), residual: None };
        let fused = d.reference(&p, conv.clone()).unwrap();
        assert_eq!(fused.data(), &[2.0, 0.0, 1.0, 0.0]);
        // Gain: |alpha| 1 * max scale 1.5 * slope 1 * |conv| sqrt(30) / |fused| sqrt(5) = 1.5 sqrt(6).
        let tol = d.tolerance(&p, 1e-4, &conv, &fused);
        assert!((tol - (1e-4 * 1.5 * 6f64.sqrt() + EPILOGUE_ARITHMETIC_TOLERANCE)).abs() < 1e-15, "{tol}");
        // An epilogue that only enlarges the output keeps the bare tolerance, plus its arithmetic.
        let big = Tensor::new(p.output_shape(), Layout::Nchw, vec![100.0; 4]).unwrap();
        assert_eq!(d.tolerance(&p, 1e-4, &conv, &big), 1e-4 + EPILOGUE_ARITHMETIC_TOLERANCE);
        assert_eq!(activation_max_slope(Activation::LeakyRelu(-3.0)), 3.0);
    }

    #[test]
    fn depthwise_bytes_count_input_filter_and_output_once() {
        // N=1, C=K=G=2, 4x4, 3x3 pad 1: input 1*2*4*4 = 32, filter 2*1*3*3 = 18, output 32 elements.
        let p = Conv2d::new(1, 2, 4, 4, 2, 3, 3).with_pad(1).with_groups(2);
        assert_eq!(depthwise_bytes(&p, DType::F32), Some(82.0 * 4.0));
        assert_eq!(depthwise_bytes(&p, DType::F16), Some(164.0));
        assert_eq!(depthwise_bytes(&p, DType::BF16), Some(164.0));
        // Stride 2 and channel multiplier 3: input 2*4*9*9 = 648, filter 12*1*3*3 = 108, output 2*12*5*5 = 600.
        let p = Conv2d::new(2, 4, 9, 9, 12, 3, 3).with_pad(1).with_stride(2).with_groups(4);
        assert_eq!(depthwise_bytes(&p, DType::F32), Some(1356.0 * 4.0));
        // Grouped but not depthwise, dense, and the one-channel dense case: no bandwidth figure.
        assert_eq!(depthwise_bytes(&Conv2d::new(1, 8, 4, 4, 8, 3, 3).with_groups(4), DType::F32), None);
        assert_eq!(depthwise_bytes(&Conv2d::new(1, 8, 4, 4, 8, 3, 3), DType::F32), None);
        assert_eq!(depthwise_bytes(&Conv2d::new(1, 1, 4, 4, 8, 3, 3), DType::F32), None);
    }

    #[test]
    fn date_has_iso_shape() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
        assert_eq!(&d[4..5], "-");
    }
}
