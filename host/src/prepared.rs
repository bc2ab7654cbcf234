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
//! let mut run = Prepared::new(&gpu, Algorithm::Auto, &p, &x, &w)?; // plans, converts, uploads once
//! for _ in 0..10 {
//!     run.enqueue(&gpu)?;
//! }
//! let y = run.output(&gpu)?; // NCHW fp32, after the stream drains
//! # Ok::<(), convrs::Error>(())
//! ```

use cudarc::driver::CudaSlice;

use crate::plan::LaunchPlan;
use crate::registry::KernelDesc;
use crate::{launch, Algorithm, Conv2d, Element, Error, Gpu, Layout, Result, Tensor};

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
}

/// A kernel's plan and its operands on the device.
pub struct Prepared<T: Element> {
    kernel: &'static KernelDesc,
    plan: LaunchPlan,
    problem: Conv2d,
    x: CudaSlice<T>,
    w: CudaSlice<T>,
    y: CudaSlice<f32>,
}

impl<T: Element> Prepared<T> {
    /// Validates, resolves [`Algorithm::Auto`] (for `T` and the input's layout), plans, converts
    /// the host tensors to the kernel's layouts and uploads them.
    pub fn new(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, input: &Tensor<T>, filter: &Tensor<T>) -> Result<Self> {
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
        problem.check_device_memory(T::DTYPE.size(), 4, gpu.info().free_memory_bytes)?;
        let (in_layout, filter_layout, _) = kernel.layouts;
        let x = gpu.upload(input.to_layout(in_layout)?.data())?;
        let w = gpu.upload(filter.to_layout(filter_layout)?.data())?;
        Self::from_device(gpu, algo, problem, x, w)
    }

    /// The same from operands already on the device in the kernel's layouts
    /// ([`Algorithm::layouts`]); `algo` must be a kernel, not `Auto`.
    pub fn from_device(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, x: CudaSlice<T>, w: CudaSlice<T>) -> Result<Self> {
        let kernel = kernel_for::<T>(algo)?;
        let plan = (kernel.plan)(problem, gpu.model())?;
        if x.len() != problem.input_len() {
            return Err(Error::BufferSize { tensor: "input", expected: problem.input_len(), got: x.len() });
        }
        if w.len() != problem.filter_len() {
            return Err(Error::BufferSize { tensor: "filter", expected: problem.filter_len(), got: w.len() });
        }
        let y = gpu.alloc_zeros::<f32>(problem.output_len())?;
        Ok(Prepared { kernel, plan, problem: *problem, x, w, y })
    }

    pub fn algorithm(&self) -> Algorithm {
        self.kernel.algorithm
    }

    pub fn plan(&self) -> &LaunchPlan {
        &self.plan
    }

    /// The output as a host tensor in NCHW (waits for the stream).
    pub fn output(&self, gpu: &Gpu) -> Result<Tensor<f32>> {
        Tensor::new(self.problem.output_shape(), self.kernel.layouts.2, gpu.download(&self.y)?)?.to_layout(Layout::Nchw)
    }
}

/// `algo`'s description, checked to read `T`.
fn kernel_for<T: Element>(algo: Algorithm) -> Result<&'static KernelDesc> {
    let kernel = algo.kernel().ok_or_else(|| Error::InvalidArgument("`auto` must be resolved before planning".into()))?;
    if kernel.dtype != T::DTYPE {
        return Err(Error::InvalidArgument(format!("{algo} takes {} tensors but {} tensors were given", kernel.dtype, T::DTYPE)));
    }
    Ok(kernel)
}

impl<T: Element> Runnable for Prepared<T> {
    fn name(&self) -> String {
        format!("{} ({})", self.kernel.name, self.plan.kernel)
    }

    fn enqueue(&mut self, gpu: &Gpu) -> Result<()> {
        launch(gpu, &self.plan, &self.problem, &self.x, &self.w, &mut self.y)
    }

    fn poison_output(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.poison(&mut self.y)
    }

    fn output_nchw(&self, gpu: &Gpu) -> Result<Vec<f64>> {
        Ok(self.output(gpu)?.data().iter().map(|&v| f64::from(v)).collect())
    }
}

impl<T: Element> Prepared<T> {
    /// Gives the device operands back (to prepare another kernel on the same layouts).
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
}
