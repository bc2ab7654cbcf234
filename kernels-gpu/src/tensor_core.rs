//! Family 3, tensor-core convolution (fp16 in, fp32 accumulate): one implicit-GEMM mainloop
//! (`mma.sync` m16n8k16, `ldmatrix` from an XOR-swizzled multi-stage `cp.async` pipeline) over
//! two layout families.
//!
//! - [`implicit_gemm`]: the kernel, generic over [`implicit_gemm::Operands`] (where A, B and the
//!   result lie in memory); tile hierarchy and pipeline docs.
//! - [`mma_kind`]: what a k-step multiplies (fp16, bf16, TF32, 3xTF32 on fp32 data).
//! - [`nhwc`]: `wmma_nhwc_{BM}x{BN}[k64]` on plain NHWC / KRSC data, and the fp32 entries
//!   `wmma_nhwc_tf32_*`, `wmma_nhwc_3xtf32_*` (`mma.sync` m16n8k8 tf32).
//! - [`nhwcnc`]: `wmma_nhwcnc_{BM}x{BN}[k64]` on the blocked NHWC16n16c / RSCK16k16c layouts.
//! - [`small_c`]: `wmma_smallc_128x{BN}` for few input channels (C = 1, 3): the reduction runs
//!   over taps and channels together, operands gathered element by element.
//! - [`patch`]: `wmma_patch_128x{BN}`, the same reduction with the input patch of each output
//!   tile staged in shared memory and the output tile written through it.
//! - [`hopper`] (sm_90a PTX only): the same implicit GEMM with Hopper's `wgmma.mma_async`, a
//!   progression of policies from one table (`convrs_spec::hopper_configs!`): multistage, then
//!   warp-specialized on an mbarrier ring with TMA, clusters, a persistent grid, split-K.

pub mod implicit_gemm;
pub mod mma_kind;
pub mod nhwc;
#[cfg(not(target_feature = "sm_90a"))]
pub mod nhwcnc;
#[cfg(not(target_feature = "sm_90a"))]
pub mod small_c;
#[cfg(not(target_feature = "sm_90a"))]
pub mod patch;
#[cfg(target_feature = "sm_90a")]
pub mod hopper;
