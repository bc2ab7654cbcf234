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

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use cudarc::driver::CudaSlice;

use crate::device_tensor::{relayout_into, relayout_sampled_into, DeviceTensor};
use crate::epilogue::EpilogueOperands;
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
    /// The fused epilogue's per-channel vectors, zero-padded to the kernel's K (constant like
    /// the filter: set at `fused`, again by `set_vectors`).
    scale: Option<CudaSlice<f32>>,
    bias: Option<CudaSlice<f32>>,
    /// The residual in the kernel's output layout, where the caller's is not that layout: each
    /// run transforms the caller's into it.
    residual: Option<CudaSlice<O>>,
}

/// A fused epilogue's per-output-channel vectors on the device: `scale` and `bias`, fp32, K
/// values each (a folded batch norm: `scale = gamma / sqrt(var + eps)`, `bias = beta - mean *
/// scale`), each given exactly when the problem's [`crate::Epilogue`] names it.
#[derive(Clone, Copy, Default)]
pub struct DeviceVectors<'a> {
    pub scale: Option<&'a CudaSlice<f32>>,
    pub bias: Option<&'a CudaSlice<f32>>,
}

impl<T: Element, O: Element> DeviceConv<T, O> {
    /// Plans `algo` ([`Algorithm::Auto`] chooses for `input_layout`, its transforms priced, among
    /// the kernels on plain layouts), allocates the kernel's operands, and transforms `filter`
    /// (`[K, C, R, S]` in any plain layout) into the kernel's layout, zero-padded to its multiples.
    pub fn new(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, filter: &DeviceTensor<T>, input_layout: Layout, output_layout: Layout) -> Result<Self> {
        Self::with_filter_slice(gpu, algo, problem, filter.data(), filter.layout(), input_layout, output_layout)
    }

    /// [`DeviceConv::new`] with the filter in a buffer the caller owns (`[K, C, R, S]` in
    /// `filter_layout`, exactly `problem.filter_len()` elements): it is read once, here, on the
    /// GPU's stream, and not kept.
    pub fn with_filter_slice(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, filter: &CudaSlice<T>, filter_layout: Layout, input_layout: Layout, output_layout: Layout) -> Result<Self> {
        Self::fused(gpu, algo, problem, filter, filter_layout, input_layout, output_layout, DeviceVectors::default())
    }

    /// The whole layer: the convolution and the problem's fused epilogue ([`Conv2d::epilogue`]:
    /// activation, alpha, beta), with its per-channel `vectors` (copied here, on the stream; the
    /// caller's buffers are not kept) and, where the epilogue adds a residual, the residual
    /// given to each run ([`DeviceConv::run_fused_on`]) in the caller's output layout. Only
    /// kernels that fuse the epilogue are planned (`Auto` chooses among them); the others are
    /// refused with the reason.
    ///
    /// ```no_run
    /// use convrs::device_conv::{DeviceConv, DeviceVectors};
    /// use convrs::{Activation, Algorithm, Conv2d, Epilogue, Gpu, Layout};
    /// use half::f16;
    /// let gpu = Gpu::new(0)?;
    /// // conv + folded batch norm + residual + ReLU, NCHW in and out (a ResNet block's last layer).
    /// let p = Conv2d::new(8, 64, 56, 56, 256, 1, 1)
    ///     .with_epilogue(Epilogue::NONE.with_scale().with_bias().with_residual().with_activation(Activation::Relu));
    /// let w = gpu.alloc_zeros::<f16>(p.filter_len())?; // KCRS
    /// let (scale, bias) = (gpu.upload(&vec![1.0f32; 256])?, gpu.upload(&vec![0.0f32; 256])?);
    /// let vectors = DeviceVectors { scale: Some(&scale), bias: Some(&bias) };
    /// let mut conv = DeviceConv::<f16>::fused(&gpu, Algorithm::Auto, &p, &w, Layout::Nchw, Layout::Nchw, Layout::Nchw, vectors)?;
    /// let (x, shortcut) = (gpu.alloc_zeros::<f16>(p.input_len())?, gpu.alloc_zeros::<f16>(p.output_len())?);
    /// let mut y = gpu.alloc_zeros::<f16>(p.output_len())?;
    /// conv.run_fused_on(&gpu, &x, Some(&shortcut), &mut y)?;
    /// # Ok::<(), convrs::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn fused(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, filter: &CudaSlice<T>, filter_layout: Layout, input_layout: Layout, output_layout: Layout, vectors: DeviceVectors<'_>) -> Result<Self> {
        problem.validate()?;
        problem.epilogue.validate()?;
        for (what, l) in [("input", input_layout), ("output", output_layout)] {
            plain(l, what)?;
        }
        let kernel = match algo {
            Algorithm::Auto => auto_kernel(gpu.model(), problem, T::DTYPE, input_layout)?,
            a => a.kernel().filter(|k| k.on_plain_layouts()).ok_or_else(|| Error::InvalidArgument(format!("{a} cannot run on device tensors yet (its layouts are blocked)")))?,
        };
        let run = kernel.run_problem(problem);
        run.validate()?;
        run.check_device_memory(T::DTYPE.size(), O::DTYPE.size(), gpu.info().free_memory_bytes)?;
        let (x, w) = (gpu.alloc_zeros::<T>(run.input_len())?, gpu.alloc_zeros::<T>(run.filter_len())?);
        let mut prepared = Prepared::<T, O>::from_device(gpu, kernel.algorithm, problem, x, w)?;
        // An output element the kernel failed to write must not come through as a stale value.
        prepared.poison_output(gpu)?;
        let ep = problem.epilogue;
        let zeros = |wanted: bool| wanted.then(|| gpu.alloc_zeros::<f32>(run.k)).transpose();
        let (scale, bias) = (zeros(ep.scale)?, zeros(ep.bias)?);
        let mut conv = DeviceConv { kernel, prepared, problem: *problem, input_layout, output_layout, scale, bias, residual: None };
        if ep.residual && !conv.direct().1 {
            conv.residual = Some(gpu.alloc_zeros::<O>(run.output_len())?);
        }
        conv.set_filter_slice(gpu, filter, filter_layout)?;
        conv.set_vectors(gpu, vectors)?;
        Ok(conv)
    }

    /// Copies new epilogue vectors into the cached ones (call it whenever they change, as
    /// [`DeviceConv::set_filter`] for the weights).
    pub fn set_vectors(&mut self, gpu: &Gpu, vectors: DeviceVectors<'_>) -> Result<()> {
        let ep = self.problem.epilogue;
        for (name, mine, given) in [("scale", &mut self.scale, vectors.scale), ("bias", &mut self.bias, vectors.bias)] {
            match (mine, given) {
                (None, None) => {}
                (Some(mine), Some(given)) => {
                    check_len(name, given.len(), self.problem.k)?;
                    let mut head = mine.slice_mut(0..self.problem.k);
                    gpu.stream().memcpy_dtod(given, &mut head).map_err(crate::gpu::cuda_err("copying the epilogue's vectors"))?;
                }
                (Some(_), None) => return Err(Error::InvalidArgument(format!("the epilogue ({ep}) reads a {name}, and none was given"))),
                (None, Some(_)) => return Err(Error::InvalidArgument(format!("a {name} was given, but the epilogue ({ep}) does not read one (Epilogue::with_{name})"))),
            }
        }
        Ok(())
    }

    /// Transforms new weights into the cached filter (the same buffer, so plans and captured
    /// graphs that read it stay valid). Call it whenever the weights change.
    pub fn set_filter(&mut self, gpu: &Gpu, filter: &DeviceTensor<T>) -> Result<()> {
        if filter.dims() != self.problem.filter_shape() {
            return Err(Error::InvalidArgument(format!("filter dims {:?} do not match the problem's {:?}", filter.dims(), self.problem.filter_shape())));
        }
        self.set_filter_slice(gpu, filter.data(), filter.layout())
    }

    /// [`DeviceConv::set_filter`] from a buffer the caller owns (`[K, C, R, S]` in `layout`).
    pub fn set_filter_slice(&mut self, gpu: &Gpu, filter: &CudaSlice<T>, layout: Layout) -> Result<()> {
        plain(layout, "filter")?;
        check_len("filter", filter.len(), self.problem.filter_len())?;
        let run = *self.prepared.run_problem();
        let (_, w) = self.prepared.operands_mut();
        if run.groups != self.problem.groups {
            // A grouped problem in merged groups (the Hopper kernels, KRSC): block diagonal.
            crate::groups::expand_filter_on_device(gpu, filter, layout, &self.problem, &run, w)?;
        } else {
            relayout_into(gpu, filter, self.problem.filter_shape(), layout, w, run.filter_shape(), self.kernel.layouts.1)?;
        }
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
        self.run_on(gpu, input.data(), output.data_mut())
    }

    /// [`DeviceConv::run`] on buffers the caller owns: `input` holds exactly the problem's input
    /// (`[N, C, H, W]` in the input layout given at `new`, `problem.input_len()` elements) and
    /// `output` gets exactly its output, in the output layout. Everything is enqueued on the
    /// GPU's stream ([`Gpu::from_stream`]: the caller's) and nothing is synchronized: the buffers
    /// must stay alive, and `output` unread and unwritten by other streams, until the stream
    /// has run the work.
    pub fn run_on(&mut self, gpu: &Gpu, input: &CudaSlice<T>, output: &mut CudaSlice<O>) -> Result<()> {
        self.run_fused_on(gpu, input, None, output)
    }

    /// [`DeviceConv::run_on`] with the residual the epilogue adds (the output's dims, in the
    /// caller's output layout; `None` exactly when the epilogue adds none).
    pub fn run_fused_on(&mut self, gpu: &Gpu, input: &CudaSlice<T>, residual: Option<&CudaSlice<O>>, output: &mut CudaSlice<O>) -> Result<()> {
        check_len("input", input.len(), self.problem.input_len())?;
        check_len("output", output.len(), self.problem.output_len())?;
        let ep = self.problem.epilogue;
        match residual {
            Some(r) if ep.residual => check_len("residual", r.len(), self.problem.output_len())?,
            None if !ep.residual => {}
            Some(_) => return Err(Error::InvalidArgument(format!("a residual was given, but the epilogue ({ep}) adds none"))),
            None => return Err(Error::InvalidArgument(format!("the epilogue ({ep}) adds a residual, and none was given (run_fused_on)"))),
        }
        let run = *self.prepared.run_problem();
        let (direct_in, direct_out) = self.direct();
        if !direct_in {
            let (x, _) = self.prepared.operands_mut();
            let sampling = self.problem.sampling(&run);
            if sampling == (1, 1) {
                relayout_into(gpu, input, self.problem.input_shape(), self.input_layout, x, run.input_shape(), self.kernel.layouts.0)?;
            } else {
                // A strided 1x1 layer run at stride 1 (a plane kernel's or step 16's): the input
                // sampled on the stride's grid.
                relayout_sampled_into(gpu, input, self.problem.input_shape(), self.input_layout, x, run.input_shape(), self.kernel.layouts.0, sampling)?;
            }
        }
        // The residual in the kernel's output layout: the caller's where that is it, else a copy.
        let residual = match (residual, &mut self.residual) {
            (Some(r), Some(mine)) => {
                relayout_into(gpu, r, self.problem.output_shape(), self.output_layout, mine, run.output_shape(), self.kernel.layouts.2)?;
                Some(&*mine)
            }
            (r, _) => r,
        };
        let ops = EpilogueOperands { scale: self.scale.as_ref(), bias: self.bias.as_ref(), residual };
        let x = direct_in.then_some(input);
        if direct_out {
            return self.prepared.enqueue_with(gpu, x, Some(output), Some(&ops));
        }
        self.prepared.enqueue_with(gpu, x, None, Some(&ops))?;
        relayout_into(gpu, self.prepared.output_buffer(), run.output_shape(), self.kernel.layouts.2, output, self.problem.output_shape(), self.output_layout)
    }

    /// [`DeviceConv::run_on`] on raw device addresses (a framework's tensors: PyTorch's
    /// `data_ptr()`, a `CUdeviceptr` from any allocator), neither owned nor freed here. Both must
    /// be aligned to 16 bytes (the tensor-memory-access kernels' requirement; checked).
    ///
    /// # Safety
    /// `input` must address `problem.input_len()` readable elements of `T` and `output`
    /// `problem.output_len()` writable elements of `O`, in the GPU's context, not overlapping,
    /// and both must stay allocated until the GPU's stream has run the work enqueued here.
    pub unsafe fn run_raw(&mut self, gpu: &Gpu, input: u64, output: u64) -> Result<()> {
        for (what, address) in [("input", input), ("output", output)] {
            if address == 0 || address % 16 != 0 {
                return Err(Error::InvalidArgument(format!("the {what} address {address:#x} is not a 16-byte aligned device address")));
            }
        }
        // SAFETY: the caller vouches for both ranges; the borrows never free them.
        let (x, mut y) = unsafe { (BorrowedSlice::<T>::new(gpu, input, self.problem.input_len()), BorrowedSlice::<O>::new(gpu, output, self.problem.output_len())) };
        self.run_on(gpu, &x, &mut y)
    }

    /// Whether the kernel reads the caller's input and writes the caller's output where they
    /// are, with no transform: each where the kernel's layout is the caller's and nothing is
    /// padded to the kernel's multiples (merged groups change only the filter).
    pub fn direct(&self) -> (bool, bool) {
        let run = self.prepared.run_problem();
        let same_in = run.input_shape() == self.problem.input_shape();
        let same_out = run.output_shape() == self.problem.output_shape();
        (same_in && self.kernel.layouts.0 == self.input_layout, same_out && self.kernel.layouts.2 == self.output_layout)
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

fn plain(layout: Layout, what: &str) -> Result<()> {
    if layout.is_plain() { Ok(()) } else { Err(Error::InvalidArgument(format!("device convolutions take NCHW, NHWC or HWCN {what}s, not {layout}"))) }
}

fn check_len(tensor: &'static str, got: usize, expected: usize) -> Result<()> {
    if got == expected { Ok(()) } else { Err(Error::BufferSize { tensor, expected, got }) }
}

/// A caller's device buffer seen as a `CudaSlice` (what [`DeviceConv::run_on`] takes), never
/// freed: dropping it gives the address back with `leak`, which frees nothing. For a framework's
/// tensors that live inside a larger allocation (a view at an offset).
pub struct BorrowedSlice<T>(ManuallyDrop<CudaSlice<T>>);

impl<T> BorrowedSlice<T> {
    /// # Safety
    /// `address` must hold `len` elements of `T` in the GPU's context, and stay allocated until
    /// the GPU's stream has run the work enqueued on the slice.
    pub unsafe fn new(gpu: &Gpu, address: u64, len: usize) -> Self {
        // SAFETY: forwarded to the caller.
        BorrowedSlice(ManuallyDrop::new(unsafe { gpu.stream().upgrade_device_ptr(address, len) }))
    }
}

impl<T> Drop for BorrowedSlice<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; the slice is not used after.
        let slice = unsafe { ManuallyDrop::take(&mut self.0) };
        slice.leak();
    }
}

impl<T> Deref for BorrowedSlice<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.0
    }
}

impl<T> DerefMut for BorrowedSlice<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.0
    }
}

/// The kernel [`Algorithm::Auto`] runs for a caller holding `dtype` device tensors in
/// `input_layout`: the lowest predicted total ([`crate::select::pick`]) among the kernels on
/// plain layouts, the only ones [`DeviceConv`] runs. The bench times this route for an NCHW
/// caller beside the fastest one (`GroupResult::nchw_auto`).
pub fn auto_kernel(device: &crate::DeviceModel, problem: &Conv2d, dtype: crate::DType, input_layout: Layout) -> Result<&'static crate::registry::KernelDesc> {
    let candidates = crate::select::candidates(problem, dtype, input_layout, device);
    let pick = crate::select::pick(candidates.into_iter().filter(|c| c.kernel.on_plain_layouts()).collect(), dtype)?.pick;
    pick.kernel().ok_or_else(|| Error::InvalidArgument("no kernel chosen".into()))
}
