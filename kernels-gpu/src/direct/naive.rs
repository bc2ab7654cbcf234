//! Step 1: one output element per thread. The baseline every faster kernel is checked against
//! on the GPU, and the kernel that takes every shape the host accepts.

use convrs_spec::direct::naive::BLOCK_THREADS;

use crate::prelude::*;

/// # Safety
/// `x`, `w`, `y` hold N*C*H*W, K*C*R*S and N*K*P*Q `f32`s; `y` does not alias the inputs.
#[inline(always)]
pub unsafe fn conv(x: *const f32, w: *const f32, y: *mut f32, sh: ConvShape) {
    let total = sh.n * sh.k * sh.p * sh.q;
    let idx = block_x() * BLOCK_THREADS as i32 + thread_x();
    if idx >= total {
        return;
    }
    let ox = idx % sh.q;
    let oy = (idx / sh.q) % sh.p;
    let ok = (idx / (sh.q * sh.p)) % sh.k;
    let on = idx / (sh.q * sh.p * sh.k);
    let mut acc = 0.0f32;
    for ic in 0..sh.c {
        let x_plane = x.wrapping_add(((on * sh.c + ic) * sh.h * sh.w) as usize);
        let w_taps = w.wrapping_add(((ok * sh.c + ic) * sh.r * sh.s) as usize);
        for ry in 0..sh.r {
            let iy = oy * sh.stride_h - sh.pad_h + ry * sh.dil_h;
            if iy < 0 || iy >= sh.h {
                continue;
            }
            for rx in 0..sh.s {
                let ix = ox * sh.stride_w - sh.pad_w + rx * sh.dil_w;
                if ix < 0 || ix >= sh.w {
                    continue;
                }
                // SAFETY: iy, ix are inside the plane and ry, rx inside the filter, per the checks above.
                let (xv, wv) = unsafe {
                    (load_global_nc_f32(x_plane.add((iy * sh.w + ix) as usize)), load_global_nc_f32(w_taps.add((ry * sh.s + rx) as usize)))
                };
                acc = fma(xv, wv, acc);
            }
        }
    }
    // SAFETY: idx < N*K*P*Q, the size of `y`.
    unsafe { *y.add(idx as usize) = acc };
}

/// Declares the entry point named by `convrs_spec::direct_naive_entry!`.
macro_rules! entry {
    ($name:ident) => {
        crate::conv_kernel!(
            /// One output element per thread (see [`conv`]).
            fn $name(x: *const f32, w: *const f32, y: *mut f32) => conv
        );
    };
}
convrs_spec::direct_naive_entry!(entry);
