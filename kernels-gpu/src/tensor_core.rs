//! Family 3, tensor-core convolution (fp16 in, fp32 accumulate): not implemented yet.
//!
//! - [`nhwc`]: `wmma_nhwc_{BM}x{BN}[k64]`, an implicit GEMM on plain NHWC / KRSC data with
//!   `mma.sync` m16n8k16 and `ldmatrix` from an XOR-swizzled multi-stage `cp.async` pipeline.

pub mod nhwc;
pub mod nhwcnc;
