//! The tensor-core implicit-GEMM mainloop shared by `wmma_nhwc` and `wmma_nhwcnc` (fp16 or bf16
//! in, fp32 accumulate, output in the input's type or fp32): `mma.sync` m16n8k16 and `ldmatrix` from an XOR-swizzled
//! multi-stage `cp.async` pipeline. The same mainloop runs fp32 data (`wmma_nhwc_tf32`,
//! `wmma_nhwc_3xtf32`) with `mma.sync` m16n8k8 TF32: a k-step is 32 bytes of a shared row for
//! every element type, so only the channels a 16-byte chunk holds (8 or 4) and the MMA differ
//! ([`super::mma_kind`]). Below, "channels" counts 16-bit ones; for fp32, halve them.
//!
//! # The GEMM
//!
//! ```text
//! D[m][k] = sum over (r, s, c) of A[m][(r, s, c)] * B[(r, s, c)][k]
//!   m              an output pixel (n, p, q), GEMM M = N*P*Q (the order of m is the layout's)
//!   k              an output channel,         GEMM N = K
//!   A[m][(r,s,c)] = x[n][p*stride_h - pad_h + r*dil_h][q*stride_w - pad_w + s*dil_w][c]  (0 outside)
//!   B[(r,s,c)][k] = w[k][r][s][c]
//! ```
//!
//! Both operands must be reduction-major: channels contiguous in runs of at least 8 (one
//! 16-byte chunk), so a row of A or a column of B for one tap is a list of 16-byte chunks that
//! are each wholly inside or wholly outside the tensor, and `cp.async`'s zero-fill handles every
//! edge. Where the chunks lie is the [`Operands`] trait: every address is a linear map of
//! (pixel, tap, channel), so the mainloop only adds offsets. `nhwc` implements it for plain
//! NHWC / KRSC / NHWK data, `nhwcnc` for the blocked NHWC16n16c / RSCK16k16c / NHWC16n16k.
//!
//! # Tile hierarchy (CUTLASS vocabulary)
//!
//! ```text
//! grid        1-D, (M tiles) x (N tiles), N tile fastest (the blocks sharing an A tile run together)
//! block tile  BM x BN x BK = (WARPS_M*WM) x (WARPS_N*WN) x (8*KCH), BK = 32 or 64 channels
//! warp tile   WM x WN = (MT*16) x (NT*8): MT x NT mma tiles, MT*NT*4 fp32 accumulators per thread
//!             (64x64: 4 x 8 tiles, 128 accumulators, ~225 registers, no spills)
//! mma tile    m16n8k16 (`mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`), BK/16 k-steps per k-tile
//! ```
//!
//! The compiled tiles (listed once in `convrs_spec::tensor_core_tiles!`):
//!
//! | entries (`wmma_nhwc_*`, `wmma_nhwcnc_*`) | block tile | warps x warp tile | stages | shared memory |
//! | --- | --- | --- | --- | --- |
//! | `128x256k64` | 128x256x64 | 2x4 x 64x64 | 4 | 4 x 48 KiB = 192 KiB |
//! | `128x128k64` | 128x128x64 | 2x2 x 64x64 | 3 | 3 x 32 KiB = 96 KiB |
//! | `128x128` | 128x128x32 | 2x2 x 64x64 | 4 | 4 x 16 KiB = 64 KiB |
//! | `128x64` | 128x64x32 | 2x2 x 64x32 | 4 | 4 x 12 KiB = 48 KiB |
//! | `64x64` | 64x64x32 | 2x2 x 32x32 | 4 | 4 x 8 KiB = 32 KiB |
//!
//! # Mainloop
//!
//! The reduction runs as k-tiles of (r, s, BK channels), c fastest; the last k-tile of a tap is
//! zero-filled past C. A k-tile of A is BM rows x 2*BK bytes and of B is BN rows x 2*BK bytes in
//! shared memory; STAGES of them form a ring. With KS = BK/16 k-steps:
//!
//! ```text
//! prologue: copy k-tiles 0..STAGES-2 (one commit group each); wait_group(STAGES-2); barrier
//!           fragments of k-step 0
//! for kt:   k-step 0:    copy k-tile kt+STAGES-1 into kt-1's stage; commit (maybe empty)
//!           k-step ks:   ldmatrix the fragments of k-step ks+1, then the MT*NT mma.sync of ks
//!           k-step KS-1: wait_group(STAGES-2); barrier (k-tile kt+1 visible; kt's reads done);
//!                        ldmatrix k-step 0 of k-tile kt+1, then the mma.sync of KS-1
//! epilogue: accumulators straight from registers to y, predicated on M and K: 8-byte fp32 stores,
//!           or 4-byte stores of pairs rounded to the input's 16-bit type (ConvShape::y_bits)
//! ```
//!
//! So the fragments of the next k-step are always in flight while the tensor cores work, also
//! across the barrier (which `ldmatrix` cannot cross by itself); this measured 2 to 10% faster
//! than loading each k-step's fragments just before its mma.sync.
//!
//! Each thread copies fixed rows (`tid/4 + i*THREADS/4`) at fixed 16-byte chunks (`tid%4`, and
//! `tid%4 + 4` when BK = 64) of the k-tile (tiled layout: rows `16*warp + lane/2 + 16i*warps`,
//! chunks `lane%2 + 2u`). The pixel decomposition (n, p, q) of its A rows is
//! done once before the mainloop; per k-tile only `(r*dil_h, s*dil_w)` and two running offsets
//! change, advanced incrementally (no divisions in the mainloop). Out-of-image taps, rows past
//! M, filter rows past K and channels past C are `cp.async` copies with `src-size` 0, i.e. zeros.
//!
//! # Swizzle
//!
//! `ldmatrix` reads one 16-byte chunk from each of 8 consecutive rows per 8x8 matrix; stored
//! plainly, those chunks would share bank groups (64-byte rows: 2 of the 8 16-byte groups, a
//! 4-way conflict; 128-byte rows: 1 group, 8-way). Chunk `c` of row `r` is stored in slot
//! `c ^ swizzle(r)`: for 128-byte rows (BK 64) `swizzle(r) = r & 7`, for 64-byte rows (BK 32)
//! `(r >> 1) & 3` (rows 2j and 2j+1 already differ in the 64-byte half; the XOR spreads the four
//! row pairs over the four slots). Either way the 8 rows hit 8 distinct bank groups
//! (conflict-free), and a warp's copies (whole rows) stay at the minimum number of wavefronts.
//!
//! # Tiled shared layout ([`Operands::TILED`])
//!
//! For the blocked layouts, where 16 GEMM rows x 16 channels of one tap are one contiguous
//! 512-byte global tile, a stage instead holds those tiles whole: per 16-row group (still
//! 16 * 2*BK bytes, so fragment tiles stay 16 * 2*BK bytes apart), BK/16 tiles of 512 bytes, one
//! per 16-channel block; in a tile, row `r` is 32 bytes at `32r` and its 16-byte half `h` in
//! slot `h ^ ((r >> 2) & 1)`: an `ldmatrix` 8x8 matrix (8 rows, one half) then hits units
//! 0,2,4,6,1,3,5,7 of the 128-byte bank line (conflict-free), and k-step ks reads tile ks. Each
//! warp copies whole 16-row groups (warp w: groups w, w + warps, ...; all their 16-channel
//! blocks), lane i the i-th 16-byte piece of a tile, so a warp's copy is 512 contiguous bytes
//! at both ends. With the rows layout the blocked kernel's L2 read requests carried one 32-byte
//! sector each; with this one it runs as fast as wmma_nhwc (tensor_core/nhwcnc.rs has the
//! figures; the request count after the change was not measured with ncu). The plain layout keeps the swizzled rows: its PTX is byte-identical to before.

use core::num::NonZeroU32;

use convrs_spec::tensor_core::{block_m, block_n, k_tile, k_tile_f32, smem_bytes, stage_bytes, threads};

use super::mma_kind::MmaKind;
use crate::prelude::matrix::{ldmatrix_x4, store_global_16x2, store_global_f32x2};
use crate::prelude::*;

/// Where the GEMM's operands and result lie in memory: element offsets (in elements of `x`,
/// `w`, `y`) as maps that are linear in the pixel, the tap and the channel, so the kernel
/// computes a row's base once and then only adds offsets. Implemented by zero-sized types, one
/// per layout family; every method is inlined into the kernel.
pub trait Operands {
    /// Whether k-tiles are arranged in shared memory as whole 16 x 16 tiles ("tiled"; see the
    /// module docs) instead of swizzled rows. For layouts whose 16 rows x 16 channels of an
    /// operand are one contiguous 512-byte tile in global memory, so that a warp's copy of a tile
    /// is one contiguous 512-byte piece at both ends.
    const TILED: bool = false;
    /// Whether the kernel can take `sh` in this layout (it traps otherwise; the plan refuses
    /// such shapes first).
    fn supports(sh: &ConvShape) -> bool;
    /// The output pixel `(n, p, q)` of GEMM row `m < N*P*Q`.
    ///
    /// # Safety
    /// `P*Q >= 1` and `Q >= 1`.
    unsafe fn pixel(sh: &ConvShape, m: u32) -> (u32, u32, u32);
    /// Offset of `x[n][ih][iw][0]`, wrapping (`ih`, `iw` may be in the padding: the sum with
    /// an in-image tap's offset is then in range).
    fn x_origin(sh: &ConvShape, n: i32, ih: i32, iw: i32) -> i32;
    /// Elements between horizontally adjacent pixels of one image in `x`.
    fn x_pixel(sh: &ConvShape) -> i32;
    /// Elements per channel in `x` for whole 16-channel blocks: channel `16j + i` (i < 16) lies
    /// `16j * x_chan + i` after channel 0 (channels are contiguous at least in runs of 16).
    fn x_chan(sh: &ConvShape) -> i32;
    /// The same for `w`.
    fn w_chan(sh: &ConvShape) -> i32;
    /// Offset of `w[k][0][0][0]`.
    fn w_row(sh: &ConvShape, k: i32) -> i32;
    /// Elements between consecutive filter taps `(r, s)` and `(r, s+1)` (or `(r+1, 0)`) in `w`.
    fn w_tap(sh: &ConvShape) -> i32;
    /// Offset of `y` element (GEMM row `m`, output channel `col`), `col` even; `col + 1` must
    /// follow it contiguously.
    fn y_off(sh: &ConvShape, m: u32, col: u32) -> u32;
    /// The output channels of GEMM elements (`row`, `col`) and (`row`, `col + 1`), `col` even
    /// (the fused epilogue's scale and bias): the columns of a pixel-row GEMM.
    #[inline(always)]
    fn y_channels(_sh: &ConvShape, _row: u32, col: u32) -> (u32, u32) {
        (col, col + 1)
    }
    /// Whether the activations are NCHW planes read by `Producer::Planes` (the Hopper kernel's
    /// GEMM is then transposed: rows are output channels, columns pixels; the methods above
    /// that describe a pixel-row A operand are not used).
    const PLANES: bool = false;
    /// Whether the activations are NCHW rows read by `Producer::PlaneRows` (then [`Operands::PLANES`]
    /// holds too: the GEMM is transposed as there, its columns output rows of whole copies).
    const PLANE_ROWS: bool = false;
    /// Whether the activations are NCHW planes read by `Producer::PlanePixels`: the rows are
    /// (image, pixel) pairs, the columns output channels, and an output column's elements are
    /// a plane apart (so `y_off`'s `col + 1` does not follow `col`; the rows do, within an image).
    const PIXEL_PLANES: bool = false;
    /// Whether the rows are NHWC output pixels as for plain NHWC data but the output is NCHW
    /// (`Producer::WsTmaNchw`): `y_off`'s `col + 1` is a plane further, and the rows are
    /// contiguous within an image, as under [`Operands::PIXEL_PLANES`].
    const Y_NCHW: bool = false;
    /// The GEMM output's rows and columns: N*P*Q pixels by K channels.
    #[inline(always)]
    fn gemm_mn(sh: &ConvShape) -> (u32, u32) {
        ((sh.n * sh.p * sh.q) as u32, sh.k as u32)
    }
    /// Whether any row of the 64-row block from GEMM row `row` (its first) at column `col` is in
    /// the output: a block that is not skips its MMAs and stores. Its first row's, unless a
    /// layout's rows have holes.
    #[inline(always)]
    fn block_in(sh: &ConvShape, row: u32, col: u32) -> bool {
        Self::y_in(sh, row, col)
    }
    /// Whether GEMM element (`row`, `col`) is in the output (and, `col` the first of an
    /// aligned 8-column group, the whole group).
    #[inline(always)]
    fn y_in(sh: &ConvShape, row: u32, col: u32) -> bool {
        let (m, n) = Self::gemm_mn(sh);
        row < m && col < n
    }
}

/// Offset of channel `c` from channel 0 in an operand with `per` elements per channel for whole
/// 16-channel blocks (see [`Operands::x_chan`]); `c & 15` is 0 or 8 for a chunk.
#[inline(always)]
pub(super) fn chan(c: i32, per: i32) -> i32 {
    (c & !15) * per + (c & 15)
}

/// Physical 16-byte chunk slot of logical chunk 0 in shared row `row` of `kch` chunks (4: 64-byte
/// rows, two per 128-byte bank line; 8: 128-byte rows); see the module docs. Chunk `c` goes to
/// slot `c ^ swizzle(row)`.
#[inline(always)]
fn swizzle(row: u32, kch: usize) -> u32 {
    if kch == 8 { row & 7 } else { (row >> 1) & 3 }
}

/// Tiled shared layout: byte offset of row `row % 16`'s 16-byte half `half` inside its 512-byte
/// 16 x 16 tile (rows of 32 bytes, the halves swapped in rows 4-7 and 12-15; see the module docs).
#[inline(always)]
fn tiled_row(row: u32, half: u32) -> u32 {
    (row & 15) * 32 + ((half ^ ((row >> 2) & 1)) << 4)
}

/// `(a / b, a % b)` in unsigned arithmetic, without the divide-by-zero branch.
///
/// # Safety
/// `b >= 1`.
#[inline(always)]
pub(super) unsafe fn divmod(a: u32, b: u32) -> (u32, u32) {
    // SAFETY: the caller guarantees b >= 1.
    let d = unsafe { NonZeroU32::new_unchecked(b) };
    (a / d, a % d)
}

/// Where the producer is in the reduction: the next k-tile to copy.
#[derive(Clone, Copy)]
pub(super) struct Tap {
    /// First channel of the k-tile.
    pub(super) c0: i32,
    pub(super) s: i32,
    /// `r * dil_h` and `s * dil_w`.
    pub(super) rdh: i32,
    pub(super) sdw: i32,
    /// `(r*dil_h*W + s*dil_w) * O::x_pixel`: the tap's offset in `x` relative to a pixel's
    /// window origin.
    pub(super) x_off: i32,
    /// `(r*S + s) * O::w_tap`: the tap's offset in `w` relative to a filter row.
    pub(super) w_off: i32,
}

impl Tap {
    /// The first k-tile: tap (0, 0), channel 0.
    pub(super) const START: Tap = Tap { c0: 0, s: 0, rdh: 0, sdw: 0, x_off: 0, w_off: 0 };

    /// The k-tile of filter tap `rs` (`r * S + s`) starting at channel `c0`: where a reduction
    /// that starts part-way (a split of step 8) begins.
    ///
    /// # Safety
    /// `S >= 1`.
    #[inline(always)]
    #[cfg_attr(not(target_feature = "sm_90a"), allow(dead_code))] // only the split-K schedule starts part-way
    pub(super) unsafe fn at<O: Operands>(g: &ConvShape, rs: u32, c0: i32) -> Tap {
        // SAFETY: as the caller guarantees.
        let (r, s) = unsafe { divmod(rs, g.s as u32) };
        let (rdh, sdw) = (r as i32 * g.dil_h, s as i32 * g.dil_w);
        // Wrapping as in `advance`.
        let x_off = rdh.wrapping_mul(g.w).wrapping_add(sdw).wrapping_mul(O::x_pixel(g));
        Tap { c0, s: s as i32, rdh, sdw, x_off, w_off: rs as i32 * O::w_tap(g) }
    }

    /// Moves to the next k-tile: the next `bk` channels, or the next (r, s) tap.
    #[inline(always)]
    pub(super) fn advance<O: Operands>(&mut self, g: &ConvShape, bk: i32) {
        self.c0 += bk;
        if self.c0 >= g.c {
            self.c0 = 0;
            self.w_off += O::w_tap(g);
            self.s += 1;
            self.sdw += g.dil_w;
            if self.s == g.s {
                self.s = 0;
                self.sdw = 0;
                self.rdh += g.dil_h;
            }
            // Wrapping: for taps wholly in the padding this may exceed i32, but it is only used
            // for in-image taps, whose sums are in range.
            self.x_off = self.rdh.wrapping_mul(g.w).wrapping_add(self.sdw).wrapping_mul(O::x_pixel(g));
        }
    }
}

/// Declares `$ih`, `$iw` and `$base` (`[i32; $n]`) for the A rows one producer thread copies:
/// GEMM rows `$first + i * $step` for `i < $rows` (at most `$n`), each row's window origin in
/// the input (`ih`, `iw`: its top-left tap, maybe in the padding) and that origin's offset in
/// `x` at the first channel of the thread's chunk, `$chunk_chan` (`base`). Found once per tile;
/// per k-tile only the tap moves. A row past M gets an origin so far above the image that no
/// tap reaches it (`i32::MIN + r*dil_h` stays negative for any tap in i32). A statement macro rather than a
/// function returning the arrays: it expands to the code the three kernels wrote in place, so
/// their PTX did not change by sharing it.
macro_rules! a_rows {
    ($O:ty, $sh:expr, [$ih:ident, $iw:ident, $base:ident; $n:expr], $rows:expr, $gemm_m:expr, $first:expr, $step:expr, $chunk_chan:expr) => {
        let mut $ih = [0i32; $n];
        let mut $iw = [0i32; $n];
        let mut $base = [0i32; $n];
        unroll!(8: $rows, i => {
            let m = $first + i as u32 * $step;
            if m < $gemm_m {
                // SAFETY: P*Q >= 1 and Q >= 1 (validated problems have non-empty outputs).
                let (n, p, q) = unsafe { <$O>::pixel($sh, m) };
                $ih[i] = p as i32 * $sh.stride_h - $sh.pad_h;
                $iw[i] = q as i32 * $sh.stride_w - $sh.pad_w;
                // Wrapping: only summed with a tap's offset when the tap is inside the image.
                $base[i] = <$O>::x_origin($sh, n as i32, $ih[i], $iw[i]).wrapping_add(chan($chunk_chan, <$O>::x_chan($sh)));
            } else {
                $ih[i] = i32::MIN;
            }
        });
    };
}
// Used by the Hopper kernels, which only the sm_90a build has.
#[cfg_attr(not(target_feature = "sm_90a"), allow(unused_imports))]
pub(super) use a_rows;

/// Declares `$ok` and `$base` (`[_; $n]`) for the B rows (output channels) one producer thread
/// copies: GEMM columns `$first + j * $step` for `j < $rows`, whether each is below N, and its
/// filter row's offset at the first channel of the thread's chunk, `$chunk_chan`. A statement
/// macro for the reason [`a_rows!`] is one.
macro_rules! b_rows {
    ($O:ty, $sh:expr, [$ok:ident, $base:ident; $n:expr], $rows:expr, $gemm_n:expr, $first:expr, $step:expr, $chunk_chan:expr) => {
        let mut $ok = [false; $n];
        let mut $base = [0i32; $n];
        unroll!(8: $rows, j => {
            let k = $first + j as u32 * $step;
            $ok[j] = k < $gemm_n;
            $base[j] = <$O>::w_row($sh, k as i32).wrapping_add(chan($chunk_chan, <$O>::w_chan($sh)));
        });
    };
}
#[cfg_attr(not(target_feature = "sm_90a"), allow(unused_imports))]
pub(super) use b_rows;

/// The fragments of one k-step: MT A tiles of 16x16 (one ldmatrix.x4 each, `a` the lane's row
/// address of the first, `step` bytes between tiles) and NT B tiles of 16x8 (two per
/// ldmatrix.x4, from `b` likewise). A plain function rather than a closure, so that it is
/// always inlined and every fragment stays in registers.
///
/// # Safety
/// The warp is converged; every lane's addresses are 16-byte aligned rows of a shared stage that
/// a barrier made visible.
#[inline(always)]
unsafe fn fragments<const MT: usize, const NT: usize>(a: u32, b: u32, step: u32) -> ([[u32; 4]; MT], [[u32; 2]; NT]) {
    let mut af = [[0u32; 4]; MT];
    unroll!(8: MT, i => {
        // SAFETY: as the caller guarantees.
        af[i] = unsafe { ldmatrix_x4(a + i as u32 * step) };
    });
    let mut bf = [[0u32; 2]; NT];
    unroll!(8: NT / 2, j => {
        // SAFETY: as the caller guarantees.
        let v = unsafe { ldmatrix_x4(b + j as u32 * step) };
        bf[2 * j] = [v[0], v[1]];
        bf[2 * j + 1] = [v[2], v[3]];
    });
    (af, bf)
}

/// The MT x NT MMAs of one k-step on the warp tile's accumulators.
#[inline(always)]
fn mma_warp_tile<const MT: usize, const NT: usize, E: MmaKind>(acc: &mut [[[f32; 4]; NT]; MT], (af, bf): &([[u32; 4]; MT], [[u32; 2]; NT])) {
    unroll!(8: MT, i => {
        unroll!(8: NT, j => {
            // SAFETY: the kernel calls this in uniform control flow (converged warps).
            unsafe { E::mma(&mut acc[i][j], &af[i], &bf[j]) };
        });
    });
}

/// The kernel: `WARPS_M x WARPS_N` warps of `MT x NT` m16n8 tiles each, k-tiles of KCH 16-byte
/// chunks (BK = `E::CHUNK` * KCH channels), `STAGES` k-tiles in flight, operands addressed by
/// `O`, multiplied as `E` says. Launched with
/// `convrs_spec::tensor_core::threads` threads, a 1-D grid of `ceil(M / BM) * ceil(K / BN)` blocks
/// and `convrs_spec::tensor_core::smem_bytes` of shared memory (host/src/plan/tensor_core/nhwc.rs); the shape
/// passes `O::supports` (the kernel traps otherwise).
///
/// # Safety
/// `x`, `w`, `y` hold N*H*W*C, K*R*S*C and N*P*Q*K elements in `O`'s layouts, 16-byte aligned,
/// and `sh` describes them with every index in `i32`.
#[inline(always)]
pub unsafe fn conv<O: Operands, E: MmaKind, const WARPS_M: usize, const WARPS_N: usize, const MT: usize, const NT: usize, const STAGES: usize, const KCH: usize>(
    x: *const E::Elem,
    w: *const E::Elem,
    y: *mut f32,
    sh: ConvShape,
) {
    const {
        let threads = threads(WARPS_M, WARPS_N);
        assert!(MT >= 1 && MT <= 8 && NT >= 2 && NT <= 8 && NT % 2 == 0);
        assert!(STAGES >= 2 && STAGES <= 8);
        assert!(KCH == 4 || KCH == 8);
        // Whole rows per pass of the block's copies, and at most 8 copies per operand per thread.
        assert!((WARPS_M * MT * 16 * 4) % threads == 0 && (WARPS_M * MT * 16 * 4) / threads <= 8);
        assert!((WARPS_N * NT * 8 * 4) % threads == 0 && (WARPS_N * NT * 8 * 4) / threads <= 8);
        // Tiled: each warp copies whole 16-row groups of A and B (all their 16-channel blocks).
        let warps = WARPS_M * WARPS_N;
        assert!(!O::TILED || ((WARPS_M * MT) % warps == 0 && (WARPS_N * NT / 2) % warps == 0));
        // The tiled layouts are 16-bit (16 channels a 32-byte tile row).
        assert!(!O::TILED || E::CHUNK == 8);
    }
    let threads = threads(WARPS_M, WARPS_N);
    let (bm, bn) = (block_m(WARPS_M, MT) as u32, block_n(WARPS_N, NT) as u32);
    // Rows each thread copies: 4 threads a row (plain), 2 (tiled).
    let per_row = const { if O::TILED { 2 } else { 4 } };
    let (a_loads, b_loads) = (bm as usize * per_row / threads, bn as usize * per_row / threads);
    // A k-tile is KCH 16-byte chunks per shared row: BK = 8*KCH 16-bit channels (k_tile), 4*KCH fp32.
    let bk = if E::CHUNK == 8 { k_tile(KCH) as i32 } else { k_tile_f32(KCH) as i32 };
    let row_bytes = 16 * KCH as u32;
    let stage_bytes = stage_bytes(bm as usize, bn as usize, KCH) as u32;
    if block_dim_x() != threads as i32 || dynamic_smem_bytes() < smem_bytes(bm as usize, bn as usize, KCH, STAGES) as u32 || !O::supports(&sh) {
        trap();
    }
    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    let gemm_n = sh.k as u32;
    // SAFETY: bn >= 16.
    let (mtile, ntile) = unsafe { divmod(block_x() as u32, gemm_n.div_ceil(bn)) };
    let (m0, n0) = (mtile * bm, ntile * bn);
    let tid = thread_x() as u32;

    // Producer, plain: this thread copies chunks `chunk + 4u` (u < KCH/4) of rows
    // `lrow + i * row_step`. row_step is a multiple of 8, so all its rows share one swizzle and
    // one destination offset pattern; chunk + 4u lands in slot (chunk ^ swizzle) ^ 4u, i.e. at
    // `ldst ^ 64u`.
    // Tiled: a warp copies the 16-row groups `warp + i * warps`, lane pair `lane/2` row
    // `lane/2` of the group, lane `lane%2` its half `chunk` of each 16-channel block u < KCH/2:
    // consecutive lanes, consecutive 16-byte pieces of one 512-byte tile, which lands at
    // `ldst ^ 512u` (= ldst + 512u: ldst's bits 9 and up are whole groups of 16 * row_bytes).
    let chunk = (tid % const { if O::TILED { 2 } else { 4 } }) as i32;
    let lrow = if O::TILED { (tid / 32) * 16 + (tid % 32) / 2 } else { tid / 4 };
    let row_step = threads as u32 / per_row as u32;
    let ldst = if O::TILED {
        (lrow & !15) * row_bytes + tiled_row(lrow, chunk as u32)
    } else {
        lrow * row_bytes + (((chunk as u32) ^ swizzle(lrow, KCH)) << 4)
    };
    // Per u: channels and destination offset of the next chunks.
    let (u_count, u_chans, u_slot): (usize, i32, u32) = const { if O::TILED { (KCH / 2, 16, 512) } else { (KCH / 4, 4 * E::CHUNK, 64) } };
    a_rows!(O, &sh, [a_ih, a_iw, a_base; 8], a_loads, gemm_m, m0 + lrow, row_step, chunk * E::CHUNK);
    b_rows!(O, &sh, [b_ok, b_base; 8], b_loads, gemm_n, n0 + lrow, row_step, chunk * E::CHUNK);

    let smem = dynamic_smem_u32();
    let (h, wd) = (sh.h as u32, sh.w as u32);
    // Copies one k-tile into the stage at shared address `stage`.
    // A macro rather than a closure, so that it is always inlined (a closure called from the
    // prologue and the mainloop may be outlined, and its arrays then live in local memory).
    macro_rules! load {
        ($stage:expr, $t:expr) => {{
            let stage: u32 = $stage;
            let t: &Tap = $t;
            // The k-tile's first channel (a multiple of 32) as offsets: x_chan and w_chan per
            // channel for whole 16-channel blocks.
            let xc = t.c0 * O::x_chan(&sh);
            let wc = t.c0 * O::w_chan(&sh);
            unroll!(4: u_count, u => {
                let cu = chunk * E::CHUNK + u_chans * u as i32;
                let c_ok = t.c0 + cu < sh.c;
                let slot = u_slot * u as u32;
                unroll!(8: a_loads, i => {
                    let ok = c_ok && ((a_ih[i] + t.rdh) as u32) < h && ((a_iw[i] + t.sdw) as u32) < wd;
                    let off = if ok { a_base[i].wrapping_add(t.x_off).wrapping_add(xc + u_chans * u as i32 * O::x_chan(&sh)) } else { 0 };
                    let dst = stage + (ldst ^ slot) + i as u32 * row_step * row_bytes;
                    // SAFETY: dst is inside the stage's A tile (row < BM), 16-byte aligned; off is an
                    // in-bounds, 8-element aligned index of x when ok, and nothing is read otherwise.
                    unsafe { cp_async_16(dst, x.wrapping_add(off as u32 as usize) as *const f32, if ok { 16 } else { 0 }) };
                });
                unroll!(8: b_loads, j => {
                    let ok = c_ok && b_ok[j];
                    let off = if ok { b_base[j] + t.w_off + wc + u_chans * u as i32 * O::w_chan(&sh) } else { 0 };
                    let dst = stage + bm * row_bytes + (ldst ^ slot) + j as u32 * row_step * row_bytes;
                    // SAFETY: as for A, inside the stage's B tile; off < K*R*S*C when ok.
                    unsafe { cp_async_16(dst, w.wrapping_add(off as u32 as usize) as *const f32, if ok { 16 } else { 0 }) };
                });
            });
        }};
    }

    // Consumer: ldmatrix row addresses of this lane for each k-step.
    let (warp, lane) = (tid / 32, tid % 32);
    let (wm, wn) = (warp % WARPS_M as u32, warp / WARPS_M as u32);
    // A: lanes 0-15 address rows 0-15 at chunk 0, lanes 16-31 the same rows at chunk 1 ->
    // matrices (rows 0-7, k 0-7), (8-15, k 0-7), (0-7, k 8-15), (8-15, k 8-15) = a0..a3.
    // k-step ks reads chunks 2ks and 2ks+1, i.e. slot (bit ^ swizzle) ^ 2ks.
    // Tiled: k-step ks is the 16-channel block ks, the tile at 512*ks in the row group.
    let a_row = wm * MT as u32 * 16 + lane % 16;
    let a_chunk = (lane / 16) ^ swizzle(a_row, KCH);
    let mut a_frag = [0u32; 4];
    unroll!(4: KCH / 2, ks => {
        a_frag[ks] = if O::TILED {
            (a_row & !15) * row_bytes + 512 * ks as u32 + tiled_row(a_row, lane / 16)
        } else {
            a_row * row_bytes + ((a_chunk ^ (2 * ks as u32)) << 4)
        };
    });
    // B (stored [n][k], i.e. already the "col" operand): lanes 0-7 rows n 0-7 chunk 0, 8-15 the
    // same rows chunk 1, 16-23 rows 8-15 chunk 0, 24-31 chunk 1 -> b0, b1 of two n8 tiles.
    let b_row = wn * NT as u32 * 8 + (lane & 7) + ((lane >> 4) << 3);
    let b_chunk = ((lane >> 3) & 1) ^ swizzle(b_row, KCH);
    let mut b_frag = [0u32; 4];
    unroll!(4: KCH / 2, ks => {
        b_frag[ks] = if O::TILED {
            (bm + (b_row & !15)) * row_bytes + 512 * ks as u32 + tiled_row(b_row, (lane >> 3) & 1)
        } else {
            (bm + b_row) * row_bytes + ((b_chunk ^ (2 * ks as u32)) << 4)
        };
    });

    let mut acc = [[[0.0f32; 4]; NT]; MT];
    // The current k-tile's sums, if E keeps them apart (unused, and optimized away, otherwise).
    let mut part = [[[0.0f32; 4]; NT]; MT];
    let cchunks = (sh.c + bk - 1) / bk;
    let ktiles = sh.r * sh.s * cchunks;

    let frags = |base: u32, ks: usize| {
        // SAFETY: called in uniform control flow (converged); the addresses are rows < BM and
        // < BN of a stage that a barrier made visible.
        unsafe { fragments::<MT, NT>(base + a_frag[ks], base + b_frag[ks], 16 * row_bytes) }
    };

    let mut tap = Tap::START;
    unroll!(8: STAGES - 1, st => {
        if (st as i32) < ktiles {
            load!(smem + st as u32 * stage_bytes, &tap);
            tap.advance::<O>(&sh, bk);
        }
        cp_async_commit();
    });
    let (mut rd, mut wr) = (0u32, STAGES as u32 - 1);
    let mut kt = 0;
    // Fragment pipelining: k-step ks+1's fragments are read while k-step ks's mma.sync run,
    // and the barrier sits before the last k-step, so the next k-tile's first fragments are
    // read while the last k-step computes (ldmatrix cannot move across a barrier by itself).
    cp_async_wait_group(STAGES as u32 - 2);
    sync_threads();
    let mut cur = frags(smem, 0);
    while kt < ktiles {
        unroll!(4: KCH / 2, ks => {
            if ks == 0 {
                // Stage wr was last read in k-tile kt-1, whose reads all precede the previous barrier.
                if kt + (STAGES as i32 - 1) < ktiles {
                    load!(smem + wr * stage_bytes, &tap);
                    tap.advance::<O>(&sh, bk);
                }
                cp_async_commit();
            }
            let next = if ks + 1 < KCH / 2 {
                frags(smem + rd * stage_bytes, ks + 1)
            } else {
                cp_async_wait_group(STAGES as u32 - 2);
                // Uniform: every thread runs the same trip count. After it, k-tile kt+1 is
                // visible and every thread's reads of k-tile kt are done.
                sync_threads();
                rd = if rd + 1 == STAGES as u32 { 0 } else { rd + 1 };
                wr = if wr + 1 == STAGES as u32 { 0 } else { wr + 1 };
                // Past the last k-tile this reads a stale stage, harmlessly: it is never used.
                frags(smem + rd * stage_bytes, 0)
            };
            if E::KTILE_SUMS {
                mma_warp_tile::<MT, NT, E>(&mut part, &cur);
                if ks + 1 == KCH / 2 {
                    unroll!(8: MT, i => {
                        unroll!(8: NT, j => {
                            unroll!(4: 4, e => {
                                acc[i][j][e] += part[i][j][e];
                                part[i][j][e] = 0.0;
                            });
                        });
                    });
                }
            } else {
                mma_warp_tile::<MT, NT, E>(&mut acc, &cur);
            }
            cur = next;
        });
        kt += 1;
    }
    cp_async_wait_all();

    epilogue::<O, E, MT, NT>(&sh, y, &acc, m0 + wm * MT as u32 * 16, n0 + wn * NT as u32 * 8, lane);
}

/// Writes the warp tile's accumulators (rows from `row0`, columns from `col0`) to `y`, predicated
/// on M and K: lane (g, t) holds D[g][2t..2t+2] and D[g+8][2t..2t+2] of each mma tile, one
/// contiguous pair each. fp32 pairs as 8-byte stores, or (`sh.y_bits == 16`) rounded to the
/// input's 16-bit type as 4-byte stores; the test is uniform across the launch.
#[inline(always)]
fn epilogue<O: Operands, E: MmaKind, const MT: usize, const NT: usize>(sh: &ConvShape, y: *mut f32, acc: &[[[f32; 4]; NT]; MT], row0: u32, col0: u32, lane: u32) {
    let (gemm_m, gemm_n) = ((sh.n * sh.p * sh.q) as u32, sh.k as u32);
    let (g, t) = (lane / 4, lane % 4);
    let half = sh.y_bits == 16;
    // SAFETY: the calls below pass row < M and col + 1 < K, and each (row, col) is this lane's.
    let store = |row: u32, col: u32, a: f32, b: f32| unsafe {
        if E::BF16 { store_pair::<O, true>(sh, y, half, row, col, a, b) } else { store_pair::<O, false>(sh, y, half, row, col, a, b) }
    };
    unroll!(8: MT, i => {
        let row = row0 + i as u32 * 16 + g;
        unroll!(8: NT, j => {
            let col = col0 + j as u32 * 8 + 2 * t;
            if col < gemm_n {
                if row < gemm_m {
                    store(row, col, acc[i][j][0], acc[i][j][1]);
                }
                if row + 8 < gemm_m {
                    store(row + 8, col, acc[i][j][2], acc[i][j][3]);
                }
            }
        });
    });
}

/// Stores the output pair (GEMM row `row`, columns `col`, `col + 1`) = (`a`, `b`): fp32 as one
/// 8-byte store, or (`half`, i.e. `sh.y_bits == 16`, tested once by the caller) rounded to the
/// input's 16-bit type as one 4-byte store.
///
/// # Safety
/// `row < M` and `col + 1 < K` with `col` even (K and col's tile multiples of 8), so `y_off`
/// and the next element are in `y`, contiguous (its contract) and 8-byte (fp32) or 4-byte (16-bit)
/// aligned; no other thread of the launch writes this pair; `y` holds N*P*Q*K elements of
/// `y_bits` bits (host::launch).
#[inline(always)]
pub(super) unsafe fn store_pair<O: Operands, const BF16: bool>(sh: &ConvShape, y: *mut f32, half: bool, row: u32, col: u32, a: f32, b: f32) {
    let off = O::y_off(sh, row, col) as usize;
    // SAFETY: as the caller guarantees.
    unsafe {
        if half { store_global_16x2::<BF16>((y as *mut u16).add(off), a, b) } else { store_global_f32x2(y.add(off), a, b) }
    }
}

/// Declares the entry points of one layout family and element type from
/// `convrs_spec::tensor_core_tiles!`, called as `tensor_core_tiles!(entries, COLUMN, Ops)` with
/// COLUMN one of `nhwc`, `nhwcnc`, `nhwc_bf16`, `nhwcnc_bf16`: one
/// `conv::<Ops, WARPS_M, WARPS_N, MT, NT, STAGES, KCH, BF16>` per tile, named by that column of
/// the table. host/src/plan/tensor_core/nhwcnc.rs picks with wmma_nhwc's cost model, which is why both
/// families compile the same tiles (host/src/plan/tensor_core/nhwc.rs has their timings).
// The sm_90a module declares no mma.sync entries (lib.rs), so there the macro goes unused.
#[cfg_attr(target_feature = "sm_90a", allow(unused_macros))]
macro_rules! entries {
    ($column:ident $ops:ident $(($nhwc:ident, $nhwcnc:ident, $nhwc_bf16:ident, $nhwcnc_bf16:ident, $wm:literal, $wn:literal, $mt:literal, $nt:literal, $stages:literal, $kch:literal))*) => {
        $($crate::tensor_core::implicit_gemm::entries!(@one $column $ops, [$nhwc, $nhwcnc, $nhwc_bf16, $nhwcnc_bf16], $wm, $wn, $mt, $nt, $stages, $kch);)*
    };
    (@one nhwc $ops:ident, [$name:ident, $_b:ident, $_c:ident, $_d:ident], $($g:literal),*) => {
        $crate::tensor_core::implicit_gemm::entries!(@entry $name, $ops, F16, u16, $($g),*);
    };
    (@one nhwcnc $ops:ident, [$_a:ident, $name:ident, $_c:ident, $_d:ident], $($g:literal),*) => {
        $crate::tensor_core::implicit_gemm::entries!(@entry $name, $ops, F16, u16, $($g),*);
    };
    (@one nhwc_bf16 $ops:ident, [$_a:ident, $_b:ident, $name:ident, $_d:ident], $($g:literal),*) => {
        $crate::tensor_core::implicit_gemm::entries!(@entry $name, $ops, Bf16, u16, $($g),*);
    };
    (@one nhwcnc_bf16 $ops:ident, [$_a:ident, $_b:ident, $_c:ident, $name:ident], $($g:literal),*) => {
        $crate::tensor_core::implicit_gemm::entries!(@entry $name, $ops, Bf16, u16, $($g),*);
    };
    (@entry $name:ident, $ops:ident, $kind:ident, $elem:ty, $wm:literal, $wn:literal, $mt:literal, $nt:literal, $stages:literal, $kch:literal) => {
        $crate::conv_kernel!(
            fn $name(x: *const $elem, w: *const $elem, y: *mut f32) => $crate::tensor_core::implicit_gemm::conv::<$ops, $crate::tensor_core::mma_kind::$kind, $wm, $wn, $mt, $nt, $stages, $kch>
        );
    };
}

/// Declares the fp32 entry points from `convrs_spec::tensor_core_f32_tiles!`, called as
/// `tensor_core_f32_tiles!(f32_entries, Ops)`: one `conv::<Ops, Tf32 or Tf32x3, ...>` per row.
#[cfg_attr(target_feature = "sm_90a", allow(unused_macros))]
macro_rules! f32_entries {
    ($ops:ident $(($name:ident, $math:ident, $wm:literal, $wn:literal, $mt:literal, $nt:literal, $stages:literal, $kch:literal))*) => {
        $($crate::tensor_core::implicit_gemm::entries!(@entry $name, $ops, $math, f32, $wm, $wn, $mt, $nt, $stages, $kch);)*
    };
}
#[cfg_attr(target_feature = "sm_90a", allow(unused_imports))]
pub(crate) use f32_entries;
#[cfg_attr(target_feature = "sm_90a", allow(unused_imports))]
pub(crate) use entries;
