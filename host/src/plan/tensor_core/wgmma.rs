//! Plans for `wgmma_nhwc`, `wgmma_ws_nhwc` and `wgmma_mc_nhwc` (kernels-gpu/src/tensor_core/wgmma.rs
//! and wgmma_ws.rs): family 3 on Hopper, the implicit GEMM of `wmma_nhwc` on plain NHWC / KRSC /
//! NHWK data with the warpgroup instruction `wgmma.mma_async` (sm_90a PTX, so compute
//! capability 9.0 only: H100, H200).
//!
//! Each step has two compiled tiles (`convrs_spec::wgmma_tiles!`, `wgmma_ws_tiles!`,
//! `wgmma_mc_tiles!`), 128 x BN x 64; one block per SM (their shared memory). The cost model is `wmma_nhwc`'s wave model
//! (`plan::model`) with a scale per step, fitted to the only measurements so far: the seed
//! shape 256,256,14,14 -> 512 3x3 p1 on an H100.

use convrs_spec::split_k;
use convrs_spec::wgmma::{self as spec, Tile, BLOCK_M, K_TILE};

use super::gemm_m;
use crate::dtype::DType;
use crate::plan::model::{blocks_per_sm, memory_us, waves, LAUNCH_US};
use crate::plan::{DeviceModel, LaunchPlan};
use crate::registry::{Family, KernelDesc};
use crate::{Algorithm, Conv2d, Error, Layout, Result};

/// One step of the Hopper kernels: its compiled tiles, launch and cost model.
struct Step {
    /// The registry names, fp16 then bf16.
    names: [&'static str; 2],
    tiles: &'static [Tile],
    threads: usize,
    /// Dynamic shared memory bytes per block of a tile.
    smem: fn(&Tile) -> usize,
    /// Whether the kernel takes the filter's TMA tensor map (boxes of BN / `cluster` rows).
    filter_map: bool,
    /// Whether it takes the input's im2col tensor map after the filter's.
    input_map: bool,
    /// Whether each tile's reduction is split over the grid's z slices (step 8), as many as the
    /// cost model finds fastest.
    split: bool,
    /// CTAs per cluster (compiled into the entries): the grid is a multiple of it.
    cluster: usize,
    /// Whether the kernel walks the output tiles on a persistent grid (one block per SM it can
    /// hold at once) instead of one block per tile.
    persistent: bool,
    /// Registers per thread as ptxas allocates them (12.9, sm_90a), for the occupancy estimate,
    /// and the relative rate of each tile, in the order of `tiles` (measurements, not contract).
    model: &'static [(usize, f64)],
    /// Measured time, less launch and the output write, over the modelled MAC time at the
    /// device's stated fp16 tensor peak (seed shape, the first tile).
    peak_scale: f64,
}

/// Step 3 of the family: one `cp.async` producer shared by both warpgroups. Fitted to the seed
/// shape on an H100 (BENCHMARKS.md, 2026-11-23): 0.2048 ms for 128x256, 0.2525 ms for 128x128.
const STEP3: Step = Step {
    names: ["wgmma_nhwc", "wgmma_nhwc_bf16"],
    tiles: &spec::TILES,
    threads: spec::THREADS,
    smem: Tile::smem_bytes,
    filter_map: false,
    input_map: false,
    split: false,
    cluster: 1,
    persistent: false,
    model: &[(163, 1.0), (96, 0.81)],
    peak_scale: 1.42,
};

/// Step 4, warp-specialized: a producer warpgroup (filters by TMA, activations by `cp.async`)
/// and two consumer warpgroups on an mbarrier ring. Fitted to the seed shape on an H100
/// (third session, fp16 out, 16-byte epilogue stores): 0.1674 ms for 128x256; the 128x128
/// tile's relative rate is the first session's (0.189 against 0.243 ms).
const STEP4: Step = Step {
    names: ["wgmma_ws_nhwc", "wgmma_ws_nhwc_bf16"],
    tiles: &spec::WS_TILES,
    threads: spec::WS_THREADS,
    smem: |t| spec::ws_smem_bytes(t.bn, t.stages),
    filter_map: true,
    input_map: false,
    split: false,
    cluster: 1,
    persistent: false,
    model: &[(168, 1.0), (168, 0.78)],
    peak_scale: 1.10,
};

/// Step 5: step 4 in clusters of two CTAs along M that share the filter tile, each copying half
/// of it into both by TMA multicast. On the seed shape it measured 1-2% slower than step 4
/// (H100, before the 16-byte epilogue), which the scale carries.
const STEP5: Step = Step {
    names: ["wgmma_mc_nhwc", "wgmma_mc_nhwc_bf16"],
    tiles: &spec::MC_TILES,
    threads: spec::WS_THREADS,
    smem: |t| spec::ws_smem_bytes(t.bn, t.stages),
    filter_map: true,
    input_map: false,
    split: false,
    cluster: spec::MC_CLUSTER,
    persistent: false,
    model: &[(168, 1.0), (168, 0.78)],
    peak_scale: 1.13,
};

/// Step 6: step 4 on a persistent grid; the producer fills the next tile's stages while the
/// consumers write the last one. Seed shape, H100, fp16 out: 0.1606 ms for 128x256.
const STEP6: Step = Step {
    names: ["wgmma_pws_nhwc", "wgmma_pws_nhwc_bf16"],
    tiles: &spec::PWS_TILES,
    cluster: 1,
    persistent: true,
    peak_scale: 1.05,
    ..STEP5
};

/// Step 6 in step 5's clusters. Seed shape, H100, fp16 out: 0.1601 ms for 128x256.
const STEP6_MC: Step = Step {
    names: ["wgmma_pmc_nhwc", "wgmma_pmc_nhwc_bf16"],
    tiles: &spec::PMC_TILES,
    persistent: true,
    peak_scale: 1.045,
    ..STEP5
};

/// Step 7: step 6 with the activations by im2col TMA copies (and half of each tile's 16-bit
/// stores under the next tile's first k-tiles). Seed shape, H100, fp16 out: 0.1557 ms for
/// 128x256, where step 6 in clusters measured 0.1624 ms in the same session.
const STEP7: Step = Step {
    names: ["wgmma_tma_nhwc", "wgmma_tma_nhwc_bf16"],
    tiles: &spec::TMA_TILES,
    input_map: true,
    // The 128x64 tile's rate: 16,64,80,350 -> 64 3x3 p1 measured 0.0867 ms (H100, fourth session).
    // The 128x32 tile's: 32,32,79,341 -> 32 5x10 s2 0.2319 ms and 16,192,28,28 -> 32 5x5 p2
    // 0.0268 ms (sixth session), so the automatic choice keeps `wmma_nhwc` (0.137 ms) on the first.
    model: &[(168, 1.0), (168, 0.78), (168, 0.66), (168, 0.37)],
    peak_scale: 1.0,
    ..STEP6
};

/// Step 7 in clusters: as fast on the seed shape (0.1556 ms), slower on smaller layers (K = 64
/// and 128: 6-24%), which the scale carries.
const STEP7_MC: Step = Step {
    names: ["wgmma_tmc_nhwc", "wgmma_tmc_nhwc_bf16"],
    tiles: &spec::TMC_TILES,
    input_map: true,
    peak_scale: 1.005,
    ..STEP6_MC
};

/// Step 8: step 7 with each tile's reduction split over the grid's z slices, for layers with
/// too few output tiles to fill the SMs; the slices' fp32 partial sums meet in a workspace,
/// where the last slice of each 16-row strip adds them up. Tiles up to 128 wide
/// (`convrs_spec::split_k::MAX_BN`).
const STEP8: Step = Step {
    names: ["wgmma_sk_nhwc", "wgmma_sk_nhwc_bf16"],
    split: true,
    tiles: spec::TMA_TILES.split_at(1).1,
    model: STEP7.model.split_at(1).1,
    ..STEP7
};

/// What a split costs besides its workspace traffic, microseconds: each strip's fence, count
/// and the last warp's reads of every slice. Fitted on an H100 (seventh session, the
/// few-tiles suite): step 8 measured 1-4 us above step 7 where the model gives both the same
/// mainloop time.
const SPLIT_US: f64 = 3.0;

/// The most slices step 8 splits a reduction into: past it the workspace traffic (an fp32
/// write and read per slice) outweighs filling the last SMs.
const MAX_SPLITS: usize = 32;

/// Modelled microseconds of tile `i` of `step` on `d` for `m x n` GEMM outputs over `taps` taps
/// of `c` channels (the last 64-channel k-tile of each tap charged in full), each tile's
/// reduction split over `splits` slices (1: not split).
#[allow(clippy::too_many_arguments)]
fn cost(step: &Step, d: &DeviceModel, i: usize, m: usize, n: usize, c: usize, taps: usize, splits: usize) -> f64 {
    let (t, (regs, efficiency)) = (&step.tiles[i], step.model[i]);
    let bps = blocks_per_sm(d, step.threads, regs, (step.smem)(t)) as f64;
    let blocks = (tiles(step, t, m, n) * splits) as f64;
    let ktiles = (c.div_ceil(K_TILE) * taps).div_ceil(splits);
    let macs = (BLOCK_M * t.bn * K_TILE) as f64 * ktiles as f64 / efficiency;
    // Step 7's im2col copies cost per pixel, not per byte: with C < 64 a k-tile's copy brings
    // C channels a pixel for the time of 64. Measured (H100): 16,16,24,240->32 3x3 0.0378 ms and
    // 32,32,79,341->32 5x10 s2 0.3035 ms, about 64 / C times the model without this factor.
    let macs = if step.input_map && c < K_TILE { macs * K_TILE as f64 / c as f64 } else { macs };
    let macs_per_sm = waves(d, blocks, bps, |b| b * macs);
    let macs_per_sm_us = d.f16_tflops * 1e6 / 2.0 / d.sms.max(1) as f64;
    // Plus the fp32 output written once, as the mma.sync plans charge it (plan::tensor_core::nhwc);
    // a split reduction writes and reads every slice's partial sums too.
    let out = (m * n * 4) as f64;
    let split = if splits > 1 { SPLIT_US + memory_us(d, 2.0 * splits as f64 * out) } else { 0.0 };
    LAUNCH_US + step.peak_scale * macs_per_sm / macs_per_sm_us + memory_us(d, out) + split
}

/// Output tiles of tile `t` of `step` for `m x n` GEMM outputs: the M tiles rounded up to whole
/// clusters, times the N tiles.
fn tiles(step: &Step, t: &Tile, m: usize, n: usize) -> usize {
    m.div_ceil(BLOCK_M * step.cluster) * step.cluster * n.div_ceil(t.bn)
}

/// Blocks of tile `i` of `step` that `d` holds at once.
fn resident(step: &Step, i: usize, d: &DeviceModel) -> usize {
    let t = &step.tiles[i];
    d.sms as usize * blocks_per_sm(d, step.threads, step.model[i].0, (step.smem)(t)).max(1)
}

/// Blocks of each z slice to launch with tile `i` of `step` split `splits` ways: one per output
/// tile, or on a persistent grid as many as `d` holds at once over all slices (whole clusters,
/// at least one), at most one per tile.
fn grid_blocks(step: &Step, i: usize, d: &DeviceModel, m: usize, n: usize, splits: usize) -> usize {
    let t = &step.tiles[i];
    let all = tiles(step, t, m, n);
    if !step.persistent {
        return all;
    }
    let per_slice = resident(step, i, d) / splits;
    all.min(per_slice / step.cluster * step.cluster).max(step.cluster)
}

/// A developer's override of step 8's choice, for measuring what the cost model predicts:
/// `CONVRS_SPLIT_K=BN,Z` plans only the tile BN columns wide split Z ways (a problem where that
/// is no candidate is refused). Unset in normal use.
fn forced_split() -> Result<Option<(usize, usize)>> {
    let Ok(text) = std::env::var("CONVRS_SPLIT_K") else { return Ok(None) };
    let bad = || Error::InvalidArgument(format!("CONVRS_SPLIT_K=`{text}`: expected BN,Z (tile width, split count), e.g. 128,4"));
    let (bn, z) = text.split_once(',').ok_or_else(bad)?;
    Ok(Some((bn.trim().parse().map_err(|_| bad())?, z.trim().parse().map_err(|_| bad())?)))
}

fn plan_step(problem: &Conv2d, device: &DeviceModel, step: &Step, bf16: bool) -> Result<LaunchPlan> {
    problem.validate()?;
    let p = problem;
    let refuse = |reason: String| Err(Error::Unsupported { algorithm: step.names[bf16 as usize], reason });
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
    if step.input_map {
        if let Err(reason) = crate::tensor_map::InputMapKey::new(0, p, DType::F16) {
            return refuse(reason);
        }
    }
    let m = gemm_m(p);
    let fits = |i: &usize| {
        let t = &step.tiles[*i];
        (step.smem)(t) <= device.smem_per_block as usize && tiles(step, t, m, p.k) <= i32::MAX as usize
    };
    // Step 8 tries every split up to one k-tile a slice, where the launch's counters have room
    // for its strips of 16 rows (a single k-tile, or too many strips, run as step 7); the
    // other steps take the reduction whole.
    let ktiles = p.c.div_ceil(K_TILE) * p.r * p.s;
    // Splits stop where every CTA would have one tile of one slice: a persistent CTA that walks
    // several tiles of a split runs each one's meeting in the workspace where step 7 overlaps
    // its epilogue (measured 2-6 us slower on the H100).
    let splits = |i: usize| {
        let count = tiles(step, &step.tiles[i], m, p.k);
        let most = ktiles.min(MAX_SPLITS).min(device.max_grid_z as usize).min(resident(step, i, device) / count.max(1));
        if step.split && most >= 2 && count * split_k::WARPS_PER_TILE <= split_k::MAX_UNITS { 2..=most } else { 1..=1 }
    };
    let cost_of = |&(i, z): &(usize, usize)| cost(step, device, i, m, p.k, p.c, p.r * p.s, z);
    let forced = if step.split { forced_split()? } else { None };
    let choices = (0..step.tiles.len()).filter(fits).flat_map(|i| splits(i).map(move |z| (i, z)));
    let choices = choices.filter(|&(i, z)| forced.is_none_or(|(bn, fz)| step.tiles[i].bn == bn && z == fz));
    let Some((i, z)) = choices.min_by(|a, b| cost_of(a).total_cmp(&cost_of(b))) else {
        if let Some((bn, z)) = forced {
            return refuse(format!("CONVRS_SPLIT_K={bn},{z} is not among this problem's candidates (tile widths {:?}, splits while every CTA keeps one tile)", step.tiles.iter().map(|t| t.bn).collect::<Vec<_>>()));
        }
        let least = step.tiles.iter().map(step.smem).min().unwrap_or(0);
        return refuse(format!("needs {least} bytes of shared memory per block (or the grid exceeds 2^31 blocks); the device allows {}", device.smem_per_block));
    };
    let t = &step.tiles[i];
    Ok(LaunchPlan {
        kernel: if bf16 { t.bf16 } else { t.fp16 },
        grid: (grid_blocks(step, i, device, m, p.k, z) as u32, 1, z as u32),
        block: (step.threads as u32, 1, 1),
        shared_bytes: (step.smem)(t) as u32,
        dtype: if bf16 { DType::BF16 } else { DType::F16 },
        out_dtype: DType::F32,
        predicted_us: cost_of(&(i, z)),
        filter_map_rows: step.filter_map.then_some((t.bn / step.cluster) as u32),
        input_map: step.input_map,
        workspace_bytes: if z > 1 { split_k::workspace_bytes(tiles(step, t, m, p.k), t.bn, z) } else { 0 },
    })
}

/// Every step, in the progression's order: `plan_of::<I, BF16>` plans step `STEPS[I]`.
const STEPS: [&Step; 8] = [&STEP3, &STEP4, &STEP5, &STEP6, &STEP6_MC, &STEP7, &STEP7_MC, &STEP8];

// Every step models each of its tiles (`cost` indexes `model` by tile).
const _: () = {
    let mut i = 0;
    while i < STEPS.len() {
        assert!(STEPS[i].model.len() == STEPS[i].tiles.len(), "a wgmma step's model and tile list differ in length");
        i += 1;
    }
};

/// The registry's plan of step `STEPS[I]`'s entries, the bf16 ones if `BF16`.
fn plan_of<const I: usize, const BF16: bool>(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_step(problem, device, STEPS[I], BF16)
}

/// Every entry point the plans can name, fp16 then bf16, step by step.
pub fn kernel_names() -> Vec<&'static str> {
    // Step 8 launches step 7's entries.
    STEPS.iter().filter(|s| !s.split).flat_map(|s| s.tiles.iter().map(|t| t.fp16).chain(s.tiles.iter().map(|t| t.bf16))).collect()
}

/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaNhwc,
    name: STEP3.names[0],
    family: Family::TensorCore,
    summary: "family 3 step 3 (Hopper): wgmma.mma_async implicit GEMM on plain channels-last data",
    dtype: DType::F16,
    outputs: &[DType::F16, DType::F32],
    layouts: (Layout::Nhwc, Layout::Nhwc, Layout::Nhwc),
    multiples: (1, 8, 8),
    plan: plan_of::<0, false>,
};

/// The registry's entry for bf16 data: the same kernel with the bf16 `wgmma`.
pub const KERNEL_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaNhwcBf16,
    name: STEP3.names[1],
    summary: "family 3 step 3 (Hopper) on bf16 data",
    dtype: DType::BF16,
    outputs: &[DType::BF16, DType::F32],
    plan: plan_of::<0, true>,
    ..KERNEL
};

/// The registry's entry for step 4, the warp-specialized kernel.
pub const KERNEL_WS: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaWsNhwc,
    name: STEP4.names[0],
    summary: "family 3 step 4 (Hopper): step 3 warp-specialized, filters by TMA, an mbarrier ring",
    plan: plan_of::<1, false>,
    ..KERNEL
};

/// Step 4 on bf16 data.
pub const KERNEL_WS_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaWsNhwcBf16,
    name: STEP4.names[1],
    summary: "family 3 step 4 (Hopper) on bf16 data",
    plan: plan_of::<1, true>,
    ..KERNEL_BF16
};

/// The registry's entry for step 5, step 4 in 2-CTA clusters with the filter multicast.
pub const KERNEL_MC: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaMcNhwc,
    name: STEP5.names[0],
    summary: "family 3 step 5 (Hopper): step 4 in clusters of 2 CTAs sharing each filter tile by TMA multicast",
    plan: plan_of::<2, false>,
    ..KERNEL
};

/// Step 5 on bf16 data.
pub const KERNEL_MC_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaMcNhwcBf16,
    name: STEP5.names[1],
    summary: "family 3 step 5 (Hopper) on bf16 data",
    plan: plan_of::<2, true>,
    ..KERNEL_BF16
};

/// The registry's entry for step 6, step 4 on a persistent grid.
pub const KERNEL_PWS: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaPwsNhwc,
    name: STEP6.names[0],
    summary: "family 3 step 6 (Hopper): step 4 on a persistent grid, the next tile's loads under the epilogue",
    plan: plan_of::<3, false>,
    ..KERNEL
};

/// Step 6 on bf16 data.
pub const KERNEL_PWS_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaPwsNhwcBf16,
    name: STEP6.names[1],
    summary: "family 3 step 6 (Hopper) on bf16 data",
    plan: plan_of::<3, true>,
    ..KERNEL_BF16
};

/// Step 6 in step 5's clusters.
pub const KERNEL_PMC: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaPmcNhwc,
    name: STEP6_MC.names[0],
    summary: "family 3 step 6 (Hopper) in clusters of 2 with the filter multicast",
    plan: plan_of::<4, false>,
    ..KERNEL
};

/// Step 6 in clusters on bf16 data.
pub const KERNEL_PMC_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaPmcNhwcBf16,
    name: STEP6_MC.names[1],
    summary: "family 3 step 6 (Hopper) in clusters on bf16 data",
    plan: plan_of::<4, true>,
    ..KERNEL_BF16
};

/// The registry's entry for step 7, step 6 with activations by im2col TMA.
pub const KERNEL_TMA: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaTmaNhwc,
    name: STEP7.names[0],
    summary: "family 3 step 7 (Hopper): step 6 with the activations by im2col TMA copies too",
    plan: plan_of::<5, false>,
    ..KERNEL
};

/// Step 7 on bf16 data.
pub const KERNEL_TMA_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaTmaNhwcBf16,
    name: STEP7.names[1],
    summary: "family 3 step 7 (Hopper) on bf16 data",
    plan: plan_of::<5, true>,
    ..KERNEL_BF16
};

/// Step 7 in step 5's clusters.
pub const KERNEL_TMC: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaTmcNhwc,
    name: STEP7_MC.names[0],
    summary: "family 3 step 7 (Hopper) in clusters of 2 with the filter multicast",
    plan: plan_of::<6, false>,
    ..KERNEL
};

/// Step 7 in clusters on bf16 data.
pub const KERNEL_TMC_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaTmcNhwcBf16,
    name: STEP7_MC.names[1],
    summary: "family 3 step 7 (Hopper) in clusters on bf16 data",
    plan: plan_of::<6, true>,
    ..KERNEL_BF16
};

/// The registry's entry for step 8, step 7 with the reduction split over z slices.
pub const KERNEL_SK: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaSkNhwc,
    name: STEP8.names[0],
    summary: "family 3 step 8 (Hopper): step 7 with each tile's reduction split over the grid (split-K), for layers with few output tiles",
    plan: plan_of::<7, false>,
    ..KERNEL
};

/// Step 8 on bf16 data.
pub const KERNEL_SK_BF16: KernelDesc = KernelDesc {
    algorithm: Algorithm::WgmmaSkNhwcBf16,
    name: STEP8.names[1],
    summary: "family 3 step 8 (Hopper) on bf16 data",
    plan: plan_of::<7, true>,
    ..KERNEL_BF16
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predictions_track_the_h100_measurements() {
        let d = DeviceModel::named("h100").unwrap();
        let seed = Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1);
        let m = 256 * 14 * 14;
        for (step, i, measured_us) in [(&STEP3, 0, 204.8), (&STEP3, 1, 252.5), (&STEP4, 0, 167.4), (&STEP6, 0, 160.6), (&STEP6_MC, 0, 160.1), (&STEP7, 0, 155.7), (&STEP7_MC, 0, 155.6)] {
            let ratio = cost(step, &d, i, m, 512, 256, 9, 1) / measured_us;
            assert!((0.9..=1.1).contains(&ratio), "{} tile {i}: predicted/measured {ratio:.2}", step.names[0]);
        }
        let plan = Algorithm::WgmmaNhwc.plan(&seed, &d).unwrap();
        assert_eq!((plan.kernel, plan.block, plan.grid), ("wgmma_nhwc_128x256k64", (256, 1, 1), (784, 1, 1)));
        assert_eq!(plan.shared_bytes as usize, 4 * 48 * 1024 + 1024);
        // The mma.sync kernel's own model predicts it slower on this shape, so Auto prefers this one.
        let mma = crate::plan::tensor_core::nhwc::plan(&seed, &d).unwrap();
        assert!(plan.predicted_us < mma.predicted_us, "{} vs {}", plan.predicted_us, mma.predicted_us);
        // Step 4 takes the filter's tensor map with boxes of BN rows; step 3 none.
        assert_eq!(plan.filter_map_rows, None);
        let ws = Algorithm::WgmmaWsNhwc.plan(&seed, &d).unwrap();
        assert_eq!((ws.kernel, ws.block, ws.grid, ws.filter_map_rows), ("wgmma_ws_nhwc_128x256k64", (384, 1, 1), (784, 1, 1), Some(256)));
        assert_eq!(ws.shared_bytes as usize, 4 * 48 * 1024 + 1024 + 128);
        assert!(ws.predicted_us < plan.predicted_us);
        // Step 5: 392 M tiles in 196 clusters of 2 (an odd count rounds up), boxes of half the tile.
        let mc = Algorithm::WgmmaMcNhwc.plan(&seed, &d).unwrap();
        assert_eq!((mc.kernel, mc.grid, mc.filter_map_rows), ("wgmma_mc_nhwc_128x256k64", (784, 1, 1), Some(128)));
        // Step 6: one block per SM on the 784 tiles; never more blocks than tiles.
        assert_eq!(Algorithm::WgmmaPwsNhwc.plan(&seed, &d).unwrap().grid, (d.sms, 1, 1));
        assert_eq!(Algorithm::WgmmaPmcNhwc.plan(&seed, &d).unwrap().grid, (d.sms / 2 * 2, 1, 1));
        assert_eq!(Algorithm::WgmmaPwsNhwc.plan(&Conv2d::new(1, 64, 9, 9, 64, 3, 3), &d).unwrap().grid, (1, 1, 1));
        let odd = Algorithm::WgmmaMcNhwc.plan(&Conv2d::new(1, 64, 9, 9, 64, 3, 3).with_pad(1), &d).unwrap();
        assert_eq!((odd.kernel, odd.grid, odd.filter_map_rows), ("wgmma_mc_nhwc_128x128k64", (2, 1, 1), Some(64)));
    }

    #[test]
    fn refuses_other_devices_and_channel_counts_with_reasons() {
        let p = Conv2d::new(2, 64, 9, 9, 64, 3, 3).with_pad(1);
        for name in ["a100", "l40s", "rtx4090"] {
            let e = Algorithm::WgmmaNhwc.plan(&p, &DeviceModel::named(name).unwrap()).unwrap_err();
            assert!(e.to_string().contains("compute capability 9.0"), "{name}: {e}");
        }
        let h100 = DeviceModel::named("h100").unwrap();
        let unloaded = DeviceModel { sm90a: false, ..h100.clone() };
        assert!(Algorithm::WgmmaNhwc.plan(&p, &unloaded).unwrap_err().to_string().contains("did not load"));
        assert!(Algorithm::WgmmaNhwcBf16.plan(&Conv2d { c: 12, ..p }, &h100).unwrap_err().to_string().contains("multiples of 8"));
        assert_eq!(Algorithm::WgmmaNhwcBf16.plan(&p, &h100).unwrap().kernel, "wgmma_nhwc_bf16_128x128k64");
        assert_eq!(Algorithm::WgmmaWsNhwcBf16.plan(&p, &h100).unwrap().kernel, "wgmma_ws_nhwc_bf16_128x128k64");
        assert!(Algorithm::WgmmaWsNhwc.plan(&p, &unloaded).unwrap_err().to_string().contains("did not load"));
        assert_eq!(kernel_names().len(), 32);
    }
}
