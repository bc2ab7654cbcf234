//! Step 9, `Producer::Planes`: a 1x1, stride-1, unpadded convolution on NCHW data is a GEMM per
//! image with no transform at all,
//!
//! ```text
//! Y[n] (K x H*W) = W (K x C) * X[n] (C x H*W)      KCRS with R = S = 1 is the K x C matrix W
//! ```
//!
//! so the warp-specialized kernel runs it transposed: GEMM rows are output channels (the filter,
//! channels contiguous, is a K-major A tile, the filter map's 128-row box), GEMM columns are
//! pixels (the image's C x H*W plane, pixels contiguous, lands as an MN-major B tile: 64 channel
//! rows of 64 pixels per tiled TMA copy, `Math::b_desc` describes it), and the accumulator tile
//! (rows k, columns pixels) is NCHW as it stands, so the 16-bit epilogue's 16-byte stores run
//! along pixels.
//!
//! The images lie along the columns: column `n * HWp + pixel` is pixel `pixel` of image n, HWp =
//! H*W rounded up to whole 64-pixel copies (`convrs_spec::hopper::plane_pitch`), and the rows
//! are the K output channels rounded up to whole block tiles (`plane_rows`: 128 rows, or 64
//! under step 15's ping-pong). A tile's copies each lie in one image (pixels past H*W arrive as
//! zeros), but a tile may span two: until the thirty-fourth session each image was rounded up
//! to whole tiles, and on 28x28 planes its tiles of 256 pixels computed 1.31x the output, the
//! fourth of each image 16 pixels wide (BENCHMARKS.md, thirty-fourth session). Its tiles are
//! stored whole when their k-tiles end: deferred stores (the NHWC steps') would take the
//! columns' divisions between the wgmmas of every k-tile, which cost 10% of the time
//! (geomean; H100, BENCHMARKS.md, 2026-11-27, twenty-seventh session).

use convrs_spec::hopper::{a_tile_bytes, b_tile_bytes, plane_copies_direct, plane_gemm, plane_pitch, plane_pixel_rows, run_width, Math as Spec, BLOCK_M, K_TILE, PLANE_BOX_PIXELS, PLANE_PIXEL_COPY, ROW_BYTES, WARPGROUP};

use super::epilogue::for_each_eight;
use super::math::{pack, Math};
use super::scheduler::Tiles;
use crate::prelude::matrix::{stmatrix_x4, store_global_f32, store_global_f32x2, store_global_u16, store_global_v4};
use crate::prelude::mbarrier::{cp_async_mbar_arrive_noinc, mbar_arrive_expect_tx, setmaxnreg_dec_56, tma_load_3d};
use crate::prelude::pipeline::{Position, Ring};
use crate::prelude::wgmma::Accumulators;
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::{divmod, Operands};
use crate::tensor_core::nhwc::Nhwc;

/// NCHW input planes, KCRS filter (R = S = 1), NCHW output, in block tiles `BM` rows high;
/// C a multiple of 8 (the filter map's stride; of 64 where H*W is not a multiple of 8, whose
/// maps group channel planes, `plane_channel_groups`), stride 1, no padding (the plan refuses
/// the rest). Only the output addressing and the GEMM's extent are
/// read; the pixel-row methods describe NCHW for completeness (channels are not contiguous, so
/// no pixel-row producer may take it).
pub struct Planes<const BM: usize>;

impl<const BM: usize> Planes<BM> {
    /// GEMM columns per image ([`plane_pitch`]).
    #[inline(always)]
    fn pitch(sh: &ConvShape) -> u32 {
        plane_pitch((sh.p * sh.q) as usize) as u32
    }

    /// The image and pixel of GEMM column `col`.
    #[inline(always)]
    pub(super) fn image_pixel(sh: &ConvShape, col: u32) -> (u32, u32) {
        // SAFETY: the pitch is at least one copy (H*W >= 1).
        unsafe { divmod(col, Self::pitch(sh)) }
    }
}

impl<const BM: usize> Operands for Planes<BM> {
    const PLANES: bool = true;
    #[inline(always)]
    fn supports(sh: &ConvShape) -> bool {
        sh.r == 1 && sh.s == 1 && sh.stride_h == 1 && sh.stride_w == 1 && sh.pad_h == 0 && sh.pad_w == 0
    }
    /// An output pixel's coordinates do not depend on the layout.
    #[inline(always)]
    unsafe fn pixel(sh: &ConvShape, m: u32) -> (u32, u32, u32) {
        // SAFETY: as the caller guarantees.
        unsafe { Nhwc::pixel(sh, m) }
    }
    #[inline(always)]
    fn x_origin(sh: &ConvShape, n: i32, ih: i32, iw: i32) -> i32 {
        (n * sh.c * sh.h).wrapping_add(ih).wrapping_mul(sh.w).wrapping_add(iw)
    }
    #[inline(always)]
    fn x_pixel(_: &ConvShape) -> i32 {
        1
    }
    #[inline(always)]
    fn x_chan(sh: &ConvShape) -> i32 {
        sh.h * sh.w
    }
    #[inline(always)]
    fn w_chan(_: &ConvShape) -> i32 {
        1
    }
    #[inline(always)]
    fn w_row(sh: &ConvShape, k: i32) -> i32 {
        k.wrapping_mul(sh.c)
    }
    #[inline(always)]
    fn w_tap(sh: &ConvShape) -> i32 {
        sh.c
    }
    /// GEMM row `m` (output channel k), column `col` (image n, a pixel): `y[n][k][pixel]`.
    #[inline(always)]
    fn y_off(sh: &ConvShape, m: u32, col: u32) -> u32 {
        let (n, pixel) = Self::image_pixel(sh, col);
        (n * sh.k as u32 + m) * (sh.p * sh.q) as u32 + pixel
    }
    #[inline(always)]
    fn gemm_mn(sh: &ConvShape) -> (u32, u32) {
        let (m, n) = plane_gemm(sh.n as usize, sh.k as usize, (sh.p * sh.q) as usize, BM);
        (m as u32, n as u32)
    }
    /// A row is one output channel.
    #[inline(always)]
    fn y_channels(_sh: &ConvShape, row: u32, _col: u32) -> (u32, u32) {
        (row, row)
    }
    /// Column `col` alone; an aligned column pair lies in one image where H*W is even (the
    /// register epilogue's pairs; the plan takes no residual on odd planes).
    #[inline(always)]
    fn y_in(sh: &ConvShape, row: u32, col: u32) -> bool {
        let (n, pixel) = Self::image_pixel(sh, col);
        row < sh.k as u32 && n < sh.n as u32 && pixel < (sh.p * sh.q) as u32
    }
}

/// `Planes`' bare 16-bit store ([`super::epilogue::store_tile`] for it): a row is one output
/// channel, and each 64-column copy of the tile one image's, so a copy's image and first pixel
/// take one division a copy rather than one a store, as `Operands::y_off` would (16 a thread on
/// a tile 256 wide, each a dependent chain in the epilogue).
///
/// # Safety
/// As [`super::epilogue::store_tile`], with `O` = [`Planes`] and a 16-bit output.
#[inline(always)]
pub(super) unsafe fn store_tile_16<Acc: Accumulators, M: Math>(sh: &ConvShape, y: *mut f32, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32) {
    let (warp, lane) = ((tid % WARPGROUP as u32) / 32, tid % 32);
    let q = lane % 4;
    let row0 = m0 + cw * 64 + warp * 16 + lane / 4;
    let (hw, k) = ((sh.p * sh.q) as u32, sh.k as u32);
    // Per copy: the output offset of its first column in row 0, and how many of its columns
    // lie in the output (its image's pixels from its first on; none past the last image).
    let mut copy = [(0u32, 0u32); 4];
    unroll!(4: Acc::N / PLANE_BOX_PIXELS, s => {
        let (n, pixel) = Planes::<BLOCK_M>::image_pixel(sh, n0 + (s * PLANE_BOX_PIXELS) as u32);
        // (A copy starts on a multiple of 64 of its image's pitch, which is H*W rounded up to
        // 64: pixel < H*W.)
        copy[s] = (n * k * hw + pixel, if n < sh.n as u32 { hw - pixel } else { 0 });
    });
    // The widest aligned run of pixels H*W allows: planes of 14x14 store 8 bytes at a time,
    // odd planes (7x7) one element.
    let w = run_width(hw);
    let store = |e: u32, g: u32, v: [u32; 4]| {
        let row = row0 + 8 * e;
        let (base, inside) = copy[(g / 2) as usize];
        let at = 32 * (g % 2) + 8 * q;
        if row >= k || at >= inside {
            return;
        }
        let p = (y as *mut u16).wrapping_add((row * hw + base + at) as usize);
        // SAFETY (each): channel row < K, pixels at.. of the copy inside its image in runs of
        // w (a copy starts on a multiple of 64 and H*W is a multiple of w, so `inside` is too),
        // each aligned to its bytes (w divides H*W and the offsets); this thread's alone.
        unsafe {
            match w {
                8 => store_global_v4(p as *mut u32, v),
                4 => {
                    store_global_f32x2(p as *mut f32, f32::from_bits(v[0]), f32::from_bits(v[1]));
                    if at + 4 < inside {
                        store_global_f32x2(p.add(4) as *mut f32, f32::from_bits(v[2]), f32::from_bits(v[3]));
                    }
                }
                2 => {
                    unroll!(4: 4, t => {
                        if at + 2 * (t as u32) < inside {
                            store_global_f32(p.add(2 * t) as *mut f32, f32::from_bits(v[t]));
                        }
                    });
                }
                _ => {
                    unroll!(8: 8, t => {
                        if at + (t as u32) < inside {
                            store_global_u16(p.add(t), (v[t / 2] >> (16 * (t % 2))) as u16);
                        }
                    });
                }
            }
        }
    };
    // SAFETY: the whole warp, in uniform control flow (the caller's contract).
    unsafe { for_each_eight::<Acc, M>(acc, q, store) };
}

/// `Planes`' bare 16-bit store through shared memory, for ping-pong tiles on planes whose H*W
/// is a multiple of 8 (every 8-pixel run in one image): each warp stages its 16 rows of block
/// `block` whole by `stmatrix` (a row is one output channel, already contiguous along the
/// pixels, so no transpose), then reads back one row (256 columns; 128-wide tiles: two rows) a
/// warp load and stores it as 512 contiguous bytes. [`store_tile_16`] trades the pieces by
/// shuffles instead, and a warp store wrote 64 bytes in each of 8 planes: on 32,128,28,28->512
/// step 15 issued 1.73x the instructions of its NHWC twin and took 1.85x its time (ncu, H200,
/// fifty-third session; notes/hopper.md §37). Unit `u` of staged row `r` lies at unit
/// `u ^ (r % 8)`: a matrix's 8 rows and a row's 32 units each meet 8 distinct bank groups.
///
/// # Safety
/// As [`store_tile_16`], H*W a multiple of 8; `stage` is the tile's last stage (at least
/// `64 * Acc::N * 2` bytes, 16-byte aligned), held by this warpgroup, every wgmma that read it
/// retired; the whole warpgroup calls it together.
#[inline(always)]
pub(super) unsafe fn store_tile_staged<Acc: Accumulators, M: Math>(sh: &ConvShape, y: *mut f32, acc: &Acc, m0: u32, n0: u32, block: u32, tid: u32, stage: u32) {
    let (warp, lane) = ((tid % WARPGROUP as u32) / 32, tid % 32);
    let row_bytes = (Acc::N * 2) as u32;
    let staged = stage + warp * 16 * row_bytes;
    let at = |r: u32, u: u32| staged + r * row_bytes + (u ^ (r % 8)) * 16;
    // Every warp's wgmmas on the stage retired (each warp waited for its own) before any
    // warp's writes, and the block before's reads are done. SAFETY: the whole warpgroup.
    unsafe { super::epilogue::staged_sync(tid) };
    // stmatrix.x4: lanes 8i.. address matrix i's rows, matrix i = (row octet i % 2, column
    // chunk j + i / 2), each thread's pair of a matrix its accumulator pair there.
    let (octet, chunk) = ((lane / 8) % 2, lane / 16);
    let r = 8 * octet + lane % 8;
    unroll!(16: Acc::N / 16, jj => {
        let j = 2 * jj;
        let v = [
            pack::<M>(acc[4 * j], acc[4 * j + 1]),
            pack::<M>(acc[4 * j + 2], acc[4 * j + 3]),
            pack::<M>(acc[4 * j + 4], acc[4 * j + 5]),
            pack::<M>(acc[4 * j + 6], acc[4 * j + 7]),
        ];
        // SAFETY: this warp's 16 rows of the held stage; 16-byte aligned.
        unsafe { stmatrix_x4(at(r, j as u32 + chunk), v) };
    });
    sync_warp();
    // The read-back: `per` lanes a row, unit u of it (columns 8u..8u + 8 of the tile), so a
    // lane's copy (64 columns, one image's) and place in it are fixed for the tile.
    let per = (Acc::N / 8) as u32;
    let (u, sub) = (lane % per, lane / per);
    let (hw, k) = ((sh.p * sh.q) as u32, sh.k as u32);
    let (n, pixel) = Planes::<BLOCK_M>::image_pixel(sh, n0 + 64 * (u / 8));
    let inside = n < sh.n as u32 && 8 * (u % 8) < hw - pixel;
    let base = n * k * hw + pixel + 8 * (u % 8);
    let first = m0 + 64 * block + 16 * warp;
    let y = y as *mut u16;
    unroll!(16: 16 * Acc::N / 256, i => {
        let r = sub + (32 / per) * i as u32;
        // SAFETY: this warp's rows, written before `sync_warp`; 16-byte aligned.
        let v = unsafe { ld_shared_u32x4(at(r, u)) };
        let row = first + r;
        if inside && row < k {
            // SAFETY: channel row < K, 8 pixels of one image's plane from a multiple of 8
            // (H*W one too), 16-byte aligned; this thread's alone.
            unsafe { store_global_v4(y.add((row * hw + base) as usize) as *mut u32, v) };
        }
    });
    // This warp's reads before its next block's writes.
    sync_warp();
}

/// Bytes of one plane copy in shared memory: [`ROW_BYTES`]-byte rows of 64 pixels, one per
/// channel of the k-tile.
pub(super) const COPY_BYTES: u32 = (PLANE_BOX_PIXELS * ROW_BYTES) as u32;

/// The producer of `Producer::Planes` on tiles `BM` rows high: one thread issues, per k-tile
/// (64 channels), the filter tile (rows k0.. of the {C, 1, K} map: output channels) into the
/// stage's A tile and the `bn / 64` plane copies of the tile's pixels (each of one image)
/// into its B tile. Each tile's
/// reduction is its `ktiles` k-tiles (C / 64 rounded up; channels past C arrive as zeros on both
/// sides). Where H*W is not a multiple of 8 (14x14 planes), which TMA cannot step, the B tiles
/// come from [`copy_planes_direct`] instead.
///
/// # Safety
/// As `produce_tma`: all 128 threads of warpgroup 0 call it together, after the barriers'
/// initialisation, with `full` expecting one arrival (128 + 1 where
/// `plane_copies_direct(H*W)`); `x` is the NCHW input, `xmap` its plane map and `wmap` the
/// filter's with boxes of `BM` rows, as the kernel's contract describes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn produce_planes<const STAGES: usize, const BM: usize>(x: *const u16, xmap: *const u8, wmap: *const u8, sh: &ConvShape, ring: Ring<STAGES>, tiles: Tiles, ktiles: i32, tid: u32) {
    // SAFETY: the whole warpgroup, as in `produce_tma`.
    unsafe { setmaxnreg_dec_56() };
    let hw = (sh.h * sh.w) as usize;
    // One loop per way of copying the B tiles, so that only one way's values live in the
    // producer's 56 registers. SAFETY: as this function's contract.
    unsafe {
        if !plane_copies_direct(hw) {
            produce_planes_by::<STAGES, BM, 0>(x, xmap, wmap, sh, ring, tiles, ktiles, tid)
        } else if hw % 4 == 0 {
            produce_planes_by::<STAGES, BM, 8>(x, xmap, wmap, sh, ring, tiles, ktiles, tid)
        } else {
            produce_planes_by::<STAGES, BM, 4>(x, xmap, wmap, sh, ring, tiles, ktiles, tid)
        }
    }
}

/// `produce_planes`'s loop, the B tiles copied by TMA (`PIECE` 0) or by `cp.async` in pieces
/// of `PIECE` bytes ([`copy_planes_direct`]).
///
/// # Safety
/// As `produce_planes`, after its `setmaxnreg`; `PIECE` 0 where H*W is a multiple of 8, else 8
/// where it is one of 4, else 4.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn produce_planes_by<const STAGES: usize, const BM: usize, const PIECE: u32>(x: *const u16, xmap: *const u8, wmap: *const u8, sh: &ConvShape, ring: Ring<STAGES>, mut tiles: Tiles, ktiles: i32, tid: u32) {
    let direct = PIECE != 0;
    if tid != 0 && !direct {
        return;
    }
    let bn = tiles.bn;
    let copies = bn / PLANE_BOX_PIXELS as u32;
    let a_bytes = a_tile_bytes(BM) as u32;
    let bytes = a_bytes + if direct { 0 } else { b_tile_bytes(bn as usize) as u32 };
    let mut at = Position::START;
    while let Some((k0, n0)) = tiles.next::<1>() {
        // Each copy's image and first pixel (a copy past the last image reads zeros).
        let mut at_copy = [(0u32, 0u32); 4];
        unroll!(4: 4, j => {
            at_copy[j] = Planes::<BM>::image_pixel(sh, n0 + j as u32 * PLANE_BOX_PIXELS as u32);
        });
        let mut c0 = 0;
        let mut kt = 0;
        while kt < ktiles {
            // SAFETY: the consumers released every earlier use of the stage before this one's.
            unsafe { ring.wait_empty(at) };
            let stage = ring.stage_addr(at.stage);
            let full = ring.full(at.stage);
            if tid == 0 {
                // SAFETY: the stage is free; its A tile (1024-aligned, BM rows of 128 bytes) and
                // (but where `direct`) B tile (`copies` copies of 8 KiB after it) receive
                // exactly the announced bytes, the zero-filled parts of the boxes included.
                unsafe {
                    mbar_arrive_expect_tx(full, bytes);
                    tma_load_3d(stage, wmap, c0, 0, k0 as i32, full);
                    if !direct {
                        unroll!(4: 4, j => {
                            if (j as u32) < copies {
                                let (image, p) = at_copy[j];
                                tma_load_3d(stage + a_bytes + j as u32 * COPY_BYTES, xmap, p as i32, c0, image as i32, full);
                            }
                        });
                    }
                }
            }
            if direct {
                // SAFETY: the stage is free; the B tile follows the A tile; one of the 128 + 1
                // arrivals the barrier expects.
                unsafe {
                    copy_planes_direct::<PIECE>(x, sh, stage + a_bytes, &at_copy, copies, c0 as u32, tid);
                    cp_async_mbar_arrive_noinc(full);
                }
            }
            c0 += K_TILE as i32;
            at = at.next::<STAGES>();
            kt += 1;
        }
    }
    // Leave no copy of this thread in flight when it exits.
    cp_async_wait_all();
}

/// The B tile of a k-tile (channels `c0..c0 + 64`) on planes TMA cannot step (H*W*2 bytes not a
/// multiple of 16), copied by `cp.async` from the NCHW input `x` by the 128 producer threads
/// (`tid` < 128): each copy's 64 channel rows of 64 pixels (image and first pixel `at_copy[j]`)
/// in pieces of `BYTES` bytes (8: 4 pixels, H*W a multiple of 4; or 4, H*W even), the pieces
/// of a row on consecutive threads, each landing at its place in the 128B-swizzled row (the
/// layout the TMA copy gives); pixels past H*W, channels past C and images past N as zeros.
/// The consumers fence the stage for the async proxy before their wgmmas read it.
///
/// The four producer warps issue every piece of the tile themselves, one warp per scheduler,
/// so their instructions, not bytes, bound the stage rate: until the fifty-second session this
/// loop took the piece width at run time (divisions and a rolled loop, about 30 instructions a
/// piece) and the 14x14 kernels ran at a third of their NHWC twins (notes/hopper.md §36). A
/// thread's rows are `first + STEP * h + 8 * i`, so each (copy, h) has one swizzle phase and
/// its eight pieces differ by constant strides: unrolled, a piece is a compare, two selects,
/// an address and the copy.
///
/// # Safety
/// `b` is the free stage's 1024-aligned B tile (`copies` copies of [`COPY_BYTES`]); `x` holds
/// the problem's NCHW input; H*W is a multiple of `BYTES / 2`; `BYTES` is 4 or 8.
#[inline(always)]
// The unrolled loop's last step advances the running offset past its use.
#[allow(unused_assignments)]
unsafe fn copy_planes_direct<const BYTES: u32>(x: *const u16, sh: &ConvShape, b: u32, at_copy: &[(u32, u32); 4], copies: u32, c0: u32, tid: u32) {
    // Threads per 128-byte row, rows one pass of the warpgroup covers, passes per 8 rows.
    let per_row = ROW_BYTES as u32 / BYTES;
    let step = WARPGROUP as u32 / per_row;
    let passes = 8 / step;
    let hw = (sh.h * sh.w) as u32;
    let (c, n) = (sh.c as u32, sh.n as u32);
    let (k, first) = (tid % per_row, tid / per_row);
    let pixel = k * BYTES / 2;
    // Channel rows of this k-tile inside C.
    let rows = if c > c0 { c - c0 } else { 0 };
    unroll!(4: 4, j => {
        if (j as u32) < copies {
            let (image, p) = at_copy[j];
            let rows_j = if image < n && p + pixel < hw { rows } else { 0 };
            let base = (image * c + c0) * hw + p + pixel;
            unroll!(4: passes, h => {
                let r0 = first + step * h as u32;
                let dst = b + j as u32 * COPY_BYTES + r0 * ROW_BYTES as u32 + (((k * BYTES / 16) ^ (r0 % 8)) * 16) + (k * BYTES) % 16;
                // Rows left from r0 (compared with immediates) and a running offset: the
                // producer runs on 56 registers, and eight multiples of each would not fit.
                let left = rows_j as i32 - r0 as i32;
                let mut src = base + r0 * hw;
                unroll!(8: 8, i => {
                    let ok = left > 8 * i as i32;
                    let off = if ok { src } else { 0 };
                    src += 8 * hw;
                    let at = dst + 8 * (i as u32) * ROW_BYTES as u32;
                    let from = x.wrapping_add(off as usize) as *const f32;
                    // SAFETY: `at` is this piece's place in the stage's B tile, aligned to the
                    // piece; when ok, the piece's pixels lie in channel c0 + r's plane of the
                    // image (p and the piece's first pixel are multiples of its width, which
                    // divides H*W), aligned to its bytes; nothing is read otherwise.
                    unsafe {
                        if BYTES == 8 {
                            cp_async_8(at, from, if ok { 8 } else { 0 });
                        } else {
                            cp_async_4(at, from, if ok { 4 } else { 0 });
                        }
                    }
                });
            });
        }
    });
}

/// NCHW input planes, KCRS filter (R = S = 1), NCHW output, read the other way round
/// (`Producer::PlanePixels`, fp32): GEMM row `n * HWp + pixel` (HWp = H*W rounded up to whole
/// 32-pixel copies, [`plane_pixel_rows`]) is a pixel of image n, the columns are output channels;
/// a block tile may span images (each of its copies lies in one).
/// H*W a multiple of 4 (the plane map's 16-byte channel stride) and C a multiple of 4 (the
/// filter map's), stride 1, no padding (the plan refuses the rest). As for [`Planes`], only the
/// output addressing and the GEMM's extent are read.
pub struct PlanePixels;

impl PlanePixels {
    /// The image and pixel of GEMM row `row`.
    #[inline(always)]
    fn image_pixel(sh: &ConvShape, row: u32) -> (u32, u32) {
        // SAFETY: plane_pixel_rows >= 32 (H*W >= 1).
        unsafe { divmod(row, plane_pixel_rows((sh.p * sh.q) as usize) as u32) }
    }
}

impl Operands for PlanePixels {
    const PIXEL_PLANES: bool = true;
    #[inline(always)]
    fn supports(sh: &ConvShape) -> bool {
        Planes::<BLOCK_M>::supports(sh)
    }
    #[inline(always)]
    unsafe fn pixel(sh: &ConvShape, m: u32) -> (u32, u32, u32) {
        // SAFETY: as the caller guarantees.
        unsafe { Nhwc::pixel(sh, m) }
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
    #[inline(always)]
    fn w_chan(sh: &ConvShape) -> i32 {
        Planes::<BLOCK_M>::w_chan(sh)
    }
    #[inline(always)]
    fn w_row(sh: &ConvShape, k: i32) -> i32 {
        Planes::<BLOCK_M>::w_row(sh, k)
    }
    #[inline(always)]
    fn w_tap(sh: &ConvShape) -> i32 {
        Planes::<BLOCK_M>::w_tap(sh)
    }
    /// GEMM row `m` (image n, pixel), output channel `col`: `y[n][col][pixel]`; channel
    /// `col + 1` is one plane (H*W elements) further.
    #[inline(always)]
    fn y_off(sh: &ConvShape, m: u32, col: u32) -> u32 {
        let (n, pixel) = Self::image_pixel(sh, m);
        (n * sh.k as u32 + col) * (sh.p * sh.q) as u32 + pixel
    }
    #[inline(always)]
    fn gemm_mn(sh: &ConvShape) -> (u32, u32) {
        (sh.n as u32 * plane_pixel_rows((sh.p * sh.q) as usize) as u32, sh.k as u32)
    }
    /// Element (`row`, `col`) alone: K need not be a multiple of anything here.
    #[inline(always)]
    fn y_in(sh: &ConvShape, row: u32, col: u32) -> bool {
        let (n, pixel) = Self::image_pixel(sh, row);
        n < sh.n as u32 && pixel < (sh.p * sh.q) as u32 && col < sh.k as u32
    }
    /// A 64-row block from `row` holds a pixel of the output unless it starts past the last
    /// image (its first rows may be an image's padding, the next ones the next image's pixels).
    #[inline(always)]
    fn block_in(sh: &ConvShape, row: u32, col: u32) -> bool {
        Self::image_pixel(sh, row).0 < sh.n as u32 && col < sh.k as u32
    }
}

/// Pixels (and channels) of one [`PlanePixels`] copy: a 128-byte row of fp32 values.
const PIXEL_BOX: u32 = PLANE_PIXEL_COPY as u32;

/// The producer of `Producer::PlanePixels`: one thread issues, per k-tile (32 channels), the
/// A tile's four plane copies (32 pixels by 32 channels of one image each, the plane map's box;
/// channel rows of 128 bytes, 128B-swizzled; a copy past the last image reads zeros) and the
/// filter tile (rows n0.. of the {C, 1, K} map: output channels; under 3xTF32 also the
/// remainders, rows K + n0.., of the split filter) into its B tile(s). Pixels past H*W and
/// channels past C arrive as zeros.
///
/// # Safety
/// As [`produce_planes`], with `xmap` the input's plane map with boxes of 32 pixels by 32
/// channels and `wmap` the filter's (the split filter's under 3xTF32) with boxes of `bn` rows.
#[inline(always)]
pub(super) unsafe fn produce_plane_pixels<const STAGES: usize>(math: Spec, xmap: *const u8, wmap: *const u8, sh: &ConvShape, ring: Ring<STAGES>, mut tiles: Tiles, ktiles: i32, tid: u32) {
    // SAFETY: the whole warpgroup, as in `produce_tma`.
    unsafe { setmaxnreg_dec_56() };
    if tid != 0 {
        return;
    }
    let bn = tiles.bn;
    let a_bytes = a_tile_bytes(BLOCK_M) as u32;
    let bytes = a_bytes + (math.b_tiles() * b_tile_bytes(bn as usize)) as u32;
    let kc = math.k_tile() as i32;
    let mut at = Position::START;
    while let Some((m0, n0)) = tiles.next::<1>() {
        // Each copy's image and first pixel (copies never straddle images).
        let mut at_copy = [(0u32, 0u32); 4];
        unroll!(4: 4, j => {
            at_copy[j] = PlanePixels::image_pixel(sh, m0 + j as u32 * PIXEL_BOX);
        });
        let mut c0 = 0;
        let mut kt = 0;
        while kt < ktiles {
            // SAFETY: the consumers released every earlier use of the stage before this one's.
            unsafe { ring.wait_empty(at) };
            let stage = ring.stage_addr(at.stage);
            let full = ring.full(at.stage);
            // SAFETY: the stage is free; its A tile (1024-aligned, four 4 KiB copies) and B
            // tile(s) after it receive exactly the announced bytes, the zero-filled parts of the
            // boxes included.
            unsafe {
                mbar_arrive_expect_tx(full, bytes);
                unroll!(4: 4, j => {
                    let (image, p0) = at_copy[j];
                    tma_load_3d(stage + j as u32 * PIXEL_BOX * ROW_BYTES as u32, xmap, p0 as i32, c0, image as i32, full);
                });
                tma_load_3d(stage + a_bytes, wmap, c0, 0, n0 as i32, full);
                if math.b_tiles() == 2 {
                    tma_load_3d(stage + a_bytes + bn * ROW_BYTES as u32, wmap, c0, 0, sh.k + n0 as i32, full);
                }
            }
            c0 += kc;
            at = at.next::<STAGES>();
            kt += 1;
        }
    }
}
