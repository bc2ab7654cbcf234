//! The drop-in 2-D convolution: [`Conv2d`] (a `candle_nn::Module`, built like `candle_nn::Conv2d`)
//! and the free function [`conv2d`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

use candle_core::cuda_backend::CudaDType;
use candle_core::{DType, Device, Module, Storage, Tensor};
use candle_nn::Conv2dConfig;
use convrs::device_conv::DeviceConv;
use convrs::{Algorithm, Element, Layout, Precision};
use half::{bf16, f16};

use crate::op::{Planned, RunOp};

/// What the plan cache keys on: the input's dims and the stream (one plan per shape a layer
/// sees; a model at one batch size has one per layer).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    dims: [usize; 4],
    stream: usize,
}

enum Plan {
    F32(Mutex<Planned<f32>>),
    F16(Mutex<Planned<f16>>),
    Bf16(Mutex<Planned<bf16>>),
    /// convrs refused this shape or dtype: candle's own convolution runs it (the reason was
    /// printed once).
    Candle,
}

/// A 2-D convolution layer that runs on convrs's kernels: the same constructor arguments and
/// `forward` as `candle_nn::Conv2d` (weights `[K, C/groups, R, S]`, candle's OIHW; NCHW in and
/// out; f32, f16 and bf16 on CUDA), so a model switches by changing the constructor.
///
/// The weights are constant: each input shape gets a plan whose filter is brought to the
/// kernel's layout once, the first time that shape is seen (keyed by the layer and the input's
/// dims, never by a device address). A layer whose weights change in place (training through
/// a `Var`) must call [`Conv2d::weights_changed`]. What convrs cannot run (CPU tensors, f64,
/// grouped layers with 1 < groups < C, ...) runs through candle's own `conv2d`, and the layer
/// says so on stderr once, with convrs's reason.
///
/// fp32 layers compute at [`Precision::Fp32`] unless told otherwise ([`Conv2d::with_precision`]:
/// `Tf32` is what PyTorch computes fp32 convolutions in by default).
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
    plans: Mutex<HashMap<Key, Arc<Plan>>>,
    fallback_said: Once,
}

impl Conv2d {
    /// `weight` `[K, C/groups, R, S]`, `bias` `[K]` (added after the convolution, as candle_nn does).
    pub fn new(weight: Tensor, bias: Option<Tensor>, config: Conv2dConfig) -> Self {
        let (p, st, d) = (config.padding, config.stride, config.dilation);
        Conv2d { weight, bias, config, geometry: [(p, p), (st, st), (d, d)], fallback: Fallback::Conv2d, precision: Precision::Fp32, plans: Mutex::default(), fallback_said: Once::new() }
    }

    /// The precision of fp32 layers ([`Precision::Tf32`], `Fp32` (the default) or `Fma`).
    pub fn with_precision(self, precision: Precision) -> Self {
        self.weights_changed();
        Conv2d { precision, ..self }
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

    /// Drops every plan, so the next `forward` reads the weights again.
    pub fn weights_changed(&self) {
        self.plans.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The convrs problem this layer runs on an input of `dims` (`[N, C, H, W]`).
    pub fn problem(&self, dims: [usize; 4]) -> candle_core::Result<convrs::Conv2d> {
        let (k, c_g, r, s) = self.weight.dims4()?;
        let c = self.config;
        let [pad, stride, dilation] = self.geometry;
        let p = convrs::Conv2d { pad, stride, dilation, ..convrs::Conv2d::new(dims[0], dims[1], dims[2], dims[3], k, r, s) }
            .with_groups(c.groups)
            .with_precision(self.precision);
        if p.group_c() != c_g {
            candle_core::bail!("conv2d: the weight has {c_g} input channels per group, the input {} in {} groups", dims[1], c.groups);
        }
        Ok(p)
    }

    /// The convolution alone (no bias) by convrs, or by candle where convrs refuses.
    fn convolve(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let candle = |x: &Tensor| self.fallback.run(x, &self.weight, &self.config);
        let Device::Cuda(device) = x.device() else {
            self.say_fallback(&format!("the input is on {:?}; convrs runs on CUDA devices", x.device()));
            return candle(x);
        };
        let (n, c, h, w) = x.dims4()?;
        let dims = [n, c, h, w];
        let key = Key { dims, stream: device.cuda_stream().cu_stream() as usize };
        let plan = self.plan(key, device)?;
        // The op reads a contiguous tensor at an offset aligned for the kernels' tensor maps.
        let aligned = x.layout().start_offset() * x.dtype().size_in_bytes() % 16 == 0;
        let run = |x: &Tensor| match &*plan {
            Plan::F32(p) => x.apply_op1_no_bwd(&RunOp { planned: p }),
            Plan::F16(p) => x.apply_op1_no_bwd(&RunOp { planned: p }),
            Plan::Bf16(p) => x.apply_op1_no_bwd(&RunOp { planned: p }),
            Plan::Candle => candle(x),
        };
        if x.is_contiguous() && aligned { run(x) } else { run(&x.force_contiguous()?) }
    }

    fn plan(&self, key: Key, device: &candle_core::CudaDevice) -> candle_core::Result<Arc<Plan>> {
        if let Some(p) = self.plans.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(p.clone());
        }
        let problem = self.problem(key.dims)?;
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

    /// Plans `problem` on `device`'s stream and brings the weights to the kernel's layout;
    /// `Err` carries convrs's reason for refusing.
    fn make<T: Element + CudaDType>(&self, problem: &convrs::Conv2d, device: &candle_core::CudaDevice) -> Result<Planned<T>, String> {
        let gpu = crate::gpu::gpu_for(device).map_err(|e| e.to_string())?;
        let weight = self.weight.to_device(&Device::Cuda(device.clone())).and_then(|w| w.force_contiguous()).map_err(|e| e.to_string())?;
        let (storage, layout) = weight.storage_and_layout();
        let Storage::Cuda(storage) = &*storage else { return Err("the weight is not on the GPU".into()) };
        debug_assert_eq!(layout.start_offset(), 0);
        let slice = storage.as_cuda_slice::<T>().map_err(|e| e.to_string())?;
        let conv = DeviceConv::<T>::with_filter_slice(&gpu, Algorithm::Auto, problem, slice, Layout::Nchw, Layout::Nchw, Layout::Nchw).map_err(|e| e.to_string())?;
        let out = problem.output_shape();
        Ok(Planned { conv, gpu, output_shape: candle_core::Shape::from_dims(&out) })
    }

    fn say_fallback(&self, why: &str) {
        self.fallback_said.call_once(|| eprintln!("convrs-candle: this Conv2d layer runs on candle's own convolution: {why}"));
    }

    /// The kernel convrs runs for an input of `dims` on `device` (planning it if needed), or
    /// `None` where candle's own convolution runs it.
    pub fn kernel_for(&self, dims: [usize; 4], device: &Device) -> candle_core::Result<Option<String>> {
        let Device::Cuda(d) = device else { return Ok(None) };
        let plan = self.plan(Key { dims, stream: d.cuda_stream().cu_stream() as usize }, d)?;
        Ok(match &*plan {
            Plan::F32(p) => Some(p.lock().unwrap_or_else(|p| p.into_inner()).conv.name()),
            Plan::F16(p) => Some(p.lock().unwrap_or_else(|p| p.into_inner()).conv.name()),
            Plan::Bf16(p) => Some(p.lock().unwrap_or_else(|p| p.into_inner()).conv.name()),
            Plan::Candle => None,
        })
    }
}

/// candle's own convolution, for what convrs refuses.
pub(crate) enum Fallback {
    Conv2d,
    /// A 1-D layer seen as 2-D (H = 1): candle's conv1d with the 3-D weight.
    Conv1d(Tensor),
}

impl Fallback {
    fn run(&self, x: &Tensor, weight: &Tensor, c: &Conv2dConfig) -> candle_core::Result<Tensor> {
        match self {
            Fallback::Conv2d => x.conv2d(weight, c.padding, c.stride, c.dilation, c.groups),
            Fallback::Conv1d(w) => x.squeeze(2)?.conv1d(w, c.padding, c.stride, c.dilation, c.groups)?.unsqueeze(2),
        }
    }
}

impl Module for Conv2d {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = self.convolve(x)?;
        match &self.bias {
            None => Ok(y),
            Some(bias) => y.broadcast_add(&bias.reshape((1, bias.dims1()?, 1, 1))?),
        }
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
