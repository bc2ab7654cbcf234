//! One prepared-run path: a plan with its operands on the device in the kernel's layouts.
//! [`crate::conv2d`], `convrs run` and `convrs bench` all run kernels through [`Prepared`]; the
//! bench's cuDNN baselines implement the same [`Runnable`] interface, so a baseline is one more row.
//!
//! ```no_run
//! use convrs::prepared::{Prepared, Runnable};
//! use convrs::{Algorithm, Conv2d, Gpu, Layout, Tensor};
//! let gpu = Gpu::new(0)?;
//! let p = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1);
//! let x = Tensor::random(p.input_shape(), Layout::Nchw, 1)?;
//! let w = Tensor::random(p.filter_shape(), Layout::Nchw, 2)?;
//! // Plans, converts, uploads once; the output type is the input's (f32 here).
//! let mut run: Prepared<f32> = Prepared::new(&gpu, Algorithm::Auto, &p, &x, &w)?;
//! for _ in 0..10 {
//!     run.enqueue(&gpu)?;
//! }
//! let y = run.output(&gpu)?; // NCHW, after the stream drains
//! # Ok::<(), convrs::Error>(())
//! ```

use cudarc::driver::CudaSlice;

use crate::plan::LaunchPlan;
use crate::registry::KernelDesc;
use crate::workspace::Workspace;
use crate::epilogue::EpilogueOperands;
use crate::{launch_fused, Algorithm, Conv2d, Element, Error, Gpu, Layout, Result, Tensor};

/// A convolution ready to run on the device: enqueue it, read its output.
pub trait Runnable {
    /// What runs (a kernel name with its entry, or a baseline with its choice).
    fn name(&self) -> String;
    /// Enqueues one run on the GPU's stream (asynchronous).
    fn enqueue(&mut self, gpu: &Gpu) -> Result<()>;
    /// Fills the output with NaN, so that anything a run fails to write cannot pass a check.
    fn poison_output(&mut self, gpu: &Gpu) -> Result<()>;
    /// The output as f64 in NCHW (NKPQ) order, after the stream drains.
    fn output_nchw(&self, gpu: &Gpu) -> Result<Vec<f64>>;
    /// How many enqueues it takes to run every distinct run once (a [`Rotation`]'s runs; 1
    /// otherwise): a timing runs each once before capturing them into a CUDA graph, where a
    /// first launch's set-up (a tensor map) is refused.
    fn distinct_runs(&self) -> usize {
        1
    }
}

/// A kernel's plan and its operands on the device: input and filter of element type `T`, output
/// of `O`, by default the input's type (a tensor-core kernel rounds its fp32 accumulators to it);
/// `Prepared<T, f32>` asks for fp32 outputs, which every kernel can write. It owns the plan's
/// workspace too (split-K's), so a CUDA graph that captured its runs stays valid while it lives.
pub struct Prepared<T: Element, O: Element = T> {
    kernel: &'static KernelDesc,
    plan: LaunchPlan,
    /// The caller's problem.
    problem: Conv2d,
    /// The problem the kernel runs: `problem` zero-padded to the kernel's multiples.
    run: Conv2d,
    x: CudaSlice<T>,
    /// The filter in the kernel's layout.
    w: CudaSlice<T>,
    /// What a 3xTF32 kernel reads instead ([`LaunchPlan::split_filter`]): `w` split, made from
    /// it at preparation and by [`Prepared::refresh_filter`].
    w_split: Option<CudaSlice<T>>,
    y: CudaSlice<O>,
    ws: Workspace,
    /// The fused epilogue's operands on the device, sized for the run problem
    /// ([`Prepared::new_fused`]).
    ep: EpilogueBuffers<O>,
}

/// A fused epilogue's operands on the host, for [`Prepared::new_fused`] and
/// [`crate::conv2d_fused`]: `scale` and `bias` of K values, a `residual` of the output's shape
/// (any layout; converted), each given exactly when the problem's [`crate::Epilogue`] names it.
pub struct EpilogueTensors<'a, O: Element> {
    pub scale: Option<&'a [f32]>,
    pub bias: Option<&'a [f32]>,
    pub residual: Option<&'a Tensor<O>>,
}

impl<O: Element> EpilogueTensors<'_, O> {
    /// No operands.
    pub fn none() -> Self {
        EpilogueTensors { scale: None, bias: None, residual: None }
    }
}

/// The device copies of [`EpilogueTensors`].
struct EpilogueBuffers<O> {
    scale: Option<CudaSlice<f32>>,
    bias: Option<CudaSlice<f32>>,
    residual: Option<CudaSlice<O>>,
}

impl<O> EpilogueBuffers<O> {
    fn operands(&self) -> EpilogueOperands<'_, O> {
        EpilogueOperands { scale: self.scale.as_ref(), bias: self.bias.as_ref(), residual: self.residual.as_ref() }
    }
}

impl<T: Element, O: Element> Prepared<T, O> {
    /// Validates, resolves [`Algorithm::Auto`] (for `T` and the input's layout), plans, converts
    /// the host tensors to the kernel's layouts and uploads them. A kernel that needs N, C or K to
    /// be multiples (the tensor-core kernels) gets the tensors zero-padded to them
    /// ([`KernelDesc::run_problem`]; a plane kernel's strided 1x1 layer reads its input sampled
    /// on the stride's grid); [`Prepared::output`] drops the padding again.
    pub fn new(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, input: &Tensor<T>, filter: &Tensor<T>) -> Result<Self> {
        Self::new_fused(gpu, algo, problem, input, filter, &EpilogueTensors::none())
    }

    /// [`Prepared::new`] for a problem with a fused epilogue ([`Conv2d::epilogue`]) and its
    /// operands: per-channel vectors of K values (zero-padded to the kernel's K) and a residual
    /// of the output's shape, converted to the kernel's output layout and padded like the output.
    pub fn new_fused(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, input: &Tensor<T>, filter: &Tensor<T>, ep: &EpilogueTensors<'_, O>) -> Result<Self> {
        problem.validate()?;
        let algo = match algo {
            Algorithm::Auto => crate::select::choose(problem, T::DTYPE, input.layout(), gpu.model())?.pick,
            a => a,
        };
        let kernel = kernel_for::<T>(algo)?;
        if input.dims() != problem.input_shape() {
            return Err(Error::InvalidArgument(format!("input dims {:?} do not match the problem's {:?}", input.dims(), problem.input_shape())));
        }
        if filter.dims() != problem.filter_shape() {
            return Err(Error::InvalidArgument(format!("filter dims {:?} do not match the problem's {:?}", filter.dims(), problem.filter_shape())));
        }
        let run = kernel.run_problem(problem);
        run.validate()?;
        run.check_device_memory(T::DTYPE.size(), O::DTYPE.size(), gpu.info().free_memory_bytes)?;
        let (in_layout, filter_layout, _) = kernel.layouts;
        let (x, w) = (input.sampled_padded(run.input_shape(), in_layout, problem.sampling(&run))?, crate::groups::expand_filter(filter, problem, &run, filter_layout)?);
        let mut prepared = Self::from_device(gpu, algo, problem, gpu.upload(x.data())?, gpu.upload(w.data())?)?;
        let vector = |v: Option<&[f32]>, name: &'static str| -> Result<Option<CudaSlice<f32>>> {
            v.map(|v| {
                if v.len() != problem.k {
                    return Err(Error::BufferSize { tensor: name, expected: problem.k, got: v.len() });
                }
                let mut padded = v.to_vec();
                padded.resize(run.k, 0.0);
                gpu.upload(&padded)
            })
            .transpose()
        };
        let residual = ep
            .residual
            .map(|r| {
                if r.dims() != problem.output_shape() {
                    return Err(Error::InvalidArgument(format!("residual dims {:?} do not match the output's {:?}", r.dims(), problem.output_shape())));
                }
                gpu.upload(r.zero_padded(run.output_shape(), kernel.layouts.2)?.data())
            })
            .transpose()?;
        prepared.ep = EpilogueBuffers { scale: vector(ep.scale, "scale")?, bias: vector(ep.bias, "bias")?, residual };
        // The residual's tensor map built now too (as the operands' in `from_device`), not in the
        // first (maybe timed, maybe captured) launch.
        if let Some(r) = &prepared.ep.residual {
            use cudarc::driver::DevicePtr;
            let (address, _sync) = r.device_ptr(gpu.stream());
            crate::algorithm::residual_map::<O>(gpu, &prepared.plan, &run, address)?;
        }
        // Every operand the epilogue names is given, and no other (launch checks it the same way).
        prepared.ep.operands().args(gpu, &run.epilogue, run.k, run.output_len())?;
        Ok(prepared)
    }

    /// The same from operands already on the device in the kernel's layouts
    /// ([`Algorithm::layouts`]), sized for the problem the kernel runs
    /// ([`KernelDesc::run_problem`]: `problem` itself unless the kernel needs multiples, then
    /// zero-padded to them); `algo` must be a kernel, not `Auto`.
    pub fn from_device(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, x: CudaSlice<T>, w: CudaSlice<T>) -> Result<Self> {
        let kernel = kernel_for::<T>(algo)?;
        let run = kernel.run_problem(problem);
        let plan = kernel.plan_writing(&run, T::DTYPE, gpu.model(), O::DTYPE)?;
        if x.len() != run.input_len() {
            return Err(Error::BufferSize { tensor: "input", expected: run.input_len(), got: x.len() });
        }
        if w.len() != run.filter_len() {
            return Err(Error::BufferSize { tensor: "filter", expected: run.filter_len(), got: w.len() });
        }
        let y = gpu.alloc_zeros::<O>(run.output_len())?;
        let w_split = if plan.split_filter {
            let mut split = gpu.alloc_zeros::<T>(plan.filter_buffer_len(&run))?;
            crate::device_tensor::split_tf32(gpu, &w, &mut split)?;
            Some(split)
        } else {
            None
        };
        // Built now, not in the first (maybe timed) launch.
        if let Some(rows) = plan.filter_map_rows {
            gpu.filter_map(w_split.as_ref().unwrap_or(&w), &plan.filter_map_problem(&run)?, rows)?;
        }
        if let Some(kind) = plan.input_map {
            gpu.input_map(&x, &run, kind, plan.fold_w)?;
        }
        let ws = Workspace::for_plan(gpu, &plan)?;
        Ok(Prepared { kernel, plan, problem: *problem, run, x, w, w_split, y, ws, ep: EpilogueBuffers { scale: None, bias: None, residual: None } })
    }

    pub fn algorithm(&self) -> Algorithm {
        self.kernel.algorithm
    }

    pub fn plan(&self) -> &LaunchPlan {
        &self.plan
    }

    /// The problem the kernel runs (the caller's, zero-padded where the kernel needs multiples).
    pub fn run_problem(&self) -> &Conv2d {
        &self.run
    }

    /// The output buffer on the device: the run problem's output in the kernel's output layout
    /// (see [`Prepared::run_problem`]), padding included. The workspace goes (freed in stream
    /// order, after the launches enqueued before).
    pub fn into_output(self) -> CudaSlice<O> {
        self.y
    }

    /// The input and filter buffers in the kernel's layouts, for a caller that refills them in
    /// place ([`crate::device_conv::DeviceConv`]): their addresses stay, so the plan's tensor
    /// maps stay valid.
    pub(crate) fn operands_mut(&mut self) -> (&mut CudaSlice<T>, &mut CudaSlice<T>) {
        (&mut self.x, &mut self.w)
    }

    /// Makes what the kernel reads of the filter from the filter buffer again, after a caller
    /// refilled it ([`Prepared::operands_mut`]): the 3xTF32 split (in place: the tensor map's
    /// address stays); nothing for other kernels.
    pub(crate) fn refresh_filter(&mut self, gpu: &Gpu) -> Result<()> {
        match &mut self.w_split {
            Some(split) => crate::device_tensor::split_tf32(gpu, &self.w, split),
            None => Ok(()),
        }
    }

    /// Enqueues one run that reads `x` in place of the own input buffer and writes `y` in place
    /// of the own output buffer (each `None`: the own), both in the kernel's layouts and sized for
    /// the run problem: [`crate::launch`] checks the lengths and builds an input map for `x`.
    /// `ep`, where given, replaces the own epilogue operands (sized for the run problem too).
    pub(crate) fn enqueue_with(&mut self, gpu: &Gpu, x: Option<&CudaSlice<T>>, y: Option<&mut CudaSlice<O>>, ep: Option<&EpilogueOperands<'_, O>>) -> Result<()> {
        let x = x.unwrap_or(&self.x);
        let w = self.w_split.as_ref().unwrap_or(&self.w);
        let y = match y {
            Some(y) => y,
            None => &mut self.y,
        };
        let own = self.ep.operands();
        launch_fused(gpu, &self.plan, &self.run, x, w, y, &mut self.ws, ep.unwrap_or(&own))
    }

    /// The output buffer (the run problem's output in the kernel's layout).
    pub(crate) fn output_buffer(&self) -> &CudaSlice<O> {
        &self.y
    }

    /// The output as a host tensor in NCHW, padding dropped (waits for the stream).
    pub fn output(&self, gpu: &Gpu) -> Result<Tensor<O>> {
        let y = Tensor::new(self.run.output_shape(), self.kernel.layouts.2, gpu.download(&self.y)?)?;
        if self.run == self.problem { y.to_layout(Layout::Nchw) } else { y.cropped(self.problem.output_shape(), Layout::Nchw) }
    }
}

/// `algo`'s description, checked to read `T`.
fn kernel_for<T: Element>(algo: Algorithm) -> Result<&'static KernelDesc> {
    let kernel = algo.kernel().ok_or_else(|| Error::InvalidArgument("`auto` must be resolved before planning".into()))?;
    if !kernel.reads(T::DTYPE) {
        return Err(Error::InvalidArgument(format!("{algo} takes {} tensors but {} tensors were given", kernel.dtypes_label(), T::DTYPE)));
    }
    Ok(kernel)
}

impl<T: Element, O: Element> Runnable for Prepared<T, O> {
    fn name(&self) -> String {
        format!("{} ({})", self.kernel.name, self.plan.kernel)
    }

    fn enqueue(&mut self, gpu: &Gpu) -> Result<()> {
        launch_fused(gpu, &self.plan, &self.run, &self.x, self.w_split.as_ref().unwrap_or(&self.w), &mut self.y, &mut self.ws, &self.ep.operands())
    }

    fn poison_output(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.poison(&mut self.y)
    }

    fn output_nchw(&self, gpu: &Gpu) -> Result<Vec<f64>> {
        Ok(self.output(gpu)?.data().iter().map(|&v| v.into()).collect())
    }
}

impl<T: Element, O: Element> Prepared<T, O> {
    /// Gives the device operands back (to prepare another kernel on the same layouts); the
    /// workspace goes.
    pub fn into_operands(self) -> (CudaSlice<T>, CudaSlice<T>) {
        (self.x, self.w)
    }
}

/// Runnables taken in turn, one per input set, so that timed runs do not re-read one set from
/// L2: each enqueue runs the next; the output read is the last run's; the one poisoned is the
/// next run's.
pub struct Rotation<R> {
    runs: Vec<R>,
    next: usize,
    last: usize,
}

impl<R: Runnable> Rotation<R> {
    pub fn new(runs: Vec<R>) -> Result<Self> {
        if runs.is_empty() {
            return Err(Error::InvalidArgument("a rotation needs at least one run".into()));
        }
        Ok(Rotation { runs, next: 0, last: 0 })
    }

    pub fn into_inner(self) -> Vec<R> {
        self.runs
    }
}

impl<R: Runnable> Runnable for Rotation<R> {
    fn name(&self) -> String {
        self.runs[0].name()
    }

    fn enqueue(&mut self, gpu: &Gpu) -> Result<()> {
        self.runs[self.next].enqueue(gpu)?;
        self.last = self.next;
        self.next = (self.next + 1) % self.runs.len();
        Ok(())
    }

    fn poison_output(&mut self, gpu: &Gpu) -> Result<()> {
        self.runs[self.next].poison_output(gpu)
    }

    fn output_nchw(&self, gpu: &Gpu) -> Result<Vec<f64>> {
        self.runs[self.last].output_nchw(gpu)
    }

    fn distinct_runs(&self) -> usize {
        self.runs.len()
    }
}
