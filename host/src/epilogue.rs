//! The fused epilogue: `y = act(alpha * conv(x, w) * scale[k] + bias[k] + beta * residual)`,
//! computed on the fp32 accumulators and rounded once (a folded BatchNorm's scale and bias, a
//! ResNet's shortcut, the activation). [`Epilogue`] describes it as part of the problem
//! ([`crate::Conv2d::with_epilogue`]); the per-channel vectors and the residual tensor are
//! operands given at the call ([`crate::conv2d_fused`], [`EpilogueOperands`] for [`crate::launch_fused`]).
//!
//! The kernels that fuse it: the Hopper kernels with both tiles by TMA and no cluster
//! (`wgmma_ws_tma_persistent`, `wgmma_ws_tma_splitk`, the ping-pong steps,
//! `wgmma_nchw1x1_persistent`, `wgmma_nchw1x1_pingpong_m64` and their TF32 and 3xTF32 forms,
//! every tile width), the depthwise ones, and `wmma_smallc` and `wmma_patch` (few input
//! channels, any GPU from sm_80); every other kernel
//! refuses a problem with an epilogue (other than [`Epilogue::NONE`]), naming them
//! ([`crate::registry::KernelDesc::fuses_epilogue`]).
//!
//! ```
//! use convrs::epilogue::{Activation, Epilogue};
//! use convrs::Conv2d;
//! let ep = Epilogue::NONE.with_bias().with_residual().with_activation(Activation::Relu);
//! let p = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1).with_epilogue(ep);
//! assert_eq!(ep.to_string(), "bias+residual+relu");
//! assert_eq!("bias+residual+relu".parse::<Epilogue>()?, ep);
//! assert!(p.to_string().ends_with("epilogue=bias+residual+relu"));
//! # Ok::<(), convrs::Error>(())
//! ```

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use convrs_spec::epilogue::{Act, EpilogueArgs, GELU_TANH_A, GELU_TANH_B};
use cudarc::driver::{CudaSlice, DevicePtr, SyncOnDrop};

use crate::{Element, Error, Gpu, Result};

/// The activation applied last.
#[derive(Clone, Copy, Debug)]
pub enum Activation {
    /// None.
    Identity,
    /// `max(v, 0)`.
    Relu,
    /// `min(max(v, 0), 6)`.
    Relu6,
    /// `v` for `v >= 0`, `slope * v` below (PyTorch's default slope is 0.01).
    LeakyRelu(f32),
    /// `v * sigmoid(v)` (Swish).
    Silu,
    /// GELU, tanh approximation (PyTorch's `approximate="tanh"`).
    GeluTanh,
    /// GELU with the error function (PyTorch's default).
    GeluErf,
}

impl Activation {
    /// The kernels' code for it, and its parameter as fp32 bits.
    pub fn code(self) -> (Act, u32) {
        match self {
            Activation::Identity => (Act::Identity, 0),
            Activation::Relu => (Act::Relu, 0),
            Activation::Relu6 => (Act::Relu6, 0),
            Activation::LeakyRelu(slope) => (Act::LeakyRelu, slope.to_bits()),
            Activation::Silu => (Act::Silu, 0),
            Activation::GeluTanh => (Act::GeluTanh, 0),
            Activation::GeluErf => (Act::GeluErf, 0),
        }
    }

    /// The name the CLI takes (`--act`); LeakyReLU as `leaky_relu:SLOPE`.
    pub fn name(self) -> String {
        match self {
            Activation::Identity => "identity".into(),
            Activation::Relu => "relu".into(),
            Activation::Relu6 => "relu6".into(),
            Activation::LeakyRelu(slope) => format!("leaky_relu:{slope}"),
            Activation::Silu => "silu".into(),
            Activation::GeluTanh => "gelu_tanh".into(),
            Activation::GeluErf => "gelu".into(),
        }
    }

    /// The activation of `v` in f64 (the CPU reference's).
    pub fn apply(self, v: f64) -> f64 {
        let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
        match self {
            Activation::Identity => v,
            Activation::Relu => v.max(0.0),
            Activation::Relu6 => v.clamp(0.0, 6.0),
            Activation::LeakyRelu(slope) => {
                if v < 0.0 {
                    v * slope as f64
                } else {
                    v
                }
            }
            Activation::Silu => v * sigmoid(v),
            Activation::GeluTanh => v * sigmoid(GELU_TANH_A as f64 * v * (1.0 + GELU_TANH_B as f64 * v * v)),
            Activation::GeluErf => 0.5 * v * libm::erfc(-v / std::f64::consts::SQRT_2),
        }
    }

    /// Every activation, LeakyReLU with PyTorch's default slope (what the tests sweep).
    pub const ALL: [Activation; 7] = [Activation::Identity, Activation::Relu, Activation::Relu6, Activation::LeakyRelu(0.01), Activation::Silu, Activation::GeluTanh, Activation::GeluErf];
}

impl PartialEq for Activation {
    fn eq(&self, other: &Self) -> bool {
        self.code() == other.code()
    }
}
impl Eq for Activation {}
impl Hash for Activation {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.code().hash(state)
    }
}

impl FromStr for Activation {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "identity" | "none" => Activation::Identity,
            "relu" => Activation::Relu,
            "relu6" => Activation::Relu6,
            "leaky_relu" => Activation::LeakyRelu(0.01),
            "silu" | "swish" => Activation::Silu,
            "gelu_tanh" => Activation::GeluTanh,
            "gelu" | "gelu_erf" => Activation::GeluErf,
            _ => match s.strip_prefix("leaky_relu:").map(str::parse::<f32>) {
                Some(Ok(slope)) if slope.is_finite() => Activation::LeakyRelu(slope),
                _ => return Err(Error::InvalidArgument(format!("unknown activation `{s}`; expected identity, relu, relu6, leaky_relu[:SLOPE], silu, gelu_tanh or gelu"))),
            },
        })
    }
}

/// What the kernel does to each accumulator before rounding it: see the module docs. Part of
/// [`crate::Conv2d`]; [`Epilogue::NONE`] (the default) is the bare convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Epilogue {
    /// The activation, applied last.
    pub activation: Activation,
    /// fp32 bits of the factor on the convolution's sum (1.0 by default).
    alpha: u32,
    /// fp32 bits of the factor on the residual (1.0 by default; read only with a residual).
    beta: u32,
    /// Per-output-channel factors (K fp32 values) are given.
    pub scale: bool,
    /// Per-output-channel addends (K fp32 values) are given.
    pub bias: bool,
    /// A residual tensor of the output's shape, layout and element type is given.
    pub residual: bool,
}

impl Default for Epilogue {
    fn default() -> Self {
        Self::NONE
    }
}

impl Epilogue {
    /// The bare convolution.
    pub const NONE: Epilogue = Epilogue { activation: Activation::Identity, alpha: 0x3f80_0000, beta: 0x3f80_0000, scale: false, bias: false, residual: false };

    /// Whether it computes the bare convolution (beta is read only with a residual).
    pub fn is_none(&self) -> bool {
        Epilogue { beta: Self::NONE.beta, ..*self } == Self::NONE && !self.residual
    }

    /// With per-output-channel scale factors.
    pub fn with_scale(self) -> Self {
        Self { scale: true, ..self }
    }
    /// With per-output-channel bias.
    pub fn with_bias(self) -> Self {
        Self { bias: true, ..self }
    }
    /// With a residual tensor.
    pub fn with_residual(self) -> Self {
        Self { residual: true, ..self }
    }
    /// With `act` applied last.
    pub fn with_activation(self, act: Activation) -> Self {
        Self { activation: act, ..self }
    }
    /// With `alpha` on the convolution's sum.
    pub fn with_alpha(self, alpha: f32) -> Self {
        Self { alpha: alpha.to_bits(), ..self }
    }
    /// With `beta` on the residual.
    pub fn with_beta(self, beta: f32) -> Self {
        Self { beta: beta.to_bits(), ..self }
    }
    /// The factor on the convolution's sum.
    pub fn alpha(&self) -> f32 {
        f32::from_bits(self.alpha)
    }
    /// The factor on the residual.
    pub fn beta(&self) -> f32 {
        f32::from_bits(self.beta)
    }

    /// Checks that its numbers are finite.
    pub fn validate(&self) -> Result<()> {
        let slope = match self.activation {
            Activation::LeakyRelu(s) => s,
            _ => 0.0,
        };
        for (what, v) in [("alpha", self.alpha()), ("beta", self.beta()), ("the LeakyReLU slope", slope)] {
            if !v.is_finite() {
                return Err(Error::InvalidArgument(format!("the epilogue's {what} is {v}: it must be finite")));
            }
        }
        Ok(())
    }

    /// The finished value of a convolution sum `acc` of output channel `k` with residual element
    /// `res`, in f64 (the CPU reference's; `scale`/`bias` as given, ignored where not set).
    pub fn apply(&self, acc: f64, scale: f64, bias: f64, res: f64) -> f64 {
        let mut v = self.alpha() as f64 * acc;
        if self.scale {
            v *= scale;
        }
        if self.bias {
            v += bias;
        }
        if self.residual {
            v += self.beta() as f64 * res;
        }
        self.activation.apply(v)
    }
}

impl fmt::Display for Epilogue {
    /// `none`, or the parts joined by `+`: `alpha=A`, `scale`, `bias`, `residual`, `beta=B`
    /// (when not 1), the activation (when not identity). [`FromStr`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        let mut parts = Vec::new();
        if self.alpha() != 1.0 {
            parts.push(format!("alpha={}", self.alpha()));
        }
        for (on, name) in [(self.scale, "scale"), (self.bias, "bias"), (self.residual, "residual")] {
            if on {
                parts.push(name.to_string());
            }
        }
        if self.beta() != 1.0 {
            parts.push(format!("beta={}", self.beta()));
        }
        if self.activation != Activation::Identity {
            parts.push(self.activation.name());
        }
        if parts.is_empty() {
            parts.push("identity".into());
        }
        f.write_str(&parts.join("+"))
    }
}

impl FromStr for Epilogue {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let mut ep = Epilogue::NONE;
        if s == "none" {
            return Ok(ep);
        }
        for part in s.split('+') {
            let number = |v: &str| v.parse::<f32>().ok().filter(|v| v.is_finite()).ok_or_else(|| Error::InvalidArgument(format!("`{part}`: expected a finite number")));
            ep = match part {
                "scale" => ep.with_scale(),
                "bias" => ep.with_bias(),
                "residual" => ep.with_residual(),
                _ if part.starts_with("alpha=") => ep.with_alpha(number(&part[6..])?),
                _ if part.starts_with("beta=") => ep.with_beta(number(&part[5..])?),
                _ => ep.with_activation(part.parse()?),
            };
        }
        Ok(ep)
    }
}

/// The device operands of a fused epilogue: per-output-channel `scale` and `bias` (fp32, one
/// per output channel of the problem the kernel runs) and a `residual` of the output's length,
/// layout and element type `O`. Each is given exactly when the problem's [`Epilogue`] says so.
pub struct EpilogueOperands<'a, O> {
    pub scale: Option<&'a CudaSlice<f32>>,
    pub bias: Option<&'a CudaSlice<f32>>,
    pub residual: Option<&'a CudaSlice<O>>,
}

impl<O> EpilogueOperands<'_, O> {
    /// No operands (an epilogue of an activation and alpha only, or none).
    pub fn none() -> Self {
        EpilogueOperands { scale: None, bias: None, residual: None }
    }
}

impl<O: Element> EpilogueOperands<'_, O> {
    /// The kernels' arguments for `ep` with these operands on a problem of `k` output channels
    /// and `output_len` output elements: every operand the epilogue names is given, with the
    /// right length, and no other. The addresses stay valid while the borrowed slices live;
    /// the launch that takes them is enqueued on `gpu`'s stream, which these slices' events
    /// order (cudarc records them when the returned guards drop, after the launch).
    pub(crate) fn args<'s>(&'s self, gpu: &'s Gpu, ep: &Epilogue, k: usize, output_len: usize) -> Result<(EpilogueArgs, Vec<SyncOnDrop<'s>>)> {
        ep.validate()?;
        let addr = |name: &'static str, wanted: bool, given: Option<(u64, usize)>, len: usize| -> Result<u64> {
            match (wanted, given) {
                (false, None) => Ok(0),
                // The Hopper kernels read operands in 16-byte vectors (cudarc's allocations are
                // aligned far beyond that; this guards the contract).
                (true, Some((a, _))) if a % 16 != 0 => Err(Error::InvalidArgument(format!("the epilogue's {name} is at {a:#x}, not 16-byte aligned"))),
                (true, Some((a, got))) if got == len => Ok(a),
                (true, Some((_, got))) => Err(Error::BufferSize { tensor: name, expected: len, got }),
                (true, None) => Err(Error::InvalidArgument(format!("the epilogue ({ep}) reads a {name}, and none was given"))),
                (false, Some(_)) => Err(Error::InvalidArgument(format!("a {name} was given, but the epilogue ({ep}) does not read one (Epilogue::with_{name})"))),
            }
        };
        let mut guards = Vec::new();
        let scale = located(self.scale, gpu, &mut guards);
        let bias = located(self.bias, gpu, &mut guards);
        let residual = located(self.residual, gpu, &mut guards);
        let (act, act_arg) = ep.activation.code();
        let args = EpilogueArgs {
            scale: addr("scale", ep.scale, scale, k)?,
            bias: addr("bias", ep.bias, bias, k)?,
            residual: addr("residual", ep.residual, residual, output_len)?,
            // Set by the launch where the plan takes the residual by TMA.
            residual_map: 0,
            act: act as u32,
            act_arg,
            alpha: ep.alpha,
            beta: if ep.residual { ep.beta } else { 0 },
        };
        Ok((args, guards))
    }
}

/// The device address and length of `s`, if given, its stream guard kept in `guards` (so the
/// read is recorded after the launch that follows).
fn located<'s, T>(s: Option<&'s CudaSlice<T>>, gpu: &'s Gpu, guards: &mut Vec<SyncOnDrop<'s>>) -> Option<(u64, usize)> {
    s.map(|s| {
        let (address, guard) = s.device_ptr(gpu.stream());
        guards.push(guard);
        (address, s.len())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_say_why() {
        for act in Activation::ALL {
            assert_eq!(act.name().parse::<Activation>().unwrap(), act);
            let ep = Epilogue::NONE.with_scale().with_bias().with_activation(act).with_alpha(0.5);
            assert_eq!(ep.to_string().parse::<Epilogue>().unwrap(), ep, "{ep}");
        }
        assert_eq!("none".parse::<Epilogue>().unwrap(), Epilogue::NONE);
        assert_eq!(Epilogue::NONE.to_string(), "none");
        assert_eq!("leaky_relu:0.2".parse::<Activation>().unwrap(), Activation::LeakyRelu(0.2));
        assert!("tanh".parse::<Activation>().unwrap_err().to_string().contains("unknown activation `tanh`"));
        assert!("bias+alpha=x".parse::<Epilogue>().is_err());
        assert!(Epilogue::NONE.with_alpha(f32::NAN).validate().is_err());
        assert!(!Epilogue::NONE.with_activation(Activation::Relu).is_none());
        // beta without a residual changes nothing.
        assert!(Epilogue::NONE.with_beta(2.0).is_none());
        assert!(!Epilogue::NONE.with_beta(2.0).with_residual().is_none());
    }

    #[test]
    fn reference_values() {
        let ep = Epilogue::NONE.with_scale().with_bias().with_residual().with_alpha(2.0).with_beta(0.5);
        // relu(2 * 3 * 0.5 + 1 + 0.5 * 4) = 6.
        assert_eq!(ep.with_activation(Activation::Relu).apply(3.0, 0.5, 1.0, 4.0), 6.0);
        assert_eq!(ep.with_activation(Activation::Relu6).apply(3.0, 1.0, 1.0, 4.0), 6.0);
        assert_eq!(ep.with_activation(Activation::Relu).apply(-3.0, 1.0, 1.0, 0.0), 0.0);
        assert!((Activation::LeakyRelu(0.1).apply(-2.0) + 0.2).abs() < 1e-7);
        // Known values: silu(1) = 1/(1+e^-1), gelu(1) = Phi(1) = 0.8413447460685429.
        assert!((Activation::Silu.apply(1.0) - 0.7310585786300049).abs() < 1e-15);
        assert!((Activation::GeluErf.apply(1.0) - 0.8413447460685429).abs() < 1e-15);
        assert!((Activation::GeluTanh.apply(1.0) - 0.8411919906082768).abs() < 1e-7);
        // GELU keeps its digits far out on the negative side: -5 * Phi(-5).
        assert!((Activation::GeluErf.apply(-5.0) / (-5.0 * 2.866515718791939e-7) - 1.0).abs() < 1e-12);
    }
}
