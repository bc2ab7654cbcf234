//! Plans for family 3 on Hopper (kernels-gpu/src/tensor_core/hopper/): the implicit GEMM of
//! `wmma_nhwc` on plain NHWC / KRSC / NHWK data with the warpgroup instruction `wgmma.mma_async`
//! (sm_90a PTX, so compute capability 9.0 only: H100, H200).
//!
//! Every configuration is a row of `convrs_spec::hopper_configs!` ([`CONFIGS`]); each distinct
//! policy among them is one registry kernel ([`KERNELS`], named by `Policy::name`) that reads
//! fp16 and bf16, and whose plan picks the tile (and under split-K the split count) with the
//! lowest predicted time. The cost model is `wmma_nhwc`'s wave model (`plan::model`) with one
//! rate per configuration ([`RATES`]), fitted to the H100.

use convrs_spec::hopper::{nchw_slots_copy, nchw_store_runs, nchw_store_transposed, patch_geometry, run_width, plane_copies_direct, plane_gemm, plane_pixel_rows, PatchGeometry, plane_row_pitch, plane_rows, Config, Math, Policy, Producer, Schedule, BLOCK_M, CONFIGS};
use convrs_spec::split_k;

use super::tensor_core::gemm_m;
use crate::dtype::DType;
use crate::plan::model::{blocks_per_sm, memory_us, waves, LAUNCH_US};
use crate::plan::{DeviceModel, Family, KernelDesc, LaunchPlan};
use crate::{Algorithm, Conv2d, Error, Layout, Precision, Result};

/// Measured time over the modelled MAC time at the device's stated fp16 tensor peak (less
/// launch and the output write), per configuration, by its fp16 entry: the policy's scale over
/// the tile's relative efficiency. Fitted on an H100 to the seed shape 256,256,14,14 -> 512 3x3
/// (the 128x256 tiles), and to the layers each narrower tile was built for (BENCHMARKS.md,
/// 2026-11-23 sessions one to six): the 128x128 tiles run at 0.78 (0.81 for multistage) of the
/// 128x256 tile's rate, 128x64 at 0.66 and 128x32 at 0.37.
pub const RATES: [(&str, f64); 69] = [
    ("wgmma_multistage_128x256k64", 1.42),
    ("wgmma_multistage_128x128k64", 1.42 / 0.81),
    ("wgmma_ws_cpasync_128x256k64", 1.10),
    ("wgmma_ws_cpasync_128x128k64", 1.10 / 0.78),
    // Clusters measured 1-2% slower than step 4 on the seed shape.
    ("wgmma_ws_cpasync_cluster2_128x256k64", 1.13),
    ("wgmma_ws_cpasync_cluster2_128x128k64", 1.13 / 0.78),
    ("wgmma_ws_cpasync_persistent_128x256k64", 1.05),
    ("wgmma_ws_cpasync_persistent_128x128k64", 1.05 / 0.78),
    ("wgmma_ws_cpasync_persistent_cluster2_128x256k64", 1.045),
    ("wgmma_ws_cpasync_persistent_cluster2_128x128k64", 1.045 / 0.78),
    ("wgmma_ws_tma_persistent_128x256k64", 1.0),
    ("wgmma_ws_tma_persistent_128x128k64", 1.0 / 0.78),
    ("wgmma_ws_tma_persistent_128x64k64", 1.0 / 0.66),
    // The automatic choice keeps `wmma_nhwc` where this tile measured slower (5x10 s2, K = 32).
    ("wgmma_ws_tma_persistent_128x32k64", 1.0 / 0.37),
    // As fast on the seed shape, slower on smaller layers (K = 64 and 128: 6-24%).
    ("wgmma_ws_tma_persistent_cluster2_128x256k64", 1.005),
    ("wgmma_ws_tma_persistent_cluster2_128x128k64", 1.005 / 0.78),
    ("wgmma_ws_tma_splitk_128x128k64", 1.0 / 0.78),
    ("wgmma_ws_tma_splitk_128x64k64", 1.0 / 0.66),
    ("wgmma_ws_tma_splitk_128x32k64", 1.0 / 0.37),
    // Ping-pong: step 7's rates times 1.05. On deepbench part 1/2 (H100, sixteenth session,
    // BENCHMARKS.md) it ran at 0.98x step 7's speed bare (0.64x to 1.24x by shape) and 0.90x
    // with bias+ReLU (0.62x to 1.27x): a warpgroup's epilogue covers 128 rows, twice step 7's,
    // and hides under the other's mainloop only where a CTA has several tiles. Until a model of
    // that overlap is fitted, Auto keeps step 7 and ping-pong runs where asked for.
    ("wgmma_ws_tma_pingpong_128x128k64", 1.05 / 0.78),
    ("wgmma_ws_tma_pingpong_128x64k64", 1.05 / 0.66),
    ("wgmma_ws_tma_pingpong_tf32_128x128k32", 1.05 / 0.78),
    ("wgmma_ws_tma_pingpong_tf32_128x64k32", 1.05 / 0.66),
    // Step 12, 64-row ping-pong, fitted to deepbench fp16 on the H100 (BENCHMARKS.md, eighteenth
    // session) where its tiles fill several waves: 64x256 at 1.06 of step 7's 128x256 rate,
    // 64x128 at 1.16 of 128x128's, 64x64 at 1.45 of 128x64's, 64x32 at 1.27 of 128x32's. On
    // layers of few tiles the waves then favour it (twice the tiles, each half the work): with
    // these rates the model picks the faster of it and step 7 on 66 of the 80 dense deepbench
    // shapes, 1.3% from the per-shape best.
    ("wgmma_ws_tma_pingpong_m64_64x256k64", 1.06),
    ("wgmma_ws_tma_pingpong_m64_64x128k64", 1.16 / 0.78),
    ("wgmma_ws_tma_pingpong_m64_64x64k64", 1.45 / 0.66),
    ("wgmma_ws_tma_pingpong_m64_64x32k64", 1.27 / 0.37),
    // The TF32 rows, fitted the same way to deepbench fp32 in TF32: 64x256 at 1.2, 64x128 at
    // 1.1, 64x64 at 1.15, 64x32 at 1.25 of step 7's TF32 rates; the model then picks the faster
    // on 56 of 80 shapes (the rest are within 5%), 1.3% from the per-shape best.
    ("wgmma_ws_tma_pingpong_m64_tf32_64x256k32", 1.2),
    ("wgmma_ws_tma_pingpong_m64_tf32_64x128k32", 1.1 / 0.78),
    ("wgmma_ws_tma_pingpong_m64_tf32_64x64k32", 1.15 / 0.66),
    ("wgmma_ws_tma_pingpong_m64_tf32_64x32k32", 1.25 / 0.37),
    // NCHW planes: step 7's rates times 1.15, the median of its time over step 7's on the same
    // 19 layers (the 1x1 stride-1 layers of deepbench and resnet50 with H*W a multiple of 8;
    // H100, BENCHMARKS.md, eleventh session; 1.05x to 1.48x).
    ("wgmma_nchw1x1_persistent_128x256k64", 1.15),
    ("wgmma_nchw1x1_persistent_128x128k64", 1.15 / 0.78),
    ("wgmma_nchw1x1_persistent_128x64k64", 1.15 / 0.66),
    // Step 15, NCHW planes on 64-row ping-pong tiles: step 12's rates times step 9's 1.15
    // (not yet fitted).
    ("wgmma_nchw1x1_pingpong_m64_64x256k64", 1.06 * 1.15),
    ("wgmma_nchw1x1_pingpong_m64_64x128k64", 1.16 * 1.15 / 0.78),
    ("wgmma_nchw1x1_pingpong_m64_64x64k64", 1.45 * 1.15 / 0.66),
    // Step 18, NCHW planes on step 10's 128-row ping-pong tiles: step 10's rates times step 9's
    // 1.15 (not fitted; measured 0.82-1.17x these predictions on the 31 1x1 layers of resnet50
    // and deepbench it ran, H200, fifty-third session: the closest of the three plane kernels).
    ("wgmma_nchw1x1_pingpong_128x128k64", 1.05 * 1.15 / 0.78),
    ("wgmma_nchw1x1_pingpong_128x64k64", 1.05 * 1.15 / 0.66),
    // Step 16, steps 7, 10 and 12 storing NCHW through shared memory: their rates times the
    // median of their time over their NHWC twin's on five layers (`convrs run`, L2-warm; H100,
    // BENCHMARKS.md, twenty-ninth session): step 7's 1.23 (0.99-1.68), step 12's 1.0
    // (1.0-1.79); step 10's 1.21, its one layer where the twin ran the same 128x128 tile (on the
    // others the twin ran 128x64; step 16's 128x64, added later, takes the same ratio until
    // measured). The worst are the small 14x14 layers, one tile a CTA, where the staged
    // store's latency is not hidden; the model does not see that.
    ("wgmma_ws_tma_persistent_to_nchw_128x128k64", 1.23 / 0.78),
    ("wgmma_ws_tma_persistent_to_nchw_128x64k64", 1.23 / 0.66),
    ("wgmma_ws_tma_persistent_to_nchw_128x32k64", 1.23 / 0.37),
    ("wgmma_ws_tma_pingpong_to_nchw_128x128k64", 1.21 * 1.05 / 0.78),
    ("wgmma_ws_tma_pingpong_to_nchw_128x64k64", 1.21 * 1.05 / 0.66),
    ("wgmma_ws_tma_pingpong_m64_to_nchw_64x256k64", 1.06),
    ("wgmma_ws_tma_pingpong_m64_to_nchw_64x128k64", 1.16 / 0.78),
    ("wgmma_ws_tma_pingpong_m64_to_nchw_64x64k64", 1.45 / 0.66),
    ("wgmma_ws_tma_pingpong_m64_to_nchw_64x32k64", 1.27 / 0.37),
    // NCHW rows: step 7's rates times 3.0, the worst of its time over step 7's per output column
    // it computes (Q rounded up to 64) on the 10 layers of `dev/suites/nchw-layers.csv` it
    // takes (1.2x to 3.0x, median 1.65; H100, BENCHMARKS.md, twenty-sixth session, bundle
    // 01a52fe). The worst, not the median: Auto does not pick it anyway (`auto_eligible`).
    ("wgmma_nchw_rows_persistent_128x128k64", 3.0 / 0.78),
    ("wgmma_nchw_rows_persistent_128x64k64", 3.0 / 0.66),
    // NCHW patches (step 17): step 7's rates; the GEMM's rows already count the columns past
    // Q each output row computes (not yet measured).
    ("wgmma_nchw_patch_persistent_128x128k64", 1.0 / 0.78),
    ("wgmma_nchw_patch_persistent_128x64k64", 1.0 / 0.66),
    // fp32 rows: the 16-bit tiles' rates at the tf32 peak (half the fp16 one), 3xTF32 three
    // products a step (not yet fitted to measurements).
    ("wgmma_ws_tma_persistent_tf32_128x256k32", 1.0),
    ("wgmma_ws_tma_persistent_tf32_128x128k32", 1.0 / 0.78),
    ("wgmma_ws_tma_persistent_tf32_128x64k32", 1.0 / 0.66),
    ("wgmma_ws_tma_persistent_tf32_128x32k32", 1.0 / 0.37),
    ("wgmma_ws_tma_persistent_3xtf32_128x128k32", 1.0 / 0.78),
    ("wgmma_ws_tma_persistent_3xtf32_128x64k32", 1.0 / 0.66),
    ("wgmma_ws_tma_persistent_3xtf32_128x32k32", 1.0 / 0.37),
    // Split-K on fp32 data: the persistent fp32 rows' rates (not yet fitted).
    ("wgmma_ws_tma_splitk_tf32_128x128k32", 1.0 / 0.78),
    ("wgmma_ws_tma_splitk_tf32_128x64k32", 1.0 / 0.66),
    ("wgmma_ws_tma_splitk_tf32_128x32k32", 1.0 / 0.37),
    ("wgmma_ws_tma_splitk_3xtf32_128x64k32", 1.0 / 0.66),
    ("wgmma_ws_tma_splitk_3xtf32_128x32k32", 1.0 / 0.37),
    // NCHW pixel planes in fp32: the fp32 step 7 rates times 1.15, as the 16-bit plane kernel's
    // (not yet fitted).
    ("wgmma_nchw1x1_persistent_tf32_128x256k32", 1.15),
    ("wgmma_nchw1x1_persistent_tf32_128x128k32", 1.15 / 0.78),
    ("wgmma_nchw1x1_persistent_tf32_128x64k32", 1.15 / 0.66),
    ("wgmma_nchw1x1_persistent_3xtf32_128x128k32", 1.15 / 0.78),
    ("wgmma_nchw1x1_persistent_3xtf32_128x64k32", 1.15 / 0.66),
];

/// The rate of configuration `c` ([`RATES`]; every configuration has one, checked below).
fn rate(c: &Config) -> f64 {
    entry_rate(c.entries[0])
}

/// The [`RATES`] row of entry `entry` (NaN where there is none).
fn entry_rate(entry: &str) -> f64 {
    RATES.iter().find(|(e, _)| *e == entry).map_or(f64::NAN, |r| r.1)
}

/// The rate of `c`'s NHWC twin: its first entry's name without `_to_nchw` (NaN for entries
/// without one).
fn twin_rate(c: &Config) -> f64 {
    entry_rate(&c.entries[0].replacen("_to_nchw", "", 1))
}

/// Step 16's rate over its NHWC twin's where its bare 16-bit store stages the rounded outputs
/// transposed (`store_nchw_matrix` in the kernels: runs of 8 pixels, tiles where
/// `convrs_spec::hopper::nchw_store_transposed` holds, no epilogue staged): 0.98 of step 7's
/// time, the median of the 11 deepbench bf16 layers of part 1/3 with P*Q a multiple of 8
/// (0.91-1.01), where the other 16 took 1.15 (1.01-1.31; H200, forty-eighth session); step
/// 12's 64x256 tiles 0.99-1.00 of theirs on 56x56 and 28x28 1x1 layers (forty-ninth session;
/// BENCHMARKS.md); taken as 1. The RATES rows above stay for the fp32 staging (a staged
/// epilogue, short runs, the 128x128 ping-pong tiles).
const NCHW_MATRIX: f64 = 1.0;

/// Step 12's rate factor under a fused epilogue. Its warpgroups take turns at the mainloop, so
/// a tile's epilogue runs on one warpgroup (4 warps) where step 7 runs both blocks' at once (8
/// warps). The epilogue is bound by each warp's dependent latency (notes/epilogue.md), so it
/// likely takes twice as long (not profiled), exposed where it outlasts the other warpgroup's
/// mainloop. Fitted on the H100 (BENCHMARKS.md, eighteenth session): fused, step 12 ran at
/// 0.87x step 7's speed on resnet50's 22 dense layers (bias + residual + ReLU) and 0.98x on
/// deepbench part 1/2 (40, bias + ReLU), against 1.04x bare (the 80 dense deepbench shapes).
/// With 1.3 the model picks the faster of the two on 42 of those 62 fused layers, 2.5% from the
/// per-shape best (never picking step 12 there: 3.6%).
const M64_FUSED: f64 = 1.3;

/// The ping-pong rate factor on a tile at least twice as wide as the layer's K (64-wide tiles at
/// K = 32 or 16): its warpgroups take turns at MMAs half of whose columns are padding, where
/// step 7's 128x32 tile computes none. The rates above, fitted on wider layers, charge the padding
/// as columns and still left ping-pong 1.28-1.48x further above its model than step 7 on the ten
/// K = 32 deepbench layers (1.11x on the K = 16 one; H200, BENCHMARKS.md, thirty-seventh session;
/// bias + residual + ReLU, and as much bare on bf16 in the thirty-fourth): with the residual by
/// TMA charged its bytes, the model took ping-pong on the 5x10 speech layers, 1.36-1.48x slower
/// than step 7.
const PINGPONG_WIDE: f64 = 1.35;

/// Registers a thread of `c` has, for the occupancy estimate: the warp-specialized entries'
/// bound ([`Config::register_cap`], which ptxas allocates exactly: `setmaxnreg` needs it); the
/// multistage entries have no bound and take at most the 255 a thread can have. Tested against
/// ptxas's report (tests/tests/ptxas_sm90a.rs): the occupancy this gives is the one ptxas's
/// counts give.
pub fn registers(c: &Config) -> usize {
    if c.policy.warp_specialized() { c.register_cap() } else { 255 }
}

/// What a split costs besides its workspace traffic, microseconds: each strip's fence, count
/// and the last warp's reads of every slice. Fitted on an H100 (seventh session, the
/// few-tiles suite): split-K measured 1-4 us above step 7 where the model gives both the same
/// mainloop time.
const SPLIT_US: f64 = 3.0;

/// The most slices a reduction is split into: past it the workspace traffic (an fp32 write and
/// read per slice) outweighs filling the last SMs.
const MAX_SPLITS: usize = 32;

/// Modelled microseconds of configuration `c` on `d` for `m x n` GEMM outputs over `taps` taps
/// of `ch` channels (the last k-tile of each tap charged in full), each tile's reduction split
/// over `splits` slices (1: not split), `live` of the tiles' rows written (the rest are
/// warpgroups that skip their MMAs and stores: NCHW planes with K not filling the 128-row
/// tiles; their MMAs are charged all the same, since the tile takes as long as its other
/// warpgroup's mainloop and stores: step 9 at K = 64 measured 1.1-1.4x step 15's time, which
/// computes no idle rows; H100, BENCHMARKS.md, twenty-eighth session), with a
/// fused epilogue staged through shared memory if `staged` is `Some(residual)`
/// ([`STAGED_US`] an output, twice that with a residual, and step 12's rate times
/// [`M64_FUSED`]), or a residual read by the register epilogue if `residual` ([`residual_us`]).
/// fp32 rows run at the tf32 peak, half the fp16 one, and 3xTF32 three products a step.
#[allow(clippy::too_many_arguments)]
fn cost(c: &Config, d: &DeviceModel, m: usize, n: usize, ch: usize, taps: usize, splits: usize, live: f64, staged: Option<bool>, residual: Residual, nchw: Option<NchwStore>, matrix: bool) -> f64 {
    let bps = blocks_per_sm(d, c.threads(), registers(c), c.smem_bytes()) as f64;
    let blocks = (tiles(c, m, n) * splits) as f64;
    let kc = c.k_tile();
    let ktiles = (ch.div_ceil(kc) * taps).div_ceil(splits);
    let math = c.policy.math;
    // In fp16-peak MAC units: a tf32 MAC takes two, 3xTF32 three of those.
    let per_mac = (math.elem_bytes() / 2 * math.passes()) as f64;
    let macs = (c.block_m() * c.bn * kc) as f64 * ktiles as f64 * per_mac;
    // The im2col copies cost per pixel, not per byte: with C < 64 a k-tile's copy brings C
    // channels a pixel for the time of 64. Measured (H100): 16,16,24,240->32 3x3 and
    // 32,32,79,341->32 5x10 s2 ran about 64 / C times the model without this factor.
    let macs = if c.policy.input_map() && ch < kc { macs * kc as f64 / ch as f64 } else { macs };
    let macs_per_sm = waves(d, blocks, bps, |b| b * macs);
    let macs_per_sm_us = d.f16_tflops * 1e6 / 2.0 / d.sms.max(1) as f64;
    // Plus the fp32 output written once, as the mma.sync plans charge it (plan::tensor_core::nhwc);
    // a split reduction writes and reads every slice's partial sums too.
    let out = (m * n * 4) as f64 * live;
    let split = if splits > 1 { SPLIT_US + memory_us(d, 2.0 * splits as f64 * out) } else { 0.0 };
    let held = nchw.is_none_or(|k| run_width(k.run) < 8);
    let base = if matrix { twin_rate(c) * NCHW_MATRIX } else { rate(c) };
    let rate = if staged.is_some() && held && c.block_m() != BLOCK_M { base * M64_FUSED } else { base };
    let rate = if c.policy.ping_pong() && c.bn >= 2 * n { rate * PINGPONG_WIDE } else { rate };
    let staging = staged.map_or(0.0, |residual| if residual { 2.0 } else { 1.0 } * STAGED_US * (m * n) as f64 * live / d.sms.max(1) as f64);
    let residual = match residual {
        // Copied ahead by the producer under ping-pong: its bytes alone.
        Residual::ByTma if c.policy.ping_pong() => memory_us(d, (m * n) as f64 * live * c.policy.math.elem_bytes() as f64),
        // Step 7 by TMA keeps the threads' charge: the trip a tile stands in for the register
        // epilogue that step 7 runs in front of the tensor cores and ping-pong hides, which
        // nothing else charges (bias + ReLU added 2.8-5.9 us to step 7 on the two H200 layers of
        // `residual_us`, 0.2-0.4 to ping-pong on the 3x3 one). Without it the model put step 7
        // ahead on the 3x3 layer, where ping-pong measured 21.9 us against step 7's 45.6 at
        // 128x128 (128x64 not measured with the copy). Until step 7's fused suite is measured.
        Residual::Loaded | Residual::ByTma if staged.is_none() => residual_us(c, d, (m * n) as f64 * live, waves(d, blocks, bps, |b| b), rate * macs / macs_per_sm_us),
        _ => 0.0,
    };
    let columns = nchw.map_or(0.0, |k| nchw_columns_us(c, waves(d, blocks, bps, |b| b), k));
    LAUNCH_US + rate * macs_per_sm / macs_per_sm_us + memory_us(d, out) + split + staging + residual + columns
}

/// How a fused epilogue's residual reaches the kernel, for [`cost`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Residual {
    /// No residual.
    None,
    /// Loaded by the consumers' threads (in the epilogue, or ahead of the mainloop under
    /// ping-pong), or staged with the accumulators.
    Loaded,
    /// Copied into shared memory by a producer thread (`Config::takes_residual_map`).
    ByTma,
}

/// Step 16's staged NCHW store, for [`cost`]: on planes whose runs are `run` pixels
/// (`convrs_spec::hopper::run_width`), `columns` where it goes down the columns on runs
/// shorter than 8 (its fused epilogue may not take them along the planes,
/// `convrs_spec::hopper::nchw_store_runs`, or reads a residual itself: none copied at runs of
/// 1, or no room for the slots), `residual` whether it has one.
///
/// On runs of 8 it holds no stage and step 12's [`M64_FUSED`] is not charged: with bias +
/// residual + ReLU and with bias + SiLU step 12 measured 12-15% faster than step 7 there
/// (32,128,28,28->128 3x3 20.5 against 23.2 us, 8,64,56,56->64 3x3 10.7 against 12.5; H200,
/// forty-first and forty-second sessions), and 9-17% slower on the runs of 4 of three 14x14
/// layers, where it stays charged.
#[derive(Clone, Copy)]
struct NchwStore {
    run: u32,
    residual: bool,
    columns: bool,
}

/// What [`NchwStore`] down the columns adds on `c` with `tiles` tiles on the busiest SM: per
/// tile and per 8 pixels of a column a thread finishes ([`Config::bn`] / 16 of them),
/// [`NCHW_SHORT_RUN_US`] (a residual on runs of 2 and 4), [`NCHW_ONE_RUN_US`] (on runs of 1) or
/// [`NCHW_COLUMNS_US`] (no residual), under ping-pong on half the tiles (its warpgroups take
/// turns).
fn nchw_columns_us(c: &Config, tiles: f64, k: NchwStore) -> f64 {
    let per = match (run_width(k.run), k.residual) {
        _ if !k.columns => return 0.0,
        (8, _) => return 0.0,
        (1, true) => NCHW_ONE_RUN_US,
        (_, true) => NCHW_SHORT_RUN_US,
        (_, false) => NCHW_COLUMNS_US,
    };
    let serial = if c.policy.ping_pong() { (tiles / 2.0).max(1.0) } else { tiles };
    serial * (c.bn / 16) as f64 * per
}

/// [`nchw_columns_us`]'s charge for a residual on runs of 2 and 4 pixels, microseconds a tile's
/// 8 pixels of a thread's column. Fitted on the H200 (BENCHMARKS.md, forty-first session; bf16,
/// bias + residual + ReLU): step 12's 64x256 tile, which has no room for the slots, measured
/// 15.8-17.4 us over the model with one tile an SM (32,256,14,14->256 3x3 and
/// 32,1024,14,14->256 1x1, runs of 4) and 26.4 us with three (32,512,28,28->1024 1x1 s2): 1.0-1.1
/// a tile's 16. The tiles with slots measured within 2.5 us of the model on the same layers.
const NCHW_SHORT_RUN_US: f64 = 1.1;

/// As [`NCHW_SHORT_RUN_US`] on runs of 1 pixel (odd P*Q: 7x7 planes, which have no slots), each
/// of the 8 pixels read apart: on 32,512,7,7->512 3x3 (one tile an SM) step 7's 128x64 tile
/// measured 11.9 us over the model (3.0 a tile's 4) and step 12's 64x128 16.1 (2.0 a tile's 8).
const NCHW_ONE_RUN_US: f64 = 2.5;

/// As [`NCHW_SHORT_RUN_US`] without a residual (bias + SiLU): step 12's 64x256 tile, which
/// keeps the columns (`nchw_store_runs`), measured 10.2-10.3 us over the model with one tile an
/// SM on the two 14x14 layers above, and 12.6 with three on the strided one (0.5-0.65 a tile's
/// 16; H200, forty-second session), where step 7's 128x128 along the planes measured within
/// 1.5 us of it.
const NCHW_COLUMNS_US: f64 = 0.6;

/// What the register epilogue's residual adds to `c` on `d` for `outputs` output elements,
/// `tiles` a busy SM's tiles, each mainloop `mainloop_us`: its bytes (in the input's type), and
/// per tile [`RESIDUAL_TRIP_US`] of exposed load latency, less the other warpgroup's mainloop
/// under ping-pong (which loads the residual ahead and whose epilogue runs under it).
fn residual_us(c: &Config, d: &DeviceModel, outputs: f64, tiles: f64, mainloop_us: f64) -> f64 {
    let hidden = if c.policy.ping_pong() { mainloop_us } else { 0.0 };
    memory_us(d, outputs * c.policy.math.elem_bytes() as f64) + tiles * (RESIDUAL_TRIP_US - hidden).max(0.0)
}

/// The register epilogue's residual per tile, microseconds: what a tile's residual loads cost
/// beyond their bytes where no mainloop hides them. Fitted on the H200 (BENCHMARKS.md,
/// thirty-fifth session; fp16, bias + residual + ReLU against bias + ReLU, 32,128,28,28->512 1x1
/// and 32,64,56,56->64 3x3): step 7 lost 0.4-0.8 us a tile over the bytes, steps 10 and 12
/// 0.55-0.76 us a tile on the 1x1 layer (2 k-tiles, barely hidden) and 0.3 at most on the 3x3
/// layer (9 k-tiles).
const RESIDUAL_TRIP_US: f64 = 0.8;

/// What the shared-memory epilogue (`store_fused`) adds an output element, in SM-microseconds:
/// the consumers stage, finish and store while the tensor cores wait. Fitted on the H100
/// (132 SMs; sixteenth session, BENCHMARKS.md): bias + ReLU added 3.4-13 us to step 7 on
/// 8,128,28,28->512 1x1, 8,256,28,28->512 3x3 and 8,64,112,112->128 3x3, 1.05-1.1 us a million
/// outputs; bias + residual + ReLU twice that. An epilogue on the accumulators in registers is
/// not charged: its stores drain under the next tile's mainloop as the bare ones do, and what
/// it adds (1.05-1.25x bare with bias + ReLU, about 1.6x with a residual on 8,64,112,112->128;
/// BENCHMARKS.md, twentieth session) is not modelled yet.
const STAGED_US: f64 = 1.05e-6 * 132.0;

/// Output tiles of `c` for `m x n` GEMM outputs: the M tiles rounded up to whole clusters,
/// times the N tiles.
fn tiles(c: &Config, m: usize, n: usize) -> usize {
    let cluster = c.policy.cluster;
    m.div_ceil(c.block_m() * cluster) * cluster * n.div_ceil(c.bn)
}

/// Blocks of `c` that `d` holds at once.
fn resident(c: &Config, d: &DeviceModel) -> usize {
    d.sms as usize * blocks_per_sm(d, c.threads(), registers(c), c.smem_bytes()).max(1)
}

/// Blocks of each z slice to launch with `c` split `splits` ways: one per output tile, or on a
/// persistent grid as many as `d` holds at once over all slices (whole clusters, at least one),
/// at most one per tile.
fn grid_blocks(c: &Config, d: &DeviceModel, m: usize, n: usize, splits: usize) -> usize {
    let all = tiles(c, m, n);
    if !c.policy.persistent() {
        return all;
    }
    let cluster = c.policy.cluster;
    all.min(resident(c, d) / splits / cluster * cluster).max(cluster)
}

/// The value of developer override `name`: unset or empty (`NAME=`, as a script passes an
/// unset variable) is no override.
pub(crate) fn dev_override(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A developer's override of the split-K choice, for measuring what the cost model predicts:
/// `CONVRS_SPLIT_K=BN,Z` plans only the tile BN columns wide split Z ways (a problem where that
/// is no candidate is refused). Unset in normal use.
fn forced_split() -> Result<Option<(usize, usize)>> {
    let Some(text) = dev_override("CONVRS_SPLIT_K") else { return Ok(None) };
    let bad = || Error::InvalidArgument(format!("CONVRS_SPLIT_K=`{text}`: expected BN,Z (tile width, split count), e.g. 128,4"));
    let (bn, z) = text.split_once(',').ok_or_else(bad)?;
    Ok(Some((bn.trim().parse().map_err(|_| bad())?, z.trim().parse().map_err(|_| bad())?)))
}

/// A developer's override of the tile width, for measuring each width of a kernel:
/// `CONVRS_HOPPER_BN=BN` plans only the configurations BN columns wide (a kernel without that
/// width refuses). Unset in normal use.
fn forced_width() -> Result<Option<usize>> {
    let Some(text) = dev_override("CONVRS_HOPPER_BN") else { return Ok(None) };
    text.trim().parse().map(Some).map_err(|_| Error::InvalidArgument(format!("CONVRS_HOPPER_BN=`{text}`: expected a tile width, e.g. 128")))
}

/// Whether the plans fold a column stride into the channels ([`fold_w_problem`]): yes, unless
/// a developer measuring the unfolded launches sets `CONVRS_FOLD_W=0` (notes/hopper.md §22).
fn fold_w_allowed() -> bool {
    dev_override("CONVRS_FOLD_W").is_none_or(|v| v.trim() != "0")
}

/// The problem an im2col kernel with k-tiles of `kc` channels computes for `p` with its column
/// stride folded into the channels ([`Conv2d::folded_w`]), where that fills the k-tiles
/// better: C short of a k-tile, the folded C within one.
fn fold_w_problem(p: &Conv2d, kc: usize) -> Option<Conv2d> {
    p.folded_w().filter(|f| p.c < kc && f.c <= kc)
}

/// The registry's planner for every Hopper kernel: the configurations of the kernel's policy.
fn plan(desc: &KernelDesc, problem: &Conv2d, dtype: DType, device: &DeviceModel) -> Result<LaunchPlan> {
    plan_folding(desc, problem, dtype, device, fold_w_allowed())
}

/// [`plan`], folding a column stride into the channels where `fold_w` allows and it pays.
fn plan_folding(desc: &KernelDesc, problem: &Conv2d, dtype: DType, device: &DeviceModel, fold_w: bool) -> Result<LaunchPlan> {
    let Algorithm::Wgmma(policy) = desc.algorithm else {
        return Err(Error::InvalidArgument(format!("{} is not a Hopper kernel", desc.name)));
    };
    problem.validate()?;
    let p = problem;
    let refuse = |reason: String| Err(Error::Unsupported { algorithm: desc.name, reason });
    if device.compute_capability != (9, 0) {
        let (major, minor) = device.compute_capability;
        return refuse(format!("needs compute capability 9.0 (H100, H200): its sm_90a code runs nowhere else, and this device is {major}.{minor}"));
    }
    if !device.sm90a {
        return refuse("the sm_90a PTX module did not load on this device (see the warning at start-up)".into());
    }
    let planes = policy.producer == Producer::Planes;
    let pixel_planes = policy.producer == Producer::PlanePixels;
    let rows = policy.producer == Producer::PlaneRows;
    // The patch kernel's tiles: finding them is its refusals.
    let patch = if policy.producer == Producer::NchwPatch {
        match patch_tiles(p, dtype) {
            Ok(g) => Some(g),
            Err(reason) => return refuse(reason),
        }
    } else {
        None
    };
    // Planes whose H*W is not a multiple of 8, which TMA cannot step, copied by `cp.async`.
    let direct = planes && plane_copies_direct(p.h * p.w);
    if policy.producer.nchw_planes() {
        if let Some(reason) = planes_refusal(p, dtype, planes) {
            return refuse(reason);
        }
    } else if rows {
        if let Some(reason) = rows_refusal(p, dtype) {
            return refuse(reason);
        }
    } else if patch.is_none() && (p.c % 8 != 0 || p.k % 8 != 0) {
        return refuse(format!("C = {} and K = {} must be multiples of 8: the kernel moves channels in 16-byte pieces and writes 8-column groups", p.c, p.k));
    }
    // The column stride folded into the channels where the im2col copies would bring k-tiles
    // partly zero fill: the same bytes, 1/f of the copies and MMAs (`Conv2d::folded_w`).
    let folded = if policy.im2col() && fold_w { fold_w_problem(p, policy.math.k_tile()) } else { None };
    if policy.im2col() {
        if let Err(reason) = crate::tensor_map::InputMapKey::new(0, p, dtype, policy.block_m as u32, folded.is_some()) {
            return refuse(reason);
        }
    }
    // From here on, the problem the kernel computes.
    let p = folded.as_ref().unwrap_or(p);
    // A grouped problem (1 < G < C; only the im2col kernels are planned for one): each tile's
    // output channels in one group, each filter row C/G channels (KernelDesc::run_problem
    // merges groups until both hold).
    let (group_c, group_k) = (p.group_c(), p.k / p.groups.max(1));
    if p.groups > 1 && group_c % 8 != 0 {
        return refuse(format!(
            "C/G = {group_c} must be a multiple of 8: the filter map steps from output channel to output channel in C/G*{} bytes, which TMA needs in multiples of 16 \
             (the kernel's run problem merges groups so that it is: KernelDesc::run_problem)",
            dtype.size()
        ));
    }
    if policy.math == Math::Tf32x3 && 2 * p.k > i32::MAX as usize {
        return refuse("the split filter's 2K rows exceed the tensor map's i32 coordinates".into());
    }
    // The GEMM's rows and columns: pixels by output channels, or for NCHW planes output
    // channels by every image's pixels (each image padded to whole 64-pixel copies), for NCHW
    // rows every image's output channels (each padded to whole tiles) by an image's output
    // rows, or for NCHW pixel planes every image's pixels (each padded to whole 32-pixel
    // copies) by output channels.
    let (m, n) = if planes {
        plane_gemm(p.n, p.k, p.h * p.w, policy.block_m)
    } else if rows {
        let (oh, ow) = p.output_hw();
        (p.n * plane_rows(p.k, policy.block_m), oh * plane_row_pitch(ow))
    } else if pixel_planes {
        (p.n * plane_pixel_rows(p.h * p.w), p.k)
    } else if let Some(g) = patch {
        // Each tile is out_rows output rows of wp pixels.
        (p.n * p.output_hw().0.div_ceil(g.out_rows) * BLOCK_M, p.k)
    } else {
        (gemm_m(p), p.k)
    };
    let configs = || CONFIGS.iter().filter(move |c| c.policy == policy);
    // A problem with a fused epilogue runs only on the tiles that fuse it (no clusters).
    let within_groups = |c: &Config| p.groups <= 1 || group_k % c.bn == 0;
    let ktiles = group_c.div_ceil(policy.math.k_tile()) * p.r * p.s;
    // 3xTF32 on a short reduction sums each k-step apart, which the 128-wide tiles do not
    // (`convrs_spec::hopper::STEP_SUMS_MAX_N`): they would be less accurate than FMA there.
    let accurate = |c: &Config| policy.math.accurate(ktiles.min(i32::MAX as usize) as i32, c.bn);
    let (act, _) = p.epilogue.activation.code();
    // A register epilogue's residual by TMA where the tile takes it (`Config::takes_residual_map`).
    let in_registers = |c: &Config| c.epilogue_in_registers_with(act, p.epilogue.bias, p.epilogue.residual);
    let by_tma = |c: &Config| p.epilogue.residual && c.takes_residual_map() && in_registers(c);
    // An NCHW output's residual in the staged store, copied into each thread's slots before
    // the mainloop where the block has the room (`convrs_spec::hopper::nchw_residual_slot_bytes`;
    // the kernel checks the bytes it is given and loads the residual itself without them).
    let (oh, ow) = p.output_hw();
    let copies = u32::try_from(oh * ow).is_ok_and(nchw_slots_copy);
    let slots = |c: &Config| {
        p.epilogue.residual && c.takes_nchw_slots() && !in_registers(c) && copies && c.smem_bytes_with_nchw_slots() <= device.smem_per_block as usize
    };
    let shared = |c: &Config| if by_tma(c) { c.smem_bytes_with_residual() } else if slots(c) { c.smem_bytes_with_nchw_slots() } else { c.smem_bytes() };
    // Planes copied by `cp.async` store runs of 4 or 2 pixels from the registers only
    // (`planes::store_tile_16`): a fused epilogue there runs in registers.
    let grouped_fuses = |c: &Config| !direct || p.epilogue.is_none() || in_registers(c);
    let fits = |c: &&Config| {
        shared(c) <= device.smem_per_block as usize && tiles(c, m, n) <= i32::MAX as usize && (p.epilogue.is_none() || c.fuses_epilogue()) && within_groups(c) && accurate(c) && grouped_fuses(c)
    };
    // Split-K tries every split from 2 up to one k-tile a slice, where the launch's counters
    // have room for its strips of 16 rows; the other schedules take the reduction whole. Splits
    // stop where every CTA would have one tile of one slice: a persistent CTA that walks
    // several tiles of a split runs each one's meeting in the workspace where the unsplit
    // schedule overlaps its epilogue (measured 2-6 us slower on the H100).
    let splits = |c: &Config| {
        let count = tiles(c, m, n);
        let most = ktiles.min(MAX_SPLITS).min(device.max_grid_z as usize).min(resident(c, device) / count.max(1));
        if !policy.split_k() {
            1..=1
        } else if count * split_k::WARPS_PER_TILE <= split_k::MAX_UNITS {
            2..=most
        } else {
            2..=1
        }
    };
    // Under NCHW planes (and each image's under NCHW rows) the rows are K rounded up to the
    // tile's 128 (or 64) rows,
    // and a warpgroup whose 64 rows all lie past K skips its MMAs; under pixel planes, H*W
    // rounded up to 32 (all computed, the tiles spanning images).
    let live = if planes || rows { (p.k.div_ceil(64) * 64) as f64 / plane_rows(p.k, policy.block_m) as f64 } else { 1.0 };
    // Charged where the epilogue stages through shared memory, in a held stage or an NCHW
    // output's staged store (`Policy::epilogue_in_nchw_store`: bias + ReLU cost 1.5-11 us there on
    // 64x128 tiles, about what the held stage costs; H200, fortieth session); a piecewise
    // linear one runs on the accumulators (`Config::epilogue_in_registers`), as cheap as the
    // bare store but for a residual's reads (`residual_us`).
    let staged = |c: &Config| (!p.epilogue.is_none() && !in_registers(c)).then_some(p.epilogue.residual);
    let residual = |c: &Config| match (p.epilogue.residual, by_tma(c)) {
        (false, _) => Residual::None,
        (true, false) => Residual::Loaded,
        (true, true) => Residual::ByTma,
    };
    // Step 16's staged store on short runs: along the planes where the tile may and has what a
    // residual needs (slots), else down the columns (charged).
    let run = u32::try_from(oh * ow).unwrap_or(1);
    let along = |c: &Config| nchw_store_runs(c.policy.ping_pong(), c.block_m(), c.bn) && (slots(c) || !p.epilogue.residual);
    let nchw = |c: &Config| {
        (staged(c).is_some() && matches!(policy.producer, Producer::WsTmaNchw)).then_some(NchwStore { run, residual: p.epilogue.residual, columns: run_width(run) < 8 && !along(c) })
    };
    // Step 16's bare 16-bit store stages transposed on runs of 8 pixels ([`NCHW_MATRIX`]); the
    // NCHW caller's outputs are 16-bit (`KernelDesc::plan_writing`).
    let matrix = |c: &Config| {
        matches!(policy.producer, Producer::WsTmaNchw) && matches!(policy.math, Math::Half) && run_width(run) == 8 && nchw_store_transposed(nchw_store_runs(c.policy.ping_pong(), c.block_m(), c.bn), c.bn) && staged(c).is_none()
    };
    // Planes copied by `cp.async` (H*W not a multiple of 8), whose producer warpgroup is
    // instruction-bound (notes/hopper.md §36): the measured time over the prediction there,
    // divided by the same ratio on the TMA-copied planes, on the resnet50 and deepbench layers
    // (H200, fifty-third session, 11 and 20 layers a kernel; notes/hopper.md §38): the
    // cooperative step 9 1.19, step 15's 64-row tiles 1.37 (twice the copies a FLOP), step 18
    // 1.11 (one warpgroup's epilogue under the other's copies).
    let copied = match (direct, policy.schedule, policy.block_m) {
        (false, _, _) => 1.0,
        (true, Schedule::PingPong, BLOCK_M) => 1.11,
        (true, Schedule::PingPong, _) => 1.37,
        (true, _, _) => 1.19,
    };
    let cost_of = |&(c, z): &(&Config, usize)| copied * cost(c, device, m, n, group_c, p.r * p.s, z, live, staged(c), residual(c), nchw(c), matrix(c));
    let forced = if policy.split_k() { forced_split()? } else { None };
    let choices = configs().filter(fits).flat_map(|c| splits(c).map(move |z| (c, z)));
    let choices = choices.filter(|&(c, z)| forced.is_none_or(|(bn, fz)| c.bn == bn && z == fz));
    let width = forced_width()?;
    let choices = choices.filter(|&(c, _)| width.is_none_or(|bn| c.bn == bn));
    let Some((c, z)) = choices.min_by(|a, b| cost_of(a).total_cmp(&cost_of(b))) else {
        if let Some(bn) = width {
            let widths: Vec<_> = configs().map(|c| c.bn).collect();
            return refuse(format!("CONVRS_HOPPER_BN={bn} is not among this problem's tile widths ({widths:?})"));
        }
        if let Some((bn, z)) = forced {
            let widths: Vec<_> = configs().map(|c| c.bn).collect();
            return refuse(format!("CONVRS_SPLIT_K={bn},{z} is not among this problem's candidates (tile widths {widths:?}, splits while every CTA keeps one tile)"));
        }
        if policy.split_k() && configs().any(|c| fits(&c)) {
            return refuse(format!(
                "split-K needs at least 2 slices of the reduction ({ktiles} k-tiles) while every CTA keeps one tile: this problem's tiles already fill the GPU \
                 or its reduction is one k-tile (the persistent schedule takes it whole)"
            ));
        }
        if !configs().any(accurate) {
            return refuse(format!(
                "its tiles are {} wide, and a 3xTF32 reduction of {ktiles} k-tiles (at most {}) needs each k-step summed apart, which only tiles up to {} wide do: \
                 the tensor cores' truncating accumulation over a whole k-tile would be less accurate than fp32 FMA",
                configs().map(|c| c.bn.to_string()).collect::<Vec<_>>().join(", "),
                convrs_spec::hopper::STEP_SUMS_MAX_KTILES,
                convrs_spec::hopper::STEP_SUMS_MAX_N
            ));
        }
        if !configs().any(|c| within_groups(c)) {
            let widths: Vec<_> = configs().map(|c| c.bn).collect();
            return refuse(format!("K/G = {group_k} output channels a group is a multiple of none of the tile widths {widths:?}: a tile must lie within one group"));
        }
        let least = configs().map(Config::smem_bytes).min().unwrap_or(0);
        return refuse(format!("needs {least} bytes of shared memory per block (or the grid exceeds 2^31 blocks); the device allows {}", device.smem_per_block));
    };
    let plan = LaunchPlan::new(
        c.entry(dtype == DType::BF16),
        (grid_blocks(c, device, m, n, z) as u32, 1, z as u32),
        (c.threads() as u32, 1, 1),
        shared(c) as u32,
        dtype,
        cost_of(&(c, z)),
    );
    let plan = if by_tma(c) { plan.with_residual_map(c.block_m() as u32) } else { plan };
    let plan = if policy.filter_map() { plan.with_filter_map(c.filter_box_rows() as u32) } else { plan };
    let plan = match policy.producer {
        Producer::WsTma | Producer::WsTmaNchw => plan.with_input_map(c.block_m() as u32),
        Producer::Planes | Producer::PlanePixels | Producer::NchwPatch => plan.with_plane_map(),
        Producer::PlaneRows => plan.with_row_map(),
        Producer::Multistage | Producer::WsCpAsync => plan,
    };
    let plan = if policy.math == Math::Tf32x3 { plan.with_split_filter() } else { plan };
    let plan = if folded.is_some() { plan.with_fold_w() } else { plan };
    Ok(if policy.split_k() { plan.with_workspace(split_k::workspace_bytes(tiles(c, m, n), c.bn, z)) } else { plan })
}

/// Whether Auto may pick `algorithm` (every kernel but the NCHW row kernel, which runs where
/// named): `wgmma_nchw_rows_persistent` measured slower than the transposes to an NHWC kernel
/// on 8 of the 10 layers of `dev/suites/nchw-layers.csv` it takes (1.15x to 3.0x the NCHW
/// caller's time; equal on 1,128,512,512 and 1,64,56,56; H100, twenty-sixth session), and the
/// cost model, which prices the transposes with an fp32 output and the kernel's shifting warps
/// not at all, picked it on layers where it lost (20% slower on 1,64,160,160 -> 64 3x3).
/// `explain` lists its prediction all the same.
pub fn auto_eligible(algorithm: Algorithm) -> bool {
    // The patch kernel (step 17) runs where named: it measured 1.05-2.37x its predictions
    // (geomean 1.48) on 26 layers of resnet50 and deepbench (H200, fifty-third session), so Auto
    // would take it where it loses.
    !matches!(algorithm, Algorithm::Wgmma(p) if matches!(p.producer, Producer::PlaneRows | Producer::NchwPatch))
}

/// The narrowest tile among `policy`'s configurations (the merged groups of a grouped problem
/// hold whole tiles of it: [`crate::groups::run_groups`]).
pub fn narrowest_tile(policy: Policy) -> usize {
    CONFIGS.iter().filter(|c| c.policy == policy).map(|c| c.bn).min().unwrap_or(BLOCK_M)
}

/// Why `Producer::Planes` or `Producer::PlanePixels` cannot run `p` on `dtype` data, if it
/// cannot: it is the 1x1, stride-1, unpadded convolution on NCHW data, whose maps need 16-byte
/// strides (8 16-bit elements, 4 fp32 ones).
fn planes_refusal(p: &Conv2d, dtype: DType, grouped: bool) -> Option<String> {
    let step = 16 / dtype.size();
    if (p.r, p.s) != (1, 1) || p.stride != (1, 1) || p.pad != (0, 0) {
        // A strided 1x1 layer without padding comes here only as a plan of the caller's problem:
        // the host API runs its subsampled problem (`KernelDesc::run_problem`).
        let sampled = if p.subsampled().is_some() { " (the host API runs it on its input sampled on the stride's grid: KernelDesc::run_problem)" } else { "" };
        return Some(format!(
            "takes 1x1 filters at stride 1 without padding (a GEMM per NCHW image), not {}x{} at stride {:?}, padding {:?}{sampled}",
            p.r, p.s, p.stride, p.pad
        ));
    }
    let hw = p.h * p.w;
    if grouped && dtype.size() == 2 && plane_copies_direct(hw) {
        // TMA cannot step these planes (H*W*2 bytes not a multiple of 16): the producer copies
        // them by `cp.async`, 4 bytes at least, and the stores run in pieces of 4 or 2 pixels.
        if hw % 2 != 0 {
            return Some(format!("H*W = {hw} must be even: the input's planes, which TMA cannot step (H*W*2 bytes not a multiple of 16), are copied by cp.async in pieces of 4 bytes or more"));
        }
        let ep = &p.epilogue;
        let (act, _) = ep.activation.code();
        if !ep.is_none() && !(ep.bias && act.is_linear()) {
            return Some(format!("on planes whose H*W = {hw} is not a multiple of 8 it stores runs of {} pixels from the registers: it takes the bare convolution or an epilogue with a bias and a piecewise linear activation (on the accumulators), not {ep}", run_width(hw as u32)));
        }
        return (p.c % step != 0).then(|| format!("C = {} must be a multiple of {step}: the filter map steps from output channel to output channel in C*{} bytes, which TMA needs in multiples of 16", p.c, dtype.size()));
    }
    if let Some(reason) = plane_map_refusal(p, dtype) {
        return Some(reason);
    }
    if p.c % step != 0 {
        let size = dtype.size();
        return Some(format!("C = {} must be a multiple of {step}: the filter map steps from output channel to output channel in C*{size} bytes, which TMA needs in multiples of 16", p.c));
    }
    None
}

/// Why the input's plane map ({H*W, C, N}: `Producer::Planes`, `PlanePixels`, `NchwPatch`)
/// cannot describe `p`'s NCHW input of `dtype`, if it cannot: its channel stride, H*W elements,
/// must be a multiple of 16 bytes.
fn plane_map_refusal(p: &Conv2d, dtype: DType) -> Option<String> {
    let (size, step) = (dtype.size(), 16 / dtype.size());
    ((p.h * p.w) % step != 0).then(|| {
        format!("H*W = {} must be a multiple of {step}: the input's plane map steps from channel to channel in H*W*{size} bytes, which TMA needs in multiples of 16", p.h * p.w)
    })
}

/// Why the KRSC filter's map ({C, R*S, K}: `Producer::PlaneRows`, `NchwPatch`) cannot describe
/// `p`'s filter of `dtype`, if it cannot: its tap stride, C elements, must be a multiple of 16
/// bytes.
fn filter_taps_refusal(p: &Conv2d, dtype: DType) -> Option<String> {
    let (size, step) = (dtype.size(), 16 / dtype.size());
    (p.c % step != 0).then(|| format!("C = {} must be a multiple of {step}: the filter map steps from tap to tap in C*{size} bytes, which TMA needs in multiples of 16", p.c))
}

/// Why `Producer::PlaneRows` cannot run `p` on `dtype` data, if it cannot: it reads NCHW
/// rows by tiled TMA at column stride 1, and its 16-byte stores run along output rows. (Grouped
/// problems never reach it: `KernelDesc::plan` gives them to the im2col kernels.)
fn rows_refusal(p: &Conv2d, dtype: DType) -> Option<String> {
    let (size, step) = (dtype.size(), 16 / dtype.size());
    let (_, q) = p.output_hw();
    if p.stride.1 != 1 {
        return Some(format!(
            "takes column stride 1, not {} (stride {:?}): each copy is 64 consecutive pixels of an input row; any row stride is taken",
            p.stride.1, p.stride
        ));
    }
    if p.w % step != 0 {
        return Some(format!("W = {} must be a multiple of {step}: the input's row map steps from row to row in W*{size} bytes, which TMA needs in multiples of 16", p.w));
    }
    if q % step != 0 {
        return Some(format!("Q = {q} (the output's width) must be a multiple of {step}: the kernel stores 16 bytes of an output row at a time"));
    }
    filter_taps_refusal(p, dtype)
}

/// The tiles `Producer::NchwPatch` runs `p` on `dtype` data in
/// (`convrs_spec::hopper::patch_geometry`), or why it cannot: it reads NCHW planes by tiled TMA
/// at stride 1, and its tile's patch and landing must fit their shared memory. (Grouped
/// problems never reach it: `KernelDesc::plan` gives them to the im2col kernels.)
fn patch_tiles(p: &Conv2d, dtype: DType) -> std::result::Result<PatchGeometry, String> {
    if p.stride != (1, 1) {
        return Err(format!("takes stride 1, not {:?}: each tap reads the patch of input rows from a row offset", p.stride));
    }
    if let Some(reason) = plane_map_refusal(p, dtype).or_else(|| filter_taps_refusal(p, dtype)) {
        return Err(reason);
    }
    let (_, q) = p.output_hw();
    patch_geometry(p.w, q, p.r, p.s, p.dilation.0, p.dilation.1).ok_or_else(|| {
        format!(
            "its tile does not fit: Q + (S-1)*dilation = {} padded columns (at most 128), and the input rows under a tile ({} x {} filter) must fit {} patch rows and {} landing copies of 64 pixels",
            q + (p.s - 1) * p.dilation.1,
            p.r,
            p.s,
            convrs_spec::hopper::PATCH_ROWS,
            convrs_spec::hopper::PATCH_LANDING_BOXES
        )
    })
}

/// What each part of `policy` does, for `explain` and `convrs list`.
pub fn describe(policy: Policy) -> String {
    let producer = match policy.producer {
        Producer::Multistage => "every thread copies both tiles with cp.async, then computes",
        Producer::WsCpAsync => "warp-specialized: a producer warpgroup brings activations by cp.async and filters by TMA",
        Producer::WsTma => "warp-specialized: one producer thread brings activations by im2col TMA and filters by TMA",
        Producer::WsTmaNchw => "warp-specialized: one producer thread brings NHWC activations by im2col TMA and filters by TMA; the output stored NCHW (an NCHW caller's output needs no transpose) through shared memory: on tiles under 128 accumulators a thread, 16-bit outputs whose planes run in whole 8-pixel pieces are rounded first and staged transposed (stmatrix.trans, 16 bytes a channel's 8 pixels), unless the epilogue has to run there; a fused epilogue that does not run on the accumulators is applied as it is stored (the residual read NCHW)",
        Producer::Planes => "NCHW data, 1x1: a GEMM of output channels by pixels, the images end to end (each padded to whole 64-pixel copies, a tile spanning two where it falls so); one producer thread brings the filter and, per 64 pixels, one image's channel planes by tiled TMA, no transform (planes whose H*W is not a multiple of 8 but even, 14x14 say, which TMA cannot step: all 128 producer threads copy them by cp.async in 8- or 4-byte pieces, swizzled as TMA would land them)",
        Producer::PlaneRows => {
            "NCHW data, any filter at column stride 1: a GEMM per image, output channels by output rows (whole 64-pixel copies); one producer thread brings each tap's filter tile and, per 64 columns, a tiled TMA copy of the input row under them shifted by the tap from a 16-byte boundary (its zero fill the padding), which two producer warps shift into place; no transform of the activations"
        }
        Producer::NchwPatch => {
            "NCHW data, any filter at stride 1, read as it is: per 64-channel chunk the tile's input rows land by tiled TMA and three producer warps transpose them into a K-major patch (ldmatrix.trans, stmatrix), from which each tap's wgmma reads at a row offset; one producer thread brings each tap's filter tile; the output stored NCHW; no transform of the activations"
        }
        Producer::PlanePixels => {
            "NCHW fp32 data, 1x1: a GEMM per image, pixels by output channels; one producer thread brings the image's channel planes and the filter by tiled TMA, the consumers load the pixels into registers (tf32 wgmma reads only K-major shared tiles), no transform"
        }
    };
    let schedule = match policy.schedule {
        Schedule::Tile => "one CTA per output tile",
        Schedule::Persistent => "a persistent grid walking the tiles",
        Schedule::SplitK => "a persistent grid with each tile's reduction split over z slices meeting in a workspace",
        Schedule::PingPong => "a persistent grid whose two consumer warpgroups take alternate tiles, each whole: one's epilogue runs under the other's mainloop",
    };
    let schedule = if policy.block_m != BLOCK_M { format!("{schedule}; tiles of {} rows, one m64 block a warpgroup", policy.block_m) } else { schedule.to_string() };
    let cluster = if policy.cluster > 1 { format!("; clusters of {} sharing each filter tile by TMA multicast", policy.cluster) } else { String::new() };
    let math = match policy.math {
        Math::Half => String::new(),
        Math::Tf32 => "; fp32 data read as TF32".into(),
        Math::Tf32x3 => format!(
            "; fp32 accuracy by 3xTF32 (the filter split once into TF32 high and low parts, the activations in registers; on reductions of at most {} k-tiles each k-step's sums added in fp32, on tiles up to {} wide)",
            convrs_spec::hopper::STEP_SUMS_MAX_KTILES,
            convrs_spec::hopper::STEP_SUMS_MAX_N
        ),
    };
    format!("{producer}; {schedule}{cluster}{math}")
}

/// Every distinct policy of [`CONFIGS`], in order of first appearance.
const fn policies<const N: usize>() -> [Policy; N] {
    let mut out = [CONFIGS[0].policy; N];
    let (mut n, mut i) = (0, 0);
    while i < CONFIGS.len() {
        let p = CONFIGS[i].policy;
        let mut seen = false;
        let mut j = 0;
        while j < n {
            seen |= same(out[j], p);
            j += 1;
        }
        if !seen {
            out[n] = p;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "POLICIES has the wrong length");
    out
}

/// `a == b` in const code.
const fn same(a: Policy, b: Policy) -> bool {
    a.producer as u8 == b.producer as u8 && a.schedule as u8 == b.schedule as u8 && a.cluster == b.cluster && a.math as u8 == b.math as u8 && a.block_m == b.block_m
}

/// The policies, in the progression's order: one registry kernel each.
pub const POLICIES: [Policy; 26] = policies();

/// What the registry lists for `policy`.
const fn kernel(policy: Policy) -> KernelDesc {
    KernelDesc {
        algorithm: Algorithm::Wgmma(policy),
        name: policy.name(),
        family: Family::TensorCore,
        summary: match (policy.schedule, policy.math) {
            (Schedule::PingPong, _) if matches!(policy.producer, Producer::Planes) && policy.block_m != BLOCK_M => {
                "family 3 on Hopper: 1x1 convolution on NCHW data as a wgmma GEMM per image, ping-pong consumers on 64-row tiles (K rounded up to 64, not 128), no transform"
            }
            (Schedule::PingPong, _) if matches!(policy.producer, Producer::Planes) => {
                "family 3 on Hopper: 1x1 convolution on NCHW data as a wgmma GEMM per image, ping-pong consumers on 128-row tiles (one tile's stores under the other's mainloop), no transform"
            }
            _ if matches!(policy.producer, Producer::Planes) => "family 3 on Hopper: 1x1 convolution on NCHW data as a wgmma GEMM per image, no transform",
            _ if matches!(policy.producer, Producer::WsTmaNchw) => "family 3 on Hopper: wgmma implicit GEMM on channels-last input, the output written NCHW (an NCHW caller transposes only its input)",
            _ if matches!(policy.producer, Producer::PlaneRows) => "family 3 on Hopper: convolution on NCHW data at column stride 1 as a wgmma GEMM per image, one TMA copy of an input row per tap, no transform of the activations",
            _ if matches!(policy.producer, Producer::NchwPatch) => "family 3 on Hopper: convolution on NCHW data at stride 1, each chunk's input rows transposed once in shared memory into a patch every tap reads, no transform of the activations",
            (_, Math::Tf32) if matches!(policy.producer, Producer::PlanePixels) => "family 3 on Hopper: 1x1 convolution on NCHW fp32 data in TF32 as a wgmma GEMM per image, no transform",
            (_, Math::Tf32x3) if matches!(policy.producer, Producer::PlanePixels) => {
                "family 3 on Hopper: 1x1 convolution on NCHW fp32 data to fp32 accuracy (3xTF32) as a wgmma GEMM per image, no transform"
            }
            (Schedule::SplitK, Math::Tf32) => "family 3 on Hopper: wgmma implicit GEMM on fp32 data in TF32, split-K for layers with few output tiles",
            (Schedule::SplitK, Math::Tf32x3) => "family 3 on Hopper: wgmma implicit GEMM on fp32 data to fp32 accuracy (3xTF32), split-K for layers with few output tiles",
            (Schedule::PingPong, Math::Tf32) if policy.block_m != BLOCK_M => "family 3 on Hopper: wgmma implicit GEMM on fp32 data in TF32, ping-pong consumers on 64-row tiles",
            (Schedule::PingPong, Math::Tf32) => "family 3 on Hopper: wgmma implicit GEMM on fp32 data in TF32, ping-pong consumers (one tile's epilogue under the other's mainloop)",
            (_, Math::Tf32) => "family 3 on Hopper: wgmma implicit GEMM on fp32 data in TF32 (PyTorch's default precision)",
            (_, Math::Tf32x3) => "family 3 on Hopper: wgmma implicit GEMM on fp32 data to fp32 accuracy (3xTF32)",
            (Schedule::Tile, _) => "family 3 on Hopper: wgmma.mma_async implicit GEMM on plain channels-last data",
            (Schedule::Persistent, _) => "family 3 on Hopper: wgmma implicit GEMM on a persistent grid",
            (Schedule::SplitK, _) => "family 3 on Hopper: wgmma implicit GEMM with split-K, for layers with few output tiles",
            (Schedule::PingPong, _) if policy.block_m != BLOCK_M => "family 3 on Hopper: wgmma implicit GEMM, ping-pong consumers on 64-row tiles (twice the tiles of a small layer)",
            (Schedule::PingPong, _) => "family 3 on Hopper: wgmma implicit GEMM, ping-pong consumers (one tile's epilogue under the other's mainloop)",
        },
        dtypes: match policy.math {
            Math::Half => &[DType::F16, DType::BF16],
            Math::Tf32 | Math::Tf32x3 => &[DType::F32],
        },
        precision: match policy.math {
            Math::Half => Precision::Fma,
            Math::Tf32 => Precision::Tf32,
            Math::Tf32x3 => Precision::Fp32,
        },
        layouts: match policy.producer {
            Producer::Planes | Producer::PlanePixels => (Layout::Nchw, Layout::Nchw, Layout::Nchw),
            // The filter KRSC, brought there once per weights (a `DeviceConv` caches it).
            Producer::PlaneRows | Producer::NchwPatch => (Layout::Nchw, Layout::Nhwc, Layout::Nchw),
            Producer::WsTmaNchw => (Layout::Nhwc, Layout::Nhwc, Layout::Nchw),
            _ => (Layout::Nhwc, Layout::Nhwc, Layout::Nhwc),
        },
        // The plane kernels read the caller's NCHW tensors as they are where C is a multiple of
        // 8 (fp32: 4; the filter map's stride); K is free (its rows are checked one by one).
        multiples: match policy.producer {
            Producer::Planes | Producer::PlaneRows | Producer::NchwPatch => (1, 8, 1),
            Producer::PlanePixels => (1, 4, 1),
            _ => (1, 8, 8),
        },
        planner: plan,
    }
}

/// The registry's entries: one kernel per policy.
pub const KERNELS: [KernelDesc; POLICIES.len()] = {
    let mut out = [kernel(POLICIES[0]); POLICIES.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = kernel(POLICIES[i]);
        i += 1;
    }
    out
};

// Every configuration has its rate, and every rate a configuration.
const _: () = {
    let mut i = 0;
    while i < CONFIGS.len() {
        let mut found = 0;
        let mut j = 0;
        while j < RATES.len() {
            found += eq(RATES[j].0, CONFIGS[i].entries[0]) as usize;
            j += 1;
        }
        assert!(found == 1, "a Hopper configuration has no rate (or two) in RATES");
        i += 1;
    }
    assert!(RATES.len() == CONFIGS.len(), "RATES names an entry no configuration has");
};

/// `a == b` for strings in const code.
const fn eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && convrs_spec::hopper::starts_with(a, b)
}

/// Every entry point the plans can name: fp16 then bf16 of each 16-bit configuration, the
/// fp32 configurations' one each.
pub fn kernel_names() -> Vec<&'static str> {
    CONFIGS.iter().flat_map(|c| c.entries.iter().copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration with entry point `e` (fp16, bf16 or fp32).
    fn by_entry(e: &str) -> &'static Config {
        CONFIGS.iter().find(|c| c.entries.contains(&e)).unwrap()
    }

    fn algo(name: &str) -> Algorithm {
        name.parse().unwrap()
    }

    /// Folding the speech layer's column stride into its 32 channels:
    /// every im2col kernel plans the folded problem, predicted cheaper (full k-tiles), its maps
    /// over the same bytes; the other producers and problems that do not fold are unchanged.
    #[test]
    fn im2col_plans_fold_a_column_stride_into_short_channels() {
        let d = DeviceModel::named("h100").unwrap();
        let speech = Conv2d::new(32, 32, 79, 341, 32, 5, 10).with_stride(2);
        let folded = speech.folded_w().unwrap();
        for name in ["wgmma_ws_tma_persistent", "wgmma_ws_tma_pingpong_m64", "wgmma_ws_tma_pingpong"] {
            let k = algo(name).kernel().unwrap();
            let (on, off) = (plan_folding(k, &speech, DType::F16, &d, true).unwrap(), plan_folding(k, &speech, DType::F16, &d, false).unwrap());
            assert!(on.fold_w && !off.fold_w, "{name}");
            assert_eq!((on.kernel_problem(&speech).unwrap(), off.kernel_problem(&speech).unwrap()), (folded, speech));
            assert!(on.predicted_us < 0.75 * off.predicted_us, "{name}: {} against {}", on.predicted_us, off.predicted_us);
            // The filter map is the folded problem's: K x (R*S/2) taps x 64 channels.
            let fm = on.filter_map_problem(&speech).unwrap();
            assert_eq!((fm.c, fm.r * fm.s, fm.k), (64, 25, 32));
        }
        // The input map: W/2 pixels of 2C channels, rows W*C apart; unfolded, W*C too.
        let key = |fold| crate::tensor_map::InputMapKey::new(0, &speech, DType::F16, 128, fold).unwrap();
        let (on, off) = (key(true), key(false));
        assert_eq!((on.dims, on.row_pitch, on.strides, on.upper), ([32, 79, 170, 64], 341 * 32, [1, 2], [-4, -4]));
        assert_eq!((off.dims, off.row_pitch, off.strides, off.upper), ([32, 79, 341, 32], 341 * 32, [2, 2], [-9, -4]));
        // A 64-channel layer fills its k-tiles already; the plane kernels read NCHW as it is.
        let wide = Conv2d::new(8, 64, 40, 80, 64, 3, 4).with_stride(2);
        assert!(!plan_folding(algo("wgmma_ws_tma_persistent").kernel().unwrap(), &wide, DType::F16, &d, true).unwrap().fold_w);
        let strided_1x1 = Conv2d::new(8, 32, 28, 28, 64, 1, 2).with_stride(2);
        assert!(plan_folding(algo("wgmma_ws_tma_persistent").kernel().unwrap(), &strided_1x1, DType::F16, &d, true).unwrap().fold_w);
        // A plan made for the folded problem refuses to launch on one that does not fold.
        let on = plan_folding(algo("wgmma_ws_tma_persistent").kernel().unwrap(), &speech, DType::F16, &d, true).unwrap();
        assert!(on.kernel_problem(&Conv2d::new(32, 32, 79, 341, 32, 5, 10)).unwrap_err().to_string().contains("does not allow"));
    }

    #[test]
    fn predictions_track_the_h100_measurements() {
        let d = DeviceModel::named("h100").unwrap();
        let seed = Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1);
        let m = 256 * 14 * 14;
        // Measured on the seed shape (H100; BENCHMARKS.md, 2026-11-23, sessions one to four).
        for (entry, measured_us) in [
            ("wgmma_multistage_128x256k64", 204.8),
            ("wgmma_multistage_128x128k64", 252.5),
            ("wgmma_ws_cpasync_128x256k64", 167.4),
            ("wgmma_ws_cpasync_persistent_128x256k64", 160.6),
            ("wgmma_ws_cpasync_persistent_cluster2_128x256k64", 160.1),
            ("wgmma_ws_tma_persistent_128x256k64", 155.7),
            ("wgmma_ws_tma_persistent_cluster2_128x256k64", 155.6),
        ] {
            let ratio = cost(by_entry(entry), &d, m, 512, 256, 9, 1, 1.0, None, Residual::None, None, false) / measured_us;
            assert!((0.9..=1.1).contains(&ratio), "{entry}: predicted/measured {ratio:.2}");
        }
        let plan = algo("wgmma_multistage").plan(&seed, DType::F16, &d).unwrap();
        assert_eq!((plan.kernel, plan.block, plan.grid), ("wgmma_multistage_128x256k64", (256, 1, 1), (784, 1, 1)));
        assert_eq!(plan.shared_bytes as usize, 4 * 48 * 1024 + 1024);
        // The mma.sync kernel's own model predicts it slower on this shape, so Auto prefers this one.
        let mma = algo("wmma_nhwc").plan(&seed, DType::F16, &d).unwrap();
        assert!(plan.predicted_us < mma.predicted_us, "{} vs {}", plan.predicted_us, mma.predicted_us);
        // The warp-specialized steps take the filter's tensor map with boxes of BN rows; step 3 none.
        assert_eq!(plan.filter_map_rows, None);
        let ws = algo("wgmma_ws_cpasync").plan(&seed, DType::F16, &d).unwrap();
        assert_eq!((ws.kernel, ws.block, ws.grid, ws.filter_map_rows), ("wgmma_ws_cpasync_128x256k64", (384, 1, 1), (784, 1, 1), Some(256)));
        assert_eq!(ws.shared_bytes as usize, 4 * 48 * 1024 + 1024 + 128);
        assert!(ws.predicted_us < plan.predicted_us);
        // Clusters: 392 M tiles in 196 clusters of 2 (an odd count rounds up), boxes of half the tile.
        let mc = algo("wgmma_ws_cpasync_cluster2").plan(&seed, DType::F16, &d).unwrap();
        assert_eq!((mc.kernel, mc.grid, mc.filter_map_rows), ("wgmma_ws_cpasync_cluster2_128x256k64", (784, 1, 1), Some(128)));
        // Persistent: one block per SM on the 784 tiles; never more blocks than tiles.
        assert_eq!(algo("wgmma_ws_cpasync_persistent").plan(&seed, DType::F16, &d).unwrap().grid, (d.sms, 1, 1));
        assert_eq!(algo("wgmma_ws_cpasync_persistent_cluster2").plan(&seed, DType::F16, &d).unwrap().grid, (d.sms / 2 * 2, 1, 1));
        assert_eq!(algo("wgmma_ws_cpasync_persistent").plan(&Conv2d::new(1, 64, 9, 9, 64, 3, 3), DType::F16, &d).unwrap().grid, (1, 1, 1));
        let odd = algo("wgmma_ws_cpasync_cluster2").plan(&Conv2d::new(1, 64, 9, 9, 64, 3, 3).with_pad(1), DType::BF16, &d).unwrap();
        assert_eq!((odd.kernel, odd.grid, odd.filter_map_rows), ("wgmma_ws_cpasync_cluster2_bf16_128x128k64", (2, 1, 1), Some(64)));
    }

    #[test]
    fn ping_pong_plans_its_own_tiles_and_auto_takes_only_the_64_row_tiles() {
        let d = DeviceModel::named("h100").unwrap();
        let pp = algo("wgmma_ws_tma_pingpong");
        // 8,128,28,28 -> 512 1x1: a persistent grid, at most 128 columns (a warpgroup holds the
        // whole tile's accumulators), the im2col map, no workspace; the TF32 entry for fp32.
        let p = Conv2d::new(8, 128, 28, 28, 512, 1, 1);
        let plan = pp.plan(&p, DType::F16, &d).unwrap();
        let c = by_entry(plan.kernel);
        assert!(c.policy.ping_pong() && c.bn <= 128, "{plan:?}");
        assert_eq!((plan.grid.0, plan.grid.2, plan.workspace_bytes, plan.input_map), (d.sms, 1, 0, Some(crate::plan::InputMap::Im2col { pixels: 128 })));
        // Step 12: 64-row tiles, up to 256 wide, the im2col map's copies of 64 pixels; 8 * 784
        // / 64 = 98 M tiles.
        let m64 = algo("wgmma_ws_tma_pingpong_m64").plan(&p, DType::BF16, &d).unwrap();
        let c = by_entry(m64.kernel);
        assert_eq!((c.block_m(), m64.input_map, m64.block.0), (64, Some(crate::plan::InputMap::Im2col { pixels: 64 }), 384), "{m64:?}");
        assert_eq!(tiles(c, 8 * 784, 512), 98 * 512 / c.bn);
        let tf32 = algo("wgmma_ws_tma_pingpong_tf32").plan(&p.with_precision(Precision::Tf32), DType::F32, &d).unwrap();
        assert!(tf32.kernel.starts_with("wgmma_ws_tma_pingpong_tf32_"), "{}", tf32.kernel);
        // Step 10 measured slower than step 7 on most layers (BENCHMARKS.md, sixteenth session):
        // its rates keep it out of Auto's picks, bare or fused. Step 12 is Auto's pick on layers
        // of few tiles (16,2048,7,7 -> 512 1x1: 1.36x step 7's speed on the H100), not on a large
        // 3x3 layer (16,64,80,350 -> 64: 0.69x).
        let mut m64 = 0;
        for s in crate::suite::Suite::load("deepbench").unwrap().shapes.iter().chain(crate::suite::Suite::load("resnet50").unwrap().shapes.iter()) {
            for p in [*s, s.with_epilogue("bias+relu".parse::<crate::Epilogue>().unwrap())] {
                let Ok(choice) = crate::select::choose(&p, DType::F16, Layout::Nhwc, &d) else { continue };
                assert!(!matches!(choice.pick, Algorithm::Wgmma(policy) if policy.ping_pong() && policy.block_m == BLOCK_M), "Auto picked step 10 for {p:?}");
                m64 += matches!(choice.pick, Algorithm::Wgmma(policy) if policy.ping_pong()) as usize;
            }
        }
        assert!(m64 > 0);
        let pick = |p: Conv2d| crate::select::choose(&p, DType::F16, Layout::Nhwc, &d).unwrap().pick;
        assert_eq!(pick(Conv2d::new(16, 2048, 7, 7, 512, 1, 1).with_pad(3).with_stride(2)), algo("wgmma_ws_tma_pingpong_m64"));
        assert_ne!(pick(Conv2d::new(16, 64, 80, 350, 64, 3, 3).with_pad(1)), algo("wgmma_ws_tma_pingpong_m64"));
    }

    #[test]
    fn ping_pong_on_a_tile_twice_as_wide_as_k_is_charged_its_padding() {
        // The 5x10 speech layer at K = 32 (H200, thirty-seventh session, bias + residual + ReLU):
        // step 7 at 128x32 51.4 us, ping-pong at 128x64 76.2, step 12 at 64x32 63.9.
        let d = DeviceModel::named("h200").unwrap();
        let ep = "bias+residual+relu".parse::<crate::Epilogue>().unwrap();
        let p = Conv2d::new(16, 32, 79, 341, 32, 5, 10).with_stride(2).with_epilogue(ep);
        let at = |a: &str| algo(a).plan(&p, DType::F16, &d).unwrap();
        let (step7, pp) = (at("wgmma_ws_tma_persistent"), at("wgmma_ws_tma_pingpong"));
        assert!(step7.kernel.ends_with("128x32k64") && pp.kernel.ends_with("128x64k64"), "{} {}", step7.kernel, pp.kernel);
        assert!(pp.predicted_us > 1.2 * step7.predicted_us, "{} {}", pp.predicted_us, step7.predicted_us);
        let picked = crate::select::choose(&p, DType::F16, Layout::Nhwc, &d).unwrap().pick;
        assert_eq!(picked.to_string(), "wgmma_ws_tma_persistent");
        // The same tile's MMAs at K = 32 cost more than at K = 64 (half of them padding, and
        // the factor), though half the outputs are written; step 7's tile has no such charge.
        let cost_at = |entry: &str, k: usize| cost(by_entry(entry), &d, 100_000, k, 64, 9, 1, 1.0, None, Residual::None, None, false);
        assert!(cost_at("wgmma_ws_tma_pingpong_128x64k64", 32) > cost_at("wgmma_ws_tma_pingpong_128x64k64", 64));
        assert!(cost_at("wgmma_ws_tma_persistent_128x64k64", 32) < cost_at("wgmma_ws_tma_persistent_128x64k64", 64));
    }

    #[test]
    fn a_residual_by_threads_is_charged_a_trip_a_tile_and_by_tma_its_bytes() {
        let d = DeviceModel::named("h200").unwrap();
        let ep = "bias+residual+relu".parse::<crate::Epilogue>().unwrap();
        let relu = "bias+relu".parse::<crate::Epilogue>().unwrap();
        let plan = |a: &str, p: Conv2d, e| algo(a).plan(&p.with_epilogue(e), DType::F16, &d).unwrap();
        let three = Conv2d::new(32, 64, 56, 56, 64, 3, 3).with_pad(1);
        let one = Conv2d::new(32, 128, 28, 28, 512, 1, 1);
        // Loaded by step 7's threads (fp32 outputs, or no map): more than its bytes, a trip a
        // tile (measured on the H200, thirty-fifth session).
        let c = by_entry("wgmma_ws_tma_persistent_128x64k64");
        let (m, n) = (three.output_len() / three.k, three.k);
        let step7 = |r| cost(c, &d, m, n, three.c, 9, 1, 1.0, None, r, None, false);
        let bytes = memory_us(&d, (three.output_len() * 2) as f64);
        assert!(step7(Residual::Loaded) > step7(Residual::None) + bytes + 1.0, "{} {}", step7(Residual::Loaded), step7(Residual::None));
        // The tiles that take it by TMA: the map and its buffers; under ping-pong its bytes alone,
        // on step 7 the threads' charge (which stands in for its exposed register epilogue).
        for (a, p, bm) in [("wgmma_ws_tma_pingpong_m64", one, 64), ("wgmma_ws_tma_pingpong", three, 128), ("wgmma_ws_tma_persistent", three, 128)] {
            let fused = plan(a, p, ep);
            let c = by_entry(fused.kernel);
            assert!(c.takes_residual_map() && fused.residual_map_rows == Some(bm), "{fused:?}");
            assert_eq!(fused.shared_bytes as usize, c.smem_bytes_with_residual());
            let (m, taps) = (p.output_len() / p.k, p.r * p.s);
            let with = |r| cost(c, &d, m, p.k, p.c, taps, 1, 1.0, None, r, None, false);
            let bytes = memory_us(&d, (p.output_len() * 2) as f64);
            assert!((fused.predicted_us - with(Residual::ByTma)).abs() < 1e-9, "{a}");
            if c.policy.ping_pong() {
                assert!((with(Residual::ByTma) - with(Residual::None) - bytes).abs() < 1e-9, "{a}");
                assert!(with(Residual::Loaded) >= with(Residual::ByTma), "{a}");
            } else {
                assert_eq!(with(Residual::ByTma), with(Residual::Loaded), "{a}");
            }
            // Without a residual, neither the map nor its buffers.
            let bare = plan(a, p, relu);
            assert_eq!((bare.residual_map_rows, bare.shared_bytes as usize), (None, by_entry(bare.kernel).smem_bytes()));
        }
        // Measured on the H200 (BENCHMARKS.md, thirty-sixth session), every kernel with its
        // residual by TMA: on the 1x1 layer steps 10, 12 and 7 (128x128) within 6% of each other
        // (21.9, 22.6, 23.2 us), and Auto picks one of them; on the 3x3 layer ping-pong at 21.9
        // against step 7's 45.6 (128x128), and Auto picks ping-pong.
        let choice = |p: Conv2d| crate::select::choose(&p.with_epilogue(ep), DType::F16, Layout::Nhwc, &d).unwrap();
        let picked = choice(one);
        assert!(picked.estimate().is_some_and(|e| e.plan.residual_map_rows.is_some()), "{:?}", picked.pick);
        assert!(matches!(choice(three).pick, Algorithm::Wgmma(policy) if policy.ping_pong()), "{:?}", choice(three).pick);
    }

    #[test]
    fn split_k_plans_own_entries_and_size_their_workspace() {
        let d = DeviceModel::named("h100").unwrap();
        // Few tiles, a long reduction: split, with the split entry and a workspace for it.
        let few = Conv2d::new(16, 832, 7, 7, 128, 5, 5).with_pad(2);
        let sk = algo("wgmma_ws_tma_splitk").plan(&few, DType::F16, &d).unwrap();
        let c = by_entry(sk.kernel);
        assert!(c.policy.split_k() && sk.grid.2 >= 2, "{sk:?}");
        assert_eq!(sk.workspace_bytes, split_k::workspace_bytes(tiles(c, 16 * 49, 128), c.bn, sk.grid.2 as usize));
        assert!(sk.input_map == Some(crate::plan::InputMap::Im2col { pixels: 128 }) && sk.filter_map_rows == Some(c.bn as u32));
        // The unsplit schedules never take a workspace or a z grid.
        for k in &KERNELS {
            if let (Ok(p), false) = (k.plan(&few, DType::F16, &d), matches!(k.algorithm, Algorithm::Wgmma(p) if p.split_k())) {
                assert_eq!((p.workspace_bytes, p.grid.2), (0, 1), "{}", k.name);
            }
        }
        // One k-tile (1x1, C = 64): nothing to split, refused with the reason.
        let e = algo("wgmma_ws_tma_splitk").plan(&Conv2d::new(2, 64, 9, 9, 64, 1, 1), DType::F16, &d).unwrap_err();
        assert!(e.to_string().contains("at least 2 slices"), "{e}");
    }

    #[test]
    fn planes_take_nchw_1x1_layers_and_auto_picks_them_for_nchw_callers() {
        let d = DeviceModel::named("h100").unwrap();
        let planes = algo("wgmma_nchw1x1_persistent");
        // ResNet-50's 32,256,56,56 -> 64: K = 64 rows (half a row tile), 32 images' 3136 pixel
        // columns.
        let p = Conv2d::new(32, 256, 56, 56, 64, 1, 1);
        let plan = planes.plan(&p, DType::F16, &d).unwrap();
        let c = by_entry(plan.kernel);
        assert_eq!((plan.filter_map_rows, plan.input_map), (Some(BLOCK_M as u32), Some(crate::plan::InputMap::Planes)));
        assert_eq!(plan.grid.0 as usize, tiles(c, 128, 32 * 3136).min(resident(c, &d)));
        // Output channels padded to whole 128-row tiles, each image's pixels to whole copies
        // (784 = 12.25 x 64), the images end to end.
        assert_eq!((plane_rows(64, 128), plane_rows(128, 128), plane_rows(136, 128)), (128, 128, 256));
        assert_eq!((plane_rows(64, 64), plane_rows(72, 64), plane_rows(192, 64)), (64, 128, 192));
        assert_eq!(plane_gemm(32, 512, 28 * 28, 128), (512, 32 * 832));
        // Step 15 computes the same layer in 64-row tiles: one row tile.
        let m64 = algo("wgmma_nchw1x1_pingpong_m64");
        let plan = m64.plan(&p, DType::F16, &d).unwrap();
        let c = by_entry(plan.kernel);
        assert_eq!((c.block_m(), plan.filter_map_rows, plan.input_map), (64, Some(64), Some(crate::plan::InputMap::Planes)));
        assert_eq!(plan.grid.0 as usize, tiles(c, 64, 32 * 3136).min(resident(c, &d)));
        // An NCHW caller gets a plane kernel (no transforms): step 15 at K = 64, where step 9's
        // second warpgroup would idle, step 9 on a long reduction into 256 channels; an NHWC
        // caller the NHWC kernels.
        let pick = |p: &Conv2d, layout| crate::select::choose(p, DType::F16, layout, &d).unwrap().pick;
        assert_eq!(pick(&p, Layout::Nchw), m64);
        let long = Conv2d::new(32, 512, 28, 28, 256, 1, 1);
        assert_eq!(pick(&long, Layout::Nchw), planes);
        // Step 18 plans the same layers on 128-row ping-pong tiles (the plane map, 128-row
        // filter boxes); Auto takes it where it predicts it fastest, which is not here.
        let step18 = algo("wgmma_nchw1x1_pingpong");
        let plan = step18.plan(&long, DType::F16, &d).unwrap();
        let c = by_entry(plan.kernel);
        assert_eq!((c.block_m(), c.policy.schedule, plan.filter_map_rows, plan.input_map), (BLOCK_M, Schedule::PingPong, Some(BLOCK_M as u32), Some(crate::plan::InputMap::Planes)));
        assert!(auto_eligible(step18) && auto_eligible(m64));
        assert_ne!(pick(&long, Layout::Nchw), step18);
        // On 14x14 planes (copied by cp.async) step 15's 64-row tiles pay twice the copies a
        // FLOP: 32,1024,14,14->256 measured 17.8 us against step 9's 12.7 and step 18's 13.0
        // (bf16, H200, fifty-third session), and Auto takes one of those two there.
        let h200 = DeviceModel::named("h200").unwrap();
        let fourteen = Conv2d::new(32, 1024, 14, 14, 256, 1, 1);
        assert!([planes, step18].contains(&crate::select::choose(&fourteen, DType::BF16, Layout::Nchw, &h200).unwrap().pick));
        assert!(![planes, m64].contains(&pick(&p, Layout::Nhwc)));
        // What it refuses, with the reasons.
        for (q, why) in [
            (Conv2d::new(2, 64, 8, 8, 64, 3, 3).with_pad(1), "1x1 filters"),
            (Conv2d::new(2, 64, 8, 8, 64, 1, 1).with_stride(2), "stride 1"),
            (Conv2d::new(2, 64, 8, 8, 64, 1, 1).with_pad(1), "without padding"),
            (Conv2d::new(2, 64, 7, 7, 64, 1, 1), "H*W = 49 must be even"),
            (Conv2d::new(2, 60, 8, 8, 64, 1, 1), "C = 60"),
            (Conv2d::new(2, 60, 14, 14, 64, 1, 1), "C = 60"),
            (Conv2d::new(2, 64, 14, 14, 64, 1, 1).with_epilogue("bias+silu".parse().unwrap()), "piecewise linear"),
        ] {
            let e = planes.plan(&q, DType::F16, &d).unwrap_err().to_string();
            assert!(e.contains(why), "{q}: {e}");
        }
        // Planes whose H*W is not a multiple of 8 but even (14x14) are copied by cp.async: the
        // bare convolution and register epilogues, a residual too.
        for q in [Conv2d::new(8, 256, 14, 14, 512, 1, 1), Conv2d::new(8, 72, 6, 5, 40, 1, 1)] {
            for k in [planes, m64] {
                assert!(k.plan(&q, DType::BF16, &d).is_ok(), "{k} on {q}");
                assert!(k.plan(&q.with_epilogue("scale+bias+residual+relu".parse().unwrap()), DType::F16, &d).is_ok(), "{k} on {q}");
            }
        }
        assert!(planes.plan(&p, DType::F32, &d).is_err());
        // K needs no multiple: rows past K are never stored.
        assert!(planes.plan(&Conv2d::new(2, 64, 8, 8, 13, 1, 1), DType::BF16, &d).is_ok());
    }

    #[test]
    fn short_3xtf32_reductions_run_only_on_tiles_that_sum_each_k_step() {
        use convrs_spec::hopper::{STEP_SUMS_MAX_KTILES, STEP_SUMS_MAX_N};
        let d = DeviceModel::named("h100").unwrap();
        // 6 k-tiles of 32 fp32 channels: 192 channels of a 1x1 layer. On those, the 128-wide
        // 3xTF32 tiles are never chosen; past it, every width may be.
        assert_eq!((STEP_SUMS_MAX_KTILES, STEP_SUMS_MAX_N), (6, 64));
        for (name, short, long) in [
            ("wgmma_ws_tma_persistent_3xtf32", Conv2d::new(32, 192, 56, 56, 1024, 1, 1), Conv2d::new(32, 224, 56, 56, 1024, 1, 1)),
            ("wgmma_nchw1x1_persistent_3xtf32", Conv2d::new(32, 64, 56, 56, 256, 1, 1), Conv2d::new(32, 1024, 56, 56, 256, 1, 1)),
        ] {
            let x3 = algo(name);
            for (q, fits_128) in [(short, false), (long, true)] {
                let q = q.with_precision(Precision::Fp32);
                let plan = x3.plan(&q, DType::F32, &d).unwrap();
                assert!(by_entry(plan.kernel).bn <= STEP_SUMS_MAX_N || fits_128, "{q}: {}", plan.kernel);
                assert_eq!(Math::Tf32x3.accurate(q.c.div_ceil(32) as i32, 128), fits_128, "{q}");
            }
        }
        // The contract itself, at its edges.
        assert!(Math::Tf32x3.accurate(1, 64) && Math::Tf32.accurate(1, 128) && !Math::Tf32x3.accurate(6, 128) && Math::Tf32x3.accurate(7, 128));
        assert!(Math::Tf32x3.step_sums(6, 64) && !Math::Tf32x3.step_sums(7, 64) && !Math::Tf32.step_sums(1, 64));
    }

    #[test]
    fn pixel_planes_take_nchw_fp32_1x1_layers_and_auto_picks_them_for_nchw_tf32_callers() {
        let d = DeviceModel::named("h100").unwrap();
        let (tf32, x3) = (algo("wgmma_nchw1x1_persistent_tf32"), algo("wgmma_nchw1x1_persistent_3xtf32"));
        // ResNet-50's 32,1024,14,14 -> 256: 196 pixels an image in 224 rows (whole 32-pixel
        // copies), 256 output-channel columns.
        let p = Conv2d::new(32, 1024, 14, 14, 256, 1, 1).with_precision(Precision::Tf32);
        assert_eq!((plane_pixel_rows(196), plane_pixel_rows(3136), plane_pixel_rows(4)), (224, 3136, 32));
        let plan = tf32.plan(&p, DType::F32, &d).unwrap();
        let c = by_entry(plan.kernel);
        assert_eq!((plan.filter_map_rows, plan.input_map, plan.split_filter), (Some(c.bn as u32), Some(crate::plan::InputMap::Planes), false));
        assert_eq!(plan.grid.0 as usize, tiles(c, 32 * 224, 256).min(resident(c, &d)));
        let plan = x3.plan(&p.with_precision(Precision::Fp32), DType::F32, &d).unwrap();
        assert!(plan.split_filter);
        // An NCHW caller asking for TF32 gets it (no transforms); an NHWC caller does not.
        let pick = |layout| crate::select::choose(&p, DType::F32, layout, &d).unwrap().pick;
        assert_eq!(pick(Layout::Nchw), tf32);
        assert_ne!(pick(Layout::Nhwc), tf32);
        // What it refuses, with the reasons: fp32 strides need multiples of 4, not 8.
        for (q, why) in [
            (Conv2d::new(2, 64, 8, 8, 64, 1, 1).with_stride(2), "stride 1"),
            (Conv2d::new(2, 64, 7, 7, 64, 1, 1), "H*W = 49 must be a multiple of 4"),
            (Conv2d::new(2, 62, 8, 8, 64, 1, 1), "C = 62 must be a multiple of 4"),
            (Conv2d::new(2, 64, 8, 8, 64, 1, 1).with_epilogue(crate::Epilogue::NONE.with_bias().with_activation(crate::epilogue::Activation::Relu)), "no fused epilogue"),
        ] {
            let e = tf32.plan(&q.with_precision(Precision::Tf32), DType::F32, &d).unwrap_err().to_string();
            assert!(e.contains(why), "{q}: {e}");
        }
        assert!(tf32.plan(&Conv2d::new(2, 60, 14, 14, 13, 1, 1).with_precision(Precision::Tf32), DType::F32, &d).is_ok());
        assert!(tf32.plan(&p, DType::F16, &d).is_err());
        // A strided 1x1 layer runs on its input sampled on the stride's grid: the plan of the
        // caller's problem says so, the run problem plans, and Auto, pricing the sampling pass,
        // takes it for an NCHW TF32 caller (deepbench's 8,256,56,56 -> 128 at stride 2).
        let strided = Conv2d::new(8, 256, 56, 56, 128, 1, 1).with_stride(2).with_precision(Precision::Tf32);
        assert!(tf32.plan(&strided, DType::F32, &d).unwrap_err().to_string().contains("sampled on the stride's grid"));
        let run = tf32.kernel().unwrap().run_problem(&strided);
        assert_eq!((run, strided.sampling(&run)), (Conv2d::new(8, 256, 28, 28, 128, 1, 1).with_precision(Precision::Tf32), (2, 2)));
        assert!(tf32.plan(&run, DType::F32, &d).is_ok());
        let choice = crate::select::choose(&strided, DType::F32, Layout::Nchw, &d).unwrap();
        assert_eq!(choice.pick, tf32, "{:?}", choice.estimate());
        let e = choice.estimate().unwrap();
        assert!(e.conversion_us > 0.0 && e.padded == Some(run), "{e:?}");
        // With padding, or a larger filter, there is no such problem.
        assert_eq!(x3.kernel().unwrap().run_problem(&strided.with_pad(1)), strided.with_pad(1));
    }

    #[test]
    fn refuses_other_devices_types_and_channel_counts_with_reasons() {
        let p = Conv2d::new(2, 64, 9, 9, 64, 3, 3).with_pad(1);
        for name in ["a100", "l40s", "rtx4090"] {
            let e = algo("wgmma_multistage").plan(&p, DType::F16, &DeviceModel::named(name).unwrap()).unwrap_err();
            assert!(e.to_string().contains("compute capability 9.0"), "{name}: {e}");
        }
        let h100 = DeviceModel::named("h100").unwrap();
        let unloaded = DeviceModel { sm90a: false, ..h100.clone() };
        assert!(algo("wgmma_multistage").plan(&p, DType::F16, &unloaded).unwrap_err().to_string().contains("did not load"));
        assert!(algo("wgmma_multistage").plan(&Conv2d { c: 12, ..p }, DType::BF16, &h100).unwrap_err().to_string().contains("multiples of 8"));
        assert!(algo("wgmma_multistage").plan(&p, DType::F32, &h100).unwrap_err().to_string().contains("reads fp16/bf16 data"));
        assert_eq!(algo("wgmma_multistage").plan(&p, DType::BF16, &h100).unwrap().kernel, "wgmma_multistage_bf16_128x128k64");
        assert_eq!(algo("wgmma_ws_cpasync").plan(&p, DType::BF16, &h100).unwrap().kernel, "wgmma_ws_cpasync_bf16_128x128k64");
        assert!(algo("wgmma_ws_cpasync").plan(&p, DType::F16, &unloaded).unwrap_err().to_string().contains("did not load"));
    }

    #[test]
    fn grouped_problems_run_merged_on_the_im2col_kernels_in_tiles_within_a_group() {
        let d = DeviceModel::named("h100").unwrap();
        // ResNeXt-50 32x4d stage 2: 32 groups of 8 channels run as 4 of 64.
        let p = Conv2d::new(8, 256, 28, 28, 256, 3, 3).with_pad(1).with_groups(32);
        for (name, merged) in [("wgmma_ws_tma_persistent", 4), ("wgmma_ws_tma_pingpong_m64", 4), ("wgmma_ws_tma_persistent_cluster2", 2)] {
            let k = algo(name).kernel().unwrap();
            let run = k.run_problem(&p);
            // The clusters' tiles are at least 128 wide: groups of 128 channels.
            assert_eq!(run, p.with_groups(merged), "{name}");
            let plan = k.plan(&run, DType::F16, &d).unwrap();
            // A group holds whole tiles.
            let bn = CONFIGS.iter().find(|c| c.entries.contains(&plan.kernel)).unwrap().bn;
            assert!(run.k / run.groups % bn == 0, "{name}: {}", plan.kernel);
            // The unmerged problem's 8-channel rows are 16 bytes: allowed, but no tile fits a
            // group of 8 outputs.
            let e = k.plan(&p, DType::F16, &d).unwrap_err().to_string();
            assert!(e.contains("K/G = 8") && e.contains("within one group"), "{name}: {e}");
            // 4-channel rows are not 16 bytes.
            let e = k.plan(&Conv2d { c: 128, ..p }, DType::F16, &d).unwrap_err().to_string();
            assert!(e.contains("C/G = 4 must be a multiple of 8"), "{name}: {e}");
        }
        // The reduction is a group's: 64 channels, one k-tile a tap, however many groups.
        let wide = algo("wgmma_ws_tma_persistent").plan(&p.with_groups(4), DType::F16, &d).unwrap();
        let dense = algo("wgmma_ws_tma_persistent").plan(&Conv2d { c: 64, k: 64, ..p.with_groups(1) }, DType::F16, &d).unwrap();
        assert!(wide.predicted_us < 4.5 * dense.predicted_us, "{} vs {}", wide.predicted_us, dense.predicted_us);
        // The other producers, the plane kernel and the sm_80 kernels refuse groups, naming
        // where they run.
        for name in ["wgmma_ws_cpasync", "wgmma_multistage", "wmma_nhwc"] {
            let e = algo(name).plan(&p.with_groups(4), DType::F16, &d).unwrap_err().to_string();
            assert!(e.contains("wgmma_ws_tma*"), "{name}: {e}");
            assert_eq!(algo(name).kernel().unwrap().run_problem(&p), Conv2d { ..p }, "{name}");
        }
    }

    #[test]
    fn auto_leaves_the_row_kernel_to_callers_who_name_it() {
        // Planned and listed (its prediction under its name), never picked: measured slower than
        // the transposes on most layers it takes, equal on the others (`auto_eligible`).
        let d = DeviceModel::named("h100").unwrap();
        for p in [Conv2d::new(1, 64, 160, 160, 64, 3, 3).with_pad(1), Conv2d::new(1, 128, 512, 512, 128, 3, 3).with_pad(1), Conv2d::new(1, 64, 56, 56, 64, 3, 3).with_pad(1)] {
            let c = crate::select::choose(&p, DType::F16, Layout::Nchw, &d).unwrap();
            assert_ne!(c.pick.name(), "wgmma_nchw_rows_persistent", "{p}");
            assert!(c.candidates.iter().any(|k| k.kernel.name == "wgmma_nchw_rows_persistent" && k.outcome.is_ok()), "{p}");
        }
    }

    /// Step 16 writes NCHW from NHWC input: its plans ask for the twin's shared memory plus the
    /// staging, fuse bias + ReLU on the accumulators (nothing charged beyond the bare store) and
    /// a residual in the staged store (charged), and Auto takes it for NCHW callers of R x S
    /// layers, bare or with bias + ReLU (the output's transpose saved), but not for NHWC callers
    /// (one added).
    #[test]
    fn nchw_output_kernels_stage_fuse_epilogues_and_serve_nchw_callers() {
        let d = DeviceModel::named("h100").unwrap();
        let p = Conv2d::new(32, 64, 56, 56, 64, 3, 3).with_pad(1);
        for (name, twin) in [("wgmma_ws_tma_persistent_to_nchw", "wgmma_ws_tma_persistent"), ("wgmma_ws_tma_pingpong_m64_to_nchw", "wgmma_ws_tma_pingpong_m64")] {
            let k = algo(name).kernel().unwrap();
            assert_eq!(k.layouts, (Layout::Nhwc, Layout::Nhwc, Layout::Nchw), "{name}");
            let plan = k.plan(&p, DType::F16, &d).unwrap();
            let config = by_entry(plan.kernel);
            let twin_config = CONFIGS.iter().find(|c| c.policy.name() == twin && c.bn == config.bn).unwrap();
            assert_eq!(plan.shared_bytes as usize, twin_config.smem_bytes() + convrs_spec::hopper::NCHW_STAGING_BYTES, "{name}");
            // The same tile fused with bias + ReLU (nothing charged beyond the bare store) and
            // with a residual (the staged store charged), and no held stage in either.
            let relu = p.with_epilogue("bias+relu".parse::<crate::Epilogue>().unwrap());
            let residual = p.with_epilogue("bias+residual+relu".parse::<crate::Epilogue>().unwrap());
            let (relu, residual) = (k.plan(&relu, DType::F16, &d).unwrap(), k.plan(&residual, DType::F16, &d).unwrap());
            let bare = plan;
            assert_eq!((relu.kernel, relu.predicted_us), (bare.kernel, bare.predicted_us), "{name}");
            assert!(residual.predicted_us > bare.predicted_us, "{name}: {} vs {}", residual.predicted_us, bare.predicted_us);
            assert_eq!(relu.shared_bytes, bare.shared_bytes, "{name}");
        }
        for ep in ["", "bias+relu"] {
            let q = if ep.is_empty() { p } else { p.with_epilogue(ep.parse::<crate::Epilogue>().unwrap()) };
            let nchw = crate::select::choose(&q, DType::F16, Layout::Nchw, &d).unwrap();
            assert!(nchw.pick.name().ends_with("_to_nchw"), "{q}: {}", nchw.pick.name());
            let nhwc = crate::select::choose(&q, DType::F16, Layout::Nhwc, &d).unwrap();
            assert!(!nhwc.pick.name().ends_with("_to_nchw"), "{q}: {}", nhwc.pick.name());
        }
    }

    /// Step 16's bare 16-bit store on runs of 8 pixels (tiles under 128 accumulators) is
    /// modelled at its NHWC twin's time on the same tile ([`NCHW_MATRIX`]); on 14x14 planes
    /// (runs of 4) the fp32 staging's rate (step 7's 1.23) stays, and so does a staged
    /// residual's charge.
    #[test]
    fn nchw_output_on_whole_runs_is_modelled_at_the_twins_rate() {
        let d = DeviceModel::named("h200").unwrap();
        let plan = |name: &str, p: &Conv2d| algo(name).kernel().unwrap().plan(p, DType::BF16, &d).unwrap();
        let p = Conv2d::new(32, 64, 56, 56, 256, 1, 1);
        let (nchw, twin) = (plan("wgmma_ws_tma_persistent_to_nchw", &p), plan("wgmma_ws_tma_persistent", &p));
        // The twin may take 128x256, which step 16 does not have: within that tile's rate.
        assert!(nchw.predicted_us <= twin.predicted_us * 1.3, "{} vs {}", nchw.predicted_us, twin.predicted_us);
        let residual = plan("wgmma_ws_tma_persistent_to_nchw", &p.with_epilogue("bias+residual+relu".parse::<crate::Epilogue>().unwrap()));
        assert!(residual.predicted_us > nchw.predicted_us * 1.2, "{} vs {}", residual.predicted_us, nchw.predicted_us);
        // Step 16's prediction over its twin's cost on the tile it took, and that tile's width.
        let same_tile_of = |twin: &str, p: &Conv2d| {
            let nchw = plan(&format!("{twin}_to_nchw"), p);
            let bn = by_entry(nchw.kernel).bn;
            let config = CONFIGS.iter().find(|c| c.policy.name() == twin && c.bn == bn).unwrap();
            (nchw.predicted_us / cost(config, &d, p.n * p.output_hw().0 * p.output_hw().1, p.k, p.c, 1, 1, 1.0, None, Residual::None, None, false), bn)
        };
        let same_tile = |p: &Conv2d| same_tile_of("wgmma_ws_tma_persistent", p).0;
        assert!((same_tile(&p) - 1.0).abs() < 1e-9, "{}", same_tile(&p));
        let short = Conv2d::new(32, 256, 14, 14, 1024, 1, 1);
        // (Its MMA time at 1.23 the twin's; the launch and memory terms the same.)
        assert!(same_tile(&short) > 1.05, "{}", same_tile(&short));
        // Step 12's 64x256 blocks stage transposed too (128 accumulators a thread, but 256 wide).
        let (m64, bn) = same_tile_of("wgmma_ws_tma_pingpong_m64", &p);
        assert_eq!(bn, 256, "the model's tile for {p}");
        assert!((m64 - 1.0).abs() < 1e-9, "{m64}");
    }

    /// Step 16's launches with a residual in the staged store ask for the residual slots
    /// where the block has the room and the output's planes run 2 pixels or more (the copies'
    /// 4-byte least); without a residual, or on odd planes, the staging alone.
    #[test]
    fn nchw_output_residual_asks_for_the_slots_where_they_fit() {
        let d = DeviceModel::named("h100").unwrap();
        let residual = "bias+residual+relu".parse::<crate::Epilogue>().unwrap();
        let mut with_slots = 0;
        for name in ["wgmma_ws_tma_persistent_to_nchw", "wgmma_ws_tma_pingpong_to_nchw", "wgmma_ws_tma_pingpong_m64_to_nchw"] {
            let k = algo(name).kernel().unwrap();
            // Planes of 784, 196 and 98 pixels (runs of 8, 4 and 2), then 49 (runs of 1).
            for (c, h, w, kout, slots) in [(64, 28, 28, 64, true), (128, 28, 28, 256, true), (128, 14, 14, 128, true), (64, 7, 14, 64, true), (256, 7, 7, 256, false)] {
                let p = Conv2d::new(8, c, h, w, kout, 3, 3).with_pad(1);
                let plan = k.plan(&p.with_epilogue(residual), DType::F16, &d).unwrap();
                let bare = k.plan(&p, DType::F16, &d).unwrap();
                let config = by_entry(plan.kernel);
                let fits = config.smem_bytes_with_nchw_slots() <= d.smem_per_block as usize;
                let expect = if slots && fits { config.smem_bytes_with_nchw_slots() } else { config.smem_bytes() };
                assert_eq!(plan.shared_bytes as usize, expect, "{name} {p}");
                assert_eq!(by_entry(bare.kernel).smem_bytes(), bare.shared_bytes as usize, "{name} {p}");
                with_slots += (slots && fits) as usize;
            }
        }
        assert!(with_slots >= 6, "{with_slots}");
    }

    /// A residual the staged NCHW store reads itself on short runs is charged per tile
    /// ([`nchw_store_residual_us`]): on the three 14x14-output layers where step 12's 64x256
    /// tile (no room for the slots) measured 1.7-2.1x step 7's 128x128 with slots (bf16, bias +
    /// residual + ReLU; H200, forty-first session: 57.5/37.4/31.3 us against 33.9/20.9/15.0),
    /// step 12 plans a tile with slots, and an NCHW caller's Auto takes neither step 12 writing
    /// NCHW nor its 64x256 tile. Runs of 8 are not charged.
    #[test]
    fn short_runs_charge_the_residual_the_nchw_store_reads_itself() {
        let d = DeviceModel::named("h200").unwrap();
        let residual = "bias+residual+relu".parse::<crate::Epilogue>().unwrap();
        let m64 = algo("wgmma_ws_tma_pingpong_m64_to_nchw");
        for p in [
            Conv2d::new(32, 512, 28, 28, 1024, 1, 1).with_stride(2),
            Conv2d::new(32, 256, 14, 14, 256, 3, 3).with_pad(1),
            Conv2d::new(32, 1024, 14, 14, 256, 1, 1),
        ] {
            let q = p.with_epilogue(residual);
            let plan = m64.kernel().unwrap().plan(&q, DType::BF16, &d).unwrap();
            let c = by_entry(plan.kernel);
            assert_eq!(plan.shared_bytes as usize, c.smem_bytes_with_nchw_slots(), "{p}: {}", plan.kernel);
            let pick = crate::select::choose(&q, DType::BF16, Layout::Nchw, &d).unwrap().pick;
            assert_ne!(pick, m64, "{p}");
            // Without a residual the 64x256 tile is step 12's own choice on two of them.
            let bare = m64.kernel().unwrap().plan(&p.with_epilogue("bias+silu".parse().unwrap()), DType::BF16, &d).unwrap();
            assert!(by_entry(bare.kernel).bn >= c.bn, "{p}");
        }
        let tile = |bn| CONFIGS.iter().find(|c| c.policy.producer == Producer::WsTmaNchw && c.block_m() == 64 && c.bn == bn).unwrap();
        // One tile an SM, 16 of a thread's 8-pixel columns: 1.1 us each on runs of 4 (and 2), 2.5 on runs of 1.
        let k = |run, residual| NchwStore { run, residual, columns: true };
        assert!((nchw_columns_us(tile(256), 1.0, k(196, true)) - 16.0 * NCHW_SHORT_RUN_US).abs() < 1e-9);
        assert!((nchw_columns_us(tile(256), 1.0, k(98, true)) - 16.0 * NCHW_SHORT_RUN_US).abs() < 1e-9);
        assert!((nchw_columns_us(tile(128), 1.0, k(49, true)) - 8.0 * NCHW_ONE_RUN_US).abs() < 1e-9);
        assert!((nchw_columns_us(tile(256), 1.0, k(49, false)) - 16.0 * NCHW_COLUMNS_US).abs() < 1e-9);
        assert_eq!(nchw_columns_us(tile(256), 3.0, k(784, true)), 0.0);
    }

    /// On runs of 8 step 16's staged store is not charged step 12's [`M64_FUSED`]
    /// ([`NchwStore`]): an NCHW caller's Auto takes step 12 writing NCHW with a residual on
    /// 32,128,28,28->128 3x3 and 8,64,56,56->64 3x3, where it measured 12-15% faster than step 7
    /// (H200, forty-second session), and keeps step 7 on the 14x14 layer, where step 12
    /// measured 18% slower (22.5 against 19.1 us).
    #[test]
    fn runs_of_8_do_not_charge_step_12_the_held_stage() {
        let d = DeviceModel::named("h200").unwrap();
        let q = |p: Conv2d| p.with_epilogue("bias+residual+relu".parse::<crate::Epilogue>().unwrap());
        let pick = |p: Conv2d| crate::select::choose(&q(p), DType::BF16, Layout::Nchw, &d).unwrap().pick;
        for p in [Conv2d::new(32, 128, 28, 28, 128, 3, 3).with_pad(1), Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1)] {
            assert_eq!(pick(p), algo("wgmma_ws_tma_pingpong_m64_to_nchw"), "{p}");
        }
        assert_eq!(pick(Conv2d::new(32, 256, 14, 14, 256, 3, 3).with_pad(1)), algo("wgmma_ws_tma_persistent_to_nchw"));
    }

    /// Without a residual, the staged NCHW store on short runs is charged where it goes down the
    /// columns: step 12's 64x256 tile (no fused runs along the planes beside 128 accumulators),
    /// which measured 1.5-1.8x step 7's 128x128 with bias + SiLU on 32,256,14,14->256 3x3 and
    /// 32,1024,14,14->256 1x1 (27.0/21.0 us against 17.6/11.6; H200, forty-second session).
    /// Step 12 plans a narrower tile there, and Auto does not take its 64x256 tile.
    #[test]
    fn short_runs_charge_the_nchw_store_down_the_columns() {
        let d = DeviceModel::named("h200").unwrap();
        let silu = "bias+silu".parse::<crate::Epilogue>().unwrap();
        let m64 = algo("wgmma_ws_tma_pingpong_m64_to_nchw").kernel().unwrap();
        for p in [Conv2d::new(32, 256, 14, 14, 256, 3, 3).with_pad(1), Conv2d::new(32, 1024, 14, 14, 256, 1, 1)] {
            let q = p.with_epilogue(silu);
            let c = by_entry(m64.plan(&q, DType::BF16, &d).unwrap().kernel);
            assert!(nchw_store_runs(true, c.block_m(), c.bn), "{p}: {}x{}", c.block_m(), c.bn);
            let choice = crate::select::choose(&q, DType::BF16, Layout::Nchw, &d).unwrap();
            let picked = choice.candidates.iter().find(|k| k.kernel.algorithm == choice.pick).unwrap();
            let kernel = picked.outcome.as_ref().unwrap().plan.kernel;
            assert!(!kernel.contains("m64_to_nchw_bf16_64x256"), "{p}: {kernel}");
        }
        // Runs of 8 are not charged: the 64x256 tile stays step 12's own pick on 28x28 planes.
        let p = Conv2d::new(32, 128, 28, 28, 512, 3, 3).with_pad(1).with_epilogue(silu);
        assert_eq!(by_entry(m64.plan(&p, DType::BF16, &d).unwrap().kernel).bn, 256, "{p}");
    }

    /// An NCHW caller's residual costs a transpose into an NHWC kernel's output layout, and
    /// nothing where the kernel writes NCHW.
    #[test]
    fn a_residual_in_another_layout_is_priced_as_a_conversion() {
        let d = DeviceModel::named("h100").unwrap();
        let p = Conv2d::new(32, 128, 28, 28, 128, 3, 3).with_pad(1);
        let q = p.with_epilogue("bias+residual+relu".parse::<crate::Epilogue>().unwrap());
        let conv = |a: &str, q: &Conv2d| crate::select::conversion_us(algo(a).kernel().unwrap(), q, DType::F16, Layout::Nchw, &d);
        let output = conv("wgmma_ws_tma_persistent", &p) - conv("wgmma_ws_tma_persistent_to_nchw", &p);
        assert!(output > 0.0);
        assert!((conv("wgmma_ws_tma_persistent", &q) - conv("wgmma_ws_tma_persistent", &p) - output).abs() < 1e-9);
        assert_eq!(conv("wgmma_ws_tma_persistent_to_nchw", &q), conv("wgmma_ws_tma_persistent_to_nchw", &p));
        assert_eq!(crate::select::conversion_us(algo("wgmma_ws_tma_persistent").kernel().unwrap(), &q, DType::F16, Layout::Nhwc, &d), 0.0);
    }

    /// Step 17 reads the caller's NCHW tensors (the filter KRSC, made once per weights); its
    /// GEMM rows are whole tiles of `out_rows` output rows per image; it refuses strides,
    /// groups, H*W off the map's 16-byte steps and tiles whose patch does not fit, each with
    /// its reason, and fuses epilogues (in step 16's store); Auto leaves it to `--algo`.
    #[test]
    fn patch_kernel_plans_its_tiles_and_refuses_what_it_cannot_read() {
        let d = DeviceModel::named("h100").unwrap();
        let k = algo("wgmma_nchw_patch_persistent").kernel().unwrap();
        assert_eq!(k.layouts, (Layout::Nchw, Layout::Nhwc, Layout::Nchw));
        // 56x56 3x3: 64-pixel rows, 2 output rows a tile, 28 tiles an image; K = 64 takes the
        // 64-wide tile, whose smem is the layout's end, the alignment KiB and the staging.
        let p = Conv2d::new(32, 64, 56, 56, 64, 3, 3).with_pad(1);
        let plan = k.plan(&p, DType::F16, &d).unwrap();
        let config = by_entry(plan.kernel);
        assert_eq!(config.bn, 64);
        assert_eq!(plan.shared_bytes as usize, 1024 + convrs_spec::hopper::PatchLayout::of(64, config.stages).end + convrs_spec::hopper::NCHW_STAGING_BYTES);
        assert_eq!(convrs_spec::hopper::patch_geometry(56, 56, 3, 3, 1, 1).map(|g| (g.wp, g.out_rows, g.in_rows)), Some((64, 2, 4)));
        assert!(plan.grid.0 as usize <= 32 * 28, "{:?}", plan.grid);
        let refused = |p: Conv2d, why: &str| {
            let e = k.plan(&p, DType::F16, &d).unwrap_err().to_string();
            assert!(e.contains(why), "{p}: {e}");
        };
        refused(p.with_stride(2), "stride 1");
        refused(Conv2d::new(2, 64, 14, 14, 64, 3, 3).with_pad(1), "H*W = 196");
        refused(Conv2d::new(2, 64, 8, 112, 64, 3, 3).with_pad(1), "does not fit");
        refused(Conv2d::new(2, 64, 16, 32, 64, 7, 7).with_pad(3), "does not fit");
        refused(Conv2d::new(2, 64, 16, 16, 64, 3, 3).with_pad(1).with_groups(2), "groups = 1");
        assert!(k.plan(&p.with_epilogue("scale+bias+residual+silu".parse::<crate::Epilogue>().unwrap()), DType::BF16, &d).is_ok());
        assert!(!auto_eligible(k.algorithm));
        assert_ne!(crate::select::choose(&p, DType::F16, Layout::Nchw, &d).unwrap().pick, k.algorithm);
    }

    #[test]
    fn every_policy_is_one_kernel_and_every_entry_plannable() {
        assert_eq!(kernel_names().len(), CONFIGS.iter().map(|c| c.entries.len()).sum::<usize>());
        for (i, k) in KERNELS.iter().enumerate() {
            assert!(KERNELS[..i].iter().all(|o| o.name != k.name));
            assert!(!describe(POLICIES[i]).is_empty());
        }
        // Each configuration is the plan's pick on some problem (no row is unreachable): the
        // tile widths cover K = 32, 64, 128 and 256 and wider.
        let d = DeviceModel::named("h100").unwrap();
        let mut picked = std::collections::HashSet::new();
        for k in [32, 64, 128, 256, 512] {
            for (n, c, hw, r) in [(1, 256, 14, 3), (64, 256, 14, 3), (16, 832, 7, 5), (1, 256, 16, 1), (64, 256, 16, 1), (8, 64, 56, 1), (1, 256, 32, 3), (4, 128, 24, 3)] {
                for kernel in &KERNELS {
                    for dtype in [DType::F16, DType::BF16, DType::F32] {
                        let p = Conv2d::new(n, c, hw, hw, k, r, r).with_pad(r / 2).with_precision(Precision::Tf32);
                        if let Ok(p) = kernel.plan(&p, dtype, &d) {
                            picked.insert(p.kernel);
                        }
                    }
                }
            }
        }
        for c in &CONFIGS {
            assert!(c.entries.iter().all(|e| picked.contains(e)), "{:?} never planned", c.entries);
        }
    }
}
