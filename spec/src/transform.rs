//! The layout transform kernels (`relayout_b16`, `relayout_b32`, by element size): copy a 4-D
//! tensor from one plain layout (NCHW, NHWC, HWCN) to another, zero-filling or cropping along
//! its axes, so device tensors reach a kernel's layout (and its channel multiples) and its
//! output comes back in the caller's, without a trip through the host.
//!
//! One thread per destination element, walked in the destination's memory order (coalesced
//! writes). The host describes the copy in the destination's memory order: per position
//! (slowest first) its extent, the source's element stride along that logical axis, and the
//! source's extent there (coordinates past it are padding).

/// Threads per block.
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

macro_rules! declare_relayout {
    ($($field:ident $doc:literal),*) => {
        /// One layout copy as the transform kernels see it (see the module docs).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Relayout {
            $(#[doc = $doc] pub $field: i32,)*
        }

        impl Relayout {
            /// The values in argument order: what the host pushes after the pointers.
            pub const fn to_args(&self) -> [i32; [$(stringify!($field)),*].len()] {
                [$(self.$field),*]
            }
        }
    };
}
crate::relayout_fields!(declare_relayout);

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
}
