//! Family 4, depthwise convolution (groups = C, K = m*C; see `convrs_spec::depthwise`): each
//! output channel reads one input channel, so a layer is a few FMAs per byte moved and these
//! kernels aim at the copy bandwidth. fp32 accumulation for every element type ([`Elem`]).
//!
//! - [`nchw`]: NCHW in and out; a thread computes a column of `NCHW_ROWS` outputs of one plane,
//!   the lanes along Q (warp-wide runs for loads and stores), each filter tap loaded once per
//!   column.
//! - [`nhwc`]: NHWC in and out, the filter RSK; a thread computes `VEC` channels of `NHWC_COLS`
//!   adjacent outputs, one vector load per input pixel and tap, the lanes along the channels.
//! - [`strip`]: step 2 of `nhwc` for the common layers (multiplier 1, 3x3, 5x5 or 7x7 at stride
//!   1): a block of outputs a thread, each input row loaded once for every output row it feeds.
//! - [`nchw_strip`]: step 2 of `nchw` (3x3, 5x5 or 7x7 at stride 1 or 2): the same sums with one
//!   channel a thread, the lanes along Q.
//! - [`tile`]: step 3 of `nhwc` (multiplier 1, 3x3, 5x5 or 7x7 at stride 1 or 2): a block stages
//!   an input tile in shared memory by `cp.async`, two stages in a persistent loop, and its
//!   threads compute the strip's sums from there.
//!
//! `nchw`, `nhwc` and `strip` test once per thread whether its whole input window is inside the
//! image and take an unchecked copy of the tap loop if so; only border threads predicate each
//! load. `nchw_strip` predicates every load instead: its lanes run along a row, so nearly every
//! warp holds a border thread and would run both copies.

pub mod nchw;
pub mod nchw_strip;
pub mod nhwc;
pub mod strip;
pub mod tile;

use crate::prelude::elem::{store_out, store_out4, Bf16, Elem, F16, F32};
use crate::prelude::epilogue::{residual_one, Activation, Epilogue};
use crate::prelude::*;

/// A thread's first input row and column (padding subtracted) and its filter size: what both
/// layouts' tap loops read.
#[derive(Clone, Copy)]
struct Window {
    iy0: i32,
    ix0: i32,
    r: i32,
    s: i32,
}

/// The fused epilogue of a thread's `VEC` channels k0..k0 + VEC and the store of their outputs,
/// one output pixel at a time: what both NHWC kernels end with.
struct Finish<const VEC: usize> {
    fused: bool,
    half: bool,
    act: Activation,
    channels: [Epilogue; VEC],
}

impl<const VEC: usize> Finish<VEC> {
    /// # Safety
    /// k0 + VEC <= K, and the epilogue's buffers are as the host planned them.
    #[inline(always)]
    unsafe fn new(sh: &ConvShape, k0: i32) -> Self {
        let ep = &sh.ep;
        let fused = !ep.is_identity();
        // SAFETY: k0 + v < K; the epilogue's buffers as the host planned them.
        let channels = core::array::from_fn(|v| if fused { unsafe { Epilogue::of(ep, (k0 + v as i32) as u32) } } else { Epilogue::IDENTITY });
        Finish { fused, half: sh.y_bits == 16, act: Activation::of(ep), channels }
    }

    /// Finishes and stores the sums `a` of output element `out` (channel k0 of its pixel) on.
    ///
    /// # Safety
    /// Channels k0..k0 + VEC of the output pixel at `out` are inside the output (so inside the
    /// residual of its shape) and this thread's alone; with `VEC = 4`, `out` is a multiple of 4
    /// and `y` 16-byte aligned.
    #[inline(always)]
    unsafe fn store<E: Elem>(&self, y: *mut f32, sh: &ConvShape, out: usize, mut a: [f32; VEC]) {
        if self.fused {
            unroll!(4: VEC, v => {
                // SAFETY: as the caller guarantees.
                a[v] = unsafe { self.fused_one::<E>(sh, out + v, v, a[v]) };
            });
        }
        // SAFETY: as the caller guarantees.
        unsafe {
            if VEC == 4 {
                store_out4::<E>(y, out, [a[0], a[1], a[2], a[3]], self.half);
            } else {
                store_out::<E>(y, out, a[0], self.half);
            }
        }
    }

    /// The sum `a` of output element `out`, channel k0 + `v` of its pixel, through the epilogue
    /// (for `fused` only: the identity would read no buffer but cost the arithmetic).
    ///
    /// # Safety
    /// `v < VEC`, and `out` is inside the output (so inside the residual of its shape).
    #[inline(always)]
    unsafe fn fused_one<E: Elem>(&self, sh: &ConvShape, out: usize, v: usize, a: f32) -> f32 {
        let ep = &sh.ep;
        // SAFETY: as the caller guarantees.
        let r = if ep.residual != 0 { unsafe { residual_one(ep.residual, out, self.half, E::BF16) } } else { 0.0 };
        self.channels[v].finish(ep, &self.act, a, r)
    }
}

/// Declares the entries of `convrs_spec::depthwise_entries!`, one instantiation each.
macro_rules! entries {
    ($(($layout:ident, $t:ident, $taps:literal, $vec:literal: $name:ident))*) => {
        $(entries!(@one $layout, $t, $taps, $vec, $name);)*
    };
    (@one $layout:ident, f32, $taps:literal, $vec:literal, $name:ident) => {
        entries!(@entry $layout, f32, F32, $taps, $vec, $name);
    };
    (@one $layout:ident, f16, $taps:literal, $vec:literal, $name:ident) => {
        entries!(@entry $layout, u16, F16, $taps, $vec, $name);
    };
    (@one $layout:ident, bf16, $taps:literal, $vec:literal, $name:ident) => {
        entries!(@entry $layout, u16, Bf16, $taps, $vec, $name);
    };
    (@entry nchw, $raw:ty, $e:ident, $taps:literal, $vec:literal, $name:ident) => {
        crate::conv_kernel!(
            /// Depthwise convolution on NCHW data (see [`nchw::conv`]).
            fn $name(x: *const $raw, w: *const $raw, y: *mut f32) => nchw::conv::<$e, $taps>
        );
    };
    (@entry nhwc, $raw:ty, $e:ident, $taps:literal, $vec:literal, $name:ident) => {
        crate::conv_kernel!(
            /// Depthwise convolution on NHWC data (see [`nhwc::conv`]).
            fn $name(x: *const $raw, w: *const $raw, y: *mut f32) => nhwc::conv::<$e, $taps, $vec>
        );
    };
}
convrs_spec::depthwise_entries!(entries);

/// Declares the entries of a strip table (`convrs_spec::depthwise_strip_entries!`,
/// `depthwise_nchw_strip_entries!`), one instantiation each of `$module::conv`.
macro_rules! strip_entries {
    ($module:ident $doc:literal $(($t:ident, $taps:literal, $stride:literal, $rows:literal, $cols:literal: $name:ident))*) => {
        $(strip_entries!(@one $module, $doc, $t, $taps, $stride, $rows, $cols, $name);)*
    };
    (@one $module:ident, $doc:literal, f32, $($rest:tt)*) => { strip_entries!(@entry $module, $doc, f32, F32, $($rest)*); };
    (@one $module:ident, $doc:literal, f16, $($rest:tt)*) => { strip_entries!(@entry $module, $doc, u16, F16, $($rest)*); };
    (@one $module:ident, $doc:literal, bf16, $($rest:tt)*) => { strip_entries!(@entry $module, $doc, u16, Bf16, $($rest)*); };
    (@entry $module:ident, $doc:literal, $raw:ty, $e:ident, $taps:literal, $stride:literal, $rows:literal, $cols:literal, $name:ident) => {
        crate::conv_kernel!(
            #[doc = $doc]
            fn $name(x: *const $raw, w: *const $raw, y: *mut f32) => $module::conv::<$e, $taps, $stride, $rows, $cols>
        );
    };
}
convrs_spec::depthwise_strip_entries!(strip_entries, strip, "Depthwise convolution on NHWC data, a block of outputs a thread (see [`strip::conv`]).");
convrs_spec::depthwise_tile_entries!(strip_entries, tile, "Depthwise convolution on NHWC data, an input tile staged in shared memory a block (see [`tile::conv`]).");
convrs_spec::depthwise_nchw_strip_entries!(strip_entries, nchw_strip, "Depthwise convolution on NCHW data, a block of outputs of a plane a thread (see [`nchw_strip::conv`]).");
