//! `direct_naive`: one output element per thread, in a 1-D grid of fixed-size blocks.

/// The entry point.
pub const ENTRY: &str = "direct_naive";

/// Threads per block: the kernel maps thread `t` of block `b` to output `b * BLOCK_THREADS + t`,
/// so the host launches `ceil(N*K*P*Q / BLOCK_THREADS)` blocks of exactly this size.
pub const BLOCK_THREADS: u32 = 256;
