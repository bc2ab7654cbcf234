//! Family 3 for few input channels (`wmma_smallc`, fp16 and bf16; sm_80 and sm_90 PTX): the
//! implicit GEMM with the reduction index running over (r, s, c) together, so a layer with C = 1
//! or 3 (a network's first layer, a speech front end) fills its k-tiles with taps instead of
//! zero channels. Operands are gathered element by element (any C), so no channel padding.
//!
//! A block is 4 warps (128 threads), one GEMM row (output pixel) a thread when gathering A;
//! warp w computes rows 32w..32w+32 and all BN columns of the 128 x BN block tile with
//! `mma.sync` m16n8k16. A k-tile is 32 reduction elements; shared memory holds two k-tiles of A
//! (128 rows) and B (BN rows), each row 32 16-bit values padded to 80 bytes (so the 8 rows one
//! `ldmatrix` phase reads fall in 8 distinct 16-byte bank groups).

/// Calls `$callback! { $ctx... (fp16_entry, bf16_entry, BN) ... }`, one row per compiled tile.
#[macro_export]
macro_rules! small_c_tiles {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            // K <= 32 (speech front ends: K = 16, 32).
            (wmma_smallc_128x32, wmma_smallc_bf16_128x32, 32)
            // K = 64 (image networks' first layers) and above.
            (wmma_smallc_128x64, wmma_smallc_bf16_128x64, 64)
        }
    };
}

/// Block tile rows (GEMM M): one per thread.
pub const BLOCK_M: usize = 128;
/// Threads per block.
pub const THREADS: usize = 128;
/// Reduction elements per k-tile.
pub const K_TILE: usize = 32;
/// Bytes per shared row: K_TILE 16-bit values and 16 bytes of padding.
pub const ROW_BYTES: usize = 2 * K_TILE + 16;

/// Dynamic shared memory bytes per block: two k-tiles of A and B.
#[inline(always)]
pub const fn smem_bytes(bn: usize) -> usize {
    2 * (BLOCK_M + bn) * ROW_BYTES
}

/// One compiled tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// The fp16 entry point.
    pub fp16: &'static str,
    /// The bf16 entry point.
    pub bf16: &'static str,
    /// Block tile columns (GEMM N = output channels).
    pub bn: usize,
}

macro_rules! declare {
    ($(($fp16:ident, $bf16:ident, $bn:literal))*) => {
        /// Every compiled tile, in the kernels' declaration order.
        pub const TILES: [Tile; [$($bn),*].len()] = [$(Tile { fp16: stringify!($fp16), bf16: stringify!($bf16), bn: $bn }),*];
    };
}
crate::small_c_tiles!(declare);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_fit_without_opting_in() {
        assert_eq!(TILES.map(|t| t.bn), [32, 64]);
        assert!(TILES.iter().all(|t| smem_bytes(t.bn) <= 48 * 1024 && (t.bn * K_TILE / THREADS) % 8 == 0));
        assert_eq!(ROW_BYTES % 16, 0);
    }
}
