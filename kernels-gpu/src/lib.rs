//! convrs device code: conv2d kernels compiled to PTX by rustc's `nvptx64-nvidia-cuda` target.
//!
//! Every kernel entry point takes the same trailing argument list, the problem's geometry as
//! `i32`s in the order of `convrs_spec::shape_fields!` ([`prelude::ConvShape`], declared by
//! [`conv_kernel!`]); the host validates that every index of
//! the problem fits in `i32` before it launches, so the kernels can use 32-bit index arithmetic.
//!
//! The families read as a progression, naive to fast:
//! - [`direct`]: `direct_naive` (one output per thread), then `direct_smem` (shared-memory
//!   tiles, register blocking over output channels, 16-byte loads, prefetching). fp32, NCHW.
//! - [`tiled`]: block tiles staged through shared memory by a multi-stage `cp.async` mainloop,
//!   thread tiles of 2x2 virtual-thread quadrants in registers: `tiled_hwcn` (one output pixel
//!   per block, HWCN), then `tiled_nchw` (the same mainloop as an implicit GEMM on NCHW). fp32.
//! - [`depthwise`]: groups = C, one input channel per output channel: `depthwise_nchw_*` and its
//!   step 2 `depthwise_nchw_strip_*`, `depthwise_nhwc_*`, its step 2 `depthwise_strip_*` and step
//!   3 `depthwise_tile_*` (tiles staged in shared memory), memory-bound, fp32/fp16/bf16 through
//!   one element trait.
//! - [`tensor_core`]: fp16 in, fp32 accumulate on the tensor cores (`mma.sync`, `ldmatrix`,
//!   swizzled shared memory): `wmma_nhwcnc` on the blocked NHWC16n16c layouts, `wmma_nhwc` on
//!   plain NHWC, one implicit-GEMM mainloop for both. The sm_90a build alone (`cargo xtask
//!   build-ptx --arch sm_90a`) adds the `wgmma_*` entries (`tensor_core::hopper`) on Hopper's
//!   asynchronous warpgroup MMA.
#![no_std]
#![feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_float_math)]

// The sm_90a module holds the Hopper-only entries alone: the library loads it beside the sm_90
// one, which has every other kernel.
#[cfg(not(target_feature = "sm_90a"))]
pub mod depthwise;
#[cfg(not(target_feature = "sm_90a"))]
pub mod direct;
pub mod prelude;
pub mod tensor_core;
#[cfg(not(target_feature = "sm_90a"))]
pub mod tiled;
#[cfg(not(target_feature = "sm_90a"))]
pub mod transform;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    prelude::trap()
}
