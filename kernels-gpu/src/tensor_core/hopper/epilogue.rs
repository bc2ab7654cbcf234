//! The warp-specialized kernels' epilogue: a consumer warpgroup's accumulators to the output,
//! fp32 as they are or rounded to the input's 16-bit type (`ConvShape::y_bits`). A bare
//! convolution stores from registers ([`store_tile`]); its 16-bit path can defer part of a
//! tile's stores into the next tile's first k-tiles ([`Pending`]), so that the stores drain
//! while the tensor cores work. A fused epilogue with a bias and a piecewise linear activation
//! runs on the accumulators in registers first ([`finish_in_registers`]), then the bare store
//! does; any other goes through shared memory ([`store_fused`]).
//!
//! Register 4j+e' (e' < 2) of a consumer thread is D[16*warp + lane/4][8j + 2*(lane%4) + e'],
//! 4j+2+e' the same 8 rows further (notes/hopper.md §1.4), warp and lane within the warpgroup.

use core::arch::asm;

use convrs_spec::epilogue::{Act, IN_REGISTERS_MAX_ACC};
use convrs_spec::EpilogueArgs;
use convrs_spec::hopper::{nchw_store_transposed, residual_in_registers, Math as Spec, NCHW_STAGING_BYTES, ROW_BYTES, WARPGROUP};

use super::math::{pack, Math};
use super::nchw_out::NhwcToNchw;
use crate::prelude::epilogue::{relu, residual_eight, residual_one, residual_pair, residual_pair_ahead, widen_pair, Activation, Epilogue};
use crate::prelude::matrix::{shfl_idx, shfl_xor, stmatrix_x4_trans, store_global_f32, store_global_f32x2, store_global_u16, store_global_v4, store_global_v4_if};
use crate::prelude::wgmma::Accumulators;
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::Operands;

/// Threads of a warpgroup.
const WG: u32 = WARPGROUP as u32;

/// A quad's 16-bit outputs, 16 bytes a lane: for each of a thread's two rows (`e`: the lane's
/// row `lane / 4 + 8e` of its warp's 16) and each 32-column chunk `g` of the tile, the lane's
/// 8 columns `8 (4g + q)..` of it, rounded to the output type, passed to `store(e, g, v)`.
///
/// # Safety
/// Every lane of the warp calls it together, in uniform control flow (shuffles).
#[inline(always)]
pub(super) unsafe fn for_each_eight<Acc: Accumulators, M: Math>(acc: &Acc, q: u32, mut store: impl FnMut(u32, u32, [u32; 4])) {
    unroll!(4: 2, e => {
        // Chunks 4g..4g+4: lane q ends with chunk 4g+q whole.
        unroll!(8: Acc::N / 32, g => {
            let mut v = [0u32; 4];
            unroll!(4: 4, t => {
                let j = 4 * g + t;
                v[t] = pack::<M>(acc[4 * j + 2 * e], acc[4 * j + 2 * e + 1]);
            });
            // SAFETY: the whole warp, in uniform control flow (the caller's contract).
            let v = unsafe { quad_transpose(v, q) };
            store(e as u32, g as u32, v);
        });
    });
}

/// Writes consumer warpgroup `cw`'s 64 rows of the tile at (`m0`, `n0`). The four lanes of a
/// quad hold one row's 8-column chunk j in 4- (fp32: 8-) byte pieces. For 16-bit outputs,
/// storing those directly writes each 32-byte sector in halves, which measured slower than even
/// writing twice the bytes in fp32; instead the quad trades pieces by shuffles so that each lane
/// stores 16 contiguous bytes, a quad 64 of a row at once (BENCHMARKS.md, third session).
///
/// # Safety
/// `y` and `sh` as the kernel requires; each (row, column) of the output is written by one
/// thread of one CTA. Every lane of the warp calls it together (shuffles), and where `group`
/// every thread of the warpgroup (then an NCHW store may read back the warpgroup's rows,
/// [`store_nchw_wide`]). `slot` and `runs` as for [`store_nchw`] (0 and unread but for NCHW
/// output).
#[inline(always)]
pub(super) unsafe fn store_tile<O: Operands, Acc: Accumulators, M: Math>(sh: &ConvShape, y: *mut f32, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32, slot: u32, runs: bool, group: bool) {
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let q = lane % 4;
    let row0 = m0 + cw * 64 + warp * 16 + lane / 4;
    if O::Y_NCHW {
        // The warpgroup reads its 64 rows back together where the runs may go along the planes
        // (`store_nchw_wide`, which spilled on the 128-accumulator tiles) and it calls together.
        // SAFETY (both): as this function's; the whole warpgroup where `group`.
        let rows = NhwcToNchw::rows(sh);
        if runs && group {
            unsafe { store_nchw_wide::<_, Acc, M>(&rows, &sh.ep, y, acc, m0, n0, cw, tid, slot, runs) };
        } else if group && nchw_store_transposed(runs, Acc::N) && sh.ep.is_identity() && rows.sixteen() && rows.run() % 8 == 0 {
            // The bare store of the 256-wide blocks (128 accumulators a thread), which spilled
            // through `store_nchw_wide`: the transposed staging reads back no fp32 values.
            let staging = dynamic_smem_u32() + dynamic_smem_bytes() - NCHW_STAGING_BYTES as u32 + (tid / WG - 1) * 64 * ROW_BYTES as u32;
            unsafe { store_nchw_matrix::<_, Acc, M>(&rows, y, acc, m0, n0, cw, tid, staging) };
        } else {
            unsafe { store_nchw::<_, Acc, M>(&NhwcToNchw::rows(sh), &sh.ep, y, acc, m0, n0, cw, tid, slot, runs) };
        }
    } else if M::SPEC == Spec::Half && sh.y_bits == 16 && O::PLANES && !O::PLANE_ROWS {
        // SAFETY: as this function's; the whole warp. `O` is `Planes` (the only layout of
        // NCHW planes that is not NCHW rows).
        unsafe { super::planes::store_tile_16::<Acc, M>(sh, y, acc, m0, n0, cw, tid) };
    } else if M::SPEC == Spec::Half && sh.y_bits == 16 {
        // (fp32 data is written as fp32 only: the host plans it so.)
        // (The loop of `for_each_eight`, written out: through it, every NHWC entry's PTX
        // changed its predication.)
        unroll!(4: 2, e => {
            let row = row0 + 8 * e as u32;
            // Chunks 4g..4g+4: lane q ends with chunk 4g+q whole.
            unroll!(8: Acc::N / 32, g => {
                let mut v = [0u32; 4];
                unroll!(4: 4, t => {
                    let j = 4 * g + t;
                    v[t] = pack::<M>(acc[4 * j + 2 * e], acc[4 * j + 2 * e + 1]);
                });
                // SAFETY: the whole warp, in uniform control flow.
                let v = unsafe { quad_transpose(v, q) };
                let col = n0 + 8 * (4 * g as u32 + q);
                if O::y_in(sh, row, col) {
                    // SAFETY: row < M, col..col+8 < K (K a multiple of 8), 16-byte aligned (so
                    // is K * 2 bytes; for NCHW rows, Q * 2 bytes); this thread's alone.
                    unsafe { store_global_v4((y as *mut u16).add(O::y_off(sh, row, col) as usize) as *mut u32, v) };
                }
            });
        });
    } else if O::PIXEL_PLANES {
        // NCHW pixel planes: a lane's pair is two channels a plane apart, and the 8 lanes
        // sharing a column hold 8 consecutive pixels of its plane: each store of the warp
        // writes 4 whole 32-byte sectors.
        unroll!(32: Acc::N / 8, j => {
            let col = n0 + 8 * j as u32 + 2 * q;
            unroll!(4: 2, e => {
                let row = row0 + 8 * e as u32;
                unroll!(4: 2, t => {
                    if O::y_in(sh, row, col + t as u32) {
                        // SAFETY: (row, col + t) is in the output; each element belongs to one
                        // thread of one block.
                        unsafe { store_global_f32(y.add(O::y_off(sh, row, col + t as u32) as usize), acc[4 * j + 2 * e + t]) };
                    }
                });
            });
        });
    } else {
        // fp32: each lane's pair is a full 8 bytes, a quad's a whole 32-byte sector. Trading
        // pieces for 16-byte stores here measured slower on the H100 (the 1x1 layers most), so
        // the pairs are stored as they are.
        unroll!(32: Acc::N / 8, j => {
            let col = n0 + 8 * j as u32 + 2 * q;
            unroll!(4: 2, e => {
                let row = row0 + 8 * e as u32;
                if O::y_in(sh, row, col) {
                    // SAFETY: row < M, col + 1 < K (K and col's 8-column group multiples of 8;
                    // for planes, H*W); each (row, col) belongs to one thread of one block.
                    unsafe { store_global_f32x2(y.add(O::y_off(sh, row, col) as usize), acc[4 * j + 2 * e], acc[4 * j + 2 * e + 1]) };
                }
            });
        });
    }
}

/// The GEMM rows of an NCHW output as [`store_nchw`] writes them: each row one output pixel,
/// each column an output channel, a plane ([`NchwRows::plane`] elements) from the next.
pub(super) trait NchwRows {
    /// The offset of the output element of GEMM row `row` in channel 0.
    fn row_base(&self, row: u32) -> u32;
    /// Elements between one channel's plane and the next's: P*Q.
    fn plane(&self) -> u32;
    /// What the runs of rows divide: rows `row..row + 8` (`row` a multiple of 8) are
    /// consecutive pixels of one plane in runs of the largest power of 2 (up to 8) dividing it,
    /// each run aligned to its size and either inside the output or outside, whole.
    fn run(&self) -> u32;
    /// Whether GEMM row `row`, channel `col` is an output element.
    fn inside(&self, row: u32, col: u32) -> bool;
    /// Whether the output is 16-bit (`ConvShape::y_bits`), else fp32.
    fn sixteen(&self) -> bool;
    /// Output channels, K (the epilogue's per-channel vectors hold K values).
    fn channels(&self) -> u32;
    /// Whether the bare store takes runs shorter than 8 pixels along the planes
    /// ([`store_nchw_runs`]).
    const ALONG_PLANES: bool;
    /// Whether the warpgroup-wide bare 16-bit store stages the rounded outputs transposed
    /// ([`store_nchw_matrix`]) where the runs are 8 pixels.
    const MATRIX: bool;
}

/// [`store_tile`] into an NCHW output (`rows`: [`NhwcToNchw`]'s, whose rows are the NHWC
/// kernels' output pixels, or step 17's patch rows).
///
/// Stored from the registers, a lane's pair of columns lies in two planes and 8 lanes write 8
/// pixels of a column: 2- or 4-byte stores, each warp store half a sector in 8 planes, which
/// measured up to 1.5x step 7's time (8,64,112,112->128; 2.2x under step 10's ping-pong; H100,
/// twenty-ninth session). So each warp stages its 16 rows, a chunk of [`CHUNK`] columns at a
/// time, in its own [`ROW_BYTES`] x 16 of the staging at the end of the block's shared memory
/// (`convrs_spec::hopper::NCHW_STAGING_BYTES`, outside the ring, so no stage is held), as
/// [`store_fused`] stages them, and reads them back down the columns: lane L takes column L/2
/// (and L/2 + 16) of the chunk, rows 8*(L%2) to 8*(L%2)+7, so each lane stores 8 consecutive
/// pixels of one plane and two lanes a whole 32-byte run of a column ([`store_eight_nchw`]).
///
/// A fused epilogue (`ep`, where it is not the identity: what the register epilogue does not
/// take) is applied there, to those 8 pixels of one channel ([`finish_eight_nchw`]): one
/// channel's scale and bias (each chunk's loaded ahead of the chunk before's stores), the
/// residual from this thread's shared-memory slots (`slot`, copied before the tile's mainloop:
/// `super::nchw_residual`) or else read at the store's own offsets (prefetched into L2 before
/// the mainloop, [`prefetch_residual_nchw`]), the activation's form branched once per 8
/// elements, and no stage held, so the mainloop is the bare one's. With a residual it still
/// costs 2-6 us over the bare store where the runs are 8 pixels. Where they are shorter it
/// stores along the planes too ([`store_nchw_runs_fused`]) where `runs` allows and the
/// residual, if any, is in the slots; down the columns it cost 10-41 us more on 14x14 planes
/// (BENCHMARKS.md, forty-first and forty-second sessions). The fused path runs a chunk's two
/// column halves as a loop the compiler may not unroll (`opaque`): unrolled, its code made the
/// entries' PTX 3x the bare ones' (thirty-ninth session). The bare path keeps them unrolled: as
/// the same loop it ran 2-12% slower (fortieth session); where the runs are shorter than 8
/// pixels it stores along the planes ([`store_nchw_runs`]).
///
/// # Safety
/// As [`store_tile`]; the launch gave the block its configuration's shared memory, the staging
/// included; `ep`'s addresses as [`finish_eight_nchw`] requires; `slot`, where not 0, this
/// thread's NCHW residual slots (`super::nchw_residual`), copied for this tile and block
/// (then in [`super::nchw_residual::copy_residual_runs`]'s mapping where the runs are shorter
/// than 8 pixels and `runs`); `runs` whether the fused epilogue may take short runs along the
/// planes ([`store_nchw_runs_fused`]), a constant of the instantiation.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
// (`unroll!`'s last copy of the chunk loop assigns `next` for a chunk past the tile's: unread.)
#[allow(unused_assignments)]
pub(super) unsafe fn store_nchw<R: NchwRows, Acc: Accumulators, M: Math>(rows: &R, ep: &EpilogueArgs, y: *mut f32, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32, slot: u32, runs: bool) {
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let first = cw * 64 + warp * 16;
    // This warp's 16 rows of the staging: consumer warps are the block's warps 4 to 11 (`cw` is
    // the tile's block, which under ping-pong is not the warpgroup).
    let staged = dynamic_smem_u32() + dynamic_smem_bytes() - NCHW_STAGING_BYTES as u32 + (tid / 32 - 4) * 16 * ROW_BYTES as u32;
    let unit = |r: u32, u: u32| staged_unit(staged, r, u);
    // This lane's 8 rows, the first or the second half of the warp's 16.
    let half = lane % 2;
    let row = m0 + first + 8 * half;
    let base = rows.row_base(row);
    // Column v of the chunk (lane / 2 in the first half, + 16 in the second) read back from the staging.
    // SAFETY (both): this warp's rows of the staging, written before; 4-byte aligned.
    let read = |v: u32| -> [f32; 8] { core::array::from_fn(|i| unsafe { ld_shared_f32(unit(8 * half + i as u32, v / 4) + (v % 4) * 4) }) };
    if ep.is_identity() {
        // SAFETY (each): as this function's; the whole warp.
        match run_width(rows.run()) {
            _ if !R::ALONG_PLANES => {}
            8 => {}
            4 => return unsafe { store_nchw_runs::<R, Acc, M, 4>(rows, y, acc, m0 + first, n0, staged, lane) },
            2 => return unsafe { store_nchw_runs::<R, Acc, M, 2>(rows, y, acc, m0 + first, n0, staged, lane) },
            _ => return unsafe { store_nchw_runs::<R, Acc, M, 1>(rows, y, acc, m0 + first, n0, staged, lane) },
        }
        unroll!(8: Acc::N / CHUNK, c => {
            // SAFETY: this warp's 16 rows of the staging.
            unsafe { stage_chunk(acc, c, staged, lane) };
            sync_warp();
            unroll!(4: 2, k => {
                let v = lane / 2 + 16 * k as u32;
                // SAFETY: the caller's contract; these elements this thread's alone.
                unsafe { store_eight_nchw::<R, M>(rows, y, &read(v), row, n0 + (CHUNK * c) as u32 + v, base) };
            });
            // Every lane's reads before the next chunk's writes.
            sync_warp();
        });
        return;
    }
    // Decoded once a tile (uniform), not per 8 elements.
    let act = Activation::of(ep);
    if slot != 0 {
        // This thread's residual copies (`nchw_residual::copy_residual`), its own to read.
        super::nchw_residual::landed();
    }
    // Short runs along the planes too, where the store reads no residual from global memory
    // (per run there it would wait a load's latency; down the columns one a chunk).
    if R::ALONG_PLANES && runs && (slot != 0 || ep.residual == 0) {
        // SAFETY (each): as this function's; the whole warp.
        match run_width(rows.run()) {
            8 => {}
            4 => return unsafe { store_nchw_runs_fused::<R, Acc, M, 4>(rows, ep, &act, y, acc, m0 + first, n0, staged, lane, slot) },
            2 => return unsafe { store_nchw_runs_fused::<R, Acc, M, 2>(rows, ep, &act, y, acc, m0 + first, n0, staged, lane, slot) },
            _ => return unsafe { store_nchw_runs_fused::<R, Acc, M, 1>(rows, ep, &act, y, acc, m0 + first, n0, staged, lane, slot) },
        }
    }
    let col = |c: usize, k: u32| n0 + (CHUNK * c) as u32 + lane / 2 + 16 * k;
    // Each chunk's scale and bias load ahead of the chunk before's stores: loaded with their
    // own chunk, behind the stores before them (which may alias them), their latency came once a
    // chunk. (All chunks' at once spilled 28-100 bytes on the 128-accumulator tiles.)
    // SAFETY (both): a channel below K, as the caller guarantees the vectors.
    let load = |c: usize| unsafe { [Epilogue::of(ep, col(c, 0).min(rows.channels() - 1)), Epilogue::of(ep, col(c, 1).min(rows.channels() - 1))] };
    let mut next = load(0);
    unroll!(8: Acc::N / CHUNK, c => {
        let e = next;
        if c + 1 < Acc::N / CHUNK {
            next = load(c + 1);
        }
        let col = |k: u32| col(c, k);
        let j = 2 * c as u32;
        // SAFETY: the caller's contract on `ep` and `slot`.
        let (o0, o1) = unsafe { (operands_eight_nchw::<R, M>(rows, ep, e[0], row, col(0), base, slot, j), operands_eight_nchw::<R, M>(rows, ep, e[1], row, col(1), base, slot, j + 1)) };
        // SAFETY: this warp's 16 rows of the staging.
        unsafe { stage_chunk(acc, c, staged, lane) };
        sync_warp();
        let mut k = 0;
        while k < 2 {
            // The half's operands by selects (an index into a pair would put it in local memory).
            let pick = |a: f32, b: f32| if k == 0 { a } else { b };
            let o = Operands8 { mul: pick(o0.mul, o1.mul), add: core::array::from_fn(|i| pick(o0.add[i], o1.add[i])) };
            let x = finish_eight_nchw(&act, read(lane / 2 + 16 * k), &o);
            // SAFETY: the caller's contract; these elements this thread's alone.
            unsafe { store_eight_nchw::<R, M>(rows, y, &x, row, col(k), base) };
            k = opaque(k + 1);
        }
        sync_warp();
    });
}

/// [`store_nchw`] with the warpgroup's 64 rows read back together, where the runs are 8 pixels:
/// each warp stages its 16 rows of a chunk as there, and after the warpgroup's barrier
/// ([`staged_sync`]) thread t of the warpgroup takes column t/8 (and t/8 + 16) of the chunk,
/// rows 8*(t%8) to 8*(t%8)+7 ([`group_unit`]'s layout), so a warp store writes 64 pixels
/// (128 bytes, 16-bit) in each of 4 planes. (Read back by each warp from its own 16 rows, a
/// warp store writes 32 bytes in each of 16 planes: step 16 took 1.5-1.8x its NHWC twin's
/// time bare on 56x56 and 28x28 planes; H200, forty-fifth session.) Shorter runs leave as
/// [`store_nchw`]'s do, warp by warp. Taken where the runs may go along the planes
/// (`convrs_spec::hopper::nchw_store_runs`, under 128 accumulators a thread): on the
/// 128-accumulator tiles the same code in [`store_nchw`] spilled 8-28 bytes in ptxas however
/// its addresses were written (forty-sixth and forty-seventh sessions).
///
/// # Safety
/// As [`store_nchw`], `slot` copied in its wide mapping (`super::nchw_residual::copy_residual`
/// with `RUNS`); all 128 threads of the warpgroup call it together.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[allow(unused_assignments)]
pub(super) unsafe fn store_nchw_wide<R: NchwRows, Acc: Accumulators, M: Math>(rows: &R, ep: &EpilogueArgs, y: *mut f32, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32, slot: u32, runs: bool) {
    let (warp, lane, t) = ((tid % WG) / 32, tid % 32, tid % WG);
    let first = cw * 64 + warp * 16;
    // The warpgroup's 64 rows of the staging (consumer warpgroups are the block's 1 and 2), and
    // this warp's 16 of them.
    let group = dynamic_smem_u32() + dynamic_smem_bytes() - NCHW_STAGING_BYTES as u32 + (tid / WG - 1) * 64 * ROW_BYTES as u32;
    let staged = group + warp * 16 * ROW_BYTES as u32;
    // This thread's 8 rows of the tile (`8 (t % 8)` of the staging) and its column.
    let (r0, v0) = (8 * (t % 8), t / 8);
    let row = m0 + cw * 64 + r0;
    let base = rows.row_base(row);
    // Unit u of staging row r0 + i at `at + i * ROW_BYTES + (u ^ 2 (i % 4) ^ r0 / 8) * 16` ([`group_unit`], r0 a multiple of 8).
    let at = group + r0 * ROW_BYTES as u32;
    // SAFETY (both): the warpgroup's rows of the staging, written before its barrier; 4-byte aligned.
    let read = |v: u32| -> [f32; 8] { core::array::from_fn(|i| unsafe { ld_shared_f32(at + i as u32 * ROW_BYTES as u32 + ((v / 4) ^ ((i as u32 & 3) << 1) ^ (t % 8)) * 16 + (v % 4) * 4) }) };
    // Chunk `c` staged by each warp, then read by the warpgroup.
    // SAFETY (both): this warp's 16 rows of the staging; the whole warpgroup (the caller's contract).
    let stage = |c: usize| unsafe {
        stage_chunk_with(acc, c, lane, |r, u| group_unit(group, 16 * warp + r, u));
        staged_sync(tid);
    };
    if ep.is_identity() {
        // SAFETY (each): as this function's; the whole warp.
        match run_width(rows.run()) {
            _ if !R::ALONG_PLANES => {}
            8 => {}
            4 => return unsafe { store_nchw_runs::<R, Acc, M, 4>(rows, y, acc, m0 + first, n0, staged, lane) },
            2 => return unsafe { store_nchw_runs::<R, Acc, M, 2>(rows, y, acc, m0 + first, n0, staged, lane) },
            _ => return unsafe { store_nchw_runs::<R, Acc, M, 1>(rows, y, acc, m0 + first, n0, staged, lane) },
        }
        if R::MATRIX && rows.sixteen() && rows.run() % 8 == 0 {
            // SAFETY: as this function's; the whole warpgroup; whole 16-byte runs of 8 pixels.
            return unsafe { store_nchw_matrix::<R, Acc, M>(rows, y, acc, m0, n0, cw, tid, group) };
        }
        unroll!(8: Acc::N / CHUNK, c => {
            stage(c);
            unroll!(4: 2, k => {
                let v = v0 + 16 * k as u32;
                // SAFETY: the caller's contract; these elements this thread's alone.
                unsafe { store_eight_nchw::<R, M>(rows, y, &read(v), row, n0 + (CHUNK * c) as u32 + v, base) };
            });
            // Every thread's reads before the next chunk's writes.
            // SAFETY: the whole warpgroup (the caller's contract).
            unsafe { staged_sync(tid) };
        });
        return;
    }
    let act = Activation::of(ep);
    if slot != 0 {
        super::nchw_residual::landed();
    }
    if R::ALONG_PLANES && runs && (slot != 0 || ep.residual == 0) {
        // SAFETY (each): as this function's; the whole warp.
        match run_width(rows.run()) {
            8 => {}
            4 => return unsafe { store_nchw_runs_fused::<R, Acc, M, 4>(rows, ep, &act, y, acc, m0 + first, n0, staged, lane, slot) },
            2 => return unsafe { store_nchw_runs_fused::<R, Acc, M, 2>(rows, ep, &act, y, acc, m0 + first, n0, staged, lane, slot) },
            _ => return unsafe { store_nchw_runs_fused::<R, Acc, M, 1>(rows, ep, &act, y, acc, m0 + first, n0, staged, lane, slot) },
        }
    }
    // As in [`store_nchw`]: each chunk's scale and bias a chunk ahead, the halves a loop.
    let col = |c: usize, k: u32| n0 + (CHUNK * c) as u32 + v0 + 16 * k;
    // SAFETY (both): a channel below K, as the caller guarantees the vectors.
    let load = |c: usize| unsafe { [Epilogue::of(ep, col(c, 0).min(rows.channels() - 1)), Epilogue::of(ep, col(c, 1).min(rows.channels() - 1))] };
    let mut next = load(0);
    unroll!(8: Acc::N / CHUNK, c => {
        let e = next;
        if c + 1 < Acc::N / CHUNK {
            next = load(c + 1);
        }
        let col = |k: u32| col(c, k);
        let j = 2 * c as u32;
        // SAFETY: the caller's contract on `ep` and `slot`.
        let (o0, o1) = unsafe { (operands_eight_nchw::<R, M>(rows, ep, e[0], row, col(0), base, slot, j), operands_eight_nchw::<R, M>(rows, ep, e[1], row, col(1), base, slot, j + 1)) };
        stage(c);
        let mut k = 0;
        while k < 2 {
            let pick = |a: f32, b: f32| if k == 0 { a } else { b };
            let o = Operands8 { mul: pick(o0.mul, o1.mul), add: core::array::from_fn(|i| pick(o0.add[i], o1.add[i])) };
            let x = finish_eight_nchw(&act, read(v0 + 16 * k), &o);
            // SAFETY: the caller's contract; these elements this thread's alone.
            unsafe { store_eight_nchw::<R, M>(rows, y, &x, row, col(k), base) };
            k = opaque(k + 1);
        }
        // SAFETY: the whole warpgroup (every thread's reads before the next chunk's writes).
        unsafe { staged_sync(tid) };
    });
}

/// [`store_nchw_wide`]'s bare 16-bit store where the runs are 8 pixels: the accumulators are
/// rounded first and staged transposed by `stmatrix.trans`, each stored row one channel's 8
/// pixels (16 bytes), so the warpgroup's staging holds 64 channels of its 64 rows at a time
/// (a round), read back as 16-byte vectors: thread t takes octet t % 8 of the rows and channels
/// t/8 + 16k, a warp store 128 bytes in each of 4 planes as before. Per 8 outputs a thread
/// issues one store to shared memory and one load, where staged as fp32 ([`stage_chunk_with`],
/// [`store_nchw_wide`]'s fused path) it issued 4 and 8; and a round is 64 channels, not 32, so
/// half the barriers. Channel c's octet o lies at unit `o ^ (c % 8)` of staging row c: the 8
/// rows of a matrix and a quarter-warp's 8 octets of one channel each meet 8 distinct units.
///
/// # Safety
/// As [`store_nchw_wide`], `rows.run()` a multiple of 8 and 16-bit outputs; `group` the
/// warpgroup's 64 [`ROW_BYTES`]-byte rows of the staging, which no other thread touches.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_nchw_matrix<R: NchwRows, Acc: Accumulators, M: Math>(rows: &R, y: *mut f32, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32, group: u32) {
    let (warp, lane, t) = ((tid % WG) / 32, tid % 32, tid % WG);
    // Channel c's octets in staging row c, [`staged_unit`]'s swizzle by the row.
    let unit = |c: u32, o: u32| staged_unit(group, c, o);
    // Channels a round: the staging's rows, or the tile's.
    const ROUND: usize = ROW_BYTES / 2;
    let round = if Acc::N < ROUND { Acc::N } else { ROUND };
    // This lane gives matrix lane / 8 its row lane % 8: the channel's place in the matrix's
    // 8-channel group, and the matrix's octet of rows (its warp's first or second 8).
    let (m, ci) = (lane / 8, lane % 8);
    let o_w = 2 * warp + m % 2;
    // The read-back: this thread's octet of the rows and its first channel of a round.
    let (o, c0) = (t % 8, t / 8);
    let row = m0 + cw * 64 + 8 * o;
    let (base, plane) = (rows.row_base(row), rows.plane());
    let y = y as *mut u16;
    unroll!(4: Acc::N / round, g => {
        // Column groups 2s and 2s + 1 of the round, each in its two octets of rows.
        unroll!(4: round / 16, s => {
            let j = round / 8 * g + 2 * s;
            let v = [pack::<M>(acc[4 * j], acc[4 * j + 1]), pack::<M>(acc[4 * j + 2], acc[4 * j + 3]), pack::<M>(acc[4 * j + 4], acc[4 * j + 5]), pack::<M>(acc[4 * j + 6], acc[4 * j + 7])];
            // SAFETY: the warpgroup's staging, a 16-byte unit of it (its reads of the round
            // before ended at the barrier below); the whole warp.
            unsafe { stmatrix_x4_trans(unit(8 * (2 * s as u32 + m / 2) + ci, o_w), v) };
        });
        // SAFETY: the whole warpgroup (the caller's contract).
        unsafe { staged_sync(tid) };
        unroll!(4: round / 16, k => {
            let c = c0 + 16 * k as u32;
            // SAFETY: the staging, written before the barrier; 16-byte aligned.
            let v = unsafe { ld_shared_u32x4(unit(c, o)) };
            let col = n0 + (round * g) as u32 + c;
            if rows.inside(row, col) {
                // SAFETY: the 8 pixels lie in the output, in one image's plane (the run a
                // multiple of 8), 16-byte aligned; this thread's alone.
                unsafe { store_global_v4(y.add((base + col * plane) as usize) as *mut u32, v) };
            }
        });
        // Every thread's reads before the next round's writes.
        // SAFETY: the whole warpgroup.
        unsafe { staged_sync(tid) };
    });
}

/// [`store_nchw_wide`]'s barrier over its staging: consumer warpgroup `tid / WG - 1`'s (each
/// warp stages its 16 rows, every thread reads 8 rows of the 64). Named barriers 1 and 2 are
/// the ping-pong order's (`super::kernel`), 0 the block's.
///
/// # Safety
/// All 128 threads of the warpgroup call it together.
#[inline(always)]
pub(super) unsafe fn staged_sync(tid: u32) {
    // SAFETY: as the caller guarantees.
    unsafe { crate::prelude::mbarrier::named_sync(3 + tid / WG - 1, WG) };
}

/// The shared address of 16-byte unit `u` of row `r` of a warpgroup's 64-row NCHW staging at
/// `group` ([`store_nchw_wide`]): [`staged_unit`]'s rows, the units swizzled by `2 (r % 4)`
/// and the row's 8-row group, so that both a warp's writes ([`stage_chunk_with`]: each
/// half-warp 4 consecutive rows' 32-byte pieces, in distinct pairs of units, as for
/// [`staged_unit`]) and a load of row `8a + i` of one column by 8 threads (`a` = 0..7, in 8
/// distinct units) take the fewest wavefronts. (By the row alone, those 8 loads are one bank's:
/// 8 wavefronts each; by `r ^ (r >> 3)`, rows 2k and 2k+1 shared a pair: 4.2 wavefronts a store.)
#[inline(always)]
fn group_unit(group: u32, r: u32, u: u32) -> u32 {
    group + r * ROW_BYTES as u32 + (u ^ (((r & 3) << 1) ^ ((r >> 3) & 7))) * 16
}

/// [`store_nchw`]'s bare store where the runs are shorter than 8 pixels (`W` = 4, 2 or 1,
/// [`run_width`]): a warp's 16 staged rows of a chunk leave along the planes, each store of the
/// warp `2 W` channels of 16 consecutive rows, a lane `W` pixels of one channel (lanes
/// `16 / W` apart take the next channel). Stored down the columns as for runs of 8, a warp
/// store wrote `W` pixels in each of 32 places of 16 planes: on 7x7 planes (runs of 1) each
/// element its own partial sector, and step 16 took 27.1 us bare where its NHWC twin takes
/// 17.3 (32,512,7,7->512 3x3; H200, fortieth session). Here a warp store writes `2 W` runs of
/// 32 bytes (16-bit; fp32: 64), each lane's place found once a tile.
///
/// # Safety
/// As [`store_nchw`]; `first` is this warp's first row of the tile, `staged` its 16 rows of
/// the staging; every lane of the warp calls it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_nchw_runs<R: NchwRows, Acc: Accumulators, M: Math, const W: usize>(rows: &R, y: *mut f32, acc: &Acc, first: u32, n0: u32, staged: u32, lane: u32) {
    let lanes = (16 / W) as u32;
    let (g, s) = (lane % lanes, lane / lanes);
    // W rows from a multiple of W: one image's (W divides the run), aligned, inside or not whole.
    let row = first + W as u32 * g;
    let (base, plane) = (rows.row_base(row), rows.plane());
    unroll!(8: Acc::N / CHUNK, c => {
        // SAFETY: this warp's 16 rows of the staging.
        unsafe { stage_chunk(acc, c, staged, lane) };
        sync_warp();
        let mut i = 0;
        while i < 32 / (2 * W as u32) {
            let v = 2 * W as u32 * i + s;
            let col = n0 + (CHUNK * c) as u32 + v;
            // SAFETY: this warp's rows of the staging, written before; 4-byte aligned.
            let x: [f32; W] = core::array::from_fn(|t| unsafe { ld_shared_f32(staged_unit(staged, W as u32 * g + t as u32, v / 4) + (v % 4) * 4) });
            if rows.inside(row, col) {
                // SAFETY: the run lies in the output, in one plane, aligned to its bytes; these
                // elements this thread's alone.
                unsafe { store_run::<M, W>(y, base + col * plane, rows.sixteen(), &x) };
            }
            i = opaque(i + 1);
        }
        // Every lane's reads before the next chunk's writes.
        sync_warp();
    });
}

/// [`store_nchw_runs`] with the fused epilogue (`act` decoded from `ep`), for runs shorter than
/// 8 pixels: each lane finishes `W` pixels of one channel at a time and stores them as one run,
/// so a warp store writes `2 W` runs of 16 pixels where down the columns it wrote `W` pixels
/// in 32 places (step 12 with bias + residual + ReLU on 14x14 planes took 37.4 us, bare 15.3;
/// H200, forty-first session). Lane L loads the factors of the chunk's channel L and the lanes
/// finishing a channel take them by shuffle: a lane finishes `16 / W` channels a chunk, and
/// loading each where used waited its latency each time. The lane mapping (`lanes`, `g`, `s`)
/// is [`store_nchw_runs`]'s, written out again as in `super::nchw_residual::copy_residual_runs`:
/// one helper for the three (the staging row derived from it) moved the sm_90a PTX and spilled
/// 12-24 bytes in the bare store of the 128-accumulator tiles (forty-second session). The
/// residual comes from this thread's slots (`slot`, [`super::nchw_residual::copy_residual`] in
/// this mapping), or there is none.
///
/// # Safety
/// As [`store_nchw_runs`]; `ep`'s scale and bias as [`Epilogue::of`] requires; `slot` this
/// thread's slots, copied for this tile and landed, or 0 and `ep` without a residual.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_nchw_runs_fused<R: NchwRows, Acc: Accumulators, M: Math, const W: usize>(
    rows: &R,
    ep: &EpilogueArgs,
    act: &Activation,
    y: *mut f32,
    acc: &Acc,
    first: u32,
    n0: u32,
    staged: u32,
    lane: u32,
    slot: u32,
) {
    // Lane L holds the factors of the chunk's column L.
    const { assert!(CHUNK == 32) };
    let lanes = (16 / W) as u32;
    let (g, s) = (lane % lanes, lane / lanes);
    let row = first + W as u32 * g;
    let (base, plane) = (rows.row_base(row), rows.plane());
    let beta = f32::from_bits(ep.beta);
    // SAFETY: a channel below K, as the caller guarantees the vectors.
    let load = |c: usize| unsafe { Epilogue::of(ep, (n0 + (CHUNK * c) as u32 + lane).min(rows.channels() - 1)) };
    unroll!(8: Acc::N / CHUNK, c => {
        // SAFETY: this warp's 16 rows of the staging.
        unsafe { stage_chunk(acc, c, staged, lane) };
        // Loaded after the staging, once the chunk's accumulators are free. (Loaded before it
        // or a chunk ahead, as `store_nchw` does, the 128-accumulator tiles spilled the same
        // 12-16 bytes as here: the spill is the path's, `nchw_store_runs`. Not timed.)
        let e = load(c);
        sync_warp();
        let mut i = 0;
        while i < 32 / (2 * W as u32) {
            let v = 2 * W as u32 * i + s;
            let col = n0 + (CHUNK * c) as u32 + v;
            // SAFETY (both): the whole warp, in uniform control flow (`i` counts alike in every lane).
            let (mul, add) = unsafe { (f32::from_bits(shfl_idx(e.mul().to_bits(), v)), f32::from_bits(shfl_idx(e.add().to_bits(), v))) };
            // SAFETY: this warp's rows of the staging, written before; 4-byte aligned.
            let mut x: [f32; W] = core::array::from_fn(|t| unsafe { ld_shared_f32(staged_unit(staged, W as u32 * g + t as u32, v / 4) + (v % 4) * 4) });
            if slot != 0 {
                // SAFETY: this thread's slots, as the caller guarantees; the run's place in them.
                let r = unsafe { super::nchw_residual::slot_run::<W>(slot, 2 * c as u32, i, M::BF16) };
                unroll!(4: W, t => { x[t] = fma(x[t], mul, fma(beta, r[t], add)) });
            } else {
                unroll!(4: W, t => { x[t] = fma(x[t], mul, add) });
            }
            act.apply_all(&mut x);
            if rows.inside(row, col) {
                // SAFETY: the run lies in the output, in one plane, aligned to its bytes; these
                // elements this thread's alone.
                unsafe { store_run::<M, W>(y, base + col * plane, rows.sixteen(), &x) };
            }
            i = opaque(i + 1);
        }
        // Every lane's reads before the next chunk's writes.
        sync_warp();
    });
}

/// Stores `W` consecutive output elements `x` (`W` = 4, 2 or 1) at element offset `at` of `y`,
/// rounded to `M`'s 16-bit type where `sixteen`, else fp32, in one store.
///
/// # Safety
/// The elements lie in the output, `at` a multiple of `W`; no other thread writes them.
#[inline(always)]
unsafe fn store_run<M: Math, const W: usize>(y: *mut f32, at: u32, sixteen: bool, x: &[f32; W]) {
    let at = at as usize;
    let x: [f32; 4] = core::array::from_fn(|t| if t < W { x[t] } else { 0.0 });
    // SAFETY (each): as the caller guarantees; `W` elements from a multiple of `W` are aligned
    // to the store's size.
    unsafe {
        if sixteen {
            let y = (y as *mut u16).add(at);
            match W {
                4 => store_global_f32x2(y as *mut f32, f32::from_bits(pack::<M>(x[0], x[1])), f32::from_bits(pack::<M>(x[2], x[3]))),
                2 => store_global_u32(y as *mut u32, pack::<M>(x[0], x[1])),
                _ => store_global_u16(y, pack::<M>(x[0], 0.0) as u16),
            }
        } else {
            let y = y.add(at);
            match W {
                4 => store_global_f32x4(y, F32x4([x[0], x[1], x[2], x[3]])),
                2 => store_global_f32x2(y, x[0], x[1]),
                _ => store_global_f32(y, x[0]),
            }
        }
    }
}

/// Prefetches into L2 the NCHW residual of consumer warpgroup `cw`'s rows of the tile at (`m0`,
/// `n0`) for [`store_nchw`] (nothing without a residual): for each of the tile's columns, each
/// 8-row group's first element, 8 lanes a column, so that a warp's prefetch asks for 4 columns'
/// runs of 64 pixels at once (an image's run a line or two). Called before the tile's
/// mainloop, so the epilogue's residual loads hit L2 (the staged store measured no faster for
/// it, fortieth session: its time is not its loads').
///
/// # Safety
/// The residual address (where not 0) holds an output-shaped NCHW tensor in the output's type.
#[inline(always)]
pub(super) unsafe fn prefetch_residual_nchw<R: NchwRows, Acc: Accumulators>(rows: &R, ep: &EpilogueArgs, m0: u32, n0: u32, cw: u32, tid: u32) {
    if ep.residual == 0 {
        return;
    }
    let bytes = if rows.sixteen() { 2 } else { 4 };
    let t = tid % WG;
    let row = m0 + cw * 64 + 8 * (t % 8);
    let base = rows.row_base(row);
    let mut col = n0 + t / 8;
    while col < n0 + Acc::N as u32 {
        if rows.inside(row, col) {
            let p = (ep.residual as *const u8).wrapping_add((base + col * rows.plane()) as usize * bytes);
            // SAFETY: an address inside the residual; a prefetch has no other effect.
            unsafe { asm!("prefetch.global.L2 [{p}];", p = in(reg64) p, options(nostack, readonly)) };
        }
        col += WG / 8;
    }
}

/// The widest run [`residual_eight_nchw`] reads 8 pixels of a column in, and [`store_nchw_runs`]
/// stores a lane's pixels in: 8, 4, 2 or 1 pixels, the largest power of 2 dividing
/// [`NchwRows::run`] (the rule [`store_eight_nchw`]'s branches follow). The same rule as
/// `convrs_spec::hopper::run_width`, which the planner and `super::nchw_residual` read: called
/// from here it moved the sm_90a PTX, which was not GPU-tested (forty-first session).
#[inline(always)]
pub(super) fn run_width(run: u32) -> u32 {
    if run % 8 == 0 {
        8
    } else if run % 4 == 0 {
        4
    } else if run % 2 == 0 {
        2
    } else {
        1
    }
}

/// What the fused epilogue adds to output pixels `row..row + 8` of channel `col` and
/// multiplies them by ([`operands_eight_nchw`]).
pub(super) struct Operands8 {
    mul: f32,
    add: [f32; 8],
}

/// The fused epilogue's operands for output pixels `row..row + 8` of channel `col` (`base`
/// the [`NchwRows::row_base`] of `row`, as for [`store_eight_nchw`]): alpha times the channel's
/// scale, and its bias plus beta times each pixel's residual, in [`finish_eight`]'s operations
/// (so the same fp32 values as the NHWC kernels'); `e` the channel's factors, loaded by the
/// caller (a column past K reads channel K - 1's: its elements are never stored). The residual
/// comes from this thread's slot `j` where `slot` is not 0.
///
/// # Safety
/// `ep`'s residual (where not 0) an output-shaped NCHW tensor in the output's type, aligned as
/// the output; `slot` as [`store_nchw`] requires.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn operands_eight_nchw<R: NchwRows, M: Math>(rows: &R, ep: &EpilogueArgs, e: Epilogue, row: u32, col: u32, base: u32, slot: u32, j: u32) -> Operands8 {
    let mut add = [e.add(); 8];
    if ep.residual != 0 {
        let beta = f32::from_bits(ep.beta);
        // SAFETY: as the caller guarantees the residual, or its copy in this thread's slots.
        let r = unsafe { if slot != 0 { super::nchw_residual::slot_eight(slot, j, M::BF16) } else { residual_eight_nchw::<R, M>(rows, ep.residual, row, col, base) } };
        unroll!(8: 8, i => { add[i] = fma(beta, r[i], add[i]) });
    }
    Operands8 { mul: e.mul(), add }
}

/// The fused epilogue of 8 accumulators `x` of one channel with their operands `o`: y = act(x *
/// mul + add).
#[inline(always)]
fn finish_eight_nchw(act: &Activation, mut x: [f32; 8], o: &Operands8) -> [f32; 8] {
    unroll!(8: 8, i => { x[i] = fma(x[i], o.mul, o.add[i]) });
    act.apply_all(&mut x);
    x
}

/// Residual elements of output pixels `row..row + 8` of channel `col` of an NCHW residual at
/// `res` (0 for those outside the output), read in the runs [`store_eight_nchw`] stores: 16
/// bytes at a time where P*Q allows 8 pixels (fp32: 32), else pairs, else single elements.
///
/// # Safety
/// `res` holds an output-shaped NCHW tensor in the output's type, aligned as the output.
#[inline(always)]
unsafe fn residual_eight_nchw<R: NchwRows, M: Math>(rows: &R, res: u64, row: u32, col: u32, base: u32) -> [f32; 8] {
    let (plane, half) = (rows.plane(), rows.sixteen());
    let at = |s: u32| if s == 0 { base + col * plane } else { rows.row_base(row + s) + col * plane } as usize;
    let inside = |s: u32| rows.inside(row + s, col);
    let mut r = [0.0; 8];
    // SAFETY (every load below): the elements lie in the residual (`inside`), in one image's
    // plane, aligned to the load's size (the run's width divides the rows' offsets).
    match run_width(rows.run()) {
        8 => {
            if inside(0) {
                r = unsafe { residual_eight(res, at(0), half, M::BF16) };
            }
        }
        2 | 4 => {
            unroll!(4: 4, h => {
                if inside(2 * h as u32) {
                    let p = unsafe { residual_pair(res, at(2 * h as u32), half, M::BF16) };
                    (r[2 * h], r[2 * h + 1]) = (p[0], p[1]);
                }
            });
        }
        _ => {
            unroll!(8: 8, s => {
                if inside(s as u32) {
                    r[s] = unsafe { residual_one(res, at(s as u32), half, M::BF16) };
                }
            });
        }
    }
    r
}

/// Stores output pixels `row` to `row + 7` (`row` a multiple of 8) of channel `col` from `x`
/// into an NCHW output, `base` the [`NchwRows::row_base`] of `row`: with a run of 8 (for
/// [`NhwcToNchw`], P*Q a multiple of 8: an image starts on a multiple of 8 rows, so the 8 are
/// one image's and 16-byte aligned) as one 16-byte store, else in the widest runs
/// [`NchwRows::run`] allows (a multiple of 4: two 8-byte stores, of 2: four 4-byte ones, odd:
/// single elements), each run's place found on its own. fp32 outputs in 16-byte runs where the
/// run is a multiple of 4, else single elements.
///
/// # Safety
/// `y` holds the output; no other thread writes these elements.
#[inline(always)]
unsafe fn store_eight_nchw<R: NchwRows, M: Math>(rows: &R, y: *mut f32, x: &[f32; 8], row: u32, col: u32, base: u32) {
    let (plane, run) = (rows.plane(), rows.run());
    let at = |s: u32| if s == 0 { base + col * plane } else { rows.row_base(row + s) + col * plane };
    let inside = |s: u32| rows.inside(row + s, col);
    if rows.sixteen() {
        let y = y as *mut u16;
        let v = [pack::<M>(x[0], x[1]), pack::<M>(x[2], x[3]), pack::<M>(x[4], x[5]), pack::<M>(x[6], x[7])];
        // SAFETY (every store below): the elements lie in the output (`inside`), in one image's
        // plane, aligned to the store's size (`NchwRows::run`: the run's width divides the
        // rows' offsets).
        if run % 8 == 0 {
            if inside(0) {
                unsafe { store_global_v4(y.add(at(0) as usize) as *mut u32, v) };
            }
        } else if run % 4 == 0 {
            for h in 0..2 {
                if inside(4 * h) {
                    unsafe { store_global_f32x2(y.add(at(4 * h) as usize) as *mut f32, f32::from_bits(v[2 * h as usize]), f32::from_bits(v[2 * h as usize + 1])) };
                }
            }
        } else if run % 2 == 0 {
            for h in 0..4 {
                if inside(2 * h) {
                    unsafe { store_global_u32(y.add(at(2 * h) as usize) as *mut u32, v[h as usize]) };
                }
            }
        } else {
            for s in 0..8 {
                if inside(s) {
                    unsafe { store_global_u16(y.add(at(s) as usize), pack::<M>(x[s as usize], 0.0) as u16) };
                }
            }
        }
    } else if run % 4 == 0 {
        for h in 0..2 {
            if inside(4 * h) {
                let i = 4 * h as usize;
                // SAFETY: as above, 16-byte aligned (4 fp32 values; the run divides P*Q and `row`).
                unsafe { store_global_f32x4(y.add(at(4 * h) as usize), F32x4([x[i], x[i + 1], x[i + 2], x[i + 3]])) };
            }
        }
    } else {
        for s in 0..8 {
            if inside(s) {
                // SAFETY: as above.
                unsafe { store_global_f32(y.add(at(s) as usize), x[s as usize]) };
            }
        }
    }
}

/// Applies the fused epilogue (`ConvShape::ep`, whose [`EpilogueArgs::in_registers`] holds for
/// a thread's `Acc::N / 2` accumulators) to consumer warpgroup `cw`'s accumulators of the tile at
/// (`m0`, `n0`) in place, before the bare store ([`store_tile`], [`store_deferring`]) rounds and
/// writes them: y = act(alpha * acc * scale[k] + bias[k] + beta * residual), `act` piecewise
/// linear, in the same operations as [`finish_eight`] (so the same fp32 values).
///
/// Which of scale and residual are present, and whether the activation is ReLU, are constants of
/// one of eight straight-line forms ([`finish_form`]), chosen once a tile: this epilogue's first
/// form (b102f9c), a uniform branch on each operand around each load, ran about 16 instructions
/// an element, and step 7 with `alpha=2` alone took 1.4x the bare time (ncu, H100, 8,64,112,112 ->
/// 128 3x3: 15.4M instructions against 8.9M).
///
/// Where `AHEAD` (and [`loads_ahead`]), the residual comes from `ahead`: an [`Ahead`]
/// ([`residual_ahead`] of the same tile and warpgroup, loaded before the tile's mainloop), or
/// the tile's residual copied into shared memory (`super::residual`); otherwise the forms load it.
///
/// # Safety
/// As [`store_fused`]'s operands: scale and bias (where not 0) hold K fp32 values, the residual
/// an output-shaped tensor in the output's type.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn finish_in_registers<O: Operands, Acc: Accumulators, M: Math, P: Pairs, const AHEAD: bool>(sh: &ConvShape, acc: &mut Acc, ahead: &P, m0: u32, n0: u32, cw: u32, tid: u32) {
    let ep = &sh.ep;
    let relu = ep.act == Act::Relu as u32;
    macro_rules! forms {
        ($(($s:literal, $r:literal, $relu:literal)),*) => {
            // (No residual forms where the register epilogue takes none: `residual_in_registers`.)
            match (ep.scale != 0, residual_in_registers(O::Y_NCHW) && (P::RESIDUAL || ep.residual != 0), relu) {
                // SAFETY: as the caller guarantees; each form reads the operands it is named for
                // (and the bias, which `in_registers` requires).
                $(($s, $r, $relu) => unsafe { finish_form::<O, Acc, M, P, AHEAD, $s, $r, $relu>(sh, acc, ahead, m0, n0, cw, tid) },)*
            }
        };
    }
    forms!((false, false, false), (false, false, true), (false, true, false), (false, true, true), (true, false, false), (true, false, true), (true, true, false), (true, true, true));
}

/// One form of [`finish_in_registers`]: with the bias, scale and residual where `SCALE` and
/// `RES` (their addresses then non-zero), and ReLU (one `max.NaN`) where `RELU`, otherwise the
/// linear form of `ep.act`. Each accumulator pair is two columns of a row: a pixel's two
/// channels, whose scale and bias load as one 8-byte pair shared by the pair's two rows, or for
/// NCHW planes two pixels of one channel, whose factors load once a row. The residual pairs
/// were loaded ahead (`ahead`, where `AHEAD`) or load here, 4 (fp32: 8) bytes. Elements
/// outside the output are computed on clamped channels and offsets (and not stored). A warp
/// barrier after every fourth column group keeps ptxas from hoisting every load of the tile to
/// the top, where their registers spilled (128 x 128 tiles).
///
/// # Safety
/// As [`finish_in_registers`].
#[inline(always)]
unsafe fn finish_form<O: Operands, Acc: Accumulators, M: Math, P: Pairs, const AHEAD: bool, const SCALE: bool, const RES: bool, const RELU: bool>(
    sh: &ConvShape,
    acc: &mut Acc,
    ahead: &P,
    m0: u32,
    n0: u32,
    cw: u32,
    tid: u32,
) {
    let ep = &sh.ep;
    let act = Activation::of(ep);
    let half = M::SPEC == Spec::Half && sh.y_bits == 16;
    let (alpha, beta) = (f32::from_bits(ep.alpha), f32::from_bits(ep.beta));
    let last = sh.k as u32 - 1;
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let row0 = m0 + cw * 64 + warp * 16 + lane / 4;
    // Channel k's (and k + 1's) factor and addend; k (even) clamped into K (a multiple of 8).
    let factors = |k: u32, pair: bool| -> ([f32; 2], [f32; 2]) {
        let k = k.min(if pair { last - 1 } else { last }) as usize;
        // SAFETY: k (+ 1) < K, as the caller guarantees the K values; 8-byte aligned pairs.
        let two = |base: u64| unsafe {
            let p = (base as *const f32).add(k);
            if pair { load_global_nc_f32x2(p) } else { [load_global_nc_f32(p); 2] }
        };
        let mul = if SCALE { two(ep.scale).map(|s| alpha * s) } else { [alpha; 2] };
        let add = two(ep.bias);
        (mul, add)
    };
    // Planes: the factors of the thread's two rows, the same for every column.
    let by_row = if O::PLANES { [0, 1].map(|e| factors(O::y_channels(sh, row0 + 8 * e, n0).0, false)) } else { [([0.0; 2], [0.0; 2]); 2] };
    let finish = |v: f32| if RELU { relu(v) } else { act.linear(v) };
    unroll!(32: Acc::N / 8, j => {
        let col = n0 + 8 * j as u32 + 2 * (lane % 4);
        let by_col = if O::PLANES { by_row[0] } else { factors(col, true) };
        unroll!(4: 2, e => {
            let (mul, mut add) = if O::PLANES { by_row[e] } else { by_col };
            if RES {
                let r = if AHEAD && loads_ahead::<M>() {
                    // SAFETY: pair 2j + e of this thread's, as the caller guarantees.
                    widen_pair(unsafe { ahead.pair(2 * j + e) }, half, M::BF16)
                } else {
                    let row = row0 + 8 * e as u32;
                    let off = if O::y_in(sh, row, col) { O::y_off(sh, row, col) as usize } else { 0 };
                    // SAFETY: an element pair of the output-shaped residual (the first for
                    // elements outside the output), aligned to the pair (col even).
                    unsafe { residual_pair(ep.residual, off, half, M::BF16) }
                };
                add = [fma(beta, r[0], add[0]), fma(beta, r[1], add[1])];
            }
            let i = 4 * j + 2 * e;
            acc[i] = finish(fma(acc[i], mul[0], add[0]));
            acc[i + 1] = finish(fma(acc[i + 1], mul[1], add[1]));
        });
        if j % 4 == 3 && j + 1 < Acc::N / 8 {
            sync_warp();
        }
    });
}

/// Whether [`residual_ahead`] loads the residual for `M`: not for 3xTF32, whose three sets of
/// accumulators left no room for the fp32 pairs (ptxas spilled up to 656 bytes); its forms load
/// the residual in the epilogue.
const fn loads_ahead<M: Math>() -> bool {
    !matches!(M::SPEC, Spec::Tf32x3)
}

/// A thread's residual pairs for [`finish_in_registers`], in raw bits, loaded before the tile's
/// mainloop ([`residual_ahead`]): pair (j, e) at `v[2j + e]`, [`finish_form`]'s order.
pub(super) struct Ahead {
    v: [[u32; 2]; 2 * IN_REGISTERS_COLUMN_GROUPS],
}

/// The 8-column groups of the widest block [`finish_in_registers`] takes (a thread's
/// `IN_REGISTERS_MAX_ACC` accumulators, 4 a group).
const IN_REGISTERS_COLUMN_GROUPS: usize = IN_REGISTERS_MAX_ACC / 4;

impl Ahead {
    /// No residual.
    pub(super) const NONE: Ahead = Ahead { v: [[0; 2]; 2 * IN_REGISTERS_COLUMN_GROUPS] };
}

/// Where [`finish_in_registers`] takes a thread's residual pairs from, where they are not
/// its forms' to load.
pub(super) trait Pairs {
    /// Whether there is a residual for certain (the forms without one then compile away).
    const RESIDUAL: bool;
    /// Pair `i` (pair (j, e) at `2j + e`, [`finish_form`]'s order) in raw bits, as
    /// `residual_pair_ahead` leaves them.
    ///
    /// # Safety
    /// As the implementation says.
    unsafe fn pair(&self, i: usize) -> [u32; 2];
}

impl Pairs for Ahead {
    const RESIDUAL: bool = false;

    /// Zeros past the widest block (the forms are compiled for every tile width).
    #[inline(always)]
    unsafe fn pair(&self, i: usize) -> [u32; 2] {
        self.v.get(i).copied().unwrap_or([0; 2])
    }
}

/// Loads consumer warpgroup `cw`'s residual pairs of the tile at (`m0`, `n0`) for the register
/// epilogue (`ConvShape::ep`; nothing without a residual, or where a thread holds more than
/// `IN_REGISTERS_MAX_ACC` accumulators, which `in_registers` leaves to the staging). Called
/// before the tile's mainloop under ping-pong where the launch passes no residual map (with one,
/// the producer copies the residual: `super::residual`): the loads then arrive under the other
/// warpgroup's mainloop and this one's. There, loaded in the epilogue, they had spilled, and
/// the staging they took instead held a stage: 32,64,56,56->64 3x3 with bias + residual + ReLU
/// on 128x64 tiles 40.4 us, loaded ahead 23.9 (bare 19.6; H200, thirty-fifth session). Step 7
/// loads them in the epilogue after an L2 prefetch: ahead, its 1x1 layers ran up to 1.2x
/// slower. Elements outside the output read the residual's first pair instead (never stored).
///
/// # Safety
/// The residual address (where not 0) holds an output-shaped tensor in the output's type,
/// aligned to its pairs.
#[inline(always)]
pub(super) unsafe fn residual_ahead<O: Operands, Acc: Accumulators, M: Math>(sh: &ConvShape, m0: u32, n0: u32, cw: u32, tid: u32) -> Ahead {
    let res = sh.ep.residual;
    if res == 0 || Acc::N / 8 > IN_REGISTERS_COLUMN_GROUPS || !loads_ahead::<M>() {
        return Ahead::NONE;
    }
    let half = M::SPEC == Spec::Half && sh.y_bits == 16;
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let row0 = m0 + cw * 64 + warp * 16 + lane / 4;
    let mut ahead = Ahead::NONE;
    unroll!(16: Acc::N / 8, j => {
        let col = n0 + 8 * j as u32 + 2 * (lane % 4);
        unroll!(4: 2, e => {
            let row = row0 + 8 * e as u32;
            let off = if O::y_in(sh, row, col) { O::y_off(sh, row, col) as usize } else { 0 };
            // SAFETY: an element pair of the output-shaped residual (the first for elements
            // outside the output), aligned to the pair (col even).
            ahead.v[2 * j + e] = unsafe { residual_pair_ahead(res, off, half) };
        });
    });
    ahead
}

/// Columns of a chunk of [`store_fused`]: one [`ROW_BYTES`] row of fp32 values.
pub(super) const CHUNK: usize = ROW_BYTES / 4;

/// The shared address of 16-byte unit `u` of row `r` of a warp's staging at `staged`
/// ([`ROW_BYTES`]-byte rows, the units swizzled by the row so that both the pairs written by
/// [`stage_chunk`] and the vectors read back take the fewest wavefronts).
#[inline(always)]
fn staged_unit(staged: u32, r: u32, u: u32) -> u32 {
    staged + r * ROW_BYTES as u32 + (u ^ (r % 8)) * 16
}

/// [`staged_unit`] for [`store_fused`], swizzled linearly in bits 0-2 of the row (they flip
/// units by 3, 4 and 2): then an 8-byte store's half-warp (4 consecutive rows' 32-byte pieces)
/// meets distinct pairs of units, 2 wavefronts, where keyed by `r % 8` rows 2k and 2k + 1
/// share a pair and a store takes 4 (4.2 measured on [`stage_chunk`]'s; ncu, step 16 bare,
/// 32,64,56,56->256; H200, forty-eighth session); the read-back's vectors take 4 either way
/// (a quarter-warp reads two rows; `dev/staging_banks.py`). [`store_nchw`] keeps
/// [`staged_unit`]: through this swizzle the 128-accumulator ping-pong `_to_nchw` entries
/// spilled 12 bytes (and, keyed by bit 3 too, which also takes its column loads in 1
/// wavefront, not 2, 12-32 bytes on three 128-accumulator entries).
#[inline(always)]
fn fused_unit(staged: u32, r: u32, u: u32) -> u32 {
    let swizzle = (3 * (r & 1)) ^ (2 * (r & 2)) ^ ((r >> 1) & 2);
    staged + r * ROW_BYTES as u32 + (u ^ swizzle) * 16
}

/// Writes chunk `c` ([`CHUNK`] columns) of a warp's 16 accumulator rows into its staging at
/// `staged`: row r of the chunk in row r, as fp32, [`staged_unit`]'s layout.
///
/// # Safety
/// `staged` is 16 [`ROW_BYTES`]-byte rows of shared memory that only this warp uses now,
/// 16-byte aligned; every lane of the warp calls it.
#[inline(always)]
unsafe fn stage_chunk<Acc: Accumulators>(acc: &Acc, c: usize, staged: u32, lane: u32) {
    let q = lane % 4;
    unroll!(4: CHUNK / 8, t => {
        unroll!(4: 2, e => {
            let i = 4 * (CHUNK / 8 * c + t) + 2 * e;
            let r = lane / 4 + 8 * e as u32;
            // SAFETY: this warp's rows of the staging; 8-byte aligned.
            unsafe { st_shared_f32x2(staged_unit(staged, r, 2 * t as u32 + q / 2) + (q % 2) * 8, acc[i], acc[i + 1]) };
        });
    });
}

/// [`stage_chunk`] into any layout of the rows: 16-byte unit `u` of row `r` at `unit(r, u)`
/// ([`group_unit`]'s for [`store_nchw_wide`]). (Through it, [`stage_chunk`]'s own callers
/// spilled 8-16 bytes on the 128-accumulator ping-pong tiles: its addresses joined by `or`.)
///
/// # Safety
/// `unit` gives 16 [`ROW_BYTES`]-byte rows of shared memory that only this warp writes now
/// (and no other thread reads until a barrier), 16-byte aligned; every lane of the warp calls it.
#[inline(always)]
unsafe fn stage_chunk_with<Acc: Accumulators>(acc: &Acc, c: usize, lane: u32, unit: impl Fn(u32, u32) -> u32) {
    let q = lane % 4;
    unroll!(4: CHUNK / 8, t => {
        unroll!(4: 2, e => {
            let i = 4 * (CHUNK / 8 * c + t) + 2 * e;
            let r = lane / 4 + 8 * e as u32;
            // SAFETY: this warp's rows of the staging; 8-byte aligned.
            unsafe { st_shared_f32x2(unit(r, 2 * t as u32 + q / 2) + (q % 2) * 8, acc[i], acc[i + 1]) };
        });
    });
}

/// Writes consumer warpgroup `cw`'s 64 rows of the tile at (`m0`, `n0`) with the fused epilogue
/// (`ConvShape::ep`): y = act(alpha * acc * scale[k] + bias[k] + beta * residual), rounded once.
///
/// The accumulators go through shared memory a chunk of [`CHUNK`] columns at a time: each warp
/// writes its 16 rows of the chunk into its own 16 rows of the last stage's A tile (`a_tile`,
/// which the warpgroup holds: its wgmmas retired, the producer waits for its release), then
/// reads them back as 8 consecutive columns of a row a lane, twice. The epilogue then runs on
/// 8 elements at a time in a loop that is not unrolled: its code is one body per chunk, the
/// activation's branch taken once per 8 elements, and the operands load as 16-byte vectors
/// (scale and bias of 8 channels, 8 residual elements). Applied to the accumulators in registers
/// instead, the unrolled code (one three-way activation branch per element, about 6800
/// instructions on 128x128 tiles) ran each tile once out of an instruction cache it did not
/// fit: 3x the bare kernel's time, two thirds of it instruction-fetch stalls (ncu, H100,
/// notes/epilogue.md).
///
/// The staging's layout is [`staged_unit`]'s, written by [`stage_chunk`].
///
/// # Safety
/// As [`store_tile`], except that each warp may call it alone (split-K's last warp of a unit);
/// `a_tile` is the shared address of a stage's A tile ([`ROW_BYTES`]-byte rows, 128 of them)
/// that no wgmma or copy touches until this warpgroup releases it; the epilogue's addresses
/// hold K channels and an output-shaped residual, 16-byte aligned.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn store_fused<O: Operands, Acc: Accumulators, M: Math>(sh: &ConvShape, y: *mut f32, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32, a_tile: u32) {
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let rows = cw * 64 + warp * 16;
    let staged = a_tile + rows * ROW_BYTES as u32;
    let unit = |r: u32, u: u32| fused_unit(staged, r, u);
    // Decoded once a tile, not in the loop (its table lookup and jump were a dependent chain
    // in every iteration).
    let act = Activation::of(&sh.ep);
    // Every lane's reads of the stage (3xTF32's ldmatrix) before any lane's staging writes.
    sync_warp();
    let q = lane % 4;
    unroll!(8: Acc::N / CHUNK, c => {
        // `stage_chunk`'s loop, written out: through the function, ptxas spilled 12 bytes on
        // step 7's 128 x 256 tiles (thirtieth session).
        unroll!(4: CHUNK / 8, t => {
            unroll!(4: 2, e => {
                let i = 4 * (CHUNK / 8 * c + t) + 2 * e;
                let r = lane / 4 + 8 * e as u32;
                // SAFETY: this warp's rows of the held A tile; 8-byte aligned.
                unsafe { st_shared_f32x2(unit(r, 2 * t as u32 + q / 2) + (q % 2) * 8, acc[i], acc[i + 1]) };
            });
        });
        sync_warp();
        // Each lane's items of the chunk: (row, 8-column group) pairs, 16 x CHUNK / 8 of them.
        let mut item = lane;
        while item < (16 * CHUNK / 8) as u32 {
            let (r, v) = (item / (CHUNK / 8) as u32, item % (CHUNK / 8) as u32);
            // SAFETY: this warp's rows of the held A tile, written above; 16-byte aligned.
            let (lo, hi) = unsafe { (ld_shared_f32x4(unit(r, 2 * v)), ld_shared_f32x4(unit(r, 2 * v + 1))) };
            let x = [lo.0[0], lo.0[1], lo.0[2], lo.0[3], hi.0[0], hi.0[1], hi.0[2], hi.0[3]];
            let (row, col) = (m0 + rows + r, n0 + (CHUNK * c) as u32 + 8 * v);
            if O::y_in(sh, row, col) {
                // SAFETY: row < M and col..col + 8 inside the output (K, or H*W for planes, a
                // multiple of 8), 16-byte aligned; this thread's alone; operands as the caller
                // guarantees.
                unsafe { finish_eight::<O, M>(sh, &act, y, x, row, col) };
            }
            item = opaque(item + 32);
        }
        sync_warp();
    });
}

/// Prefetches into L2 consumer warpgroup `cw`'s rows of the residual the fused epilogue of the
/// tile at (`m0`, `n0`) will read (`ConvShape::ep`; nothing without one), a 128-byte line a
/// thread at a time: called before the tile's mainloop, so that the epilogue's residual loads,
/// each a dependent round trip in its loop, hit L2 instead of DRAM.
///
/// # Safety
/// The residual address (where not 0) holds an output-shaped tensor in the output's type.
#[inline(always)]
pub(super) unsafe fn prefetch_residual<O: Operands, Acc: Accumulators, M: Math>(sh: &ConvShape, m0: u32, n0: u32, cw: u32, tid: u32) {
    if sh.ep.residual == 0 {
        return;
    }
    let bytes = if M::SPEC == Spec::Half && sh.y_bits == 16 { 2 } else { 4 };
    // Lines of a row's Acc::N contiguous elements, and the elements of one.
    let per_line = 128 / bytes;
    let lines = Acc::N.div_ceil(per_line as usize) as u32;
    let t = tid % WG;
    let mut i = t;
    while i < 64 * lines {
        let (row, col) = (m0 + cw * 64 + i / lines, n0 + (i % lines) * per_line);
        if O::y_in(sh, row, col) {
            let p = (sh.ep.residual as *const u8).wrapping_add(O::y_off(sh, row, col) as usize * bytes as usize);
            // SAFETY: an address inside the residual; a prefetch has no other effect.
            unsafe { asm!("prefetch.global.L2 [{p}];", p = in(reg64) p, options(nostack, readonly)) };
        }
        i += WG;
    }
}

/// `v`, hidden from the optimizer: a loop counter through it has no trip count, so the loop is
/// neither unrolled nor duplicated.
#[inline(always)]
fn opaque(v: u32) -> u32 {
    let o: u32;
    // SAFETY: register move only.
    unsafe { asm!("mov.u32 {o}, {v};", o = out(reg32) o, v = in(reg32) v, options(pure, nomem, nostack)) };
    o
}

/// Finishes and stores output elements (`row`, `col..col + 8`) of accumulators `x`: the
/// epilogue of [`store_fused`] (`act` decoded from it), then 16 bytes of a 16-bit output or
/// 32 of fp32.
///
/// # Safety
/// As [`store_fused`] for these 8 elements, all inside the output.
#[inline(always)]
unsafe fn finish_eight<O: Operands, M: Math>(sh: &ConvShape, act: &Activation, y: *mut f32, mut x: [f32; 8], row: u32, col: u32) {
    let ep = &sh.ep;
    let half = M::SPEC == Spec::Half && sh.y_bits == 16;
    let off = O::y_off(sh, row, col) as usize;
    // Per output channel: the 8 columns' channels, or (NCHW planes) the row's one.
    let k = O::y_channels(sh, row, col).0 as usize;
    let eight = |base: u64| -> [f32; 8] {
        // SAFETY: K fp32 values at a 16-byte aligned address; k + 8 <= K where columns are
        // channels (K a multiple of 8), k < K for planes.
        unsafe {
            let p = (base as *const f32).add(k);
            if O::PLANES { [load_global_nc_f32(p); 8] } else { load_global_nc_f32x8(p) }
        }
    };
    let alpha = f32::from_bits(ep.alpha);
    let mul = if ep.scale != 0 { eight(ep.scale).map(|s| alpha * s) } else { [alpha; 8] };
    let mut add = if ep.bias != 0 { eight(ep.bias) } else { [0.0; 8] };
    if ep.residual != 0 {
        let beta = f32::from_bits(ep.beta);
        // SAFETY: the output's offset, 16-byte aligned, inside the output-shaped residual.
        let r = unsafe { residual_eight(ep.residual, off, half, M::BF16) };
        unroll!(8: 8, i => { add[i] = fma(beta, r[i], add[i]) });
    }
    unroll!(8: 8, i => { x[i] = fma(x[i], mul[i], add[i]) });
    act.apply_all(&mut x);
    // SAFETY: as the caller guarantees.
    unsafe {
        if half {
            let v = [pack::<M>(x[0], x[1]), pack::<M>(x[2], x[3]), pack::<M>(x[4], x[5]), pack::<M>(x[6], x[7])];
            store_global_v4((y as *mut u16).add(off) as *mut u32, v);
        } else {
            store_global_f32x4(y.add(off), F32x4([x[0], x[1], x[2], x[3]]));
            store_global_f32x4(y.add(off + 4), F32x4([x[4], x[5], x[6], x[7]]));
        }
    }
}

/// Slices a deferred tile's stores are spread over: one after each of the next tile's first
/// SLICES k-tiles' wgmmas are issued, so the tensor cores keep working while the stores drain
/// (every CTA would otherwise write its tile at the same moment, a wave's worth of output
/// competing for memory while the tensor cores idle).
pub(super) const SLICES: u32 = 4;

/// Stores a tile's epilogue defers, at most: the last 8 of a thread's Acc::N / 16 (half of a
/// 128x256 tile's, all of a 128x128 tile's). The registers they take (32 a thread) are what the
/// consumers have left beside the next tile's accumulators (64 spilled).
const DEFERRED: usize = 8;

/// Stores deferred with accumulators `Acc`: [`DEFERRED`], or all of a narrower tile's.
const fn deferred<Acc: Accumulators>() -> usize {
    if Acc::N / 16 < DEFERRED { Acc::N / 16 } else { DEFERRED }
}

/// One consumer thread's deferred stores of a finished tile in 16-bit outputs, packed and
/// traded across its quad into store order: `v[i]` (i < `deferred::<Acc>()`) is store
/// `Acc::N / 16 - deferred::<Acc>() + i` of [`store_one`].
pub(super) struct Pending {
    v: [[u32; 4]; DEFERRED],
    m0: u32,
    n0: u32,
    live: bool,
}

impl Pending {
    /// Nothing pending.
    pub(super) const NONE: Pending = Pending { v: [[0; 4]; DEFERRED], m0: 0, n0: 0, live: false };
}

/// The 16-bit epilogue of the tile at (`m0`, `n0`) with deferred stores (bare convolutions
/// only: the kernel does not defer under a fused epilogue, whose registers beside the pending
/// stores spilled on 128 x 256 tiles): writes what the last
/// tile's deferral left unwritten (the slices its k-tiles did not reach), then this tile's stores
/// except the last [`deferred`] ones, which it returns pending for the next tile's k-tiles.
///
/// # Safety
/// As [`store_tile`]; `last` is the previous tile's pending stores, of which slices
/// `min(ktiles, SLICES)..` are unwritten.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn store_deferring<O: Operands, Acc: Accumulators, M: Math>(sh: &ConvShape, y: *mut f32, last: &Pending, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32, ktiles: i32) -> Pending {
    // SAFETY: as above; the slices the k-tiles did not reach.
    unsafe { store_pending::<O, Acc>(sh, y, last, cw, tid, (ktiles as u32).min(SLICES), SLICES) };
    // SAFETY: the whole warp together.
    let v = unsafe { pack_tile::<Acc, M>(acc, tid % 4) };
    let first = Acc::N / 16 - deferred::<Acc>();
    unroll!(16: first, i => {
        // SAFETY: as `store_tile`; the stores not deferred, now.
        unsafe { store_one::<O, Acc>(sh, y, m0, n0, cw, tid, i, v[i], true) };
    });
    Pending { v: core::array::from_fn(|i| if i < deferred::<Acc>() { v[first + i] } else { [0; 4] }), m0, n0, live: true }
}

/// Packs and quad-transposes the accumulators for [`store_pending`].
///
/// # Safety
/// Every lane of the warp calls it together (shuffles); `q` is the lane's index in its quad.
#[inline(always)]
unsafe fn pack_tile<Acc: Accumulators, M: Math>(acc: &Acc, q: u32) -> [[u32; 4]; 16] {
    let mut out = [[0u32; 4]; 16];
    unroll!(4: 2, e => {
        unroll!(8: Acc::N / 32, g => {
            let mut v = [0u32; 4];
            unroll!(4: 4, t => {
                let j = 4 * g + t;
                v[t] = pack::<M>(acc[4 * j + 2 * e], acc[4 * j + 2 * e + 1]);
            });
            // SAFETY: as the caller guarantees.
            out[e * (Acc::N / 32) + g] = unsafe { quad_transpose(v, q) };
        });
    });
    out
}

/// Writes slices `from..to` (of [`SLICES`]) of a pending tile's deferred stores (none if the
/// tile is not live). Branch-free: it runs between the next tile's wgmmas in flight.
///
/// # Safety
/// As [`store_tile`]; each slice of each pending tile is written once.
#[inline(always)]
pub(super) unsafe fn store_pending<O: Operands, Acc: Accumulators>(sh: &ConvShape, y: *mut f32, p: &Pending, cw: u32, tid: u32, from: u32, to: u32) {
    let d = deferred::<Acc>();
    let per = (d as u32).div_ceil(SLICES);
    unroll!(8: d, i => {
        let slice = i as u32 / per;
        let ok = p.live & (slice >= from) & (slice < to);
        // SAFETY: as the caller guarantees.
        unsafe { store_one::<O, Acc>(sh, y, p.m0, p.n0, cw, tid, Acc::N / 16 - d + i, p.v[i], ok) };
    });
}

/// Store `i` (< Acc::N / 16) of consumer thread `tid`'s share of the tile at (`m0`, `n0`) in
/// 16-bit outputs: the 16 bytes [`pack_tile`] left in slot `i`, row half e = i / (N/32) and
/// chunk group g = i % (N/32) of [`store_tile`]'s order, if `ok` and inside the output (one
/// predicated store, no branch).
///
/// # Safety
/// As [`store_tile`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_one<O: Operands, Acc: Accumulators>(sh: &ConvShape, y: *mut f32, m0: u32, n0: u32, cw: u32, tid: u32, i: usize, v: [u32; 4], ok: bool) {
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let (e, g) = (i / (Acc::N / 32), i % (Acc::N / 32));
    let row = m0 + cw * 64 + warp * 16 + lane / 4 + 8 * e as u32;
    let col = n0 + 8 * (4 * g as u32 + lane % 4);
    let ok = ok & O::y_in(sh, row, col);
    // SAFETY: as in `store_tile` when ok: in bounds, 16-byte aligned, this thread's alone
    // (otherwise the address is only computed, wrapping).
    unsafe { store_global_v4_if((y as *mut u16).wrapping_add(O::y_off(sh, row, col) as usize) as *mut u32, v, ok) };
}

/// A 4 x 4 transpose across the lanes of a quad: lane `q` gives `v[t]` (piece q of chunk t)
/// and gets back piece p of chunk q in slot p. Two butterfly stages; in stage b (1, 2) a lane
/// sends the two slots whose bit b differs from its own lane bit and takes its partner's into
/// them.
///
/// # Safety
/// Every lane of the warp calls it together.
#[inline(always)]
unsafe fn quad_transpose(mut v: [u32; 4], q: u32) -> [u32; 4] {
    unroll!(4: 2, stage => {
        let b = 1u32 << stage;
        // The slots with bit b clear and with it set.
        let (c0, c1, s0, s1) = if b == 1 { (0, 2, 1, 3) } else { (0, 1, 2, 3) };
        let hi = q & b != 0;
        let (x0, x1) = if hi { (v[c0], v[c1]) } else { (v[s0], v[s1]) };
        // SAFETY: as the caller guarantees.
        let (r0, r1) = unsafe { (shfl_xor(x0, b), shfl_xor(x1, b)) };
        if hi {
            (v[c0], v[c1]) = (r0, r1);
        } else {
            (v[s0], v[s1]) = (r0, r1);
        }
    });
    v
}
