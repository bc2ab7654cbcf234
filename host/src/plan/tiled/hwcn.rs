//! Plan for `tiled_hwcn` (kernels-gpu/src/tiled/hwcn.rs), and the tile-shape choice both tiled
//! kernels share (`TILES`, `choose`; `tiled_nchw`'s plan uses them too).
//!
//! Both kernels are GEMMs over a block tile of BM output channels x BN columns (HWCN: batch
//! entries of one output pixel; NCHW: output positions n*P*Q). The plan picks one of the
//! compiled tile shapes by a small model of the device (its SMs, registers, shared memory): modelled time = waves of
//! resident blocks x (padded FMAs per block) / (tile efficiency x latency hiding). Padding is
//! what the tile wastes past K and past the column count; tile efficiency (per kernel) is the
//! shape's measured speed relative to the best shape on 256,256,14,14 -> 512, 3x3 (H100, where
//! every shape fills the GPU): it folds in FFMAs per shared load and the copy instructions per
//! FFMA, which differ between the kernels (NCHW's im2col copies cost ~20 instructions per value,
//! so its larger 256x128 tile, with fewer copied values per FFMA, wins there); latency hiding
//! grows with resident warps (registers from ptxas, shared memory, 2048 threads per SM).
//!
//! Measured on an H100 (`convrs run`, median of 20), 256,256,14,14 -> 512, 3x3 pad 1, ms:
//!
//! | tile | 128x128 | 128x128 BK16 | 256x128 | 128x64 | 64x128 | 64x64 | 128x32 | 32x128 |
//! | --- | --- | --- | --- | --- | --- | --- | --- | --- |
//! | hwcn | 2.50 | 2.48 | 2.59 | 2.62 | 2.54 | 2.78* | 2.78* | 2.85* |
//! | nchw | 3.66 | 3.50 | 3.31 | 3.71 | 4.50 | 4.74* | 4.28* | 6.25* |
//!
//! (* with an earlier build that held more registers: lower bounds on those shapes' speed.)
//!
//! Launch: 1-D grid of `ceil(N/BN) * ceil(K/BM) * P*Q` blocks (batch tile fastest), 1-D block of
//! `(BM/TM) * (BN/TN)` threads (up to 512: every entry needs at most 128 registers, checked by
//! tests/tests/ptxas.rs for every planned block), `STAGES * BK * (BM + 4 + BN) * 4` bytes of dynamic
//! shared memory (`convrs_spec::tiled::smem_bytes`). The tiles and their entries are
//! `convrs_spec::tiled::TILES`; this module adds the cost model's numbers to each.

use std::ops::Deref;

use convrs_spec::tiled as spec;

use crate::plan::model::{blocks_per_sm, waves, LAUNCH_US};
use crate::plan::{DeviceModel, LaunchPlan};
use crate::dtype::DType;
use crate::{Conv2d, Error, Result};
use crate::plan::{Family, KernelDesc};
use crate::{Algorithm, Layout};

/// One compiled tile shape (`conv::<BM, BN, BK, TM, TN, STAGES>` of both kernels, with its
/// entries) and the cost model's numbers for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tile {
    pub spec: spec::Tile,
    /// Registers per thread (ptxas, sm_90) of the (HWCN, NCHW) entries, for occupancy only.
    pub regs: (usize, usize),
    /// Relative FMA throughput of the shape when latency is hidden (1 = best), for (HWCN, NCHW).
    pub eff: (f64, f64),
}

impl Deref for Tile {
    type Target = spec::Tile;
    fn deref(&self) -> &spec::Tile {
        &self.spec
    }
}

/// [`Tile::regs`] and [`Tile::eff`] of each tile of `spec::TILES`, in its order (measurements,
/// not part of the contract; the length is checked against the table at compile time).
const MODEL: [((usize, usize), (f64, f64)); spec::TILES.len()] = [
    ((111, 119), (1.0, 0.905)),   // 128x128
    ((127, 128), (0.95, 0.89)),   // 128x64
    ((128, 119), (0.98, 0.74)),   // 64x128
    ((127, 128), (0.9, 0.7)),     // 64x64
    ((63, 70), (0.9, 0.77)),      // 128x32
    ((80, 72), (0.88, 0.53)),     // 32x128
    ((111, 127), (0.965, 1.0)),   // 256x128
    // 128x128 with BK 16: within 1% of 128x128 for HWCN, kept just below it, so ties go to the
    // smaller shared memory.
    ((125, 127), (0.995, 0.95)),
];

/// The compiled tiles, in the spec's order, with the cost model's numbers.
pub(crate) const TILES: [Tile; spec::TILES.len()] = {
    let mut out = [Tile { spec: spec::TILES[0], regs: (0, 0), eff: (0.0, 0.0) }; spec::TILES.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Tile { spec: spec::TILES[i], regs: MODEL[i].0, eff: MODEL[i].1 };
        i += 1;
    }
    out
};

/// Every entry point either plan can name (for tests and tools).
pub fn kernel_names() -> Vec<&'static str> {
    TILES.iter().flat_map(|t| [t.hwcn, t.nchw]).collect()
}

/// Measured time over the modelled FMA time at the device's peak fp32 rate, per kernel (HWCN,
/// NCHW): geometric means over the four seed shapes' H100 times (BENCHMARKS.md 2026-11-22;
/// HWCN 1.24 to 1.87, NCHW 1.29 to 1.82). The tile efficiencies are relative to each kernel's
/// best tile; these put the two kernels, and the tiled family, on the device's clock.
const PEAK_SCALE: (f64, f64) = (1.55, 1.60);

/// Modelled time on `d`, microseconds, of `blocks` blocks of tile `t` with `regs` registers per
/// thread, each running `steps` reduction steps.
fn cost(d: &DeviceModel, t: &Tile, regs: usize, eff: f64, scale: f64, blocks: u128, steps: u128) -> f64 {
    let threads = t.threads();
    let warps = threads.div_ceil(32) as f64;
    let bps = blocks_per_sm(d, threads, regs, t.smem_bytes()) as f64;
    let work = (t.bm * t.bn * t.bk) as f64 * steps as f64;
    // Each warp's FMA chains are independent; a step's barrier and copy latency need other
    // warps to cover them: 8 warps per SM hide about 80%.
    let hide = |w: f64| w / (w + 2.0);
    let fmas_per_sm = waves(d, blocks as f64, bps, |resident| resident * work / (eff * hide(resident * warps)));
    let fmas_per_sm_us = d.fp32_tflops * 1e6 / 2.0 / d.sms.max(1) as f64;
    LAUNCH_US + scale * fmas_per_sm / fmas_per_sm_us
}

/// The cheapest tile for a GEMM of `m` rows (output channels) x `cols` columns per block row
/// group, `groups` independent groups (HWCN: output pixels; NCHW: 1), `steps` reduction steps,
/// on a device `device`; `regs` picks the kernel's register count.
pub(crate) fn choose(m: usize, cols: usize, groups: usize, steps: usize, device: &DeviceModel, hwcn: bool) -> Option<(Tile, u128, f64)> {
    let mut best: Option<(f64, Tile, u128)> = None;
    for t in TILES {
        if t.smem_bytes() > device.smem_per_block as usize {
            continue;
        }
        let blocks = (m as u128).div_ceil(t.bm as u128) * (cols as u128).div_ceil(t.bn as u128) * groups as u128;
        if blocks > i32::MAX as u128 {
            continue;
        }
        let (regs, eff, scale) = if hwcn { (t.regs.0, t.eff.0, PEAK_SCALE.0) } else { (t.regs.1, t.eff.1, PEAK_SCALE.1) };
        let c = cost(device, &t, regs, eff, scale, blocks, steps as u128);
        if best.as_ref().is_none_or(|(b, _, _)| c < *b) {
            best = Some((c, t, blocks));
        }
    }
    best.map(|(c, t, b)| (t, b, c))
}

/// The launch of the cheapest tile ([`choose`]) for `algorithm` (`tiled_hwcn` or `tiled_nchw`),
/// or why none fits.
pub(crate) fn tile_plan(algorithm: &'static str, m: usize, cols: usize, groups: usize, steps: usize, device: &DeviceModel) -> Result<LaunchPlan> {
    let hwcn = algorithm == "tiled_hwcn";
    let Some((t, blocks, us)) = choose(m, cols, groups, steps, device, hwcn) else {
        return Err(Error::Unsupported {
            algorithm,
            reason: format!(
                "no tile shape fits: the grid exceeds 2^31-1 blocks or the device's {} bytes of shared memory per block",
                device.smem_per_block
            ),
        });
    };
    Ok(LaunchPlan::new(if hwcn { t.hwcn } else { t.nchw }, (blocks as u32, 1, 1), (t.threads() as u32, 1, 1), t.smem_bytes() as u32, DType::F32, us))
}

pub fn plan(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    problem.validate()?;
    let (out_p, out_q) = problem.output_hw();
    // One GEMM of K x N per output pixel; the reduction runs in steps of 8 channels per tap.
    let steps = problem.c.div_ceil(8) * problem.r * problem.s;
    tile_plan("tiled_hwcn", problem.k, problem.n, out_p * out_q, steps, device)
}

/// The kernels' thread -> output mapping (the spec's, which kernels-gpu/src/tiled/mainloop.rs
/// calls), replayed on the CPU: `(row, column)` of the block tile for register `(i, j)` of
/// thread `tid`.
#[cfg(test)]
pub(crate) fn thread_output(t: &Tile, tid: usize, i: usize, j: usize) -> (usize, usize) {
    let (tm, tn) = t.thread_groups(tid as i32);
    let row = spec::tile_index(tm, i, spec::quadrant_stride(t.bm, t.tm));
    let col = spec::tile_index(tn, j, spec::quadrant_stride(t.bn, t.tn));
    (row as usize, col as usize)
}

/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::TiledHwcn,
    name: "tiled_hwcn",
    family: Family::Tiled,
    summary: "family 2 step 1: (output channel x batch) block tiles per output pixel, cp.async pipeline",
    dtypes: &[DType::F32],
    layouts: (Layout::Hwcn, Layout::Hwcn, Layout::Hwcn),
    multiples: (1, 1, 1),
    precision: crate::Precision::Fma,
    planner: |_, p, _, d| plan(p, d),
};

#[cfg(test)]
mod tests {
    use super::*;

    use crate::device::tests::h100;

    fn tile_of(kernel: &str) -> Tile {
        TILES.into_iter().find(|t| t.hwcn == kernel || t.nchw == kernel).unwrap()
    }

    /// Replays the kernel's block -> (batch tile, channel tile, pixel) -> thread -> register
    /// mapping and checks that every output is written exactly once and nothing else is.
    fn assert_covers_exactly_once(p: &Conv2d, plan: &LaunchPlan) {
        let t = tile_of(plan.kernel);
        let (out_p, out_q) = p.output_hw();
        assert_eq!(plan.block, (t.threads() as u32, 1, 1));
        let (nt, kt) = (p.n.div_ceil(t.bn), p.k.div_ceil(t.bm));
        assert_eq!(plan.grid, ((nt * kt * out_p * out_q) as u32, 1, 1));
        let mut hits = vec![0u8; p.output_len()];
        for b in 0..plan.grid.0 as usize {
            let (bn, bk, pix) = (b % nt, b / nt % kt, b / nt / kt);
            for tid in 0..t.threads() {
                for i in 0..t.tm {
                    for j in 0..t.tn {
                        let (row, col) = thread_output(&t, tid, i, j);
                        assert!(row < t.bm && col < t.bn);
                        let (k, n) = (bk * t.bm + row, bn * t.bn + col);
                        if k < p.k && n < p.n {
                            hits[(pix * p.k + k) * p.n + n] += 1; // HWKN
                        }
                    }
                }
            }
        }
        assert!(hits.iter().all(|&h| h == 1), "{p}: {} outputs not written exactly once", hits.iter().filter(|&&h| h != 1).count());
    }

    #[test]
    fn every_tile_shape_is_consistent() {
        for t in TILES {
            assert!(t.tm % 4 == 0 && t.tn % 4 == 0 && t.bm % t.tm == 0 && t.bn % t.tn == 0);
            assert!((t.bm / t.tm) % 4 == 0 && (t.bn / t.tn) % 8 == 0, "{t:?}: warps are 4 x 8 thread groups");
            assert!(t.threads() <= 512 && t.threads() % 32 == 0);
            assert_eq!(t.threads() % t.bm, 0, "{t:?}: nchw copy threads own whole A rows");
            assert_eq!(t.threads() % t.bn, 0, "{t:?}: nchw copy threads own whole B columns");
            // Every register maps to a distinct tile element.
            let mut seen = vec![false; t.bm * t.bn];
            for tid in 0..t.threads() {
                for i in 0..t.tm {
                    for j in 0..t.tn {
                        let (r, c) = thread_output(&t, tid, i, j);
                        assert!(!std::mem::replace(&mut seen[r * t.bn + c], true), "{t:?}");
                    }
                }
            }
            assert!(seen.iter().all(|&s| s));
        }
        assert_eq!(TILES[0].smem_bytes(), 3 * 8 * (128 + 4 + 128) * 4);
    }

    #[test]
    fn target_shape_gets_the_largest_tile() {
        let p = Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1);
        let plan = super::plan(&p, &h100()).unwrap();
        assert_eq!(plan.kernel, "tiled_hwcn_128x128", "{plan:?}");
        assert_eq!(plan.grid.0, 2 * 4 * 196);
        assert_eq!(plan.block.0, 256);
    }

    #[test]
    fn plans_cover_every_output_once() {
        let mut shapes = vec![
            Conv2d::new(1, 1, 1, 1, 1, 1, 1),
            Conv2d::new(3, 7, 11, 9, 5, 1, 1).with_stride(2),
            Conv2d::new(2, 3, 13, 15, 9, 7, 7).with_pad(3),
            Conv2d::new(64, 16, 6, 6, 64, 3, 3).with_pad(1),
            Conv2d::new(33, 5, 5, 4, 130, 3, 3).with_pad(1),
            Conv2d::new(130, 3, 3, 3, 33, 3, 3).with_pad(2).with_dilation(2),
            Conv2d::new(32, 8, 7, 7, 40, 3, 3).with_pad(1),
        ];
        for i in 0..40usize {
            shapes.push(Conv2d::new(1 + i * 7 % 150, 1 + i % 5, 2 + i % 5, 3 + i % 4, 1 + i * 13 % 140, 1 + i % 2, 1 + i % 3).with_pad(i % 2));
        }
        for p in shapes.iter().filter(|p| p.validate().is_ok()) {
            let plan = super::plan(p, &h100()).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(plan.shared_bytes <= h100().smem_per_block);
            assert!(kernel_names().contains(&plan.kernel) && plan.kernel.starts_with("tiled_hwcn_"));
            assert_covers_exactly_once(p, &plan);
        }
    }

    #[test]
    fn issue_shapes_get_the_tiles_that_measured_fastest() {
        // The tiles that measured fastest on these shapes on the H100 (BENCHMARKS.md).
        let plan = super::plan(&Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1), &h100()).unwrap();
        assert_eq!(plan.kernel, "tiled_hwcn_64x64", "{plan:?}");
        let plan = super::plan(&Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1), &h100()).unwrap();
        assert_eq!(plan.kernel, "tiled_hwcn_128x32", "{plan:?}");
    }

    #[test]
    fn small_batches_and_channel_counts_pick_narrow_tiles() {
        let plan = super::plan(&Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1), &h100()).unwrap();
        assert!(["tiled_hwcn_128x32", "tiled_hwcn_64x64", "tiled_hwcn_128x64"].contains(&plan.kernel), "{plan:?}");
        let plan = super::plan(&Conv2d::new(128, 16, 8, 8, 16, 3, 3).with_pad(1), &h100()).unwrap();
        assert_eq!(plan.kernel, "tiled_hwcn_32x128", "{plan:?}");
    }

    #[test]
    fn invalid_problems_are_rejected_before_planning() {
        assert!(matches!(super::plan(&Conv2d::new(1, 1, 4, 4, 1, 7, 7), &h100()), Err(Error::FilterLargerThanPaddedInput { .. })));
        let tiny = DeviceModel { smem_per_block: 1024, ..h100() };
        assert!(matches!(super::plan(&Conv2d::new(1, 1, 8, 8, 1, 3, 3), &tiny), Err(Error::Unsupported { algorithm: "tiled_hwcn", .. })));
    }
}
