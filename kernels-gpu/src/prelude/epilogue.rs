//! The fused epilogue on fp32 values (`convrs_spec::epilogue`): per output channel an affine map
//! of the accumulator, plus the residual, then the activation. A kernel calls [`Epilogue::of`]
//! once per output channel it writes and [`Epilogue::finish`] per element, before rounding;
//! kernels skip both when `ConvShape::ep` is the identity (a uniform branch).

use core::arch::asm;

use convrs_spec::epilogue::{Act, EpilogueArgs, GELU_TANH_A, GELU_TANH_B};

use super::elem::widen16;
use super::{fma, load_global_nc_f32, unroll};

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

    /// The factor of the accumulator: alpha times the channel's scale.
    #[inline(always)]
    pub fn mul(self) -> f32 {
        self.mul
    }

    /// The addend before the residual: the channel's bias, or 0.
    #[inline(always)]
    pub fn add(self) -> f32 {
        self.add
    }

    /// The finished value of accumulator `acc` with residual element `res` (0 without one).
    #[inline(always)]
    pub fn finish(self, ep: &EpilogueArgs, act: &Activation, acc: f32, res: f32) -> f32 {
        act.apply(self.affine(ep, acc, res))
    }

    /// [`Epilogue::finish`] before the activation, for kernels that apply it to several
    /// elements at once (`Activation::apply_all`).
    #[inline(always)]
    pub fn affine(self, ep: &EpilogueArgs, acc: f32, res: f32) -> f32 {
        acc * self.mul + self.add + f32::from_bits(ep.beta) * res
    }
}

/// The activation in one of three forms, so that a kernel's unrolled epilogue holds three
/// code paths per element, not one per activation (a branch on the form is uniform): piecewise
/// linear (`lo * v` below 0, clamped at `hi` above: identity, ReLU, ReLU6, LeakyReLU), a
/// sigmoid gate `v * sigmoid(a * v * (1 + b * v^2))` (SiLU, tanh GELU), or erf GELU.
#[derive(Clone, Copy)]
pub struct Activation {
    form: u32,
    /// Linear: the slope below 0 and the clamp above (`lo`, `hi`); gate: `a` and `b`. Two
    /// fields for both, so that a decoded activation held through a tile takes three registers.
    p: f32,
    q: f32,
}

const LINEAR: u32 = 0;
const GATE: u32 = 1;
const ERF: u32 = 2;

impl Activation {
    /// `ep`'s activation (an unknown code acts as the identity; the host sends known ones).
    #[inline(always)]
    pub fn of(ep: &EpilogueArgs) -> Activation {
        let linear = |lo: f32, hi: f32| Activation { form: LINEAR, p: lo, q: hi };
        match Act::from_code(ep.act) {
            Some(Act::Relu) => linear(0.0, f32::INFINITY),
            Some(Act::Relu6) => linear(0.0, 6.0),
            Some(Act::LeakyRelu) => linear(f32::from_bits(ep.act_arg), f32::INFINITY),
            Some(Act::Silu) => Activation { form: GATE, p: 1.0, q: 0.0 },
            Some(Act::GeluTanh) => Activation { form: GATE, p: GELU_TANH_A, q: GELU_TANH_B },
            Some(Act::GeluErf) => Activation { form: ERF, p: 0.0, q: 0.0 },
            Some(Act::Identity) | None => linear(1.0, f32::INFINITY),
        }
    }

    /// The activation of `v`. A NaN stays NaN (as in PyTorch): every comparison is false for
    /// it. `+ 0.0` makes ReLU's zeros positive, as PyTorch's are.
    #[inline(always)]
    pub fn apply(&self, v: f32) -> f32 {
        match self.form {
            // Compares and selects, not `linear`'s asm: the depthwise kernels call this form, and
            // asm in a loop body can keep the compiler from unrolling it (their arrays then go
            // to local memory).
            LINEAR => {
                let v = if v < 0.0 { v * self.p + 0.0 } else { v };
                if v > self.q { self.q } else { v }
            }
            GATE => self.gate(v),
            _ => gelu_erf(v),
        }
    }
}

impl Activation {
    /// The piecewise linear form: `lo * v + 0` below 0 (the `+ 0` makes ReLU's zeros
    /// positive), `v` above, clamped at `hi`, as `fma(lo, min(v, 0), max(v, 0))` and a min:
    /// four instructions where compares and selects took six. A NaN stays NaN: the `max` and
    /// the clamp propagate it (`.NaN`), the plain `min` drops it for the other operand, 0.
    /// Only for an activation whose form is linear (`Act::is_linear`).
    #[inline(always)]
    pub fn linear(&self, v: f32) -> f32 {
        min_nan(fma(self.p, min(v, 0.0), max_nan(v, 0.0)), self.q)
    }

    /// The sigmoid-gate form: `v * sigmoid(a * v * (1 + b * v^2))`.
    #[inline(always)]
    fn gate(&self, v: f32) -> f32 {
        v * sigmoid(self.p * v * (1.0 + self.q * v * v))
    }

    /// The activation of every element of `v`, the branch on the form taken once for all of
    /// them: a uniform branch around straight-line code, so a warp fetches only its form's
    /// instructions (one branch per element spread the three forms' code through the
    /// epilogue, and instruction fetch stalled: notes/epilogue.md).
    #[inline(always)]
    pub fn apply_all<const L: usize>(&self, v: &mut [f32; L]) {
        const { assert!(L <= 16) };
        // Unrolled by hand: a loop over the array left it in local memory.
        match self.form {
            LINEAR => unroll!(16: L, i => { v[i] = self.linear(v[i]) }),
            GATE => unroll!(16: L, i => { v[i] = self.gate(v[i]) }),
            _ => unroll!(16: L, i => { v[i] = gelu_erf(v[i]) }),
        }
    }
}

/// ReLU as one `max.NaN`: `+0` below 0 and for `-inf`, NaN stays NaN. The linear form's value
/// for every finite `v`; at `-inf` the linear form gives NaN (`0 * -inf` in its FMA).
#[inline(always)]
pub fn relu(v: f32) -> f32 {
    max_nan(v, 0.0)
}

/// GELU in its erf form, `v * (1 + erf(v / sqrt 2)) / 2`, through [`erfc`].
#[inline(always)]
fn gelu_erf(v: f32) -> f32 {
    0.5 * v * erfc(-v * core::f32::consts::FRAC_1_SQRT_2)
}

/// `1 / (1 + e^-x)`; `2^(-x log2 e)` by `ex2.approx` (relative error about 2^-22 plus the
/// rounding of its argument), so about 1e-6 relative for |x| < 20 (tests allow for it), and
/// the reciprocal within 1 ulp.
#[inline(always)]
fn sigmoid(x: f32) -> f32 {
    rcp(1.0 + exp2(-x * core::f32::consts::LOG2_E))
}

/// `min(a, b)`, a NaN operand giving the other: `min.f32`.
#[inline(always)]
fn min(a: f32, b: f32) -> f32 {
    let y: f32;
    // SAFETY: register arithmetic only.
    unsafe { asm!("min.f32 {y}, {a}, {b};", y = out(reg32) y, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack)) };
    y
}

/// `max(a, b)`, NaN if either is: `max.NaN.f32` (sm_80).
#[inline(always)]
fn max_nan(a: f32, b: f32) -> f32 {
    let y: f32;
    // SAFETY: register arithmetic only.
    unsafe { asm!("max.NaN.f32 {y}, {a}, {b};", y = out(reg32) y, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack)) };
    y
}

/// `min(a, b)`, NaN if either is: `min.NaN.f32` (sm_80).
#[inline(always)]
fn min_nan(a: f32, b: f32) -> f32 {
    let y: f32;
    // SAFETY: register arithmetic only.
    unsafe { asm!("min.NaN.f32 {y}, {a}, {b};", y = out(reg32) y, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack)) };
    y
}

/// `1 / x` by `rcp.approx.ftz.f32` (within 1 ulp): the IEEE division `/` compiles to a
/// subroutine with a slow path, several times the instructions. Its arguments here lie in
/// [1, inf], where flushing subnormals changes nothing.
#[inline(always)]
fn rcp(x: f32) -> f32 {
    let y: f32;
    // SAFETY: register arithmetic only.
    unsafe { asm!("rcp.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x, options(pure, nomem, nostack)) };
    y
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
    let t = rcp(1.0 + 0.5 * z);
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

/// Residual elements `off` and `off + 1` as [`residual_pair`] reads them, left in their raw
/// bits (`half`: both in the first word) for [`widen_pair`] to widen later, and issued where
/// the call is: the asm is not `pure`, so LLVM neither sinks the load to its use nor drops it.
///
/// # Safety
/// As [`residual_pair`].
#[inline(always)]
pub unsafe fn residual_pair_ahead(res: u64, off: usize, half: bool) -> [u32; 2] {
    // SAFETY: as the caller guarantees.
    unsafe {
        if half {
            let v: u32;
            asm!("ld.global.nc.u32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) (res as *const u16).add(off), options(readonly, nostack));
            [v, 0]
        } else {
            let (a, b): (u32, u32);
            asm!("ld.global.nc.v2.u32 {{{a}, {b}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, p = in(reg64) (res as *const f32).add(off), options(readonly, nostack));
            [a, b]
        }
    }
}

/// The two elements [`residual_pair_ahead`] loaded, as [`residual_pair`] returns them.
#[inline(always)]
pub fn widen_pair(v: [u32; 2], half: bool, bf16: bool) -> [f32; 2] {
    if half { [widen(v[0] as u16, bf16), widen((v[0] >> 16) as u16, bf16)] } else { [f32::from_bits(v[0]), f32::from_bits(v[1])] }
}

/// Residual elements `off..off + 8` as [`residual_pair`] reads two, in 16-byte loads.
///
/// # Safety
/// As [`residual_pair`] for eight elements, aligned to 16 bytes.
#[inline(always)]
pub unsafe fn residual_eight(res: u64, off: usize, half: bool, bf16: bool) -> [f32; 8] {
    // SAFETY: as the caller guarantees.
    unsafe {
        if half {
            let (a, b, c, d): (u32, u32, u32, u32);
            asm!("ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                p = in(reg64) (res as *const u16).add(off), options(pure, readonly, nostack));
            let w = |v: u32| [widen(v as u16, bf16), widen((v >> 16) as u16, bf16)];
            let (a, b, c, d) = (w(a), w(b), w(c), w(d));
            [a[0], a[1], b[0], b[1], c[0], c[1], d[0], d[1]]
        } else {
            super::load_global_nc_f32x8((res as *const f32).add(off))
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
