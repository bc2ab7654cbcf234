//! Plan for `direct_smem` (kernels-gpu/src/direct/smem.rs): which entry point, and the block
//! shape, grid and shared memory for it.
//!
//! The kernel's tile is set by its launch: a block of `(TXC, TH)` threads computes TH output
//! rows by TXC*WPT output columns for KT output channels of one image, and the grid is one
//! flattened dimension of `column tiles x row tiles x K tiles x N` blocks. The kernel re-derives
//! the tile counts and its shared-memory layout from the block shape and the problem; both sides
//! evaluate the one set of formulas in `convrs_spec::direct_smem_geometry!` (the kernel in
//! `i32`, `Geometry` here in `u128`), and the kernel still traps if it is given less shared
//! memory than it needs.
//!
//! Choice: every variant (KT in {4, 6, 8, 16}; the compiled-S fast path when stride_w =
//! dilation_w = 1 and S is 1, 3, 5, 6 or 7, else the generic path) and every block shape of 64
//! to 128 threads with at least 8 threads per tile row (fewer only for narrow or tiny outputs;
//! a second pass takes any shape up to 256 threads if nothing else fits in shared memory) is
//! scored by a small issue-slot model of the device (its SMs and clock; 4 warp instructions per cycle
//! per SM, 1 shared-memory wavefront per cycle, registers per variant from ptxas), and the
//! cheapest wins. The model charges wasted work (K padded to KT, tiles past the image edge,
//! idle lanes), per-channel staging and barrier overhead, shared-memory bank conflicts and tail
//! waves; its constants were fitted to ~290 timed block shapes of six problems on an H200.
//!
//! Picks (their H200 timings are in BENCHMARKS.md):
//! - 1,6,768,512 -> 6, 6x6: `direct_smem_k6_s6`, block (8, 16), 768 blocks, 8448 B.
//! - 64,64,56,56 -> 64, 3x3 p1: `direct_smem_k16_s3`, block (15, 8), 1792 blocks, 6272 B.

use std::ops::Deref;

use convrs_spec::direct::smem::{self as spec, has_fast_path, GENERIC, MAX_BLOCK_THREADS, WIDTHS};

use crate::plan::model::{blocks_per_sm, cycles_us, waves, LAUNCH_US};
use crate::plan::{DeviceModel, LaunchPlan};
use crate::dtype::DType;
use crate::{Conv2d, Error, Result};
use crate::plan::{Family, KernelDesc};
use crate::{Algorithm, Layout};

/// One compiled register tile (KT output channels x WPT output columns per thread, and its
/// entries) with what the cost model knows of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Variant {
    spec: spec::Variant,
    /// Registers per thread as ptxas allocates them (sm_90, rounded up to its granularity of
    /// 8), for the occupancy estimate only.
    regs: usize,
}

impl Deref for Variant {
    type Target = spec::Variant;
    fn deref(&self) -> &spec::Variant {
        &self.spec
    }
}

/// [`Variant::regs`] of each variant of `spec::VARIANTS`, in its order (a measurement, not part
/// of the contract; the length is checked against the table at compile time).
const REGS: [usize; spec::VARIANTS.len()] = [96, 80, 128, 136];

/// The compiled variants, in the spec's order, with their register counts.
const VARIANTS: [Variant; spec::VARIANTS.len()] = {
    let mut out = [Variant { spec: spec::VARIANTS[0], regs: 0 }; spec::VARIANTS.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Variant { spec: spec::VARIANTS[i], regs: REGS[i] };
        i += 1;
    }
    out
};

/// The entry point of variant `kt` with fast-path width `s` (`None` or a width without a fast
/// path: generic). An unknown `kt` falls back to the last variant, as the planner never asks for one.
fn kernel_name(kt: usize, s: Option<usize>) -> &'static str {
    let v = VARIANTS.iter().find(|v| v.kt == kt).unwrap_or(&VARIANTS[VARIANTS.len() - 1]);
    let width = s.filter(|&s| has_fast_path(s)).unwrap_or(GENERIC);
    let col = WIDTHS.iter().position(|&w| w == width).expect("the spec lists a generic column");
    v.entries[col]
}

/// Every entry point the plan can name (for tests and tools).
pub fn kernel_names() -> Vec<&'static str> {
    VARIANTS.iter().flat_map(|v| v.entries).collect()
}

/// The kernel's geometry for one block shape, by the spec's formulas (which the kernel's `conv`
/// evaluates in `i32`). All arithmetic in u128, so absurd problems become rejections, never
/// overflows.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    /// Output rows per block (TH).
    th: u128,
    /// Output columns per block (TXC * WPT).
    tw: u128,
    /// Tiles start `shift` columns left of a multiple of TW so that 16-byte copies are aligned.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests' replay of the kernel's mapping
    shift: u128,
    qtiles: u128,
    ptiles: u128,
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests' replay of the kernel's mapping
    ktiles: u128,
    blocks: u128,
    /// Input tile rows, including the halo.
    ih: u128,
    /// Input tile columns read (a multiple of 4), including the halo.
    need_w: u128,
    /// Floats per tile row in shared memory (`need_w`: rows are 16-byte aligned and packed).
    pitch: u128,
    /// Whether the input is copied in 16-byte pieces (assuming a 16-byte aligned input buffer,
    /// which every device allocation is; the kernel checks and falls back to 4-byte copies).
    vec16: bool,
    smem_bytes: u128,
}

fn geometry(p: &Conv2d, v: Variant, fast: bool, txc: usize, th: usize) -> Geometry {
    let (out_p, out_q) = p.output_hw();
    let u = |x: usize| x as u128;
    let (sh, sw) = (u(p.stride.0), u(p.stride.1));
    let (dh, dw) = (u(p.dilation.0), u(p.dilation.1));
    let tw = u(txc * v.wpt);
    let vec16 = spec::vec_rows(sw, u(p.w));
    let shift = spec::tile_shift(vec16, u(p.pad.1));
    let qtiles = spec::tiles(u(out_q) + shift, tw);
    let ptiles = spec::tiles(u(out_p), u(th));
    let ktiles = spec::tiles(u(p.k), u(v.kt));
    let blocks = qtiles * ptiles * ktiles * u(p.n);
    let ih = spec::input_rows(u(th), sh, u(p.r), dh);
    let need_w = spec::input_cols(tw, sw, u(p.s), dw);
    let pitch = need_w;
    // Taps: fast path packed per filter row ([rx][k], rounded up to 16 bytes), generic path one
    // 16-byte aligned group of round4(KT) per (ry, rx).
    let tap_floats = spec::tap_floats(v.kt, if fast { p.s } else { GENERIC }, u(p.r), u(p.s));
    let smem_bytes = spec::smem_bytes(ih * pitch + tap_floats);
    Geometry { th: u(th), tw, shift, qtiles, ptiles, ktiles, blocks, ih, need_w, pitch, vec16, smem_bytes }
}

/// Whether every 32-bit index the kernel forms for this geometry fits in an `i32` (the
/// problem's own indices are checked by `validate`; these are the tile and halo extents).
fn indices_fit(p: &Conv2d, g: &Geometry) -> bool {
    let lim = i32::MAX as u128;
    let u = |x: usize| x as u128;
    // Largest row / column coordinate formed: the last tile's origin times the stride plus the
    // halo (and the padding it is offset by); the column bound also covers `Q + shift + TW`.
    let rows = (g.ptiles - 1) * g.th * u(p.stride.0) + g.ih + u(p.pad.0);
    let cols = (g.qtiles - 1) * g.tw * u(p.stride.1) + g.need_w + g.tw + u(p.pad.1);
    g.blocks <= lim && rows <= lim && cols <= lim && g.smem_bytes <= lim
}

/// Measured time over the modelled cycles at the device's maximum clock (geometric mean over the
/// four seed shapes' H100 times, BENCHMARKS.md 2026-11-22: 0.76 to 1.08). Below 1: the model's
/// constants were fitted to relative timings on an H200 and overcount issue slots a little.
const CYCLE_SCALE: f64 = 0.86;

/// Modelled time of the whole launch on `d`, microseconds. See the module docs; the constants
/// were fitted to timings of six shapes (3x3 to 7x7, strided, 1x1, few and many channels) on an
/// H200 over ~290 block shapes, where the model's pick came within 4% of the best on average.
fn cost(d: &DeviceModel, p: &Conv2d, v: Variant, fast: bool, txc: usize, th: usize, g: &Geometry) -> f64 {
    /// Issue slots charged per staged item (one `cp.async` with its address and bounds logic,
    /// plus its share of the copy latency the barrier exposes).
    const STAGE_ITEM: f64 = 80.0;
    /// Per channel and warp: the wait, the barrier and the loop.
    const CHANNEL: f64 = 40.0;
    /// Per warp: index set-up before the channel loop.
    const SETUP: f64 = 150.0;
    let threads = (txc * th) as f64;
    let warps = (txc * th).div_ceil(32) as f64;
    let (r, s, kt, wpt) = (p.r as f64, p.s as f64, v.kt as f64, v.wpt as f64);
    let fma = r * s * wpt * kt;
    // Per warp and input channel: issued instructions and shared-memory wavefronts. Tap loads
    // are broadcasts (one wavefront each); window loads as `window_wavefronts` counts.
    let window = window_wavefronts(p, v, fast, txc, th, g.pitch);
    let (lds, wavefronts, loop_ovh) = if fast {
        let nch = (v.wpt + p.s - 1).div_ceil(4) as f64;
        let tap_quads = (p.s * v.kt).div_ceil(4) as f64;
        (r * (nch + tap_quads), r * (nch * window + tap_quads), r * 4.0)
    } else {
        let tap_loads = (v.kt / 4 + usize::from(v.kt % 4 >= 2) + (v.kt % 2)) as f64;
        (r * s * (wpt + tap_loads), r * s * (wpt * window + tap_loads), r * s * 4.0 + r * 3.0)
    };
    let units = if g.vec16 { g.need_w / 4 } else { g.need_w } as f64;
    let items = (g.ih as f64 * units / threads).ceil() + (kt * r * s / threads).ceil();
    let issue = fma + lds + loop_ovh + items * STAGE_ITEM + CHANNEL;
    let per_channel = issue.max(4.0 * wavefronts);
    let warp_slots = p.c as f64 * per_channel + 3.0 * kt * wpt + SETUP;
    // WPT = 8 variants measured ~1.2x slower per FMA than the model says: their 16-byte window
    // loads are 32 bytes apart across lanes (2-way bank conflicts) and they hold ~125 registers.
    let variant_factor = if v.wpt == 8 { 1.2 } else { 1.0 };
    let block_slots = warps * warp_slots * variant_factor;

    let bps = blocks_per_sm(d, txc * th, v.regs, g.smem_bytes.min(usize::MAX as u128) as usize) as f64;
    // Issue efficiency with w warps per scheduler: FMA chains are independent, but each filter
    // row starts with dependent shared loads that other warps must cover.
    let eff = |w: f64| w / (w + 0.35);
    let cycles = waves(d, g.blocks as f64, bps, |resident| resident * block_slots / (4.0 * eff(resident * warps / 4.0)));
    LAUNCH_US + CYCLE_SCALE * cycles_us(d, cycles)
}

/// Shared-memory wavefronts of one window load instruction, averaged over the block's warps:
/// the largest number of lanes whose addresses fall in one bank (fast path: 16-byte loads, so
/// one group of 4 banks). The fast path's lane reads 16 bytes at tile column
/// tx*WPT; the generic path's lane reads 4 bytes at column tx*stride_w; both from tile row
/// ty*stride_h, rows `pitch` floats apart.
fn window_wavefronts(p: &Conv2d, v: Variant, fast: bool, txc: usize, th: usize, pitch: u128) -> f64 {
    let threads = txc * th;
    let mut total = 0usize;
    for warp in 0..threads.div_ceil(32) {
        // Lanes never share an address (rows are at least a tile wide apart), so the count of
        // lanes per bank is the count of distinct addresses per bank.
        let mut per_bank = [0usize; 32];
        for tid in warp * 32..((warp + 1) * 32).min(threads) {
            let (tx, ty) = ((tid % txc) as u128, (tid / txc) as u128);
            let row = ty * p.stride.0 as u128 * pitch;
            let bank = if fast { (row + tx * v.wpt as u128) / 4 % 8 } else { (row + tx * p.stride.1 as u128) % 32 };
            per_bank[bank as usize] += 1;
        }
        total += per_bank.into_iter().max().unwrap_or(1).max(1);
    }
    total as f64 / threads.div_ceil(32) as f64
}

/// The plan for `problem`: the entry point, a block of `(TXC, TH)` threads, the flattened
/// grid and the dynamic shared memory (the host raises the kernel's limit to it), or
/// [`Error::Unsupported`] when even the smallest tile's shared memory exceeds the device's.
pub fn plan(problem: &Conv2d, device: &DeviceModel) -> Result<LaunchPlan> {
    problem.validate()?;
    let p = problem;
    let fast_s = (p.stride.1 == 1 && p.dilation.1 == 1 && has_fast_path(p.s)).then_some(p.s);
    let max_smem = device.smem_per_block as u128;
    let mut best: Option<(f64, LaunchPlan)> = None;
    let mut smallest_smem = u128::MAX;
    let mut index_limited = false;
    let (out_p, out_q) = p.output_hw();
    // Pass 1 searches the block shapes that measured well; pass 2 (only if nothing in pass 1
    // fits in shared memory, e.g. a very tall dilated halo) every shape up to 256 threads.
    for relaxed in [false, true] {
        for v in VARIANTS {
            // Blocks wider or taller than the output (plus up to 3 columns of shift) only add
            // waste. Pass 1: at least 8 threads per tile row (narrower tiles spend more on halo
            // columns and staging per output, and measured slower) unless the output is narrow;
            // 64 to 128 threads (4-warp blocks were best or within 2% of it in every measured
            // shape, and keep occupancy steady if the driver's compiler allocates more registers).
            let txc_max = 64usize.min((out_q + 3).div_ceil(v.wpt));
            let (txc_min, max_threads) = if relaxed { (1, MAX_BLOCK_THREADS as usize) } else { (txc_max.min(8), 128) };
            let min_threads = if relaxed { 1 } else { 64.min(txc_max * out_p.min(max_threads / txc_max)) };
            for txc in txc_min..=txc_max {
                for th in 1..=(max_threads / txc).min(out_p) {
                    if txc * th < min_threads {
                        continue;
                    }
                    let g = geometry(p, v, fast_s.is_some(), txc, th);
                    smallest_smem = smallest_smem.min(g.smem_bytes);
                    if g.smem_bytes > max_smem {
                        continue;
                    }
                    if !indices_fit(p, &g) {
                        index_limited = true;
                        continue;
                    }
                    let c = cost(device, p, v, fast_s.is_some(), txc, th, &g);
                    if best.as_ref().is_none_or(|(b, _)| c < *b) {
                        let plan = LaunchPlan::new(kernel_name(v.kt, fast_s), (g.blocks as u32, 1, 1), (txc as u32, th as u32, 1), g.smem_bytes as u32, DType::F32, c);
                        best = Some((c, plan));
                    }
                }
            }
        }
        if best.is_some() {
            break;
        }
    }
    match best {
        Some((_, plan)) => Ok(plan),
        None if index_limited => Err(Error::Unsupported {
            algorithm: "direct_smem",
            reason: "the tile and halo coordinates of this problem (huge strides, dilations or extents) exceed 32-bit indexing".into(),
        }),
        None => Err(Error::Unsupported {
            algorithm: "direct_smem",
            reason: format!(
                "even its smallest tile needs {smallest_smem} bytes of shared memory (two buffers of the input halo, \
                 {}x{} filter taps dilated by {:?}, and 4 output channels' taps), more than the device's {} per block; \
                 use direct_naive",
                p.r, p.s, p.dilation, device.smem_per_block
            ),
        }),
    }
}

/// The registry's entry.
pub const KERNEL: KernelDesc = KernelDesc {
    algorithm: Algorithm::DirectSmem,
    name: "direct_smem",
    family: Family::Direct,
    summary: "family 1 step 2: shared-memory tiles, register blocking over output channels, 16-byte loads",
    dtypes: &[DType::F32],
    layouts: (Layout::Nchw, Layout::Nchw, Layout::Nchw),
    multiples: (1, 1, 1),
    precision: crate::Precision::Fma,
    planner: |_, p, _, d| plan(p, d),
};

#[cfg(test)]
mod tests {
    use super::*;

    use crate::device::tests::h100;

    /// The variant of entry `kernel`, and whether the entry is a fast path.
    fn variant_of(kernel: &str) -> (Variant, bool) {
        let v = VARIANTS.into_iter().find(|v| v.entries.contains(&kernel)).unwrap();
        let col = v.entries.iter().position(|&e| e == kernel).unwrap();
        (v, WIDTHS[col] != GENERIC)
    }

    /// Replays the kernel's block -> tile -> thread -> output mapping on the CPU and checks that
    /// every output is written exactly once and nothing outside the output is.
    fn assert_covers_exactly_once(p: &Conv2d, plan: &LaunchPlan) {
        let (out_p, out_q) = p.output_hw();
        let (v, fast) = variant_of(plan.kernel);
        let (txc, th) = (plan.block.0 as usize, plan.block.1 as usize);
        let g = geometry(p, v, fast, txc, th);
        assert_eq!(plan.grid, (g.blocks as u32, 1, 1));
        let mut hits = vec![0u8; p.output_len()];
        let (qt, pt, kt) = (g.qtiles as usize, g.ptiles as usize, g.ktiles as usize);
        for b in 0..plan.grid.0 as usize {
            let (xt, yt, kti, n) = (b % qt, (b / qt) % pt, (b / qt / pt) % kt, b / qt / pt / kt);
            assert!(n < p.n, "block {b} decodes to image {n}");
            for ty in 0..th {
                let oy = yt * th + ty;
                for tx in 0..txc {
                    for k in kti * v.kt..(kti + 1) * v.kt {
                        for j in 0..v.wpt {
                            let col = spec::thread_column(fast, tx as u128, j as u128, v.wpt as u128, txc as u128) as usize;
                            let ox = (xt * g.tw as usize + col) as isize - g.shift as isize;
                            if oy < out_p && k < p.k && ox >= 0 && (ox as usize) < out_q {
                                hits[((n * p.k + k) * out_p + oy) * out_q + ox as usize] += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(hits.iter().all(|&h| h == 1), "{p}: {} outputs not written exactly once", hits.iter().filter(|&&h| h != 1).count());
    }

    #[test]
    fn speed_target_shapes_get_fast_kernels() {
        let a = Conv2d::new(1, 6, 768, 512, 6, 6, 6);
        let plan = super::plan(&a, &h100()).unwrap();
        assert_eq!(plan.kernel, "direct_smem_k6_s6", "{plan:?}");
        assert!(plan.grid.0 >= 264, "shape A must fill 132 SMs at least twice: {plan:?}");
        assert!(plan.block.0 * plan.block.1 <= 128, "{plan:?}");
        assert_covers_exactly_once(&a, &plan);

        let b = Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1);
        let plan = super::plan(&b, &h100()).unwrap();
        assert!(plan.kernel.ends_with("_s3") && (plan.kernel.contains("k16") || plan.kernel.contains("k8")), "{plan:?}");
        assert_covers_exactly_once(&b, &plan);
    }

    #[test]
    fn plans_cover_every_output_once_and_fit_in_shared_memory() {
        let mut shapes = vec![
            Conv2d::new(1, 1, 1, 1, 1, 1, 1),
            Conv2d::new(3, 7, 31, 29, 5, 1, 1).with_stride(2),
            Conv2d::new(2, 3, 33, 35, 9, 7, 7).with_pad(3),
            Conv2d::new(2, 4, 40, 41, 6, 3, 3).with_pad(2).with_dilation(2),
            Conv2d::new(1, 2, 5, 5, 3, 5, 5).with_pad(4),
            Conv2d { n: 2, c: 5, h: 23, w: 64, k: 10, r: 3, s: 5, pad: (1, 2), stride: (2, 1), dilation: (1, 3), precision: Default::default(), groups: 1, epilogue: Default::default() },
            Conv2d::new(1, 3, 64, 256, 4, 3, 3).with_pad(1),
            Conv2d::new(2, 16, 56, 56, 24, 3, 3).with_pad(1),
            Conv2d::new(1, 6, 768, 512, 6, 6, 6),
            Conv2d::new(8, 3, 224, 224, 64, 7, 7).with_pad(3).with_stride(2),
            Conv2d::new(1, 1, 9, 300, 33, 2, 8).with_pad(3),
        ];
        // A deterministic sweep over small odd shapes, every filter width 1..=8 and each padding,
        // stride and dilation up to 3 along W.
        for i in 0..240usize {
            let s = 1 + i % 8;
            let (pw, sw, dw) = (i / 8 % 4, 1 + i / 32 % 3, 1 + i / 96 % 3);
            let w = (s - 1) * dw + 1 + i % 13;
            shapes.push(Conv2d {
                n: 1 + i % 3,
                c: 1 + i % 2,
                h: 3 + i % 11,
                w,
                k: 1 + i % 19,
                r: 1 + i % 3,
                s,
                pad: (i % 2, pw),
                stride: (1 + i % 2, sw),
                dilation: (1 + i / 5 % 2, dw),
                precision: Default::default(), groups: 1, epilogue: Default::default(),
            });
        }
        for p in shapes.iter().filter(|p| p.validate().is_ok()) {
            let plan = super::plan(p, &h100()).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(plan.shared_bytes <= h100().smem_per_block, "{p}: {plan:?}");
            assert!(plan.block.0 * plan.block.1 <= MAX_BLOCK_THREADS && plan.block.2 == 1, "{p}: {plan:?}");
            assert!(kernel_names().contains(&plan.kernel));
            let fast = p.stride.1 == 1 && p.dilation.1 == 1 && has_fast_path(p.s);
            assert_eq!(variant_of(plan.kernel).1, fast, "{p}: {plan:?}");
            assert_covers_exactly_once(p, &plan);
        }
    }

    #[test]
    fn shared_memory_formula_matches_the_kernel_layout() {
        // Shape A (KT 6, WPT 4) with a (16, 8) block: tile 8 x 64 outputs, halo 13 x 69 read as
        // 13 x 72 (16-byte chunks); taps packed per filter row, 6 x 6 = 36 floats per row; two buffers.
        let a = Conv2d::new(1, 6, 768, 512, 6, 6, 6);
        let g = geometry(&a, VARIANTS[1], true, 16, 8);
        assert_eq!((g.ih, g.need_w, g.pitch, g.shift), (13, 72, 72, 0));
        assert_eq!(g.smem_bytes, 8 * (13 * 72 + 6 * 36));
        assert_eq!((g.qtiles, g.ptiles, g.ktiles, g.blocks), (8, 96, 1, 768));
        // Shape B with a (14, 16) block and KT 16: pad 1 shifts tiles by 3; 59 columns need 2 tiles of 56.
        let b = Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1);
        let g = geometry(&b, VARIANTS[3], true, 14, 16);
        assert_eq!((g.tw, g.shift, g.qtiles, g.ih, g.need_w, g.pitch), (56, 3, 2, 18, 60, 60));
        assert_eq!(g.smem_bytes, 8 * (18 * 60 + 3 * 48));
        // The generic path keeps round4(KT) floats per (ry, rx): KT 6 -> 8.
        let g = geometry(&Conv2d { stride: (1, 2), ..a }, VARIANTS[1], false, 16, 8);
        assert_eq!(g.smem_bytes, 8 * (g.ih * g.pitch + 36 * 8));
    }

    #[test]
    fn filters_too_large_for_shared_memory_are_unsupported() {
        let huge = Conv2d::new(1, 1, 200, 200, 1, 150, 150);
        match super::plan(&huge, &h100()) {
            Err(Error::Unsupported { algorithm: "direct_smem", reason }) => assert!(reason.contains("shared memory"), "{reason}"),
            other => panic!("expected Unsupported, got {other:?}"),
        }
        let tiny = DeviceModel { smem_per_block: 512, ..h100() };
        assert!(matches!(super::plan(&Conv2d::new(1, 1, 8, 8, 1, 3, 3), &tiny), Err(Error::Unsupported { .. })));
        // A large dilation makes a tall halo, but one output row still fits.
        let dilated = Conv2d { dilation: (1000, 1), ..Conv2d::new(1, 1, 3000, 64, 1, 3, 3) };
        assert!(super::plan(&dilated, &h100()).is_ok());
    }

    #[test]
    fn invalid_problems_are_rejected_before_planning() {
        assert!(matches!(super::plan(&Conv2d::new(1, 1, 4, 4, 1, 7, 7), &h100()), Err(Error::FilterLargerThanPaddedInput { .. })));
        assert!(matches!(super::plan(&Conv2d::new(0, 1, 4, 4, 1, 1, 1), &h100()), Err(Error::ZeroSize { .. })));
    }
}
