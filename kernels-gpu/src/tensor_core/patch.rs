//! Family 3, step 2c: tensor cores for layers with few input channels, from a shared-memory
//! patch, `wmma_patch_128x{BN}` (and `wmma_patch_bf16_128x{BN}`), on plain NHWC input, KRSC
//! filter, NHWK output.
//!
//! Step 2b (`small_c`) folds the taps into the reduction, kr = (r*S + s)*C + c, but gathers each
//! row's values from global memory one load at a time, with a bounds check per value, and its
//! few resident warps wait on those loads. Here a block copies the input patch under its output
//! tile into shared memory once (coalesced, zeros outside the image), and the A fragments are
//! read from the patch: value kr of tile row m lies at `row(m) + table[kr]`, the row's window
//! origin plus the tap's offset, both byte offsets into the patch, so a fragment value costs one
//! shared load and one add, with no bounds checks (the patch holds the zeros). The layers this
//! is for write far more than they read (a 64-channel output per 3-channel pixel), so the
//! epilogue stages the output tile in shared memory and writes whole 16-byte chunks. A fused
//! epilogue (`ConvShape::ep`: scale, bias, residual, activation) stages the fp32 sums instead
//! and runs in the store, 8 channels a thread, its residual read in 16-byte loads beside the
//! 16-byte stores; the output is rounded once, at the end.
//!
//! # Schedule
//!
//! Persistent: block b takes output channels `(b % n_tiles) * BN..` and walks the output tiles
//! `b / n_tiles, + grid / n_tiles, ...` (the host launches a multiple of n_tiles blocks), so its
//! filter tile and offset table are loaded once. Per output tile, four barriers:
//!
//! ```text
//! copy the patch             barrier (patch, and at first the filter and table, visible)
//! k-steps of 16: A from the patch by table, B by ldmatrix, mma.sync m16n8k16
//!                            barrier (patch reads done)
//! stage the accumulators     barrier
//! 16-byte stores to y        barrier (stage reads done before the next patch overwrites it;
//!                                     a fused epilogue finishes each chunk here)
//! ```
//!
//! The patch copy's latency is hidden by the other resident blocks, not by prefetching the next
//! tile's patch into registers during this tile's k-steps: that measured slower on the C = 1
//! and 3 layers (more registers, fewer resident blocks; fifth session, BENCHMARKS.md).
//!
//! Copies run in units of 8 values (16 bytes) in the `c8` entries, for C a multiple of 8 (a
//! pixel's channels, and a filter row, are then whole aligned chunks), and of single values in
//! the others. In the `c8` entries A's fragments come by `ldmatrix` as well (8 reduction
//! indices are 8 channels of one tap, 16 contiguous bytes). The C = 1 layers are bound by issued
//! instructions (ncu, sixth session: 0.71 warps issued per scheduler cycle), so the value copy
//! sizes its batches to what is left of the patch and spends no work on values it does not
//! copy.
//!
//! # NCHW (`wmma_patch_nchw_*`)
//!
//! The same reduction on the layouts an NCHW caller holds, with no transposes around it: the
//! reduction index runs kr = (c*R + r)*S + s, so the KCRS filter is the filter tile as it is, and
//! the patch is C planes of `ph` rows x `pw` pixels, each plane row one contiguous run of x (so
//! the copy reads whole image rows). A row's window origin and a tap's offset stay two byte
//! offsets into the patch, now along the planes, so the k-steps are the value-by-value ones
//! above. The output tile is staged transposed, a row per channel, and leaves in runs of
//! [`NCHW_RUN`] pixels of one channel (16-byte stores where the run is whole and aligned, value
//! by value at a ragged row end); a fused epilogue's residual is read the same way.
//!
//! Geometry and shared layout: `convrs_spec::patch`.

use convrs_spec::patch::{stage_nchw_pitch, stage_pitch, Geometry, BLOCK_M, K_STEP, NCHW_RUN, THREADS};
use convrs_spec::transform::FastDiv;

use super::implicit_gemm::divmod;
use super::small_c::{mma_columns, MAX_N8};
use crate::prelude::epilogue::{residual_eight, residual_one, Activation, Epilogue};
use crate::prelude::matrix::{ldmatrix_x4, pack_16x2, store_global_f32, store_global_u16, store_global_v4};
use crate::prelude::*;

const T: u32 = THREADS as u32;

/// The kernel; see the module docs. Output-channel tile `BN`, bf16 data if `BF16`, copies in
/// units of `V` values (1, or 8 for C a multiple of 8), NCHW data if `NCHW` (then V = 1).
///
/// # Safety
/// `x`, `w`, `y` hold N*H*W*C, K*R*S*C and N*P*Q*K elements (y of `sh.y_bits` bits) in NHWC,
/// KRSC, NHWK (NCHW, KCRS, NKPQ if `NCHW`); K is a multiple of 8 unless `NCHW`; every index of
/// `sh` fits in `i32`; launched with [`THREADS`] threads, a multiple of `ceil(K / BN)` blocks and
/// `Geometry::smem_bytes` of dynamic shared memory.
#[inline(always)]
pub unsafe fn conv<const BN: usize, const BF16: bool, const V: usize, const NCHW: bool>(x: *const u16, w: *const u16, y: *mut f32, sh: ConvShape) {
    const { assert!((BN == 32 || BN == 64) && (V == 1 || V == 8) && !(NCHW && V == 8)) };
    let g = Geometry::of(&sh);
    let n_tiles = (sh.k as u32).div_ceil(BN as u32);
    if block_dim_x() != THREADS as i32 || dynamic_smem_bytes() < g.smem_bytes(BN, sh.c) || grid_dim_x() as u32 % n_tiles != 0 || sh.c % V as i32 != 0 {
        trap();
    }
    let smem = dynamic_smem_u32();
    let (filter, table, patch) = (smem, smem + g.table_at(BN), smem + g.patch_at(BN));
    let tid = thread_x() as u32;
    // SAFETY: n_tiles >= 1 (K >= 1).
    let (first, nt) = unsafe { divmod(block_x() as u32, n_tiles) };
    let n0 = nt * BN as u32;
    let step = grid_dim_x() as u32 / n_tiles;
    if first >= g.tiles as u32 {
        return;
    }
    let filter_rows = FilterRows { w, rsc: (sh.r * sh.s * sh.c) as u32, k: sh.k as u32, n0, at: filter, pitch: g.filter_pitch() };
    // SAFETY: the filter and table regions are this block's; nobody reads them before the
    // first tile's first barrier.
    unsafe {
        copy_filter::<V>(&filter_rows, g.kpad as u32, BN as u32, tid);
        fill_table::<NCHW>(&sh, &g, table, tid);
    }
    let (warp, lane) = (tid / 32, tid % 32);
    // The window origins in the patch of the A rows this thread reads: V = 1, its fragment
    // rows 32*warp + 16i + lane/4 + 8h; V = 8, the row it gives `ldmatrix`, 32*warp + 16i +
    // lane%16 (h = 0).
    let mut rows = [[0u32; 2]; 2];
    unroll!(4: 2, i => {
        unroll!(4: 2, h => {
            let m = warp * 32 + 16 * i as u32 + if V == 8 { lane % 16 } else { lane / 4 + 8 * h as u32 };
            let (tp, tq) = g.row_col(m);
            let pixel = tp as i32 * sh.stride_h * g.pw + tq as i32 * sh.stride_w;
            // NCHW: the origin in the first channel's plane (the table steps the planes).
            rows[i][h] = patch + 2 * (if NCHW { pixel } else { pixel * sh.c }) as u32;
        });
    });
    let ph = FastDiv::new(g.ph as u32);
    let mut tile = first;
    loop {
        let patch_rows = PatchRows::new(x, &sh, &g, patch, tile);
        // SAFETY: the patch region is free (the previous tile's last barrier); the caller's x.
        unsafe {
            if NCHW {
                let planes = PlaneRows { at: patch_rows, rows: g.ph as u32, ph, c: sh.c };
                copy_all::<1, _>(&planes, g.pw as u32, (g.ph * sh.c) as u32, tid);
            } else {
                copy_all::<V, _>(&patch_rows, (g.pw * sh.c) as u32, g.ph as u32, tid);
            }
        }
        sync_threads();
        let mut acc = [[[0f32; 4]; MAX_N8]; 2];
        let mut ks = 0;
        while ks < g.kpad as u32 / K_STEP as u32 {
            // SAFETY: converged (uniform loop); filter, table and patch published by the barrier.
            unsafe { multiply::<BN, BF16, V>(&mut acc, rows, filter, g.filter_pitch(), table, ks, lane) };
            ks += 1;
        }
        sync_threads();
        // Read here, not before the tile loop: computed there, the 128x64 entries with
        // single-value copies spilled 8 bytes at their 128-register bound.
        let fused = !sh.ep.is_identity();
        // SAFETY: every read of the patch is before the barrier; the stage is the patch region
        // (sized for fp32, which a fused epilogue stages whatever the output's type).
        unsafe { stage::<BN, BF16, NCHW>(&acc, patch, sh.y_bits == 16 && !fused, warp, lane) };
        sync_threads();
        // SAFETY: the stage is published; the caller's y (and epilogue operands).
        unsafe {
            if NCHW {
                store_nchw_tile::<BN, BF16>(y, &sh, &g, patch, patch_rows.o, n0, fused, tid);
            } else if fused {
                store_fused_tile::<BN, BF16>(y, &sh, &g, patch, patch_rows.o, n0, tid);
            } else {
                store_tile::<BN>(y, &sh, &g, patch, patch_rows.o, n0, tid);
            }
        }
        tile += step;
        if tile >= g.tiles as u32 {
            break;
        }
        sync_threads();
    }
}

/// The output tile's first pixel: image `n`, row `p0`, column `q0`.
#[derive(Clone, Copy)]
struct Origin {
    n: i32,
    p0: i32,
    q0: i32,
}

/// Rows of 16-bit values to copy into shared memory, zero-filled outside the source.
trait Rows {
    /// Where value `e` of row `r` comes from, or `None` where it is a zero (outside the source).
    fn src(&self, r: u32, e: u32) -> Option<*const u16>;
    /// The shared byte address of value `e` of row `r`, the `idx`-th value of the copy.
    fn dst(&self, r: u32, e: u32, idx: u32) -> u32;
}

/// Filter rows `n0..n0 + BN` (output channels; zeros past K), reduction indices `0..kpad`
/// (zeros past R*S*C, so the A values the table points at there are multiplied by 0), rows of
/// `pitch` bytes.
struct FilterRows {
    w: *const u16,
    rsc: u32,
    k: u32,
    n0: u32,
    at: u32,
    pitch: u32,
}

impl Rows for FilterRows {
    #[inline(always)]
    fn src(&self, r: u32, e: u32) -> Option<*const u16> {
        let k = self.n0 + r;
        (k < self.k && e < self.rsc).then(|| self.w.wrapping_add((k * self.rsc + e) as usize))
    }

    #[inline(always)]
    fn dst(&self, r: u32, e: u32, _: u32) -> u32 {
        self.at + r * self.pitch + 2 * e
    }
}

/// The input under an output tile: ph rows of pw pixels x C values from `x[n][p0*stride_h -
/// pad_h][q0*stride_w - pad_w][0]` on, zeros outside the image (each a contiguous run of x),
/// stored without gaps, so the copy's `idx`-th value goes to shared value `idx`.
#[derive(Clone, Copy)]
struct PatchRows {
    x: *const u16,
    o: Origin,
    /// First input row, and the first value's column in an image row of W*C values.
    ih0: i32,
    col0: i32,
    h: i32,
    wc: i32,
    at: u32,
    /// The first input column, and W (what [`PlaneRows`] reads).
    iw0: i32,
    w: i32,
}

impl PatchRows {
    #[inline(always)]
    fn new(x: *const u16, sh: &ConvShape, g: &Geometry, at: u32, tile: u32) -> PatchRows {
        // SAFETY: tiles_q, tiles_p >= 1.
        let (rest, tq_i) = unsafe { divmod(tile, g.tiles_q as u32) };
        // SAFETY: as above.
        let (n, tp_i) = unsafe { divmod(rest, g.tiles_p as u32) };
        let o = Origin { n: n as i32, p0: tp_i as i32 * g.tp, q0: tq_i as i32 * g.tq };
        let (ih0, iw0) = (o.p0 * sh.stride_h - sh.pad_h, o.q0 * sh.stride_w - sh.pad_w);
        PatchRows { x, o, ih0, col0: iw0 * sh.c, h: sh.h, wc: sh.w * sh.c, at, iw0, w: sh.w }
    }
}

impl Rows for PatchRows {
    #[inline(always)]
    fn src(&self, r: u32, e: u32) -> Option<*const u16> {
        let (ih, col) = (self.ih0 + r as i32, self.col0 + e as i32);
        // In the image: then the offset is in range (and non-negative).
        ((ih as u32) < self.h as u32 && (col as u32) < self.wc as u32).then(|| self.x.wrapping_add(((self.o.n * self.h + ih) * self.wc + col) as u32 as usize))
    }

    #[inline(always)]
    fn dst(&self, _: u32, _: u32, idx: u32) -> u32 {
        self.at + 2 * idx
    }
}

/// The NCHW input under an output tile: C planes of ph rows of pw values, patch row
/// `c*ph + i` from `x[n][c][ih0 + i][iw0..]`, zeros outside the image, stored without gaps.
struct PlaneRows {
    at: PatchRows,
    /// The patch's rows per plane, and the division by them.
    rows: u32,
    ph: FastDiv,
    c: i32,
}

impl Rows for PlaneRows {
    #[inline(always)]
    fn src(&self, r: u32, e: u32) -> Option<*const u16> {
        let a = &self.at;
        let c = self.ph.div(r);
        let (ih, iw) = (a.ih0 + (r - c * self.rows) as i32, a.iw0 + e as i32);
        ((ih as u32) < a.h as u32 && (iw as u32) < a.w as u32).then(|| a.x.wrapping_add((((a.o.n * self.c + c as i32) * a.h + ih) * a.w + iw) as u32 as usize))
    }

    #[inline(always)]
    fn dst(&self, _: u32, _: u32, idx: u32) -> u32 {
        self.at.at + 2 * idx
    }
}

/// Copies units `start + tid + b*THREADS` (b < B) of `rows` rows of `len` values each (a
/// multiple of V), a unit being V values (1, or 8: 16 bytes): all B loads are issued before the
/// first store, so they are in flight together.
///
/// # Safety
/// Every row's in-source values are readable global memory nobody writes during the launch;
/// for V = 8 a unit is wholly inside or outside the source and its source and destination are
/// 16-byte aligned; the destinations are this block's shared memory, which nobody else accesses
/// until the next barrier.
#[inline(always)]
#[allow(unused_assignments)] // the last unrolled step advances counters nobody reads
unsafe fn copy_batch<const V: usize, const B: usize, R: Rows>(rows: &R, units: u32, total: u32, start: u32, tid: u32) {
    let mut v = [[0u32; 4]; B];
    // SAFETY: units >= 1.
    let (r0, u0) = unsafe { divmod(start + tid, units) };
    // SAFETY: as above.
    let (dr, du) = unsafe { divmod(T, units) };
    let (mut r, mut u) = (r0, u0);
    unroll!(16: B, b => {
        if start + tid + b as u32 * T < total {
            if let Some(src) = rows.src(r, u * V as u32) {
                // SAFETY: an in-source unit, as the caller guarantees.
                unsafe {
                    if V == 8 {
                        v[b] = load_global_nc_f32x4(src as *const f32).0.map(f32::to_bits);
                    } else {
                        v[b][0] = load_global_nc_u16(src) as u32;
                    }
                }
            }
            u += du;
            r += dr;
            if u >= units {
                u -= units;
                r += 1;
            }
        }
    });
    (r, u) = (r0, u0);
    unroll!(16: B, b => {
        let idx = start + tid + b as u32 * T;
        if idx < total {
            let at = rows.dst(r, u * V as u32, idx * V as u32);
            // SAFETY: as the caller guarantees.
            unsafe {
                if V == 8 { st_shared_v4(at, v[b]) } else { st_shared_u16(at, v[b][0]) }
            }
            u += du;
            r += dr;
            if u >= units {
                u -= units;
                r += 1;
            }
        }
    });
}

/// The whole copy of `n_rows` rows of `len` values, in as few round trips as batches of up to
/// 16 values (or 4 units of 8) a thread allow: each batch is the smallest of 4, 8 or 16 that
/// holds what is left (or 16), so a small patch (C = 1: a few hundred values) does not pay for
/// 16 values a thread, nor a larger one for extra round trips.
///
/// # Safety
/// As [`copy_batch`].
#[inline(always)]
unsafe fn copy_all<const V: usize, R: Rows>(rows: &R, len: u32, n_rows: u32, tid: u32) {
    const { assert!(V == 1 || V == 8) };
    let units = len / V as u32;
    let total = n_rows * units;
    let mut at = 0;
    while at < total {
        let left = total - at;
        // SAFETY (all three): as the caller guarantees.
        if V == 1 && left > 8 * T {
            unsafe { copy_batch::<V, 16, R>(rows, units, total, at, tid) };
            at += 16 * T;
        } else if V == 1 && left > 4 * T {
            unsafe { copy_batch::<V, 8, R>(rows, units, total, at, tid) };
            at += 8 * T;
        } else {
            unsafe { copy_batch::<V, 4, R>(rows, units, total, at, tid) };
            at += 4 * T;
        }
    }
}

/// The filter copy, once per block: fixed batches of 16 values (4 units of 8), one code path
/// rather than [`copy_all`]'s three, so the kernel stays small.
///
/// # Safety
/// As [`copy_batch`].
#[inline(always)]
unsafe fn copy_filter<const V: usize>(rows: &FilterRows, len: u32, n_rows: u32, tid: u32) {
    let units = len / V as u32;
    let total = n_rows * units;
    let mut at = 0;
    while at < total {
        // SAFETY: as the caller guarantees.
        unsafe {
            if V == 1 { copy_batch::<V, 16, _>(rows, units, total, at, tid) } else { copy_batch::<V, 4, _>(rows, units, total, at, tid) }
        }
        at += if V == 1 { 16 } else { 4 } * T;
    }
}

/// The offset table: for kr < R*S*C with (r, s, c) its tap and channel, the byte offset of
/// `x[ih0 + r*dil_h][iw0 + s*dil_w][c]` from `x[ih0][iw0][0]` in the patch; 0 past R*S*C (the
/// filter is zero there). NHWC: kr = (r*S + s)*C + c, the offset 2*((r*dil_h*pw + s*dil_w)*C +
/// c). `NCHW`: kr = (c*R + r)*S + s (the KCRS filter's order), the offset 2*(c*ph*pw +
/// r*dil_h*pw + s*dil_w) from the row's window origin in channel 0's plane.
///
/// # Safety
/// `table` is this block's table region.
#[inline(always)]
unsafe fn fill_table<const NCHW: bool>(sh: &ConvShape, g: &Geometry, table: u32, tid: u32) {
    let rsc = (sh.r * sh.s * sh.c) as u32;
    let mut kr = tid;
    while kr < g.kpad as u32 {
        let off = if kr >= rsc {
            0
        } else if NCHW {
            // SAFETY: R*S, S >= 1.
            let (c, tap) = unsafe { divmod(kr, (sh.r * sh.s) as u32) };
            // SAFETY: as above.
            let (r, s) = unsafe { divmod(tap, sh.s as u32) };
            2 * (c as i32 * g.ph * g.pw + r as i32 * sh.dil_h * g.pw + s as i32 * sh.dil_w) as u32
        } else {
            // SAFETY: C, S >= 1.
            let (tap, c) = unsafe { divmod(kr, sh.c as u32) };
            // SAFETY: as above.
            let (r, s) = unsafe { divmod(tap, sh.s as u32) };
            2 * ((r as i32 * sh.dil_h * g.pw + s as i32 * sh.dil_w) * sh.c + c as i32) as u32
        };
        // SAFETY: entry kr < kpad of this block's table.
        unsafe { st_shared_u32(table + 4 * kr, off) };
        kr += T;
    }
}

/// One k-step of 16: the warp's 32 rows times all BN columns. A's fragment values come from the
/// patch at `rows[i][h] + table[kr]` (m16n8k16's A fragment: row lane/4 (+8), reduction indices
/// 2*(lane%4) (+1, +8, +9)), B's by `ldmatrix` from the filter rows. With C a multiple of 8
/// (V = 8), reduction indices kr..kr+8 (kr a multiple of 8) are 8 channels of one tap, 16
/// contiguous bytes of the patch, so A comes by `ldmatrix` too: lane l gives row l%16's
/// address at reduction index 8*(l/16), matrices 0..3 being A's fragment registers 0..3.
///
/// # Safety
/// All 32 lanes together (converged); filter, table and patch stored and published.
#[inline(always)]
unsafe fn multiply<const BN: usize, const BF16: bool, const V: usize>(acc: &mut [[[f32; 4]; MAX_N8]; 2], rows: [[u32; 2]; 2], filter: u32, pitch: u32, table: u32, ks: u32, lane: u32) {
    let mut frag = [[0u32; 4]; 2];
    if V == 8 {
        // SAFETY: entry < kpad of the table.
        let off = unsafe { ld_shared_u32(table + 4 * (ks * K_STEP as u32 + 8 * (lane / 16))) };
        unroll!(4: 2, i => {
            // SAFETY: converged; a window origin plus a tap offset is inside the patch, 16-byte
            // aligned (both are multiples of 2C bytes from the 16-byte aligned patch, C % 8 = 0).
            frag[i] = unsafe { ldmatrix_x4(rows[i][0] + off) };
        });
    } else {
        let kc = ks * K_STEP as u32 + 2 * (lane % 4);
        // SAFETY: entries kc, kc+1 and kc+8, kc+9 < kpad of the table (8-byte aligned: kc even).
        let (lo, hi) = unsafe { (ld_shared_u32x2(table + 4 * kc), ld_shared_u32x2(table + 4 * (kc + 8))) };
        unroll!(4: 2, i => {
            unroll!(4: 2, h => {
                let r = rows[i][h];
                // SAFETY: a row's window origin plus a tap offset is inside the patch (Geometry).
                unsafe {
                    frag[i][h] = ld_shared_u16(r + lo[0]) | ld_shared_u16(r + lo[1]) << 16;
                    frag[i][2 + h] = ld_shared_u16(r + hi[0]) | ld_shared_u16(r + hi[1]) << 16;
                }
            });
        });
    }
    // SAFETY: converged; filter rows of `pitch` bytes (a multiple of 16), published.
    unsafe { mma_columns::<BN, BF16>(acc, &frag, filter, pitch, 2 * ks * K_STEP as u32, lane) };
}

/// The accumulators into the stage: tile row `32*warp + 16i + lane/4` (+8), columns
/// `8j + 2*(lane%4)` (+1), rounded to 16 bits if `half`; transposed if `NCHW` (a stage row per
/// column, [`stage_nchw_pitch`]).
///
/// # Safety
/// `stage` is this block's stage region, which nobody reads until the next barrier.
#[inline(always)]
unsafe fn stage<const BN: usize, const BF16: bool, const NCHW: bool>(acc: &[[[f32; 4]; MAX_N8]; 2], stage: u32, half: bool, warp: u32, lane: u32) {
    let ob = if half { 2 } else { 4 };
    let pitch = stage_pitch(BN, ob);
    let tpitch = stage_nchw_pitch(ob);
    unroll!(4: 2, i => {
        let row = warp * 32 + 16 * i as u32 + lane / 4;
        unroll!(8: BN / 8, j => {
            let at = stage + row * pitch + (8 * j as u32 + 2 * (lane % 4)) * ob;
            let a = &acc[i][j];
            // SAFETY: inside the stage (row + 8 < 128, column + 1 < BN; the transposed stage
            // fits in the same region, `stage_nchw_pitch`).
            unsafe {
                if NCHW {
                    let at = stage + (8 * j as u32 + 2 * (lane % 4)) * tpitch + row * ob;
                    if half {
                        let (lo, hi) = (pack_16x2::<BF16>(a[0], a[1]), pack_16x2::<BF16>(a[2], a[3]));
                        st_shared_u16(at, lo & 0xffff);
                        st_shared_u16(at + tpitch, lo >> 16);
                        st_shared_u16(at + 8 * ob, hi & 0xffff);
                        st_shared_u16(at + tpitch + 8 * ob, hi >> 16);
                    } else {
                        st_shared_u32(at, a[0].to_bits());
                        st_shared_u32(at + tpitch, a[1].to_bits());
                        st_shared_u32(at + 8 * ob, a[2].to_bits());
                        st_shared_u32(at + tpitch + 8 * ob, a[3].to_bits());
                    }
                } else if half {
                    st_shared_u32(at, pack_16x2::<BF16>(a[0], a[1]));
                    st_shared_u32(at + 8 * pitch, pack_16x2::<BF16>(a[2], a[3]));
                } else {
                    st_shared_f32x2(at, a[0], a[1]);
                    st_shared_f32x2(at + 8 * pitch, a[2], a[3]);
                }
            }
        });
    });
}

/// The staged tile to y in 16-byte chunks, consecutive threads on consecutive chunks of a row
/// and rows in pixel order, so a warp writes whole rows of the NHWK output; rows past P or Q and
/// columns past K are skipped (K is a multiple of 8, so a chunk is wholly inside or outside).
///
/// # Safety
/// The stage holds this tile, published; `y` holds the NHWK output of `sh`.
#[inline(always)]
unsafe fn store_tile<const BN: usize>(y: *mut f32, sh: &ConvShape, g: &Geometry, stage: u32, o: Origin, n0: u32, tid: u32) {
    let ob = (sh.y_bits / 8) as u32;
    let pitch = stage_pitch(BN, ob);
    // Chunks per row (4 to 16, a power of two) and values per chunk.
    let (chunks, per) = (BN as u32 * ob / 16, 16 / ob);
    let (row0, chunk) = (tid / chunks, tid % chunks);
    let col = n0 + chunk * per;
    let mut row = row0;
    while row < convrs_spec::patch::BLOCK_M as u32 {
        let (tp, tq) = g.row_col(row);
        let (p, q) = (o.p0 + tp as i32, o.q0 + tq as i32);
        if p < sh.p && q < sh.q && col < sh.k as u32 {
            let off = (((o.n * sh.p + p) * sh.q + q) as u32 as usize) * sh.k as usize + col as usize;
            // SAFETY: a staged row's chunk; y[n][p][q][col..col + per] is inside y and this
            // tile's alone (16-byte aligned: K and col multiples of 8, or of 4 for fp32).
            unsafe {
                let v = ld_shared_f32x4(stage + row * pitch + 16 * chunk);
                store_global_f32x4((y as *mut u8).add(off * ob as usize) as *mut f32, v);
            }
        }
        row += T / chunks;
    }
}

/// The staged tile through the fused epilogue (`ConvShape::ep`, not the identity) to y: the
/// stage holds the fp32 sums, and each thread takes 8 channels of a row (a fixed chunk, so its
/// channels' scale and bias are read once), reads their residual in one 16-byte load (32 for
/// fp32), finishes them and writes them in one 16-byte store (two for fp32). The output is
/// rounded once, after the epilogue. Rows past P or Q and chunks past K are skipped.
///
/// # Safety
/// The stage holds this tile's fp32 sums, published; `y` holds the NHWK output of `sh`; the
/// epilogue's addresses hold K fp32 channels and an NHWK output-shaped residual in y's type.
#[inline(always)]
unsafe fn store_fused_tile<const BN: usize, const BF16: bool>(y: *mut f32, sh: &ConvShape, g: &Geometry, stage: u32, o: Origin, n0: u32, tid: u32) {
    let ep = &sh.ep;
    let (half, pitch, chunks) = (sh.y_bits == 16, stage_pitch(BN, 4), BN as u32 / 8);
    let (row0, chunk) = (tid / chunks, tid % chunks);
    let col = n0 + 8 * chunk;
    // K is a multiple of 8: the chunk is wholly inside or outside.
    if col >= sh.k as u32 {
        return;
    }
    let act = Activation::of(ep);
    let mut e = [Epilogue::IDENTITY; 8];
    unroll!(8: 8, t => {
        // SAFETY: channel col + t < K.
        e[t] = unsafe { Epilogue::of(ep, col + t as u32) };
    });
    let mut row = row0;
    while row < convrs_spec::patch::BLOCK_M as u32 {
        let (tp, tq) = g.row_col(row);
        let (p, q) = (o.p0 + tp as i32, o.q0 + tq as i32);
        if p < sh.p && q < sh.q {
            let off = (((o.n * sh.p + p) * sh.q + q) as u32 as usize) * sh.k as usize + col as usize;
            let at = stage + row * pitch + 32 * chunk;
            // SAFETY: a staged row's 8 sums, two 16-byte aligned halves (the region, the
            // pitch and the chunk are multiples of 16); the residual's 8 elements of this output
            // pixel (16-byte aligned: K and col multiples of 8).
            let (a, b) = unsafe { (ld_shared_f32x4(at).0, ld_shared_f32x4(at + 16).0) };
            let r = if ep.residual != 0 { unsafe { residual_eight(ep.residual, off, half, BF16) } } else { [0.0; 8] };
            let mut v = [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]];
            unroll!(8: 8, t => {
                v[t] = e[t].affine(ep, v[t], r[t]);
            });
            act.apply_all(&mut v);
            // SAFETY: y[n][p][q][col..col + 8] is inside y and this tile's alone, 16-byte
            // aligned.
            unsafe {
                if half {
                    let packed = [pack_16x2::<BF16>(v[0], v[1]), pack_16x2::<BF16>(v[2], v[3]), pack_16x2::<BF16>(v[4], v[5]), pack_16x2::<BF16>(v[6], v[7])];
                    store_global_v4((y as *mut u16).add(off) as *mut u32, packed);
                } else {
                    let out = (y as *mut f32).add(off);
                    store_global_f32x4(out, F32x4([v[0], v[1], v[2], v[3]]));
                    store_global_f32x4(out.add(4), F32x4([v[4], v[5], v[6], v[7]]));
                }
            }
        }
        row += T / chunks;
    }
}

/// The staged tile (transposed, [`stage`] with `NCHW`) to the NKPQ output: each unit is a run of
/// [`NCHW_RUN`] tile rows (consecutive pixels of one output row: tile rows are at least that
/// wide) of one channel, consecutive threads on consecutive runs of a channel. `fused`: the
/// stage holds fp32 sums and the epilogue (`ConvShape::ep`) finishes each run, its residual (NCHW
/// like y) read beside the store. A run wholly inside Q whose first element is 16-byte aligned
/// leaves in 16-byte stores, others value by value; pixels past P or Q and channels past K are
/// skipped.
///
/// # Safety
/// The stage holds this tile, published; `y` holds the NKPQ output of `sh`, and the epilogue's
/// addresses K fp32 channels and an NKPQ residual in y's type.
#[inline(always)]
unsafe fn store_nchw_tile<const BN: usize, const BF16: bool>(y: *mut f32, sh: &ConvShape, g: &Geometry, stage: u32, o: Origin, n0: u32, fused: bool, tid: u32) {
    const RUNS: u32 = BLOCK_M as u32 / NCHW_RUN;
    let ep = &sh.ep;
    let half = sh.y_bits == 16;
    // The stage's element width: 16-bit outputs staged rounded unless fused.
    let sb = if half && !fused { 2 } else { 4 };
    let pitch = stage_nchw_pitch(sb);
    let act = Activation::of(ep);
    let mut unit = tid;
    while unit < BN as u32 * RUNS {
        let (col, run) = (unit / RUNS, unit % RUNS);
        let k = n0 + col;
        let (tp, tq) = g.row_col(run * NCHW_RUN);
        let (p, q) = (o.p0 + tp as i32, o.q0 + tq as i32);
        if k < sh.k as u32 && p < sh.p && q < sh.q {
            let at = stage + col * pitch + run * NCHW_RUN * sb;
            let off = (((o.n * sh.k + k as i32) * sh.p + p) * sh.q + q) as u32 as usize;
            let whole = q + NCHW_RUN as i32 <= sh.q && off % NCHW_RUN as usize == 0;
            // SAFETY (the whole block): a staged run (16-byte aligned: the pitch and the run's
            // bytes are multiples of 16); y[n][k][p][q..q + 8] is inside y and this tile's alone
            // where `whole` (aligned: off is a multiple of 8), and value t where q + t < Q.
            unsafe {
                if sb == 2 {
                    let v = ld_shared_u32x4(at);
                    if whole {
                        store_global_v4((y as *mut u16).add(off) as *mut u32, v);
                    } else {
                        unroll!(8: 8, t => {
                            if q + (t as i32) < sh.q {
                                store_global_u16((y as *mut u16).add(off + t), (v[t / 2] >> (16 * (t % 2))) as u16);
                            }
                        });
                    }
                } else {
                    let (a, b) = (ld_shared_f32x4(at).0, ld_shared_f32x4(at + 16).0);
                    let mut v = [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]];
                    if fused {
                        let e = Epilogue::of(ep, k);
                        let mut r = [0.0; 8];
                        if ep.residual != 0 {
                            if whole {
                                r = residual_eight(ep.residual, off, half, BF16);
                            } else {
                                unroll!(8: 8, t => {
                                    if q + (t as i32) < sh.q {
                                        r[t] = residual_one(ep.residual, off + t, half, BF16);
                                    }
                                });
                            }
                        }
                        unroll!(8: 8, t => {
                            v[t] = e.affine(ep, v[t], r[t]);
                        });
                        act.apply_all(&mut v);
                    }
                    if half && whole {
                        let packed = [pack_16x2::<BF16>(v[0], v[1]), pack_16x2::<BF16>(v[2], v[3]), pack_16x2::<BF16>(v[4], v[5]), pack_16x2::<BF16>(v[6], v[7])];
                        store_global_v4((y as *mut u16).add(off) as *mut u32, packed);
                    } else if whole {
                        let out = y.add(off);
                        store_global_f32x4(out, F32x4([v[0], v[1], v[2], v[3]]));
                        store_global_f32x4(out.add(4), F32x4([v[4], v[5], v[6], v[7]]));
                    } else {
                        unroll!(8: 8, t => {
                            if q + (t as i32) < sh.q {
                                if half {
                                    store_global_u16((y as *mut u16).add(off + t), (pack_16x2::<BF16>(v[t], 0.0) & 0xffff) as u16);
                                } else {
                                    store_global_f32(y.add(off + t), v[t]);
                                }
                            }
                        });
                    }
                }
            }
        }
        unit += T;
    }
}

macro_rules! entries {
    ($(($fp16:ident, $bf16:ident, $fp16_c8:ident, $bf16_c8:ident, $fp16_nchw:ident, $bf16_nchw:ident, $bn:literal))*) => {
        $(
            $crate::conv_kernel!(fn $fp16(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::patch::conv::<$bn, false, 1, false>);
            $crate::conv_kernel!(fn $bf16(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::patch::conv::<$bn, true, 1, false>);
            $crate::conv_kernel!(fn $fp16_c8(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::patch::conv::<$bn, false, 8, false>);
            $crate::conv_kernel!(fn $bf16_c8(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::patch::conv::<$bn, true, 8, false>);
            $crate::conv_kernel!(fn $fp16_nchw(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::patch::conv::<$bn, false, 1, true>);
            $crate::conv_kernel!(fn $bf16_nchw(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::patch::conv::<$bn, true, 1, true>);
        )*
    };
}
convrs_spec::patch_tiles!(entries);
