//! The candle custom op that runs a planned [`DeviceConv`] on a candle CUDA tensor: no copy of
//! the input (its storage is read where it is, at its start offset), an output allocated on
//! candle's stream and handed to candle as its own storage.

use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::{CudaDType, CudaStorage};
use candle_core::{CpuStorage, CustomOp1, Layout, Shape};
use convrs::device_conv::DeviceConv;
use convrs::{Element, Gpu};
use cudarc::driver::DevicePtr;

use crate::to_candle;
use candle_core::cuda_backend::cudarc;

/// A convolution planned for one input shape and one dtype.
pub(crate) struct Planned<T: Element> {
    pub conv: DeviceConv<T>,
    pub gpu: std::sync::Arc<Gpu>,
    pub output_shape: Shape,
}

/// The op: runs `planned` on the one tensor it is applied to.
pub(crate) struct RunOp<'a, T: Element> {
    pub planned: &'a Mutex<Planned<T>>,
}

impl<T: Element + CudaDType> CustomOp1 for RunOp<'_, T> {
    fn name(&self) -> &'static str {
        "convrs-conv2d"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        // Module::forward sends CPU tensors to candle's own convolution before they get here.
        candle_core::bail!("convrs runs on CUDA tensors only")
    }

    fn cuda_fwd(&self, storage: &CudaStorage, layout: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        let mut planned = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        let Planned { conv, gpu, output_shape } = &mut *planned;
        if !layout.is_contiguous() {
            candle_core::bail!("convrs-conv2d: the input must be contiguous (forward makes it so)");
        }
        let input = storage.as_cuda_slice::<T>()?;
        let device = storage.device().clone();
        // SAFETY: every element is written by the convolution before anyone reads it (the
        // kernels write the whole output; DeviceConv checks its length).
        let mut output = unsafe { device.alloc::<T>(output_shape.elem_count())? };
        let offset = layout.start_offset();
        if offset == 0 && input.len() == layout.shape().elem_count() {
            conv.run_on(gpu, input, &mut output).map_err(to_candle)?;
        } else {
            // A view into a larger buffer (a narrowed batch): read in place by address.
            let (base, _sync) = input.device_ptr(gpu.stream());
            let (out, _out_sync) = output.device_ptr(gpu.stream());
            let address = base + (offset * std::mem::size_of::<T>()) as u64;
            // SAFETY: `address` starts `offset` elements into candle's live buffer, which holds
            // the layout's elements contiguously from there (checked contiguous above; candle's
            // layout lies inside its storage); `out` is the fresh output of the right length.
            // Both outlive the enqueued work: candle frees in stream order.
            unsafe { conv.run_raw(gpu, address, out) }.map_err(to_candle)?;
        }
        Ok((CudaStorage::wrap_cuda_slice(output, device), output_shape.clone()))
    }
}
