//! Plan for `wmma_nhwc_tf32` and `wmma_nhwc_3xtf32` (kernels-gpu/src/tensor_core/nhwc.rs): the
//! `mma.sync` implicit GEMM of `wmma_nhwc` on fp32 NHWC data, with m16n8k8 TF32 MMAs (TF32: each
//! operand's low 13 bits dropped; 3xTF32: each operand split in a TF32 high part and a TF32
//! remainder, three MMAs a product). These are the fp32 tensor-core kernels for every device of
//! compute capability 8.0 and up; on Hopper the `wgmma` steps (`plan::hopper`) are faster, and
//! Auto picks by predicted time.
//!
//! The tiles are `convrs_spec::tensor_core_f32_tiles!`; the cost model is `wmma_nhwc`'s wave
//! model ([`super::nhwc`]) at the fp32 MMA's rate.

use std::ops::Deref;

use convrs_spec::hopper::Math;
use convrs_spec::tensor_core as spec;

use super::gemm_m;
use super::nhwc::{modelled_us, TileModel};
use crate::dtype::DType;
use crate::plan::{DeviceModel, Family, KernelDesc, LaunchPlan};
use crate::{Algorithm, Conv2d, Error, Layout, Precision, Result};

/// One compiled fp32 tile and the cost model's numbers for it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tile {
    spec: spec::F32Tile,
    /// Registers per thread (ptxas, sm_80, rounded up to 8), for the occupancy estimate only.
    regs: usize,
    /// Relative mma throughput of its warp tile: the 16-bit tile of the same warp tile's.
    efficiency: f64,
}

impl Deref for Tile {
    type Target = spec::F32Tile;
    fn deref(&self) -> &spec::F32Tile {
        &self.spec
    }
}

/// [`Tile::regs`] and [`Tile::efficiency`] of each tile of `spec::F32_TILES`, in its order.
const MODEL: [(usize, f64); spec::F32_TILES.len()] = [
    (232, 1.0),  // tf32 128x256k32
    (240, 0.98), // tf32 128x128k32
    (152, 0.79), // tf32 128x64
    (88, 0.62),  // tf32 64x64
    (216, 0.79), // 3xtf32 128x64k32
    (120, 0.62), // 3xtf32 64x64
];

const TILES: [Tile; spec::F32_TILES.len()] = {
    let mut out = [Tile { spec: spec::F32_TILES[0], regs: 0, efficiency: 0.0 }; spec::F32_TILES.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Tile { spec: spec::F32_TILES[i], regs: MODEL[i].0, efficiency: MODEL[i].1 };
        i += 1;
    }
    out
};

impl Tile {
    fn model(&self) -> TileModel {
        TileModel { bm: self.bm, bn: self.bn, bk: self.bk, threads: self.threads, regs: self.regs, smem_bytes: self.smem_bytes(), efficiency: self.efficiency }
    }
}

/// The registry's name of the kernel of `math`.
const fn algorithm(math: Math) -> &'static str {
    match math {
        Math::Tf32x3 => "wmma_nhwc_3xtf32",
        _ => "wmma_nhwc_tf32",
    }
}

/// Measured time over the modelled MAC time at the device's peak fp16 tensor rate, fitted to
/// the H100 timings in the test `predictions_track_the_h100_measurements` (geometric mean of
/// the ratios): TF32 4.3, i.e. 1.75x `wmma_nhwc`'s 2.45 (the m16n8k8 TF32 MMA does half the
/// work of the fp16 m16n8k16 in less than twice its time); 3xTF32 2.9x TF32 (three MMAs a
/// product, the splits overlapped with them).
fn peak_scale(math: Math) -> f64 {
    match math {
        Math::Tf32x3 => 2.45 * 1.75 * 2.9,
        _ => 2.45 * 1.75,
    }
}

/// The entries of `math` (`Tf32` or `Tf32x3`), in the table's order.
pub fn kernel_names(math: Math) -> Vec<&'static str> {
    TILES.iter().filter(|t| t.math == math).map(|t| t.name).collect()
}

fn cost(d: &DeviceModel, t: &Tile, p: &Conv2d) -> f64 {
    modelled_us(d, &t.model(), peak_scale(t.math), gemm_m(p), p.k, p.c, p.r * p.s)
}

fn launch_plan(p: &Conv2d, t: &Tile, d: &DeviceModel) -> LaunchPlan {
    let grid = (gemm_m(p).div_ceil(t.bm) * p.k.div_ceil(t.bn)) as u32;
    LaunchPlan::new(t.name, (grid, 1, 1), (t.threads as u32, 1, 1), t.smem_bytes() as u32, DType::F32, cost(d, t, p))
}

/// Why `math`'s kernel cannot take `p` (validated), if it cannot.
fn refusal(p: &Conv2d, math: Math) -> Option<Error> {
    (p.c % 4 != 0 || p.k % 2 != 0).then(|| Error::Unsupported {
        algorithm: algorithm(math),
        reason: format!(
            "C = {} must be a multiple of 4 and K = {} of 2: the kernel moves channels in 16-byte (4 x fp32) pieces and stores output pairs",
            p.c, p.k
        ),
    })
}

/// The best tile of `math`'s kernel for `p` on `d`.
pub fn plan(p: &Conv2d, d: &DeviceModel, math: Math) -> Result<LaunchPlan> {
    p.validate()?;
    if let Some(e) = refusal(p, math) {
        return Err(e);
    }
    let m = gemm_m(p);
    TILES
        .iter()
        .filter(|t| t.math == math && t.smem_bytes() <= d.smem_per_block as usize)
        .filter(|t| m.div_ceil(t.bm).checked_mul(p.k.div_ceil(t.bn)).is_some_and(|b| b <= i32::MAX as usize))
        .min_by(|a, b| cost(d, a, p).total_cmp(&cost(d, b, p)))
        .map(|t| launch_plan(p, t, d))
        .ok_or_else(|| Error::Unsupported {
            algorithm: algorithm(math),
            reason: format!("no tile fits the device's {} bytes of shared memory per block (or the grid exceeds 2^31 blocks)", d.smem_per_block),
        })
}

/// The launch of entry `kernel` on `p`, whatever [`plan`] would pick: for timing and testing
/// every tile. Same checks as [`plan`].
pub fn plan_for_kernel(p: &Conv2d, d: &DeviceModel, kernel: &str) -> Result<LaunchPlan> {
    let t = TILES.iter().find(|t| t.name == kernel).ok_or_else(|| Error::InvalidArgument(format!("no fp32 wmma entry `{kernel}`")))?;
    plan(p, d, t.math)?;
    if t.smem_bytes() > d.smem_per_block as usize {
        return Err(Error::Unsupported { algorithm: algorithm(t.math), reason: format!("{kernel} needs {} bytes of shared memory", t.smem_bytes()) });
    }
    Ok(launch_plan(p, t, d))
}

/// The registry's entry of the TF32 kernel.
pub const TF32: KernelDesc = KernelDesc {
    algorithm: Algorithm::WmmaNhwcTf32,
    name: algorithm(Math::Tf32),
    family: Family::TensorCore,
    summary: "family 3 step 2 on fp32 data: mma.sync m16n8k8 TF32 implicit GEMM on channels-last data (sm_80 and up)",
    dtypes: &[DType::F32],
    layouts: (Layout::Nhwc, Layout::Nhwc, Layout::Nhwc),
    multiples: (1, 4, 2),
    precision: Precision::Tf32,
    planner: |_, p, _, d| plan(p, d, Math::Tf32),
};

/// The registry's entry of the 3xTF32 (fp32-accurate) kernel.
pub const TF32X3: KernelDesc = KernelDesc {
    algorithm: Algorithm::WmmaNhwc3xTf32,
    name: algorithm(Math::Tf32x3),
    family: Family::TensorCore,
    summary: "family 3 step 2 on fp32 data to fp32 accuracy: mma.sync 3xTF32 implicit GEMM on channels-last data (sm_80 and up)",
    dtypes: &[DType::F32],
    layouts: (Layout::Nhwc, Layout::Nhwc, Layout::Nhwc),
    multiples: (1, 4, 2),
    precision: Precision::Fp32,
    planner: |_, p, _, d| plan(p, d, Math::Tf32x3),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::tests::h100;

    #[test]
    fn each_math_names_its_own_entries() {
        assert_eq!(kernel_names(Math::Tf32), ["wmma_nhwc_tf32_128x256k32", "wmma_nhwc_tf32_128x128k32", "wmma_nhwc_tf32_128x64", "wmma_nhwc_tf32_64x64"]);
        assert_eq!(kernel_names(Math::Tf32x3), ["wmma_nhwc_3xtf32_128x64k32", "wmma_nhwc_3xtf32_64x64"]);
        let p = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1);
        for math in [Math::Tf32, Math::Tf32x3] {
            let plan = plan(&p, &h100(), math).unwrap();
            assert!(kernel_names(math).contains(&plan.kernel), "{math:?}: {}", plan.kernel);
            let t = TILES.iter().find(|t| t.name == plan.kernel).unwrap();
            assert_eq!(plan.grid.0 as usize, gemm_m(&p).div_ceil(t.bm) * p.k.div_ceil(t.bn));
            assert_eq!((plan.block.0 as usize, plan.shared_bytes as usize, plan.dtype), (t.threads, t.stages * (t.bm + t.bn) * 4 * t.bk, DType::F32));
        }
        // 3xTF32 runs three MMAs a product: predicted slower than TF32 on the same shape.
        assert!(plan(&p, &h100(), Math::Tf32x3).unwrap().predicted_us > plan(&p, &h100(), Math::Tf32).unwrap().predicted_us);
    }

    /// The predictions land within 1.35x of what each kernel measured on an H100 (`convrs run`,
    /// NHWC, median of 50, 2026-11-27, bundle 78f7133; BENCHMARKS.md "twenty-second session").
    #[test]
    fn predictions_track_the_h100_measurements() {
        let d = h100();
        // (shape, TF32 ms, 3xTF32 ms)
        let measured = [
            (Conv2d::new(32, 256, 14, 14, 512, 3, 3).with_pad(1), 0.0795, 0.2889),
            (Conv2d::new(32, 64, 56, 56, 64, 3, 3).with_pad(1), 0.0619, 0.1341),
            (Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1), 0.0667, 0.2027),
            (Conv2d::new(8, 256, 56, 56, 64, 1, 1), 0.0103, 0.0199),
        ];
        for (p, tf32, x3) in measured {
            for (math, ms) in [(Math::Tf32, tf32), (Math::Tf32x3, x3)] {
                let predicted = plan(&p, &d, math).unwrap().predicted_us;
                let ratio = predicted / (ms * 1e3);
                assert!((1.0 / 1.35..=1.35).contains(&ratio), "{math:?} on {p}: predicted {predicted:.1} us, measured {:.1} us", ms * 1e3);
            }
        }
    }

    #[test]
    fn channels_off_the_chunk_are_refused_with_the_reason() {
        for p in [Conv2d::new(1, 6, 8, 8, 16, 3, 3), Conv2d::new(1, 8, 8, 8, 7, 3, 3)] {
            let e = plan(&p, &h100(), Math::Tf32).unwrap_err().to_string();
            assert!(e.contains("multiple of 4") && e.contains("wmma_nhwc_tf32"), "{p}: {e}");
        }
        assert!(plan_for_kernel(&Conv2d::new(1, 8, 8, 8, 8, 3, 3), &h100(), "wmma_nhwc_tf32_64x64").is_ok());
        assert!(plan_for_kernel(&Conv2d::new(1, 8, 8, 8, 8, 3, 3), &h100(), "wmma_nhwc_64x64").is_err());
    }
}
