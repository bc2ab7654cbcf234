//! The candle custom ops that run a planned [`DeviceConv`] on candle CUDA tensors: no copy of
//! the input or residual (each read where candle holds it, at its start offset), an output
//! allocated on candle's stream and handed to candle as its own storage.

use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaSlice, DevicePtr};
use candle_core::cuda_backend::{CudaDType, CudaStorage};
use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Shape, Tensor};
use convrs::device_conv::{BorrowedSlice, DeviceConv};
use convrs::{Element, Gpu};

use crate::to_candle;

/// A convolution planned for one input shape and one dtype.
pub(crate) struct Planned<T: Element> {
    pub conv: DeviceConv<T>,
    pub gpu: std::sync::Arc<Gpu>,
    pub output_shape: Shape,
}

/// The op: runs `planned` on the input (and residual) it is applied to.
pub(crate) struct RunOp<'a, T: Element> {
    pub planned: &'a Mutex<Planned<T>>,
}

impl<T: Element + CudaDType> RunOp<'_, T> {
    /// Applies the op to `x`, with `residual` where the plan adds one; both contiguous, their
    /// starts 16-byte aligned (the caller makes them so).
    pub fn apply(&self, x: &Tensor, residual: Option<&Tensor>) -> candle_core::Result<Tensor> {
        match residual {
            None => x.apply_op1_no_bwd(self),
            Some(r) => x.apply_op2_no_bwd(r, self),
        }
    }

    fn run(&self, x: (&CudaStorage, &Layout), residual: Option<(&CudaStorage, &Layout)>) -> candle_core::Result<(CudaStorage, Shape)> {
        let mut planned = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        let Planned { conv, gpu, output_shape } = &mut *planned;
        let device = x.0.device().clone();
        // SAFETY: every element is written by the convolution before anyone reads it (the
        // kernels write the whole output; DeviceConv checks its length).
        let mut output = unsafe { device.alloc::<T>(output_shape.elem_count())? };
        let input = View::of(x, gpu)?;
        let residual = residual.map(|r| View::of(r, gpu)).transpose()?;
        conv.run_fused_on(gpu, &input, residual.as_deref(), &mut output).map_err(to_candle)?;
        Ok((CudaStorage::wrap_cuda_slice(output, device), output_shape.clone()))
    }
}

/// A contiguous candle tensor's elements as a `CudaSlice`: the storage itself where the tensor
/// is all of it, else the range at its offset, borrowed (never freed here).
enum View<'a, T> {
    Whole(&'a CudaSlice<T>),
    Part(BorrowedSlice<T>),
}

impl<'a, T: Element + CudaDType> View<'a, T> {
    fn of((storage, layout): (&'a CudaStorage, &Layout), gpu: &Gpu) -> candle_core::Result<Self> {
        if !layout.is_contiguous() {
            candle_core::bail!("convrs-conv2d: tensors must be contiguous (forward makes them so)");
        }
        let slice = storage.as_cuda_slice::<T>()?;
        let (offset, len) = (layout.start_offset(), layout.shape().elem_count());
        if offset == 0 && slice.len() == len {
            return Ok(View::Whole(slice));
        }
        if offset + len > slice.len() {
            candle_core::bail!("convrs-conv2d: the layout runs past its storage");
        }
        let (base, _sync) = slice.device_ptr(gpu.stream());
        let address = base + (offset * std::mem::size_of::<T>()) as u64;
        // SAFETY: `offset + len` elements lie inside candle's live buffer (checked above), which
        // outlives the work enqueued on it (candle frees in stream order).
        Ok(View::Part(unsafe { BorrowedSlice::new(gpu, address, len) }))
    }
}

impl<T> std::ops::Deref for View<'_, T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        match self {
            View::Whole(s) => s,
            View::Part(s) => s,
        }
    }
}

impl<T: Element + CudaDType> CustomOp1 for RunOp<'_, T> {
    fn name(&self) -> &'static str {
        "convrs-conv2d"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        // Conv2d sends CPU tensors to candle's own convolution before they get here.
        candle_core::bail!("convrs runs on CUDA tensors only")
    }

    fn cuda_fwd(&self, storage: &CudaStorage, layout: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        self.run((storage, layout), None)
    }
}

impl<T: Element + CudaDType> CustomOp2 for RunOp<'_, T> {
    fn name(&self) -> &'static str {
        "convrs-conv2d-residual"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        candle_core::bail!("convrs runs on CUDA tensors only")
    }

    fn cuda_fwd(&self, x: &CudaStorage, xl: &Layout, r: &CudaStorage, rl: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        self.run((x, xl), Some((r, rl)))
    }
}
