//! Plan for `wmma_nhwcnc`: the tensor-core implicit GEMM on the blocked layouts (see
//! `kernels_gpu::tensor_core::nhwcnc`). It runs `wmma_nhwc`'s mainloop and tiles with blocked
//! addressing, on a GEMM of the same size (M = N*P*Q output pixels, N = K output channels,
//! reduction R*S*C), so the tile choice is `wmma_nhwc`'s ([`super::nhwc`] has the cost model
//! and every tile's timings on plain NHWC).
//!
//! Every tile's timings on the blocked layouts (H200, before the whole-tile shared layout) are
//! in BENCHMARKS.md ("Figures moved out of code comments"): the plan's picks were the fastest
//! but on the smallest shape, where the blocked layouts' then extra L2 requests favoured bigger
//! tiles.

use super::nhwc::{plan_tiles, tile_plan, Layouts};
use crate::plan::{DeviceModel, LaunchPlan};
use crate::{Conv2d, Error, Result};
use crate::plan::{Family, KernelDesc};
use crate::{Algorithm, Layout};
use crate::dtype::DType;

pub fn plan(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_layouts(problem, device, Layouts::Blocked)
}

/// The plan of the bf16 entries.
pub fn plan_bf16(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_layouts(problem, device, Layouts::BlockedBf16)
}

fn plan_layouts(problem: &Conv2d, device: &DeviceModel, family: Layouts) -> Result<LaunchPlan> {
    problem.validate()?;
    let p = problem;
    if p.n % 16 != 0 || p.c % 16 != 0 || p.k % 16 != 0 {
        return Err(Error::Unsupported {
            algorithm: family.algorithm(),
            reason: format!(
                "its blocked layouts need N, C and K to be multiples of 16 (got N={}, C={}, K={}); \
                 use wmma_nhwc (plain NHWC, C and K multiples of 8)",
                p.n, p.c, p.k
            ),
        });
    }
    plan_tiles(p, device, family)
}

/// The launch of entry `kernel` (one of [`kernel_names`]) on `problem`, whatever [`plan`]
/// would pick: for timing and testing every tile. Same checks as [`plan`].
pub fn plan_for_kernel(problem: &Conv2d, device: &DeviceModel, kernel: &str) -> Result<LaunchPlan> {
    plan(problem, device)?;
    tile_plan(problem, device, kernel, Layouts::Blocked)
}

/// Every entry point a plan may name.
pub fn kernel_names() -> Vec<&'static str> {
    Layouts::Blocked.kernel_names()
}

/// Every bf16 entry point [`plan_bf16`] may name.
pub fn kernel_names_bf16() -> Vec<&'static str> {
    Layouts::BlockedBf16.kernel_names()
}

/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::WmmaNhwcnc,
    name: Layouts::Blocked.algorithm(),
    family: Family::TensorCore,
    summary: "family 3 step 1: mma.sync implicit GEMM on the blocked NHWC16n16c layouts",
    dtypes: &[DType::F16, DType::BF16],
    layouts: (Layout::Nhwc16n16c, Layout::Hwcn16n16c, Layout::Nhwc16n16c),
    multiples: (16, 16, 16),
    precision: crate::Precision::Fma,
    planner: |_, p, dtype, d| if dtype == DType::BF16 { plan_bf16(p, d) } else { plan(p, d) },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tensor_core::nhwc as wmma_nhwc;
    use crate::plan::tensor_core::nhwc::tests::assert_covers;

    use crate::device::tests::h100;

    #[test]
    fn the_same_tiles_as_wmma_nhwc_on_the_same_gemm() {
        let shapes = [
            Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1),
            Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1),
            Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1),
            Conv2d::new(256, 32, 28, 28, 256, 3, 3).with_pad(1),
            Conv2d::new(16, 48, 9, 11, 80, 3, 3).with_pad(1),
            Conv2d::new(48, 16, 13, 7, 144, 7, 7).with_pad(3).with_stride(2),
            Conv2d::new(32, 32, 20, 24, 16, 3, 3).with_pad(2).with_dilation(2),
            Conv2d::new(16, 16, 1, 1, 16, 1, 1),
        ];
        for p in &shapes {
            let plan = super::plan(p, &h100()).unwrap_or_else(|e| panic!("{p}: {e}"));
            let nhwc = wmma_nhwc::plan(p, &h100()).unwrap();
            assert_eq!(plan.kernel.replace("wmma_nhwcnc_", ""), nhwc.kernel.replace("wmma_nhwc_", ""), "{p}");
            assert_eq!((plan.grid, plan.block, plan.shared_bytes, plan.dtype), (nhwc.grid, nhwc.block, nhwc.shared_bytes, nhwc.dtype));
            assert!(kernel_names().contains(&plan.kernel));
            assert_covers(p, &plan);
        }
    }

    #[test]
    fn speed_target_gets_the_large_tile() {
        let p = Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1);
        let plan = super::plan(&p, &h100()).unwrap();
        assert_eq!((plan.kernel, plan.grid.0), ("wmma_nhwcnc_128x256k64", 784));
    }

    #[test]
    fn every_entry_can_be_planned() {
        let p = Conv2d::new(16, 32, 13, 11, 272, 3, 3).with_pad(1);
        for name in kernel_names() {
            assert!(name.starts_with("wmma_nhwcnc_"), "{name}");
            let plan = plan_for_kernel(&p, &h100(), name).unwrap();
            assert_eq!(plan.kernel, name);
            assert_covers(&p, &plan);
        }
        assert!(matches!(plan_for_kernel(&p, &h100(), "wmma_nhwc_64x64"), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn sizes_not_multiples_of_16_point_to_wmma_nhwc() {
        for p in [Conv2d::new(8, 16, 8, 8, 16, 3, 3), Conv2d::new(16, 24, 8, 8, 16, 3, 3), Conv2d::new(16, 16, 8, 8, 40, 3, 3)] {
            match super::plan(&p, &h100()) {
                Err(Error::Unsupported { algorithm: "wmma_nhwcnc", reason }) => assert!(reason.contains("wmma_nhwc "), "{reason}"),
                other => panic!("{p}: expected Unsupported, got {other:?}"),
            }
        }
    }

    #[test]
    fn too_little_shared_memory_is_unsupported() {
        let tiny = DeviceModel { smem_per_block: 16 * 1024, ..h100() };
        match super::plan(&Conv2d::new(16, 16, 8, 8, 16, 3, 3), &tiny) {
            Err(Error::Unsupported { algorithm: "wmma_nhwcnc", .. }) => {}
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }

    #[test]
    fn invalid_problems_are_rejected_before_planning() {
        assert!(matches!(super::plan(&Conv2d::new(16, 16, 4, 4, 16, 7, 7), &h100()), Err(Error::FilterLargerThanPaddedInput { .. })));
    }
}
