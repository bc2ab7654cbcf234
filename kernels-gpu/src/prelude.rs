//! Device primitives: indices, barriers, shared memory, vector loads, and the problem shape.
//! Every `unsafe` here is justified in one line; kernels build on these and stay readable.

use core::arch::{asm, global_asm, nvptx};

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
pub fn grid_dim_x() -> i32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_grid_dim_x() as i32 }
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

/// The conv2d problem as kernels see it: NCHW-style extents, output size, and the
/// padding/stride/dilation per spatial axis. Built from the entry points' trailing `i32`s.
#[derive(Clone, Copy)]
pub struct ConvShape {
    pub n: i32,
    pub c: i32,
    pub h: i32,
    pub w: i32,
    pub k: i32,
    pub r: i32,
    pub s: i32,
    pub p: i32,
    pub q: i32,
    pub pad_h: i32,
    pub pad_w: i32,
    pub stride_h: i32,
    pub stride_w: i32,
    pub dil_h: i32,
    pub dil_w: i32,
}

impl ConvShape {
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn new(
        n: i32, c: i32, h: i32, w: i32, k: i32, r: i32, s: i32, p: i32, q: i32,
        pad_h: i32, pad_w: i32, stride_h: i32, stride_w: i32, dil_h: i32, dil_w: i32,
    ) -> Self {
        Self { n, c, h, w, k, r, s, p, q, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w }
    }
}

/// Declares a kernel entry point whose trailing arguments are the [`ConvShape`] fields, so
/// every kernel shares one argument convention with the host (`host::launch::ShapeArgs`).
#[macro_export]
macro_rules! conv_kernel {
    ($(#[$m:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(
            $($arg: $ty,)*
            n: i32, c: i32, h: i32, w: i32, k: i32, r: i32, s: i32, p: i32, q: i32,
            pad_h: i32, pad_w: i32, stride_h: i32, stride_w: i32, dil_h: i32, dil_w: i32,
        ) {
            let shape = $crate::prelude::ConvShape::new(n, c, h, w, k, r, s, p, q, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w);
            // SAFETY: the host launches each kernel with buffers sized for `shape` (host::launch).
            unsafe { $body($($arg,)* shape) }
        }
    };
}
