//! Step 17, `Producer::NchwPatch`: NCHW data, any filter at stride 1, read as it is.
//!
//! ```text
//! Y[n][k][p][q] = sum over (r, s, c) of W[k][r][s][c] * X[n][c][p - ph + r*dh][q - pw + s*dw]
//! ```
//!
//! Step 7's GEMM (rows output pixels, columns output channels, the KRSC filter a K-major B tile
//! a tap) with the A tile made in shared memory instead of copied a tap. A tile's 128 rows are
//! [`PatchGeometry::out_rows`] output rows of [`PatchGeometry::wp`] pixels each (wp a power of
//! 2 at least Q + (S-1)*dw: the pixels past Q are computed and never stored). Per 64-channel
//! chunk, the producer warpgroup lays the tile's input rows out as a *patch*: row
//! `i*wp + pw + w` holds input row `p0 - ph + i`, column `w`, its 64 channels (128 bytes,
//! 128B-swizzled, as an im2col copy lands them), the padding columns zero. Then GEMM row
//! `l*wp + q` of tap (r, s) reads patch row `l*wp + q + r*dh*wp + s*dw`: the tap's A tile is
//! the patch from row `r*dh*wp + s*dw`, one descriptor start, and a K-major 128B-swizzled
//! operand may start at any row (the swizzle follows the address bits; measured on the H100,
//! `dev/wgmma_row_offset_probe.py`). So the activations are read once per chunk, not once a
//! tap (R*S times: step 14's shifted copies, or an im2col copy's).
//!
//! - Warp 0's first thread issues the filter tiles (one a tap, the ring's `full` and `empty`).
//! - Its second thread issues each chunk's landing copies: the tile's input rows, flattened
//!   (the plane map {H*W, C, N}: H*W a multiple of 8), from the 16-byte boundary at or before
//!   the first, in boxes of 64 pixels x 64 channels (128B swizzle, pixels contiguous); rows
//!   above or below the image arrive as the copies' zero fill. Two landings: the next chunk's
//!   copies fly while this one's are transposed.
//! - Warps 1 to 3 ([`PATCH_TRANSPOSERS`]) make the patches, 8 pixels x 32 channels at a time:
//!   `ldmatrix.trans` from the landing (channel rows) gives each lane two channels of one
//!   pixel, and `stmatrix` writes them as the pixel's patch row. Two patches: the transposers
//!   fill one while the consumers read the other.
//! - Both consumer warpgroups (64 rows each) wait for a chunk's patch, run its R*S taps' wgmmas
//!   and release it after the next k-tile's wait (so the tensor cores never drain at a chunk's
//!   end); the output is stored NCHW through step 16's staging (`epilogue::store_nchw`),
//!   which applies the fused epilogue as it stores.

use convrs_spec::hopper::{b_tile_bytes, patch_geometry, PatchLayout, BLOCK_M, K_TILE, NCHW_STAGING_BYTES, PATCH_BYTES, PATCH_LANDING_BYTES, PATCH_TRANSPOSERS, PLANE_BOX_PIXELS, ROW_BYTES, WARPGROUP};

use super::epilogue::{prefetch_residual_nchw, store_nchw_wide, NchwRows};
use super::math::Math;
use super::scheduler::Tiles;
use crate::prelude::matrix::{ldmatrix_x4_trans, stmatrix_x4};
use crate::prelude::mbarrier::{fence_mbarrier_init, mbar_arrive, mbar_arrive_expect_tx, mbar_init, mbar_wait, prefetch_tensormap, setmaxnreg_dec_56, setmaxnreg_inc_224, tma_load_3d};
use crate::prelude::pipeline::{Position, Ring};
use crate::prelude::wgmma::{desc_sw128, fence_proxy_async_shared, Accumulators};
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::divmod;

/// Threads of a warpgroup.
const WG: u32 = WARPGROUP as u32;
/// Bytes of one landing copy: 64 channel rows of [`PLANE_BOX_PIXELS`] 16-bit pixels.
const BOX_BYTES: u32 = (K_TILE * ROW_BYTES) as u32;
/// Items a transposing warp has in flight: their `ldmatrix` issued together. (Four spilled 4
/// bytes in the producer's 56 registers.)
const ILP: usize = 2;
/// The last 8-pixel group of a landing.
const LAST_GROUP: u32 = (PATCH_LANDING_BYTES / BOX_BYTES as usize * PLANE_BOX_PIXELS / 8 - 1) as u32;

/// A problem's tiles, as the kernel walks them.
#[derive(Clone, Copy)]
struct Geo {
    /// log2 of the GEMM rows per output row (`PatchGeometry::wp`).
    shift: u32,
    /// Output rows a tile, and the input rows under them.
    out_rows: u32,
    in_rows: u32,
    /// Tiles an image: P / out_rows, rounded up.
    per_image: u32,
    /// 64-channel chunks: C / 64, rounded up.
    chunks: u32,
}

impl Geo {
    /// The geometry the plan checked (`convrs_spec::hopper::patch_geometry`); a launch the plan
    /// would refuse traps.
    #[inline(always)]
    fn of(sh: &ConvShape) -> Geo {
        let Some(g) = patch_geometry(sh.w as usize, sh.q as usize, sh.r as usize, sh.s as usize, sh.dil_h as usize, sh.dil_w as usize) else { trap() };
        if sh.stride_h != 1 || sh.stride_w != 1 || sh.groups != 1 {
            trap();
        }
        let out_rows = g.out_rows as u32;
        Geo {
            shift: g.wp.trailing_zeros(),
            out_rows,
            in_rows: g.in_rows as u32,
            per_image: (sh.p as u32).div_ceil(out_rows),
            chunks: (sh.c as u32).div_ceil(K_TILE as u32),
        }
    }

    /// The image and the first output row of the tile whose first GEMM row is `m0`.
    #[inline(always)]
    fn tile(&self, m0: u32) -> (u32, u32) {
        // SAFETY: per_image >= 1 (P >= 1).
        let (image, t) = unsafe { divmod(m0 / BLOCK_M as u32, self.per_image) };
        (image, t * self.out_rows)
    }

    /// The landing of the tile at `m0`: its image, the copies' first pixel (the tile's first
    /// input pixel, flattened, rounded down to 16 bytes), the pixels before the tile's first,
    /// and the 8-pixel groups it spans.
    #[inline(always)]
    fn landing(&self, sh: &ConvShape, m0: u32) -> (u32, i32, u32, u32) {
        let (image, p0) = self.tile(m0);
        let first = (p0 as i32 - sh.pad_h) * sh.w;
        let start = first & !7;
        let lead = (first - start) as u32;
        (image, start, lead, (lead + self.in_rows * sh.w as u32).div_ceil(8))
    }
}

/// The barriers after the ring's: each landing's `full` (its copies' bytes) and `empty` (every
/// transposer read it), then each patch's `full` (every transposer wrote it) and `empty` (every
/// consumer thread's wgmmas that read it retired). Chunk i uses landing and patch i % 2.
#[derive(Clone, Copy)]
struct Bars(u32);

impl Bars {
    #[inline(always)]
    fn land_full(self, b: u32) -> u32 {
        self.0 + 8 * b
    }
    #[inline(always)]
    fn land_empty(self, b: u32) -> u32 {
        self.0 + 16 + 8 * b
    }
    #[inline(always)]
    fn patch_full(self, b: u32) -> u32 {
        self.0 + 32 + 8 * b
    }
    #[inline(always)]
    fn patch_empty(self, b: u32) -> u32 {
        self.0 + 48 + 8 * b
    }
}

/// Calls `visit(i, m0, n0, c0)` for every 64-channel chunk of the CTA's tiles in order, `i`
/// counting them: what the filter issuer, the transposers and the consumers all walk.
#[inline(always)]
fn for_each_chunk(geo: &Geo, mut tiles: Tiles, mut visit: impl FnMut(u32, u32, u32, i32)) {
    let mut i = 0;
    while let Some((m0, n0)) = tiles.next::<1>() {
        let mut c = 0;
        while c < geo.chunks {
            visit(i, m0, n0, (c * K_TILE as u32) as i32);
            c += 1;
            i += 1;
        }
    }
}

/// A tile's output rows for `epilogue::store_nchw`: GEMM row `m0 + l*wp + q` is pixel
/// (p0 + l, q) of the tile's image.
struct PatchRows {
    m0: u32,
    /// The offset of the tile's first pixel in channel 0: (image*K*P + p0) * Q.
    base: u32,
    /// Output rows from p0 to P.
    rows_left: u32,
    shift: u32,
    q: u32,
    k: u32,
    plane: u32,
    sixteen: bool,
}

impl NchwRows for PatchRows {
    /// Not yet: with it ptxas spilled 16 bytes on the 128x128 entries, and step 17's short
    /// runs (Q not a multiple of 8) were not measured.
    const ALONG_PLANES: bool = false;
    /// Not yet: with it ptxas spilled 4-16 bytes on the 128x128 entries (forty-eighth session).
    const MATRIX: bool = false;
    #[inline(always)]
    fn row_base(&self, row: u32) -> u32 {
        let f = row - self.m0;
        self.base + (f >> self.shift) * self.q + (f & ((1 << self.shift) - 1))
    }
    #[inline(always)]
    fn plane(&self) -> u32 {
        self.plane
    }
    /// Eight rows (from a multiple of 8) are pixels q..q+8 of one output row (wp >= 8), q a
    /// multiple of 8: runs that divide Q lie inside or past it whole, and start aligned.
    #[inline(always)]
    fn run(&self) -> u32 {
        self.q
    }
    #[inline(always)]
    fn inside(&self, row: u32, col: u32) -> bool {
        let f = row - self.m0;
        (f >> self.shift) < self.rows_left && (f & ((1 << self.shift) - 1)) < self.q && col < self.k
    }
    #[inline(always)]
    fn sixteen(&self) -> bool {
        self.sixteen
    }
    #[inline(always)]
    fn channels(&self) -> u32 {
        self.k
    }
}

/// The kernel; see the module docs. Tiles 128 x `Acc::N`, `STAGES` filter tiles in the ring,
/// 16-bit data of `M`.
///
/// # Safety
/// `y` holds N*K*P*Q elements (NCHW, 16-byte aligned); `wmap` is the filter's tiled map as
/// for `Producer::WsTma` (KRSC, box {64, 1, `Acc::N`}), `xmap` the input's plane map as for
/// `Producer::Planes` ({H*W, C, N}, box {64, 64, 1}, 128B swizzle); the problem is one
/// `convrs_spec::hopper::patch_geometry` takes, at stride 1, one group, C and K multiples of
/// 8, H*W a multiple of 8; the launch gives `Config::smem_bytes` and 384 threads.
#[inline(always)]
pub unsafe fn conv_patch<Acc: Accumulators, const STAGES: usize, M: Math>(
    _x: *const u16,
    _w: *const u16,
    y: *mut f32,
    wmap: *const u8,
    xmap: *const u8,
    sh: ConvShape,
) {
    const {
        assert!(Acc::N == 64 || Acc::N == 128);
        // The ring's barriers and eight more in the barrier KiB.
        assert!(8 * (2 * STAGES + 8) <= 1024);
    }
    let raw = dynamic_smem_u32();
    let smem = (raw + 1023) & !1023;
    let lay = PatchLayout::of(Acc::N, STAGES);
    if block_dim_x() != 3 * WG as i32 || dynamic_smem_bytes() + raw < smem + (lay.end + NCHW_STAGING_BYTES) as u32 {
        trap();
    }
    let geo = Geo::of(&sh);
    let ring = Ring::<STAGES> { smem, stage: lay.stage as u32 };
    // After the ring's `empty` array, in the barrier KiB (`lay.barriers`).
    let bars = Bars(ring.empty(0) + 8 * STAGES as u32);
    let patch0 = smem + lay.patch as u32;
    let tid = thread_x() as u32;
    // Both patches zero: the transposers write only the input's pixels, so the padding columns
    // (and the rows past the last tap's reach) stay zero for the whole launch.
    let mut i = tid;
    while i < (2 * PATCH_BYTES / 16) as u32 {
        // SAFETY: inside the patches (checked above); no one else touches them before the barrier.
        unsafe { st_shared_v4(patch0 + 16 * i, [0; 4]) };
        i += 3 * WG;
    }
    // The zeros are read by wgmma (async proxy).
    fence_proxy_async_shared();
    if tid == 0 {
        // SAFETY: the barrier KiB after the ring, inside the launch's shared memory, initialised
        // once before any use (the barrier below).
        unsafe {
            ring.init(1, 2 * WG);
            unroll!(4: 2, b => {
                mbar_init(bars.land_full(b as u32), 1);
                mbar_init(bars.land_empty(b as u32), PATCH_TRANSPOSERS as u32);
                mbar_init(bars.patch_full(b as u32), PATCH_TRANSPOSERS as u32);
                mbar_init(bars.patch_empty(b as u32), 2 * WG);
            });
        }
        fence_mbarrier_init();
        // SAFETY: the contract's tensor maps.
        unsafe {
            prefetch_tensormap(wmap);
            prefetch_tensormap(xmap);
        }
    }
    sync_threads();
    // The entries are `set_up_first`: the patches' zeros, the barriers and the tensor maps'
    // prefetch above run while the previous grid in the stream finishes; every global access
    // comes after this.
    entry_wait();
    let tiles = Tiles::of::<1, true>(sh.n as u32 * geo.per_image * BLOCK_M as u32, sh.k as u32, BLOCK_M as u32, Acc::N as u32);
    if tid < WG {
        // SAFETY: the whole producer warpgroup, after the initialisation; the caller's contract.
        unsafe {
            setmaxnreg_dec_56();
            if tid == 0 {
                issue_filters(wmap, &sh, &geo, ring, tiles, Acc::N as u32);
            } else if tid == 1 {
                issue_landings(xmap, &sh, &geo, bars, smem + lay.landing as u32, tiles);
            } else if tid >= 32 {
                transpose(&sh, &geo, bars, patch0, smem + lay.landing as u32, smem + lay.scratch as u32, tiles, tid);
            }
        }
        return;
    }
    // SAFETY: the whole consumer warpgroup, for every tile the producers fill.
    unsafe {
        setmaxnreg_inc_224();
        consume_patches::<Acc, STAGES, M>(&sh, &geo, y, ring, bars, patch0, tiles, tid);
    }
}

/// The filter tiles, one a (chunk, tap): rows n0.. of the {C, R*S, K} map at (c0, tap).
///
/// # Safety
/// Thread 0 alone, after the barriers' initialisation; `wmap` as the kernel's contract.
#[inline(always)]
unsafe fn issue_filters<const STAGES: usize>(wmap: *const u8, sh: &ConvShape, geo: &Geo, ring: Ring<STAGES>, tiles: Tiles, bn: u32) {
    let taps = sh.r * sh.s;
    let mut at = Position::START;
    for_each_chunk(geo, tiles, |_, _, n0, c0| {
        let mut t = 0;
        while t < taps {
            // SAFETY: the consumers released the stage's last use; the copy fills exactly the
            // announced bytes (zero-filled rows past K and channels past C included).
            unsafe {
                ring.wait_empty(at);
                mbar_arrive_expect_tx(ring.full(at.stage), b_tile_bytes(bn as usize) as u32);
                tma_load_3d(ring.stage_addr(at.stage), wmap, c0, t, n0 as i32, ring.full(at.stage));
            }
            at = at.next::<STAGES>();
            t += 1;
        }
    });
}

/// Each chunk's landing (thread 1): into landing `i % 2` once the transposers read its last
/// use, the tile's input rows from the 16-byte boundary at or before the first, by 64 pixels x
/// 64 channels.
///
/// # Safety
/// Thread 1 alone, after the barriers' initialisation; `xmap` as the kernel's contract,
/// `landing` the layout's.
#[inline(always)]
unsafe fn issue_landings(xmap: *const u8, sh: &ConvShape, geo: &Geo, bars: Bars, landing: u32, tiles: Tiles) {
    for_each_chunk(geo, tiles, |i, m0, _, c0| {
        let (image, start, _, groups) = geo.landing(sh, m0);
        let b = i & 1;
        let to = landing + b * PATCH_LANDING_BYTES as u32;
        // SAFETY: every transposer read this landing's last use (generic reads, before their
        // arrivals); the copies fill the announced bytes, zero fill included.
        unsafe {
            mbar_wait(bars.land_empty(b), ((i >> 1) & 1) ^ 1);
            let boxes = groups.div_ceil(8);
            mbar_arrive_expect_tx(bars.land_full(b), boxes * BOX_BYTES);
            let mut j = 0;
            while j < boxes {
                tma_load_3d(to + j * BOX_BYTES, xmap, start + (j * PLANE_BOX_PIXELS as u32) as i32, c0, image as i32, bars.land_full(b));
                j += 1;
            }
        }
    });
}

/// Warps 1 to 3 of the producer warpgroup: chunk i's landing (`i % 2`) transposed into patch
/// `i % 2` (see the module docs).
///
/// # Safety
/// All 96 threads call it together, after the barriers' initialisation; `patch0`, `landing`
/// and `scratch` the layout's.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn transpose(sh: &ConvShape, geo: &Geo, bars: Bars, patch0: u32, landing: u32, scratch: u32, tiles: Tiles, tid: u32) {
    let (warp, lane) = (tid / 32 - 1, tid % 32);
    let width = sh.w as u32;
    let pixels = geo.in_rows * width;
    // This lane's slot for pixels outside the patch (stmatrix writes a row for every lane).
    let trash = scratch + (warp * 32 + lane) * 16;
    // rel / W as a high multiply: exact for rel and W below 2^16 (rel < 256 here); W = 1 is
    // the one width whose factor (2^32 + 1) does not fit 32 bits.
    let magic = if width == 1 { 0 } else { (u32::MAX / width) + 1 };
    for_each_chunk(geo, tiles, |i, m0, _, _| {
        let (_, _, lead, groups) = geo.landing(sh, m0);
        let b = i & 1;
        let patch = patch0 + b * PATCH_BYTES as u32;
        let landing = landing + b * PATCH_LANDING_BYTES as u32;
        // SAFETY: initialised barriers; the consumers' wgmmas that read this patch two chunks
        // ago retired before their arrivals.
        unsafe {
            mbar_wait(bars.land_full(b), (i >> 1) & 1);
            mbar_wait(bars.patch_empty(b), ((i >> 1) & 1) ^ 1);
        }
        // The warp together for the `.aligned` matrix moves.
        sync_warp();
        // Items: (8-pixel group g, 32-channel half h); a warp's every third, ILP a turn, their
        // ldmatrix in flight together (one at a time, a division each, and one landing, the
        // kernel took 1.6-2x step 7's time: H100, thirtieth session). Past the chunk's items
        // (warp-uniform) an item reads the landing's last copy and writes to the lane's
        // scratch slot.
        let items = 2 * groups;
        let mut item = warp;
        while item < items {
            let mut v = [[0u32; 4]; ILP];
            unroll!(4: ILP, u => {
                let it = item + 3 * u as u32;
                let (g, h) = ((it >> 1).min(LAST_GROUP), it & 1);
                // ldmatrix: lane 8m + k gives row k of matrix m, channel row 32h + 8m + k of
                // the landing, 16-byte unit g % 8 of copy g / 8 (swizzled by the channel row).
                let c = 32 * h + lane;
                let src = landing + (g >> 3) * BOX_BYTES + c * ROW_BYTES as u32 + (((g & 7) ^ (c & 7)) << 4);
                // SAFETY: the landed copies (waited for above), 16-byte aligned rows.
                v[u] = unsafe { ldmatrix_x4_trans(src) };
            });
            unroll!(4: ILP, u => {
                let it = item + 3 * u as u32;
                let (g, h) = (it >> 1, it & 1);
                // stmatrix: lane 8m + k gives row k of matrix m: pixel 8g + k, channels 32h + 8m..
                let rel = (8 * g + (lane & 7)) as i32 - lead as i32;
                let dst = if rel >= 0 && (rel as u32) < pixels {
                    let row = if width == 1 { rel as u32 } else { ((rel as u64 * magic as u64) >> 32) as u32 };
                    let at = (row << geo.shift) + (rel as u32 - row * width) + sh.pad_w as u32;
                    patch + at * ROW_BYTES as u32 + (((4 * h + lane / 8) ^ (at & 7)) << 4)
                } else {
                    trash
                };
                // SAFETY: the patch row of one pixel (each written by one lane of one item),
                // or this lane's own scratch slot; the patch is free (waited for above).
                unsafe { stmatrix_x4(dst, v[u]) };
            });
            item += 3 * ILP as u32;
        }
        // The patch's generic writes before the consumers' wgmmas (async proxy).
        fence_proxy_async_shared();
        // SAFETY: one arrival per transposer per chunk on each, as initialised.
        unsafe {
            mbar_arrive(bars.patch_full(b));
            mbar_arrive(bars.land_empty(b));
        }
    });
}

/// A consumer warpgroup (`tid` 128..383: rows 64*cw.. of each tile): every k-tile (chunk, tap)
/// as soon as the chunk's patch and the tap's filter tile are in, then the tile's NCHW stores.
///
/// # Safety
/// All 128 threads of the warpgroup, after the barriers' initialisation; the kernel's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn consume_patches<Acc: Accumulators, const STAGES: usize, M: Math>(sh: &ConvShape, geo: &Geo, y: *mut f32, ring: Ring<STAGES>, bars: Bars, patch0: u32, mut tiles: Tiles, tid: u32) {
    let cw = tid / WG - 1;
    let ktiles = geo.chunks as i32 * sh.r * sh.s;
    let mut at = Position::START;
    let mut chunk = 0u32;
    let plane = (sh.p * sh.q) as u32;
    while let Some((m0, n0)) = tiles.next::<1>() {
        let (image, p0) = geo.tile(m0);
        let rows = PatchRows {
            m0,
            base: (image * sh.k as u32 * sh.p as u32 + p0) * sh.q as u32,
            rows_left: sh.p as u32 - p0,
            shift: geo.shift,
            q: sh.q as u32,
            k: sh.k as u32,
            plane,
            sixteen: sh.y_bits == 16,
        };
        // SAFETY: the caller's contract (the residual, where there is one, is output-shaped).
        unsafe { prefetch_residual_nchw::<PatchRows, Acc>(&rows, &sh.ep, m0, n0, cw, tid) };
        let mut acc = Acc::ZERO;
        let (mut spare, mut total) = (Acc::ZERO, Acc::ZERO);
        let mut prev = 0u32;
        // The patch whose last wgmmas are still in flight, released after the next wait.
        let mut held: Option<u32> = None;
        let mut kt = 0;
        let mut c = 0;
        while c < geo.chunks {
            let b = chunk & 1;
            // SAFETY: initialised; the transposers cannot refill it before this side's release.
            unsafe { mbar_wait(bars.patch_full(b), (chunk >> 1) & 1) };
            let rows = patch0 + b * PATCH_BYTES as u32 + cw * 64 * ROW_BYTES as u32;
            let mut r = 0;
            while r < sh.r {
                let mut s = 0;
                while s < sh.s {
                    let off = (((r * sh.dil_h) as u32) << geo.shift) + (s * sh.dil_w) as u32;
                    // SAFETY: as above for the stage; the patch rows from `off` (inside the
                    // patch: `patch_geometry`) are written and fenced; uniform control flow.
                    unsafe {
                        ring.wait_full(at);
                        M::k_tile(&mut acc, &mut spare, &mut total, desc_sw128(rows + off * ROW_BYTES as u32), desc_sw128(ring.stage_addr(at.stage)), 0, 0, kt, ktiles);
                        acc.wait_1();
                        if kt > 0 {
                            // k-tile kt-1's wgmmas retired.
                            ring.release::<1>(prev);
                        }
                        if let Some(hb) = held.take() {
                            // The last chunk's wgmmas retired with k-tile kt-1.
                            mbar_arrive(bars.patch_empty(hb));
                        }
                    }
                    prev = at.stage;
                    at = at.next::<STAGES>();
                    kt += 1;
                    s += 1;
                }
                r += 1;
            }
            held = Some(b);
            chunk += 1;
            c += 1;
        }
        // SAFETY: uniform; every wgmma retires, then the last stage and patch go back.
        unsafe {
            acc.wait_0();
            ring.release::<1>(prev);
            if let Some(hb) = held {
                mbar_arrive(bars.patch_empty(hb));
            }
        }
        // SAFETY: the whole warpgroup; the caller's contract (the staging at the end of the
        // block's shared memory, this tile's elements this thread's alone).
        unsafe { store_nchw_wide::<PatchRows, Acc, M>(&rows, &sh.ep, y, &acc, m0, n0, cw, tid, 0, false) };
    }
}
