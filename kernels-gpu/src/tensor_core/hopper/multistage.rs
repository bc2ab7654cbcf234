//! Family 3 on Hopper, step 3, the policy `Producer::Multistage` (`wgmma_multistage_128x{BN}k64`
//! and its bf16 twin): the implicit GEMM of `implicit_gemm` on plain NHWC / KRSC / NHWK data with
//! the sm_90a warpgroup instruction `wgmma.mma_async` instead of `mma.sync`, every thread both
//! copying and computing. Compiled only into the sm_90a PTX.
//!
//! # Shape
//!
//! The same GEMM, operands and contract as `wmma_nhwc` (C and K multiples of 8, the same
//! trailing [`ConvShape`] arguments). A block is 2 warpgroups (256 threads, 1-D grid of
//! `ceil(M/128) * ceil(K/BN)` blocks, N tile fastest); warpgroup g owns GEMM rows 64g..64g+64 of
//! the 128 x BN block tile and issues one m64nBNk16 wgmma per 16 channels, BN/2 fp32
//! accumulators a thread. Launch with `convrs_spec::hopper::Config::smem_bytes`.
//!
//! # Shared memory
//!
//! The producer is `wmma_nhwc`'s with BK = 64: every thread copies 16-byte chunks with
//! `cp.async` (zero-fill for padding, rows past M or K, channels past C) into a ring of STAGES
//! stages; a stage is the A tile (128 rows of 128 bytes, warpgroup g's 64 rows at 8192g) and then
//! the B tile (BN filter rows of 128 bytes), and chunk c of row r sits in slot c ^ (r & 7). With
//! each tile on a 1024-byte boundary that is exactly wgmma's canonical K-major 128-byte-swizzle
//! layout (the hardware XORs address bits 4-6 with bits 7-9), so both operands go to the tensor
//! cores straight from shared memory through descriptors (`desc_sw128`), the k16 steps 32
//! bytes apart. The dynamic shared memory's start is aligned up to 1024 in the kernel (the
//! launch gives 1 KiB extra; it traps if that does not suffice).
//!
//! # Pipeline
//!
//! wgmma is asynchronous: a k-tile's 4 wgmmas are one commit group, and `wait_group 1` after
//! committing k-tile kt retires k-tile kt-1's, so the tensor cores run k-tile kt while the
//! threads wait for k-tile kt+1's copies and pass the barrier. A stage may be refilled only
//! when both warpgroups' wgmmas that read it have retired; that is known after the next
//! barrier, so the copies run STAGES-2 k-tiles ahead (the ring holds the k-tile being read by
//! the tensor cores, the one before it that may still be read, and STAGES-2 in flight):
//!
//! ```text
//! prologue: copy k-tiles 0..STAGES-3 (one cp.async group each)
//! for kt:   cp.async.wait_group(STAGES-3)   this thread's copies of k-tile kt landed
//!           fence.proxy.async.shared::cta   ... and are visible to the async proxy (wgmma)
//!           bar.sync                        everyone's are; every warpgroup's kt-2 wgmmas retired
//!           wgmma.fence; 4 x wgmma (k16 steps of k-tile kt); commit
//!           copy k-tile kt+STAGES-2 into kt-2's stage; commit (maybe empty)
//!           wgmma.wait_group 1              k-tile kt-1's wgmmas retired
//! epilogue: wait_group 0; accumulators to y, predicated on M and K: fp32 pairs as 8-byte stores,
//!           or rounded to the input's 16-bit type as 4-byte stores (ConvShape::y_bits)
//! ```

use convrs_spec::hopper::{stage_bytes, BLOCK_M, K_TILE, ROW_BYTES, WARPGROUP};

use super::math::Math;
use crate::prelude::wgmma::{desc_sw128, fence_proxy_async_shared, Accumulators};
use crate::prelude::*;
use crate::tensor_core::implicit_gemm::{a_rows, b_rows, chan, divmod, store_pair, Operands, Tap};

/// Bytes per shared row: 64 fp16 channels, one 128-byte swizzle row.
const ROW: u32 = ROW_BYTES as u32;
/// Threads per block: two warpgroups.
const THREADS: usize = 2 * WARPGROUP;

/// The kernel: block tile 128 x `Acc::N` x 64, `STAGES` k-tiles in the ring, operands
/// addressed by `O` (a rows layout, not `TILED`), the 16-bit type of `M`. Launched with 256 threads,
/// a 1-D grid of `ceil(M / 128) * ceil(K / N)` blocks and `Config::smem_bytes` of dynamic shared
/// memory (`convrs_spec::hopper`).
///
/// # Safety
/// `x`, `w`, `y` hold N*H*W*C, K*R*S*C and N*P*Q*K elements in `O`'s layouts, 16-byte aligned,
/// C and K are multiples of 8, and `sh` describes them with every index in `i32`.
#[inline(always)]
pub unsafe fn conv<O: Operands, Acc: Accumulators, const STAGES: usize, M: Math>(x: *const u16, w: *const u16, y: *mut f32, sh: ConvShape) {
    const {
        assert!(!O::TILED);
        assert!(STAGES >= 3 && STAGES <= 8);
        assert!(Acc::N == 128 || Acc::N == 256);
        // 16-bit data: the copies move 8-element chunks.
        assert!(matches!(M::SPEC, convrs_spec::hopper::Math::Half));
    }
    let bm = BLOCK_M as u32;
    let bn = Acc::N as u32;
    let stage = stage_bytes(BLOCK_M, Acc::N, convrs_spec::hopper::Math::Half) as u32;
    // Rows each thread copies: 4 threads a row, 2 chunks each.
    let (a_loads, b_loads) = (BLOCK_M * 4 / THREADS, Acc::N * 4 / THREADS);
    let raw = dynamic_smem_u32();
    // 1024-byte aligned start of the ring: the swizzle pattern repeats every 1024 bytes and
    // the descriptors assume it starts on that boundary (base offset 0).
    let smem = (raw + 1023) & !1023;
    if block_dim_x() != THREADS as i32 || dynamic_smem_bytes() + raw < smem + STAGES as u32 * stage {
        trap();
    }
    let gemm_m = (sh.n * sh.p * sh.q) as u32;
    let gemm_n = sh.k as u32;
    // SAFETY: bn >= 128.
    let (mtile, ntile) = unsafe { divmod(block_x() as u32, gemm_n.div_ceil(bn)) };
    let (m0, n0) = (mtile * bm, ntile * bn);
    let tid = thread_x() as u32;

    // Producer: this thread copies chunks `chunk` and `chunk + 4` of rows `lrow + 64i`; all its
    // rows share one swizzle (64 is a multiple of 8), chunk + 4 lands at `ldst ^ 64`.
    let chunk = (tid % 4) as i32;
    let lrow = tid / 4;
    let row_step = THREADS as u32 / 4;
    let ldst = lrow * ROW + (((chunk as u32) ^ (lrow & 7)) << 4);
    a_rows!(O, &sh, [a_ih, a_iw, a_base; 8], a_loads, gemm_m, m0 + lrow, row_step, chunk * 8);
    b_rows!(O, &sh, [b_ok, b_base; 8], b_loads, gemm_n, n0 + lrow, row_step, chunk * 8);
    let (h, wd) = (sh.h as u32, sh.w as u32);
    // Copies one k-tile into the stage at shared address `$stage` (a macro so it is always
    // inlined and the arrays above stay in registers).
    macro_rules! load {
        ($stage:expr, $t:expr) => {{
            let stage: u32 = $stage;
            let t: &Tap = $t;
            let xc = t.c0 * O::x_chan(&sh);
            let wc = t.c0 * O::w_chan(&sh);
            unroll!(4: 2, u => {
                let cu = chunk * 8 + 32 * u as i32;
                let c_ok = t.c0 + cu < sh.c;
                let slot = 64 * u as u32;
                unroll!(8: a_loads, i => {
                    let ok = c_ok && ((a_ih[i] + t.rdh) as u32) < h && ((a_iw[i] + t.sdw) as u32) < wd;
                    let off = if ok { a_base[i].wrapping_add(t.x_off).wrapping_add(xc + 32 * u as i32 * O::x_chan(&sh)) } else { 0 };
                    let dst = stage + (ldst ^ slot) + i as u32 * row_step * ROW;
                    // SAFETY: dst is inside the stage's A tile (row < 128), 16-byte aligned; off is an
                    // in-bounds, 8-element aligned index of x when ok, and nothing is read otherwise.
                    unsafe { cp_async_16(dst, x.wrapping_add(off as u32 as usize) as *const f32, if ok { 16 } else { 0 }) };
                });
                unroll!(8: b_loads, j => {
                    let ok = c_ok && b_ok[j];
                    let off = if ok { b_base[j] + t.w_off + wc + 32 * u as i32 * O::w_chan(&sh) } else { 0 };
                    let dst = stage + bm * ROW + (ldst ^ slot) + j as u32 * row_step * ROW;
                    // SAFETY: as for A, inside the stage's B tile; off < K*R*S*C when ok.
                    unsafe { cp_async_16(dst, w.wrapping_add(off as u32 as usize) as *const f32, if ok { 16 } else { 0 }) };
                });
            });
        }};
    }

    // Consumer: warpgroup wg reads A rows 64wg.. of the stage and the whole B tile.
    let wg = tid / 128;
    let a_desc = desc_sw128(smem + wg * 64 * ROW);
    let b_desc = desc_sw128(smem + bm * ROW);

    let cchunks = (sh.c + K_TILE as i32 - 1) / K_TILE as i32;
    let ktiles = sh.r * sh.s * cchunks;
    let mut tap = Tap::START;
    unroll!(8: STAGES - 2, st => {
        if (st as i32) < ktiles {
            load!(smem + st as u32 * stage, &tap);
            tap.advance::<O>(&sh, K_TILE as i32);
        }
        cp_async_commit();
    });
    let mut acc = Acc::ZERO;
    // (16-bit data: no spare accumulators or running sum, `Math::finish` is the accumulators.)
    let (mut spare, mut total) = (Acc::ZERO, Acc::ZERO);
    let (mut rd, mut wr) = (0u32, STAGES as u32 - 2);
    let mut kt = 0;
    while kt < ktiles {
        cp_async_wait_group(STAGES as u32 - 3);
        fence_proxy_async_shared();
        // Uniform: every thread runs the same trip count. After it k-tile kt is in shared
        // memory for everyone, and both warpgroups' wgmmas of k-tile kt-2 have retired (each
        // waited for them in iteration kt-1), so its stage (wr) may be refilled.
        sync_threads();
        // SAFETY: uniform control flow (all 128 threads of each warpgroup run every k-tile); the
        // descriptors are the same in the whole warpgroup and describe stage rd, which the
        // barrier above made visible (after each writer's proxy fence) and which no copy
        // overwrites before the next two barriers.
        unsafe { M::k_tile(&mut acc, &mut spare, &mut total, a_desc, b_desc, 0, rd * stage, kt, ktiles) };
        // The copies go after the wgmmas so that the tensor cores start at once; their stage is
        // another one (k-tile kt-2's).
        if kt + (STAGES as i32 - 2) < ktiles {
            load!(smem + wr * stage, &tap);
            tap.advance::<O>(&sh, K_TILE as i32);
        }
        cp_async_commit();
        unsafe { acc.wait_1() };
        rd = if rd + 1 == STAGES as u32 { 0 } else { rd + 1 };
        wr = if wr + 1 == STAGES as u32 { 0 } else { wr + 1 };
        kt += 1;
    }
    // SAFETY: uniform, as above.
    unsafe { acc.wait_0() };
    cp_async_wait_all();

    // Epilogue: register 4j+e (e < 2) is D[16*warp + lane/4][8j + 2*(lane%4) + e], 4j+2+e the
    // same 8 rows further (notes/hopper.md §1.4), warp and lane within the warpgroup.
    let (warp, lane) = ((tid % 128) / 32, tid % 32);
    let row = m0 + wg * 64 + warp * 16 + lane / 4;
    let half = sh.y_bits == 16;
    unroll!(32: Acc::N / 8, j => {
        let col = n0 + 8 * j as u32 + 2 * (lane % 4);
        if col < gemm_n {
            if row < gemm_m {
                // SAFETY: row < M, col + 1 < K (K and col's 8-column group multiples of 8); each
                // (row, col) belongs to one thread of one block.
                unsafe { store::<O, M>(&sh, y, half, row, col, acc[4 * j], acc[4 * j + 1]) };
            }
            if row + 8 < gemm_m {
                // SAFETY: as above, for row + 8.
                unsafe { store::<O, M>(&sh, y, half, row + 8, col, acc[4 * j + 2], acc[4 * j + 3]) };
            }
        }
    });
}

/// `store_pair` in `M`'s 16-bit type.
///
/// # Safety
/// As `store_pair`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store<O: Operands, M: Math>(sh: &ConvShape, y: *mut f32, half: bool, row: u32, col: u32, a: f32, b: f32) {
    // SAFETY: as the caller guarantees.
    unsafe {
        if M::BF16 { store_pair::<O, true>(sh, y, half, row, col, a, b) } else { store_pair::<O, false>(sh, y, half, row, col, a, b) }
    }
}
