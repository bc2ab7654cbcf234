//! Warp-level matrix instructions (sm_80+) for the tensor-core kernels: `mma.sync` m16n8k16
//! (fp16 or bf16 x the same + fp32 -> fp32) and m16n8k8 (tf32), `ldmatrix.x4`, and global stores of fp32
//! accumulator pairs: 8 bytes as fp32, or 4 bytes rounded to the input's 16-bit type; TF32 rounding.
//!
//! Fragments are `u32` registers holding two fp16 values each (the low half is the lower
//! column), exactly as the PTX ISA lays out the `.f16x2` operands; accumulators are `f32`.
//! The 16-byte `cp.async` with zero-fill and its group waits live in the parent prelude
//! (`cp_async_16`, `cp_async_wait_group`).
//!
//! The `.sync.aligned` instructions need every lane of the warp to execute the same instruction
//! (converged control flow); callers state this at each use.

use core::arch::asm;

/// `d = a * b + d` on one 16x8x16 tile: `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`.
///
/// Lane `l` (group `g = l / 4`, thread-in-group `t = l % 4`) holds
/// - `a[0]` = A[g][2t..2t+2], `a[1]` = A[g+8][2t..], `a[2]` = A[g][2t+8..], `a[3]` = A[g+8][2t+8..]
/// - `b[0]` = B[2t..2t+2][g] (k-pair, column g), `b[1]` = B[2t+8..2t+10][g]
/// - `d[0..2]` = D[g][2t..2t+2], `d[2..4]` = D[g+8][2t..2t+2].
///
/// # Safety
/// Every lane of the warp executes this call together (converged control flow).
#[inline(always)]
pub unsafe fn mma_m16n8k16_f16_f32(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    // SAFETY: register-only instruction; the caller guarantees the warp is converged.
    unsafe {
        asm!(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            options(pure, nomem, nostack)
        )
    };
}

/// The same on bf16 operands: `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` (same
/// fragment layout, two bf16 values per register).
///
/// # Safety
/// Every lane of the warp executes this call together (converged control flow).
#[inline(always)]
pub unsafe fn mma_m16n8k16_bf16_f32(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    // SAFETY: register-only instruction; the caller guarantees the warp is converged.
    unsafe {
        asm!(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            options(pure, nomem, nostack)
        )
    };
}

/// `mma_m16n8k16_bf16_f32` if `BF16`, else `mma_m16n8k16_f16_f32` (a compile-time choice).
///
/// # Safety
/// Every lane of the warp executes this call together (converged control flow).
#[inline(always)]
pub unsafe fn mma_m16n8k16<const BF16: bool>(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    // SAFETY: as the caller guarantees.
    unsafe {
        if BF16 { mma_m16n8k16_bf16_f32(d, a, b) } else { mma_m16n8k16_f16_f32(d, a, b) }
    }
}

/// `d = a * b + d` on one 16x8x8 tile of TF32 operands:
/// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`, one fp32 (read as TF32) per register.
///
/// Lane `l` (`g = l / 4`, `t = l % 4`) holds `a` = (A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]),
/// `b` = (B[t][g], B[t+4][g]) and `d` as [`mma_m16n8k16_f16_f32`]'s. So `ldmatrix.x4` on rows of
/// fp32 (an 8x8 "b16" matrix being 8 rows of 4 fp32) gives the same fragments as on rows of fp16:
/// a k-step is 32 bytes of a row either way.
///
/// # Safety
/// Every lane of the warp executes this call together (converged control flow).
#[inline(always)]
pub unsafe fn mma_m16n8k8_tf32(d: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    // SAFETY: register-only instruction; the caller guarantees the warp is converged.
    unsafe {
        asm!(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            options(pure, nomem, nostack)
        )
    };
}

/// Loads four 8x8 fp16 matrices from shared memory: lanes 8i..8i+8 give the 16-byte row
/// addresses of matrix i, and lane `l` receives row `l / 4`, columns `2(l % 4)..+2` of matrix i
/// in register i.
///
/// # Safety
/// Every lane executes it together; each lane's `addr` is a 16-byte aligned address of 16 bytes
/// of this block's shared memory, written and made visible (barrier) before.
#[inline(always)]
pub unsafe fn ldmatrix_x4(addr: u32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees convergence and valid, aligned shared addresses.
    unsafe {
        asm!(
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{p}];",
            r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3, p = in(reg32) addr,
            options(pure, readonly, nostack)
        )
    };
    [r0, r1, r2, r3]
}

/// [`ldmatrix_x4`] transposed (`.trans`): lane `l` receives column `l / 4`, rows
/// `2(l % 4)..+2` of matrix i in register i, so from matrices whose rows are channels and
/// columns pixels a lane holds two channels of one pixel: the fragment [`stmatrix_x4`] stores
/// as rows of pixels.
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x4_trans(addr: u32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    // SAFETY: as `ldmatrix_x4`.
    unsafe {
        asm!(
            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{p}];",
            r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3, p = in(reg32) addr,
            options(pure, readonly, nostack)
        )
    };
    [r0, r1, r2, r3]
}

/// Stores four 8x8 16-bit matrices to shared memory (`stmatrix`, sm_90): lanes 8i..8i+8 give
/// the 16-byte row addresses of matrix i, and lane `l` gives row `l / 4`, columns
/// `2(l % 4)..+2` of matrix i in register i ([`ldmatrix_x4`]'s fragment).
///
/// # Safety
/// Every lane executes it together; each lane's `addr` is a 16-byte aligned address of 16 bytes
/// of this block's shared memory that no other thread accesses until a barrier orders them.
#[inline(always)]
pub unsafe fn stmatrix_x4(addr: u32, v: [u32; 4]) {
    // SAFETY: as the caller guarantees.
    unsafe {
        asm!(
            "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{p}], {{{r0}, {r1}, {r2}, {r3}}};",
            p = in(reg32) addr, r0 = in(reg32) v[0], r1 = in(reg32) v[1], r2 = in(reg32) v[2], r3 = in(reg32) v[3],
            options(nostack)
        )
    };
}

/// [`stmatrix_x4`] transposed (`.trans`): the 16 bytes at lane `8i + r`'s address get column
/// `r` of matrix i, so from an accumulator fragment whose rows are pixels and columns channels
/// each 16-byte row stored is one channel's 8 pixels.
///
/// # Safety
/// As [`stmatrix_x4`].
#[inline(always)]
pub unsafe fn stmatrix_x4_trans(addr: u32, v: [u32; 4]) {
    // SAFETY: as the caller guarantees.
    unsafe {
        asm!(
            "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [{p}], {{{r0}, {r1}, {r2}, {r3}}};",
            p = in(reg32) addr, r0 = in(reg32) v[0], r1 = in(reg32) v[1], r2 = in(reg32) v[2], r3 = in(reg32) v[3],
            options(nostack)
        )
    };
}

/// Stores one `f32` to global memory.
///
/// # Safety
/// `p` is 4-byte aligned global memory, valid for one `f32`, that no other thread accesses
/// during the launch.
#[inline(always)]
pub unsafe fn store_global_f32(p: *mut f32, a: f32) {
    // SAFETY: the caller guarantees alignment, validity and exclusive access.
    unsafe { asm!("st.global.f32 [{p}], {a};", p = in(reg64) p, a = in(reg32) a, options(nostack)) };
}

/// Stores one 16-bit value (fp16 or bf16 bits) to global memory.
///
/// # Safety
/// `p` is 2-byte aligned global memory, valid for one 16-bit value, that no other thread
/// accesses during the launch.
#[inline(always)]
pub unsafe fn store_global_u16(p: *mut u16, v: u16) {
    // SAFETY: the caller guarantees alignment, validity and exclusive access.
    unsafe { asm!("st.global.b16 [{p}], {v};", p = in(reg64) p, v = in(reg16) v, options(nostack)) };
}

/// Stores two `f32`s to global memory as one 8-byte access.
///
/// # Safety
/// `p` is 8-byte aligned global memory, valid for 2 `f32`s, that no other thread accesses during
/// the launch.
#[inline(always)]
pub unsafe fn store_global_f32x2(p: *mut f32, a: f32, b: f32) {
    // SAFETY: the caller guarantees alignment, validity and exclusive access.
    unsafe { asm!("st.global.v2.f32 [{p}], {{{a}, {b}}};", p = in(reg64) p, a = in(reg32) a, b = in(reg32) b, options(nostack)) };
}

/// Rounds two `f32`s to nearest even in fp16 (or bf16 if `BF16`) and stores them as one 4-byte
/// access, `a` at the lower address (`cvt.rn.{f16,bf16}x2.f32` puts its first source in the
/// upper half, so `b` goes first).
///
/// # Safety
/// `p` is 4-byte aligned global memory, valid for two 16-bit values, that no other thread
/// accesses during the launch.
#[inline(always)]
pub unsafe fn store_global_16x2<const BF16: bool>(p: *mut u16, a: f32, b: f32) {
    // SAFETY: the caller guarantees alignment, validity and exclusive access; cvt reads registers only.
    unsafe {
        if BF16 {
            asm!("{{ .reg .b32 h; cvt.rn.bf16x2.f32 h, {b}, {a}; st.global.b32 [{p}], h; }}", p = in(reg64) p, a = in(reg32) a, b = in(reg32) b, options(nostack))
        } else {
            asm!("{{ .reg .b32 h; cvt.rn.f16x2.f32 h, {b}, {a}; st.global.b32 [{p}], h; }}", p = in(reg64) p, a = in(reg32) a, b = in(reg32) b, options(nostack))
        }
    };
}

/// Rounds two `f32`s to nearest even in fp16 (or bf16 if `BF16`), packed in one `u32` with `a`
/// in the lower half (the first in memory).
#[inline(always)]
pub fn pack_16x2<const BF16: bool>(a: f32, b: f32) -> u32 {
    let h: u32;
    // SAFETY: register arithmetic only (cvt puts its first source in the upper half).
    unsafe {
        if BF16 {
            asm!("cvt.rn.bf16x2.f32 {h}, {b}, {a};", h = out(reg32) h, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack))
        } else {
            asm!("cvt.rn.f16x2.f32 {h}, {b}, {a};", h = out(reg32) h, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack))
        }
    };
    h
}

/// `shfl.sync.bfly`: the `v` of lane `lane ^ mask`, every lane of the warp taking part.
///
/// # Safety
/// Every lane of the warp executes it together (full member mask).
#[inline(always)]
pub unsafe fn shfl_xor(v: u32, mask: u32) -> u32 {
    let r: u32;
    // SAFETY: as the caller guarantees; register exchange only.
    unsafe { asm!("shfl.sync.bfly.b32 {r}, {v}, {m}, 0x1f, 0xffffffff;", r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask, options(nomem, nostack)) };
    r
}

/// Stores four 32-bit words to global memory as one 16-byte access.
///
/// # Safety
/// `p` is 16-byte aligned global memory, valid for 16 bytes, that no other thread accesses
/// during the launch.
#[inline(always)]
pub unsafe fn store_global_v4(p: *mut u32, v: [u32; 4]) {
    // SAFETY: the caller guarantees alignment, validity and exclusive access.
    unsafe {
        asm!("st.global.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg64) p, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2],
            d = in(reg32) v[3], options(nostack))
    };
}

/// [`store_global_v4`] if `ok`, as one predicated instruction: no branch, so it may sit between
/// warpgroup MMAs in flight without ptxas serializing them (a store under a divergent branch
/// there makes it insert warpgroup waits, C7518).
///
/// # Safety
/// If `ok`, as [`store_global_v4`]; otherwise nothing is accessed (`p` may be anything).
#[inline(always)]
pub unsafe fn store_global_v4_if(p: *mut u32, v: [u32; 4], ok: bool) {
    // SAFETY: the caller guarantees alignment, validity and exclusive access when ok; the
    // predicate scopes inside the braces.
    unsafe {
        asm!("{{", ".reg .pred q;", "setp.ne.u32 q, {ok}, 0;", "@q st.global.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};", "}}",
            ok = in(reg32) ok as u32, p = in(reg64) p, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
            options(nostack))
    };
}

/// `shfl.sync.idx`: the `v` of lane `src`, every lane of the warp taking part.
///
/// # Safety
/// Every lane of the warp executes it together (the full member mask).
#[inline(always)]
pub unsafe fn shfl_idx(v: u32, src: u32) -> u32 {
    let r: u32;
    // SAFETY: the caller guarantees the whole warp participates; registers only.
    unsafe { asm!("shfl.sync.idx.b32 {r}, {v}, {s}, 0x1f, 0xffffffff;", r = out(reg32) r, v = in(reg32) v, s = in(reg32) src, options(nomem, nostack)) };
    r
}

/// Rounds an `f32` to TF32 (to nearest, ties away: `cvt.rna.tf32.f32`), the low 13 bits zero.
#[inline(always)]
pub fn tf32_rna(v: u32) -> u32 {
    let r: u32;
    // SAFETY: register arithmetic only.
    unsafe { asm!("cvt.rna.tf32.f32 {r}, {v};", r = out(reg32) r, v = in(reg32) v, options(pure, nomem, nostack)) };
    r
}
