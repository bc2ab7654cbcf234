//! convrs inside [candle](https://github.com/huggingface/candle): convrs's convolution kernels on
//! candle's CUDA tensors, in candle's memory and on candle's stream, as a drop-in
//! `candle_nn::Module`.
//!
//! ```no_run
//! use candle_core::{DType, Device, Module, Tensor};
//! use candle_nn::{Conv2dConfig, VarBuilder};
//! let dev = Device::new_cuda(0)?;
//! let vb = VarBuilder::zeros(DType::F16, &dev); // or your checkpoint: same names as candle_nn
//! let conv = convrs_candle::conv2d(64, 128, 3, Conv2dConfig { padding: 1, ..Default::default() }, vb)?;
//! let y = conv.forward(&Tensor::zeros((1, 64, 32, 32), DType::F16, &dev)?)?;
//! # Ok::<(), candle_core::Error>(())
//! ```
//!
//! How it meets candle:
//! - Each layer plans once per input shape and keeps the filter in the kernel's layout (made
//!   from candle's OIHW weights on the GPU, once). The input is read where candle holds it; the
//!   output is a fresh candle tensor on the same device. Nothing is synchronized: convrs enqueues
//!   on the device's own stream (`CudaDevice::cuda_stream`), in order with candle's kernels.
//! - Non-contiguous inputs, and views whose start is not 16-byte aligned, are made contiguous
//!   first (one copy, by candle); contiguous views at an aligned offset are read in place.
//! - What convrs cannot run goes to candle's own convolution, and the layer says so once.
//!
//! The layers: [`Conv2d`] (with its fused forms: a folded batch norm, an activation, a residual),
//! [`Conv1d`] (as H = 1), and [`ConvTranspose2d`] (as one convolution per output phase).

mod conv1d;
mod conv2d;
mod conv_transpose;
mod gpu;
mod op;

pub use conv1d::{conv1d, conv1d_no_bias, Conv1d};
pub use conv2d::{conv2d, conv2d_no_bias, Conv2d};
pub use conv_transpose::{conv_transpose2d, ConvTranspose2d};
pub use convrs::{Activation, Precision};
pub use gpu::gpu_for;

/// convrs's errors as candle's.
pub(crate) fn to_candle(e: convrs::Error) -> candle_core::Error {
    candle_core::Error::Msg(format!("convrs: {e}"))
}
