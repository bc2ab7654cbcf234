//! Plan for `direct_naive`: one thread per output element, 1-D grid.

use super::{div_ceil_u32, DeviceLimits, LaunchPlan};
use crate::dtype::DType;
use crate::{Conv2d, Result};

/// Must equal `kernels_gpu::direct::naive::BLOCK_THREADS`.
const BLOCK_THREADS: usize = 256;

pub fn plan(problem: &Conv2d, _limits: &DeviceLimits) -> Result<LaunchPlan> {
    problem.validate()?;
    Ok(LaunchPlan {
        kernel: "direct_naive",
        grid: (div_ceil_u32(problem.output_len(), BLOCK_THREADS), 1, 1),
        block: (BLOCK_THREADS as u32, 1, 1),
        shared_bytes: 0,
        dtype: DType::F32,
    })
}
