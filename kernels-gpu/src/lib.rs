//! convrs device code: conv2d kernels compiled to PTX by rustc's `nvptx64-nvidia-cuda` target.
//!
//! Every kernel entry point takes the same trailing argument list, the problem's geometry as
//! `i32`s in the order of [`prelude::ConvShape::new`]; the host validates that every index of
//! the problem fits in `i32` before it launches, so the kernels can use 32-bit index arithmetic.
//!
//! The families read as a progression, naive to fast:
//! - [`direct`]: `direct_naive` (one output per thread), then `direct_smem` (shared-memory
//!   tiles, register blocking over output channels, 16-byte loads, prefetching).
#![no_std]
#![feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_float_math)]

pub mod direct;
pub mod prelude;
pub mod tensor_core;
pub mod tiled;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    prelude::trap()
}
