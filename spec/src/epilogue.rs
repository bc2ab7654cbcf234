//! The fused epilogue: what a kernel does to each fp32 accumulator before it rounds and stores
//! it, `y = act(alpha * acc * scale[k] + bias[k] + beta * residual)`, and the arguments that
//! describe it. Every convolution entry point takes [`EpilogueArgs`] after its 17 shape `i32`s
//! (in the order of [`epilogue_fields!`](crate::epilogue_fields)); a kernel that does not fuse
//! ignores them, and the host plans such kernels only with [`EpilogueArgs::NONE`].

/// Calls `$callback! { $ctx... field: type "doc", ... }` with the fields of [`EpilogueArgs`] in
/// the order the kernels take them as arguments, after the shape's. The kernel crate's
/// `conv_kernel!` declares one parameter per field from it; the host pushes them in this order.
#[macro_export]
macro_rules! epilogue_fields {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            scale: u64 "Device address of K fp32 per-output-channel factors (a folded BatchNorm's), or 0 for none.",
            bias: u64 "Device address of K fp32 per-output-channel addends, or 0 for none.",
            residual: u64 "Device address of a tensor of the output's shape, layout and element type (`y_bits`), or 0 for none.",
            residual_map: u64 "Device address of the residual's TMA tensor map, for the entries that take it (`crate::hopper::Config::takes_residual_map`; a 2-D {K, N*P*Q} map of the 16-bit NHWK residual, boxes {64, BM}, 128B swizzle), or 0: the kernel's threads load the residual.",
            act: u32 "The activation, an [`Act`] code.",
            act_arg: u32 "The activation's parameter as fp32 bits: LeakyReLU's negative slope; 0 otherwise.",
            alpha: u32 "fp32 bits of the factor on the convolution's sum.",
            beta: u32 "fp32 bits of the factor on the residual (read only with a residual)."
        }
    };
}

macro_rules! declare_epilogue_args {
    ($($field:ident: $ty:ident $doc:literal),*) => {
        /// The fused epilogue as the kernels see it: device addresses and fp32 bit patterns, so
        /// that the type is `Eq` and passes as plain kernel parameters.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct EpilogueArgs {
            $(#[doc = $doc] pub $field: $ty,)*
        }
    };
}
crate::epilogue_fields!(declare_epilogue_args);

/// The activations a kernel applies last, by their `act` code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Act {
    /// `v`.
    Identity = 0,
    /// `max(v, 0)`.
    Relu = 1,
    /// `min(max(v, 0), 6)`.
    Relu6 = 2,
    /// `v` for `v >= 0`, `slope * v` below (`act_arg` is the slope).
    LeakyRelu = 3,
    /// `v * sigmoid(v)`.
    Silu = 4,
    /// `v * sigmoid(2 * sqrt(2/pi) * (v + 0.044715 v^3))`, i.e. the tanh approximation of GELU.
    GeluTanh = 5,
    /// `v * (1 + erf(v / sqrt 2)) / 2`.
    GeluErf = 6,
}

impl Act {
    /// Every activation, in code order.
    pub const ALL: [Act; 7] = [Act::Identity, Act::Relu, Act::Relu6, Act::LeakyRelu, Act::Silu, Act::GeluTanh, Act::GeluErf];

    /// The activation with code `code`, if any.
    pub const fn from_code(code: u32) -> Option<Act> {
        if (code as usize) < Self::ALL.len() { Some(Self::ALL[code as usize]) } else { None }
    }
}

impl Act {
    /// Whether the activation is piecewise linear (identity, ReLU, ReLU6, LeakyReLU): four
    /// instructions an element without a branch, which the Hopper kernels apply to their
    /// accumulators in registers ([`in_registers`]).
    pub const fn is_linear(self) -> bool {
        matches!(self, Act::Identity | Act::Relu | Act::Relu6 | Act::LeakyRelu)
    }
}

/// The most fp32 accumulators a thread holds for [`in_registers`] to apply (a 64-row block
/// 128 columns wide). Beside 128 of them (a 64 x 256 block, or two 64 x 128 blocks), the
/// epilogue's operand loads spilled (ptxas, sm_90a).
pub const IN_REGISTERS_MAX_ACC: usize = 64;

/// Whether the Hopper kernels apply an epilogue with activation `act`, a bias (if `bias`) and
/// a residual (if `residual`) on a thread's `acc` fp32 accumulators in registers, as part of
/// the bare store (straight-line, deferred stores included), instead of staging them through
/// shared memory: piecewise linear activations after a bias (folded BatchNorms and conv biases;
/// each form of the code is a copy in every kernel, so the forms without a bias are left out),
/// at most [`IN_REGISTERS_MAX_ACC`] accumulators, with or without a residual (under ping-pong
/// since the thirty-fifth session: its pairs loaded into registers before each tile's mainloop,
/// where loaded in the epilogue they had spilled; or, where the tile takes the residual's map,
/// copied into shared memory by the producer, `crate::hopper::Config::takes_residual_map`).
/// Kernels and planner read this one rule.
pub const fn in_registers(act: Act, bias: bool, acc: usize) -> bool {
    act.is_linear() && bias && acc <= IN_REGISTERS_MAX_ACC
}

/// `2 * sqrt(2 / pi)`: the tanh GELU is `v * sigmoid(GELU_TANH_A * (v + GELU_TANH_B * v^3))`.
pub const GELU_TANH_A: f32 = 1.595_769_1;
/// The cubic coefficient of the tanh GELU.
pub const GELU_TANH_B: f32 = 0.044_715;

impl EpilogueArgs {
    /// The bare convolution: no scale, bias or residual, identity, alpha 1.
    pub const NONE: EpilogueArgs = EpilogueArgs { scale: 0, bias: 0, residual: 0, residual_map: 0, act: Act::Identity as u32, act_arg: 0, alpha: 0x3f80_0000, beta: 0 };

    /// Whether the epilogue leaves the accumulators as they are (the kernels then skip it).
    #[inline(always)]
    pub fn is_identity(&self) -> bool {
        self.scale == 0 && self.bias == 0 && self.residual == 0 && self.act == Act::Identity as u32 && self.alpha == Self::NONE.alpha
    }

    /// [`in_registers`] for these arguments and a thread's `acc` accumulators (an unknown act
    /// code: no).
    #[inline(always)]
    pub fn in_registers(&self, acc: usize) -> bool {
        match Act::from_code(self.act) {
            Some(act) => in_registers(act, self.bias != 0, acc),
            None => false,
        }
    }

    /// [`EpilogueArgs::in_registers`] on a Hopper kernel whose output is NCHW where
    /// `nchw_output`, which takes no residual in registers
    /// ([`crate::hopper::residual_in_registers`]): the kernels' rule, and through
    /// `Config::epilogue_in_registers_with` the planner's.
    #[inline(always)]
    pub fn in_registers_on(&self, acc: usize, nchw_output: bool) -> bool {
        self.in_registers(acc) && (self.residual == 0 || crate::hopper::residual_in_registers(nchw_output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_is_identity_and_codes_round_trip() {
        assert!(EpilogueArgs::NONE.is_identity());
        assert_eq!(f32::from_bits(EpilogueArgs::NONE.alpha), 1.0);
        assert!(!EpilogueArgs { act: Act::Relu as u32, ..EpilogueArgs::NONE }.is_identity());
        assert!(!EpilogueArgs { alpha: 2f32.to_bits(), ..EpilogueArgs::NONE }.is_identity());
        for (i, a) in Act::ALL.iter().enumerate() {
            assert_eq!(*a as u32, i as u32);
            assert_eq!(Act::from_code(i as u32), Some(*a));
        }
        assert_eq!(Act::from_code(7), None);
        let linear = Act::ALL.map(Act::is_linear);
        assert_eq!(linear, [true, true, true, true, false, false, false]);
        let relu = EpilogueArgs { act: Act::Relu as u32, bias: 64, ..EpilogueArgs::NONE };
        assert!(relu.in_registers(64));
        assert!(EpilogueArgs { residual: 128, ..relu }.in_registers(64));
        assert!(!relu.in_registers(128));
        assert!(!EpilogueArgs { act: Act::Silu as u32, ..relu }.in_registers(64));
        assert!(!EpilogueArgs { act: 9, ..relu }.in_registers(64));
        assert!(!EpilogueArgs { bias: 0, ..relu }.in_registers(64));
        // 2 * sqrt(2 / pi).
        assert!((GELU_TANH_A as f64 - 2.0 * (2.0 / core::f64::consts::PI).sqrt()).abs() < 1e-7);
    }
}
