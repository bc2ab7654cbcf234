//! Layout transforms on the device: the tensor copies that bring device tensors to a kernel's
//! layout (zero-padded to its channel multiples) and its output back to the caller's layout.
//! The index math is `convrs_spec::transform::source_offset`, which the host's tests replay.

use convrs_spec::transform::{source_offset, BLOCK_THREADS};

use crate::prelude::*;

/// Copies destination element `blockIdx.x * BLOCK_THREADS + threadIdx.x` from its source
/// element, or writes zero where it is padding.
///
/// # Safety
/// `dst` holds `total` elements; every source offset `source_offset` yields for them lies in
/// `src`; the two do not overlap.
#[inline(always)]
unsafe fn relayout<T: Copy + Default>(dst: *mut T, src: *const T, total: i32, ext: [i32; 4], stride: [i32; 4], limit: [i32; 4]) {
    let o = block_x() * BLOCK_THREADS as i32 + thread_x();
    if o >= total {
        return;
    }
    // SAFETY: o < total, and the source offset is in `src`, as the caller guarantees.
    unsafe { *dst.add(o as usize) = source_offset(ext, stride, limit, o).map_or(T::default(), |s| *src.add(s as usize)) };
}

macro_rules! entry {
    ($name:ident, $t:ty) => {
        /// A layout copy of elements of this size (see the module docs).
        ///
        /// # Safety
        /// As [`relayout`], with the arguments of `convrs_spec::transform::Relayout::to_args`.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            dst: *mut $t,
            src: *const $t,
            total: i32,
            e0: i32,
            e1: i32,
            e2: i32,
            e3: i32,
            s0: i32,
            s1: i32,
            s2: i32,
            s3: i32,
            l0: i32,
            l1: i32,
            l2: i32,
            l3: i32,
        ) {
            // SAFETY: the host launches this with buffers and arguments as documented.
            unsafe { relayout(dst, src, total, [e0, e1, e2, e3], [s0, s1, s2, s3], [l0, l1, l2, l3]) }
        }
    };
}

entry!(relayout_b16, u16);
entry!(relayout_b32, u32);
