//! The layout transform kernels, two kinds by element size (2 or 4 bytes):
//!
//! 1. `relayout_b16` / `relayout_b32` copy a 4-D tensor from one plain layout (NCHW, NHWC, HWCN)
//!    to another, zero-filling or cropping along its axes: one thread per destination element,
//!    walked in the destination's memory order (coalesced writes, scattered reads). The host
//!    describes the copy in the destination's memory order: per position (slowest first) its
//!    extent, the source's element stride along that logical axis, and the source's extent there
//!    (coordinates past it are padding). Any pair of plain layouts.
//! 2. `transpose_b16` / `transpose_b32` do the pairs that are a batched matrix transpose (NCHW <->
//!    NHWC, KCRS -> KRSC) through a shared-memory tile, so reads and writes are both coalesced:
//!    the path a caller holding NCHW tensors takes to and from the NHWC kernels.
//!    `transpose_sampled_b16` / `_b32` take NCHW to NHWC sampled on a stride's grid (a strided
//!    1x1 layer's input for the NHWC kernels run at stride 1).
//!
//! 3. `pad_channels_b16` does NCHW -> NHWC for 16-bit tensors of at most 8 channels padded to 8
//!    (first layers), a 16-byte store per pixel: the tile would be 7/8 idle there.
//!
//! 4. `sample_b16` / `sample_b32` copy NCHW planes sampled on a stride's grid (the input of a
//!    strided 1x1 layer run at stride 1 by the NCHW plane kernels), one thread per destination
//!    element with divisions by multiplication ([`FastDiv`]).
//!
//! They all let device tensors reach a kernel's layout (and its channel multiples) and bring its
//! output back in the caller's, without a trip through the host.

/// Threads per `relayout` block.
pub const BLOCK_THREADS: u32 = 256;

/// Calls `$callback! { $ctx... field "doc", ... }` with the `i32` arguments the transform
/// kernels take after their destination and source pointers, in order. The kernels declare their
/// parameters from it; this crate declares [`Relayout`] from it.
#[macro_export]
macro_rules! relayout_fields {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            total "Destination elements.",
            e0 "Destination extent at memory position 0 (slowest).",
            e1 "Destination extent at memory position 1.",
            e2 "Destination extent at memory position 2.",
            e3 "Destination extent at memory position 3 (fastest).",
            s0 "Source element stride of the logical axis at position 0.",
            s1 "Source element stride of the logical axis at position 1.",
            s2 "Source element stride of the logical axis at position 2.",
            s3 "Source element stride of the logical axis at position 3.",
            l0 "Source extent of the axis at position 0: coordinates at or past it are zeros.",
            l1 "Source extent of the axis at position 1.",
            l2 "Source extent of the axis at position 2.",
            l3 "Source extent of the axis at position 3."
        }
    };
}

/// Declares a transform's argument struct (`[doc attributes, name]` from the caller, one `i32`
/// field per name the fields macro gives) with `to_args`, the values in argument order: what
/// the host pushes after the pointers.
macro_rules! declare_args {
    ([$(#[$m:meta])* $name:ident] $($field:ident $doc:literal),*) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            $(#[doc = $doc] pub $field: i32,)*
        }

        impl $name {
            /// The values in argument order: what the host pushes after the pointers.
            pub const fn to_args(&self) -> [i32; [$(stringify!($field)),*].len()] {
                [$(self.$field),*]
            }
        }
    };
}
crate::relayout_fields!(declare_args, [
    /// One layout copy as the transform kernels see it (see the module docs).
    Relayout
]);

/// The source element destination element `o` copies, or `None` where it is padding. Every
/// value is a named field, so the kernel keeps all of it in registers.
#[inline(always)]
pub fn source_offset(r: &Relayout, o: i32) -> Option<i32> {
    let c3 = o % r.e3;
    let q = o / r.e3;
    let c2 = q % r.e2;
    let q = q / r.e2;
    let c1 = q % r.e1;
    let c0 = q / r.e1;
    if c0 >= r.l0 || c1 >= r.l1 || c2 >= r.l2 || c3 >= r.l3 {
        None
    } else {
        Some(c0 * r.s0 + c1 * r.s1 + c2 * r.s2 + c3 * r.s3)
    }
}

/// Edge of the square tile one transpose block moves through shared memory.
pub const TRANSPOSE_TILE: u32 = 64;
/// Transpose block shape: a warp wide (one 32-element run per access), 8 warps tall.
pub const TRANSPOSE_BLOCK: (u32, u32) = (32, 8);

/// Shared memory of a transpose block for `elem_bytes`-byte elements: the tile with each row
/// padded by one 4-byte word, so a row's stride is an odd number of words and the column reads
/// of the store phase fall into 32 different banks.
pub const fn transpose_smem_bytes(elem_bytes: u32) -> u32 {
    TRANSPOSE_TILE * (TRANSPOSE_TILE * elem_bytes + 4)
}

/// Calls `$callback! { $ctx... field "doc", ... }` with the `i32` arguments the transpose
/// kernels take after their destination and source pointers, in order.
#[macro_export]
macro_rules! transpose_fields {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            rows "Destination rows per batch (grid y covers them).",
            cols "Destination columns per batch, contiguous (grid x covers them).",
            src_batches "Batches the source has: destination batches past it are zeros.",
            valid_rows "Destination rows below this come from the source (the rest are zeros).",
            valid_cols "Destination columns below this come from the source.",
            src_ld "Source elements between consecutive source rows (= destination columns).",
            src_bs "Source elements between batches.",
            dst_ld "Destination elements between rows.",
            dst_bs "Destination elements between batches.",
            q "The sampled entries' destination pixels a sampled row (the rest read source row `y` as row `y`: `i32::MAX` makes the mapping the identity).",
            q_m "FastDiv multiplier of q (its bits).",
            q_s "FastDiv shift of q.",
            row_step "The sampled entries' source elements between sampled rows (the stride's rows times W).",
            col_step "The sampled entries' source elements between sampled columns (the stride's columns)."
        }
    };
}

crate::transpose_fields!(declare_args, [
    /// A batched transpose with zero fill and cropping: destination element (b, y, x) is
    /// source element (b, x, y), or zero where the source has no such element. NCHW -> NHWC is
    /// one per image (channel rows of H*W pixels become pixel rows of C channels), NHWC ->
    /// NCHW the other way, KCRS filters -> KRSC per output channel; growing the channel count
    /// or the batch zero-fills, shrinking it crops.
    ///
    /// The sampled entries (`transpose_sampled_b16/b32`) read NCHW planes on a stride's grid as
    /// they transpose them: destination pixel `y` is source pixel
    /// [`sampled_pixel(y)`](Transpose::sampled_pixel), so a strided 1x1 layer's NHWC input is
    /// its stride-1 problem's (the host's `Conv2d::subsampled`): at stride 2 a quarter of the
    /// bytes written, and the rows between the grid's never read.
    Transpose
]);

impl Transpose {
    /// Every field zero but the sampling, which is the identity (`with_sampling(i32::MAX, 0,
    /// 1)`: the fields the unsampled entries take and ignore): the base of a transpose's
    /// literal, `Transpose { rows, .., ..Transpose::UNSAMPLED }`.
    pub const UNSAMPLED: Transpose =
        Transpose { rows: 0, cols: 0, src_batches: 0, valid_rows: 0, valid_cols: 0, src_ld: 0, src_bs: 0, dst_ld: 0, dst_bs: 0, q: 0, q_m: 0, q_s: 0, row_step: 0, col_step: 0 }
            .with_sampling(i32::MAX, 0, 1);

    /// The source offset destination element (b, y, x) copies, or `None` where it is zero.
    #[inline(always)]
    pub fn source(&self, b: i32, y: i32, x: i32) -> Option<i32> {
        self.source_at(b, y, x, |y| y)
    }

    /// The source offset of destination element (b, y, x) whose source row starts `at(y)`
    /// elements into its source row, or `None` where it is zero.
    #[inline(always)]
    fn source_at(&self, b: i32, y: i32, x: i32, at: impl Fn(i32) -> i32) -> Option<i32> {
        if b < self.src_batches && y < self.valid_rows && x < self.valid_cols {
            Some(b * self.src_bs + x * self.src_ld + at(y))
        } else {
            None
        }
    }

    /// The offset of destination element (b, y, x).
    #[inline(always)]
    pub fn dest(&self, b: i32, y: i32, x: i32) -> i32 {
        b * self.dst_bs + y * self.dst_ld + x
    }

    /// This transpose reading source row `y` (a pixel, for NCHW -> NHWC) of the sampled rows:
    /// destination pixels `q` a sampled row, the grid's rows `row_step` source elements apart
    /// and its columns `col_step`.
    pub const fn with_sampling(self, q: i32, row_step: i32, col_step: i32) -> Transpose {
        let f = FastDiv::new(q as u32);
        Transpose { q, q_m: f.m as i32, q_s: f.s as i32, row_step, col_step, ..self }
    }

    /// Where `y`'s row starts in a sampled entry's source row: sampled row `y / q`, column
    /// `y % q` (for `y` of at most `i32::MAX - 1`; `q = i32::MAX` is the identity).
    #[inline(always)]
    pub fn sampled_pixel(&self, y: i32) -> i32 {
        let row = FastDiv { m: self.q_m as u32, s: self.q_s as u32 }.div(y as u32) as i32;
        row * self.row_step + (y - row * self.q) * self.col_step
    }

    /// [`source`](Transpose::source) of the sampled entries: source row `sampled_pixel(y)`.
    #[inline(always)]
    pub fn source_sampled(&self, b: i32, y: i32, x: i32) -> Option<i32> {
        self.source_at(b, y, x, |y| self.sampled_pixel(y))
    }
}

/// Calls `$callback! { $ctx... field "doc", ... }` with the `i32` arguments `split_tf32` takes
/// after its destination and source pointers, in order.
#[macro_export]
macro_rules! split_tf32_fields {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            n "Elements of the source; the destination holds 2n: the high parts, then the remainders."
        }
    };
}

crate::split_tf32_fields!(declare_args, [
    /// An fp32 tensor split for 3xTF32 (one thread per source element, [`BLOCK_THREADS`] a
    /// block): destination element i is tf32(x_i), element n + i is tf32(x_i - tf32(x_i)),
    /// both rounded to nearest (ties away), so the tensor cores read each exactly.
    SplitTf32
]);

/// Division by a divisor fixed at launch, for numerators below 2^31, as a multiply-high, an add
/// and a shift (Granlund and Montgomery's method, the form CUTLASS's `FastDivmod` uses): the
/// host finds the multiplier once, the kernel divides in a few instructions instead of an
/// integer division's dozens.
///
/// ```
/// use convrs_spec::transform::FastDiv;
/// for d in [1, 2, 3, 7, 28, 784, 1 << 20, 12345] {
///     let f = FastDiv::new(d);
///     for n in [0, 1, d - 1, d, 5 * d + 3, (1 << 31) - 1] {
///         assert_eq!(f.div(n), n / d, "{n} / {d}");
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastDiv {
    /// The multiplier, `floor(2^32 (2^s - d) / d) + 1` (below 2^32).
    pub m: u32,
    /// `ceil(log2 d)`.
    pub s: u32,
}

impl FastDiv {
    /// The division by `d` (at least 1; 0 is taken as 1).
    pub const fn new(d: u32) -> FastDiv {
        let d = if d == 0 { 1 } else { d };
        let s = 32 - (d - 1).leading_zeros();
        let m = ((1u64 << 32) * ((1u64 << s) - d as u64) / d as u64 + 1) as u32;
        FastDiv { m, s }
    }

    /// `n / d` for `n` below 2^31.
    #[inline(always)]
    pub fn div(&self, n: u32) -> u32 {
        let hi = ((n as u64 * self.m as u64) >> 32) as u32;
        (hi + n) >> self.s
    }
}

/// Calls `$callback! { $ctx... field "doc", ... }` with the `i32` arguments `sample_b16` /
/// `sample_b32` take after their destination and source pointers, in order.
#[macro_export]
macro_rules! sample_fields {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            total "Destination elements (planes * p * q).",
            p "Destination rows per plane (sampled rows of an image's channel).",
            q "Destination elements per row (sampled columns).",
            p_m "FastDiv multiplier of p (its bits).",
            p_s "FastDiv shift of p.",
            q_m "FastDiv multiplier of q (its bits).",
            q_s "FastDiv shift of q.",
            h "Source rows per plane.",
            w "Source elements per row.",
            sh "Row step of the sampling grid (the convolution's vertical stride).",
            sw "Column step (the horizontal stride)."
        }
    };
}

/// Destination elements one `sample` thread copies: 16 bytes of 16-bit elements (one vector
/// store; 32-bit elements two).
pub const SAMPLE_RUN: u32 = 8;

/// Shared memory of a `sample` block for `elem_bytes`-byte elements: each warp stages its
/// `32 * SAMPLE_RUN` elements (`BLOCK_THREADS` threads a block).
pub const fn sample_smem_bytes(elem_bytes: u32) -> u32 {
    BLOCK_THREADS * SAMPLE_RUN * elem_bytes
}

crate::sample_fields!(declare_args, [
    /// NCHW planes sampled on a `(sh, sw)` grid into NCHW planes of `p x q`: destination
    /// element (plane, y, x) is source (plane, y * sh, x * sw). The input of a strided 1x1
    /// layer run at stride 1 (`Conv2d::subsampled` on the host). A thread copies
    /// [`SAMPLE_RUN`] consecutive destination elements (16-byte stores; each warp's loads span
    /// `sw` times as many bytes), each one's row and plane found by [`FastDiv`]: the general
    /// relayout's three integer divisions an element made that kernel bound by its index
    /// arithmetic here (11 us for 8,256,56,56 at stride 2 on an H100).
    Sample
]);

impl Sample {
    /// The copy of `p x q` planes sampled every `(sh, sw)` from `h x w` ones, `total`
    /// destination elements.
    #[allow(clippy::too_many_arguments)]
    pub const fn new(total: i32, p: i32, q: i32, h: i32, w: i32, sh: i32, sw: i32) -> Sample {
        let (fp, fq) = (FastDiv::new(p as u32), FastDiv::new(q as u32));
        Sample { total, p, q, p_m: fp.m as i32, p_s: fp.s as i32, q_m: fq.m as i32, q_s: fq.s as i32, h, w, sh, sw }
    }

    /// The source element of destination element `o`; `None` past the destination.
    #[inline(always)]
    pub fn source(&self, o: i32) -> Option<i32> {
        if o < 0 || o >= self.total {
            return None;
        }
        let row = FastDiv { m: self.q_m as u32, s: self.q_s as u32 }.div(o as u32) as i32;
        let x = o - row * self.q;
        let plane = FastDiv { m: self.p_m as u32, s: self.p_s as u32 }.div(row as u32) as i32;
        let y = row - plane * self.p;
        Some((plane * self.h + y * self.sh) * self.w + x * self.sw)
    }
}

/// Channels a `pad_channels_b16` destination pixel holds: one 16-byte store of 16-bit elements.
pub const PAD_CHANNELS: u32 = 8;
/// Threads per `pad_channels_b16` block (one destination pixel each).
pub const PAD_BLOCK_THREADS: u32 = 256;

/// Calls `$callback! { $ctx... field "doc", ... }` with the `i32` arguments `pad_channels_b16`
/// takes after its destination and source pointers, in order.
#[macro_export]
macro_rules! pad_channels_fields {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            pixels "Pixels (H*W) per image (grid x covers them).",
            src_batches "Images the source has: destination images past it are zeros.",
            channels "Channels the source has, at most 8: the rest of each pixel's 8 are zeros.",
            src_bs "Source elements between images (C*H*W)."
        }
    };
}

crate::pad_channels_fields!(declare_args, [
    /// NCHW with at most 8 channels to NHWC with exactly 8 (16-bit elements), zero-filled: the
    /// few-channel inputs the tensor-core kernels take padded to 8. One thread per destination
    /// pixel, one 16-byte store each, the channel planes read a warp-wide run at a time.
    /// (The tiled transpose would leave 56 of a tile's 64 columns idle here.)
    PadChannels
]);

impl PadChannels {
    /// The source offset of channel `c` of pixel `p` of image `b`, or `None` where it is zero.
    #[inline(always)]
    pub fn source(&self, b: i32, p: i32, c: i32) -> Option<i32> {
        if b < self.src_batches && c < self.channels {
            Some(b * self.src_bs + c * self.pixels + p)
        } else {
            None
        }
    }

    /// The offset of pixel `p` of image `b`'s first channel in the destination.
    #[inline(always)]
    pub fn dest(&self, b: i32, p: i32) -> i32 {
        (b * self.pixels + p) * PAD_CHANNELS as i32
    }
}

/// Calls `$callback! { $ctx... field "doc", ... }` with the `i32` arguments `expand_groups_b16`
/// and `expand_groups_b32` take after their destination and source pointers, in order.
#[macro_export]
macro_rules! expand_groups_fields {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            total "Destination elements: K * R*S * merge * group_c.",
            taps "Filter taps R*S.",
            group_c "Input channels of a source group (C / G).",
            group_k "Output channels of a source group (K / G).",
            merge "Source groups a destination group holds (G / G_run)."
        }
    };
}

crate::expand_groups_fields!(declare_args, [
    /// A grouped KRSC filter (K x R*S x C/G) as the filter of the same convolution in fewer,
    /// wider groups (`merge` source groups each, so C/G_run = merge * C/G channels a row): source
    /// group g's rows keep their values in the channels of g's place within its merged group,
    /// and are zero in the other places (a block diagonal per merged group). One thread per
    /// destination element, [`BLOCK_THREADS`] a block. The Hopper kernels run a grouped problem
    /// merged so that each group spans whole k-tiles and tile widths (`Conv2d::groups`).
    ExpandGroups
]);

impl ExpandGroups {
    /// The source offset destination element `o` copies, or `None` where it is zero (outside
    /// its row's group).
    #[inline(always)]
    pub fn source(&self, o: i32) -> Option<i32> {
        let wide = self.merge * self.group_c;
        let (row, c) = (o / wide, o % wide);
        let k = row / self.taps;
        if c / self.group_c == (k / self.group_k) % self.merge {
            Some(row * self.group_c + c % self.group_c)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_a_padded_nchw_to_nhwc_copy() {
        // Source NCHW 1x3x2x2 (strides N 12, C 4, H 2, W 1) into NHWC 1x2x2x8: memory order
        // N, H, W, C; channels 3..8 are padding.
        let r = Relayout { total: 32, e0: 1, e1: 2, e2: 2, e3: 8, s0: 12, s1: 2, s2: 1, s3: 4, l0: 1, l1: 2, l2: 2, l3: 3 };
        assert_eq!(source_offset(&r, 0), Some(0)); // (n0, h0, w0, c0)
        assert_eq!(source_offset(&r, 2), Some(8)); // c2
        assert_eq!(source_offset(&r, 3), None); // c3: padding
        assert_eq!(source_offset(&r, 8 + 1), Some(1 + 4)); // (h0, w1, c1)
        assert_eq!(source_offset(&r, 31), None);
        assert_eq!(r.to_args(), [32, 1, 2, 2, 8, 12, 2, 1, 4, 1, 2, 2, 3]);
    }

    #[test]
    fn expanded_groups_are_block_diagonal() {
        // K = 4 outputs in 4 groups of 1 (C/G = 2), 1 tap, merged in pairs: destination rows of
        // 2 * 2 channels; output 0 keeps channels 0..2, output 1 channels 2..4, output 2 (the
        // second merged group's first) channels 0..2 again.
        let e = ExpandGroups { total: 16, taps: 1, group_c: 2, group_k: 1, merge: 2 };
        let row = |k: i32| [0, 1, 2, 3].map(|c| e.source(k * 4 + c));
        assert_eq!(row(0), [Some(0), Some(1), None, None]);
        assert_eq!(row(1), [None, None, Some(2), Some(3)]);
        assert_eq!(row(2), [Some(4), Some(5), None, None]);
        assert_eq!(row(3), [None, None, Some(6), Some(7)]);
        // Two taps, two outputs a group: rows (k, rs); outputs 0 and 1 in place 0, 2 and 3 in 1.
        let e = ExpandGroups { total: 4 * 2 * 6, taps: 2, group_c: 3, group_k: 2, merge: 2 };
        let (k1_rs1, k2_rs0) = (3, 4); // rows (k, rs) = (1, 1) and (2, 0)
        assert_eq!(e.source(k1_rs1 * 6 + 2), Some(k1_rs1 * 3 + 2));
        assert_eq!(e.source(k1_rs1 * 6 + 3), None);
        assert_eq!(e.source(k2_rs0 * 6 + 3), Some(k2_rs0 * 3));
        assert_eq!(e.source(k2_rs0 * 6 + 2), None);
    }

    #[test]
    fn a_transpose_pads_and_crops() {
        // Source: 1 batch of 3 rows x 5 columns (row stride 5); destination: 2 batches of 4 rows
        // x 4 columns (row stride 4); destination (b, y, x) = source (b, x, y) for x < 3, y < 4.
        let t = Transpose { rows: 4, cols: 4, src_batches: 1, valid_rows: 4, valid_cols: 3, src_ld: 5, src_bs: 15, dst_ld: 4, dst_bs: 16, ..Transpose::UNSAMPLED };
        assert_eq!(t.source(0, 0, 0), Some(0));
        assert_eq!(t.source(0, 1, 0), Some(1)); // along a source row
        assert_eq!(t.source(0, 0, 2), Some(10)); // the third source row
        assert_eq!(t.source(0, 0, 3), None); // a fourth source row does not exist: zero
        assert_eq!(t.source(0, 3, 2), Some(13));
        assert_eq!(t.source(1, 0, 0), None); // a second batch does not exist: zero
        assert_eq!(t.dest(1, 2, 3), 16 + 8 + 3);
        assert_eq!(transpose_smem_bytes(2), 64 * 132);
        // Unsampled, the sampled entries' mapping is the identity.
        for y in [0, 1, 3, 1000, i32::MAX - 1] {
            assert_eq!(t.sampled_pixel(y), y);
        }
        assert_eq!(t.source_sampled(0, 3, 2), t.source(0, 3, 2));
    }

    #[test]
    fn a_sampled_transpose_reads_the_grid() {
        // NCHW 2 channels of 5 x 7 pixels sampled every (2, 3): 3 x 3 pixels, NHWC.
        let (h, w, sh, sw) = (5, 7, 2, 3);
        let (p, q) = (3, 3);
        let t = Transpose { rows: p * q, cols: 2, src_batches: 1, valid_rows: p * q, valid_cols: 2, src_ld: h * w, src_bs: 2 * h * w, dst_ld: 2, dst_bs: 2 * p * q, ..Transpose::UNSAMPLED }
            .with_sampling(q, sh * w, sw);
        for y in 0..p * q {
            let (py, qx) = (y / q, y % q);
            for c in 0..2 {
                assert_eq!(t.source_sampled(0, y, c), Some(c * h * w + py * sh * w + qx * sw), "pixel {y}, channel {c}");
            }
        }
        assert_eq!(t.source_sampled(0, p * q, 0), None);
    }

    #[test]
    fn fast_division_matches_integer_division() {
        // Every divisor to 3000 and the powers of two, numerators around its multiples and
        // spread to 2^31 - 1 (an LCG's draws).
        let mut x = 0x9E37_79B9u32;
        let divisors = (1..=3000u32).chain((0..31).map(|k| 1u32 << k)).chain([(1 << 31) - 1, 1_000_003, 802_816]);
        for d in divisors {
            let f = FastDiv::new(d);
            for k in [0u32, 1, 2, 3, 1000] {
                for n in [k.saturating_mul(d).saturating_sub(1), k.saturating_mul(d), k.saturating_mul(d).saturating_add(1)] {
                    if n < 1 << 31 {
                        assert_eq!(f.div(n), n / d, "{n} / {d}");
                    }
                }
            }
            for _ in 0..64 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let n = x >> 1;
                assert_eq!(f.div(n), n / d, "{n} / {d}");
            }
        }
    }
}
