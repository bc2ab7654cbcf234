//! Plan for `wmma_nhwc` (kernels-gpu/src/tensor_core/nhwc.rs): the tensor-core implicit GEMM
//! over NHWC fp16 data (GEMM M = N*P*Q output pixels, GEMM N = K output channels, reduction
//! R*S*C in k-tiles of BK = 32 or 64 channels of one filter tap).
//!
//! The kernel comes in five instantiations (entry `wmma_nhwc_{BM}x{BN}[k64]`). The plan scores
//! each with a small wave model of the device (`plan::model`: SMs, registers, shared memory read off it): blocks resident per SM from registers
//! (ptxas, sm_90, rounded up to 8) and shared memory, an SM reaching its full mma rate only with
//! 8 or more resident warps, a per-tile efficiency fitted to the timings below (a 64x64 warp
//! tile reads half the shared-memory bytes per MAC of a 32x32 one; bigger block tiles copy less
//! per MAC), and wasted work (tiles past M or K, k-tiles zero-filled past C) charged in full.
//!
//! The timings of every entry on three shapes (H100, 2026-11-22), the tiles measured and
//! dropped, and the comparison with cuDNN are in BENCHMARKS.md ("Figures moved out of code
//! comments").

use std::ops::Deref;

use convrs_spec::tensor_core as spec;

use super::gemm_m;
use crate::plan::model::{blocks_per_sm, memory_us, waves, LAUNCH_US};
use crate::plan::{DeviceModel, LaunchPlan};
use crate::dtype::DType;
use crate::{Conv2d, Error, Result};
use crate::plan::{Family, KernelDesc};
use crate::{Algorithm, Layout};

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

/// Which layout family's (and element type's) entries a plan names: all share the kernel's
/// mainloop, tiles and therefore this cost model (`wmma_nhwcnc`'s GEMM has the same M = N*P*Q
/// and N = K; bf16 differs from fp16 only in the `mma.sync` type, at the same rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layouts {
    /// Plain NHWC / KRSC (`wmma_nhwc_*`).
    Nhwc,
    /// Blocked NHWC16n16c / RSCK16k16c (`wmma_nhwcnc_*`).
    Blocked,
    /// `Nhwc` on bf16 data (`wmma_nhwc_bf16_*`).
    NhwcBf16,
    /// `Blocked` on bf16 data (`wmma_nhwcnc_bf16_*`).
    BlockedBf16,
}

impl Layouts {
    /// The registry's name of the kernel (both element types share it).
    pub(super) const fn algorithm(self) -> &'static str {
        match self {
            Layouts::Nhwc | Layouts::NhwcBf16 => "wmma_nhwc",
            Layouts::Blocked | Layouts::BlockedBf16 => "wmma_nhwcnc",
        }
    }

    fn kernel(self, t: &Tile) -> &'static str {
        match self {
            Layouts::Nhwc => t.nhwc,
            Layouts::Blocked => t.nhwcnc,
            Layouts::NhwcBf16 => t.nhwc_bf16,
            Layouts::BlockedBf16 => t.nhwcnc_bf16,
        }
    }

    fn dtype(self) -> DType {
        match self {
            Layouts::Nhwc | Layouts::Blocked => DType::F16,
            Layouts::NhwcBf16 | Layouts::BlockedBf16 => DType::BF16,
        }
    }

    /// Measured time over the modelled MAC time at the device's peak fp16 tensor rate:
    /// geometric means over the three seed shapes both take, H100 times (BENCHMARKS.md
    /// 2026-11-22: NHWC 2.05 to 3.35, blocked 2.15 to 2.62). `mma.sync` on Hopper issues at
    /// about half the rate of the wgmma peak the device states.
    fn peak_scale(self) -> f64 {
        match self {
            Layouts::Nhwc | Layouts::NhwcBf16 => 2.45,
            Layouts::Blocked | Layouts::BlockedBf16 => 2.3,
        }
    }

    pub(super) fn kernel_names(self) -> Vec<&'static str> {
        TILES.iter().map(|t| self.kernel(t)).collect()
    }
}

/// Every entry point the plan can name (for tests and tools).
pub fn kernel_names() -> Vec<&'static str> {
    Layouts::Nhwc.kernel_names()
}

/// Every bf16 entry point [`plan_bf16`] can name.
pub fn kernel_names_bf16() -> Vec<&'static str> {
    Layouts::NhwcBf16.kernel_names()
}


/// What the wave model needs of a compiled tile of the `mma.sync` mainloop (16-bit or fp32).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct TileModel {
    pub(super) bm: usize,
    pub(super) bn: usize,
    /// Channels per k-tile.
    pub(super) bk: usize,
    pub(super) threads: usize,
    /// Registers per thread (ptxas), for the occupancy estimate.
    pub(super) regs: usize,
    pub(super) smem_bytes: usize,
    /// Relative mma throughput of its warp tile (shared-memory bytes read per MAC).
    pub(super) efficiency: f64,
}

impl Tile {
    fn model(&self) -> TileModel {
        TileModel { bm: self.bm, bn: self.bn, bk: self.bk, threads: self.threads, regs: self.regs, smem_bytes: self.smem_bytes(), efficiency: self.efficiency }
    }
}

/// Modelled time of `tile` on `d`, microseconds, for a problem of `m x n` GEMM outputs and a
/// reduction of `taps` filter taps of `c` input channels.
fn cost(d: &DeviceModel, family: Layouts, tile: &Tile, m: usize, n: usize, c: usize, taps: usize) -> f64 {
    modelled_us(d, &tile.model(), family.peak_scale(), m, n, c, taps)
}

/// The wave model of a tile `t` whose MACs run at the device's peak fp16 tensor rate divided by
/// `peak_scale`, microseconds: see [`cost`].
pub(super) fn modelled_us(d: &DeviceModel, t: &TileModel, peak_scale: f64, m: usize, n: usize, c: usize, taps: usize) -> f64 {
    let blocks = (m.div_ceil(t.bm) * n.div_ceil(t.bn)) as f64;
    let bps = blocks_per_sm(d, t.threads, t.regs, t.smem_bytes) as f64;
    // The last k-tile of each tap is zero-filled past C: C = 32 runs half-empty 64-channel tiles.
    let padded_c = (c.div_ceil(t.bk) * t.bk) as f64;
    let macs = (t.bm * t.bn) as f64 * padded_c * taps as f64 / t.efficiency;
    let warps = (t.threads / 32) as f64;
    // An SM with `b` resident blocks finishes them in b * macs / rate; the rate needs 8 warps.
    let macs_per_sm = waves(d, blocks, bps, |b| b * macs / (b * warps / 8.0).min(1.0));
    let macs_per_sm_us = d.f16_tflops * 1e6 / 2.0 / d.sms.max(1) as f64;
    // Plus the fp32 output written once (the width every plan answers for): it is most of the
    // time of layers with little reduction (C = 3 run padded to 8: 2.4x the mainloop's model
    // on 8,3,224,224 -> 64 3x3, H100 2026-11-23), and the small-C kernel's model charges it too.
    LAUNCH_US + peak_scale * macs_per_sm / macs_per_sm_us + memory_us(d, (m * n * 4) as f64)
}

pub fn plan(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_layouts(problem, device, Layouts::Nhwc)
}

/// The plan of the bf16 entries.
pub fn plan_bf16(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_layouts(problem, device, Layouts::NhwcBf16)
}

fn plan_layouts(problem: &Conv2d, device: &DeviceModel, family: Layouts) -> Result<LaunchPlan> {
    problem.validate()?;
    let p = problem;
    if p.c % 8 != 0 || p.k % 8 != 0 {
        return Err(Error::Unsupported {
            algorithm: family.algorithm(),
            reason: format!(
                "C = {} and K = {} must be multiples of 8: the kernel moves channels in 16-byte (8 x fp16) pieces",
                p.c, p.k
            ),
        });
    }
    plan_tiles(p, device, family)
}

/// The best tile for `p` (validated, channel sizes checked by the caller) among `family`'s
/// entries.
pub(super) fn plan_tiles(p: &Conv2d, device: &DeviceModel, family: Layouts) -> Result<LaunchPlan> {
    let m = gemm_m(p);
    let best = TILES
        .iter()
        .filter(|t| t.smem_bytes() <= device.smem_per_block as usize)
        .filter(|t| m.div_ceil(t.bm).checked_mul(p.k.div_ceil(t.bn)).is_some_and(|b| b <= i32::MAX as usize))
        .min_by(|a, b| cost(device, family, a, m, p.k, p.c, p.r * p.s).total_cmp(&cost(device, family, b, m, p.k, p.c, p.r * p.s)));
    let Some(t) = best else {
        return Err(Error::Unsupported {
            algorithm: family.algorithm(),
            reason: format!(
                "even the smallest tile needs {} bytes of shared memory (or the grid exceeds 2^31 blocks); the device allows {} per block",
                TILES.iter().map(|t| t.smem_bytes()).min().unwrap_or(0),
                device.smem_per_block
            ),
        });
    };
    Ok(launch_plan(p, t, family, device))
}


fn launch_plan(p: &Conv2d, t: &Tile, family: Layouts, device: &DeviceModel) -> LaunchPlan {
    LaunchPlan::new(family.kernel(t), ((gemm_m(p).div_ceil(t.bm) * p.k.div_ceil(t.bn)) as u32, 1, 1), (t.threads as u32, 1, 1), t.smem_bytes() as u32, family.dtype(), cost(device, family, t, gemm_m(p), p.k, p.c, p.r * p.s))
}

/// The launch of entry `kernel` (one of [`kernel_names`]) on `problem`, whatever [`plan`]
/// would pick: for timing and testing every tile. Same checks as [`plan`].
pub fn plan_for_kernel(problem: &Conv2d, device: &DeviceModel, kernel: &str) -> Result<LaunchPlan> {
    plan(problem, device)?;
    tile_plan(problem, device, kernel, Layouts::Nhwc)
}

/// The launch of `family`'s entry `kernel` on `p`, which the caller's `plan` accepted.
pub(super) fn tile_plan(p: &Conv2d, device: &DeviceModel, kernel: &str, family: Layouts) -> Result<LaunchPlan> {
    let t = TILES
        .iter()
        .find(|t| family.kernel(t) == kernel)
        .ok_or_else(|| Error::InvalidArgument(format!("no {} entry `{kernel}`", family.algorithm())))?;
    if t.smem_bytes() > device.smem_per_block as usize {
        return Err(Error::Unsupported { algorithm: family.algorithm(), reason: format!("{kernel} needs {} bytes of shared memory", t.smem_bytes()) });
    }
    Ok(launch_plan(p, t, family, device))
}

/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::WmmaNhwc,
    name: Layouts::Nhwc.algorithm(),
    family: Family::TensorCore,
    summary: "family 3 step 2: mma.sync implicit GEMM on plain channels-last data",
    dtypes: &[DType::F16, DType::BF16],
    layouts: (Layout::Nhwc, Layout::Nhwc, Layout::Nhwc),
    multiples: (1, 8, 8),
    precision: crate::Precision::Fma,
    planner: |_, p, dtype, d| if dtype == DType::BF16 { plan_bf16(p, d) } else { plan(p, d) },
};

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    use crate::device::tests::h100;

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
            let plan = super::plan(&p, &h100()).unwrap();
            assert_eq!((plan.kernel, plan.grid.0), (kernel, blocks), "{p}");
            assert_covers(&p, &plan);
        }
    }

    #[test]
    fn channels_not_multiple_of_8_are_unsupported() {
        for p in [Conv2d::new(1, 12, 8, 8, 16, 3, 3), Conv2d::new(1, 16, 8, 8, 12, 3, 3), Conv2d::new(1, 3, 8, 8, 64, 3, 3)] {
            match super::plan(&p, &h100()) {
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
            let plan = super::plan(&p, &h100()).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(plan.shared_bytes <= h100().smem_per_block);
            assert!(kernel_names().contains(&plan.kernel));
            assert_covers(&p, &plan);
        }
        let tiny = DeviceModel { smem_per_block: 16 * 1024, ..h100() };
        assert!(matches!(super::plan(&Conv2d::new(1, 8, 8, 8, 8, 3, 3), &tiny), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn invalid_problems_are_rejected_before_planning() {
        assert!(matches!(super::plan(&Conv2d::new(1, 8, 4, 4, 8, 7, 7), &h100()), Err(Error::FilterLargerThanPaddedInput { .. })));
    }
}
