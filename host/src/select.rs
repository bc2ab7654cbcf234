//! The automatic choice ([`crate::Algorithm::Auto`]): for a problem, an element type and the
//! layout the caller holds, every kernel of the registry is planned on the device, its layout
//! conversions are priced, and the lowest predicted total wins. `convrs explain` prints the same
//! candidates with their predictions and every refusal's reason.
//!
//! Conversions are priced as one memory-bound pass per tensor whose layout differs from the
//! kernel's or that must be padded: a launch's fixed cost plus the bytes read and written at the
//! rate the device-side transform kernels reach (fitted to the bench's NCHW caller rows on the
//! H200, 2026-12-04: [`TRANSFORM_PASS_US`], [`TRANSPOSE_RATE`], [`SAMPLED_RATE`]), not the host
//! conversions `conv2d` on host tensors does today. The filter is not priced: a caller on the
//! device converts it once per weights ([`crate::device_conv::DeviceConv`] caches it), so it is
//! not part of a call. A kernel that needs N, C or K to be multiples runs the problem padded
//! with zeros ([`KernelDesc::run_problem`]), priced as the larger problem it is.
//!
//! ```
//! use convrs::{select, Conv2d, DType, DeviceModel, Layout};
//! let h100 = DeviceModel::named("h100")?;
//! let choice = select::choose(&Conv2d::new(1, 6, 768, 512, 6, 6, 6), DType::F32, Layout::Nchw, &h100)?;
//! assert_eq!(choice.pick.name(), "direct_smem");
//! # Ok::<(), convrs::Error>(())
//! ```

use crate::plan::model::memory_us;
use crate::plan::LaunchPlan;
use crate::registry::{KernelDesc, KERNELS};
use crate::timing::{time_runs, TimingConfig};
use crate::{Algorithm, Conv2d, DType, DeviceModel, Element, Error, Gpu, Layout, Result};

/// A kernel's predicted cost for the caller.
#[derive(Clone, Debug)]
pub struct Estimate {
    /// The launch, of the padded problem where the kernel needs one.
    pub plan: LaunchPlan,
    /// The problem the kernel runs, if it differs from the caller's: zero-padded to its
    /// multiples, or a strided 1x1 layer subsampled ([`crate::Conv2d::subsampled`]).
    pub padded: Option<Conv2d>,
    /// The kernel alone, in its own layouts.
    pub kernel_us: f64,
    /// Converting the caller's input and filter into the kernel's layouts and the output back.
    pub conversion_us: f64,
}

impl Estimate {
    pub fn total_us(&self) -> f64 {
        self.kernel_us + self.conversion_us
    }
}

/// One kernel the choice looked at: its estimate, or why it cannot serve.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub kernel: &'static KernelDesc,
    pub outcome: std::result::Result<Estimate, String>,
}

/// The choice and everything it was made from.
#[derive(Clone, Debug)]
pub struct Choice {
    pub pick: Algorithm,
    /// Every kernel of the registry, in its order.
    pub candidates: Vec<Candidate>,
}

impl Choice {
    /// The pick's estimate.
    pub fn estimate(&self) -> Option<&Estimate> {
        self.candidates.iter().find(|c| c.kernel.algorithm == self.pick).and_then(|c| c.outcome.as_ref().ok())
    }
}

/// What a transform pass costs besides its bytes, microseconds: the launch, ramp-up and drain of
/// one more kernel in the caller's stream. Fitted with the two rates below to the NCHW caller's
/// time minus its kernel's, over the 77 rows of resnet50 and deepbench layers whose best route
/// from NCHW converts (H200, fp16 and bf16, the fifty-third session's runs;
/// `dev/nchw_auto_replay.py --fit`, notes/hopper.md §38): 2.19 us, the fit 0.71-1.62x of each
/// row's measured conversions. The old price (3 us, the peak bandwidth, and the filter every
/// call) was up to 2.7x of them.
pub const TRANSFORM_PASS_US: f64 = 2.2;
/// The share of the peak memory bandwidth the tiled transposes reach on their bytes read plus
/// written (fitted 3.78 TB/s on the H200's 4.8; large transposes measured 3.2-3.9 TB/s).
pub const TRANSPOSE_RATE: f64 = 0.79;
/// The same for the sampled transforms (a strided 1x1 layer's input on the stride's grid), on
/// the grid's rows read plus the destination written: their short rows read partial sectors
/// (fitted 1.98 TB/s; measured alone 1.7-2.9 TB/s, BENCHMARKS.md, forty-third session).
pub const SAMPLED_RATE: f64 = 0.41;

/// Predicted microseconds to convert the caller's tensors (all in `user` layout; `dtype` input,
/// fp32 output, and a fused epilogue's residual like the output) to and from `kernel`'s layouts
/// on `device` in one call, padding them to the problem the kernel runs
/// ([`KernelDesc::run_problem`]) where it needs that. The filter is converted once per weights,
/// outside the call, and is not priced.
pub fn conversion_us(kernel: &KernelDesc, problem: &Conv2d, dtype: DType, user: Layout, device: &DeviceModel) -> f64 {
    let run = kernel.run_problem(problem);
    let (lx, _, ly) = kernel.layouts;
    // One pass reads the caller's elements and writes the kernel's (padded) ones.
    let pass = |layout: Layout, padded: bool, elems: usize, run_elems: usize, bytes: usize, rate: f64| {
        if layout == user && !padded { 0.0 } else { TRANSFORM_PASS_US + memory_us(device, ((elems + run_elems) * bytes) as f64) / rate }
    };
    let (grow_n, grow_c, grow_k) = (run.n != problem.n, run.c != problem.c, run.k != problem.k);
    // A subsampled input (a plane kernel's strided 1x1 layer) reads the grid's rows only; at 4
    // bytes or less an element, every sector of those rows.
    let sampling = problem.sampling(&run);
    let (sh, sampled) = (sampling.0, sampling != (1, 1));
    let output = pass(ly, grow_n || grow_k, problem.output_len(), run.output_len(), 4, TRANSPOSE_RATE);
    // The residual goes the output's way in reverse: into the kernel's output layout.
    let residual = if problem.epilogue.residual { output } else { 0.0 };
    let input_rate = if sampled { SAMPLED_RATE } else { TRANSPOSE_RATE };
    pass(lx, grow_n || grow_c || sampled, problem.input_len() / sh, run.input_len(), dtype.size(), input_rate) + output + residual
}

/// Every kernel of the registry planned for `problem` on `device`, priced for a caller holding
/// `dtype` tensors in `user` layout, or why it cannot serve.
pub fn candidates(problem: &Conv2d, dtype: DType, user: Layout, device: &DeviceModel) -> Vec<Candidate> {
    KERNELS
        .iter()
        .map(|k| {
            let outcome = if !k.reads(dtype) {
                Err(format!("reads {} inputs, not {dtype}", k.dtypes_label()))
            } else {
                let run = k.run_problem(problem);
                k.plan(&run, dtype, device)
                    .map(|plan| Estimate {
                        kernel_us: plan.predicted_us,
                        conversion_us: conversion_us(k, problem, dtype, user, device),
                        padded: (run != *problem).then_some(run),
                        plan,
                    })
                    .map_err(|e| e.to_string())
            };
            Candidate { kernel: k, outcome }
        })
        .collect()
}

/// The lowest predicted total among [`candidates`]. When no kernel takes the problem, the error
/// lists every kernel's reason.
pub fn choose(problem: &Conv2d, dtype: DType, user: Layout, device: &DeviceModel) -> Result<Choice> {
    problem.validate()?;
    pick(candidates(problem, dtype, user, device), dtype)
}

/// The lowest predicted total among `candidates` (of `dtype`), or one error listing every
/// candidate's reason.
pub fn pick(candidates: Vec<Candidate>, dtype: DType) -> Result<Choice> {
    let best = candidates
        .iter()
        .filter(|c| crate::plan::hopper::auto_eligible(c.kernel.algorithm))
        .filter_map(|c| c.outcome.as_ref().ok().map(|e| (c.kernel.algorithm, e.total_us())))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((pick, _)) => Ok(Choice { pick, candidates }),
        None => Err(Error::Unsupported {
            algorithm: "auto",
            reason: format!(
                "no kernel takes this problem in {dtype}: {}",
                candidates.iter().filter_map(|c| c.outcome.as_ref().err().map(|e| format!("{}: {e}", c.kernel.name))).collect::<Vec<_>>().join("; ")
            ),
        }),
    }
}

/// What autotuning decided, and what it cost.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub pick: Algorithm,
    /// Whether the answer came from the tuning cache (no kernel was timed).
    pub from_cache: bool,
    /// Each timed kernel's median plus its predicted conversions, microseconds.
    pub times_us: Vec<(String, f64)>,
    /// Wall time spent timing, seconds (0 from the cache).
    pub seconds: f64,
}

/// Autotuning: times every kernel that takes the problem once on `gpu` (in its own layouts, on
/// random data, median of 5 after 2 warm-up runs), adds its predicted conversions for a caller
/// holding `user` layout, and keeps the fastest per (device, problem, dtype, layout) in the
/// tuning cache ([`crate::tune`], in memory and on disk). A cached answer is used only if its
/// kernel still exists and still takes the problem; otherwise it is timed again.
pub fn tune(gpu: &Gpu, problem: &Conv2d, dtype: DType, user: Layout) -> Result<Tuned> {
    let choice = choose(problem, dtype, user, gpu.model())?;
    let m = gpu.model();
    let device = format!("{}|{}.{}|{}", m.name, m.compute_capability.0, m.compute_capability.1, m.sms);
    let key = crate::tune::key(&device, &crate::bench::shape_label(problem), dtype.name(), user.name());
    let cached = gpu.tune_cache().as_ref().and_then(|c| c.get(&key).cloned());
    if let Some(entry) = cached {
        let usable = choice.candidates.iter().find(|c| c.kernel.name == entry.kernel).is_some_and(|c| c.outcome.is_ok());
        if usable {
            let pick = crate::registry::by_name(&entry.kernel).map(|k| k.algorithm).unwrap_or(choice.pick);
            return Ok(Tuned { pick, from_cache: true, times_us: entry.times_us, seconds: 0.0 });
        }
        eprintln!("convrs: warning: tuning cache names `{}` for {key}, which no longer takes it: timing again", entry.kernel);
    }
    let start = std::time::Instant::now();
    let mut times_us = Vec::new();
    for c in &choice.candidates {
        let Ok(est) = &c.outcome else { continue };
        // The kernel runs the (zero-padded, where it needs multiples) problem its plan is for.
        let run = est.padded.unwrap_or(*problem);
        let us = match dtype {
            DType::F32 => time_kernel::<f32>(gpu, &run, &est.plan)?,
            DType::F16 => time_kernel::<half::f16>(gpu, &run, &est.plan)?,
            DType::BF16 => time_kernel::<half::bf16>(gpu, &run, &est.plan)?,
        };
        times_us.push((c.kernel.name.to_string(), us + est.conversion_us));
    }
    let (best, _) = times_us.iter().min_by(|a, b| a.1.total_cmp(&b.1)).cloned().ok_or_else(|| Error::InvalidArgument("nothing to tune".into()))?;
    let pick = crate::registry::by_name(&best).map(|k| k.algorithm).unwrap_or(choice.pick);
    if let Some(cache) = gpu.tune_cache().as_mut() {
        cache.insert(crate::tune::TuneEntry::new(&key, &best, times_us.clone()));
        if let Err(e) = cache.save() {
            eprintln!("convrs: warning: {e} (the tuning result stays in memory)");
        }
    }
    Ok(Tuned { pick, from_cache: false, times_us, seconds: start.elapsed().as_secs_f64() })
}

/// Median microseconds of `plan`'s kernel on random data of `problem`, the problem it was planned
/// for (writing fp32, as `plan` says: the output's width is not part of the choice).
fn time_kernel<T: Element>(gpu: &Gpu, problem: &Conv2d, plan: &LaunchPlan) -> Result<f64> {
    let x: Vec<T> = crate::random::uniform_vec_f32(problem.input_len(), 1).into_iter().map(T::from_f32).collect();
    let w: Vec<T> = crate::random::uniform_vec_f32(problem.filter_len(), 2).into_iter().map(T::from_f32).collect();
    let (x, w) = (gpu.upload(&x)?, gpu.upload(&w)?);
    let mut y = gpu.alloc_zeros::<f32>(problem.output_len())?;
    let mut ws = crate::workspace::Workspace::for_plan(gpu, plan)?;
    let t = time_runs(gpu, TimingConfig::new(2, 5), |_| crate::launch(gpu, plan, problem, &x, &w, &mut y, &mut ws))?;
    Ok(t.median_ms * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::device::tests::h100;
    use crate::Precision;

    #[test]
    fn picks_match_the_h100_measurements_on_the_seed_shapes() {
        // Fastest measured per dtype (BENCHMARKS.md, H100 2026-11-22): direct_smem on the batch-1
        // 6x6 shape (9x faster than tiled_nchw), the tiled kernels on the larger ones.
        let d = h100();
        let pick = |p: &Conv2d, t: DType, l: Layout| choose(p, t, l, &d).unwrap().pick.name();
        assert_eq!(pick(&Conv2d::new(1, 6, 768, 512, 6, 6, 6), DType::F32, Layout::Nchw), "direct_smem");
        let big = Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1);
        let fma = big.with_precision(Precision::Fma);
        assert!(["tiled_hwcn", "tiled_nchw"].contains(&pick(&fma, DType::F32, Layout::Nchw)));
        // fp32 on Hopper's tensor cores: 3xTF32 at the default precision (3 TF32 products at half
        // the fp16 rate against FMA's ~1/15 of it), one TF32 product when TF32 is enough.
        assert_eq!(pick(&big, DType::F32, Layout::Nchw), "wgmma_ws_tma_persistent_3xtf32");
        assert_eq!(pick(&big.with_precision(Precision::Tf32), DType::F32, Layout::Nchw), "wgmma_ws_tma_persistent_tf32");
        // Where no wgmma runs, the mma.sync TF32 kernels (3xTF32 at the default precision); FMA
        // kernels when the problem asks for FMA.
        let a100 = DeviceModel::named("a100").unwrap();
        let on_a100 = |p: &Conv2d| choose(p, DType::F32, Layout::Nchw, &a100).unwrap().pick.name();
        assert_eq!(on_a100(&big), "wmma_nhwc_3xtf32");
        assert_eq!(on_a100(&big.with_precision(Precision::Tf32)), "wmma_nhwc_tf32");
        assert!(["tiled_hwcn", "tiled_nchw"].contains(&on_a100(&fma)));
        // On Hopper step 7, the persistent wgmma kernel with im2col TMA copies, which measured
        // fastest on this shape (BENCHMARKS.md, fourth session), before steps 6, 4, 3 and mma.sync.
        assert_eq!(pick(&big, DType::F16, Layout::Nhwc), "wgmma_ws_tma_persistent");
        assert_eq!(pick(&big, DType::BF16, Layout::Nhwc), "wgmma_ws_tma_persistent");
        // Blocked-layout holders: the blocked kernel where no wgmma runs; on Hopper the wgmma
        // kernels are predicted faster than it by about what the conversions to and from NHWC cost.
        assert!(["wmma_nhwcnc", "wgmma_ws_tma_persistent"].contains(&pick(&big, DType::F16, Layout::Nhwc16n16c)));
        assert_eq!(choose(&big, DType::F16, Layout::Nhwc16n16c, &a100).unwrap().pick.name(), "wmma_nhwcnc");
        assert!(choose(&big, DType::F16, Layout::Nhwc, &DeviceModel::named("a100").unwrap()).unwrap().pick.name().starts_with("wmma_"));
        // C = 3 (the first layer of a network): the small-C kernel from a shared-memory patch,
        // unpadded (it measured twice as fast as wmma_smallc on 16,3,224,224 -> 64 7x7 s2;
        // BENCHMARKS.md, fifth session); the plain-layout kernels would run it padded to C = 8
        // with most of their k-tiles zeros.
        let first = Conv2d::new(8, 3, 224, 224, 64, 7, 7).with_pad(3).with_stride(2);
        let c = choose(&first, DType::F16, Layout::Nhwc, &d).unwrap();
        assert_eq!(c.pick.name(), "wmma_patch");
        assert_eq!(c.estimate().unwrap().padded, None);
        // Held in NCHW: the same kernel on NCHW data, with no transposes around it.
        assert_eq!(choose(&first, DType::BF16, Layout::Nchw, &d).unwrap().pick.name(), "wmma_patch_nchw");
        // fp16 on a problem that fits 32-bit indexing only unpadded (8e8 input and 4e8 output
        // elements; 3.2e9 with C or K padded to 8): only `wmma_patch_nchw` takes it (any K; C = 2
        // is not depthwise), and every other kernel says why not.
        let huge = Conv2d::new(1, 2, 20000, 20000, 1, 1, 1);
        huge.validate().unwrap();
        let c = choose(&huge, DType::F16, Layout::Nhwc, &d).unwrap();
        assert_eq!(c.pick.name(), "wmma_patch_nchw");
        let why = |name: &str| c.candidates.iter().find(|k| k.kernel.name == name).and_then(|k| k.outcome.as_ref().err().cloned()).unwrap_or_default();
        assert!(why("wmma_nhwc").contains("32-bit index") && why("wmma_smallc").contains("32-bit index") && why("direct_smem").contains("reads fp32"), "{c:?}");
        // With C = 8 the input itself (3.2e9 elements) is past 32-bit indexing: refused before
        // any kernel is planned.
        let e = choose(&Conv2d { c: 8, ..huge }, DType::F16, Layout::Nhwc, &d).unwrap_err().to_string();
        assert!(e.contains("the input has 3200000000 elements"), "{e}");
    }

    #[test]
    fn conversions_count_only_tensors_in_another_layout() {
        let d = h100();
        let p = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1);
        let nhwc = crate::registry::by_name("wmma_nhwc").unwrap();
        assert_eq!(conversion_us(nhwc, &p, DType::F16, Layout::Nhwc, &d), 0.0);
        // From NCHW: input (8*64*56*56 fp16) and output (fp32) each read and written once at
        // 0.79 of the H100's 3350 GB/s, a pass's launch each; the filter is converted once per
        // weights, outside the call.
        let bytes = 2.0 * (2 * p.input_len() + 4 * p.output_len()) as f64;
        let expected = 2.0 * 2.2 + bytes / (0.79 * 3.35e6);
        assert!((conversion_us(nhwc, &p, DType::F16, Layout::Nchw, &d) - expected).abs() < 1e-9);
        // NHWC with C = 3: the input is padded to C = 8 (read 3 channels, write 8); the filter
        // (padded likewise, once) and the output (K = 64) cost the call nothing.
        let q = Conv2d { c: 3, ..p };
        let bytes = 2.0 * (q.input_len() + q.input_len() / 3 * 8) as f64;
        let expected = 2.2 + bytes / (0.79 * 3.35e6);
        assert!((conversion_us(nhwc, &q, DType::F16, Layout::Nhwc, &d) - expected).abs() < 1e-9);
        // A strided 1x1 layer's sampled input for a plane kernel: the grid's rows (half the
        // input at stride 2) read and the quarter written, at 0.41 of the bandwidth.
        let s = Conv2d::new(8, 256, 56, 56, 128, 1, 1).with_stride(2);
        let planes = crate::registry::by_name("wgmma_nchw1x1_persistent").unwrap();
        let bytes = 2.0 * (s.input_len() / 2 + s.input_len() / 4) as f64;
        assert!((conversion_us(planes, &s, DType::F16, Layout::Nchw, &d) - (2.2 + bytes / (0.41 * 3.35e6))).abs() < 1e-9);
    }

    #[test]
    fn the_layout_held_can_change_the_pick() {
        // Equal kernel predictions aside, a kernel in the caller's layout saves the conversions:
        // on a large batch-1 problem an NHWC caller's conversion cost must show in the totals.
        let d = h100();
        let p = Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1).with_precision(Precision::Fma);
        let c = choose(&p, DType::F32, Layout::Nhwc, &d).unwrap();
        for cand in &c.candidates {
            if let Ok(e) = &cand.outcome {
                assert!(e.conversion_us > 0.0, "{}: every fp32 FMA kernel needs a conversion from NHWC", cand.kernel.name);
            }
        }
        // The 3xTF32 kernel reads NHWC: nothing to convert for that caller.
        let x3 = choose(&p.with_precision(Precision::Fp32), DType::F32, Layout::Nhwc, &d).unwrap();
        assert_eq!((x3.pick.name(), x3.estimate().unwrap().conversion_us), ("wgmma_ws_tma_persistent_3xtf32", 0.0));
        let pick = c.estimate().unwrap().total_us();
        assert!(c.candidates.iter().filter_map(|c| c.outcome.as_ref().ok()).all(|e| e.total_us() >= pick));
    }
}
