//! Step 14, `Producer::PlaneRows`: step 9's GEMM per image ([`super::planes`]) for any filter,
//! padding and dilation at column stride 1, still on the NCHW tensors as they are.
//!
//! ```text
//! Y[n][k][p][q] = sum over (r, s, c) of W[k][r][s][c] * X[n][c][p*sh - ph + r*dh][q - pw + s*dw]
//! ```
//!
//! The rows are (image, output channel) pairs (step 9's were, until its columns spanned the
//! images: notes/hopper.md §27); the columns are an image's output
//! rows, [`plane_row_pitch`] columns each (Q rounded up to whole 64-pixel copies). A k-tile is
//! one (tap, 64-channel chunk): the filter tile of that tap (KRSC, the A tile) and, for each
//! 64 columns of the tile, the 64 pixels of the input row under the output row, shifted by the
//! tap, by 64 channels: step 9's B copy (64 channel rows of 128 bytes, 128B-swizzled), so the
//! consumers and the epilogue are step 9's, and the copy's position does the im2col, its zero
//! fill the padding.
//!
//! A tiled copy under 128B swizzle must start its innermost dimension on 16 bytes (measured on
//! the H100; other starts fault), and a tap's first column is anywhere. So the copy lands
//! unswizzled from the 16-byte boundary at or before it, 72 pixels a channel row
//! (`PLANE_ROW_LANDED_PIXELS`), in the stage after the B tile, and the producer warpgroup
//! moves each row's 64 pixels, shifted by 0 to 7 elements, into the B tile:
//! - warp 0's first thread issues the filter tile (completing on `full`) and the landed copies
//!   (completing on the stage's `landed` barrier), as far ahead as the ring lets it;
//! - warps 1 and 2 (a channel row a thread) wait for `landed`, move each row's 64 pixels half a
//!   row at a time (five 16-byte loads in flight, a funnel of halves where the shift is odd, four
//!   16-byte stores), fence their writes for the async proxy, and arrive on `full`, which
//!   expects the issuer's arrival and theirs. Warp 3 has nothing to do.
//! - The first build shifted one 16-byte piece per loop turn over warps 1-3, with the shift's
//!   8-way branch inside the loop: latency-bound at 8.7 cycles an instruction (ncu), about 1 us
//!   a k-tile, 3-7x step 7's time.
//! - A tile's stores are not deferred under the next tile's k-tiles, as the NHWC 16-bit steps'
//!   are (`super::kernel`): each slice's output addresses take two divisions, which ran between
//!   the wgmmas of every k-tile (ncu's source view). Step 9 no longer defers either.

use convrs_spec::hopper::{a_tile_bytes, b_tile_bytes, plane_row_landed_bytes, plane_row_pitch, plane_rows, BLOCK_M, K_TILE, PLANE_BOX_PIXELS, PLANE_ROW_LANDED_PIXELS, PLANE_ROW_SHIFTERS, ROW_BYTES};

use super::planes::{Planes, COPY_BYTES};
use super::scheduler::Tiles;
use crate::prelude::mbarrier::{mbar_arrive, mbar_arrive_expect_tx, mbar_init, mbar_wait, setmaxnreg_dec_56, tma_load_3d, tma_load_4d};
use crate::prelude::wgmma::fence_proxy_async_shared;
use crate::prelude::pipeline::{Position, Ring};
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::{divmod, Operands};
use crate::tensor_core::nhwc::Nhwc;

/// NCHW input, KRSC filter, NCHW output; W, Q and C multiples of 8 (the row map's strides and
/// the 16-byte stores; C the filter map's), column stride 1, one group (the plan refuses the
/// rest). As for [`Planes`], only the output addressing and the GEMM's extent are read.
pub struct PlaneRows;

/// Pixels of one copy, as a shift.
const COPY_SHIFT: u32 = PLANE_BOX_PIXELS.trailing_zeros();

impl PlaneRows {
    /// GEMM rows per image ([`plane_rows`]).
    #[inline(always)]
    fn rows(sh: &ConvShape) -> u32 {
        plane_rows(sh.k as usize, BLOCK_M) as u32
    }

    /// The image and output channel of GEMM row `row`.
    #[inline(always)]
    fn image_channel(sh: &ConvShape, row: u32) -> (u32, u32) {
        // SAFETY: rows >= BLOCK_M.
        unsafe { divmod(row, Self::rows(sh)) }
    }

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
        unsafe { Planes::<BLOCK_M>::pixel(sh, m) }
    }
    #[inline(always)]
    fn x_origin(sh: &ConvShape, n: i32, ih: i32, iw: i32) -> i32 {
        Planes::<BLOCK_M>::x_origin(sh, n, ih, iw)
    }
    #[inline(always)]
    fn x_pixel(sh: &ConvShape) -> i32 {
        Planes::<BLOCK_M>::x_pixel(sh)
    }
    #[inline(always)]
    fn x_chan(sh: &ConvShape) -> i32 {
        Planes::<BLOCK_M>::x_chan(sh)
    }
    /// The filter is KRSC, as the NHWC kernels' (and the filter map) read it.
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
    /// GEMM row `m` (image n, output channel k), column `col` (pixel (p, q)): `y[n][k][p][q]`.
    #[inline(always)]
    fn y_off(sh: &ConvShape, m: u32, col: u32) -> u32 {
        let (n, k) = PlaneRows::image_channel(sh, m);
        let (p, q) = Self::pixel_of(sh, col);
        ((n * sh.k as u32 + k) * sh.p as u32 + p) * sh.q as u32 + q
    }
    #[inline(always)]
    fn gemm_mn(sh: &ConvShape) -> (u32, u32) {
        (sh.n as u32 * Self::rows(sh), sh.p as u32 * plane_row_pitch(sh.q as usize) as u32)
    }
    /// A row is one output channel of one image.
    #[inline(always)]
    fn y_channels(sh: &ConvShape, row: u32, _col: u32) -> (u32, u32) {
        let k = Self::image_channel(sh, row).1;
        (k, k)
    }
    /// An aligned 8-column group lies in one output row, whole (Q is a multiple of 8).
    #[inline(always)]
    fn y_in(sh: &ConvShape, row: u32, col: u32) -> bool {
        let (n, k) = PlaneRows::image_channel(sh, row);
        let (p, q) = Self::pixel_of(sh, col);
        n < sh.n as u32 && k < sh.k as u32 && p < sh.p as u32 && q < sh.q as u32
    }
}

/// Bytes of a landed channel row: [`PLANE_ROW_LANDED_PIXELS`] 16-bit pixels.
const LANDED_ROW: u32 = (PLANE_ROW_LANDED_PIXELS * 2) as u32;
/// Bytes of one landed copy: [`K_TILE`] channel rows.
const LANDED_COPY: u32 = K_TILE as u32 * LANDED_ROW;

/// The `landed` barrier of stage `s`: after the ring's `full` and `empty` arrays.
#[inline(always)]
fn landed<const STAGES: usize>(ring: Ring<STAGES>, s: u32) -> u32 {
    ring.empty(s) + 8 * STAGES as u32
}

/// Initialises every stage's `landed` barrier for one arrival (the issuer's, with the copies'
/// bytes).
///
/// # Safety
/// As `Ring::init`: one thread, before any use, the barrier region holding a third array.
#[inline(always)]
pub(super) unsafe fn init_landed<const STAGES: usize>(ring: Ring<STAGES>) {
    unroll!(8: STAGES, s => {
        // SAFETY: as the caller guarantees.
        unsafe { mbar_init(landed(ring, s as u32), 1) };
    });
}

/// The k-tiles of the CTA's tiles in the producer's order: for each tile, each tap (r, s), each
/// 64-channel chunk; `visit(at, image, k0, copy origins (input column, row) with the tap's
/// offsets added, tap, c0)` for each, `at` the ring position.
#[inline(always)]
fn for_each_k_tile<const STAGES: usize>(sh: &ConvShape, mut tiles: Tiles, mut visit: impl FnMut(Position, u32, u32, &[(i32, i32); 4], i32, i32)) {
    let mut at = Position::START;
    while let Some((m0, n0)) = tiles.next::<1>() {
        let (image, k0) = PlaneRows::image_channel(sh, m0);
        // Each copy's input (column, row) at tap (0, 0).
        let mut origin = [(0i32, 0i32); 4];
        unroll!(4: 4, j => {
            let (p, q0) = PlaneRows::copy_at(sh, n0 + ((j as u32) << COPY_SHIFT));
            origin[j] = (q0 as i32 - sh.pad_w, (p as i32).wrapping_mul(sh.stride_h) - sh.pad_h);
        });
        let mut tap = 0;
        let mut r = 0;
        while r < sh.r {
            let mut s = 0;
            while s < sh.s {
                let (dh, dw) = (r * sh.dil_h, s * sh.dil_w);
                let mut at_tap = origin;
                unroll!(4: 4, j => {
                    at_tap[j] = (origin[j].0 + dw, origin[j].1 + dh);
                });
                let mut c0 = 0;
                while c0 < sh.c {
                    visit(at, image, k0, &at_tap, tap, c0);
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

/// The producer of `Producer::PlaneRows` (see the module docs): warp 0's first thread issues,
/// per k-tile (tap (r, s), 64 channels from c0), the filter tile (rows k0.. of the {C, R*S, K}
/// map at tap r*S + s) into the stage's A tile, completing on `full`, and the tile's `bn / 64`
/// landed copies: copy j, for output row p and columns q0.. (GEMM columns n0 + 64j..), is the
/// box of the {W, H, C, N} map at (w & !7, h, c0, image), w = q0 - pad_w + s*dil_w, h =
/// p*stride_h - pad_h + r*dil_h, completing on `landed`. Warps 1 and 2, a channel row a
/// thread, shift each landed copy by w & 7 pixels into the B tile and arrive on `full`; warp 3
/// has nothing to do. Taps outermost, so consecutive k-tiles of a tap read neighbouring
/// channel planes. Channels past C, pixels outside the
/// image and rows past the output arrive as zeros or are never stored.
///
/// # Safety
/// As `produce_tma`: all 128 threads of warpgroup 0 call it together, after the barriers'
/// initialisation (`full` expecting 1 + [`PLANE_ROW_SHIFTERS`] arrivals, `landed` one), with
/// `xmap` the input's row map and `wmap` the filter's with boxes of 128 rows, as the kernel's
/// contract describes.
#[inline(always)]
pub(super) unsafe fn produce_plane_rows<const STAGES: usize>(xmap: *const u8, wmap: *const u8, sh: &ConvShape, ring: Ring<STAGES>, tiles: Tiles, tid: u32) {
    // SAFETY: the whole warpgroup, as in `produce_tma`.
    unsafe { setmaxnreg_dec_56() };
    let copies = tiles.bn >> COPY_SHIFT;
    let a_bytes = a_tile_bytes(BLOCK_M) as u32;
    let b_bytes = b_tile_bytes(tiles.bn as usize) as u32;
    if tid == 0 {
        let landed_bytes = plane_row_landed_bytes(tiles.bn as usize) as u32;
        for_each_k_tile::<STAGES>(sh, tiles, |at, image, k0, at_tap, tap, c0| {
            // SAFETY: the consumers released every earlier use of the stage (the shifters'
            // writes to its B tile came before their arrival on `full`, which the consumers
            // waited for).
            unsafe { ring.wait_empty(at) };
            let stage = ring.stage_addr(at.stage);
            let (full, landed) = (ring.full(at.stage), landed(ring, at.stage));
            // SAFETY: the stage is free; its A tile (1024-aligned, 128 rows of 128 bytes) and
            // its landed copies (after the B tile, 128-aligned, `copies` of 9 KiB) receive
            // exactly the announced bytes, the zero-filled parts of the boxes included.
            unsafe {
                mbar_arrive_expect_tx(full, a_bytes);
                tma_load_3d(stage, wmap, c0, tap, k0 as i32, full);
                mbar_arrive_expect_tx(landed, landed_bytes);
                unroll!(4: 4, j => {
                    if (j as u32) < copies {
                        let (w, h) = at_tap[j];
                        tma_load_4d(stage + a_bytes + b_bytes + j as u32 * LANDED_COPY, xmap, w & !7, h, c0, image as i32, landed);
                    }
                });
            }
        });
        return;
    }
    if tid < 32 || tid >= 32 + PLANE_ROW_SHIFTERS as u32 {
        return;
    }
    // One channel row of each copy a thread: 64 shifters, 64 rows.
    let row = tid - 32;
    for_each_k_tile::<STAGES>(sh, tiles, |at, _, _, at_tap, _, _| {
        // SAFETY: the issuer announced and issued this k-tile's copies on `landed` (after the
        // stage's release), in the same order.
        unsafe { mbar_wait(landed(ring, at.stage), at.phase) };
        let stage = ring.stage_addr(at.stage);
        let from = stage + a_bytes + b_bytes + row * LANDED_ROW;
        let to = stage + a_bytes + row * ROW_BYTES as u32;
        // Every copy of the tile starts q0 (a multiple of 64) from the same tap offset: one
        // straight-line form for the k-tile.
        // SAFETY: the landed rows and this thread's B rows, as `shift_rows` requires.
        unsafe {
            match at_tap[0].0 & 7 {
                0 => shift_rows::<0>(from, to, row, copies),
                1 => shift_rows::<1>(from, to, row, copies),
                2 => shift_rows::<2>(from, to, row, copies),
                3 => shift_rows::<3>(from, to, row, copies),
                4 => shift_rows::<4>(from, to, row, copies),
                5 => shift_rows::<5>(from, to, row, copies),
                6 => shift_rows::<6>(from, to, row, copies),
                _ => shift_rows::<7>(from, to, row, copies),
            }
        }
        // The B tile's generic writes before the consumers' wgmma (async proxy), then the arrival.
        fence_proxy_async_shared();
        // SAFETY: one arrival per shifter per k-tile, as `full` expects.
        unsafe { mbar_arrive(ring.full(at.stage)) };
    });
}

/// Moves landed channel row `row` of each of the `copies` copies (from shared address `from`,
/// copy j `j * LANDED_COPY` on), shifted `E` pixels, into the B tile's row (`to`, copy j
/// `j * COPY_BYTES` on; 128B swizzle: 16-byte chunk c of row r at chunk c ^ (r % 8)). Half a
/// row at a time: five 16-byte loads in flight, four stores.
///
/// # Safety
/// `from` is a landed row of 144 bytes in each copy, complete (its `landed` phase waited for);
/// `to` this thread's row of the B tile in each copy, which no one else reads or writes until
/// the consumers' wait on `full`.
#[inline(always)]
unsafe fn shift_rows<const E: usize>(from: u32, to: u32, row: u32, copies: u32) {
    let mut j = 0;
    while j < copies {
        unroll!(4: 2, half => {
            let base = from + j * LANDED_COPY + half as u32 * 64;
            let mut w = [0u32; 20];
            unroll!(8: 5, c => {
                // SAFETY: chunk 4 * half + c <= 8 of the row's 9.
                let v = unsafe { ld_shared_f32x4(base + c as u32 * 16) }.0;
                unroll!(4: 4, i => { w[4 * c + i] = v[i].to_bits(); });
            });
            unroll!(4: 4, c => {
                let mut o = [0u32; 4];
                unroll!(4: 4, m => {
                    let k = 4 * c + E / 2 + m;
                    o[m] = if E % 2 == 0 { w[k] } else { (w[k] >> 16) | (w[k + 1] << 16) };
                });
                let chunk = (4 * half + c) as u32;
                // SAFETY: this thread's row, as the caller guarantees.
                unsafe { st_shared_v4(to + j * COPY_BYTES + ((chunk ^ (row % 8)) * 16), o) };
            });
        });
        j += 1;
    }
}
