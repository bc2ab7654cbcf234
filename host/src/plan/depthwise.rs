//! Plans for the depthwise family (kernels-gpu/src/depthwise/, `convrs_spec::depthwise`):
//! `depthwise_nchw` and `depthwise_nhwc`, each an entry per element type and filter size, their
//! steps 2 `depthwise_nchw_strip` and `depthwise_nhwc_strip`, and the NHWC step 3
//! `depthwise_nhwc_tile`, an entry per element type, filter size and stride.
//!
//! Launch: a 1-D grid of blocks, one thread per work item ([`nchw_items`], [`nhwc_items`],
//! [`strip_items`], [`nchw_strip_items`], whose tile counts the kernels expand from the same
//! `depthwise_tiles!`), no
//! shared memory; `BLOCK_THREADS` threads a block, or for the strip entries fewer where that
//! spreads a small layer over more SMs; the tile entries a 3-D block over channels, columns and
//! rows with shared memory, persistent blocks (`tile_shape`). Cost: the larger of moving input,
//! filter and output once through device memory and issuing the instructions, plus the launch.

use convrs_spec::depthwise::{
    nchw_items, nchw_strip_items, nchw_strip_row_stores, nchw_strip_row_vectors, nhwc_items, strip_items, tile_count, tile_smem_bytes, tile_span, Entry, StripEntry, TileShape, BLOCK_THREADS, ENTRIES, NCHW_STRIP_ENTRIES, NHWC_VEC,
    STRIP_ENTRIES, TAPS, TILE_ENTRIES, TILE_MIN_BLOCKS, TILE_THREADS,
};

use crate::dtype::DType;
use crate::plan::model::{cycles_us, memory_us, LAUNCH_US};
use crate::plan::{div_ceil_u32, DeviceModel, Family, KernelDesc, LaunchPlan};
use crate::{Algorithm, Conv2d, Error, Layout, Precision, Result};

/// The fraction of the peak memory bandwidth a streaming kernel reaches (a lead from the
/// transforms' copies; to be fitted to the depthwise measurements).
const BANDWIDTH_FRACTION: f64 = 0.75;

/// SM issue slots per output element and tap, fitted to the H100 fp16 measurements of the
/// large (batch 32) mobilenet depthwise layers, where the kernels are issue-bound rather than
/// memory-bound (BENCHMARKS.md, 2026-11-25: 20-28 for the NCHW entries; the scalar NHWC entry is
/// taken to cost what the NCHW one does).
const INSTRUCTIONS_PER_TAP: f64 = 24.0;
/// The NHWC vector entries (which share the address and the filter load over `NHWC_VEC`
/// channels): issue slots per output, a fixed part and a part per tap, the taps twice as dear
/// where there is no register window (horizontal stride or dilation above 1); and the threads an
/// SM needs resident to hide the loads. Refitted (2026-11-28) to the same 28 layers on the H100
/// (bundle 6748ce4) and the H200 (bundle 641df63), 56 times within rms log error 0.11 (the
/// earlier 11 a tap, 512 threads: 0.32), after the register window (60a3d04) had made the
/// 7x7 layers 1.2x faster than the first fit saw: the kernel takes the same time on both
/// machines, so it is issue-bound there, not bandwidth-bound.
const VEC_INSTRUCTIONS_PER_OUTPUT: f64 = 24.0;
const VEC_INSTRUCTIONS_PER_TAP_WINDOW: f64 = 7.0;
const VEC_INSTRUCTIONS_PER_TAP: f64 = 14.0;
const VEC_LATENCY_THREADS_PER_SM: f64 = 256.0;

/// The NCHW entries of a compiled filter size, which at unit vertical stride and dilation load
/// each filter column's input values once into registers: issue slots per output, a fixed part
/// (the work item, the border test, both copies of the loop in most warps, the store) and a part
/// per tap. Refitted to the H100 fp16 measurements of 2026-11-27 (bundle b60e128:
/// 32,144,56,56 3x3 91.7 us, 32,96,56,56 7x7 161 us), where [`INSTRUCTIONS_PER_TAP`] priced the
/// 7x7 layers at twice their time.
const NCHW_INSTRUCTIONS_PER_OUTPUT: f64 = 140.0;
const NCHW_INSTRUCTIONS_PER_UNROLLED_TAP: f64 = 8.5;
/// [`LATENCY_THREADS_PER_SM`] for those NCHW entries: a thread has its column's loads (18 to
/// 70) in flight at once. Fitted as the two above, to the batch-1 layers (2.9-3.3 us on 14x14
/// and 7x7 planes, where 512 priced them at 4.5).
const NCHW_LATENCY_THREADS_PER_SM: f64 = 128.0;

/// Threads an SM needs resident to hide the loads' latency: below this, the issue rate falls
/// in proportion (the batch-1 layers, a fraction of a wave).
const LATENCY_THREADS_PER_SM: f64 = 512.0;

/// Thread instructions an SM issues per cycle (4 schedulers, a warp each).
const ISSUE_PER_SM_CYCLE: f64 = 128.0;

/// `dtype` as the entry tables name it: the kernels' Rust type names.
fn entry_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
    }
}

fn entry(nhwc: bool, dtype: DType, taps: u32, vec: u32) -> Option<&'static Entry> {
    let t = entry_type(dtype);
    ENTRIES.iter().find(|e| e.nhwc == nhwc && e.dtype == t && e.taps == taps && e.vec == vec)
}

/// The launch, plus the larger of moving `bytes` through device memory (at
/// [`BANDWIDTH_FRACTION`] of the peak) and issuing `issue_cycles` of instructions.
fn predicted_us(device: &DeviceModel, bytes: f64, issue_cycles: f64) -> f64 {
    LAUNCH_US + (memory_us(device, bytes) / BANDWIDTH_FRACTION).max(cycles_us(device, issue_cycles))
}

/// The compiled filter size for `p`: R = S among [`TAPS`], else 0 (any).
fn taps(p: &Conv2d) -> u32 {
    TAPS.into_iter().find(|&t| p.r == t as usize && p.s == t as usize).unwrap_or(0)
}

fn plan(desc: &KernelDesc, p: &Conv2d, dtype: DType, device: &DeviceModel, nhwc: bool) -> Result<LaunchPlan> {
    p.validate()?;
    let (out_p, out_q) = p.output_hw();
    let u = |v: usize| v as u64;
    // The vector entries take multiplier 1 and whole vectors of channels; the scalar one the rest.
    let vec = if nhwc && p.k == p.c && p.c % NHWC_VEC as usize == 0 { NHWC_VEC } else { 1 };
    let (e, items) = if nhwc {
        let taps = if vec == 1 { 0 } else { taps(p) };
        (entry(true, dtype, taps, vec), nhwc_items(u(p.n), u(out_p), u(out_q), u(p.k), vec as u64))
    } else {
        (entry(false, dtype, taps(p), 1), nchw_items(u(p.n), u(p.k), u(out_p), u(out_q)))
    };
    let e = e.ok_or_else(|| Error::Unsupported { algorithm: desc.name, reason: format!("no entry for {dtype} data") })?;
    let elem = dtype.size() as f64;
    let bytes = p.tensor_elements() as f64 * elem;
    let taps = (p.r * p.s) as f64;
    // The NHWC vector entries keep a filter row's input pixels in a register window at unit
    // horizontal stride and dilation (nhwc.rs).
    let window = p.stride.1 == 1 && p.dilation.1 == 1;
    let per_output = match (nhwc, vec, e.taps) {
        (false, _, 1..) => NCHW_INSTRUCTIONS_PER_OUTPUT + NCHW_INSTRUCTIONS_PER_UNROLLED_TAP * taps,
        (true, 2.., _) => VEC_INSTRUCTIONS_PER_OUTPUT + if window { VEC_INSTRUCTIONS_PER_TAP_WINDOW } else { VEC_INSTRUCTIONS_PER_TAP } * taps,
        _ => INSTRUCTIONS_PER_TAP * taps,
    };
    let sms = device.sms.max(1) as f64;
    let latency_threads = match (nhwc, vec) {
        (true, 2..) => VEC_LATENCY_THREADS_PER_SM,
        (true, _) => LATENCY_THREADS_PER_SM,
        (false, _) => NCHW_LATENCY_THREADS_PER_SM,
    };
    let occupancy = (items as f64 / (sms * latency_threads)).min(1.0);
    let issue = p.output_len() as f64 * per_output / (sms * ISSUE_PER_SM_CYCLE * occupancy.max(1e-3));
    Ok(LaunchPlan::new(e.name, (div_ceil_u32(items as usize, BLOCK_THREADS as usize), 1, 1), (BLOCK_THREADS, 1, 1), 0, dtype, predicted_us(device, bytes, issue)))
}

/// Issue slots the strip entries reach, as a fraction of the SMs' peak: the 3x3 entries, whose
/// rows are unrolled (every load in flight at once), and the 5x5 and 7x7 ones, whose threads
/// loop over the rows and wait on each row's loads. Fitted to the H100 fp16 measurements of
/// the mobilenet depthwise layers (BENCHMARKS.md, 2026-11-27, bundle 11d3afa: 32,96,56,56 7x7
/// 77 us, 32,144,56,56 3x3 31 us), see `strip_predictions_track_the_h100_measurements`.
const STRIP_ISSUE_EFFICIENCY_UNROLLED: f64 = 0.7;
/// The NHWC 3x3 entries, refitted (2026-11-28) to the 12 stride-1 3x3 layers of the suite on
/// the H100 (bundle 6748ce4) and the H200 (bundle 641df63), 24 times within rms log error 0.14:
/// their efficiency, the instructions a thread spends beyond [`strip_thread_instructions`], and
/// the threads an SM needs resident. The large layers take the same ~30 us on both machines, so
/// they are issue-bound, which 0.7 and the H100's bandwidth had hidden (the H200's predicted
/// 17 us for 30).
const NHWC_STRIP_UNROLLED_EFFICIENCY: f64 = 0.43;
const NHWC_STRIP_UNROLLED_OVERHEAD: f64 = 380.0;
const NHWC_STRIP_UNROLLED_LATENCY_THREADS_PER_SM: f64 = 128.0;
const STRIP_ISSUE_EFFICIENCY_LOOPED: f64 = 0.3;
/// The looped entries' efficiency on NCHW data, one channel a thread (fitted to the H100 fp16
/// 7x7 layers of 2026-11-27, bundle b60e128: 32,96,56,56 55.7 us, 1,96,56,56 7.1 us).
const NCHW_STRIP_ISSUE_EFFICIENCY_LOOPED: f64 = 0.4;
/// [`LATENCY_THREADS_PER_SM`] for the strip entries: a thread has a row's loads (4 to 10 pixels,
/// and filter taps) in flight at once, so fewer hide the latency. Fitted as the efficiencies.
const STRIP_LATENCY_THREADS_PER_SM: f64 = 384.0;
/// Instructions a strip thread spends beside its loop: the work item's divisions, the window
/// test, the output addresses.
const STRIP_OVERHEAD: f64 = 40.0;
/// The fraction of the peak memory bandwidth the NCHW strip entries reach where they read rows
/// as vectors and store them so (W, Q multiples of 4, the padding TAPS / 2), and the traffic
/// their element-wise accesses make elsewhere, in multiples of the bytes moved: lanes 4 outputs
/// apart touch a 32-byte sector for every 4 to 8 bytes (ncu, H100: L2-bound). Fitted to the H100
/// fp16 measurements of 2026-11-27 (bundle b60e128): 1.55-1.75 TB/s on the large vector
/// layers, 0.35-0.5 TB/s on the 14x14 and 7x7 planes.
const NCHW_STRIP_BANDWIDTH_FRACTION: f64 = 0.5;
const NCHW_STRIP_ELEMENTWISE_TRAFFIC: f64 = 3.5;
/// Instructions an element-wise load of the NCHW strip adds to [`strip_thread_instructions`]:
/// its address and its test against the plane (fitted with the above: the 7x7 layers on 14x14
/// and 7x7 planes, 29.0 and 20.3 us).
const NCHW_STRIP_ELEMENTWISE_LOAD: f64 = 3.0;

/// The strip entry for `p` on the layout's table, or why there is none (see
/// `convrs_spec::depthwise_strip_entries!` and `depthwise_nchw_strip_entries!`): the NHWC
/// entries take multiplier 1, C a multiple of [`NHWC_VEC`] and stride 1, the NCHW ones any
/// multiplier and stride 1 or 2.
fn strip_entry(p: &Conv2d, dtype: DType, nhwc: bool) -> std::result::Result<&'static StripEntry, String> {
    let step1 = if nhwc { "depthwise_nhwc" } else { "depthwise_nchw" };
    if nhwc && (p.k != p.c || p.c % NHWC_VEC as usize != 0) {
        return Err(format!("it takes multiplier 1 (K = C) with C a multiple of {NHWC_VEC} (here C = {}, K = {}); {step1} takes the rest", p.c, p.k));
    }
    if p.dilation != (1, 1) {
        return Err(format!("it takes dilation 1 (here {:?}); {step1} takes the rest", p.dilation));
    }
    let t = entry_type(dtype);
    let table: &'static [StripEntry] = if nhwc { &STRIP_ENTRIES } else { &NCHW_STRIP_ENTRIES };
    table.iter().find(|e| e.dtype == t && p.r == e.taps as usize && p.s == e.taps as usize && p.stride == (e.stride as usize, e.stride as usize)).ok_or_else(|| {
        let strides = if nhwc { "stride 1" } else { "stride 1 or 2" };
        format!("it is compiled for square 3x3, 5x5 and 7x7 filters at {strides} (here {}x{} at stride {:?}); {step1} takes the rest", p.r, p.s, p.stride)
    })
}

/// Threads a block of `items` strip threads: 256, halved (to 64 at least) while the blocks would
/// not fill every SM twice, so a batch-1 layer spreads over the SMs.
fn strip_block(items: u64, device: &DeviceModel) -> u32 {
    let mut threads = BLOCK_THREADS;
    while threads > 64 && items.div_ceil(threads as u64) < 2 * device.sms.max(1) as u64 {
        threads /= 2;
    }
    threads
}

/// Thread instructions one strip thread of `vec` channels issues: its FMAs, each input pixel and
/// filter tap loaded once and (16-bit data) widened element by element, the stores, and
/// [`STRIP_OVERHEAD`].
fn strip_thread_instructions(e: &StripEntry, dtype: DType, vec: u32) -> f64 {
    let vec = vec as f64;
    let widen = if dtype == DType::F32 { 0.0 } else { vec };
    let fmas = (e.rows * e.cols * e.taps * e.taps) as f64 * vec;
    let loads = (e.span_y() * e.span_x() + e.taps * e.taps) as f64;
    let stores = (e.rows * e.cols) as f64 * (1.0 + widen / 2.0);
    fmas + loads * (1.0 + widen) + stores + STRIP_OVERHEAD
}

fn plan_strip(desc: &KernelDesc, p: &Conv2d, dtype: DType, device: &DeviceModel, nhwc: bool) -> Result<LaunchPlan> {
    p.validate()?;
    let e = strip_entry(p, dtype, nhwc).map_err(|reason| Error::Unsupported { algorithm: desc.name, reason })?;
    let (out_p, out_q) = p.output_hw();
    let u = |v: usize| v as u64;
    let (rows, cols) = (e.rows as u64, e.cols as u64);
    let (items, vec) = if nhwc { (strip_items(u(p.n), u(out_p), u(out_q), u(p.k), rows, cols), NHWC_VEC) } else { (nchw_strip_items(u(p.n), u(p.k), u(out_p), u(out_q), rows, cols), 1) };
    let threads = strip_block(items, device);
    let bytes = p.tensor_elements() as f64 * dtype.size() as f64;
    let sms = device.sms.max(1) as f64;
    let unrolled_nhwc = e.taps == 3 && nhwc;
    let latency_threads = if unrolled_nhwc { NHWC_STRIP_UNROLLED_LATENCY_THREADS_PER_SM } else { STRIP_LATENCY_THREADS_PER_SM };
    let occupancy = (items as f64 / (sms * latency_threads)).min(1.0);
    let efficiency = match (e.taps, nhwc) {
        (3, true) => NHWC_STRIP_UNROLLED_EFFICIENCY,
        (3, false) => STRIP_ISSUE_EFFICIENCY_UNROLLED,
        (_, true) => STRIP_ISSUE_EFFICIENCY_LOOPED,
        (_, false) => NCHW_STRIP_ISSUE_EFFICIENCY_LOOPED,
    };
    let overhead = if unrolled_nhwc { NHWC_STRIP_UNROLLED_OVERHEAD } else { 0.0 };
    // The NCHW kernel's own test (nchw_strip.rs): rows read as vectors, or element by element,
    // each load with its address and its test against the plane.
    let row_vectors = nchw_strip_row_vectors(p.w as i32, p.pad.1 as i32, e.taps as i32, e.cols as i32);
    let elementwise = if nhwc || row_vectors { 0.0 } else { NCHW_STRIP_ELEMENTWISE_LOAD * (e.span_y() * e.span_x()) as f64 };
    let issue = items as f64 * (strip_thread_instructions(e, dtype, vec) + elementwise + overhead) / (sms * ISSUE_PER_SM_CYCLE * efficiency * occupancy.max(1e-3));
    let predicted = if nhwc {
        predicted_us(device, bytes, issue)
    } else {
        // And the rows of outputs stored as vectors, or element by element.
        let traffic = |vectors: bool| if vectors { 1.0 } else { NCHW_STRIP_ELEMENTWISE_TRAFFIC };
        let elem = dtype.size() as f64;
        let input = (p.input_len() + p.filter_len()) as f64 * elem * traffic(row_vectors);
        let output = p.output_len() as f64 * elem * traffic(nchw_strip_row_stores(out_q as i32, e.cols as i32));
        LAUNCH_US + (memory_us(device, input + output) / NCHW_STRIP_BANDWIDTH_FRACTION).max(cycles_us(device, issue))
    };
    Ok(LaunchPlan::new(e.name, (div_ceil_u32(items as usize, threads as usize), 1, 1), (threads, 1, 1), 0, dtype, predicted))
}

/// The tile entries' cost, fitted to the H200 fp16 measurements of the mobilenet depthwise
/// layers (BENCHMARKS.md, 2026-11-28, bundle c236cd6; rms log error 0.13 over the 28 layers): the
/// fraction of the peak bandwidth the staged tiles (halos included) and the output move at;
/// instructions a thread spends a tile beyond [`strip_thread_instructions`] (the copies, the
/// barriers, the tile's place); the fraction of an SM's 4 warp instructions a cycle the threads
/// issue at; and what one resident warp issues a cycle, which bounds an SM holding few warps (a
/// batch-1 layer is a wave or less of tiles, a block an SM). That last fits the times of the
/// blocks the model chooses better at 0.2 (bundle 641df63, rms 0.18 -> 0.13), but 0.2 chose
/// worse: 1,96,56,56 7x7 took 8.4 us on its block against 7.4 on 0.32's, and two other
/// batch-1 layers' new blocks gained nothing (H200, BENCHMARKS.md thirty-third session), so
/// the choice keeps 0.32.
const TILE_BANDWIDTH_FRACTION: f64 = 0.7;
const TILE_OVERHEAD: f64 = 50.0;
const TILE_ISSUE_EFFICIENCY: f64 = 0.34;
const TILE_WARP_ISSUE: f64 = 0.32;

/// The tile entry for `p` (see `convrs_spec::depthwise_tile_entries!`), or why there is none:
/// multiplier 1, whole 16-byte chunks of channels, dilation 1, square 3x3, 5x5 or 7x7 filters at
/// stride 1 or 2.
fn tile_entry(p: &Conv2d, dtype: DType) -> std::result::Result<&'static StripEntry, String> {
    let chunk = 16 / dtype.size();
    if p.k != p.c || p.c % chunk != 0 {
        return Err(format!("it takes multiplier 1 (K = C) with C a multiple of {chunk} for {dtype} data, whole 16-byte chunks (here C = {}, K = {}); depthwise_nhwc takes the rest", p.c, p.k));
    }
    if p.dilation != (1, 1) {
        return Err(format!("it takes dilation 1 (here {:?}); depthwise_nhwc takes the rest", p.dilation));
    }
    let t = entry_type(dtype);
    TILE_ENTRIES
        .iter()
        .find(|e| e.dtype == t && p.r == e.taps as usize && p.s == e.taps as usize && p.stride == (e.stride as usize, e.stride as usize))
        .ok_or_else(|| format!("it is compiled for square 3x3, 5x5 and 7x7 filters at stride 1 or 2 (here {}x{} at stride {:?}); depthwise_nhwc takes the rest", p.r, p.s, p.stride))
}

/// A tile launch: its block, shared memory, tiles, resident blocks an SM and predicted time.
#[derive(Clone, Copy, Debug)]
struct TileLaunch {
    shape: TileShape,
    /// The input pixels one tile stages (its span, rows x columns).
    pixels: u32,
    smem: u32,
    tiles: u64,
    resident: u64,
    predicted_us: f64,
}

/// The launch of `e` on `p` with block `shape`, or `None` where its two stages would not fit an
/// SM's shared memory twice. Cost: the staged tiles (their halos included) and the output through
/// device memory, or the SMs holding tiles issuing the threads' instructions (whole warps, so a
/// thread past the plane or C costs what one inside does), whichever takes longer.
fn tile_launch(e: &StripEntry, p: &Conv2d, shape: TileShape, dtype: DType, device: &DeviceModel) -> Option<TileLaunch> {
    let elem = dtype.size() as u32;
    let smem = tile_smem_bytes(shape, e.taps, e.stride, e.rows, e.cols, elem);
    if shape.threads() > TILE_THREADS || TILE_MIN_BLOCKS * (smem + 1024) > device.smem_per_sm {
        return None;
    }
    let (out_p, out_q) = p.output_hw();
    let u = |v: usize| v as u64;
    let tiles = tile_count(shape, u(p.n), u(p.c), u(out_p), u(out_q), e.rows as u64, e.cols as u64);
    // Resident blocks an SM: the registers hold TILE_MIN_BLOCKS * TILE_THREADS threads (the
    // entries' launch bounds cap them at that), in whole warps; the shared memory what it holds
    // (1 KiB a block reserved by the driver).
    let by_regs = TILE_MIN_BLOCKS * TILE_THREADS / shape.threads().next_multiple_of(32);
    let resident = (device.smem_per_sm / (smem + 1024)).clamp(1, by_regs) as u64;
    let sms = device.sms.max(1) as u64;
    let pixels = tile_span(shape.rows, e.rows, e.stride, e.taps) * tile_span(shape.cols, e.cols, e.stride, e.taps);
    let stage_bytes = (pixels * shape.groups * NHWC_VEC * elem) as f64;
    let bytes = tiles as f64 * stage_bytes + (p.output_len() + p.filter_len()) as f64 * elem as f64;
    let warps = shape.threads().div_ceil(32) as f64;
    let busy = tiles.min(sms);
    let warps_an_sm = (resident.min(tiles.div_ceil(busy)) as f64) * warps;
    let per_sm = tiles as f64 * warps * (strip_thread_instructions(e, dtype, NHWC_VEC) + TILE_OVERHEAD) / busy as f64;
    let issue = per_sm / (ISSUE_PER_SM_CYCLE / 32.0 * TILE_ISSUE_EFFICIENCY).min(warps_an_sm * TILE_WARP_ISSUE);
    let predicted_us = LAUNCH_US + (memory_us(device, bytes) / TILE_BANDWIDTH_FRACTION).max(cycles_us(device, issue));
    Some(TileLaunch { shape, pixels, smem, tiles, resident, predicted_us })
}

/// The block of a tile launch on `p`: of every block of at most [`TILE_THREADS`] threads whose
/// two stages fit an SM's shared memory twice, the one [`tile_launch`] predicts fastest (ties: the
/// fewer input pixels staged per output). That prices what a block computes outside P x Q x C (a
/// thread computes its whole block, stored or not: a 16 x 16 tile on a 56 x 56 plane computes
/// 1.31x the outputs), its halo, and how many SMs its tiles keep busy (a batch-1 layer in a few
/// large tiles leaves most idle). Channel groups are powers of two from 64-byte pixels (8 groups
/// of 16-bit data, 4 of fp32) to 256-byte ones, no more than the channels fill.
fn tile_shape(e: &StripEntry, p: &Conv2d, dtype: DType, device: &DeviceModel) -> Option<TileLaunch> {
    let (out_p, out_q) = p.output_hw();
    let per_group = NHWC_VEC as usize * dtype.size();
    let groups_min = 64 / per_group;
    let groups_max = p.c.div_ceil(NHWC_VEC as usize).next_power_of_two().clamp(groups_min, 256 / per_group);
    let (col_groups, strips) = (out_q.div_ceil(e.cols as usize), out_p.div_ceil(e.rows as usize));
    let mut best: Option<(f64, f64, TileLaunch)> = None;
    let mut groups = groups_min;
    while groups <= groups_max {
        for cols in 1..=col_groups.min(16) {
            for rows in 1..=strips.min(32) {
                let shape = TileShape { groups: groups as u32, cols: cols as u32, rows: rows as u32 };
                let Some(launch) = tile_launch(e, p, shape, dtype, device) else { continue };
                let halo = launch.pixels as f64 / (rows * cols * (e.rows * e.cols) as usize) as f64;
                let key = ((launch.predicted_us * 100.0).round(), halo);
                if best.is_none_or(|b| key < (b.0, b.1)) {
                    best = Some((key.0, key.1, launch));
                }
            }
        }
        groups *= 2;
    }
    best.map(|b| b.2)
}

fn plan_tile(desc: &KernelDesc, p: &Conv2d, dtype: DType, device: &DeviceModel) -> Result<LaunchPlan> {
    p.validate()?;
    let e = tile_entry(p, dtype).map_err(|reason| Error::Unsupported { algorithm: desc.name, reason })?;
    let launch = tile_shape(e, p, dtype, device).ok_or_else(|| Error::Unsupported { algorithm: desc.name, reason: format!("no tile's two stages fit twice in the {} bytes of shared memory an SM has", device.smem_per_sm) })?;
    let blocks = launch.tiles.min(device.sms.max(1) as u64 * tile_resident_override()?.unwrap_or(launch.resident)).max(1);
    let s = launch.shape;
    Ok(LaunchPlan::new(e.name, (blocks as u32, 1, 1), (s.groups, s.cols, s.rows), launch.smem, dtype, launch.predicted_us))
}

/// A developer's override of the tile launch's persistent blocks an SM, for measuring what the
/// model chooses: `CONVRS_DW_TILE_RESIDENT=B` launches B blocks an SM (at most one a tile; a large
/// B gives every tile its own block). Unset in normal use.
fn tile_resident_override() -> Result<Option<u64>> {
    let Some(text) = crate::plan::hopper::dev_override("CONVRS_DW_TILE_RESIDENT") else { return Ok(None) };
    match text.trim().parse::<u64>() {
        Ok(b) if b >= 1 => Ok(Some(b)),
        _ => Err(Error::InvalidArgument(format!("CONVRS_DW_TILE_RESIDENT=`{text}`: expected blocks an SM, at least 1"))),
    }
}

/// The tile entries' description (step 3 of `depthwise_nhwc`, the same layouts).
pub const TILE: KernelDesc = KernelDesc {
    algorithm: Algorithm::DepthwiseNhwcTile,
    name: "depthwise_nhwc_tile",
    family: Family::Depthwise,
    summary: "family 4: depthwise on NHWC (RSK filter), an input tile staged in shared memory by cp.async a block (two stages, persistent), a block of outputs a thread; multiplier 1, C in 16-byte chunks, 3x3/5x5/7x7 at stride 1 or 2",
    dtypes: &[DType::F32, DType::F16, DType::BF16],
    layouts: (Layout::Nhwc, Layout::Hwcn, Layout::Nhwc),
    multiples: (1, 1, 1),
    precision: Precision::Fma,
    planner: |k, p, t, d| plan_tile(k, p, t, d),
};

/// The NCHW entry's description.
pub const NCHW: KernelDesc = KernelDesc {
    algorithm: Algorithm::DepthwiseNchw,
    name: "depthwise_nchw",
    family: Family::Depthwise,
    summary: "family 4: depthwise (groups = C) on NCHW, a thread per column of output rows, memory-bound",
    dtypes: &[DType::F32, DType::F16, DType::BF16],
    layouts: (Layout::Nchw, Layout::Nchw, Layout::Nchw),
    multiples: (1, 1, 1),
    precision: Precision::Fma,
    planner: |k, p, t, d| plan(k, p, t, d, false),
};

/// The NHWC entry's description: the filter taps outer, channels contiguous (RSK).
pub const NHWC: KernelDesc = KernelDesc {
    algorithm: Algorithm::DepthwiseNhwc,
    name: "depthwise_nhwc",
    family: Family::Depthwise,
    summary: "family 4: depthwise (groups = C) on NHWC with an RSK filter, vectors of channels per thread, memory-bound",
    dtypes: &[DType::F32, DType::F16, DType::BF16],
    layouts: (Layout::Nhwc, Layout::Hwcn, Layout::Nhwc),
    multiples: (1, 1, 1),
    precision: Precision::Fma,
    planner: |k, p, t, d| plan(k, p, t, d, true),
};

/// The strip entries' description (step 2 of `depthwise_nhwc`, the same layouts).
pub const STRIP: KernelDesc = KernelDesc {
    algorithm: Algorithm::DepthwiseNhwcStrip,
    name: "depthwise_nhwc_strip",
    family: Family::Depthwise,
    summary: "family 4: depthwise on NHWC (RSK filter), a block of output rows and columns per thread, each input row loaded once; multiplier 1, C a multiple of 4, 3x3/5x5/7x7 at stride 1",
    dtypes: &[DType::F32, DType::F16, DType::BF16],
    layouts: (Layout::Nhwc, Layout::Hwcn, Layout::Nhwc),
    multiples: (1, 1, 1),
    precision: Precision::Fma,
    planner: |k, p, t, d| plan_strip(k, p, t, d, true),
};

/// The NCHW strip entries' description (step 2 of `depthwise_nchw`, the same layouts).
pub const NCHW_STRIP: KernelDesc = KernelDesc {
    algorithm: Algorithm::DepthwiseNchwStrip,
    name: "depthwise_nchw_strip",
    family: Family::Depthwise,
    summary: "family 4: depthwise on NCHW, a block of output rows and columns of a plane per thread, each input row loaded once; 3x3/5x5/7x7 at stride 1 or 2",
    dtypes: &[DType::F32, DType::F16, DType::BF16],
    layouts: (Layout::Nchw, Layout::Nchw, Layout::Nchw),
    multiples: (1, 1, 1),
    precision: Precision::Fma,
    planner: |k, p, t, d| plan_strip(k, p, t, d, false),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::tests::h100;

    fn dw(n: usize, c: usize, hw: usize, m: usize, r: usize, stride: usize) -> Conv2d {
        Conv2d::new(n, c, hw, hw, m * c, r, r).with_pad(r / 2).with_stride(stride).with_groups(c)
    }

    #[test]
    fn entries_follow_the_filter_size_and_the_channels() {
        let d = h100();
        let name = |k: &KernelDesc, p: Conv2d, t: DType| k.plan(&p, t, &d).unwrap().kernel;
        assert_eq!(name(&NCHW, dw(2, 32, 56, 1, 3, 1), DType::F16), "depthwise_nchw_f16_r3");
        assert_eq!(name(&NCHW, dw(2, 32, 56, 1, 7, 1), DType::BF16), "depthwise_nchw_bf16_r7");
        assert_eq!(name(&NCHW, Conv2d { s: 5, ..dw(2, 32, 56, 1, 3, 1) }, DType::F32), "depthwise_nchw_f32_any");
        assert_eq!(name(&NHWC, dw(2, 32, 56, 1, 5, 2), DType::F16), "depthwise_nhwc_f16_r5");
        assert_eq!(name(&NHWC, dw(2, 32, 56, 1, 9, 1), DType::F32), "depthwise_nhwc_f32_rx");
        // Multiplier 2, or C not a multiple of 4: the scalar entry.
        assert_eq!(name(&NHWC, dw(2, 32, 56, 2, 3, 1), DType::F16), "depthwise_nhwc_f16_any");
        assert_eq!(name(&NHWC, dw(2, 30, 56, 1, 3, 1), DType::F16), "depthwise_nhwc_f16_any");
    }

    #[test]
    fn the_grid_covers_every_work_item() {
        let d = h100();
        let p = dw(3, 36, 17, 1, 3, 2); // P = Q = 9
        let plan = NCHW.plan(&p, DType::F32, &d).unwrap();
        // 3 * 36 planes x ceil(9 / 4) = 3 row groups x 9 columns = 2916 items: 12 blocks of 256.
        assert_eq!((plan.grid, plan.block), ((12, 1, 1), (256, 1, 1)));
        let plan = NHWC.plan(&p, DType::F16, &d).unwrap();
        // 3 * 9 rows x ceil(9 / 2) = 5 column groups x 36 / 4 channel groups = 1215 items: 5 blocks.
        assert_eq!(plan.grid, (5, 1, 1));
    }

    #[test]
    fn dense_and_grouped_problems_are_refused_with_the_reason() {
        let d = h100();
        let dense = Conv2d::new(2, 32, 9, 9, 32, 3, 3).with_pad(1);
        assert!(NCHW.plan(&dense, DType::F16, &d).unwrap_err().to_string().contains("depthwise"));
        assert!(NHWC.plan(&dense.with_groups(8), DType::F16, &d).unwrap_err().to_string().contains("8 group"));
        // And a dense kernel refuses a depthwise problem, naming where it runs.
        let e = crate::registry::by_name("wmma_nhwc").unwrap().plan(&dense.with_groups(32), DType::F16, &d).unwrap_err().to_string();
        assert!(e.contains("depthwise kernels"), "{e}");
    }

    #[test]
    fn strip_entries_follow_size_stride_and_type_and_refuse_the_rest_with_the_reason() {
        let d = h100();
        let name = |p: Conv2d, t: DType| STRIP.plan(&p, t, &d).map(|l| l.kernel).map_err(|e| e.to_string());
        assert_eq!(name(dw(2, 32, 56, 1, 3, 1), DType::F16), Ok("depthwise_strip_f16_r3_s1"));
        assert_eq!(name(dw(2, 32, 56, 1, 7, 1), DType::BF16), Ok("depthwise_strip_bf16_r7_s1"));
        assert_eq!(name(dw(2, 32, 56, 1, 5, 1), DType::F32), Ok("depthwise_strip_f32_r5_s1"));
        for (p, why) in [
            (dw(2, 32, 56, 2, 3, 1), "multiplier 1"),
            (dw(2, 30, 56, 1, 3, 1), "multiplier 1"),
            (dw(2, 32, 56, 1, 3, 1).with_dilation(2).with_pad(2), "dilation 1"),
            (dw(2, 32, 56, 1, 9, 1), "3x3, 5x5 and 7x7"),
            (dw(2, 32, 56, 1, 3, 2), "at stride 1"),
            (Conv2d { s: 5, ..dw(2, 32, 56, 1, 3, 1) }, "square"),
        ] {
            let e = name(p, DType::F16).unwrap_err();
            assert!(e.contains(why) && e.contains("depthwise_nhwc"), "{p}: {e}");
        }
    }

    #[test]
    fn nchw_strip_entries_follow_size_stride_and_type_and_refuse_the_rest_with_the_reason() {
        let d = h100();
        let name = |p: Conv2d, t: DType| NCHW_STRIP.plan(&p, t, &d).map(|l| l.kernel).map_err(|e| e.to_string());
        assert_eq!(name(dw(2, 32, 56, 1, 3, 1), DType::F16), Ok("depthwise_nchw_strip_f16_r3_s1"));
        assert_eq!(name(dw(2, 32, 56, 1, 3, 2), DType::F16), Ok("depthwise_nchw_strip_f16_r3_s2"));
        // Any multiplier and any C.
        assert_eq!(name(dw(2, 32, 56, 2, 7, 2), DType::BF16), Ok("depthwise_nchw_strip_bf16_r7_s2"));
        assert_eq!(name(dw(2, 30, 56, 1, 5, 1), DType::F32), Ok("depthwise_nchw_strip_f32_r5_s1"));
        for (p, why) in [
            (dw(2, 32, 56, 1, 3, 1).with_dilation(2).with_pad(2), "dilation 1"),
            (dw(2, 32, 56, 1, 9, 1), "3x3, 5x5 and 7x7"),
            (dw(2, 32, 56, 1, 3, 3), "stride 1 or 2"),
            (Conv2d { s: 5, ..dw(2, 32, 56, 1, 3, 1) }, "square"),
        ] {
            let e = name(p, DType::F16).unwrap_err();
            assert!(e.contains(why) && e.contains("depthwise_nchw takes"), "{p}: {e}");
        }
        // 3 * 36 planes x ceil(9 / 2) = 5 strips x ceil(9 / 4) = 3 column groups = 1620 threads at
        // stride 2: 64 a block, 26 blocks (still under two an SM).
        let plan = NCHW_STRIP.plan(&dw(3, 36, 17, 1, 3, 2), DType::F32, &d).unwrap();
        assert_eq!((plan.grid, plan.block), ((26, 1, 1), (64, 1, 1)));
    }

    #[test]
    fn tile_entries_follow_size_stride_and_type_and_refuse_the_rest_with_the_reason() {
        let d = h100();
        let name = |p: Conv2d, t: DType| TILE.plan(&p, t, &d).map(|l| l.kernel).map_err(|e| e.to_string());
        assert_eq!(name(dw(2, 32, 56, 1, 3, 1), DType::F16), Ok("depthwise_tile_f16_r3_s1"));
        assert_eq!(name(dw(2, 32, 56, 1, 3, 2), DType::BF16), Ok("depthwise_tile_bf16_r3_s2"));
        assert_eq!(name(dw(2, 36, 56, 1, 7, 2), DType::F32), Ok("depthwise_tile_f32_r7_s2"));
        for (p, t, why) in [
            (dw(2, 32, 56, 2, 3, 1), DType::F16, "multiplier 1"),
            (dw(2, 36, 56, 1, 3, 1), DType::F16, "a multiple of 8"),
            (dw(2, 30, 56, 1, 3, 1), DType::F32, "a multiple of 4"),
            (dw(2, 32, 56, 1, 3, 1).with_dilation(2).with_pad(2), DType::F16, "dilation 1"),
            (dw(2, 32, 56, 1, 9, 1), DType::F16, "3x3, 5x5 and 7x7"),
            (dw(2, 32, 56, 1, 3, 3), DType::F16, "stride 1 or 2"),
            (Conv2d { s: 5, ..dw(2, 32, 56, 1, 3, 1) }, DType::F16, "square"),
        ] {
            let e = name(p, t).unwrap_err();
            assert!(e.contains(why) && e.contains("depthwise_nhwc takes"), "{p}: {e}");
        }
    }

    #[test]
    fn tile_blocks_fit_the_plane_and_the_shared_memory() {
        let d = h100();
        // 32,144,56,56 3x3 fp16: 8 groups (32 channels) x 4 column groups x 7 strips of 4 x 2
        // outputs, 8 x 28 outputs: 7 x 2 tiles cover the plane exactly (a 16 x 16 tile would
        // compute 1.31x its outputs). 30 x 10 input pixels of 64 bytes, two stages; two blocks
        // an SM, persistent.
        let plan = TILE.plan(&dw(32, 144, 56, 1, 3, 1), DType::F16, &d).unwrap();
        assert_eq!((plan.block, plan.shared_bytes), ((8, 4, 7), 2 * 300 * 64));
        assert_eq!(plan.grid, (2 * 132, 1, 1));
        // 7x7 planes: 4 column groups of 2 and 2 strips of 4 cover them (8 x 8 outputs).
        let (x, y, z) = TILE.plan(&dw(32, 960, 7, 1, 3, 1), DType::F16, &d).unwrap().block;
        assert_eq!((y * 2, z * 4), (8, 8), "{x}");
        // fp32: 4 groups of 4 channels make the 64-byte pixel.
        assert_eq!(TILE.plan(&dw(32, 144, 56, 1, 3, 1), DType::F32, &d).unwrap().block.0, 4);
        // A batch-1 layer: smaller blocks, so that its tiles keep every SM busy (one block a
        // tile): 5 channel blocks of 32 x the plane's tiles.
        let plan = TILE.plan(&dw(1, 144, 56, 1, 3, 2), DType::F16, &d).unwrap();
        let (x, y, z) = plan.block;
        assert_eq!(x, 8);
        assert_eq!(plan.grid.0 as usize, 5 * 28usize.div_ceil(2 * y as usize) * 28usize.div_ceil(2 * z as usize), "{:?}", plan.block);
        assert!(plan.grid.0 >= 132, "{:?}", plan.grid);
        // Every suite layer's block has at most TILE_THREADS threads and fits an SM's shared
        // memory twice.
        for (c, hw, r, stride) in [(32, 112, 3, 1), (96, 112, 3, 2), (96, 56, 7, 1), (768, 7, 7, 1), (960, 7, 3, 1), (96, 56, 7, 2), (576, 14, 3, 2)] {
            for t in [DType::F32, DType::F16, DType::BF16] {
                let plan = TILE.plan(&dw(32, c, hw, 1, r, stride), t, &d).unwrap();
                assert!(2 * (plan.shared_bytes + 1024) <= d.smem_per_sm, "{c},{hw} {r}x{r} s{stride} {t}: {}", plan.shared_bytes);
                let (x, y, z) = plan.block;
                assert!(x * y * z <= TILE_THREADS && x * y * z >= 32, "{c},{hw} {r}x{r} s{stride} {t}: {:?}", plan.block);
            }
        }
    }

    #[test]
    fn strip_blocks_shrink_until_a_small_layer_fills_the_sms() {
        let d = h100();
        // 32,144,56,56 3x3: 32 x 14 strips x 28 column groups x 36 = 451584 threads, 256 a block.
        let big = STRIP.plan(&dw(32, 144, 56, 1, 3, 1), DType::F16, &d).unwrap();
        assert_eq!((big.grid, big.block), ((1764, 1, 1), (256, 1, 1)));
        // 1,144,56,56: 14112 threads; 256 a block gives 56 blocks, 64 a block 221 (132 SMs).
        let small = STRIP.plan(&dw(1, 144, 56, 1, 3, 1), DType::F16, &d).unwrap();
        assert_eq!((small.grid, small.block), ((221, 1, 1), (64, 1, 1)));
    }

    /// The strip predictions land within 1.35x of the H100 fp16 times on the large layers, and
    /// Auto's choice between the two NHWC kernels follows the measurements where they differ by
    /// more than 20% (BENCHMARKS.md, 2026-11-27, bundle 11d3afa).
    #[test]
    fn strip_predictions_track_the_h100_measurements() {
        let d = h100();
        // (problem, step 1 us, strip us)
        let measured = [
            (dw(32, 144, 56, 1, 3, 1), 39.0, 31.3),
            (dw(32, 32, 112, 1, 3, 1), 38.8, 31.4),
            (dw(32, 960, 7, 1, 3, 1), 8.2, 5.6),
            (dw(32, 96, 56, 1, 7, 1), 103.4, 77.0),
            (dw(32, 192, 28, 1, 7, 1), 48.0, 40.1),
            (dw(32, 768, 7, 1, 7, 1), 18.4, 12.0),
            (dw(1, 192, 28, 1, 7, 1), 5.8, 12.8),
            (dw(1, 768, 7, 1, 7, 1), 5.8, 8.2),
        ];
        for (p, step1, strip) in measured {
            let predicted = STRIP.plan(&p, DType::F16, &d).unwrap().predicted_us;
            if p.n > 1 {
                assert!((1.0 / 1.35..=1.35).contains(&(predicted / strip)), "strip on {p}: predicted {predicted:.1} us, measured {strip} us");
            }
            let step1_predicted = NHWC.plan(&p, DType::F16, &d).unwrap().predicted_us;
            assert_eq!(predicted < step1_predicted, strip < step1, "{p}: predicted strip {predicted:.1} against step 1 {step1_predicted:.1} us; measured {strip} against {step1}");
        }
    }

    /// The NCHW strip predictions land within 1.35x of the H100 fp16 times on the large layers
    /// whose rows it reads as vectors, and Auto's choice between the two NCHW kernels follows the
    /// measurements where they differ by more than 20% (BENCHMARKS.md, 2026-11-27, bundle b60e128).
    #[test]
    fn nchw_strip_predictions_track_the_h100_measurements() {
        let d = h100();
        // (problem, step 1 us, strip us)
        let measured = [
            (dw(32, 32, 112, 1, 3, 1), 76.1, 32.4),
            (dw(32, 144, 56, 1, 3, 1), 91.7, 37.3),
            (dw(32, 192, 28, 1, 3, 1), 34.8, 16.5),
            (dw(32, 96, 112, 1, 3, 2), 78.6, 55.0),
            (dw(32, 144, 56, 1, 3, 2), 37.0, 24.6),
            (dw(32, 576, 14, 1, 3, 2), 11.1, 13.4),
            (dw(32, 960, 7, 1, 3, 1), 12.1, 17.1),
            (dw(32, 96, 56, 1, 7, 1), 161.1, 55.7),
            (dw(32, 192, 28, 1, 7, 1), 91.9, 31.9),
            (dw(32, 384, 14, 1, 7, 1), 52.4, 29.0),
            (dw(1, 32, 112, 1, 3, 1), 4.4, 3.5),
            (dw(1, 96, 112, 1, 3, 2), 5.2, 3.3),
            (dw(1, 144, 56, 1, 3, 1), 5.4, 3.5),
            (dw(1, 384, 14, 1, 3, 1), 3.0, 4.1),
            (dw(1, 960, 7, 1, 3, 1), 2.9, 3.8),
            (dw(1, 96, 56, 1, 7, 1), 9.8, 7.1),
            (dw(1, 768, 7, 1, 7, 1), 4.1, 7.4),
        ];
        for (p, step1, strip) in measured {
            let predicted = NCHW_STRIP.plan(&p, DType::F16, &d).unwrap().predicted_us;
            if p.n > 1 && p.w % 4 == 0 {
                assert!((1.0 / 1.35..=1.35).contains(&(predicted / strip)), "strip on {p}: predicted {predicted:.1} us, measured {strip} us");
            }
            let step1_predicted = NCHW.plan(&p, DType::F16, &d).unwrap().predicted_us;
            if (strip / step1 - 1.0).abs() > 0.2 && (step1 / strip - 1.0).abs() > 0.2 {
                assert_eq!(predicted < step1_predicted, strip < step1, "{p}: predicted strip {predicted:.1} against step 1 {step1_predicted:.1} us; measured {strip} against {step1}");
            }
        }
    }

    /// The tile predictions land within 1.35x of the H200 fp16 times on the large layers, and
    /// Auto's choice between the tile and the strip (stride 1) follows the measurements where they
    /// differ by more than 20% (BENCHMARKS.md, 2026-11-28, bundle c236cd6, the bench's rotated
    /// buffers), and so does the choice against step 1 at stride 2 (its model refitted on both
    /// machines the same day).
    #[test]
    fn tile_predictions_track_the_h200_measurements() {
        let d = DeviceModel::named("h200").unwrap();
        // (problem, the strip's us at stride 1 or step 1's at stride 2, the tile's us)
        let measured = [
            (dw(32, 32, 112, 1, 3, 1), 30.1, 23.3),
            (dw(32, 144, 56, 1, 3, 1), 29.9, 32.9),
            (dw(32, 192, 28, 1, 3, 1), 13.0, 12.9),
            (dw(32, 576, 14, 1, 3, 1), 10.3, 10.8),
            (dw(32, 960, 7, 1, 3, 1), 5.4, 6.0),
            (dw(32, 96, 56, 1, 7, 1), 77.7, 63.4),
            (dw(32, 192, 28, 1, 7, 1), 40.5, 36.4),
            (dw(32, 384, 14, 1, 7, 1), 22.2, 24.7),
            (dw(32, 768, 7, 1, 7, 1), 11.8, 11.9),
            (dw(1, 192, 28, 1, 7, 1), 12.7, 8.3),
            (dw(1, 768, 7, 1, 7, 1), 8.3, 7.3),
            (dw(32, 96, 112, 1, 3, 2), 38.9, 34.6),
            (dw(32, 144, 56, 1, 3, 2), 18.0, 16.6),
            (dw(32, 576, 14, 1, 3, 2), 8.3, 6.6),
            (dw(1, 96, 112, 1, 3, 2), 4.6, 3.6),
        ];
        for (p, other, tile) in measured {
            let predicted = TILE.plan(&p, DType::F16, &d).unwrap().predicted_us;
            if p.n > 1 {
                assert!((1.0 / 1.35..=1.35).contains(&(predicted / tile)), "tile on {p}: predicted {predicted:.1} us, measured {tile} us");
            }
            let (k, margin) = if p.stride == (1, 1) { (&STRIP, 0.2) } else { (&NHWC, 0.2) };
            let other_predicted = k.plan(&p, DType::F16, &d).unwrap().predicted_us;
            if (tile / other - 1.0).abs() > margin && (other / tile - 1.0).abs() > margin {
                assert_eq!(predicted < other_predicted, tile < other, "{p}: predicted tile {predicted:.1} against {} {other_predicted:.1} us; measured {tile} against {other}", k.name);
            }
        }
    }

    /// The predictions land within 1.35x of the H100 fp16 times of both kernels on the large
    /// layers and 1.5x on the batch-1 ones (step 1's refit is worst on 1,96,56,56 7x7: 6.3 us
    /// for 9.2). BENCHMARKS.md: NCHW 2026-11-27, bundle b60e128, after the NCHW entries' refit;
    /// NHWC 2026-11-27, bundle 6748ce4 (with the register window; the first fit's ed3f5a4 times
    /// predate it).
    #[test]
    fn predictions_track_the_h100_measurements() {
        let d = h100();
        // (problem, NCHW us, NHWC us)
        let measured = [
            (dw(32, 144, 56, 1, 3, 1), 91.7, 38.8),
            (dw(32, 96, 112, 1, 3, 2), 78.6, 44.4),
            (dw(32, 96, 56, 1, 7, 1), 161.1, 103.3),
            (dw(32, 384, 14, 1, 7, 1), 52.4, 25.7),
            (dw(1, 144, 56, 1, 3, 1), 5.4, 4.1),
            (dw(1, 96, 56, 1, 7, 1), 9.8, 9.2),
        ];
        for (p, nchw, nhwc) in measured {
            let bound = if p.n > 1 { 1.35 } else { 1.5 };
            for (k, us) in [(&NCHW, nchw), (&NHWC, nhwc)] {
                let predicted = k.plan(&p, DType::F16, &d).unwrap().predicted_us;
                assert!((1.0 / bound..=bound).contains(&(predicted / us)), "{} on {p}: predicted {predicted:.1} us, measured {us} us", k.name);
            }
        }
    }
}
