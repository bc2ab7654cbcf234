//! `direct_smem`: the compiled variants (KT output channels x WPT output columns per thread,
//! times a compiled filter width S or the generic path) and the tile geometry the kernel derives
//! from its launch, which the host plan computes first to size the grid and shared memory.
//!
//! A block of `(TXC, TH)` threads computes TH output rows x TW = TXC*WPT output columns x KT
//! output channels of one image; the grid is `column tiles x row tiles x K tiles x N` blocks,
//! column tile fastest. Shared memory holds [`BUFFERS`] buffers of (input tile with halo, taps).

/// Threads-per-block ceiling of every plan: 256 threads * 255 registers fit the 64 Ki registers
/// of an SM, so a launch can never fail for registers whatever the driver's compiler allocates.
pub const MAX_BLOCK_THREADS: u32 = 256;

/// Shared buffers per block: channel c+1 is copied into one while c is computed from the other.
pub const BUFFERS: usize = 2;

/// Calls `$callback! { $ctx... [S, ...] (KT, WPT: entry, ...) ... }`: the filter widths with a
/// column of entry points each (0: the generic path, any S, stride and dilation; the others a
/// fast path compiled for that S with stride_w = dil_w = 1), then per variant its register tile
/// and one entry per width, in that order. The kernel instantiates `conv::<KT, WPT, S>` per entry.
#[macro_export]
macro_rules! direct_smem_variants {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            [1, 3, 5, 6, 7, 0]
            (4, 8: direct_smem_k4_s1, direct_smem_k4_s3, direct_smem_k4_s5, direct_smem_k4_s6, direct_smem_k4_s7, direct_smem_k4_sx)
            (6, 4: direct_smem_k6_s1, direct_smem_k6_s3, direct_smem_k6_s5, direct_smem_k6_s6, direct_smem_k6_s7, direct_smem_k6_sx)
            (8, 8: direct_smem_k8_s1, direct_smem_k8_s3, direct_smem_k8_s5, direct_smem_k8_s6, direct_smem_k8_s7, direct_smem_k8_sx)
            (16, 4: direct_smem_k16_s1, direct_smem_k16_s3, direct_smem_k16_s5, direct_smem_k16_s6, direct_smem_k16_s7, direct_smem_k16_sx)
        }
    };
}

/// The `S` of the generic path's entries in [`WIDTHS`].
pub const GENERIC: usize = 0;

/// One register tile: KT output channels x WPT output columns per thread, and its entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Output channels per thread (and per block).
    pub kt: usize,
    /// Output columns per thread.
    pub wpt: usize,
    /// Entry point per [`WIDTHS`] column.
    pub entries: [&'static str; WIDTHS.len()],
}

macro_rules! declare_tables {
    ([$($s:literal),*] $(($kt:literal, $wpt:literal: $($name:ident),*))*) => {
        /// The filter widths of the entry columns: a compiled fast path each, [`GENERIC`] last.
        pub const WIDTHS: [usize; [$($s),*].len()] = [$($s),*];
        /// Every compiled variant, in the kernel's declaration order.
        pub const VARIANTS: [Variant; [$($kt),*].len()] = [$(Variant { kt: $kt, wpt: $wpt, entries: [$(stringify!($name)),*] }),*];
    };
}
crate::direct_smem_variants!(declare_tables);

/// Whether filter width `s` with unit horizontal stride and dilation has a compiled fast path.
pub const fn has_fast_path(s: usize) -> bool {
    let mut i = 0;
    while i < WIDTHS.len() {
        if WIDTHS[i] == s && s != GENERIC {
            return true;
        }
        i += 1;
    }
    false
}

/// The tile geometry's formulas, each written once as an expression over the caller's integer
/// type: the kernel expands them in place in `i32` (exactly the arithmetic it always had, so
/// its code is unchanged), and the `u128` functions below expand them for the host, where no
/// problem can overflow them.
///
/// - `vec_rows: stride_w, w`: whether input rows may be copied in 16-byte pieces (given a
///   16-byte aligned buffer, which the kernel checks).
/// - `tile_shift: vec_rows, pad_w`: columns the tiles start left of a multiple of TW, so that
///   16-byte copies are aligned in global memory.
/// - `tiles: extent, tile`: `ceil(extent / tile)`, the tile count along one axis.
/// - `input_rows: th, stride_h, r, dil_h`: input tile rows of TH output rows, halo included.
/// - `input_span: tw, stride_w, s, dil_w`: input columns read for TW output columns, halo
///   included; rounded up to whole 16-byte chunks (`round4`) it is the tile's row pitch.
/// - `round4: v`: the smallest multiple of 4 not below `v >= 0`.
/// - `taps: int type, fast_s, kt, r, rs, ktp`: floats of filter taps per buffer: `fast_s` (the compiled
///   S, or [`GENERIC`] = 0) packed rows of [`packed_tap_row`] floats, or `rs` = R*S positions of
///   `ktp` = [`tap_stride`] floats.
/// - `smem_bytes: buffer_floats`: dynamic shared memory bytes, [`BUFFERS`] = 2 buffers of that
///   many 4-byte floats.
/// - `thread_column: fast, tx, j, wpt, txc`: tile column (before the shift) of output `j < WPT`
///   of thread column `tx`: adjacent on the fast path (one register window serves them all),
///   `txc` apart on the generic path (lanes adjacent per j).
#[macro_export]
macro_rules! direct_smem_geometry {
    (vec_rows: $stride_w:expr, $w:expr) => { $stride_w == 1 && $w % 4 == 0 };
    (tile_shift: $vec_rows:expr, $pad_w:expr) => { if $vec_rows { (4 - $pad_w % 4) % 4 } else { 0 } };
    (tiles: $extent:expr, $tile:expr) => { ($extent + $tile - 1) / $tile };
    (input_rows: $th:expr, $stride_h:expr, $r:expr, $dil_h:expr) => { ($th - 1) * $stride_h + ($r - 1) * $dil_h + 1 };
    (input_span: $tw:expr, $stride_w:expr, $s:expr, $dil_w:expr) => { ($tw - 1) * $stride_w + ($s - 1) * $dil_w + 1 };
    (round4: $v:expr) => { ($v + 3) & !3 };
    (taps: $int:ty, $fast_s:expr, $kt:expr, $r:expr, $rs:expr, $ktp:expr) => {
        if $fast_s != 0 { $r * $crate::direct::smem::packed_tap_row($kt, $fast_s) as $int } else { $rs * $ktp }
    };
    (smem_bytes: $buffer_floats:expr) => { 8 * $buffer_floats };
    (thread_column: $fast:expr, $tx:expr, $j:expr, $wpt:expr, $txc:expr) => { if $fast { $tx * $wpt + $j } else { $tx + $j * $txc } };
}

/// See [`direct_smem_geometry!`]`(vec_rows)`.
pub const fn vec_rows(stride_w: u128, w: u128) -> bool {
    direct_smem_geometry!(vec_rows: stride_w, w)
}

/// See [`direct_smem_geometry!`]`(tile_shift)`.
pub const fn tile_shift(vec_rows: bool, pad_w: u128) -> u128 {
    direct_smem_geometry!(tile_shift: vec_rows, pad_w)
}

/// See [`direct_smem_geometry!`]`(tiles)`.
pub const fn tiles(extent: u128, tile: u128) -> u128 {
    direct_smem_geometry!(tiles: extent, tile)
}

/// See [`direct_smem_geometry!`]`(input_rows)`.
pub const fn input_rows(th: u128, stride_h: u128, r: u128, dil_h: u128) -> u128 {
    direct_smem_geometry!(input_rows: th, stride_h, r, dil_h)
}

/// The input tile's row pitch in floats: [`direct_smem_geometry!`]`(input_span)` rounded up by `round4`.
pub const fn input_cols(tw: u128, stride_w: u128, s: u128, dil_w: u128) -> u128 {
    let span = direct_smem_geometry!(input_span: tw, stride_w, s, dil_w);
    direct_smem_geometry!(round4: span)
}

/// Floats per filter row of the fast path's packed taps (`[rx][k]`): S positions x KT channels,
/// rounded up to whole 16-byte loads.
#[inline(always)]
pub const fn packed_tap_row(kt: usize, s: usize) -> usize {
    (s * kt).div_ceil(4) * 4
}

/// Floats per (ry, rx) position of the generic path's taps (`KTP`): KT rounded up to 16 bytes.
#[inline(always)]
pub const fn tap_stride(kt: usize) -> usize {
    kt.div_ceil(4) * 4
}

/// See [`direct_smem_geometry!`]`(taps)`; `fast_s` is the filter width when the fast path runs.
pub const fn tap_floats(kt: usize, fast_s: usize, r: u128, s: u128) -> u128 {
    direct_smem_geometry!(taps: u128, fast_s, kt, r, r * s, tap_stride(kt) as u128)
}

/// See [`direct_smem_geometry!`]`(smem_bytes)`.
pub const fn smem_bytes(buffer_floats: u128) -> u128 {
    direct_smem_geometry!(smem_bytes: buffer_floats)
}

/// See [`direct_smem_geometry!`]`(thread_column)`.
pub const fn thread_column(fast: bool, tx: u128, j: u128, wpt: u128, txc: u128) -> u128 {
    direct_smem_geometry!(thread_column: fast, tx, j, wpt, txc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_a_full_matrix() {
        assert_eq!(WIDTHS, [1, 3, 5, 6, 7, GENERIC]);
        assert_eq!(VARIANTS.map(|v| (v.kt, v.wpt)), [(4, 8), (6, 4), (8, 8), (16, 4)]);
        assert_eq!(VARIANTS[1].entries[3], "direct_smem_k6_s6");
        assert_eq!(VARIANTS[3].entries[5], "direct_smem_k16_sx");
        assert!(has_fast_path(6) && !has_fast_path(2) && !has_fast_path(GENERIC));
    }

    #[test]
    fn geometry_of_the_issue_shapes() {
        // 1,6,768,512 -> 6, 6x6 with KT 6 and a (16, 8) block: tile 8 x 64 outputs, halo
        // 13 x 69 read as 13 x 72; taps 6 x 6 = 36 floats per row.
        assert!(vec_rows(1, 512));
        assert_eq!(tile_shift(true, 0), 0);
        assert_eq!(input_rows(8, 1, 6, 1), 13);
        assert_eq!(input_cols(64, 1, 6, 1), 72);
        assert_eq!(tap_floats(6, 6, 6, 6), 6 * 36);
        assert_eq!(smem_bytes(13 * 72 + 6 * 36), 8 * (13 * 72 + 6 * 36));
        assert_eq!(smem_bytes(1), (BUFFERS * 4) as u128);
        // 64,64,56,56 -> 64, 3x3 pad 1, KT 16, 14 x 4 = 56 columns: shift 3, 59 columns -> 2 tiles.
        assert_eq!(tile_shift(true, 1), 3);
        assert_eq!(tiles(56 + 3, 56), 2);
        assert_eq!(input_cols(56, 1, 3, 1), 60);
        assert_eq!(tap_floats(16, 3, 3, 3), 3 * 48);
        // The generic path: round4(KT) per position, KT 6 -> 8; strided rows are never vectorized.
        assert_eq!(tap_floats(6, GENERIC, 6, 6), 36 * 8);
        assert!(!vec_rows(2, 512) && tile_shift(false, 1) == 0);
        assert_eq!(input_cols(3, 2, 3, 2), 12); // (3-1)*2 + (3-1)*2 + 1 = 9 -> 12
    }

    #[test]
    fn thread_columns() {
        assert_eq!([0, 1, 2, 3].map(|j| thread_column(true, 2, j, 4, 8)), [8, 9, 10, 11]);
        assert_eq!([0, 1, 2, 3].map(|j| thread_column(false, 2, j, 4, 8)), [2, 10, 18, 26]);
    }
}
