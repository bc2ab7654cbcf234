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

/// The `i32` arguments after the destination and source pointers, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relayout {
    /// Destination elements.
    pub total: i32,
    /// Destination extents in its memory order, slowest first.
    pub ext: [i32; 4],
    /// Source element stride of the logical axis at each of those positions.
    pub stride: [i32; 4],
    /// Source extent of that axis: destination coordinates at or past it are zeros.
    pub limit: [i32; 4],
}

impl Relayout {
    /// The 13 arguments in launch order.
    pub const fn to_args(&self) -> [i32; 13] {
        let (e, s, l) = (self.ext, self.stride, self.limit);
        [self.total, e[0], e[1], e[2], e[3], s[0], s[1], s[2], s[3], l[0], l[1], l[2], l[3]]
    }
}

/// The source element destination element `o` copies, or `None` where it is padding. Every
/// index is a constant, so the kernel keeps all of it in registers.
#[inline(always)]
pub fn source_offset(ext: [i32; 4], stride: [i32; 4], limit: [i32; 4], o: i32) -> Option<i32> {
    let c3 = o % ext[3];
    let r = o / ext[3];
    let c2 = r % ext[2];
    let r = r / ext[2];
    let c1 = r % ext[1];
    let c0 = r / ext[1];
    if c0 >= limit[0] || c1 >= limit[1] || c2 >= limit[2] || c3 >= limit[3] {
        None
    } else {
        Some(c0 * stride[0] + c1 * stride[1] + c2 * stride[2] + c3 * stride[3])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_a_padded_nchw_to_nhwc_copy() {
        // Source NCHW 1x3x2x2 (strides N 12, C 4, H 2, W 1) into NHWC 1x2x2x8: memory order
        // N, H, W, C; channels 3..8 are padding.
        let ext = [1, 2, 2, 8];
        let stride = [12, 2, 1, 4];
        let limit = [1, 2, 2, 3];
        assert_eq!(source_offset(ext, stride, limit, 0), Some(0)); // (n0, h0, w0, c0)
        assert_eq!(source_offset(ext, stride, limit, 2), Some(8)); // c2
        assert_eq!(source_offset(ext, stride, limit, 3), None); // c3: padding
        assert_eq!(source_offset(ext, stride, limit, 8 + 1), Some(1 + 4)); // (h0, w1, c1)
        assert_eq!(source_offset(ext, stride, limit, 31), None);
        assert_eq!(Relayout { total: 32, ext, stride, limit }.to_args(), [32, 1, 2, 2, 8, 12, 2, 1, 4, 1, 2, 2, 3]);
    }
}
