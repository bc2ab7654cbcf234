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
//! epilogue stages the output tile in shared memory and writes whole 16-byte chunks.
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
//! 16-byte stores to y        barrier (stage reads done before the next patch overwrites it)
//! ```
//!
//! Geometry and shared layout: `convrs_spec::patch`.

use convrs_spec::patch::{stage_pitch, Geometry, K_STEP, THREADS};

use super::implicit_gemm::divmod;
use crate::prelude::matrix::{ldmatrix_x4, mma_m16n8k16, pack_16x2};
use crate::prelude::*;

/// Most n8 column tiles a warp holds (BN = 64).
const MAX_N8: usize = 8;
/// Global loads in flight per thread while copying the patch or the filter.
const BATCH: usize = 16;
const T: u32 = THREADS as u32;

/// The kernel; see the module docs. Output-channel tile `BN`, bf16 data if `BF16`.
///
/// # Safety
/// `x`, `w`, `y` hold N*H*W*C, K*R*S*C and N*P*Q*K elements (y of `sh.y_bits` bits) in NHWC,
/// KRSC, NHWK; K is a multiple of 8; every index of `sh` fits in `i32`; launched with
/// [`THREADS`] threads, a multiple of `ceil(K / BN)` blocks and `Geometry::smem_bytes` of
/// dynamic shared memory.
#[inline(always)]
pub unsafe fn conv<const BN: usize, const BF16: bool>(x: *const u16, w: *const u16, y: *mut f32, sh: ConvShape) {
    const { assert!(BN == 32 || BN == 64) };
    let g = Geometry::of(&sh);
    let n_tiles = (sh.k as u32).div_ceil(BN as u32);
    if block_dim_x() != THREADS as i32 || dynamic_smem_bytes() < g.smem_bytes(BN, sh.c) || grid_dim_x() as u32 % n_tiles != 0 {
        trap();
    }
    let smem = dynamic_smem_u32();
    let (filter, table, patch) = (smem, smem + g.table_at(BN), smem + g.patch_at(BN));
    let tid = thread_x() as u32;
    // SAFETY: n_tiles >= 1 (K >= 1).
    let (first, nt) = unsafe { divmod(block_x() as u32, n_tiles) };
    let n0 = nt * BN as u32;
    // SAFETY: the filter and table regions are this block's; nobody reads them before the first
    // tile's first barrier.
    unsafe {
        load_filter::<BN>(w, &sh, &g, filter, n0, tid);
        fill_table(&sh, &g, table, tid);
    }
    let (warp, lane) = (tid / 32, tid % 32);
    // The window origins of this thread's A rows 32*warp + 16i + lane/4 + 8h in the patch.
    let mut rows = [[0u32; 2]; 2];
    unroll!(4: 2, i => {
        unroll!(4: 2, h => {
            // SAFETY: tq >= 1.
            let (tp, tq) = unsafe { divmod(warp * 32 + 16 * i as u32 + lane / 4 + 8 * h as u32, g.tq as u32) };
            rows[i][h] = patch + 2 * ((tp as i32 * sh.stride_h * g.pw + tq as i32 * sh.stride_w) * sh.c) as u32;
        });
    });
    let step = grid_dim_x() as u32 / n_tiles;
    let mut tile = first;
    while tile < g.tiles as u32 {
        // SAFETY: tiles_q, tiles_p >= 1.
        let (rest, tq_i) = unsafe { divmod(tile, g.tiles_q as u32) };
        // SAFETY: as above.
        let (n, tp_i) = unsafe { divmod(rest, g.tiles_p as u32) };
        let origin = Origin { n: n as i32, p0: tp_i as i32 * g.tp, q0: tq_i as i32 * g.tq };
        // SAFETY: the patch region is free (the previous tile's last barrier); the caller's x.
        unsafe { load_patch(x, &sh, &g, patch, origin, tid) };
        sync_threads();
        let mut acc = [[[0f32; 4]; MAX_N8]; 2];
        let mut ks = 0;
        while ks < g.kpad as u32 / K_STEP as u32 {
            // SAFETY: converged (uniform loop); filter, table and patch published by the barrier.
            unsafe { multiply::<BN, BF16>(&mut acc, rows, filter, g.filter_pitch(), table, ks, lane) };
            ks += 1;
        }
        sync_threads();
        // SAFETY: every patch read of this tile is before the barrier; the stage is the patch region.
        unsafe { stage::<BN, BF16>(&acc, patch, sh.y_bits == 16, warp, lane) };
        sync_threads();
        // SAFETY: the stage is published; the caller's y.
        unsafe { store_tile::<BN>(y, &sh, &g, patch, origin, n0, tid) };
        sync_threads();
        tile += step;
    }
}

/// The output tile's first pixel: image `n`, row `p0`, column `q0`.
#[derive(Clone, Copy)]
struct Origin {
    n: i32,
    p0: i32,
    q0: i32,
}

/// Filter rows `n0..n0 + BN` (output channels; zeros past K), reduction indices `0..kpad`
/// (zeros past R*S*C, so the A values the table points at there are multiplied by 0), into rows
/// of `filter_pitch` bytes at `filter`.
///
/// # Safety
/// `w` holds the KRSC filter of `sh`; `filter` is this block's filter region.
#[inline(always)]
unsafe fn load_filter<const BN: usize>(w: *const u16, sh: &ConvShape, g: &Geometry, filter: u32, n0: u32, tid: u32) {
    let rsc = (sh.r * sh.s * sh.c) as u32;
    let (len, kpad) = (BN as u32 * g.kpad as u32, g.kpad as u32);
    let mut base = 0;
    while base < len {
        let mut v = [0u32; BATCH];
        unroll!(16: BATCH, u => {
            let e = base + tid + u as u32 * T;
            // SAFETY: kpad >= 16.
            let (row, kr) = unsafe { divmod(e, kpad) };
            if e < len && n0 + row < sh.k as u32 && kr < rsc {
                // SAFETY: k < K and kr < R*S*C: inside the filter.
                v[u] = unsafe { load_global_nc_u16(w.add(((n0 + row) * rsc + kr) as usize)) } as u32;
            }
        });
        unroll!(16: BATCH, u => {
            let e = base + tid + u as u32 * T;
            // SAFETY: as above.
            let (row, kr) = unsafe { divmod(e, kpad) };
            if e < len {
                // SAFETY: inside this block's filter region (row < BN, kr < kpad).
                unsafe { st_shared_u16(filter + row * g.filter_pitch() + 2 * kr, v[u]) };
            }
        });
        base += BATCH as u32 * T;
    }
}

/// The offset table: for kr < R*S*C with (r, s, c) its tap and channel, the byte offset of
/// `x[ih0 + r*dil_h][iw0 + s*dil_w][c]` from `x[ih0][iw0][0]` in the patch; 0 past R*S*C (the
/// filter is zero there).
///
/// # Safety
/// `table` is this block's table region.
#[inline(always)]
unsafe fn fill_table(sh: &ConvShape, g: &Geometry, table: u32, tid: u32) {
    let rsc = (sh.r * sh.s * sh.c) as u32;
    let mut kr = tid;
    while kr < g.kpad as u32 {
        let off = if kr < rsc {
            // SAFETY: C, S >= 1.
            let (tap, c) = unsafe { divmod(kr, sh.c as u32) };
            // SAFETY: as above.
            let (r, s) = unsafe { divmod(tap, sh.s as u32) };
            2 * ((r as i32 * sh.dil_h * g.pw + s as i32 * sh.dil_w) * sh.c + c as i32) as u32
        } else {
            0
        };
        // SAFETY: entry kr < kpad of this block's table.
        unsafe { st_shared_u32(table + 4 * kr, off) };
        kr += T;
    }
}

/// The input under output tile `o`: ph rows of pw pixels x C values from `x[n][p0*stride_h -
/// pad_h][q0*stride_w - pad_w][0]` on, zeros outside the image. Each patch row is a contiguous
/// run of x (or outside it), so a thread's values advance by THREADS along the flattened patch.
///
/// # Safety
/// `x` holds the NHWC input of `sh`; `patch` is this block's patch region, free until the next
/// barrier.
#[inline(always)]
#[allow(unused_assignments)] // the last unrolled step advances counters nobody reads
unsafe fn load_patch(x: *const u16, sh: &ConvShape, g: &Geometry, patch: u32, o: Origin, tid: u32) {
    let row_len = (g.pw * sh.c) as u32;
    let len = g.ph as u32 * row_len;
    let (ih0, col0) = (o.p0 * sh.stride_h - sh.pad_h, (o.q0 * sh.stride_w - sh.pad_w) * sh.c);
    let (h, wc) = (sh.h as u32, (sh.w * sh.c) as u32);
    // SAFETY: row_len >= 1.
    let (step_rows, step_cols) = unsafe { divmod(T, row_len) };
    let mut base = 0;
    while base < len {
        // SAFETY: as above.
        let (mut pr, mut pc) = unsafe { divmod(base + tid, row_len) };
        let mut v = [0u32; BATCH];
        unroll!(16: BATCH, u => {
            let (ih, col) = (ih0 + pr as i32, col0 + pc as i32);
            if base + tid + (u as u32) * T < len && (ih as u32) < h && (col as u32) < wc {
                // SAFETY: an in-image pixel's channel: x[n][ih][col / C][col % C].
                v[u] = unsafe { load_global_nc_u16(x.add(((o.n * sh.h + ih) as u32 as usize) * wc as usize + col as usize)) } as u32;
            }
            pc += step_cols;
            pr += step_rows;
            if pc >= row_len {
                pc -= row_len;
                pr += 1;
            }
        });
        unroll!(16: BATCH, u => {
            let e = base + tid + u as u32 * T;
            if e < len {
                // SAFETY: inside this block's patch region.
                unsafe { st_shared_u16(patch + 2 * e, v[u]) };
            }
        });
        base += BATCH as u32 * T;
    }
}

/// One k-step of 16: the warp's 32 rows times all BN columns. A's fragment values come from the
/// patch at `rows[i][h] + table[kr]` (m16n8k16's A fragment: row lane/4 (+8), reduction indices
/// 2*(lane%4) (+1, +8, +9)), B's by `ldmatrix` from the filter rows.
///
/// # Safety
/// All 32 lanes together (converged); filter, table and patch stored and published.
#[inline(always)]
unsafe fn multiply<const BN: usize, const BF16: bool>(acc: &mut [[[f32; 4]; MAX_N8]; 2], rows: [[u32; 2]; 2], filter: u32, pitch: u32, table: u32, ks: u32, lane: u32) {
    let kc = ks * K_STEP as u32 + 2 * (lane % 4);
    // SAFETY: entries kc, kc+1 and kc+8, kc+9 < kpad of the table (8-byte aligned: kc even).
    let (lo, hi) = unsafe { (ld_shared_u32x2(table + 4 * kc), ld_shared_u32x2(table + 4 * (kc + 8))) };
    let mut frag = [[0u32; 4]; 2];
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
    let k_byte = 2 * ks * K_STEP as u32;
    unroll!(4: BN / 16, jj => {
        // Matrices 0, 1: columns 16jj..+8 at k 0 and 8; matrices 2, 3: the next 8 columns.
        let row = 16 * jj as u32 + lane % 8 + 8 * (lane / 16);
        // SAFETY: 16-byte aligned filter rows (pitch and k_byte multiples of 16).
        let f = unsafe { ldmatrix_x4(filter + row * pitch + k_byte + 16 * ((lane / 8) % 2)) };
        unroll!(4: 2, i => {
            // SAFETY: converged, as the caller guarantees.
            unsafe {
                mma_m16n8k16::<BF16>(&mut acc[i][2 * jj], frag[i], [f[0], f[1]]);
                mma_m16n8k16::<BF16>(&mut acc[i][2 * jj + 1], frag[i], [f[2], f[3]]);
            }
        });
    });
}

/// The accumulators into the stage: tile row `32*warp + 16i + lane/4` (+8), columns
/// `8j + 2*(lane%4)` (+1), rounded to 16 bits if `half`.
///
/// # Safety
/// `stage` is this block's patch region, which nobody reads until the next barrier.
#[inline(always)]
unsafe fn stage<const BN: usize, const BF16: bool>(acc: &[[[f32; 4]; MAX_N8]; 2], stage: u32, half: bool, warp: u32, lane: u32) {
    let ob = if half { 2 } else { 4 };
    let pitch = stage_pitch(BN, ob);
    unroll!(4: 2, i => {
        let row = warp * 32 + 16 * i as u32 + lane / 4;
        unroll!(8: BN / 8, j => {
            let at = stage + row * pitch + (8 * j as u32 + 2 * (lane % 4)) * ob;
            let a = &acc[i][j];
            // SAFETY: inside the stage (row + 8 < 128, column + 1 < BN).
            unsafe {
                if half {
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
        // SAFETY: tq >= 1.
        let (tp, tq) = unsafe { divmod(row, g.tq as u32) };
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

macro_rules! entries {
    ($(($fp16:ident, $bf16:ident, $bn:literal))*) => {
        $(
            $crate::conv_kernel!(fn $fp16(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::patch::conv::<$bn, false>);
            $crate::conv_kernel!(fn $bf16(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::patch::conv::<$bn, true>);
        )*
    };
}
convrs_spec::patch_tiles!(entries);
