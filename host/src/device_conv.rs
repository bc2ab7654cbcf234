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
        Self::with_filter_slice(gpu, algo, problem, filter.data(), filter.layout(), input_layout, output_layout)
    }

    /// [`DeviceConv::new`] with the filter in a buffer the caller owns (`[K, C, R, S]` in
    /// `filter_layout`, exactly `problem.filter_len()` elements): it is read once, here, on the
    /// GPU's stream, and not kept.
    pub fn with_filter_slice(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, filter: &CudaSlice<T>, filter_layout: Layout, input_layout: Layout, output_layout: Layout) -> Result<Self> {
        problem.validate()?;
        let ep = &problem.epilogue;
        if ep.scale || ep.bias || ep.residual {
            return Err(Error::InvalidArgument(format!("device convolutions take no epilogue operands yet (the problem's epilogue is {ep}); conv2d_fused and Prepared::new_fused do")));
        }
        for (what, l) in [("input", input_layout), ("output", output_layout)] {
            plain(l, what)?;
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
        conv.set_filter_slice(gpu, filter, filter_layout)?;
        Ok(conv)
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
        relayout_into(gpu, filter, self.problem.filter_shape(), layout, w, run.filter_shape(), self.kernel.layouts.1)?;
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
        check_len("input", input.len(), self.problem.input_len())?;
        check_len("output", output.len(), self.problem.output_len())?;
        let run = *self.prepared.run_problem();
        let (direct_in, direct_out) = self.direct();
        if !direct_in {
            let (x, _) = self.prepared.operands_mut();
            relayout_into(gpu, input, self.problem.input_shape(), self.input_layout, x, run.input_shape(), self.kernel.layouts.0)?;
        }
        let x = direct_in.then_some(input);
        if direct_out {
            return self.prepared.enqueue_with(gpu, x, Some(output));
        }
        self.prepared.enqueue_with(gpu, x, None)?;
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
        // SAFETY: the caller vouches for both ranges; the borrows never free them (see Borrowed).
        let (x, mut y) = unsafe { (Borrowed::<T>::new(gpu, input, self.problem.input_len()), Borrowed::<O>::new(gpu, output, self.problem.output_len())) };
        self.run_on(gpu, &x, &mut y)
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

fn plain(layout: Layout, what: &str) -> Result<()> {
    if layout.is_plain() { Ok(()) } else { Err(Error::InvalidArgument(format!("device convolutions take NCHW, NHWC or HWCN {what}s, not {layout}"))) }
}

fn check_len(tensor: &'static str, got: usize, expected: usize) -> Result<()> {
    if got == expected { Ok(()) } else { Err(Error::BufferSize { tensor, expected, got }) }
}

/// A caller's device buffer seen as a `CudaSlice` for the length of one call, never freed:
/// dropping it gives the address back with `leak` (which frees nothing).
struct Borrowed<T>(ManuallyDrop<CudaSlice<T>>);

impl<T> Borrowed<T> {
    /// # Safety
    /// `address` must hold `len` elements of `T` in the stream's context for as long as the work
    /// enqueued on them runs.
    unsafe fn new(gpu: &Gpu, address: u64, len: usize) -> Self {
        // SAFETY: forwarded to the caller.
        Borrowed(ManuallyDrop::new(unsafe { gpu.stream().upgrade_device_ptr(address, len) }))
    }
}

impl<T> Drop for Borrowed<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; the slice is not used after.
        let slice = unsafe { ManuallyDrop::take(&mut self.0) };
        slice.leak();
    }
}

impl<T> Deref for Borrowed<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.0
    }
}

impl<T> DerefMut for Borrowed<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.0
    }
}
