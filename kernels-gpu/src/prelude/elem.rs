//! The element types kernels read and write as fp32 arithmetic: loads widen to `f32`, stores
//! round from it (to nearest even). The memory-bound kernels (depthwise) compute on any type
//! through this one trait.

use core::arch::asm;

use super::matrix::pack_16x2;
use super::{load_global_nc_f32, load_global_nc_f32x4, load_global_nc_u16, store_global_f32x4, F32x4};

/// fp32, fp16 or bf16 data, as the kernels see it.
pub trait Elem {
    /// How one element is stored: `f32` or the 16-bit pattern.
    type Raw: Copy;
    /// Whether a 16-bit element is bf16 (else fp16; fp32 data writes 16-bit outputs as fp16).
    const BF16: bool;

    /// Loads one element through the read-only path, widened to fp32.
    ///
    /// # Safety
    /// `p` is valid global memory for one element that nobody writes during the launch.
    unsafe fn load(p: *const Self::Raw) -> f32;

    /// Loads four consecutive elements as one vector access (16 bytes of fp32, 8 of 16-bit).
    ///
    /// # Safety
    /// As [`Elem::load`] for four elements, and `p` aligned to the access (4 elements).
    unsafe fn load4(p: *const Self::Raw) -> [f32; 4];

    /// Rounds `a` and `b` to this 16-bit type, packed with `a` in the lower half (fp32 data
    /// never stores 16-bit outputs, its kernels being planned with 32-bit ones: it packs fp16).
    fn pack2(a: f32, b: f32) -> u32;
}

/// fp32 data.
pub struct F32;
/// IEEE half-precision data.
pub struct F16;
/// bfloat16 data.
pub struct Bf16;

impl Elem for F32 {
    type Raw = f32;
    const BF16: bool = false;
    #[inline(always)]
    fn pack2(a: f32, b: f32) -> u32 {
        pack_16x2::<false>(a, b)
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> f32 {
        // SAFETY: the caller's guarantee, passed on.
        unsafe { load_global_nc_f32(p) }
    }
    #[inline(always)]
    unsafe fn load4(p: *const f32) -> [f32; 4] {
        // SAFETY: the caller's guarantee (16-byte aligned), passed on.
        unsafe { load_global_nc_f32x4(p) }.0
    }
}

/// Two 16-bit elements packed in a `u32` (the first in the lower half), widened.
#[inline(always)]
fn widen_pair<const BF16: bool>(v: u32) -> [f32; 2] {
    [widen16::<BF16>(v as u16), widen16::<BF16>((v >> 16) as u16)]
}

/// One 16-bit element widened to fp32 (exact).
#[inline(always)]
pub fn widen16<const BF16: bool>(h: u16) -> f32 {
    if BF16 {
        // bf16 is the upper half of an fp32.
        f32::from_bits((h as u32) << 16)
    } else {
        let f: f32;
        // SAFETY: register arithmetic only.
        unsafe { asm!("cvt.f32.f16 {f}, {h};", f = out(reg32) f, h = in(reg16) h, options(pure, nomem, nostack)) };
        f
    }
}

/// Loads eight bytes as two 32-bit words through the read-only path.
///
/// # Safety
/// `p` is 8-byte aligned global memory valid for 8 bytes that nobody writes during the launch.
#[inline(always)]
unsafe fn load_global_nc_u32x2(p: *const u16) -> [u32; 2] {
    let (a, b): (u32, u32);
    // SAFETY: the caller guarantees alignment, validity and that no one writes this memory.
    unsafe { asm!("ld.global.nc.v2.u32 {{{a}, {b}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, p = in(reg64) p, options(pure, readonly, nostack)) };
    [a, b]
}

macro_rules! half_elem {
    ($t:ident, $bf16:literal) => {
        impl Elem for $t {
            type Raw = u16;
            const BF16: bool = $bf16;
            #[inline(always)]
            fn pack2(a: f32, b: f32) -> u32 {
                pack_16x2::<$bf16>(a, b)
            }
            #[inline(always)]
            unsafe fn load(p: *const u16) -> f32 {
                // SAFETY: the caller's guarantee, passed on.
                widen16::<$bf16>(unsafe { load_global_nc_u16(p) })
            }
            #[inline(always)]
            unsafe fn load4(p: *const u16) -> [f32; 4] {
                // SAFETY: the caller's guarantee (8-byte aligned), passed on.
                let [a, b] = unsafe { load_global_nc_u32x2(p) };
                let ([x0, x1], [x2, x3]) = (widen_pair::<$bf16>(a), widen_pair::<$bf16>(b));
                [x0, x1, x2, x3]
            }
        }
    };
}
half_elem!(F16, false);
half_elem!(Bf16, true);

/// Stores output element `i` of `y`: fp32, or (`half`, from `ConvShape::y_bits == 16`) rounded
/// to the input's 16-bit type `E`.
///
/// # Safety
/// `y` holds at least `i + 1` elements of the stored width; no other thread writes element `i`.
#[inline(always)]
pub unsafe fn store_out<E: Elem>(y: *mut f32, i: usize, v: f32, half: bool) {
    // SAFETY: as the caller guarantees.
    unsafe {
        if half {
            *(y as *mut u16).add(i) = E::pack2(v, 0.0) as u16;
        } else {
            *y.add(i) = v;
        }
    }
}

/// Stores output elements `i..i + 4` of `y` as one vector access, as [`store_out`].
///
/// # Safety
/// As [`store_out`] for four elements, and `i` a multiple of 4 with `y` 16-byte aligned.
#[inline(always)]
pub unsafe fn store_out4<E: Elem>(y: *mut f32, i: usize, v: [f32; 4], half: bool) {
    // SAFETY: as the caller guarantees: 8-byte (16-bit) or 16-byte (fp32) aligned and in bounds.
    unsafe {
        if half {
            let w = [E::pack2(v[0], v[1]), E::pack2(v[2], v[3])];
            let p = (y as *mut u16).add(i) as *mut u32;
            asm!("st.global.v2.b32 [{p}], {{{a}, {b}}};", p = in(reg64) p, a = in(reg32) w[0], b = in(reg32) w[1], options(nostack));
        } else {
            store_global_f32x4(y.add(i), F32x4(v));
        }
    }
}
