//! Plan for `tiled_nchw` (kernels-gpu/src/tiled/nchw.rs): the implicit GEMM of M = K output
//! channels by N*P*Q output positions. The tile shape comes from the same list and model as
//! `tiled_hwcn` (`super::hwcn::choose`, `super::hwcn::tile_plan`).
//!
//! Launch: 1-D grid of `ceil(K/BM) * ceil(N*P*Q/BN)` blocks (channel tile fastest), 1-D block
//! of `(BM/TM) * (BN/TN)` threads, `convrs_spec::tiled::smem_bytes` of dynamic shared memory
//! (`STAGES * BK * (BM + 4 + BN) * 4` bytes).

use super::hwcn::tile_plan;
use crate::plan::{DeviceModel, LaunchPlan};
use crate::{Conv2d, Result};
use crate::plan::{Family, KernelDesc};
use crate::{Algorithm, Layout};
use crate::dtype::DType;

pub fn plan(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    problem.validate()?;
    let (out_p, out_q) = problem.output_hw();
    // The reduction runs over the filter's own (c, r, s) order in steps of 8 values, with no
    // padding per tap (unlike tiled_hwcn's channel steps per tap): small C wastes nothing.
    let steps = (problem.c * problem.r * problem.s).div_ceil(8);
    tile_plan("tiled_nchw", problem.k, problem.n * out_p * out_q, 1, steps, device)
}

/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::TiledNchw,
    name: "tiled_nchw",
    family: Family::Tiled,
    summary: "family 2 step 2: the same mainloop as an implicit GEMM on NCHW",
    dtypes: &[DType::F32],
    layouts: (Layout::Nchw, Layout::Nchw, Layout::Nchw),
    multiples: (1, 1, 1),
    precision: crate::Precision::Fma,
    planner: |_, p, _, d| plan(p, d),
};

#[cfg(test)]
mod tests {
    use super::super::hwcn::{thread_output, TILES};
    use super::*;
    use crate::Error;

    use crate::device::tests::h100;

    /// Replays block -> (channel tile, column tile) -> thread -> register and checks that every
    /// output is written exactly once and nothing else is.
    fn assert_covers_exactly_once(p: &Conv2d, plan: &LaunchPlan) {
        let t = TILES.into_iter().find(|t| t.nchw == plan.kernel).unwrap();
        let (out_p, out_q) = p.output_hw();
        let cols = p.n * out_p * out_q;
        let kt = p.k.div_ceil(t.bm);
        assert_eq!(plan.grid, ((kt * cols.div_ceil(t.bn)) as u32, 1, 1));
        let mut hits = vec![0u8; p.output_len()];
        for b in 0..plan.grid.0 as usize {
            let (bk, bj) = (b % kt, b / kt);
            for tid in 0..t.threads() {
                for i in 0..t.tm {
                    for j in 0..t.tn {
                        let (row, col) = thread_output(&t, tid, i, j);
                        let (k, jg) = (bk * t.bm + row, bj * t.bn + col);
                        if k < p.k && jg < cols {
                            let (n, pix) = (jg / (out_p * out_q), jg % (out_p * out_q));
                            hits[(n * p.k + k) * out_p * out_q + pix] += 1; // NKPQ
                        }
                    }
                }
            }
        }
        assert!(hits.iter().all(|&h| h == 1), "{p}: {} outputs not written exactly once", hits.iter().filter(|&&h| h != 1).count());
    }

    #[test]
    fn target_shape_gets_the_largest_tile() {
        let p = Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1);
        let plan = super::plan(&p, &h100()).unwrap();
        assert_eq!(plan.kernel, "tiled_nchw_256x128", "{plan:?}");
        assert_eq!(plan.grid.0, 2 * 392);
        assert_eq!(plan.block.0, 512);
    }

    #[test]
    fn issue_shapes_get_the_tiles_that_measured_fastest() {
        // The tiles that measured fastest on these shapes on the H100 (BENCHMARKS.md).
        let plan = super::plan(&Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1), &h100()).unwrap();
        assert_eq!(plan.kernel, "tiled_nchw_64x128", "{plan:?}");
        let plan = super::plan(&Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1), &h100()).unwrap();
        assert_eq!(plan.kernel, "tiled_nchw_128x32", "{plan:?}");
    }

    #[test]
    fn plans_cover_every_output_once() {
        let mut shapes = vec![
            Conv2d::new(1, 1, 1, 1, 1, 1, 1),
            Conv2d::new(3, 7, 31, 29, 5, 1, 1).with_stride(2),
            Conv2d::new(2, 3, 33, 35, 9, 7, 7).with_pad(3),
            Conv2d::new(2, 4, 40, 41, 6, 3, 3).with_pad(2).with_dilation(2),
            Conv2d::new(4, 64, 14, 14, 200, 3, 3).with_pad(1),
            Conv2d::new(1, 6, 96, 64, 6, 6, 6),
        ];
        for i in 0..40usize {
            shapes.push(Conv2d::new(1 + i % 4, 1 + i % 5, 2 + i % 9, 3 + i % 11, 1 + i * 13 % 140, 1 + i % 2, 1 + i % 3).with_pad(i % 2));
        }
        for p in shapes.iter().filter(|p| p.validate().is_ok()) {
            let plan = super::plan(p, &h100()).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(plan.kernel.starts_with("tiled_nchw_"));
            assert_covers_exactly_once(p, &plan);
        }
    }

    #[test]
    fn invalid_problems_are_rejected_before_planning() {
        assert!(matches!(super::plan(&Conv2d::new(0, 1, 4, 4, 1, 1, 1), &h100()), Err(Error::ZeroSize { .. })));
        let tiny = DeviceModel { smem_per_block: 1024, ..h100() };
        assert!(matches!(super::plan(&Conv2d::new(1, 1, 8, 8, 1, 3, 3), &tiny), Err(Error::Unsupported { algorithm: "tiled_nchw", .. })));
    }
}
