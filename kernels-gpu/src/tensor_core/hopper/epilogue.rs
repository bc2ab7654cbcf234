//! The warp-specialized kernels' epilogue: a consumer warpgroup's accumulators to the output,
//! fp32 as they are or rounded to the input's 16-bit type (`ConvShape::y_bits`). The 16-bit
//! path can defer part of a tile's stores into the next tile's first k-tiles ([`Pending`]), so
//! that the stores drain while the tensor cores work.
//!
//! Register 4j+e' (e' < 2) of a consumer thread is D[16*warp + lane/4][8j + 2*(lane%4) + e'],
//! 4j+2+e' the same 8 rows further (notes/hopper.md §1.4), warp and lane within the warpgroup.

use convrs_spec::hopper::{Math as Spec, WARPGROUP};

use super::math::{pack, Math};
use crate::prelude::epilogue::{residual_pair, Activation};
use crate::prelude::matrix::{shfl_xor, store_global_f32x2, store_global_v4, store_global_v4_if};
use crate::prelude::wgmma::Accumulators;
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::Operands;

/// Threads of a warpgroup.
const WG: u32 = WARPGROUP as u32;

/// Writes consumer warpgroup `cw`'s 64 rows of the tile at (`m0`, `n0`). The four lanes of a
/// quad hold one row's 8-column chunk j in 4- (fp32: 8-) byte pieces. For 16-bit outputs,
/// storing those directly writes each 32-byte sector in halves, which measured slower than even
/// writing twice the bytes in fp32; instead the quad trades pieces by shuffles so that each lane
/// stores 16 contiguous bytes, a quad 64 of a row at once (BENCHMARKS.md, third session).
///
/// # Safety
/// `y` and `sh` as the kernel requires; each (row, column) of the output is written by one
/// thread of one CTA. Every lane of the warp calls it together (shuffles).
#[inline(always)]
pub(super) unsafe fn store_tile<O: Operands, Acc: Accumulators, M: Math>(sh: &ConvShape, y: *mut f32, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32) {
    // SAFETY: as the caller guarantees.
    let acc = &unsafe { fused::<O, Acc, M>(sh, acc, m0, n0, cw, tid) };
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let q = lane % 4;
    let row0 = m0 + cw * 64 + warp * 16 + lane / 4;
    // fp32 data is written as fp32 only (the host plans it so).
    if M::SPEC == Spec::Half && sh.y_bits == 16 {
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
                    // is K * 2 bytes; for NCHW planes, H*W * 2 bytes); this thread's alone.
                    unsafe { store_global_v4((y as *mut u16).add(O::y_off(sh, row, col) as usize) as *mut u32, v) };
                }
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

/// Column groups of a chunk of [`fused`] (both row halves of each), whose operands load
/// together: a chunk's loads are one round trip, and the chunks' follow each other. (128x256
/// tiles do not fuse: even one group at a time spilled there; `convrs_spec::hopper::MAX_FUSED_BN`.)
const CHUNK: usize = 4;

/// The tile's accumulators with the fused epilogue applied (`ConvShape::ep`; as they are when
/// it is the identity): each element finished with its output channel's scale and bias and its
/// residual element, read at its own output offset in the output's type. The operands of a
/// chunk of [`CHUNK`] column groups load before any of its arithmetic, with no branch between
/// them (elements outside the output read channel 0 and offset 0, and are never stored), so
/// their latencies overlap: loading per element behind its bounds check serialized one round
/// trip per pair, which measured up to 6x the bare kernel's time. (One pass per operand over
/// the whole tile let ptxas hoist every load, and spilled.)
///
/// # Safety
/// As [`store_tile`]; the epilogue's addresses hold K channels and an output-shaped residual.
#[inline(always)]
unsafe fn fused<O: Operands, Acc: Accumulators, M: Math>(sh: &ConvShape, acc: &Acc, m0: u32, n0: u32, cw: u32, tid: u32) -> Acc {
    let mut acc = *acc;
    let ep = &sh.ep;
    if ep.is_identity() {
        return acc;
    }
    let (warp, lane) = ((tid % WG) / 32, tid % 32);
    let row0 = m0 + cw * 64 + warp * 16 + lane / 4;
    let half = sh.y_bits == 16;
    let act = Activation::of(ep);
    let (alpha, beta) = (f32::from_bits(ep.alpha), f32::from_bits(ep.beta));
    let per = const { if Acc::N / 8 < CHUNK { Acc::N / 8 } else { CHUNK } };
    let load = |base: u64, k: u32| {
        // SAFETY: k < K (or 0), inside the caller's K-value vector.
        unsafe { load_global_nc_f32((base as *const f32).add(k as usize)) }
    };
    unroll!(16: Acc::N / 8 / per, c => {
        // Pair (t, e)'s channels and residual offset, clamped into the tensors.
        let at = |t: usize, e: usize| {
            let (col, row) = (n0 + 8 * (c * per + t) as u32 + 2 * (lane % 4), row0 + 8 * e as u32);
            if O::y_in(sh, row, col) { (O::y_channels(sh, row, col), O::y_off(sh, row, col) as usize) } else { ((0, 0), 0) }
        };
        // Sized for `unroll!(4: ..)`'s bodies (the compiler checks indices it never reaches).
        let mut mul = [[[alpha; 2]; 2]; 4];
        let mut add = [[[0.0f32; 2]; 2]; 4];
        if ep.scale != 0 {
            unroll!(4: per, t => { unroll!(4: 2, e => { let (k, _) = at(t, e); mul[t][e] = [alpha * load(ep.scale, k.0), alpha * load(ep.scale, k.1)]; }); });
        }
        if ep.bias != 0 {
            unroll!(4: per, t => { unroll!(4: 2, e => { let (k, _) = at(t, e); add[t][e] = [load(ep.bias, k.0), load(ep.bias, k.1)]; }); });
        }
        if ep.residual != 0 {
            // SAFETY: a pair-aligned offset inside the output (or 0), so inside the residual.
            unroll!(4: per, t => { unroll!(4: 2, e => {
                let r = unsafe { residual_pair(ep.residual, at(t, e).1, half, M::BF16) };
                add[t][e] = [add[t][e][0] + beta * r[0], add[t][e][1] + beta * r[1]];
            }); });
        }
        unroll!(4: per, t => {
            unroll!(4: 2, e => {
                let i = 4 * (c * per + t) + 2 * e;
                unroll!(4: 2, h => {
                    acc[i + h] = act.apply(acc[i + h] * mul[t][e][h] + add[t][e][h]);
                });
            });
        });
    });
    acc
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
