//! 1-D convolution on the same kernels: a `[B, C, L]` signal is a `[B, C, 1, L]` image and a
//! `[K, C/groups, S]` filter a `[K, C/groups, 1, S]` one, padded, strided and dilated along W only.

use candle_core::{Module, Tensor};
use candle_nn::{Conv1dConfig, Conv2dConfig};
use convrs::Precision;

use crate::conv2d::{Conv2d, Fallback};

/// `candle_nn::Conv1d`'s twin on convrs's kernels (see [`Conv2d`] for the plan cache, the
/// fallback and the precision).
///
/// ```no_run
/// use candle_core::{Device, Module, Tensor};
/// let dev = Device::new_cuda(0)?;
/// let w = Tensor::randn(0f32, 0.1, (256, 128, 5), &dev)?;
/// let conv = convrs_candle::Conv1d::new(w, None, candle_nn::Conv1dConfig { padding: 2, ..Default::default() })?;
/// let y = conv.forward(&Tensor::randn(0f32, 1.0, (4, 128, 1000), &dev)?)?; // (4, 256, 1000)
/// # Ok::<(), candle_core::Error>(())
/// ```
pub struct Conv1d {
    inner: Conv2d,
}

impl Conv1d {
    /// `weight` `[K, C/groups, S]`, `bias` `[K]`.
    pub fn new(weight: Tensor, bias: Option<Tensor>, config: Conv1dConfig) -> candle_core::Result<Self> {
        let (k, c, s) = weight.dims3()?;
        let as_2d = Conv2dConfig { padding: config.padding, stride: config.stride, dilation: config.dilation, groups: config.groups, cudnn_fwd_algo: None };
        let mut inner = Conv2d::new(weight.reshape((k, c, 1, s))?, bias, as_2d);
        inner.geometry = [(0, config.padding), (1, config.stride), (1, config.dilation)];
        inner.fallback = Fallback::Conv1d(weight);
        Ok(Conv1d { inner })
    }

    /// The precision of fp32 layers (see [`Conv2d::with_precision`]).
    pub fn with_precision(self, precision: Precision) -> Self {
        Conv1d { inner: self.inner.with_precision(precision) }
    }

    /// The 2-D layer this runs as.
    pub fn as_conv2d(&self) -> &Conv2d {
        &self.inner
    }
}

impl Module for Conv1d {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (b, c, l) = x.dims3()?;
        let y = self.inner.forward(&x.reshape((b, c, 1, l))?)?;
        y.squeeze(2)
    }
}

/// `candle_nn::conv1d`'s twin (weights `weight` and `bias` from `vb`).
pub fn conv1d(in_channels: usize, out_channels: usize, kernel_size: usize, config: Conv1dConfig, vb: candle_nn::VarBuilder) -> candle_core::Result<Conv1d> {
    let inner = candle_nn::conv1d(in_channels, out_channels, kernel_size, config, vb)?;
    Conv1d::new(inner.weight().clone(), inner.bias().cloned(), config)
}

/// [`conv1d`] without a bias.
pub fn conv1d_no_bias(in_channels: usize, out_channels: usize, kernel_size: usize, config: Conv1dConfig, vb: candle_nn::VarBuilder) -> candle_core::Result<Conv1d> {
    let inner = candle_nn::conv1d_no_bias(in_channels, out_channels, kernel_size, config, vb)?;
    Conv1d::new(inner.weight().clone(), None, config)
}
