//! Step 14, `Producer::PlaneRows`: step 9's GEMM per image ([`super::planes`]) for any filter,
//! padding and dilation at column stride 1, still on the NCHW tensors as they are.
//!
//! ```text
//! Y[n][k][p][q] = sum over (r, s, c) of W[k][r][s][c] * X[n][c][p*sh - ph + r*dh][q - pw + s*dw]
//! ```
//!
//! The rows are (image, output channel) pairs as in step 9; the columns are an image's output
//! rows, [`plane_row_pitch`] columns each (Q rounded up to whole 64-pixel copies). A k-tile is
//! one (tap, 64-channel chunk): the filter tile of that tap (KRSC, the A tile) and, for each
//! 64 columns of the tile, one tiled TMA copy of the input's {W, H, C, N} map: 64 pixels of the
//! input row under the output row, shifted by the tap, by 64 channels. It lands as step 9's
//! copy does (64 channel rows of 128 bytes, 128B-swizzled), so the consumers and the epilogue
//! are step 9's: the copy's position does the im2col, its zero fill the padding.
//!
//! A tiled copy under 128B swizzle must start its innermost dimension on 16 bytes (measured on
//! the H100: other starts fault with an illegal instruction), so every tap's column offset
//! `t * dil_w - pad_w` is a multiple of 8 here (`convrs_spec::hopper::plane_row_taps_aligned`;
//! the plan refuses the rest): 1x1 and R x 1 filters without column padding (or padding 8), any
//! row stride, padding and dilation. A 3x3 layer with padding 1 needs its rows shifted by one
//! element in shared memory first (notes/hopper.md, step 14).

use convrs_spec::hopper::{a_tile_bytes, b_tile_bytes, plane_row_pitch, BLOCK_M, K_TILE, PLANE_BOX_PIXELS};

use super::planes::{Planes, COPY_BYTES};
use super::scheduler::Tiles;
use crate::prelude::mbarrier::{mbar_arrive_expect_tx, setmaxnreg_dec_56, tma_load_3d, tma_load_4d};
use crate::prelude::pipeline::{Position, Ring};
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::{divmod, Operands};

/// NCHW input, KRSC filter, NCHW output; W, Q and C multiples of 8 (the row map's strides and
/// the 16-byte stores; C the filter map's), column stride 1, one group (the plan refuses the
/// rest). As for [`Planes`], only the output addressing and the GEMM's extent are read.
pub struct PlaneRows;

/// Pixels of one copy, as a shift.
const COPY_SHIFT: u32 = PLANE_BOX_PIXELS.trailing_zeros();

impl PlaneRows {
    /// Copies an output row takes: [`plane_row_pitch`] / 64.
    #[inline(always)]
    fn row_copies(sh: &ConvShape) -> u32 {
        (plane_row_pitch(sh.q as usize) >> COPY_SHIFT) as u32
    }

    /// The output row and the first column of GEMM column `col`'s copy.
    #[inline(always)]
    fn copy_at(sh: &ConvShape, col: u32) -> (u32, u32) {
        // SAFETY: row_copies >= 1 (Q >= 1).
        let (p, c) = unsafe { divmod(col >> COPY_SHIFT, Self::row_copies(sh)) };
        (p, c << COPY_SHIFT)
    }

    /// The output pixel (p, q) of GEMM column `col`.
    #[inline(always)]
    fn pixel_of(sh: &ConvShape, col: u32) -> (u32, u32) {
        let (p, q0) = Self::copy_at(sh, col);
        (p, q0 + (col & (PLANE_BOX_PIXELS as u32 - 1)))
    }
}

impl Operands for PlaneRows {
    const PLANES: bool = true;
    const PLANE_ROWS: bool = true;
    #[inline(always)]
    fn supports(sh: &ConvShape) -> bool {
        sh.stride_w == 1 && sh.groups == 1
    }
    #[inline(always)]
    unsafe fn pixel(sh: &ConvShape, m: u32) -> (u32, u32, u32) {
        // SAFETY: as the caller guarantees.
        unsafe { Planes::pixel(sh, m) }
    }
    #[inline(always)]
    fn x_origin(sh: &ConvShape, n: i32, ih: i32, iw: i32) -> i32 {
        Planes::x_origin(sh, n, ih, iw)
    }
    #[inline(always)]
    fn x_pixel(sh: &ConvShape) -> i32 {
        Planes::x_pixel(sh)
    }
    #[inline(always)]
    fn x_chan(sh: &ConvShape) -> i32 {
        Planes::x_chan(sh)
    }
    /// KRSC: channels contiguous, as the filter map reads them.
    #[inline(always)]
    fn w_chan(_: &ConvShape) -> i32 {
        1
    }
    #[inline(always)]
    fn w_row(sh: &ConvShape, k: i32) -> i32 {
        k.wrapping_mul(sh.r * sh.s * sh.c)
    }
    #[inline(always)]
    fn w_tap(sh: &ConvShape) -> i32 {
        sh.c
    }
    /// GEMM row `m` (image n, output channel k), column `col` (pixel (p, q)): `y[n][k][p][q]`.
    #[inline(always)]
    fn y_off(sh: &ConvShape, m: u32, col: u32) -> u32 {
        let (n, k) = Planes::image_channel(sh, m);
        let (p, q) = Self::pixel_of(sh, col);
        ((n * sh.k as u32 + k) * sh.p as u32 + p) * sh.q as u32 + q
    }
    #[inline(always)]
    fn gemm_mn(sh: &ConvShape) -> (u32, u32) {
        (Planes::gemm_mn(sh).0, sh.p as u32 * plane_row_pitch(sh.q as usize) as u32)
    }
    /// A row is one output channel of one image.
    #[inline(always)]
    fn y_channels(sh: &ConvShape, row: u32, col: u32) -> (u32, u32) {
        Planes::y_channels(sh, row, col)
    }
    /// An aligned 8-column group lies in one output row, whole (Q is a multiple of 8).
    #[inline(always)]
    fn y_in(sh: &ConvShape, row: u32, col: u32) -> bool {
        let (n, k) = Planes::image_channel(sh, row);
        let (p, q) = Self::pixel_of(sh, col);
        n < sh.n as u32 && k < sh.k as u32 && p < sh.p as u32 && q < sh.q as u32
    }
}

/// The producer of `Producer::PlaneRows`: one thread issues, per k-tile (tap (r, s), 64
/// channels from c0), the filter tile (rows k0.. of the {C, R*S, K} map at tap r*S + s) into
/// the stage's A tile and the tile's `bn / 64` row copies into its B tile: copy j, for output
/// row p and columns q0.. (GEMM columns n0 + 64j..), is the box of the {W, H, C, N} map at
/// (q0 - pad_w + s*dil_w, p*stride_h - pad_h + r*dil_h, c0, image). Taps outermost, so
/// consecutive k-tiles of a tap read neighbouring channel planes. Channels past C, pixels
/// outside the image and rows past the output arrive as zeros or are never stored.
///
/// # Safety
/// As `produce_tma`: all 128 threads of warpgroup 0 call it together, after the barriers'
/// initialisation, with `full` expecting one arrival; `xmap` is the input's row map and `wmap`
/// the filter's with boxes of 128 rows, as the kernel's contract describes.
#[inline(always)]
pub(super) unsafe fn produce_plane_rows<const STAGES: usize>(xmap: *const u8, wmap: *const u8, sh: &ConvShape, ring: Ring<STAGES>, mut tiles: Tiles, tid: u32) {
    // SAFETY: the whole warpgroup, as in `produce_tma`.
    unsafe { setmaxnreg_dec_56() };
    if tid != 0 {
        return;
    }
    let copies = tiles.bn >> COPY_SHIFT;
    let a_bytes = a_tile_bytes(BLOCK_M) as u32;
    let bytes = a_bytes + b_tile_bytes(tiles.bn as usize) as u32;
    let mut at = Position::START;
    while let Some((m0, n0)) = tiles.next::<1>() {
        let (image, k0) = Planes::image_channel(sh, m0);
        // Each copy's input (column, row) at tap (0, 0).
        let mut origin = [(0i32, 0i32); 4];
        unroll!(4: 4, j => {
            let (p, q0) = PlaneRows::copy_at(sh, n0 + ((j as u32) << COPY_SHIFT));
            origin[j] = (q0 as i32 - sh.pad_w, (p as i32).wrapping_mul(sh.stride_h) - sh.pad_h);
        });
        let mut tap = 0;
        let mut r = 0;
        while r < sh.r {
            let dh = r * sh.dil_h;
            let mut s = 0;
            while s < sh.s {
                let dw = s * sh.dil_w;
                let mut c0 = 0;
                while c0 < sh.c {
                    // SAFETY: the consumers released every earlier use of the stage before this one's.
                    unsafe { ring.wait_empty(at) };
                    let stage = ring.stage_addr(at.stage);
                    let full = ring.full(at.stage);
                    // SAFETY: the stage is free; its A tile (1024-aligned, 128 rows of 128
                    // bytes) and B tile (`copies` copies of 8 KiB after it) receive exactly the
                    // announced bytes, the zero-filled parts of the boxes included.
                    unsafe {
                        mbar_arrive_expect_tx(full, bytes);
                        tma_load_3d(stage, wmap, c0, tap, k0 as i32, full);
                        unroll!(4: 4, j => {
                            if (j as u32) < copies {
                                let (w, h) = origin[j];
                                tma_load_4d(stage + a_bytes + j as u32 * COPY_BYTES, xmap, w + dw, h + dh, c0, image as i32, full);
                            }
                        });
                    }
                    c0 += K_TILE as i32;
                    at = at.next::<STAGES>();
                }
                tap += 1;
                s += 1;
            }
            r += 1;
        }
    }
}
