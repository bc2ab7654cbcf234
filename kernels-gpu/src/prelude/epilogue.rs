//! The fused epilogue on fp32 values (`convrs_spec::epilogue`): per output channel an affine map
//! of the accumulator, plus the residual, then the activation. A kernel calls [`Epilogue::of`]
//! once per output channel it writes and [`Epilogue::finish`] per element, before rounding;
//! kernels skip both when `ConvShape::ep` is the identity (a uniform branch).

use core::arch::asm;

use convrs_spec::epilogue::{Act, EpilogueArgs, GELU_TANH_A, GELU_TANH_B};

use super::elem::widen16;
use super::load_global_nc_f32;

/// One output channel's share of the epilogue: `v = acc * mul + add` (alpha, scale and bias
/// folded), then `+ beta * residual` and the activation.
#[derive(Clone, Copy)]
pub struct Epilogue {
    mul: f32,
    add: f32,
}

impl Epilogue {
    /// `v = acc`: what [`Epilogue::of`] gives for [`EpilogueArgs::NONE`].
    pub const IDENTITY: Epilogue = Epilogue { mul: 1.0, add: 0.0 };

    /// Reads output channel `k`'s scale and bias.
    ///
    /// # Safety
    /// `ep`'s scale and bias addresses (where not 0) hold more than `k` fp32 values that nobody
    /// writes during the launch.
    #[inline(always)]
    pub unsafe fn of(ep: &EpilogueArgs, k: u32) -> Epilogue {
        let alpha = f32::from_bits(ep.alpha);
        // SAFETY: as the caller guarantees.
        let mul = if ep.scale != 0 { alpha * unsafe { load_global_nc_f32((ep.scale as *const f32).add(k as usize)) } } else { alpha };
        // SAFETY: as the caller guarantees.
        let add = if ep.bias != 0 { unsafe { load_global_nc_f32((ep.bias as *const f32).add(k as usize)) } } else { 0.0 };
        Epilogue { mul, add }
    }

    /// The finished value of accumulator `acc` with residual element `res` (0 without one).
    #[inline(always)]
    pub fn finish(self, ep: &EpilogueArgs, acc: f32, res: f32) -> f32 {
        activate(ep, acc * self.mul + self.add + f32::from_bits(ep.beta) * res)
    }
}

const RELU: u32 = Act::Relu as u32;
const RELU6: u32 = Act::Relu6 as u32;
const LEAKY: u32 = Act::LeakyRelu as u32;
const SILU: u32 = Act::Silu as u32;
const GELU_TANH: u32 = Act::GeluTanh as u32;
const GELU_ERF: u32 = Act::GeluErf as u32;

/// `ep`'s activation of `v`. NaN stays NaN (as in PyTorch): the comparisons are written so that
/// a NaN takes the branch that returns it.
#[inline(always)]
pub fn activate(ep: &EpilogueArgs, v: f32) -> f32 {
    match ep.act {
        RELU => {
            if v < 0.0 { 0.0 } else { v }
        }
        RELU6 => {
            if v < 0.0 {
                0.0
            } else if v > 6.0 {
                6.0
            } else {
                v
            }
        }
        LEAKY => {
            if v < 0.0 { v * f32::from_bits(ep.act_arg) } else { v }
        }
        SILU => v * sigmoid(v),
        GELU_TANH => v * sigmoid(GELU_TANH_A * v * (1.0 + GELU_TANH_B * v * v)),
        GELU_ERF => 0.5 * v * erfc(-v * core::f32::consts::FRAC_1_SQRT_2),
        _ => v,
    }
}

/// `1 / (1 + e^-x)`; `2^(-x log2 e)` by `ex2.approx` (relative error about 2^-22 plus the
/// rounding of its argument), so about 1e-6 relative for |x| < 20 (tests allow for it).
#[inline(always)]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp2(-x * core::f32::consts::LOG2_E))
}

/// `2^x` by `ex2.approx.ftz.f32`: +inf above 128, 0 below -150.
#[inline(always)]
fn exp2(x: f32) -> f32 {
    let y: f32;
    // SAFETY: register arithmetic only.
    unsafe { asm!("ex2.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x, options(pure, nomem, nostack)) };
    y
}

/// The complementary error function with relative error below 1.2e-7 everywhere (Numerical
/// Recipes' Chebyshev fit, `erfcc`) before fp32 rounding; relative, not absolute, so that GELU's
/// small negative outputs (`v * erfc(|v| / sqrt 2) / 2`) keep their digits.
#[inline(always)]
fn erfc(x: f32) -> f32 {
    let z = if x < 0.0 { -x } else { x };
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.265_512_2
        + t * (1.000_023_7 + t * (0.374_091_96 + t * (0.096_784_18 + t * (-0.186_288_06 + t * (0.278_868_07 + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * exp2((p - z * z) * core::f32::consts::LOG2_E);
    if x < 0.0 { 2.0 - r } else { r }
}

/// Residual elements `off` and `off + 1` of an output-typed tensor at address `res`: fp32, or
/// (`half`) the 16-bit type (bf16 if `bf16`, else fp16), widened. Both flags are constants or
/// uniform where kernels call it.
///
/// # Safety
/// `res` holds elements `off..off + 2` of that width, aligned to the pair, that nobody writes
/// during the launch.
#[inline(always)]
pub unsafe fn residual_pair(res: u64, off: usize, half: bool, bf16: bool) -> [f32; 2] {
    // SAFETY: as the caller guarantees.
    unsafe {
        if half {
            let v: u32;
            asm!("ld.global.nc.u32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) (res as *const u16).add(off), options(pure, readonly, nostack));
            [widen(v as u16, bf16), widen((v >> 16) as u16, bf16)]
        } else {
            let p = (res as *const f32).add(off);
            [load_global_nc_f32(p), load_global_nc_f32(p.add(1))]
        }
    }
}

/// Residual element `off` as [`residual_pair`] reads two.
///
/// # Safety
/// As [`residual_pair`] for one element.
#[inline(always)]
pub unsafe fn residual_one(res: u64, off: usize, half: bool, bf16: bool) -> f32 {
    // SAFETY: as the caller guarantees.
    unsafe {
        if half {
            widen(super::load_global_nc_u16((res as *const u16).add(off)), bf16)
        } else {
            load_global_nc_f32((res as *const f32).add(off))
        }
    }
}

/// A 16-bit element widened: bf16 if `bf16`, else fp16.
#[inline(always)]
fn widen(h: u16, bf16: bool) -> f32 {
    if bf16 { widen16::<true>(h) } else { widen16::<false>(h) }
}
