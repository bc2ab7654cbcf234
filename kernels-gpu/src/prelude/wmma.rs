//! Warp-level matrix multiply-accumulate through the PTX `wmma` instructions (sm_70+), shape
//! m16n16k16 with fp16 operands and fp32 accumulators, plus the `cp.async` group wait a
//! multistage pipeline needs.
//!
//! A fragment is opaque: each lane holds 8 registers whose mapping to matrix elements the
//! hardware defines. All 32 lanes of a warp must execute each instruction together (`.sync
//! .aligned`) with the same address and stride: callers keep them in warp-uniform control flow.
//! Addresses are 32-byte aligned and strides (`LDM`, in elements) multiples of 8 for fp16 and
//! of 4 for fp32 (PTX ISA, `wmma.load`).

use core::arch::asm;

/// A 16x16 fp16 operand (A or B) of one warp: 8 registers of two packed halves per lane.
#[derive(Clone, Copy, Default)]
pub struct FragF16(pub [u32; 8]);

/// A 16x16 fp32 accumulator of one warp: 8 floats per lane.
#[derive(Clone, Copy, Default)]
pub struct FragF32(pub [f32; 8]);

/// Loads the A operand (16 rows x 16 columns, row-major, `LDM` halves per row) from shared memory.
///
/// # Safety
/// `addr` is a 32-byte aligned `.shared` address of this block; the 16 rows at `LDM`-half
/// pitch are written and made visible (barrier) before; every lane of the warp calls it with the
/// same `addr`.
#[inline(always)]
pub unsafe fn load_a_shared<const LDM: u32>(addr: u32) -> FragF16 {
    let (r0, r1, r2, r3, r4, r5, r6, r7): (u32, u32, u32, u32, u32, u32, u32, u32);
    // SAFETY: the caller guarantees a valid, aligned, warp-uniform shared address.
    unsafe {
        asm!("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}}, [{p}], {ld};",
            out(reg32) r0, out(reg32) r1, out(reg32) r2, out(reg32) r3,
            out(reg32) r4, out(reg32) r5, out(reg32) r6, out(reg32) r7,
            p = in(reg32) addr, ld = const LDM, options(readonly, nostack))
    };
    FragF16([r0, r1, r2, r3, r4, r5, r6, r7])
}

/// Loads the B operand (16 rows x 16 columns, row-major, `LDM` halves per row) from shared memory.
///
/// # Safety
/// As [`load_a_shared`].
#[inline(always)]
pub unsafe fn load_b_shared<const LDM: u32>(addr: u32) -> FragF16 {
    let (r0, r1, r2, r3, r4, r5, r6, r7): (u32, u32, u32, u32, u32, u32, u32, u32);
    // SAFETY: the caller guarantees a valid, aligned, warp-uniform shared address.
    unsafe {
        asm!("wmma.load.b.sync.aligned.row.m16n16k16.shared.f16 {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}}, [{p}], {ld};",
            out(reg32) r0, out(reg32) r1, out(reg32) r2, out(reg32) r3,
            out(reg32) r4, out(reg32) r5, out(reg32) r6, out(reg32) r7,
            p = in(reg32) addr, ld = const LDM, options(readonly, nostack))
    };
    FragF16([r0, r1, r2, r3, r4, r5, r6, r7])
}

/// `acc += a * b` on the tensor cores (row-major A and B, fp32 accumulate).
#[inline(always)]
pub fn mma(acc: &mut FragF32, a: &FragF16, b: &FragF16) {
    let [a0, a1, a2, a3, a4, a5, a6, a7] = a.0;
    let [b0, b1, b2, b3, b4, b5, b6, b7] = b.0;
    let d = &mut acc.0;
    // SAFETY: register-only instruction; callers run it warp-uniformly (the whole warp executes
    // every mma of a kernel's fully unrolled fragment loops).
    unsafe {
        asm!("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 \
              {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}}, \
              {{{8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}}}, \
              {{{16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}}}, \
              {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}};",
            inout(reg32) d[0], inout(reg32) d[1], inout(reg32) d[2], inout(reg32) d[3],
            inout(reg32) d[4], inout(reg32) d[5], inout(reg32) d[6], inout(reg32) d[7],
            in(reg32) a0, in(reg32) a1, in(reg32) a2, in(reg32) a3,
            in(reg32) a4, in(reg32) a5, in(reg32) a6, in(reg32) a7,
            in(reg32) b0, in(reg32) b1, in(reg32) b2, in(reg32) b3,
            in(reg32) b4, in(reg32) b5, in(reg32) b6, in(reg32) b7,
            options(pure, nomem, nostack))
    };
}

/// Stores a 16x16 fp32 accumulator row-major, `LDM` floats per row, to global memory.
///
/// # Safety
/// `p` is 32-byte aligned global memory, valid for 16 rows at `LDM`-float pitch, that no other
/// warp writes during the launch; every lane of the warp calls it with the same `p`.
#[inline(always)]
pub unsafe fn store_global_f32<const LDM: u32>(p: *mut f32, acc: &FragF32) {
    let [d0, d1, d2, d3, d4, d5, d6, d7] = acc.0;
    // SAFETY: the caller guarantees a valid, aligned, exclusive, warp-uniform address.
    unsafe {
        asm!("wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [{p}], {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}}, {ld};",
            in(reg32) d0, in(reg32) d1, in(reg32) d2, in(reg32) d3,
            in(reg32) d4, in(reg32) d5, in(reg32) d6, in(reg32) d7,
            p = in(reg64) p, ld = const LDM, options(nostack))
    };
}

/// Waits until at most `N` of the `cp.async` groups this thread committed are still in flight
/// (the newest ones): with S pipeline stages, `N = S - 2` leaves the later stages' copies
/// running while the oldest one is consumed. Other threads see the data only after a barrier.
#[inline(always)]
pub fn cp_async_wait_group<const N: u32>() {
    // SAFETY: waiting has no preconditions; the implicit memory clobber keeps shared loads after it.
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack)) };
}
