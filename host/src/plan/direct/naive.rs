//! Plan for `direct_naive`: one thread per output element, 1-D grid.

use convrs_spec::direct::naive::{BLOCK_THREADS, ENTRY};

use crate::plan::model::LAUNCH_US;
use crate::plan::{div_ceil_u32, DeviceModel, LaunchPlan};
use crate::dtype::DType;
use crate::{Conv2d, Result};
use crate::plan::{Family, KernelDesc};
use crate::{Algorithm, Layout};

/// The fraction of the fp32 FMA peak it reaches: each thread re-reads its C*R*S inputs and taps
/// from L1/L2 with no reuse in registers (H100: 1.03 to 1.44 TFLOP/s over the four seed shapes,
/// BENCHMARKS.md 2026-11-22, against a 66.9 TFLOP/s peak).
const PEAK_FRACTION: f64 = 0.017;

pub fn plan(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    problem.validate()?;
    Ok(LaunchPlan::new(ENTRY, (div_ceil_u32(problem.output_len(), BLOCK_THREADS as usize), 1, 1), (BLOCK_THREADS, 1, 1), 0, DType::F32, LAUNCH_US + problem.flops() / (device.fp32_tflops * 1e6 * PEAK_FRACTION)))
}
/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::DirectNaive,
    name: ENTRY,
    family: Family::Direct,
    summary: "family 1 step 1: one output element per thread",
    dtypes: &[DType::F32],
    layouts: (Layout::Nchw, Layout::Nchw, Layout::Nchw),
    multiples: (1, 1, 1),
    precision: crate::Precision::Fma,
    planner: |_, p, _, d| plan(p, d),
};
