//! Family 4, depthwise convolution (groups = C, K = m*C): each output channel reads one input
//! channel, so the work is a few multiply-adds per byte moved and the kernels are judged by the
//! copy bandwidth, not the FMA or tensor-core peak.
//!
//! - `depthwise_nchw_*`: NCHW input, KCRS filter (K x 1 x R x S), NKPQ output. One thread per
//!   [`NCHW_ROWS`] consecutive output rows of one output column: the lanes of a warp walk
//!   along Q, so loads and stores are warp-wide runs, and the filter taps are loaded once per
//!   column of [`NCHW_ROWS`] outputs.
//! - `depthwise_nhwc_*`: NHWC input, RSK filter (the (K, C, R, S) reading of `Hwcn` with C/G = 1:
//!   taps outer, channels contiguous), NHWK output. One thread per [`NHWC_VEC`] channels of
//!   [`NHWC_COLS`] consecutive output columns: one vector load per input pixel and tap, lanes
//!   along the channels. The vector entries need K = C (multiplier 1) and C a multiple of
//!   [`NHWC_VEC`]; the `_any` scalar entries take every other depthwise problem.
//!
//! Each entry is compiled for one filter size R = S = [`TAPS`] with its loops unrolled, or for any
//! R and S (`0`). Accumulation is fp32 whatever the data; the output is fp32 or the input's type
//! (`ConvShape::y_bits`).

/// Threads per block of every depthwise entry.
pub const BLOCK_THREADS: u32 = 256;
/// NCHW: consecutive output rows per thread.
pub const NCHW_ROWS: u32 = 4;
/// NHWC: channels per thread, one vector access (16 bytes of fp32, 8 of fp16/bf16).
pub const NHWC_VEC: u32 = 4;
/// NHWC: consecutive output columns per thread.
pub const NHWC_COLS: u32 = 2;

/// Calls `$callback! { $ctx... (layout, type, TAPS, VEC: entry) ... }` with every compiled
/// entry: layout `nchw` or `nhwc`, element type `f32`, `f16` or `bf16`, the compiled filter
/// size (0: any), and for NHWC the channels per thread ([`NHWC_VEC`], or 1 for the scalar
/// entries that take any multiplier and any C; NCHW rows say 1).
#[macro_export]
macro_rules! depthwise_entries {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (nchw, f32, 3, 1: depthwise_nchw_f32_r3) (nchw, f32, 5, 1: depthwise_nchw_f32_r5) (nchw, f32, 7, 1: depthwise_nchw_f32_r7) (nchw, f32, 0, 1: depthwise_nchw_f32_any)
            (nchw, f16, 3, 1: depthwise_nchw_f16_r3) (nchw, f16, 5, 1: depthwise_nchw_f16_r5) (nchw, f16, 7, 1: depthwise_nchw_f16_r7) (nchw, f16, 0, 1: depthwise_nchw_f16_any)
            (nchw, bf16, 3, 1: depthwise_nchw_bf16_r3) (nchw, bf16, 5, 1: depthwise_nchw_bf16_r5) (nchw, bf16, 7, 1: depthwise_nchw_bf16_r7) (nchw, bf16, 0, 1: depthwise_nchw_bf16_any)
            (nhwc, f32, 3, 4: depthwise_nhwc_f32_r3) (nhwc, f32, 5, 4: depthwise_nhwc_f32_r5) (nhwc, f32, 7, 4: depthwise_nhwc_f32_r7) (nhwc, f32, 0, 4: depthwise_nhwc_f32_rx) (nhwc, f32, 0, 1: depthwise_nhwc_f32_any)
            (nhwc, f16, 3, 4: depthwise_nhwc_f16_r3) (nhwc, f16, 5, 4: depthwise_nhwc_f16_r5) (nhwc, f16, 7, 4: depthwise_nhwc_f16_r7) (nhwc, f16, 0, 4: depthwise_nhwc_f16_rx) (nhwc, f16, 0, 1: depthwise_nhwc_f16_any)
            (nhwc, bf16, 3, 4: depthwise_nhwc_bf16_r3) (nhwc, bf16, 5, 4: depthwise_nhwc_bf16_r5) (nhwc, bf16, 7, 4: depthwise_nhwc_bf16_r7) (nhwc, bf16, 0, 4: depthwise_nhwc_bf16_rx) (nhwc, bf16, 0, 1: depthwise_nhwc_bf16_any)
        }
    };
}

/// One compiled entry (see [`depthwise_entries!`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The PTX entry point's name.
    pub name: &'static str,
    /// `true` for NHWC, `false` for NCHW.
    pub nhwc: bool,
    /// Element type name: `f32`, `f16` or `bf16`.
    pub dtype: &'static str,
    /// The compiled filter size R = S, or 0 for any.
    pub taps: u32,
    /// Channels per thread (NHWC), 1 for NCHW and the scalar NHWC entries.
    pub vec: u32,
}

macro_rules! declare_entries {
    ($(($layout:ident, $t:ident, $taps:literal, $vec:literal: $name:ident))*) => {
        /// Every compiled entry, in the kernel's declaration order.
        pub const ENTRIES: [Entry; [$(stringify!($name)),*].len()] = [$(Entry {
            name: stringify!($name),
            nhwc: matches!(stringify!($layout).as_bytes(), b"nhwc"),
            dtype: stringify!($t),
            taps: $taps,
            vec: $vec,
        }),*];
    };
}
crate::depthwise_entries!(declare_entries);

/// The filter sizes with unrolled entries.
pub const TAPS: [u32; 3] = [3, 5, 7];

/// `ceil(extent / per)`, the thread tiles along one axis, as an expression in the caller's
/// integer type: the kernels expand it in `i32` (their tile counts), the host through
/// [`nchw_items`] and [`nhwc_items`] in `u64`.
#[macro_export]
macro_rules! depthwise_tiles {
    ($extent:expr, $per:expr) => {
        ($extent + $per - 1) / $per
    };
}

/// Work items (threads) of an NCHW launch: `n*k` planes x `ceil(p / NCHW_ROWS)` row groups x `q`.
pub const fn nchw_items(n: u64, k: u64, p: u64, q: u64) -> u64 {
    n * k * depthwise_tiles!(p, NCHW_ROWS as u64) * q
}

/// Work items (threads) of an NHWC launch: `n*p` rows x `ceil(q / NHWC_COLS)` column groups x
/// `k / vec` channel groups (`vec` divides K: the host launches the vector entries for K a
/// multiple of [`NHWC_VEC`] only).
pub const fn nhwc_items(n: u64, p: u64, q: u64, k: u64, vec: u64) -> u64 {
    n * p * depthwise_tiles!(q, NHWC_COLS as u64) * (k / vec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_named_by_their_row() {
        assert_eq!(ENTRIES.len(), 27);
        for e in ENTRIES {
            let mut parts = e.name.split('_');
            assert_eq!(parts.next(), Some("depthwise"));
            assert_eq!(parts.next(), Some(if e.nhwc { "nhwc" } else { "nchw" }), "{}", e.name);
            assert_eq!(parts.next(), Some(e.dtype), "{}", e.name);
            assert!(e.taps == 0 || TAPS.contains(&e.taps));
            assert!(e.vec == 1 || (e.nhwc && e.vec == NHWC_VEC));
        }
        assert_eq!(nchw_items(2, 3, 9, 5), 2 * 3 * 3 * 5);
        assert_eq!(nhwc_items(2, 9, 5, 8, 4), 2 * 9 * 3 * 2);
    }
}
