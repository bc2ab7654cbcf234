//! The kernel argument convention: every entry point takes its buffer pointers, then the
//! problem's geometry as 17 `i32`s in the order of [`shape_fields!`](crate::shape_fields), then
//! the fused epilogue's arguments in the order of [`epilogue_fields!`](crate::epilogue_fields).

/// Calls `$callback! { $ctx... field "doc", ... }` with the fields of [`ConvShape`] in the order
/// the kernels take them as arguments. The kernel crate's `conv_kernel!` declares one `i32`
/// parameter per field from it; this crate declares [`ConvShape`] from it.
#[macro_export]
macro_rules! shape_fields {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)*
            n "Batch size N.",
            c "Input channels C.",
            h "Input height H.",
            w "Input width W.",
            k "Output channels K.",
            r "Filter height R.",
            s "Filter width S.",
            p "Output height P.",
            q "Output width Q.",
            pad_h "Zero padding above and below.",
            pad_w "Zero padding left and right.",
            stride_h "Vertical stride.",
            stride_w "Horizontal stride.",
            dil_h "Vertical dilation.",
            dil_w "Horizontal dilation.",
            groups "Groups G: G divides C and K, and output channel k reads input channels (k / (K/G)) * C/G .. + C/G. 1 for a dense convolution. The Hopper im2col kernels read it (each tile's output channels lie in one group, its reduction over that group's channels); the depthwise kernels know G = C, and every other kernel is planned for G = 1 only.",
            y_bits "Bits of one output element: 32 (fp32), or 16 (the input's own 16-bit type, rounded to nearest even from the fp32 accumulators). Only the tensor-core kernels write 16-bit outputs; the host plans every other kernel with 32, which those kernels assume."
        }
    };
}

macro_rules! declare_conv_shape {
    ($($field:ident $doc:literal),*) => {
        /// The conv2d problem as the kernels see it: NCHW-style extents, output size, and the
        /// padding/stride/dilation per spatial axis. The host validates that every index of the
        /// problem fits in `i32` before it launches, so kernels use 32-bit index arithmetic.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct ConvShape {
            $(#[doc = $doc] pub $field: i32,)*
            /// The fused epilogue (its own arguments, after these 17: [`crate::epilogue_fields!`]).
            pub ep: crate::epilogue::EpilogueArgs,
        }

        impl ConvShape {
            /// Names of the fields in argument order.
            pub const NAMES: [&'static str; [$(stringify!($field)),*].len()] = [$(stringify!($field)),*];
            /// Number of `i32` shape arguments of every entry point.
            pub const LEN: usize = Self::NAMES.len();

            /// The shape values in argument order: what the host pushes after the pointers
            /// (the epilogue's follow them).
            pub const fn to_args(self) -> [i32; Self::LEN] {
                [$(self.$field),*]
            }
        }
    };
}
crate::shape_fields!(declare_conv_shape);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_follow_the_field_order() {
        let s = ConvShape { n: 1, c: 2, h: 3, w: 4, k: 5, r: 6, s: 7, p: 8, q: 9, pad_h: 10, pad_w: 11, stride_h: 12, stride_w: 13, dil_h: 14, dil_w: 15, groups: 16, y_bits: 17, ep: crate::epilogue::EpilogueArgs::NONE };
        assert_eq!(s.to_args(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
        assert_eq!(ConvShape::LEN, 17);
        assert_eq!(ConvShape::NAMES[9..11], ["pad_h", "pad_w"]);
    }
}
