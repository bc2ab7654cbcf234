//! A convolution planned once for device tensors in the layouts the caller holds (NCHW, NHWC or
//! HWCN): the path a framework holding NCHW tensors takes to the NHWC kernels.
//!
//! Weights are constant across calls, so the filter is brought to the kernel's layout once,
//! when the [`DeviceConv`] is made, and again only when the caller says the weights changed
//! ([`DeviceConv::set_filter`]). The cache is the `DeviceConv` itself: it is keyed by the object
//! (one per layer and filter buffer), never by a device pointer that could be reused or written
//! in place behind its back, and invalidated only by `set_filter`. Each [`DeviceConv::run`]
//! transforms the input into the kernel's layout, runs the kernel, and transforms the output
//! into the caller's layout, all enqueued on the GPU's stream; a kernel that reads the caller's
//! layout as it is (`wgmma_nchw1x1_persistent` on NCHW) runs on the caller's tensors directly,
//! with no transform and no copy ([`DeviceConv::direct`]).
//!
//! ```no_run
//! use convrs::device_conv::DeviceConv;
//! use convrs::device_tensor::DeviceTensor;
//! use convrs::{Algorithm, Conv2d, Gpu, Layout, Tensor};
//! use half::f16;
//! let gpu = Gpu::new(0)?;
//! let p = Conv2d::new(1, 128, 64, 64, 128, 3, 3).with_pad(1);
//! let w = DeviceTensor::upload(&gpu, &Tensor::random(p.filter_shape(), Layout::Nchw, 2)?.map(f16::from_f32))?;
//! // NCHW in, NCHW out; the KCRS filter is transformed here, once.
//! let mut conv: DeviceConv<f16> = DeviceConv::new(&gpu, Algorithm::Auto, &p, &w, Layout::Nchw, Layout::Nchw)?;
//! let mut y = conv.new_output(&gpu)?;
//! for seed in 0..3 {
//!     let x = DeviceTensor::upload(&gpu, &Tensor::random(p.input_shape(), Layout::Nchw, seed)?.map(f16::from_f32))?;
//!     conv.run(&gpu, &x, &mut y)?;
//! }
//! let host = y.download(&gpu)?; // NCHW
//! # Ok::<(), convrs::Error>(())
//! ```

use crate::device_tensor::{relayout_into, DeviceTensor};
use crate::prepared::{Prepared, Runnable};
use crate::registry::KernelDesc;
use crate::{Algorithm, Conv2d, Element, Error, Gpu, Layout, Result};

/// A planned convolution on device tensors in the caller's layouts, its filter cached in the
/// kernel's layout (see the module docs).
pub struct DeviceConv<T: Element, O: Element = T> {
    kernel: &'static KernelDesc,
    prepared: Prepared<T, O>,
    problem: Conv2d,
    input_layout: Layout,
    output_layout: Layout,
}

impl<T: Element, O: Element> DeviceConv<T, O> {
    /// Plans `algo` ([`Algorithm::Auto`] chooses for `input_layout`, its transforms priced, among
    /// the kernels on plain layouts), allocates the kernel's operands, and transforms `filter`
    /// (`[K, C, R, S]` in any plain layout) into the kernel's layout, zero-padded to its multiples.
    pub fn new(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, filter: &DeviceTensor<T>, input_layout: Layout, output_layout: Layout) -> Result<Self> {
        problem.validate()?;
        let ep = &problem.epilogue;
        if ep.scale || ep.bias || ep.residual {
            return Err(Error::InvalidArgument(format!("device convolutions take no epilogue operands yet (the problem's epilogue is {ep}); conv2d_fused and Prepared::new_fused do")));
        }
        for (what, l) in [("input", input_layout), ("output", output_layout)] {
            if !l.is_plain() {
                return Err(Error::InvalidArgument(format!("device convolutions take NCHW, NHWC or HWCN {what}s, not {l}")));
            }
        }
        let kernel = match algo {
            Algorithm::Auto => {
                let candidates = crate::select::candidates(problem, T::DTYPE, input_layout, gpu.model());
                let pick = crate::select::pick(candidates.into_iter().filter(|c| c.kernel.on_plain_layouts()).collect(), T::DTYPE)?.pick;
                pick.kernel().ok_or_else(|| Error::InvalidArgument("no kernel chosen".into()))?
            }
            a => a.kernel().filter(|k| k.on_plain_layouts()).ok_or_else(|| Error::InvalidArgument(format!("{a} cannot run on device tensors yet (its layouts are blocked)")))?,
        };
        let run = kernel.run_problem(problem);
        run.validate()?;
        run.check_device_memory(T::DTYPE.size(), O::DTYPE.size(), gpu.info().free_memory_bytes)?;
        let (x, w) = (gpu.alloc_zeros::<T>(run.input_len())?, gpu.alloc_zeros::<T>(run.filter_len())?);
        let mut prepared = Prepared::<T, O>::from_device(gpu, kernel.algorithm, problem, x, w)?;
        // An output element the kernel failed to write must not come through as a stale value.
        prepared.poison_output(gpu)?;
        let mut conv = DeviceConv { kernel, prepared, problem: *problem, input_layout, output_layout };
        conv.set_filter(gpu, filter)?;
        Ok(conv)
    }

    /// Transforms new weights into the cached filter (the same buffer, so plans and captured
    /// graphs that read it stay valid). Call it whenever the weights change.
    pub fn set_filter(&mut self, gpu: &Gpu, filter: &DeviceTensor<T>) -> Result<()> {
        if filter.dims() != self.problem.filter_shape() {
            return Err(Error::InvalidArgument(format!("filter dims {:?} do not match the problem's {:?}", filter.dims(), self.problem.filter_shape())));
        }
        let run = *self.prepared.run_problem();
        let (_, w) = self.prepared.operands_mut();
        relayout_into(gpu, filter.data(), filter.dims(), filter.layout(), w, run.filter_shape(), self.kernel.layouts.1)?;
        self.prepared.refresh_filter(gpu)
    }

    /// An output tensor of the problem's dims in the caller's output layout (zeros).
    pub fn new_output(&self, gpu: &Gpu) -> Result<DeviceTensor<O>> {
        DeviceTensor::from_slice(gpu.alloc_zeros::<O>(self.problem.output_len())?, self.problem.output_shape(), self.output_layout)
    }

    /// Enqueues one convolution of `input` (`[N, C, H, W]` in the input layout given at `new`)
    /// into `output` (from [`DeviceConv::new_output`], or any tensor of the output's dims and
    /// layout): input transform, kernel, output transform.
    ///
    /// Where the kernel reads the caller's input as it is ([`DeviceConv::direct`]) and takes a
    /// TMA tensor map of it, the first run on each input buffer encodes and uploads that map: run
    /// once on a buffer before capturing its runs into a CUDA graph (inside a capture the run is
    /// refused with that reason rather than recorded with a map the graph could not hold).
    pub fn run(&mut self, gpu: &Gpu, input: &DeviceTensor<T>, output: &mut DeviceTensor<O>) -> Result<()> {
        let matches = |what: &str, dims: [usize; 4], layout: Layout, want: [usize; 4], want_layout: Layout| {
            if (dims, layout) == (want, want_layout) {
                Ok(())
            } else {
                Err(Error::InvalidArgument(format!("{what} {dims:?} in {layout} does not match the planned {want:?} in {want_layout}")))
            }
        };
        matches("input", input.dims(), input.layout(), self.problem.input_shape(), self.input_layout)?;
        matches("output", output.dims(), output.layout(), self.problem.output_shape(), self.output_layout)?;
        let run = *self.prepared.run_problem();
        let (direct_in, direct_out) = self.direct();
        if !direct_in {
            let (x, _) = self.prepared.operands_mut();
            relayout_into(gpu, input.data(), input.dims(), input.layout(), x, run.input_shape(), self.kernel.layouts.0)?;
        }
        let x = direct_in.then(|| input.data());
        if direct_out {
            return self.prepared.enqueue_with(gpu, x, Some(output.data_mut()));
        }
        self.prepared.enqueue_with(gpu, x, None)?;
        let dims = output.dims();
        relayout_into(gpu, self.prepared.output_buffer(), run.output_shape(), self.kernel.layouts.2, output.data_mut(), dims, self.output_layout)
    }

    /// Whether the kernel reads the caller's input and writes the caller's output where they
    /// are, with no transform: each where the kernel's layout is the caller's and nothing is
    /// padded to the kernel's multiples.
    pub fn direct(&self) -> (bool, bool) {
        let same = *self.prepared.run_problem() == self.problem;
        (same && self.kernel.layouts.0 == self.input_layout, same && self.kernel.layouts.2 == self.output_layout)
    }

    /// The kernel that runs.
    pub fn algorithm(&self) -> Algorithm {
        self.kernel.algorithm
    }

    /// The kernel's name with its entry (as the bench's rows name it).
    pub fn name(&self) -> String {
        self.prepared.name()
    }
}
