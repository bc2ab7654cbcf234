//! Plan for `wmma_nhwc` (kernels-gpu/src/tensor_core/nhwc.rs): the tensor-core implicit GEMM
//! over NHWC fp16 data (GEMM M = N*P*Q output pixels, GEMM N = K output channels, reduction
//! R*S*C in k-tiles of BK = 32 or 64 channels of one filter tap).
//!
//! The kernel comes in five instantiations (entry `wmma_nhwc_{BM}x{BN}[k64]`). The plan scores
//! each with a small wave model of an H100 (132 SMs): blocks resident per SM from registers
//! (ptxas, sm_90, rounded up to 8) and shared memory, an SM reaching its full mma rate only with
//! 8 or more resident warps, a per-tile efficiency fitted to the timings below (a 64x64 warp
//! tile reads half the shared-memory bytes per MAC of a 32x32 one; bigger block tiles copy less
//! per MAC), and wasted work (tiles past M or K, k-tiles zero-filled past C) charged in full.
//!
//! H100 timings of every entry (`wmma_nhwc_tile_timings`, median of 50; 2026-11-22):
//!
//! | entry | 256,256,14,14 -> 512 3x3 p1 | 64,64,56,56 -> 64 3x3 p1 | 32,512,7,7 -> 512 3x3 p1 |
//! | --- | --- | --- | --- |
//! | 128x256k64 (8 warps, 4 stages) | **0.273 ms** (433 TFLOP/s) | 0.165 ms | 0.083 ms |
//! | 128x128k64 (4 warps, 3 stages) | 0.278 ms | 0.085 ms | 0.054 ms |
//! | 128x128 (BK 32, 4 stages) | 0.281 ms | 0.089 ms | 0.059 ms |
//! | 128x64 (BK 32, 4 stages) | 0.347 ms | **0.074 ms** (200 TFLOP/s) | 0.040 ms |
//! | 64x64 (BK 32, 4 stages) | 0.445 ms | 0.093 ms | **0.037 ms** (200 TFLOP/s) |
//!
//! `convrs bench` on the same H100 in one run beside cuDNN 9.14 fp16 NHWC (IMPLICIT_PRECOMP_GEMM,
//! Hopper wgmma kernels): 0.275 ms vs 0.156 ms (0.57x), 0.074 ms vs 0.090 ms (1.21x), 0.039 ms
//! vs 0.068 ms (1.71x). (cuDNN 9.19 through PyTorch, earlier: 0.186 ms and 0.074 ms for the first two.)
//! Also measured and dropped: 256x128 (8 warps, BK 32: 0.277 ms), 128x256 with BK 32 (0.278 to
//! 0.285 ms for 3 to 6 stages), 128x128 of 8 warps of 64x32 (0.330 ms), and the same tiles
//! without fragment pipelining across the barrier (2 to 10% slower).

use std::ops::Deref;

use convrs_spec::tensor_core as spec;

use super::{DeviceLimits, LaunchPlan};
use crate::dtype::DType;
use crate::{Conv2d, Error, Result};

/// One compiled tile (`conv::<_, WARPS_M, WARPS_N, MT, NT, STAGES, KCH>` of both layout
/// families, with its entries and sizes) and the cost model's numbers for it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tile {
    spec: spec::Tile,
    /// Registers per thread as ptxas allocates them (sm_90), for the occupancy estimate only.
    regs: usize,
    /// Relative mma throughput of its warp tile (shared-memory bytes read per MAC).
    efficiency: f64,
}

impl Deref for Tile {
    type Target = spec::Tile;
    fn deref(&self) -> &spec::Tile {
        &self.spec
    }
}

/// [`Tile::regs`] and [`Tile::efficiency`] of each tile of `spec::TILES`, in its order
/// (measurements, not part of the contract; the length is checked against the table at compile
/// time).
const MODEL: [(usize, f64); spec::TILES.len()] = [
    (232, 1.0),  // 128x256k64
    (232, 0.98), // 128x128k64
    (224, 0.97), // 128x128
    (152, 0.79), // 128x64
    (88, 0.62),  // 64x64
];

/// The compiled tiles, in the spec's order, with the cost model's numbers.
const TILES: [Tile; spec::TILES.len()] = {
    let mut out = [Tile { spec: spec::TILES[0], regs: 0, efficiency: 0.0 }; spec::TILES.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Tile { spec: spec::TILES[i], regs: MODEL[i].0, efficiency: MODEL[i].1 };
        i += 1;
    }
    out
};

/// Which layout family's entries a plan names: the two share the kernel's mainloop, tiles and
/// therefore this cost model (`wmma_nhwcnc`'s GEMM has the same M = N*P*Q and N = K).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    /// Plain NHWC / KRSC (`wmma_nhwc_*`).
    Nhwc,
    /// Blocked NHWC16n16c / RSCK16k16c (`wmma_nhwcnc_*`).
    Blocked,
}

impl Family {
    fn algorithm(self) -> &'static str {
        match self {
            Family::Nhwc => "wmma_nhwc",
            Family::Blocked => "wmma_nhwcnc",
        }
    }

    fn kernel(self, t: &Tile) -> &'static str {
        match self {
            Family::Nhwc => t.nhwc,
            Family::Blocked => t.nhwcnc,
        }
    }

    pub(super) fn kernel_names(self) -> Vec<&'static str> {
        TILES.iter().map(|t| self.kernel(t)).collect()
    }
}

/// Every entry point the plan can name (for tests and tools).
pub fn kernel_names() -> Vec<&'static str> {
    Family::Nhwc.kernel_names()
}

const MODEL_SMS: f64 = 132.0;
const MODEL_SMEM_PER_SM: usize = 228 * 1024;

/// Modelled time of `tile` on a problem of `m x n` GEMM outputs and `c` input channels, in
/// arbitrary units.
fn cost(tile: &Tile, m: usize, n: usize, c: usize) -> f64 {
    let blocks = (m.div_ceil(tile.bm) * n.div_ceil(tile.bn)) as f64;
    let by_regs = 65536 / (tile.regs * tile.threads);
    let by_smem = MODEL_SMEM_PER_SM / (tile.smem_bytes() + 1024);
    let bps = by_regs.min(by_smem).min(2048 / tile.threads).clamp(1, 32) as f64;
    // The last k-tile of each tap is zero-filled past C: C = 32 runs half-empty 64-channel tiles.
    let c_waste = (c.div_ceil(tile.bk) * tile.bk) as f64 / c as f64;
    let work = (tile.bm * tile.bn) as f64 * c_waste / tile.efficiency;
    let warps = (tile.threads / 32) as f64;
    // An SM with `b` resident blocks finishes them in b * work / rate; the rate needs 8 warps.
    let wave = |b: f64| b * work / (b * warps / 8.0).min(1.0);
    let full = (blocks / (MODEL_SMS * bps)).floor();
    let rest = blocks - full * MODEL_SMS * bps;
    full * wave(bps) + if rest > 0.0 { wave((rest / MODEL_SMS).ceil()) } else { 0.0 }
}

pub fn plan(problem: &Conv2d, limits: &DeviceLimits) -> Result<LaunchPlan> {
    problem.validate()?;
    let p = problem;
    if p.c % 8 != 0 || p.k % 8 != 0 {
        return Err(Error::Unsupported {
            algorithm: "wmma_nhwc",
            reason: format!(
                "C = {} and K = {} must be multiples of 8: the kernel moves channels in 16-byte (8 x fp16) pieces",
                p.c, p.k
            ),
        });
    }
    plan_tiles(p, limits, Family::Nhwc)
}

/// The best tile for `p` (validated, channel sizes checked by the caller) among `family`'s
/// entries.
pub(super) fn plan_tiles(p: &Conv2d, limits: &DeviceLimits, family: Family) -> Result<LaunchPlan> {
    let m = gemm_m(p);
    let best = TILES
        .iter()
        .filter(|t| t.smem_bytes() <= limits.max_shared_bytes_per_block as usize)
        .filter(|t| m.div_ceil(t.bm).checked_mul(p.k.div_ceil(t.bn)).is_some_and(|b| b <= i32::MAX as usize))
        .min_by(|a, b| cost(a, m, p.k, p.c).total_cmp(&cost(b, m, p.k, p.c)));
    let Some(t) = best else {
        return Err(Error::Unsupported {
            algorithm: family.algorithm(),
            reason: format!(
                "even the smallest tile needs {} bytes of shared memory (or the grid exceeds 2^31 blocks); the device allows {} per block",
                TILES.iter().map(|t| t.smem_bytes()).min().unwrap_or(0),
                limits.max_shared_bytes_per_block
            ),
        });
    };
    Ok(launch_plan(p, t, family))
}

fn gemm_m(p: &Conv2d) -> usize {
    let (out_p, out_q) = p.output_hw();
    p.n * out_p * out_q
}

fn launch_plan(p: &Conv2d, t: &Tile, family: Family) -> LaunchPlan {
    LaunchPlan {
        kernel: family.kernel(t),
        grid: ((gemm_m(p).div_ceil(t.bm) * p.k.div_ceil(t.bn)) as u32, 1, 1),
        block: (t.threads as u32, 1, 1),
        shared_bytes: t.smem_bytes() as u32,
        dtype: DType::F16,
    }
}

/// The launch of entry `kernel` (one of [`kernel_names`]) on `problem`, whatever [`plan`]
/// would pick: for timing and testing every tile. Same checks as [`plan`].
pub fn plan_for_kernel(problem: &Conv2d, limits: &DeviceLimits, kernel: &str) -> Result<LaunchPlan> {
    plan(problem, limits)?;
    tile_plan(problem, limits, kernel, Family::Nhwc)
}

/// The launch of `family`'s entry `kernel` on `p`, which the caller's `plan` accepted.
pub(super) fn tile_plan(p: &Conv2d, limits: &DeviceLimits, kernel: &str, family: Family) -> Result<LaunchPlan> {
    let t = TILES
        .iter()
        .find(|t| family.kernel(t) == kernel)
        .ok_or_else(|| Error::InvalidArgument(format!("no {} entry `{kernel}`", family.algorithm())))?;
    if t.smem_bytes() > limits.max_shared_bytes_per_block as usize {
        return Err(Error::Unsupported { algorithm: family.algorithm(), reason: format!("{kernel} needs {} bytes of shared memory", t.smem_bytes()) });
    }
    Ok(launch_plan(p, t, family))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    const H100: DeviceLimits = DeviceLimits { max_shared_bytes_per_block: 227 * 1024, max_grid_y: 65535, max_grid_z: 65535 };

    fn tile_of(plan: &LaunchPlan) -> Tile {
        *TILES.iter().find(|t| t.nhwc == plan.kernel || t.nhwcnc == plan.kernel).unwrap()
    }

    /// The grid covers every GEMM output (M x K) with whole tiles, one block per tile.
    pub(in crate::plan) fn assert_covers(p: &Conv2d, plan: &LaunchPlan) {
        let t = tile_of(plan);
        let (out_p, out_q) = p.output_hw();
        let m = p.n * out_p * out_q;
        assert_eq!(plan.grid, ((m.div_ceil(t.bm) * p.k.div_ceil(t.bn)) as u32, 1, 1), "{p}");
        assert_eq!(plan.block, (t.threads as u32, 1, 1));
        assert_eq!(plan.shared_bytes as usize, t.stages * (t.bm + t.bn) * 2 * t.bk);
        assert_eq!(plan.dtype, DType::F16);
    }

    #[test]
    fn speed_shapes_get_the_expected_tiles() {
        let cases = [
            (Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1), "wmma_nhwc_128x256k64", 784),
            (Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1), "wmma_nhwc_128x64", 1568),
            (Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1), "wmma_nhwc_64x64", 200),
            // C = 32: a 64-channel k-tile would be half zeros.
            (Conv2d::new(256, 32, 28, 28, 256, 3, 3).with_pad(1), "wmma_nhwc_128x128", 3136),
        ];
        for (p, kernel, blocks) in cases {
            let plan = super::plan(&p, &H100).unwrap();
            assert_eq!((plan.kernel, plan.grid.0), (kernel, blocks), "{p}");
            assert_covers(&p, &plan);
        }
    }

    #[test]
    fn channels_not_multiple_of_8_are_unsupported() {
        for p in [Conv2d::new(1, 12, 8, 8, 16, 3, 3), Conv2d::new(1, 16, 8, 8, 12, 3, 3), Conv2d::new(1, 3, 8, 8, 64, 3, 3)] {
            match super::plan(&p, &H100) {
                Err(Error::Unsupported { algorithm: "wmma_nhwc", reason }) => assert!(reason.contains("multiples of 8"), "{reason}"),
                other => panic!("{p}: expected Unsupported, got {other:?}"),
            }
        }
    }

    #[test]
    fn odd_shapes_plan_and_fit() {
        let shapes = [
            Conv2d::new(1, 8, 1, 1, 8, 1, 1),
            Conv2d::new(3, 8, 31, 29, 8, 1, 1).with_stride(2),
            Conv2d::new(2, 24, 33, 35, 40, 7, 7).with_pad(3),
            Conv2d::new(2, 16, 40, 41, 16, 3, 3).with_pad(2).with_dilation(2),
            Conv2d::new(4, 1024, 3, 3, 2048, 3, 3).with_pad(1),
        ];
        for p in shapes {
            let plan = super::plan(&p, &H100).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(plan.shared_bytes <= H100.max_shared_bytes_per_block);
            assert!(kernel_names().contains(&plan.kernel));
            assert_covers(&p, &plan);
        }
        let tiny = DeviceLimits { max_shared_bytes_per_block: 16 * 1024, ..H100 };
        assert!(matches!(super::plan(&Conv2d::new(1, 8, 8, 8, 8, 3, 3), &tiny), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn invalid_problems_are_rejected_before_planning() {
        assert!(matches!(super::plan(&Conv2d::new(1, 8, 4, 4, 8, 7, 7), &H100), Err(Error::FilterLargerThanPaddedInput { .. })));
    }
}
