//! The drop-in 2-D convolution: [`Conv2d`] (a `candle_nn::Module`, built like `candle_nn::Conv2d`),
//! its fused forms (a folded batch norm, an activation, a residual, all in the convolution's
//! kernel), and the constructors [`conv2d`] and [`conv2d_no_bias`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

use candle_core::cuda_backend::CudaDType;
use candle_core::{DType, Device, Module, Storage, Tensor};
use candle_nn::{BatchNorm, Conv2dConfig};
use convrs::device_conv::{DeviceConv, DeviceVectors};
use convrs::{Activation, Algorithm, Element, Epilogue, Layout, Precision};
use half::{bf16, f16};

use crate::op::{Planned, RunOp};

/// What the plan cache keys on: the input's dims, the stream, and whether a residual is added
/// (one plan per shape a layer sees; a model at one batch size has one or two per layer).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    dims: [usize; 4],
    stream: usize,
    residual: bool,
}

enum Plan {
    F32(Mutex<Planned<f32>>),
    F16(Mutex<Planned<f16>>),
    Bf16(Mutex<Planned<bf16>>),
    /// convrs refused this shape or dtype: candle runs it (the reason was printed once).
    Candle,
}

/// A 2-D convolution layer that runs on convrs's kernels: the same constructor arguments and
/// `forward` as `candle_nn::Conv2d` (weights `[K, C/groups, R, S]`, candle's OIHW; NCHW in and
/// out; f32, f16 and bf16 on CUDA), so a model switches by changing the constructor.
///
/// - **Plans.** The weights are constant: each input shape gets a plan whose filter is brought
///   to the kernel's layout once, the first time that shape is seen (keyed by the layer and the
///   input's dims, never by a device address). A layer whose weights change in place (training
///   through a `Var`) must call [`Conv2d::weights_changed`].
/// - **Fused layers.** [`Conv2d::fuse_batch_norm`], [`Conv2d::with_activation`] and
///   [`Conv2d::forward_residual`] make the layer `act(conv(x) * scale + shift + residual)` in
///   one kernel (the bias too: with any of them it is folded into the shift).
/// - **Fallback.** What convrs cannot run (CPU tensors, f64, grouped layers with
///   1 < groups < C off Hopper, ...) runs on candle's own `conv2d` (and candle's ops for the fused parts),
///   and the layer says so on stderr once, with convrs's reason.
/// - **fp32** layers compute at [`Precision::Fp32`] unless told otherwise
///   ([`Conv2d::with_precision`]: `Tf32` is what PyTorch computes fp32 convolutions in by default).
///
/// ```no_run
/// use candle_core::{DType, Device, Module, Tensor};
/// use candle_nn::Conv2dConfig;
/// let dev = Device::new_cuda(0)?;
/// let w = Tensor::randn(0f32, 0.05, (64, 32, 3, 3), &dev)?.to_dtype(DType::F16)?;
/// let conv = convrs_candle::Conv2d::new(w, None, Conv2dConfig { padding: 1, ..Default::default() });
/// let x = Tensor::randn(0f32, 1.0, (8, 32, 56, 56), &dev)?.to_dtype(DType::F16)?;
/// let y = conv.forward(&x)?; // (8, 64, 56, 56), on candle's stream
/// # Ok::<(), candle_core::Error>(())
/// ```
pub struct Conv2d {
    weight: Tensor,
    bias: Option<Tensor>,
    config: Conv2dConfig,
    /// Padding, stride and dilation along (H, W): the config's in both for a 2-D layer; a 1-D
    /// layer's ([`crate::Conv1d`]) along W only.
    pub(crate) geometry: [(usize, usize); 3],
    /// How candle runs what convrs refuses.
    pub(crate) fallback: Fallback,
    precision: Precision,
    /// The fused epilogue's per-channel factor and shift (fp32, `[K]`), and its activation.
    scale: Option<Tensor>,
    shift: Option<Tensor>,
    activation: Activation,
    plans: Mutex<HashMap<Key, Arc<Plan>>>,
    fallback_said: Once,
}

impl Conv2d {
    /// `weight` `[K, C/groups, R, S]`, `bias` `[K]`.
    pub fn new(weight: Tensor, bias: Option<Tensor>, config: Conv2dConfig) -> Self {
        let (p, st, d) = (config.padding, config.stride, config.dilation);
        Conv2d {
            weight,
            bias,
            config,
            geometry: [(p, p), (st, st), (d, d)],
            fallback: Fallback::Conv2d,
            precision: Precision::Fp32,
            scale: None,
            shift: None,
            activation: Activation::Identity,
            plans: Mutex::default(),
            fallback_said: Once::new(),
        }
    }

    /// The precision of fp32 layers ([`Precision::Tf32`], `Fp32` (the default) or `Fma`).
    pub fn with_precision(self, precision: Precision) -> Self {
        self.weights_changed();
        Conv2d { precision, ..self }
    }

    /// This layer followed by `bn` in inference mode (its running statistics), folded into the
    /// kernel's epilogue: `scale = gamma / sqrt(var + eps)`, `shift = beta - mean * scale`
    /// (plus the layer's bias times `scale`). Computed here once, on the weights' device.
    pub fn fuse_batch_norm(self, bn: &BatchNorm) -> candle_core::Result<Self> {
        let f32 = |t: &Tensor| t.to_device(self.weight.device())?.to_dtype(DType::F32);
        let var = f32(bn.running_var())?;
        let mut scale = (var + bn.eps())?.sqrt()?.recip()?;
        let mut shift = f32(bn.running_mean())?.neg()?;
        if let Some((gamma, beta)) = bn.weight_and_bias() {
            scale = (scale * f32(gamma)?)?;
            shift = ((shift * &scale)? + f32(beta)?)?;
        } else {
            shift = (shift * &scale)?;
        }
        // Folded onto what this layer already applies: (conv * s0 + b0) * scale + shift.
        let (s0, b0) = self.vectors()?;
        let shift = match b0 {
            Some(b0) => ((b0 * &scale)? + shift)?,
            None => shift,
        };
        let scale = match s0 {
            Some(s0) => (s0 * &scale)?,
            None => scale,
        };
        self.weights_changed();
        Ok(Conv2d { bias: None, scale: Some(scale.contiguous()?), shift: Some(shift.contiguous()?), ..self })
    }

    /// This layer followed by `activation`, applied in the kernel's epilogue.
    pub fn with_activation(self, activation: Activation) -> Self {
        self.weights_changed();
        Conv2d { activation, ..self }
    }

    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    pub fn config(&self) -> &Conv2dConfig {
        &self.config
    }

    /// Drops every plan, so the next `forward` reads the weights (and fused vectors) again.
    pub fn weights_changed(&self) {
        self.plans.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The epilogue's (scale, shift) as fp32 `[K]` tensors: the bias becomes the shift.
    fn vectors(&self) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let shift = match (&self.shift, &self.bias) {
            (Some(s), _) => Some(s.clone()),
            (None, Some(b)) => Some(b.to_dtype(DType::F32)?.contiguous()?),
            (None, None) => None,
        };
        Ok((self.scale.clone(), shift))
    }

    /// The epilogue of a forward with or without a residual.
    fn epilogue(&self, residual: bool) -> Epilogue {
        let mut ep = Epilogue::NONE.with_activation(self.activation);
        (ep.scale, ep.bias, ep.residual) = (self.scale.is_some(), self.shift.is_some() || self.bias.is_some(), residual);
        ep
    }

    /// The convrs problem this layer runs on an input of `dims` (`[N, C, H, W]`), without a
    /// residual.
    pub fn problem(&self, dims: [usize; 4]) -> candle_core::Result<convrs::Conv2d> {
        self.problem_with(dims, false)
    }

    fn problem_with(&self, dims: [usize; 4], residual: bool) -> candle_core::Result<convrs::Conv2d> {
        let (k, c_g, r, s) = self.weight.dims4()?;
        let [pad, stride, dilation] = self.geometry;
        let p = convrs::Conv2d { pad, stride, dilation, ..convrs::Conv2d::new(dims[0], dims[1], dims[2], dims[3], k, r, s) }
            .with_groups(self.config.groups)
            .with_precision(self.precision)
            .with_epilogue(self.epilogue(residual));
        if p.group_c() != c_g {
            candle_core::bail!("conv2d: the weight has {c_g} input channels per group, the input {} in {} groups", dims[1], self.config.groups);
        }
        Ok(p)
    }

    /// `act(conv(x) * scale + shift + residual)`: the layer with `residual` (the output's shape
    /// and dtype) added before the activation, in the kernel (a ResNet block's last layer).
    pub fn forward_residual(&self, x: &Tensor, residual: &Tensor) -> candle_core::Result<Tensor> {
        self.run(x, Some(residual))
    }

    fn run(&self, x: &Tensor, residual: Option<&Tensor>) -> candle_core::Result<Tensor> {
        let Device::Cuda(device) = x.device() else {
            self.say_fallback(&format!("the input is on {:?}; convrs runs on CUDA devices", x.device()));
            return self.with_candle(x, residual);
        };
        let (n, c, h, w) = x.dims4()?;
        let key = Key { dims: [n, c, h, w], stream: device.cuda_stream().cu_stream() as usize, residual: residual.is_some() };
        let plan = self.plan(key, device)?;
        // The op reads contiguous tensors at offsets aligned for the kernels' vector accesses.
        let ready = |t: &Tensor| -> candle_core::Result<Tensor> {
            let aligned = t.layout().start_offset() * t.dtype().size_in_bytes() % 16 == 0;
            if t.is_contiguous() && aligned { Ok(t.clone()) } else { t.force_contiguous() }
        };
        let x = ready(x)?;
        let residual = residual.map(ready).transpose()?;
        match &*plan {
            Plan::F32(p) => RunOp { planned: p }.apply(&x, residual.as_ref()),
            Plan::F16(p) => RunOp { planned: p }.apply(&x, residual.as_ref()),
            Plan::Bf16(p) => RunOp { planned: p }.apply(&x, residual.as_ref()),
            Plan::Candle => self.with_candle(&x, residual.as_ref()),
        }
    }

    /// The layer by candle's convolution and ops (the fallback).
    fn with_candle(&self, x: &Tensor, residual: Option<&Tensor>) -> candle_core::Result<Tensor> {
        let mut y = self.fallback.run(x, &self.weight, &self.config)?;
        let (scale, shift) = self.vectors()?;
        let dtype = y.dtype();
        let channel = |v: Tensor| -> candle_core::Result<Tensor> {
            let k = v.dims1()?;
            v.to_dtype(dtype)?.reshape((1, k, 1, 1))
        };
        if let Some(s) = scale {
            y = y.broadcast_mul(&channel(s)?)?;
        }
        if let Some(b) = shift {
            y = y.broadcast_add(&channel(b)?)?;
        }
        if let Some(r) = residual {
            y = (y + r)?;
        }
        match self.activation {
            Activation::Identity => Ok(y),
            Activation::Relu => y.relu(),
            Activation::Relu6 => y.clamp(0f32, 6f32),
            Activation::LeakyRelu(slope) => candle_nn::ops::leaky_relu(&y, slope as f64),
            Activation::Silu => y.silu(),
            Activation::GeluTanh => y.gelu(),
            Activation::GeluErf => y.gelu_erf(),
        }
    }

    fn plan(&self, key: Key, device: &candle_core::CudaDevice) -> candle_core::Result<Arc<Plan>> {
        if let Some(p) = self.plans.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(p.clone());
        }
        let problem = self.problem_with(key.dims, key.residual)?;
        let made = match self.weight.dtype() {
            DType::F32 => self.make::<f32>(&problem, device).map(|p| Plan::F32(Mutex::new(p))),
            DType::F16 => self.make::<f16>(&problem, device).map(|p| Plan::F16(Mutex::new(p))),
            DType::BF16 => self.make::<bf16>(&problem, device).map(|p| Plan::Bf16(Mutex::new(p))),
            d => Err(format!("convrs takes f32, f16 and bf16, not {d:?}")),
        };
        let plan = Arc::new(made.unwrap_or_else(|reason| {
            self.say_fallback(&format!("{problem}: {reason}"));
            Plan::Candle
        }));
        self.plans.lock().unwrap_or_else(|p| p.into_inner()).insert(key, plan.clone());
        Ok(plan)
    }

    /// Plans `problem` on `device`'s stream and brings the weights (and the epilogue's vectors)
    /// to the kernel; `Err` carries convrs's reason for refusing.
    fn make<T: Element + CudaDType>(&self, problem: &convrs::Conv2d, device: &candle_core::CudaDevice) -> Result<Planned<T>, String> {
        let text = |e: candle_core::Error| e.to_string();
        let gpu = crate::gpu::gpu_for(device).map_err(text)?;
        let on_device = |t: &Tensor| t.to_device(&Device::Cuda(device.clone())).and_then(|t| t.force_contiguous());
        let weight = on_device(&self.weight).map_err(text)?;
        let (scale, shift) = self.vectors().map_err(text)?;
        let (scale, shift) = (scale.map(|t| on_device(&t)).transpose().map_err(text)?, shift.map(|t| on_device(&t)).transpose().map_err(text)?);
        // The storage guards live until the plan has copied what it keeps.
        let (w, sc, sh) = (weight.storage_and_layout().0, scale.as_ref().map(|t| t.storage_and_layout().0), shift.as_ref().map(|t| t.storage_and_layout().0));
        let w = cuda_slice::<T>(&w)?;
        let vectors = DeviceVectors { scale: sc.as_deref().map(cuda_slice::<f32>).transpose()?, bias: sh.as_deref().map(cuda_slice::<f32>).transpose()? };
        let conv = DeviceConv::<T>::fused(&gpu, Algorithm::Auto, problem, w, Layout::Nchw, Layout::Nchw, Layout::Nchw, vectors).map_err(|e| e.to_string())?;
        Ok(Planned { conv, gpu, output_shape: candle_core::Shape::from_dims(&problem.output_shape()) })
    }

    fn say_fallback(&self, why: &str) {
        self.fallback_said.call_once(|| eprintln!("convrs-candle: this Conv2d layer runs on candle's own convolution: {why}"));
    }

    /// The kernel convrs runs for an input of `dims` on `device` (planning it if needed), or
    /// `None` where candle's own convolution runs it.
    pub fn kernel_for(&self, dims: [usize; 4], device: &Device) -> candle_core::Result<Option<String>> {
        let Device::Cuda(d) = device else { return Ok(None) };
        let plan = self.plan(Key { dims, stream: d.cuda_stream().cu_stream() as usize, residual: false }, d)?;
        Ok(match &*plan {
            Plan::F32(p) => Some(p.lock().unwrap_or_else(|p| p.into_inner()).conv.name()),
            Plan::F16(p) => Some(p.lock().unwrap_or_else(|p| p.into_inner()).conv.name()),
            Plan::Bf16(p) => Some(p.lock().unwrap_or_else(|p| p.into_inner()).conv.name()),
            Plan::Candle => None,
        })
    }
}

/// The device buffer of a CUDA storage holding `U`.
fn cuda_slice<U: CudaDType>(s: &Storage) -> Result<&candle_core::cuda_backend::cudarc::driver::CudaSlice<U>, String> {
    match s {
        Storage::Cuda(s) => s.as_cuda_slice::<U>().map_err(|e| e.to_string()),
        _ => Err("a tensor of the layer is not on the GPU".into()),
    }
}

/// candle's own convolution, for what convrs refuses.
pub(crate) enum Fallback {
    Conv2d,
    /// A 1-D layer seen as 2-D (H = 1): candle's conv1d with the 3-D weight.
    Conv1d(Tensor),
    /// A layer with its own (H, W) padding (a transposed convolution's phase): the input
    /// zero-padded by candle, then its conv2d unpadded.
    Padded(usize, usize),
}

impl Fallback {
    fn run(&self, x: &Tensor, weight: &Tensor, c: &Conv2dConfig) -> candle_core::Result<Tensor> {
        match self {
            Fallback::Conv2d => x.conv2d(weight, c.padding, c.stride, c.dilation, c.groups),
            Fallback::Conv1d(w) => x.squeeze(2)?.conv1d(w, c.padding, c.stride, c.dilation, c.groups)?.unsqueeze(2),
            Fallback::Padded(ph, pw) => x.pad_with_zeros(2, *ph, *ph)?.pad_with_zeros(3, *pw, *pw)?.conv2d(weight, 0, c.stride, c.dilation, c.groups),
        }
    }
}

impl Module for Conv2d {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        self.run(x, None)
    }
}

/// `candle_nn::conv2d`'s twin: a layer of `in_channels -> out_channels` with a `kernel_size`
/// square filter, weights (and bias) from `vb` under the names candle_nn uses (`weight`,
/// `bias`), so checkpoints for candle_nn layers load unchanged.
pub fn conv2d(in_channels: usize, out_channels: usize, kernel_size: usize, config: Conv2dConfig, vb: candle_nn::VarBuilder) -> candle_core::Result<Conv2d> {
    let inner = candle_nn::conv2d(in_channels, out_channels, kernel_size, config, vb)?;
    Ok(Conv2d::new(inner.weight().clone(), inner.bias().cloned(), config))
}

/// [`conv2d`] without a bias (`candle_nn::conv2d_no_bias`'s twin).
pub fn conv2d_no_bias(in_channels: usize, out_channels: usize, kernel_size: usize, config: Conv2dConfig, vb: candle_nn::VarBuilder) -> candle_core::Result<Conv2d> {
    let inner = candle_nn::conv2d_no_bias(in_channels, out_channels, kernel_size, config, vb)?;
    Ok(Conv2d::new(inner.weight().clone(), None, config))
}
