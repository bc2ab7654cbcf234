//! Plan for `wmma_smallc` (kernels-gpu/src/tensor_core/small_c.rs): the tensor-core implicit
//! GEMM whose reduction runs over taps and channels together, for layers with few input
//! channels (C = 1 or 3: a network's first layer, a speech front end), which `wmma_nhwc` runs
//! padded to 8 channels with most of every k-tile zeros.
//!
//! Two tiles, 128 x 32 and 128 x 64, 4 warps. The cost model charges what the kernel does per
//! k-tile of 32 reduction indices: every thread gathers its row's 32 values one load at a time
//! ([`GATHER_ISSUE_SLOTS`] issue slots each), the warps run the `mma.sync`s at
//! [`MMA_FRACTION`] of the tensor peak, and the output write follows (it overlaps little: the
//! blocks are short). Both constants are fitted to nine deepbench layers with C = 1 or 3 on an
//! H100 (2026-11-23, fp16, `convrs bench --all-kernels`; BENCHMARKS.md), which the model meets
//! within 0.70-1.26x. The gather makes it slower than `wmma_nhwc` once C is a multiple of 8, so
//! the automatic choice takes it for small C only.

use convrs_spec::small_c::{self as spec, BLOCK_M, K_TILE, THREADS};

use super::gemm_m;
use crate::dtype::DType;
use crate::plan::model::{blocks_per_sm, memory_us, waves, LAUNCH_US};
use crate::plan::{DeviceModel, LaunchPlan};
use crate::plan::{Family, KernelDesc};
use crate::{Algorithm, Conv2d, Error, Layout, Result};

/// Registers per thread (ptxas, sm_80), in the order of `spec::TILES`.
const REGS: [usize; spec::TILES.len()] = [122, 164];

/// SM issue slots per gathered element (about 12 instructions in the PTX: bounds checks, index
/// steps, the load, packing; the rest is load latency the 12 to 16 resident warps do not hide).
/// Fitted, see the module docs.
const GATHER_ISSUE_SLOTS: f64 = 36.0;

/// The fraction of the device's stated fp16 tensor peak its `mma.sync`s reach: 8 of them per
/// warp between barriers, from a 32-row warp tile. Fitted, see the module docs.
const MMA_FRACTION: f64 = 0.1;

/// The registry's name (one kernel for both element types).
const NAME: &str = "wmma_smallc";

/// Modelled microseconds of tile `i` on `d` for `p`, whose GEMM has `m` rows.
fn cost(d: &DeviceModel, i: usize, p: &Conv2d, m: usize, out_bytes: usize) -> f64 {
    let t = &spec::TILES[i];
    let reduction = (p.r * p.s * p.c).div_ceil(K_TILE) * K_TILE;
    let blocks = (m.div_ceil(BLOCK_M) * p.k.div_ceil(t.bn)) as f64;
    let bps = blocks_per_sm(d, THREADS, REGS[i], spec::smem_bytes(t.bn)) as f64;
    // Per block: the A gather (one row a thread) and B's BN rows, then the MACs of the tile.
    let issue_per_us = d.clock_mhz as f64 * 4.0 * 32.0;
    let gather_us = (BLOCK_M + t.bn) as f64 * reduction as f64 * GATHER_ISSUE_SLOTS / issue_per_us;
    let mma_per_us = d.f16_tflops * 1e6 / 2.0 / d.sms.max(1) as f64 * MMA_FRACTION;
    let mma_us = (BLOCK_M * t.bn * reduction) as f64 / mma_per_us;
    let compute = waves(d, blocks, bps, |b| b * (gather_us + mma_us));
    LAUNCH_US + compute + memory_us(d, (m * p.k * out_bytes) as f64)
}

fn plan_typed(problem: &Conv2d, device: &DeviceModel, bf16: bool) -> Result<LaunchPlan> {
    problem.validate()?;
    let p = problem;
    if p.k % 8 != 0 {
        return Err(Error::Unsupported { algorithm: NAME, reason: format!("K = {} must be a multiple of 8: the kernel stores output channels in pairs of 8-column groups", p.k) });
    }
    let m = gemm_m(p);
    // The output width is not part of the choice (the plans answer for fp32 outputs).
    let cost_of = |i: &usize| cost(device, *i, p, m, 4);
    let fits = |i: &usize| m.div_ceil(BLOCK_M).checked_mul(p.k.div_ceil(spec::TILES[*i].bn)).is_some_and(|b| b <= i32::MAX as usize);
    let Some(i) = (0..spec::TILES.len()).filter(fits).min_by(|a, b| cost_of(a).total_cmp(&cost_of(b))) else {
        return Err(Error::Unsupported { algorithm: NAME, reason: "the grid exceeds 2^31 blocks".into() });
    };
    let t = &spec::TILES[i];
    Ok(LaunchPlan::new(if bf16 { t.bf16 } else { t.fp16 }, ((m.div_ceil(BLOCK_M) * p.k.div_ceil(t.bn)) as u32, 1, 1), (THREADS as u32, 1, 1), spec::smem_bytes(t.bn) as u32, if bf16 { DType::BF16 } else { DType::F16 }, cost_of(&i)))
}

pub fn plan(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_typed(problem, device, false)
}

/// The plan of the bf16 entries.
pub fn plan_bf16(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_typed(problem, device, true)
}

/// Every entry point the plans can name, fp16 then bf16.
pub fn kernel_names() -> Vec<&'static str> {
    spec::TILES.iter().map(|t| t.fp16).chain(spec::TILES.iter().map(|t| t.bf16)).collect()
}

/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::WmmaSmallC,
    name: NAME,
    family: Family::TensorCore,
    summary: "family 3 step 2b: tensor cores for few input channels (C = 1, 3), taps folded into the reduction",
    dtypes: &[DType::F16, DType::BF16],
    layouts: (Layout::Nhwc, Layout::Nhwc, Layout::Nhwc),
    multiples: (1, 1, 8),
    precision: crate::Precision::Fma,
    planner: |_, p, dtype, d| if dtype == DType::BF16 { plan_bf16(p, d) } else { plan(p, d) },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_any_channel_count_and_small_k_gets_the_narrow_tile() {
        let d = DeviceModel::named("h100").unwrap();
        let speech = Conv2d::new(4, 1, 161, 700, 32, 5, 20).with_stride(2);
        let speech_plan = plan(&speech, &d).unwrap();
        assert_eq!((speech_plan.kernel, speech_plan.block, speech_plan.shared_bytes), ("wmma_smallc_128x32", (128, 1, 1), spec::smem_bytes(32) as u32));
        assert_eq!(speech_plan.grid.0 as usize, (4 * 79 * 341usize).div_ceil(128));
        let first = Conv2d::new(8, 3, 224, 224, 64, 3, 3).with_pad(1);
        assert_eq!(plan_bf16(&first, &d).unwrap().kernel, "wmma_smallc_bf16_128x64");
        assert!(plan(&Conv2d { k: 12, ..first }, &d).unwrap_err().to_string().contains("multiple of 8"));
        assert_eq!(kernel_names().len(), 4);
    }

    /// Within 1.6x of the H100 (fp16 outputs, median of 50, 2026-11-23), as every plan.
    #[test]
    fn predictions_track_the_h100_measurements() {
        let d = DeviceModel::named("h100").unwrap();
        let speech = |n| Conv2d::new(n, 1, 161, 700, 32, 5, 20).with_stride(2);
        let measured = [
            (speech(4), 40.7),
            (speech(32), 206.8),
            (Conv2d::new(16, 1, 48, 480, 16, 3, 3).with_pad(1), 30.4),
            (Conv2d::new(8, 3, 224, 224, 64, 3, 3).with_pad(1), 81.3),
            (Conv2d::new(16, 3, 224, 224, 64, 7, 7).with_pad(3).with_stride(2), 109.7),
            (Conv2d::new(8, 3, 108, 108, 64, 3, 3).with_pad(1).with_stride(2), 11.3),
        ];
        for (p, us) in measured {
            let ratio = plan(&p, &d).unwrap().predicted_us / us;
            assert!((1.0 / 1.6..=1.6).contains(&ratio), "{p}: predicted/measured {ratio:.2}");
        }
    }

    #[test]
    fn auto_takes_it_for_few_channels_only() {
        let d = DeviceModel::named("h100").unwrap();
        let nhwc = |p: &Conv2d| crate::plan::tensor_core::nhwc::plan(&KERNEL.run_problem(p), &d).map(|p| p.predicted_us);
        // C = 1 and 3: padded to 8, most of wmma_nhwc's k-tiles are zeros.
        for p in [Conv2d::new(4, 1, 161, 700, 32, 5, 20).with_stride(2), Conv2d::new(8, 3, 224, 224, 64, 3, 3).with_pad(1)] {
            let padded = Conv2d { c: 8, ..p };
            assert!(plan(&p, &d).unwrap().predicted_us < nhwc(&padded).unwrap(), "{p}");
        }
        // C = 64: the 16-byte copies of wmma_nhwc win.
        let wide = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1);
        assert!(plan(&wide, &d).unwrap().predicted_us > nhwc(&wide).unwrap());
    }
}
