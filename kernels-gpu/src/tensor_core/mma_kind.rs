//! What one k-step of the `mma.sync` mainloop ([`super::implicit_gemm`]) multiplies: the element
//! type of the operands and the tensor-core instruction. A k-step is 32 bytes of every shared
//! row for each kind (16 fp16/bf16 channels for m16n8k16, 8 fp32 channels for m16n8k8 tf32), so
//! the pipeline, the swizzle and the `ldmatrix` fragments are the same bytes for all of them;
//! only what is done to a fragment before its MMAs, and which MMA, differ.

use crate::prelude::matrix::{mma_m16n8k16_bf16_f32, mma_m16n8k16_f16_f32, mma_m16n8k8_tf32, tf32_rna};
use crate::prelude::unroll;

/// The element type and MMA of a k-step, implemented by zero-sized types; every method is
/// inlined into the kernel.
pub trait MmaKind {
    /// The operands' element type in global memory.
    type Elem;
    /// Channels per 16-byte chunk: 8 of 16-bit data, 4 of fp32.
    const CHUNK: i32;
    /// Whether 16-bit outputs are bf16 (fp32 kinds write fp32 only: the plan allows nothing else).
    const BF16: bool;
    /// Whether each k-tile's products are summed from zero and added to the accumulators in
    /// fp32 (round to nearest) at the k-tile's end, rather than accumulated by the tensor cores
    /// across the whole reduction: the tensor cores' accumulation truncates, which 3xTF32's
    /// accuracy cannot afford (`hopper::math::Tf32x3` measured it).
    const KTILE_SUMS: bool;
    /// `d += a * b` on one m16n8 tile, from the registers `ldmatrix.x4` gave (an A fragment of
    /// 16 rows, a B fragment of 8 columns). A kind that first rounds or splits a fragment does
    /// it here, per MMA: the work is a pure function of the fragment, so LLVM computes it once
    /// per fragment and k-step (common subexpressions), and the 16-bit kinds' code stays what
    /// it was before the kinds existed.
    ///
    /// # Safety
    /// Every lane of the warp executes it together (converged control flow).
    unsafe fn mma(d: &mut [f32; 4], a: &[u32; 4], b: &[u32; 2]);
}

/// fp16 data, `mma.sync` m16n8k16 f16.
pub struct F16;
/// bf16 data, `mma.sync` m16n8k16 bf16.
pub struct Bf16;
/// fp32 data read as TF32: each element's low 13 bits cleared (what the tensor cores read of an
/// fp32 operand, so the results match the Hopper TF32 kernels'), `mma.sync` m16n8k8.
pub struct Tf32;
/// fp32 data to about fp32 accuracy (3xTF32): each fragment element split into hi = tf32(a) and
/// lo = tf32(a - hi) (a - hi is exact in fp32), each product lo*hi + hi*lo + hi*hi, the small
/// terms first; each k-step's sums added in fp32 to the k-tile's, kept apart
/// ([`MmaKind::KTILE_SUMS`]).
pub struct Tf32x3;

/// The bits of an fp32 value the tensor cores read as tf32: sign, exponent, 10 mantissa bits.
const TF32_MASK: u32 = 0xffff_e000;

macro_rules! sixteen_bit {
    ($kind:ident, $bf16:literal, $mma:ident) => {
        impl MmaKind for $kind {
            type Elem = u16;
            const CHUNK: i32 = 8;
            const BF16: bool = $bf16;
            const KTILE_SUMS: bool = false;
            #[inline(always)]
            unsafe fn mma(d: &mut [f32; 4], a: &[u32; 4], b: &[u32; 2]) {
                // SAFETY: as the caller guarantees.
                unsafe { $mma(d, *a, *b) }
            }
        }
    };
}
sixteen_bit!(F16, false, mma_m16n8k16_f16_f32);
sixteen_bit!(Bf16, true, mma_m16n8k16_bf16_f32);

impl MmaKind for Tf32 {
    type Elem = f32;
    const CHUNK: i32 = 4;
    const BF16: bool = false;
    const KTILE_SUMS: bool = false;
    #[inline(always)]
    unsafe fn mma(d: &mut [f32; 4], a: &[u32; 4], b: &[u32; 2]) {
        let a = [a[0] & TF32_MASK, a[1] & TF32_MASK, a[2] & TF32_MASK, a[3] & TF32_MASK];
        // SAFETY: as the caller guarantees.
        unsafe { mma_m16n8k8_tf32(d, a, [b[0] & TF32_MASK, b[1] & TF32_MASK]) }
    }
}

/// `(hi, lo)` of one fp32 element ([`Tf32x3`]).
#[inline(always)]
fn split(v: u32) -> (u32, u32) {
    let hi = tf32_rna(v);
    (hi, tf32_rna((f32::from_bits(v) - f32::from_bits(hi)).to_bits()))
}

impl MmaKind for Tf32x3 {
    type Elem = f32;
    const CHUNK: i32 = 4;
    const BF16: bool = false;
    const KTILE_SUMS: bool = true;
    #[inline(always)]
    unsafe fn mma(d: &mut [f32; 4], a: &[u32; 4], b: &[u32; 2]) {
        let (mut a_hi, mut a_lo) = ([0; 4], [0; 4]);
        unroll!(4: 4, i => {
            (a_hi[i], a_lo[i]) = split(a[i]);
        });
        let (b0, b1) = (split(b[0]), split(b[1]));
        let (b_hi, b_lo) = ([b0.0, b1.0], [b0.1, b1.1]);
        // The step's three MMAs summed from zero, then added in fp32 (round to nearest): the
        // tensor cores' accumulation truncates at about 2^-24 of the accumulator an MMA, which
        // over a k-tile's 12 gave more error than FMA's on short reductions
        // (`convrs_spec::hopper::STEP_SUMS_MAX_KTILES` has the figures).
        let mut s = [0.0f32; 4];
        // SAFETY: as the caller guarantees.
        unsafe {
            mma_m16n8k8_tf32(&mut s, a_lo, b_hi);
            mma_m16n8k8_tf32(&mut s, a_hi, b_lo);
            mma_m16n8k8_tf32(&mut s, a_hi, b_hi);
        }
        unroll!(4: 4, e => {
            d[e] += s[e];
        });
    }
}
