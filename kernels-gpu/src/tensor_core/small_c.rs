//! Family 3, step 2b: tensor cores for layers with few input channels, `wmma_smallc_128x{BN}`
//! (and `wmma_smallc_bf16_128x{BN}`), on plain NHWC input, KRSC filter, NHWK output.
//!
//! `wmma_nhwc` reduces over one tap's channels per k-tile, 16 bytes (8 channels) at a time: a
//! layer with C = 1 or 3 runs padded to 8 channels and its k-tiles are mostly zeros (a 64-channel
//! k-tile per tap holds one real channel at C = 1). Here the reduction index runs over the taps
//! and channels together, kr = (r*S + s)*C + c, the order of a KRSC filter row, so a k-tile of 32
//! is 32 real products whatever C is: the speech front end 5x20 with C = 1 needs 4 k-tiles, not
//! 100. The price is the gather: A's elements are not contiguous in x, so each thread loads its
//! row's 32 values one by one (the layers this kernel is for move few bytes; the plan charges the
//! gather in its cost model, so larger C stays with `wmma_nhwc`). Any C works, K a multiple of 8.
//!
//! # Pipeline
//!
//! Register-staged double buffering: while the warps multiply k-tile kt from shared buffer kt % 2,
//! each thread's loads of k-tile kt+1 are in flight into registers, which it then stores into the
//! other buffer; one barrier a k-tile. Geometry and shared layout: `convrs_spec::small_c`.

use convrs_spec::small_c::{smem_bytes, BLOCK_M, K_TILE, ROW_BYTES, THREADS};

use super::implicit_gemm::{divmod, store_pair, Operands};
use super::nhwc::Nhwc;
use crate::prelude::epilogue::{residual_pair, Activation, Epilogue};
use crate::prelude::matrix::{ldmatrix_x4, mma_m16n8k16};
use crate::prelude::*;

const ROW: u32 = ROW_BYTES as u32;
const KT: i32 = K_TILE as i32;
/// Most n8 column tiles a warp holds (BN = 64).
pub(super) const MAX_N8: usize = 8;

/// Where this thread's A row starts: the output pixel's window origin (maybe in the padding).
#[derive(Clone, Copy)]
struct RowOrigin {
    /// Whether the row is inside the GEMM (m < N*P*Q).
    ok: bool,
    ih0: i32,
    iw0: i32,
    /// Offset of `x[n][ih0][iw0][0]`, wrapping (only summed with in-image taps).
    base: i32,
}

/// This thread's 32 values of A row `o` for reduction indices kr0..kr0+32, packed two per `u32`
/// (the lower index in the low half); zeros outside the image, past R*S*C and past M.
///
/// # Safety
/// `x` holds the N*H*W*C input of `sh`; C, S >= 1.
#[inline(always)]
#[allow(unused_assignments)] // the last unrolled step advances counters nobody reads
unsafe fn gather_a(x: *const u16, sh: &ConvShape, o: RowOrigin, kr0: i32, rsc: i32) -> [u32; 16] {
    // SAFETY: C and S >= 1.
    let (tap, c0) = unsafe { divmod(kr0 as u32, sh.c as u32) };
    // SAFETY: as above.
    let (r, s0) = unsafe { divmod(tap, sh.s as u32) };
    let (mut c, mut s) = (c0 as i32, s0 as i32);
    let (mut ih, mut iw) = (o.ih0 + r as i32 * sh.dil_h, o.iw0 + s * sh.dil_w);
    // Offset of the tap's pixel from the window origin's.
    let mut toff = ((ih - o.ih0) * sh.w + (iw - o.iw0)) * sh.c;
    let (h, w) = (sh.h as u32, sh.w as u32);
    let mut out = [0u32; 16];
    unroll!(32: 32, j => {
        let ok = o.ok && kr0 + (j as i32) < rsc && (ih as u32) < h && (iw as u32) < w;
        if ok {
            let off = o.base.wrapping_add(toff).wrapping_add(c);
            // SAFETY: an in-image tap of a real row below R*S*C: off indexes x[n][ih][iw][c].
            out[j / 2] |= (unsafe { load_global_nc_u16(x.add(off as u32 as usize)) } as u32) << (16 * (j % 2));
        }
        c += 1;
        if c == sh.c {
            c = 0;
            s += 1;
            iw += sh.dil_w;
            toff += sh.dil_w * sh.c;
            if s == sh.s {
                s = 0;
                iw = o.iw0;
                ih += sh.dil_h;
                toff = (ih - o.ih0) * sh.w * sh.c;
            }
        }
    });
    out
}

/// This thread's `N` (8 or 16) values of B: filter row `k` (`k_ok`: below K), reduction indices
/// kr0..kr0+N, packed like [`gather_a`]'s.
///
/// # Safety
/// `w` holds the K*R*S*C filter of `sh` (KRSC); `row` is `k * rsc`.
#[inline(always)]
unsafe fn gather_b<const N: usize>(w: *const u16, k_ok: bool, row: i32, kr0: i32, rsc: i32) -> [u32; 8] {
    let mut out = [0u32; 8];
    unroll!(16: N, j => {
        if k_ok && kr0 + (j as i32) < rsc {
            // SAFETY: k < K and kr < R*S*C: inside the filter.
            out[j / 2] |= (unsafe { load_global_nc_u16(w.add((row + kr0 + j as i32) as u32 as usize)) } as u32) << (16 * (j % 2));
        }
    });
    out
}

/// The kernel; see the module docs. Block tile 128 x `BN`, bf16 data if `BF16`.
///
/// # Safety
/// `x`, `w`, `y` hold N*H*W*C, K*R*S*C and N*P*Q*K elements (y of `sh.y_bits` bits) in NHWC,
/// KRSC, NHWK; K is a multiple of 8; every index of `sh` fits in `i32`; launched with
/// [`THREADS`] threads, `ceil(M / 128) * ceil(K / BN)` blocks and `smem_bytes(BN)` bytes of
/// dynamic shared memory.
#[inline(always)]
pub unsafe fn conv<const BN: usize, const BF16: bool>(x: *const u16, w: *const u16, y: *mut f32, sh: ConvShape) {
    const {
        assert!(BN == 32 || BN == 64);
    }
    // B loads: THREADS / BN threads share a filter row, B_PART reduction indices each.
    const { assert!(THREADS % BN == 0 && (K_TILE * BN / THREADS) % 8 == 0) };
    let b_part = K_TILE * BN / THREADS;
    if block_dim_x() != THREADS as i32 || dynamic_smem_bytes() < smem_bytes(BN) as u32 {
        trap();
    }
    let smem = dynamic_smem_u32();
    // [A buffer 0][A buffer 1][B buffer 0][B buffer 1], rows of ROW bytes.
    let a_buf = |b: u32| smem + b * BLOCK_M as u32 * ROW;
    let b_buf = |b: u32| smem + 2 * BLOCK_M as u32 * ROW + b * BN as u32 * ROW;
    let tid = thread_x() as u32;
    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    let gemm_n = sh.k as u32;
    // SAFETY: K >= 1, so the divisor is >= 1.
    let (mt, nt) = unsafe { divmod(block_x() as u32, gemm_n.div_ceil(BN as u32)) };
    let (m0, n0) = (mt * BLOCK_M as u32, nt * BN as u32);
    let rsc = sh.r * sh.s * sh.c;
    let ktiles = (rsc + KT - 1) / KT;

    // A: this thread gathers GEMM row m0 + tid.
    let m = m0 + tid;
    let a = if m < gemm_m {
        // SAFETY: P*Q >= 1 and Q >= 1 (validated problems have non-empty outputs).
        let (n, p, q) = unsafe { Nhwc::pixel(&sh, m) };
        let (ih0, iw0) = (p as i32 * sh.stride_h - sh.pad_h, q as i32 * sh.stride_w - sh.pad_w);
        RowOrigin { ok: true, ih0, iw0, base: Nhwc::x_origin(&sh, n as i32, ih0, iw0) }
    } else {
        RowOrigin { ok: false, ih0: 0, iw0: 0, base: 0 }
    };
    // B: THREADS / BN threads share filter row n0 + brow, b_part reduction indices each.
    let (brow, bpart) = (tid % BN as u32, tid / BN as u32);
    let b = FilterPart { ok: n0 + brow < gemm_n, row: (n0 + brow) as i32 * rsc, kr: bpart as i32 * b_part as i32 };
    let a_dst = |buf: u32| a_buf(buf) + tid * ROW;
    let b_dst = |buf: u32| b_buf(buf) + brow * ROW + 2 * b.kr as u32;

    let (warp, lane) = (tid / 32, tid % 32);
    let mut acc = [[[0f32; 4]; MAX_N8]; 2];
    // SAFETY (loads and stores below): the caller's buffers and shape; row tid of A and this
    // thread's part of row brow of B in the buffer stored, which nobody reads before the next
    // barrier (one a k-tile).
    unsafe { store::<BN>(a_dst(0), b_dst(0), load::<BN>(x, w, &sh, a, b, 0, rsc)) };
    sync_threads();
    let mut kt = 0;
    while kt < ktiles {
        let buf = (kt & 1) as u32;
        let more = kt + 1 < ktiles;
        // SAFETY: as above.
        let next = if more { unsafe { load::<BN>(x, w, &sh, a, b, (kt + 1) * KT, rsc) } } else { ([0; 16], [0; 8]) };
        // SAFETY: the warp is converged (uniform loop); buffer `buf` was stored and a barrier
        // passed since; nobody stores into it before the barrier that ends this k-tile.
        unsafe { multiply::<BN, BF16>(&mut acc, a_buf(buf), b_buf(buf), warp, lane) };
        if more {
            // SAFETY: as above; buffer buf ^ 1 was last read before the previous barrier.
            unsafe { store::<BN>(a_dst(buf ^ 1), b_dst(buf ^ 1), next) };
        }
        sync_threads();
        kt += 1;
    }

    // Epilogue: acc[i][j] is D rows 32*warp + 16i + lane/4 (+8), columns 8j + 2*(lane%4) (+1).
    let half = sh.y_bits == 16;
    let ep = &sh.ep;
    let act = Activation::of(ep);
    unroll!(4: 2, i => {
        let row = m0 + warp * 32 + 16 * i as u32 + lane / 4;
        unroll!(8: BN / 8, j => {
            let col = n0 + 8 * j as u32 + 2 * (lane % 4);
            if col < gemm_n {
                if !ep.is_identity() {
                    // SAFETY: the rows tested inside the output, col + 1 < K; the epilogue's
                    // operands as the host planned them.
                    acc[i][j] = unsafe { finish_quad::<BF16>(&sh, &act, half, acc[i][j], row, col, [row < gemm_m, row + 8 < gemm_m]) };
                }
                if row < gemm_m {
                    // SAFETY: row < M, col + 1 < K (K and col's 8-column group multiples of 8);
                    // each (row, col) belongs to one thread of one block.
                    unsafe { store_pair::<Nhwc, BF16>(&sh, y, half, row, col, acc[i][j][0], acc[i][j][1]) };
                }
                if row + 8 < gemm_m {
                    // SAFETY: as above, for row + 8.
                    unsafe { store_pair::<Nhwc, BF16>(&sh, y, half, row + 8, col, acc[i][j][2], acc[i][j][3]) };
                }
            }
        });
    });
}

/// The fused epilogue (`ConvShape::ep`, not the identity) of one accumulator fragment: `v` is
/// output (`row`, `col`), (`row`, `col + 1`), (`row + 8`, `col`), (`row + 8`, `col + 1`); the
/// residual is read only for the rows `inside` the output. The activation's form is branched
/// once for the four (see `Activation::apply_all`).
///
/// # Safety
/// `col + 1 < K`; the rows `inside` are below M; the epilogue's addresses hold K channels and
/// an output-shaped residual.
#[inline(always)]
unsafe fn finish_quad<const BF16: bool>(sh: &ConvShape, act: &Activation, half: bool, v: [f32; 4], row: u32, col: u32, inside: [bool; 2]) -> [f32; 4] {
    let ep = &sh.ep;
    // SAFETY: channels col and col + 1 < K.
    let (e0, e1) = unsafe { (Epilogue::of(ep, col), Epilogue::of(ep, col + 1)) };
    let residual = |r: u32, ok: bool| {
        // SAFETY: row r is inside the output when ok, so its pair is inside the residual.
        if ep.residual != 0 && ok { unsafe { residual_pair(ep.residual, Nhwc::y_off(sh, r, col) as usize, half, BF16) } } else { [0.0; 2] }
    };
    let (r0, r1) = (residual(row, inside[0]), residual(row + 8, inside[1]));
    let mut out = [e0.affine(ep, v[0], r0[0]), e1.affine(ep, v[1], r0[1]), e0.affine(ep, v[2], r1[0]), e1.affine(ep, v[3], r1[1])];
    act.apply_all(&mut out);
    out
}

/// This thread's share of B: filter row `row / rsc` (`ok`: below K), from reduction index `kr`
/// of each k-tile on.
#[derive(Clone, Copy)]
struct FilterPart {
    ok: bool,
    /// `k * R*S*C`, the row's offset in `w`.
    row: i32,
    kr: i32,
}

/// This thread's A and B values of the k-tile starting at reduction index `kr0`.
///
/// # Safety
/// As [`conv`] requires of `x`, `w` and `sh`.
#[inline(always)]
unsafe fn load<const BN: usize>(x: *const u16, w: *const u16, sh: &ConvShape, a: RowOrigin, b: FilterPart, kr0: i32, rsc: i32) -> ([u32; 16], [u32; 8]) {
    // SAFETY: as the caller guarantees; C, S >= 1 in validated problems.
    unsafe {
        let av = gather_a(x, sh, a, kr0, rsc);
        let bv = if BN == 64 { gather_b::<16>(w, b.ok, b.row, kr0 + b.kr, rsc) } else { gather_b::<8>(w, b.ok, b.row, kr0 + b.kr, rsc) };
        (av, bv)
    }
}

/// Stores [`load`]'s values: A's 64 bytes at `a_dst`, B's 16 (BN = 32) or 32 bytes at `b_dst`.
///
/// # Safety
/// Both 16-byte aligned addresses of this thread's row (part) of a shared buffer that nobody
/// else accesses until the next barrier.
#[inline(always)]
unsafe fn store<const BN: usize>(a_dst: u32, b_dst: u32, (a, b): ([u32; 16], [u32; 8])) {
    unroll!(4: 4, i => {
        // SAFETY: as the caller guarantees, 16-byte piece i.
        unsafe { st_shared_v4(a_dst + 16 * i as u32, [a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]]) };
    });
    // SAFETY: as above.
    unsafe { st_shared_v4(b_dst, [b[0], b[1], b[2], b[3]]) };
    if BN == 64 {
        // SAFETY: as above (16 values of B at BN = 64).
        unsafe { st_shared_v4(b_dst + 16, [b[4], b[5], b[6], b[7]]) };
    }
}

/// One k-tile: warp `warp`'s 32 rows times all BN columns, two k16 steps.
///
/// # Safety
/// All 32 lanes together (converged); `a` and `b` are a stored, barrier-published k-tile of A
/// (128 rows) and B (BN rows) in rows of [`ROW`] bytes.
#[inline(always)]
unsafe fn multiply<const BN: usize, const BF16: bool>(acc: &mut [[[f32; 4]; MAX_N8]; 2], a: u32, b: u32, warp: u32, lane: u32) {
    unroll!(4: 2, ks => {
        let k_byte = 32 * ks as u32;
        let mut frag = [[0u32; 4]; 2];
        unroll!(4: 2, i => {
            // Lanes 0-15 address rows 0-15 at k 0, lanes 16-31 the same rows at k 8: the x4 load
            // returns exactly the m16n8k16 A fragment (prelude::matrix).
            let row = warp * 32 + 16 * i as u32 + lane % 16;
            // SAFETY: as the caller guarantees; 16-byte aligned rows of 80 bytes.
            frag[i] = unsafe { ldmatrix_x4(a + row * ROW + k_byte + 16 * (lane / 16)) };
        });
        // SAFETY: as the caller guarantees; B's rows of ROW bytes, 16-byte aligned.
        unsafe { mma_columns::<BN, BF16>(acc, &frag, b, ROW, k_byte, lane) };
    });
}

/// One k-step of 16 for the warp's two m16 tiles (A fragments `frag`) times all BN columns:
/// B's 16 x 16 tiles by `ldmatrix` from rows of `pitch` bytes at `b` (output channel n's row at
/// `b + n * pitch`, the k-step at byte `k_byte` of it), two m16n8k16 per tile and m16 tile.
/// Shared with `patch`, which gathers its A fragments differently.
///
/// # Safety
/// All 32 lanes together (converged); the BN rows at `b` are 16-byte aligned (pitch and
/// `k_byte` multiples of 16), stored and published.
#[inline(always)]
pub(super) unsafe fn mma_columns<const BN: usize, const BF16: bool>(acc: &mut [[[f32; 4]; MAX_N8]; 2], frag: &[[u32; 4]; 2], b: u32, pitch: u32, k_byte: u32, lane: u32) {
    unroll!(4: BN / 16, jj => {
        // Matrices 0, 1: columns 16jj..+8 at k 0 and 8; matrices 2, 3: the next 8 columns.
        let row = 16 * jj as u32 + lane % 8 + 8 * (lane / 16);
        // SAFETY: as the caller guarantees.
        let f = unsafe { ldmatrix_x4(b + row * pitch + k_byte + 16 * ((lane / 8) % 2)) };
        unroll!(4: 2, i => {
            // SAFETY: converged, as the caller guarantees.
            unsafe {
                mma_m16n8k16::<BF16>(&mut acc[i][2 * jj], frag[i], [f[0], f[1]]);
                mma_m16n8k16::<BF16>(&mut acc[i][2 * jj + 1], frag[i], [f[2], f[3]]);
            }
        });
    });
}

macro_rules! entries {
    ($(($fp16:ident, $bf16:ident, $bn:literal))*) => {
        $(
            $crate::conv_kernel!(fn $fp16(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::small_c::conv::<$bn, false>);
            $crate::conv_kernel!(fn $bf16(x: *const u16, w: *const u16, y: *mut f32) => $crate::tensor_core::small_c::conv::<$bn, true>);
        )*
    };
}
convrs_spec::small_c_tiles!(entries);
