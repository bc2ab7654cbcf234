//! Plan for `wgmma_nhwc` (kernels-gpu/src/tensor_core/wgmma.rs): family 3 on Hopper, the
//! implicit GEMM of `wmma_nhwc` on plain NHWC / KRSC / NHWK data with the warpgroup instruction
//! `wgmma.mma_async` (sm_90a PTX, so compute capability 9.0 only: H100, H200).
//!
//! Two compiled tiles (`convrs_spec::wgmma_tiles!`), 128 x BN x 64 with 2 warpgroups and a
//! `cp.async` ring; one block per SM (their shared memory). The cost model is `wmma_nhwc`'s wave
//! model (`plan::model`) with its own scale, fitted to the only measurements so far: the seed
//! shape 256,256,14,14 -> 512 3x3 p1 on an H100 (BENCHMARKS.md, 2026-11-23), 0.2048 ms for
//! 128x256 and 0.2525 ms for 128x128.

use convrs_spec::wgmma::{self as spec, BLOCK_M, K_TILE, THREADS};

use crate::dtype::DType;
use crate::plan::model::{blocks_per_sm, waves, LAUNCH_US};
use crate::plan::{DeviceModel, LaunchPlan};
use crate::registry::{Family, KernelDesc};
use crate::{Algorithm, Conv2d, Error, Layout, Result};

/// Registers per thread as ptxas allocates them (12.9, sm_90a), for the occupancy estimate, and
/// the relative rate of each tile of `spec::TILES`, in its order (measurements, not contract).
const MODEL: [(usize, f64); spec::TILES.len()] = [
    (163, 1.0),  // 128x256: 0.2048 ms on the seed shape
    (96, 0.81), // 128x128: 0.2525 ms on the same problem and the same number of waves' MACs
];

/// Measured time over the modelled MAC time at the device's stated fp16 tensor peak (seed
/// shape, 128x256): one producer shared by both warpgroups, no TMA, no warp specialization yet.
const PEAK_SCALE: f64 = 1.67;

const fn algorithm(bf16: bool) -> &'static str {
    if bf16 { "wgmma_nhwc_bf16" } else { "wgmma_nhwc" }
}

/// Modelled microseconds of tile `i` on `d` for `m x n` GEMM outputs over `taps` taps of `c`
/// channels (the last 64-channel k-tile of each tap charged in full).
fn cost(d: &DeviceModel, i: usize, m: usize, n: usize, c: usize, taps: usize) -> f64 {
    let (t, (regs, efficiency)) = (&spec::TILES[i], MODEL[i]);
    let blocks = (m.div_ceil(BLOCK_M) * n.div_ceil(t.bn)) as f64;
    let bps = blocks_per_sm(d, THREADS, regs, t.smem_bytes()) as f64;
    let macs = (BLOCK_M * t.bn) as f64 * (c.div_ceil(K_TILE) * K_TILE) as f64 * taps as f64 / efficiency;
    let macs_per_sm = waves(d, blocks, bps, |b| b * macs);
    let macs_per_sm_us = d.f16_tflops * 1e6 / 2.0 / d.sms.max(1) as f64;
    LAUNCH_US + PEAK_SCALE * macs_per_sm / macs_per_sm_us
}

fn plan_typed(problem: &Conv2d, device: &DeviceModel, bf16: bool) -> Result<LaunchPlan> {
    problem.validate()?;
    let p = problem;
    let refuse = |reason: String| Err(Error::Unsupported { algorithm: algorithm(bf16), reason });
    if device.compute_capability != (9, 0) {
        let (major, minor) = device.compute_capability;
        return refuse(format!("needs compute capability 9.0 (H100, H200): its sm_90a code runs nowhere else, and this device is {major}.{minor}"));
    }
    if !device.sm90a {
        return refuse("the sm_90a PTX module did not load on this device (see the warning at start-up)".into());
    }
    if p.c % 8 != 0 || p.k % 8 != 0 {
        return refuse(format!("C = {} and K = {} must be multiples of 8: the kernel moves channels in 16-byte (8 x fp16) pieces", p.c, p.k));
    }
    let (out_p, out_q) = p.output_hw();
    let m = p.n * out_p * out_q;
    let fits = |i: &usize| {
        let t = &spec::TILES[*i];
        t.smem_bytes() <= device.smem_per_block as usize && m.div_ceil(BLOCK_M).checked_mul(p.k.div_ceil(t.bn)).is_some_and(|b| b <= i32::MAX as usize)
    };
    let cost_of = |i: &usize| cost(device, *i, m, p.k, p.c, p.r * p.s);
    let Some(i) = (0..spec::TILES.len()).filter(fits).min_by(|a, b| cost_of(a).total_cmp(&cost_of(b))) else {
        let least = spec::TILES.iter().map(|t| t.smem_bytes()).min().unwrap_or(0);
        return refuse(format!("needs {least} bytes of shared memory per block (or the grid exceeds 2^31 blocks); the device allows {}", device.smem_per_block));
    };
    let t = &spec::TILES[i];
    Ok(LaunchPlan {
        kernel: if bf16 { t.bf16 } else { t.fp16 },
        grid: ((m.div_ceil(BLOCK_M) * p.k.div_ceil(t.bn)) as u32, 1, 1),
        block: (THREADS as u32, 1, 1),
        shared_bytes: t.smem_bytes() as u32,
        dtype: if bf16 { DType::BF16 } else { DType::F16 },
        out_dtype: DType::F32,
        predicted_us: cost_of(&i),
    })
}

pub fn plan(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_typed(problem, device, false)
}

/// The plan of the bf16 entries (`wgmma_nhwc_bf16`).
pub fn plan_bf16(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_typed(problem, device, true)
}

/// Every entry point the plans can name, fp16 then bf16.
pub fn kernel_names() -> Vec<&'static str> {
    spec::TILES.iter().map(|t| t.fp16).chain(spec::TILES.iter().map(|t| t.bf16)).collect()
}

/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaNhwc,
    name: algorithm(false),
    family: Family::TensorCore,
    summary: "family 3 step 3 (Hopper): wgmma.mma_async implicit GEMM on plain channels-last data",
    dtype: DType::F16,
    outputs: &[DType::F16, DType::F32],
    layouts: (Layout::Nhwc, Layout::Nhwc, Layout::Nhwc),
    multiples: (1, 8, 8),
    plan,
};

/// The registry's entry for bf16 data: the same kernel with the bf16 `wgmma`.
pub const KERNEL_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaNhwcBf16,
    name: algorithm(true),
    summary: "family 3 step 3 (Hopper) on bf16 data",
    dtype: DType::BF16,
    outputs: &[DType::BF16, DType::F32],
    plan: plan_bf16,
    ..KERNEL
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predictions_track_the_h100_measurements() {
        let d = DeviceModel::named("h100").unwrap();
        let seed = Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1);
        let m = 256 * 14 * 14;
        for (i, measured_us) in [(0, 204.8), (1, 252.5)] {
            let ratio = cost(&d, i, m, 512, 256, 9) / measured_us;
            assert!((0.9..=1.1).contains(&ratio), "tile {i}: predicted/measured {ratio:.2}");
        }
        let plan = plan(&seed, &d).unwrap();
        assert_eq!((plan.kernel, plan.block, plan.grid), ("wgmma_nhwc_128x256k64", (256, 1, 1), (784, 1, 1)));
        assert_eq!(plan.shared_bytes as usize, 4 * 48 * 1024 + 1024);
        // The mma.sync kernel's own model predicts it slower on this shape, so Auto prefers this one.
        let mma = crate::plan::tensor_core::nhwc::plan(&seed, &d).unwrap();
        assert!(plan.predicted_us < mma.predicted_us, "{} vs {}", plan.predicted_us, mma.predicted_us);
    }

    #[test]
    fn refuses_other_devices_and_channel_counts_with_reasons() {
        let p = Conv2d::new(2, 64, 9, 9, 64, 3, 3).with_pad(1);
        for name in ["a100", "l40s", "rtx4090"] {
            let e = plan(&p, &DeviceModel::named(name).unwrap()).unwrap_err();
            assert!(e.to_string().contains("compute capability 9.0"), "{name}: {e}");
        }
        let h100 = DeviceModel::named("h100").unwrap();
        let unloaded = DeviceModel { sm90a: false, ..h100.clone() };
        assert!(plan(&p, &unloaded).unwrap_err().to_string().contains("did not load"));
        assert!(plan_bf16(&Conv2d { c: 12, ..p }, &h100).unwrap_err().to_string().contains("multiples of 8"));
        assert_eq!(plan_bf16(&p, &h100).unwrap().kernel, "wgmma_nhwc_bf16_128x128k64");
        assert_eq!(kernel_names().len(), 4);
    }
}
