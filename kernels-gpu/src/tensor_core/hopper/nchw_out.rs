//! Step 16, `Producer::WsTmaNchw`: steps 7, 10 and 12 on NHWC input writing the output NCHW.
//!
//! An NCHW caller of an NHWC kernel pays two transposes around it; the output's can go: the
//! accumulator tile (rows output pixels, columns channels) is stored into the NCHW planes
//! directly, each column's pixels contiguous within an image, through shared memory
//! (`epilogue::store_nchw`, which applies the fused epilogue there too). Everything else is
//! [`Nhwc`]'s.
//!
//! ```text
//! y[n][k][p][q]  at (n*K + k)*P*Q + p*Q + q      GEMM row m = n*P*Q + p*Q + q, column k
//! ```

use super::epilogue::NchwRows;
use crate::prelude::ConvShape;
use crate::tensor_core::implicit_gemm::{divmod, Operands};
use crate::tensor_core::nhwc::Nhwc;

/// NHWC input, KRSC filter, NCHW output.
pub struct NhwcToNchw;

/// [`NhwcToNchw`]'s output rows for `epilogue::store_nchw`.
pub(super) struct PixelRows<'a>(&'a ConvShape);

impl NchwRows for PixelRows<'_> {
    const ALONG_PLANES: bool = true;
    const MATRIX: bool = true;
    #[inline(always)]
    fn row_base(&self, row: u32) -> u32 {
        NhwcToNchw::row_base(self.0, row)
    }
    #[inline(always)]
    fn plane(&self) -> u32 {
        NhwcToNchw::col_stride(self.0)
    }
    /// An image starts on a multiple of P*Q rows.
    #[inline(always)]
    fn run(&self) -> u32 {
        NhwcToNchw::col_stride(self.0)
    }
    #[inline(always)]
    fn inside(&self, row: u32, col: u32) -> bool {
        NhwcToNchw::y_in(self.0, row, col)
    }
    #[inline(always)]
    fn sixteen(&self) -> bool {
        self.0.y_bits == 16
    }
    #[inline(always)]
    fn channels(&self) -> u32 {
        self.0.k as u32
    }
}

impl NhwcToNchw {
    /// Its output rows, for the staged NCHW store.
    #[inline(always)]
    pub(super) fn rows(sh: &ConvShape) -> PixelRows<'_> {
        PixelRows(sh)
    }

    /// Offset of `y` element (GEMM row `m`, output channel 0): image n's plane 0 at the row's
    /// pixel. One division a row, so the stores compute it once for all their columns.
    #[inline(always)]
    pub(super) fn row_base(sh: &ConvShape, m: u32) -> u32 {
        // SAFETY: P*Q >= 1 (validated problems; a launch has rows only then).
        let (n, pixel) = unsafe { divmod(m, Self::col_stride(sh)) };
        n * sh.k as u32 * Self::col_stride(sh) + pixel
    }

    /// Elements between output channels `col` and `col + 1` of one pixel: a plane, P*Q.
    #[inline(always)]
    pub(super) fn col_stride(sh: &ConvShape) -> u32 {
        (sh.p * sh.q) as u32
    }
}

impl Operands for NhwcToNchw {
    const Y_NCHW: bool = true;
    #[inline(always)]
    fn supports(sh: &ConvShape) -> bool {
        Nhwc::supports(sh)
    }
    #[inline(always)]
    unsafe fn pixel(sh: &ConvShape, m: u32) -> (u32, u32, u32) {
        // SAFETY: as the caller guarantees.
        unsafe { Nhwc::pixel(sh, m) }
    }
    #[inline(always)]
    fn x_origin(sh: &ConvShape, n: i32, ih: i32, iw: i32) -> i32 {
        Nhwc::x_origin(sh, n, ih, iw)
    }
    #[inline(always)]
    fn x_pixel(sh: &ConvShape) -> i32 {
        Nhwc::x_pixel(sh)
    }
    #[inline(always)]
    fn x_chan(sh: &ConvShape) -> i32 {
        Nhwc::x_chan(sh)
    }
    #[inline(always)]
    fn w_chan(sh: &ConvShape) -> i32 {
        Nhwc::w_chan(sh)
    }
    #[inline(always)]
    fn w_row(sh: &ConvShape, k: i32) -> i32 {
        Nhwc::w_row(sh, k)
    }
    #[inline(always)]
    fn w_tap(sh: &ConvShape) -> i32 {
        Nhwc::w_tap(sh)
    }
    /// GEMM row `m` (image n, pixel), output channel `col`: `y[n][col][pixel]`; channel
    /// `col + 1` is one plane (P*Q elements) further.
    #[inline(always)]
    fn y_off(sh: &ConvShape, m: u32, col: u32) -> u32 {
        Self::row_base(sh, m) + col * Self::col_stride(sh)
    }
}
