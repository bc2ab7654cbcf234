//! Layout transforms on the device: the tensor copies that bring device tensors to a kernel's
//! layout (zero-padded to its channel multiples) and its output back to the caller's layout.
//! The index math is `convrs_spec::transform::source_offset`, which the host's tests replay.

use convrs_spec::transform::{source_offset, Relayout, BLOCK_THREADS};

use crate::prelude::*;

/// Copies destination element `blockIdx.x * BLOCK_THREADS + threadIdx.x` from its source
/// element, or writes zero where it is padding.
///
/// # Safety
/// `dst` holds `r.total` elements; every source offset `source_offset` yields for them lies in
/// `src`; the two do not overlap.
#[inline(always)]
unsafe fn relayout<T: Copy + Default>(dst: *mut T, src: *const T, r: Relayout) {
    let o = block_x() * BLOCK_THREADS as i32 + thread_x();
    if o >= r.total {
        return;
    }
    // SAFETY: o < total, and the source offset is in `src`, as the caller guarantees.
    unsafe { *dst.add(o as usize) = source_offset(&r, o).map_or(T::default(), |s| *src.add(s as usize)) };
}

/// Declares a transform entry for elements of type `$t`, its `i32` parameters from
/// `convrs_spec::relayout_fields!`.
macro_rules! entry {
    ($name:ident, $t:ty) => {
        convrs_spec::relayout_fields!(entry, [@params $name, $t]);
    };
    ([@params $name:ident, $t:ty] $($field:ident $doc:literal),*) => {
        /// A layout copy of elements of this size (see the module docs).
        ///
        /// # Safety
        /// As [`relayout`], with the arguments of `convrs_spec::transform::Relayout::to_args`.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(dst: *mut $t, src: *const $t, $($field: i32),*) {
            // SAFETY: the host launches this with buffers and arguments as documented.
            unsafe { relayout(dst, src, Relayout { $($field),* }) }
        }
    };
}

entry!(relayout_b16, u16);
entry!(relayout_b32, u32);
