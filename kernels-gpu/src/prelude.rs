//! Device primitives: indices, barriers, shared memory, vector loads, and the problem shape.
//! Every `unsafe` here is justified in one line; kernels build on these and stay readable.

use core::arch::{asm, global_asm, nvptx};

pub mod elem;
pub mod epilogue;
pub mod matrix;
/// Hopper warpgroup MMA; only the sm_90a build (`cargo xtask build-ptx --arch sm_90a`) has it.
#[cfg(target_feature = "sm_90a")]
pub mod wgmma;
/// mbarriers, TMA and setmaxnreg for the warp-specialized Hopper kernel (sm_90a build only).
#[cfg(target_feature = "sm_90a")]
pub mod mbarrier;
/// The warp-specialized Hopper kernel's producer/consumer ring (sm_90a build only).
#[cfg(target_feature = "sm_90a")]
pub mod pipeline;

/// Aborts the kernel; the host sees a launch error instead of wrong numbers.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions; it ends the grid with an error.
    unsafe { nvptx::trap() }
}

#[inline(always)]
pub fn thread_x() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_x() as i32 }
}
#[inline(always)]
pub fn thread_y() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_y() as i32 }
}
#[inline(always)]
pub fn thread_z() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_z() as i32 }
}
#[inline(always)]
pub fn block_x() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_x() as i32 }
}
#[inline(always)]
pub fn block_y() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_y() as i32 }
}
#[inline(always)]
pub fn block_z() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_z() as i32 }
}
#[inline(always)]
pub fn block_dim_x() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_dim_x() as i32 }
}
#[inline(always)]
pub fn block_dim_y() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_dim_y() as i32 }
}
#[inline(always)]
pub fn block_dim_z() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_dim_z() as i32 }
}
#[inline(always)]
pub fn grid_dim_x() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_grid_dim_x() as i32 }
}
#[inline(always)]
pub fn grid_dim_z() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_grid_dim_z() as i32 }
}

/// `a * b + c` with one rounding: one FFMA. Rust never fuses a multiply and an add by itself.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::f32::math::mul_add(a, b, c)
}

/// Block-wide barrier; every thread of the block must reach it.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: callers reach it in uniform control flow (each kernel documents its barriers).
    unsafe { nvptx::_syncthreads() }
}

// The block's dynamic shared memory: one module-scope array whose size the host gives at launch.
global_asm!(".extern .shared .align 16 .b8 convrs_dynamic_smem[];");

/// Generic pointer to the start of the block's dynamic shared memory, typed as `f32`.
#[inline(always)]
pub fn dynamic_smem_f32() -> *mut f32 {
    let p: u64;
    // SAFETY: `cvta.shared` only converts the address of our own shared array to a generic one.
    unsafe { asm!("cvta.shared.u64 {p}, convrs_dynamic_smem;", p = out(reg64) p, options(pure, nomem, nostack)) };
    p as *mut f32
}

/// Four `f32`s loaded or stored as one 16-byte access.
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
pub struct F32x4(pub [f32; 4]);

impl F32x4 {
    /// Writes the four values to `dst[at..at + 4]`: how a 16-byte load lands in a register array.
    #[inline(always)]
    pub fn write_to(self, dst: &mut [f32], at: usize) {
        dst[at] = self.0[0];
        dst[at + 1] = self.0[1];
        dst[at + 2] = self.0[2];
        dst[at + 3] = self.0[3];
    }
}

/// Loads 16 bytes through the read-only (non-coherent) cache path.
///
/// # Safety
/// `p` must be 16-byte aligned, point into global memory the kernel only reads, and be valid for 4 `f32`s.
#[inline(always)]
pub unsafe fn load_global_nc_f32x4(p: *const f32) -> F32x4 {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees alignment, validity and that no one writes this memory during the launch.
    unsafe {
        asm!("ld.global.nc.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            p = in(reg64) p, options(pure, readonly, nostack))
    };
    F32x4([a, b, c, d])
}

/// Loads 8 bytes (2 `f32`s) through the read-only cache path.
///
/// # Safety
/// `p` must be 8-byte aligned, point into global memory the kernel only reads, and be valid for 2 `f32`s.
#[inline(always)]
pub unsafe fn load_global_nc_f32x2(p: *const f32) -> [f32; 2] {
    let (a, b): (f32, f32);
    // SAFETY: the caller guarantees alignment, validity and that no one writes this memory during the launch.
    unsafe { asm!("ld.global.nc.v2.f32 {{{a}, {b}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, p = in(reg64) p, options(pure, readonly, nostack)) };
    [a, b]
}

/// Loads 32 bytes (8 `f32`s) through the read-only cache path, as two [`load_global_nc_f32x4`].
///
/// # Safety
/// As [`load_global_nc_f32x4`], valid for 8 `f32`s.
#[inline(always)]
pub unsafe fn load_global_nc_f32x8(p: *const f32) -> [f32; 8] {
    // SAFETY: as the caller guarantees, both halves.
    let (lo, hi) = unsafe { (load_global_nc_f32x4(p), load_global_nc_f32x4(p.add(4))) };
    [lo.0[0], lo.0[1], lo.0[2], lo.0[3], hi.0[0], hi.0[1], hi.0[2], hi.0[3]]
}

/// Loads one `f32` through the read-only cache path.
///
/// # Safety
/// `p` must point into global memory the kernel only reads, valid for one `f32`.
#[inline(always)]
pub unsafe fn load_global_nc_f32(p: *const f32) -> f32 {
    let v: f32;
    // SAFETY: the caller guarantees validity and that no one writes this memory during the launch.
    unsafe { asm!("ld.global.nc.f32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) p, options(pure, readonly, nostack)) };
    v
}

/// Loads one 16-bit value through the read-only cache path.
///
/// # Safety
/// `p` must point into global memory the kernel only reads, valid for one `u16`.
#[inline(always)]
pub unsafe fn load_global_nc_u16(p: *const u16) -> u16 {
    let v: u16;
    // SAFETY: the caller guarantees validity and that no one writes this memory during the launch.
    unsafe { asm!("ld.global.nc.u16 {v}, [{p}];", v = out(reg16) v, p = in(reg64) p, options(pure, readonly, nostack)) };
    v
}

/// Stores 16 bytes to shared memory: `st.shared.v4.b32`.
///
/// # Safety
/// `addr` is a 16-byte aligned shared-window address of 16 bytes of this block's shared memory
/// that no other thread accesses until the next barrier.
#[inline(always)]
pub unsafe fn st_shared_v4(addr: u32, v: [u32; 4]) {
    // SAFETY: the caller guarantees the address and exclusive access.
    unsafe {
        asm!("st.shared.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg32) addr, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2],
            d = in(reg32) v[3], options(nostack))
    };
}

/// The conv2d problem as kernels see it, built from the entry points' trailing `i32`s (the
/// shared definition, so the host pushes the same fields in the same order).
pub use convrs_spec::ConvShape;

/// Repeats `$body` with `$i` bound to 0, 1, ... `$n - 1` as separate straight-line copies, so
/// every register-array index is a compile-time constant. `$n` must fold to a constant no larger
/// than the list's length (the kernels assert their const parameters).
macro_rules! unroll {
    (4: $n:expr, $i:ident => $body:block) => {
        unroll!(@each $n, $i, $body, 0 1 2 3)
    };
    (8: $n:expr, $i:ident => $body:block) => {
        unroll!(@each $n, $i, $body, 0 1 2 3 4 5 6 7)
    };
    (16: $n:expr, $i:ident => $body:block) => {
        unroll!(@each $n, $i, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (32: $n:expr, $i:ident => $body:block) => {
        unroll!(@each $n, $i, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@each $n:expr, $i:ident, $body:block, $($k:literal)*) => {{
        $( if $k < $n { let $i: usize = $k; $body } )*
    }};
}
pub(crate) use unroll;

/// Programmatic dependent launch (sm_90 on): waits until the grids this one depends on (the
/// previous kernel in the stream, where the host launched this one with programmatic stream
/// serialization) have completed and their writes are visible. Both entry macros call it
/// before any memory access, so a launch overlaps only the previous kernel's end, by its own
/// scheduling; entries declared `set_up_first` (the warp-specialized Hopper kernels) call it
/// themselves, after a set-up that touches shared memory and tensor-map prefetches only, so
/// that set-up runs under that end too. Without the dependency (sm_80 builds, or a plain
/// launch) it costs nothing.
///
/// Only the producers of `tensor_core::hopper::kernel` call `griddepcontrol.launch_dependents`
/// ([`launch_dependents`], after their last copy); elsewhere the next grid is let in as each
/// block exits. Let in at entry, its blocks took the room of a single wave's and waited there,
/// and issue-bound layers ran 14-17% slower (32,768,7,7 7x7 depthwise, H200; notes/launch.md).
#[inline(always)]
pub fn entry_wait() {
    #[cfg(target_feature = "sm_90")]
    // SAFETY: the instruction only orders this grid after its prerequisite in the stream; the
    // asm may touch memory (no `nomem`), so no load or store moves above it.
    unsafe {
        asm!("griddepcontrol.wait;", options(nostack))
    };
}

/// Programmatic dependent launch (sm_90 on): lets the next grid in the stream be scheduled once
/// every block of this one has called it or exited (the first call of a block counts; later
/// ones do nothing). The next grid still waits in its [`entry_wait`] for this one to complete,
/// so the call only moves its blocks' set-up earlier. Called by the producers of
/// `tensor_core::hopper::kernel` once their last copy is issued: a block's remaining work is
/// then its consumers' last tiles, and the next grid's blocks may take SMs this grid leaves
/// idle (a small layer's grid has fewer blocks than SMs), or room beside its blocks where
/// shared memory allows, and run their set-up there. Not at entry: there the next grid's
/// blocks took room a single wave needed (notes/launch.md). Without the dependency (sm_80
/// builds, or a plain launch) it does nothing.
#[inline(always)]
pub fn launch_dependents() {
    #[cfg(target_feature = "sm_90")]
    // SAFETY: the instruction only signals the scheduler; it reads and writes no memory.
    unsafe {
        asm!("griddepcontrol.launch_dependents;", options(nostack))
    };
}

/// `(a / b, a % b)` for `a >= 0` and `b >= 1`, in unsigned arithmetic and without the
/// divide-by-zero panic branch.
///
/// # Safety
/// `b >= 1` (divisors are block dimensions, tile or thread counts, or positive problem extents).
#[inline(always)]
pub unsafe fn divmod(a: i32, b: i32) -> (i32, i32) {
    // SAFETY: the caller guarantees b >= 1.
    let d = unsafe { core::num::NonZeroU32::new_unchecked(b as u32) };
    ((a as u32 / d) as i32, (a as u32 % d) as i32)
}

/// Declares a kernel entry point whose trailing arguments are the [`ConvShape`] fields, one
/// `i32` each in the order of `convrs_spec::shape_fields!`, then the fused epilogue's
/// (`convrs_spec::epilogue_fields!`, into `ConvShape::ep`), which the host follows too.
///
/// The entry waits for its stream predecessor ([`entry_wait`]) first; written `set_up_first fn
/// ...`, it leaves the wait to the body, which must call it before its first global memory
/// access.
#[macro_export]
macro_rules! conv_kernel {
    ($(#[$m:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        ::convrs_spec::shape_fields!($crate::conv_kernel, [@shape [$(#[$m])*] [entry_wait] $name [$($arg: $ty),*] $body]);
    };
    ($(#[$m:meta])* set_up_first fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        ::convrs_spec::shape_fields!($crate::conv_kernel, [@shape [$(#[$m])*] [] $name [$($arg: $ty),*] $body]);
    };
    ([@shape [$(#[$m:meta])*] [$($wait:ident)?] $name:ident [$($arg:ident: $ty:ty),*] $body:path] $($field:ident $doc:literal),*) => {
        ::convrs_spec::epilogue_fields!($crate::conv_kernel, [@entry [$(#[$m])*] [$($wait)?] $name [$($arg: $ty),*] $body [$($field)*]]);
    };
    ([@entry [$(#[$m:meta])*] [$($wait:ident)?] $name:ident [$($arg:ident: $ty:ty),*] $body:path [$($field:ident)*]] $($ef:ident: $et:ident $edoc:literal),*) => {
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($arg: $ty,)* $($field: i32,)* $($ef: $et,)*) {
            $($crate::prelude::$wait();)?
            let shape = $crate::prelude::ConvShape { $($field,)* ep: ::convrs_spec::EpilogueArgs { $($ef),* } };
            // SAFETY: the host launches each kernel with buffers sized for `shape` (host::launch).
            unsafe { $body($($arg,)* shape) }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Shared memory through 32-bit shared-window addresses, and `cp.async` (sm_80+).
//
// Hot loops address shared memory with `u32` byte offsets in the `.shared` window: one 32-bit
// add per access, and `ld.shared` instead of generic loads the hardware must classify.
// ---------------------------------------------------------------------------------------------

/// Address of the block's dynamic shared memory in the `.shared` window (byte 0 of the array).
#[inline(always)]
pub fn dynamic_smem_u32() -> u32 {
    let a: u32;
    // SAFETY: `mov` of a shared symbol's address reads no memory; it is the array's window offset.
    unsafe { asm!("mov.u32 {a}, convrs_dynamic_smem;", a = out(reg32) a, options(pure, nomem, nostack)) };
    a
}

/// Bytes of dynamic shared memory this launch gave the block (`%dynamic_smem_size`).
#[inline(always)]
pub fn dynamic_smem_bytes() -> u32 {
    let n: u32;
    // SAFETY: reading a special register has no preconditions.
    unsafe { asm!("mov.u32 {n}, %dynamic_smem_size;", n = out(reg32) n, options(pure, nomem, nostack)) };
    n
}

/// Loads one `f32` from shared memory.
///
/// # Safety
/// `addr` is a 4-byte aligned address inside this block's shared memory, written before (and
/// made visible by a barrier) if another thread wrote it.
#[inline(always)]
pub unsafe fn ld_shared_f32(addr: u32) -> f32 {
    let v: f32;
    // SAFETY: the caller guarantees the address is valid, aligned shared memory.
    unsafe { asm!("ld.shared.f32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) addr, options(pure, readonly, nostack)) };
    v
}

/// Loads two `f32`s from shared memory as one 8-byte access.
///
/// # Safety
/// As [`ld_shared_f32`], with `addr` 8-byte aligned and valid for 8 bytes.
#[inline(always)]
pub unsafe fn ld_shared_f32x2(addr: u32) -> [f32; 2] {
    let (a, b): (f32, f32);
    // SAFETY: the caller guarantees the address is valid, 8-byte aligned shared memory.
    unsafe {
        asm!("ld.shared.v2.f32 {{{a}, {b}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, p = in(reg32) addr,
            options(pure, readonly, nostack))
    };
    [a, b]
}

/// Loads four `f32`s from shared memory as one 16-byte access.
///
/// # Safety
/// As [`ld_shared_f32`], with `addr` 16-byte aligned and valid for 16 bytes.
#[inline(always)]
pub unsafe fn ld_shared_f32x4(addr: u32) -> F32x4 {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees the address is valid, 16-byte aligned shared memory.
    unsafe {
        asm!("ld.shared.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d, p = in(reg32) addr,
            options(pure, readonly, nostack))
    };
    F32x4([a, b, c, d])
}

/// Loads one 16-bit value from shared memory, zero-extended.
///
/// # Safety
/// As [`ld_shared_f32`], with `addr` 2-byte aligned and valid for 2 bytes.
#[inline(always)]
pub unsafe fn ld_shared_u16(addr: u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees the address is valid, aligned shared memory.
    unsafe { asm!("ld.shared.u16 {v}, [{a}];", v = out(reg32) v, a = in(reg32) addr, options(pure, readonly, nostack)) };
    v
}

/// Loads one 32-bit word from shared memory.
///
/// # Safety
/// As [`ld_shared_f32`].
#[inline(always)]
pub unsafe fn ld_shared_u32(addr: u32) -> u32 {
    // SAFETY: the caller's guarantee, passed on.
    unsafe { ld_shared_f32(addr) }.to_bits()
}

/// Loads two 32-bit words from shared memory as one 8-byte access.
///
/// # Safety
/// As [`ld_shared_f32`], with `addr` 8-byte aligned and valid for 8 bytes.
#[inline(always)]
pub unsafe fn ld_shared_u32x2(addr: u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    // SAFETY: the caller guarantees the address is valid, 8-byte aligned shared memory.
    unsafe { asm!("ld.shared.v2.b32 {{{a}, {b}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, p = in(reg32) addr, options(pure, readonly, nostack)) };
    [a, b]
}

/// Loads four 32-bit words from shared memory as one 16-byte access.
///
/// # Safety
/// As [`ld_shared_f32`], with `addr` 16-byte aligned and valid for 16 bytes.
#[inline(always)]
pub unsafe fn ld_shared_u32x4(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees the address is valid, 16-byte aligned shared memory.
    unsafe {
        asm!("ld.shared.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d, p = in(reg32) addr,
            options(pure, readonly, nostack))
    };
    [a, b, c, d]
}

/// Stores the low 16 bits of `v` to shared memory.
///
/// # Safety
/// `addr` is a 2-byte aligned address of this block's shared memory that no other thread
/// accesses until the next barrier.
#[inline(always)]
pub unsafe fn st_shared_u16(addr: u32, v: u32) {
    // SAFETY: the caller guarantees the address and exclusive access.
    unsafe { asm!("st.shared.u16 [{p}], {v};", p = in(reg32) addr, v = in(reg32) v, options(nostack)) };
}

/// Stores one 32-bit word to shared memory.
///
/// # Safety
/// As [`st_shared_u16`], 4-byte aligned and 4 bytes.
#[inline(always)]
pub unsafe fn st_shared_u32(addr: u32, v: u32) {
    // SAFETY: the caller guarantees the address and exclusive access.
    unsafe { asm!("st.shared.b32 [{p}], {v};", p = in(reg32) addr, v = in(reg32) v, options(nostack)) };
}

/// Stores two `f32`s to shared memory as one 8-byte access.
///
/// # Safety
/// As [`st_shared_u16`], 8-byte aligned and 8 bytes.
#[inline(always)]
pub unsafe fn st_shared_f32x2(addr: u32, a: f32, b: f32) {
    // SAFETY: the caller guarantees the address and exclusive access.
    unsafe { asm!("st.shared.v2.f32 [{p}], {{{a}, {b}}};", p = in(reg32) addr, a = in(reg32) a, b = in(reg32) b, options(nostack)) };
}

/// Starts an asynchronous 4-byte copy global -> shared that reads `src_bytes` (0 or 4) bytes of
/// `src` and zero-fills the rest: `src_bytes == 0` writes a zero (padding) and reads nothing.
///
/// # Safety
/// `dst` is 4-byte aligned shared memory of this block; `src` is valid global memory for
/// `src_bytes` bytes that nobody writes during the launch. The data is visible only after
/// [`cp_async_commit`], [`cp_async_wait_all`] and (for other threads) a barrier.
#[inline(always)]
pub unsafe fn cp_async_4(dst: u32, src: *const f32, src_bytes: u32) {
    // SAFETY: the caller guarantees both addresses; the instruction writes only `dst`'s 4 bytes.
    unsafe {
        asm!("cp.async.ca.shared.global [{d}], [{s}], 4, {n};", d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes,
            options(nostack))
    };
}

/// Starts an asynchronous 8-byte copy global -> shared that reads `src_bytes` (0 or 8) bytes of
/// `src` and zero-fills the rest.
///
/// # Safety
/// `dst` and `src` are 8-byte aligned; otherwise as [`cp_async_4`].
#[inline(always)]
pub unsafe fn cp_async_8(dst: u32, src: *const f32, src_bytes: u32) {
    // SAFETY: the caller guarantees both addresses; the instruction writes only `dst`'s 8 bytes.
    unsafe {
        asm!("cp.async.ca.shared.global [{d}], [{s}], 8, {n};", d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes,
            options(nostack))
    };
}

/// Starts an asynchronous 16-byte copy global -> shared (L2 only, `.cg`) that reads `src_bytes`
/// (0 to 16, a multiple of 4) bytes of `src` and zero-fills the rest.
///
/// # Safety
/// `dst` and `src` are 16-byte aligned; `dst` is shared memory of this block, `src` global
/// memory valid for `src_bytes` bytes that nobody writes during the launch. Visibility as for
/// [`cp_async_4`].
#[inline(always)]
pub unsafe fn cp_async_16(dst: u32, src: *const f32, src_bytes: u32) {
    // SAFETY: the caller guarantees alignment and validity; it writes only `dst`'s 16 bytes.
    unsafe {
        asm!("cp.async.cg.shared.global [{d}], [{s}], 16, {n};", d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes,
            options(nostack))
    };
}

/// Closes the group of `cp.async` copies this thread has started since the last commit.
#[inline(always)]
pub fn cp_async_commit() {
    // SAFETY: committing a (possibly empty) group has no preconditions.
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

/// Waits until every `cp.async` group this thread committed has landed in shared memory.
/// Other threads see the data only after a barrier that follows this wait.
#[inline(always)]
pub fn cp_async_wait_all() {
    // SAFETY: waiting has no preconditions; the memory clobber keeps shared loads after it.
    unsafe { asm!("cp.async.wait_group 0;", options(nostack)) };
}

/// Stores four `f32`s to global memory as one 16-byte access.
///
/// # Safety
/// `p` is 16-byte aligned global memory, valid for 4 `f32`s, that no other thread accesses
/// during the launch.
#[inline(always)]
pub unsafe fn store_global_f32x4(p: *mut f32, v: F32x4) {
    let [a, b, c, d] = v.0;
    // SAFETY: the caller guarantees alignment, validity and exclusive access.
    unsafe {
        asm!("st.global.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg64) p,
            a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, d = in(reg32) d, options(nostack))
    };
}

// ---------------------------------------------------------------------------------------------
// Multi-stage `cp.async` pipelines (the tiled and tensor-core families).
// ---------------------------------------------------------------------------------------------

/// Waits until at most `pending` of this thread's committed `cp.async` groups are still in
/// flight (`cp.async.wait_group N`; N must be an immediate, so this matches on the constants a
/// pipeline uses and waits for everything beyond 6, which is always correct, only slower).
/// Other threads see the data only after a barrier that follows this wait.
#[inline(always)]
pub fn cp_async_wait_group(pending: u32) {
    // SAFETY: waiting has no preconditions; no `nomem`, so shared loads stay after it.
    unsafe {
        match pending {
            1 => asm!("cp.async.wait_group 1;", options(nostack)),
            2 => asm!("cp.async.wait_group 2;", options(nostack)),
            3 => asm!("cp.async.wait_group 3;", options(nostack)),
            4 => asm!("cp.async.wait_group 4;", options(nostack)),
            5 => asm!("cp.async.wait_group 5;", options(nostack)),
            6 => asm!("cp.async.wait_group 6;", options(nostack)),
            _ => asm!("cp.async.wait_group 0;", options(nostack)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Meeting other CTAs through global memory (step 8's split-K): release/acquire at GPU scope.
// ---------------------------------------------------------------------------------------------

/// `fence.acq_rel.gpu`: this thread's memory accesses before it are ordered before those after
/// it, for every thread of the GPU that synchronizes with it.
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    // SAFETY: a fence has no preconditions; the memory clobber keeps accesses on their side.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
}

/// `bar.warp.sync`: every lane of the warp waits for the others, and their memory accesses
/// before it are ordered before the others' after it.
#[inline(always)]
pub fn sync_warp() {
    // SAFETY: the full mask; every caller runs it with the whole warp converged.
    unsafe { asm!("bar.warp.sync 0xffffffff;", options(nostack)) };
}

/// `atom.acq_rel.gpu.global.add.u32`: adds `v` to `*p` and returns the old value.
///
/// # Safety
/// `p` is 4-byte aligned global memory valid for a `u32` that every other access during the
/// launch also reaches atomically or after synchronizing with this one.
#[inline(always)]
pub unsafe fn atom_add_acq_rel_gpu(p: *mut u32, v: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the address; the atomic is its own synchronization.
    unsafe { asm!("atom.acq_rel.gpu.global.add.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) p, v = in(reg32) v, options(nostack)) };
    old
}

/// Stores a `u32` to global memory.
///
/// # Safety
/// `p` is 4-byte aligned global memory valid for a `u32` that no other thread accesses
/// without synchronizing with this one.
#[inline(always)]
pub unsafe fn store_global_u32(p: *mut u32, v: u32) {
    // SAFETY: the caller guarantees alignment, validity and exclusive access.
    unsafe { asm!("st.global.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack)) };
}

/// Loads 16 bytes from global memory at L2 (`ld.global.cg`: not from this SM's L1, which does
/// not see other SMs' writes).
///
/// # Safety
/// `p` is 16-byte aligned global memory valid for 4 `f32`s, written before by threads this
/// one synchronized with, and not written during the load.
#[inline(always)]
pub unsafe fn load_global_cg_f32x4(p: *const f32) -> F32x4 {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees alignment, validity and the ordering.
    unsafe {
        asm!("ld.global.cg.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d, p = in(reg64) p, options(nostack))
    };
    F32x4([a, b, c, d])
}
