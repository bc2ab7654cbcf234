//! Family 4, depthwise convolution (groups = C, K = m*C; see `convrs_spec::depthwise`): each
//! output channel reads one input channel, so a layer is a few FMAs per byte moved and these
//! kernels aim at the copy bandwidth. fp32 accumulation for every element type ([`Elem`]).
//!
//! - [`nchw`]: NCHW in and out; a thread computes a column of `NCHW_ROWS` outputs of one plane,
//!   the lanes along Q (warp-wide runs for loads and stores), each filter tap loaded once per
//!   column.
//! - [`nhwc`]: NHWC in and out, the filter RSK; a thread computes `VEC` channels of `NHWC_COLS`
//!   adjacent outputs, one vector load per input pixel and tap, the lanes along the channels.
//!
//! Both test once per thread whether its whole input window is inside the image and take an
//! unchecked copy of the tap loop if so; only border threads predicate each load.

pub mod nchw;
pub mod nhwc;

use crate::prelude::elem::{Bf16, F16, F32};

/// A thread's first input row and column (padding subtracted) and its filter size: what both
/// layouts' tap loops read.
#[derive(Clone, Copy)]
struct Window {
    iy0: i32,
    ix0: i32,
    r: i32,
    s: i32,
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
