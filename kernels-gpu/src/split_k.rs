//! The second half of step 8 (split-K, `convrs_spec::split_k`): adds the fp32 partial sums of
//! the grid's slices, in slice order (so the result does not depend on timing), and writes
//! each output once, rounded to the output's type.

use convrs_spec::split_k::{SUM_THREADS, SUM_VEC};

use crate::prelude::matrix::{pack_16x2, store_global_f32x2};
use crate::prelude::*;

/// Thread `blockIdx.x * SUM_THREADS + threadIdx.x`'s [`SUM_VEC`] outputs from `len` elements
/// on: their sums over the `splits` slices of `ws` (slice z at `z * len`), written by `store`.
///
/// # Safety
/// `ws` holds `splits * len` fp32 values, 16-byte aligned, that nothing writes during the
/// launch; `len` is a multiple of [`SUM_VEC`].
#[inline(always)]
unsafe fn sum(ws: *const f32, len: i32, splits: i32, store: impl FnOnce(usize, [f32; SUM_VEC])) {
    let at = (block_x() as u32 * SUM_THREADS + thread_x() as u32) as usize * SUM_VEC;
    if at >= len as usize {
        return;
    }
    let mut acc = [0f32; SUM_VEC];
    let mut z = 0;
    while z < splits as usize {
        // SAFETY: at + 4 <= len (len a multiple of 4), inside slice z; 16-byte aligned.
        let v = unsafe { load_global_nc_f32x4(ws.add(z * len as usize + at)) };
        unroll!(4: SUM_VEC, i => { acc[i] += v.0[i] });
        z += 1;
    }
    store(at, acc);
}

/// Declares the entry writing element type `$out` (`f32`, or 16-bit with `$bf16`).
macro_rules! entry {
    ($name:ident, f32) => {
        /// Sums split-K slices into fp32 outputs (see the module docs).
        ///
        /// # Safety
        /// As `sum`; `y` holds `len` fp32 values, 16-byte aligned, no other thread's.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(y: *mut f32, ws: *const f32, len: i32, splits: i32) {
            // SAFETY: as the host guarantees; each thread writes its own 4 outputs.
            unsafe { sum(ws, len, splits, |at, v| store_global_f32x4(y.add(at), F32x4(v))) }
        }
    };
    ($name:ident, $bf16:literal) => {
        /// Sums split-K slices into 16-bit outputs, rounded to nearest even (see the module docs).
        ///
        /// # Safety
        /// As `sum`; `y` holds `len` 16-bit values, 8-byte aligned, no other thread's.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(y: *mut u16, ws: *const f32, len: i32, splits: i32) {
            // SAFETY: as the host guarantees; each thread writes its own 4 outputs as one 8-byte
            // store (the packed bits pass through the f32 registers unchanged).
            unsafe {
                sum(ws, len, splits, |at, v| {
                    let (lo, hi) = (pack_16x2::<$bf16>(v[0], v[1]), pack_16x2::<$bf16>(v[2], v[3]));
                    store_global_f32x2(y.add(at) as *mut f32, f32::from_bits(lo), f32::from_bits(hi))
                })
            }
        }
    };
}

entry!(split_k_sum_f32, f32);
entry!(split_k_sum_f16, false);
entry!(split_k_sum_bf16, true);
