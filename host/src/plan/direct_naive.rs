//! Plan for `direct_naive`: one thread per output element, 1-D grid.

use convrs_spec::direct::naive::{BLOCK_THREADS, ENTRY};

use super::{div_ceil_u32, DeviceLimits, LaunchPlan};
use crate::dtype::DType;
use crate::{Conv2d, Result};

pub fn plan(problem: &Conv2d, _limits: &DeviceLimits) -> Result<LaunchPlan> {
    problem.validate()?;
    Ok(LaunchPlan {
        kernel: ENTRY,
        grid: (div_ceil_u32(problem.output_len(), BLOCK_THREADS as usize), 1, 1),
        block: (BLOCK_THREADS, 1, 1),
        shared_bytes: 0,
        dtype: DType::F32,
    })
}
