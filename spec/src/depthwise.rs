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

/// Calls `$callback! { $ctx... (type, TAPS, STRIDE, ROWS, COLS: entry) ... }` with every
/// compiled strip entry (`depthwise_strip_*`, step 2 of the NHWC kernels): NHWC data, an RSK
/// filter, multiplier 1 and C a multiple of [`NHWC_VEC`], an R = S = `TAPS` filter at stride
/// `STRIDE` in both axes and dilation 1. A thread computes [`NHWC_VEC`] channels of a `ROWS` x
/// `COLS` block of outputs, so each input row it reads is loaded and widened once for every
/// output row it feeds. The blocks follow from the registers: the 3x3 filter stays whole in
/// registers (36 values) beside 4 x 2 sums; the 7x7 filter is read a row at a time, and its
/// 10-pixel rows feed 2 x 4 sums. Stride 1 only: at stride 2 an input row feeds half as many
/// output rows, and entries for it (4 x 2 and 2 x 2 blocks) measured 0.46-0.90x of step 1's time
/// on every stride-2 layer of the mobilenet suite (H100, 2026-11-27), so they were dropped.
#[macro_export]
macro_rules! depthwise_strip_entries {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (f32, 3, 1, 4, 2: depthwise_strip_f32_r3_s1) (f32, 5, 1, 4, 2: depthwise_strip_f32_r5_s1) (f32, 7, 1, 2, 4: depthwise_strip_f32_r7_s1)
            (f16, 3, 1, 4, 2: depthwise_strip_f16_r3_s1) (f16, 5, 1, 4, 2: depthwise_strip_f16_r5_s1) (f16, 7, 1, 2, 4: depthwise_strip_f16_r7_s1)
            (bf16, 3, 1, 4, 2: depthwise_strip_bf16_r3_s1) (bf16, 5, 1, 4, 2: depthwise_strip_bf16_r5_s1) (bf16, 7, 1, 2, 4: depthwise_strip_bf16_r7_s1)
        }
    };
}

/// One compiled strip entry (see [`depthwise_strip_entries!`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripEntry {
    /// The PTX entry point's name.
    pub name: &'static str,
    /// Element type name: `f32`, `f16` or `bf16`.
    pub dtype: &'static str,
    /// The filter size R = S.
    pub taps: u32,
    /// The stride, both axes.
    pub stride: u32,
    /// Output rows per thread.
    pub rows: u32,
    /// Output columns per thread.
    pub cols: u32,
}

impl StripEntry {
    /// Input pixels one input row of a thread spans: `(COLS - 1) * STRIDE + TAPS`.
    pub const fn span_x(&self) -> u32 {
        (self.cols - 1) * self.stride + self.taps
    }

    /// Input rows a thread reads: `(ROWS - 1) * STRIDE + TAPS`.
    pub const fn span_y(&self) -> u32 {
        (self.rows - 1) * self.stride + self.taps
    }
}

macro_rules! declare_strip_entries {
    ($table:ident $(($t:ident, $taps:literal, $stride:literal, $rows:literal, $cols:literal: $name:ident))*) => {
        /// Every compiled entry of the table, in the kernels' declaration order.
        pub const $table: [StripEntry; [$(stringify!($name)),*].len()] = [$(StripEntry {
            name: stringify!($name),
            dtype: stringify!($t),
            taps: $taps,
            stride: $stride,
            rows: $rows,
            cols: $cols,
        }),*];
    };
}
crate::depthwise_strip_entries!(declare_strip_entries, STRIP_ENTRIES);

/// Calls `$callback! { $ctx... (type, TAPS, STRIDE, ROWS, COLS: entry) ... }` with every
/// compiled NCHW strip entry (`depthwise_nchw_strip_*`, step 2 of the NCHW kernels): NCHW data,
/// a KCRS filter (K x 1 x R x S), any multiplier, an R = S = `TAPS` filter at stride `STRIDE` in
/// both axes and dilation 1. A thread computes a `ROWS` x `COLS` block of outputs of one plane,
/// each input row it reads loaded and widened once for every output row it feeds (the NHWC
/// strip's sums with one channel a thread: 48-72 registers), the lanes along Q. Stride 2 has half
/// the rows: an input row feeds half as many output rows. Rows are read, and rows of outputs
/// stored, as 4-element vectors where [`nchw_strip_row_vectors`] and [`nchw_strip_row_stores`]
/// say so.
#[macro_export]
macro_rules! depthwise_nchw_strip_entries {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (f32, 3, 1, 4, 4: depthwise_nchw_strip_f32_r3_s1) (f32, 3, 2, 2, 4: depthwise_nchw_strip_f32_r3_s2) (f32, 5, 1, 4, 4: depthwise_nchw_strip_f32_r5_s1)
            (f32, 5, 2, 2, 4: depthwise_nchw_strip_f32_r5_s2) (f32, 7, 1, 4, 4: depthwise_nchw_strip_f32_r7_s1) (f32, 7, 2, 2, 4: depthwise_nchw_strip_f32_r7_s2)
            (f16, 3, 1, 4, 4: depthwise_nchw_strip_f16_r3_s1) (f16, 3, 2, 2, 4: depthwise_nchw_strip_f16_r3_s2) (f16, 5, 1, 4, 4: depthwise_nchw_strip_f16_r5_s1)
            (f16, 5, 2, 2, 4: depthwise_nchw_strip_f16_r5_s2) (f16, 7, 1, 4, 4: depthwise_nchw_strip_f16_r7_s1) (f16, 7, 2, 2, 4: depthwise_nchw_strip_f16_r7_s2)
            (bf16, 3, 1, 4, 4: depthwise_nchw_strip_bf16_r3_s1) (bf16, 3, 2, 2, 4: depthwise_nchw_strip_bf16_r3_s2) (bf16, 5, 1, 4, 4: depthwise_nchw_strip_bf16_r5_s1)
            (bf16, 5, 2, 2, 4: depthwise_nchw_strip_bf16_r5_s2) (bf16, 7, 1, 4, 4: depthwise_nchw_strip_bf16_r7_s1) (bf16, 7, 2, 2, 4: depthwise_nchw_strip_bf16_r7_s2)
        }
    };
}
crate::depthwise_nchw_strip_entries!(declare_strip_entries, NCHW_STRIP_ENTRIES);

/// Calls `$callback! { $ctx... (type, TAPS, STRIDE, ROWS, COLS: entry) ... }` with every
/// compiled tile entry (`depthwise_tile_*`, step 3 of the NHWC kernels): NHWC data, an RSK filter,
/// multiplier 1 and whole 16-byte chunks of channels (C a multiple of 8 for 16-bit data, 4 for
/// fp32), an R = S = `TAPS` filter at stride `STRIDE` in both axes and dilation 1. A block stages
/// an input tile in shared memory by `cp.async` (zero-filled outside the image: the padding),
/// two stages so a persistent block loads its next tile while it computes this one, and each
/// thread computes [`NHWC_VEC`] channels of a `ROWS` x `COLS` block of outputs from the tile
/// through the strip's sums. Unlike the strip, stride 2 gains here: the tile is read from DRAM
/// once whatever the stride, and the threads read their windows from shared memory.
#[macro_export]
macro_rules! depthwise_tile_entries {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            (f32, 3, 1, 4, 2: depthwise_tile_f32_r3_s1) (f32, 3, 2, 2, 2: depthwise_tile_f32_r3_s2) (f32, 5, 1, 4, 2: depthwise_tile_f32_r5_s1)
            (f32, 5, 2, 2, 2: depthwise_tile_f32_r5_s2) (f32, 7, 1, 2, 4: depthwise_tile_f32_r7_s1) (f32, 7, 2, 2, 2: depthwise_tile_f32_r7_s2)
            (f16, 3, 1, 4, 2: depthwise_tile_f16_r3_s1) (f16, 3, 2, 2, 2: depthwise_tile_f16_r3_s2) (f16, 5, 1, 4, 2: depthwise_tile_f16_r5_s1)
            (f16, 5, 2, 2, 2: depthwise_tile_f16_r5_s2) (f16, 7, 1, 2, 4: depthwise_tile_f16_r7_s1) (f16, 7, 2, 2, 2: depthwise_tile_f16_r7_s2)
            (bf16, 3, 1, 4, 2: depthwise_tile_bf16_r3_s1) (bf16, 3, 2, 2, 2: depthwise_tile_bf16_r3_s2) (bf16, 5, 1, 4, 2: depthwise_tile_bf16_r5_s1)
            (bf16, 5, 2, 2, 2: depthwise_tile_bf16_r5_s2) (bf16, 7, 1, 2, 4: depthwise_tile_bf16_r7_s1) (bf16, 7, 2, 2, 2: depthwise_tile_bf16_r7_s2)
        }
    };
}
crate::depthwise_tile_entries!(declare_strip_entries, TILE_ENTRIES);

/// The most threads a block of the tile entries has (`.maxntid`): [`TileShape::threads`] is at
/// most this (the host takes fewer where a small plane or layer would leave them idle).
pub const TILE_THREADS: u32 = 256;
/// Blocks of the tile entries an SM holds at least (`.minnctapersm`, so ptxas caps the
/// registers at 65536 / (this * [`TILE_THREADS`])): with fewer, one block's copies have no other
/// block's arithmetic to hide under but its own second stage.
pub const TILE_MIN_BLOCKS: u32 = 2;

/// A tile launch's block, `blockDim` = (groups, cols, rows): `groups` channel groups of
/// [`NHWC_VEC`] channels (x, fastest, so a warp's lanes read a pixel's channels together), `cols`
/// column groups and `rows` strips of the entry's `COLS` and `ROWS` outputs. The kernel reads it
/// from `blockDim`, so the host alone chooses it (small planes take more channels a block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileShape {
    /// Channel groups a block (x).
    pub groups: u32,
    /// Column groups a block (y).
    pub cols: u32,
    /// Strips a block (z).
    pub rows: u32,
}

impl TileShape {
    /// Threads a block.
    pub const fn threads(&self) -> u32 {
        self.groups * self.cols * self.rows
    }
}

/// Input pixels along one axis that `blocks` thread blocks of `per` outputs each read at
/// `stride` under a `taps` filter: a tile's span.
#[inline(always)]
pub const fn tile_span(blocks: u32, per: u32, stride: u32, taps: u32) -> u32 {
    (blocks * per - 1) * stride + taps
}

/// Bytes of one pixel of a staged tile: `groups` groups of [`NHWC_VEC`] elements of
/// `elem_bytes` (a multiple of 64: whole 16-byte chunks, and the swizzle's halves of 128).
#[inline(always)]
pub const fn tile_pitch(groups: u32, elem_bytes: u32) -> u32 {
    groups * NHWC_VEC * elem_bytes
}

/// Pixel slots of one stage: the tile's `span_y * span_x` pixels, rounded up to even (the
/// swizzle exchanges slots in pairs).
#[inline(always)]
pub const fn tile_slots(span_y: u32, span_x: u32) -> u32 {
    (span_y * span_x + 1) & !1
}

/// The slot that holds pixel `px` (row-major in the tile) of a stage whose pixels are `pitch`
/// bytes, when neighbouring threads read pixels `step` apart (an even column step). At 64-byte
/// pixels two such pixels would fall in the same half of the 32 banks, so every other run of
/// `step` pixels exchanges the two slots of each even pair: `px` and `px + step` then sit in
/// different halves. Wider pixels fill a phase's 128 bytes from one pixel and need nothing.
#[inline(always)]
pub const fn tile_slot(px: u32, pitch: u32, step: u32) -> u32 {
    if pitch < 128 {
        px ^ ((px / step) & 1)
    } else {
        px
    }
}

/// Dynamic shared memory of a tile launch: two stages of the tile.
pub const fn tile_smem_bytes(shape: TileShape, taps: u32, stride: u32, rows: u32, cols: u32, elem_bytes: u32) -> u32 {
    2 * tile_slots(tile_span(shape.rows, rows, stride, taps), tile_span(shape.cols, cols, stride, taps)) * tile_pitch(shape.groups, elem_bytes)
}

/// Tiles (each one block's work for one stage) of a tile launch: `n` images x `ceil(c / (groups
/// * NHWC_VEC))` channel blocks x `ceil(p / (rows * ROWS))` x `ceil(q / (cols * COLS))`, columns
/// fastest.
pub const fn tile_count(shape: TileShape, n: u64, c: u64, p: u64, q: u64, rows: u64, cols: u64) -> u64 {
    n * crate::depthwise_tiles!(c, shape.groups as u64 * NHWC_VEC as u64) * crate::depthwise_tiles!(p, shape.rows as u64 * rows) * crate::depthwise_tiles!(q, shape.cols as u64 * cols)
}

/// Work items (threads) of a strip launch: `n` images x `ceil(p / rows)` strips x
/// `ceil(q / cols)` column groups x `k / NHWC_VEC` channel groups, channels fastest.
pub const fn strip_items(n: u64, p: u64, q: u64, k: u64, rows: u64, cols: u64) -> u64 {
    n * crate::depthwise_tiles!(p, rows) * crate::depthwise_tiles!(q, cols) * (k / NHWC_VEC as u64)
}

/// Work items (threads) of an NCHW strip launch: `n*k` planes x `ceil(p / rows)` strips x
/// `ceil(q / cols)` column groups, column groups fastest.
pub const fn nchw_strip_items(n: u64, k: u64, p: u64, q: u64, rows: u64, cols: u64) -> u64 {
    n * k * crate::depthwise_tiles!(p, rows) * crate::depthwise_tiles!(q, cols)
}

/// Whether an NCHW strip launch reads its rows as aligned 4-element vectors (else element by
/// element): 4 columns a thread, rows of a multiple of 4 elements (so every vector is wholly
/// inside a row or outside it), and the column padding `taps / 2` (so the window starts a fixed
/// `4 - taps / 2` elements into the vector at q0 * stride - 4). The kernel and the plan's cost
/// both ask it.
pub const fn nchw_strip_row_vectors(w: i32, pad_w: i32, taps: i32, cols: i32) -> bool {
    cols == 4 && w % 4 == 0 && pad_w == taps / 2
}

/// Whether an NCHW strip launch stores a thread's row of outputs as one 4-element vector: 4
/// columns a thread and Q a multiple of 4 (so the row's 4 outputs are inside and aligned).
pub const fn nchw_strip_row_stores(q: i32, cols: i32) -> bool {
    cols == 4 && q % 4 == 0
}

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

    /// Each of `table`'s entries is named `prefix_type_rTAPS_sSTRIDE`, one for each type, size
    /// and stride of `strides`.
    fn check_strip_table(table: &[StripEntry], prefix: &str, strides: &[u32]) {
        assert_eq!(table.len(), 3 * TAPS.len() * strides.len(), "{prefix}");
        for t in ["f32", "f16", "bf16"] {
            for taps in TAPS {
                for &stride in strides {
                    let mut e = table.iter().filter(|e| e.dtype == t && e.taps == taps && e.stride == stride);
                    let first = e.next().expect("an entry for each type, size and stride");
                    assert!(e.next().is_none(), "{t} {taps} {stride}");
                    let rest = first.name.strip_prefix(prefix).and_then(|r| r.strip_prefix('_')).and_then(|r| r.strip_prefix(t));
                    let mut rest = rest.expect("the prefix and the type").split('_').skip(1);
                    assert_eq!(rest.next().and_then(|r| r.strip_prefix('r')).and_then(|r| r.parse().ok()), Some(taps), "{}", first.name);
                    assert_eq!(rest.next().and_then(|r| r.strip_prefix('s')).and_then(|r| r.parse().ok()), Some(stride), "{}", first.name);
                    assert!(rest.next().is_none(), "{}", first.name);
                }
            }
        }
    }

    #[test]
    fn strip_entries_cover_each_size_and_type() {
        check_strip_table(&STRIP_ENTRIES, "depthwise_strip", &[1]);
        check_strip_table(&NCHW_STRIP_ENTRIES, "depthwise_nchw_strip", &[1, 2]);
        check_strip_table(&TILE_ENTRIES, "depthwise_tile", &[1, 2]);
        // The 7x7 entry's window: 2 x 4 outputs read 8 rows of 10 pixels.
        let r7 = STRIP_ENTRIES.iter().find(|e| e.taps == 7).unwrap();
        assert_eq!((r7.span_y(), r7.span_x()), (8, 10));
        // 2 images x ceil(9 / 4) = 3 strips x ceil(5 / 2) = 3 column groups x 8 / 4 channel groups.
        assert_eq!(strip_items(2, 9, 5, 8, 4, 2), 2 * 3 * 3 * 2);
        // 2 images x 3 planes x ceil(9 / 4) = 3 strips x ceil(5 / 4) = 2 column groups.
        assert_eq!(nchw_strip_items(2, 3, 9, 5, 4, 4), 2 * 3 * 3 * 2);
        // Vector rows: 4 columns, W a multiple of 4, the padding half the filter.
        assert!(nchw_strip_row_vectors(56, 1, 3, 4) && nchw_strip_row_vectors(28, 3, 7, 4));
        assert!(!nchw_strip_row_vectors(14, 1, 3, 4) && !nchw_strip_row_vectors(56, 0, 3, 4) && !nchw_strip_row_vectors(56, 1, 3, 2));
        assert!(nchw_strip_row_stores(28, 4) && !nchw_strip_row_stores(14, 4) && !nchw_strip_row_stores(28, 2));
    }

    #[test]
    fn tile_geometry() {
        // 8 channel groups x 8 column groups x 4 strips of 4 x 2 outputs under 3x3 at stride 1:
        // a 16 x 16 output tile reads 18 x 18 pixels of 64 bytes (fp16), two stages.
        let shape = TileShape { groups: 8, cols: 8, rows: 4 };
        assert_eq!(shape.threads(), TILE_THREADS);
        assert_eq!((tile_span(4, 4, 1, 3), tile_span(8, 2, 1, 3)), (18, 18));
        assert_eq!(tile_smem_bytes(shape, 3, 1, 4, 2, 2), 2 * 324 * 64);
        // At stride 2, 2 x 2 outputs a thread: 8 x 16 outputs read 17 x 33 pixels, 562 slots.
        assert_eq!(tile_slots(tile_span(4, 2, 2, 3), tile_span(8, 2, 2, 3)), 562);
        // 32,144,56,56: 5 channel blocks of 32, 4 x 4 tiles of 16 x 16 a block.
        assert_eq!(tile_count(shape, 32, 144, 56, 56, 4, 2), 32 * 5 * 4 * 4);
        // The swizzle is a permutation that puts pixels `step` apart in different bank halves.
        for (pitch, step) in [(64, 2), (64, 4), (128, 2)] {
            let slots: [u32; 64] = core::array::from_fn(|px| tile_slot(px as u32, pitch, step));
            let mut sorted = slots;
            sorted.sort();
            assert_eq!(sorted, core::array::from_fn::<u32, 64, _>(|i| i as u32));
            if pitch == 64 {
                for px in 0..60 {
                    assert_ne!(slots[px as usize] & 1, slots[(px + step) as usize] & 1, "{px} {step}");
                }
            }
        }
    }
}
