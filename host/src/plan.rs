//! Launch plans: for each kernel, the grid, block and shared memory a problem needs, or the
//! reason the kernel cannot take it. Pure functions of the problem, so they are tested on CPU.

pub mod direct_naive;
pub mod model;
pub mod direct_smem;
pub mod tiled_hwcn;
pub mod tiled_nchw;
pub mod wmma_nhwc;
pub mod wmma_nhwcnc;

use crate::dtype::DType;

/// How to launch one kernel on one problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The PTX entry point's name.
    pub kernel: &'static str,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    /// Dynamic shared memory bytes per block.
    pub shared_bytes: u32,
    /// The element type of the input and filter buffers the kernel reads (outputs are fp32).
    pub dtype: DType,
}

/// Device limits a plan must respect (read from the device; fixed values in CPU tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// The most dynamic shared memory one block may opt in to (227 KiB on H100).
    pub max_shared_bytes_per_block: u32,
    pub max_grid_y: u32,
    pub max_grid_z: u32,
}

impl DeviceLimits {
    /// Limits of sm_80 and later GPUs; plans made with these fit any device convrs supports
    /// except for shared memory, which is read from the device at run time.
    pub const SM80: DeviceLimits = DeviceLimits { max_shared_bytes_per_block: 163 * 1024, max_grid_y: 65535, max_grid_z: 65535 };
}

/// `ceil(a / b)` for launch arithmetic.
pub(crate) fn div_ceil_u32(a: usize, b: usize) -> u32 {
    a.div_ceil(b).try_into().unwrap_or(u32::MAX)
}
