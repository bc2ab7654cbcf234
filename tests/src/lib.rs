//! Shared helpers for the integration tests: finding a GPU or ptxas, and skipping loudly.
//!
//! A test that needs hardware or a tool this machine lacks prints a banner straight to the
//! process's stderr (not through the test harness's capture, which would hide it) and returns.
//! Setting `CONVRS_REQUIRE_GPU=1` or `CONVRS_REQUIRE_PTXAS=1` turns such a skip into a failure,
//! so the GPU machine and CI can insist that the tests really ran.

use std::io::Write;
use std::path::PathBuf;

/// Prints `msg` where a person running the tests will see it, even with output captured.
pub fn shout(msg: &str) {
    let line = "*".repeat(78);
    let _ = writeln!(std::io::stderr(), "\n{line}\n{msg}\n{line}");
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// The GPU, or `None` after announcing that `test` was SKIPPED (a panic if a GPU is required).
pub fn gpu_or_skip(test: &str) -> Option<convrs::Gpu> {
    match convrs::Gpu::new(0) {
        Ok(gpu) => Some(gpu),
        Err(e) if required("CONVRS_REQUIRE_GPU") => panic!("CONVRS_REQUIRE_GPU=1 but no GPU: {e}"),
        Err(e) => {
            shout(&format!("SKIPPED GPU test `{test}`: {e}\n(these tests run on a GPU machine: see README, `cargo xtask gpu-bundle`)"));
            None
        }
    }
}

/// The GPU if it is a Hopper (compute capability 9.0, where the `wgmma` kernels run), else
/// `None` after a loud SKIPPED (a panic if CONVRS_REQUIRE_HOPPER=1, which the bundle's run on a
/// Hopper sets).
pub fn hopper_or_skip(test: &str) -> Option<convrs::Gpu> {
    let gpu = gpu_or_skip(test)?;
    if convrs::ptx::loads_sm90a(gpu.info().compute_capability) {
        return Some(gpu);
    }
    let (major, minor) = gpu.info().compute_capability;
    assert!(!required("CONVRS_REQUIRE_HOPPER"), "CONVRS_REQUIRE_HOPPER=1 but the GPU is {major}.{minor}");
    shout(&format!("SKIPPED `{test}`: the wgmma kernels need compute capability 9.0, this GPU is {major}.{minor}"));
    None
}

/// ptxas, or `None` after announcing that `test` was SKIPPED (a panic if ptxas is required).
pub fn ptxas_or_skip(test: &str) -> Option<PathBuf> {
    match xtask::ptxas::find_ptxas() {
        Some(p) => Some(p),
        None if required("CONVRS_REQUIRE_PTXAS") => panic!("CONVRS_REQUIRE_PTXAS=1 but ptxas was not found"),
        None => {
            shout(&format!(
                "SKIPPED `{test}`: ptxas not found (pip install nvidia-cuda-nvcc-cu12, or set CONVRS_PTXAS)"
            ));
            None
        }
    }
}

use convrs::{compare, conv2d, conv2d_cpu, conv2d_to, Algorithm, Comparison, Conv2d, DType, Gpu, Layout, Precision, Tensor};
use half::f16;
use proptest::prelude::*;

/// What `algo` requires of (N, C, K): each must be a multiple of the returned value (from the
/// registry; `Auto` requires nothing).
pub fn size_multiples(algo: Algorithm) -> (usize, usize, usize) {
    algo.kernel().map_or((1, 1, 1), |k| k.multiples)
}

/// Random conv2d problems for GPU property tests: odd sizes, 1x1 to 8x8 filters (1, 3 and 7
/// weighted up), padding up to 4, stride and dilation up to 3 (each axis on its own), batch 1 to
/// 4, and a seed for fresh random data. Only problems that validate are produced.
pub fn conv_problems() -> impl Strategy<Value = (Conv2d, u64)> {
    conv_problems_with((1, 1, 1))
}

/// [`conv_problems`] with N, C and K multiples of `(n, c, k)` (for kernels that need them).
/// Where N must be a multiple of 16 the spatial sizes shrink, so the f64 CPU reference stays
/// quick.
pub fn conv_problems_with((n_mult, c_mult, k_mult): (usize, usize, usize)) -> impl Strategy<Value = (Conv2d, u64)> {
    let filter = || prop_oneof![Just(1usize), Just(3), Just(7), 1usize..=8];
    let (max_c, max_k) = (20usize.div_ceil(c_mult).max(2), 13usize.div_ceil(k_mult).max(2));
    let (max_h, max_w) = if n_mult > 1 { (20usize, 24usize) } else { (50, 70) };
    (
        (1usize..=if n_mult > 1 { 2 } else { 4 }, 1usize..=max_c, 1usize..=max_h, 1usize..=max_w, 1usize..=max_k),
        (filter(), filter()),
        ((0usize..=4, 0usize..=4), (1usize..=3, 1usize..=3), (1usize..=3, 1usize..=3)),
        any::<u64>(),
    )
        .prop_map(move |((n, c, h, w, k), (r, s), (pad, stride, dilation), seed)| {
            (Conv2d { n: n * n_mult, c: c * c_mult, h, w, k: k * k_mult, r, s, pad, stride, dilation, precision: Default::default(), groups: 1, epilogue: Default::default() }, seed)
        })
        .prop_filter("filter must fit the padded input", |(p, _)| p.validate().is_ok())
}

/// Whether `algo` is a Hopper kernel on NCHW planes (`Producer::Planes`, `PlanePixels`), which
/// take only 1x1 filters at stride 1 without padding, on H*W a multiple of 8 (fp32: 4).
pub fn is_planes(algo: Algorithm) -> bool {
    matches!(algo, Algorithm::Wgmma(p) if p.producer.nchw_planes())
}

/// Whether `algo` is the Hopper kernel on NCHW rows (`Producer::PlaneRows`), which takes any
/// filter at column stride 1 on W and Q multiples of 8, one group.
pub fn is_plane_rows(algo: Algorithm) -> bool {
    matches!(algo, Algorithm::Wgmma(p) if p.producer == convrs_spec::hopper::Producer::PlaneRows)
}

/// Whether `algo` is the Hopper kernel on NCHW patches (`Producer::NchwPatch`), which takes
/// any filter at stride 1 on H*W a multiple of 8, one group, where its tile fits
/// (`convrs_spec::hopper::patch_geometry`).
pub fn is_nchw_patch(algo: Algorithm) -> bool {
    matches!(algo, Algorithm::Wgmma(p) if p.producer == convrs_spec::hopper::Producer::NchwPatch)
}

/// Random problems of the NCHW patch kernel's kind: batch 1 to 20, C 1 to 150 and K 1 to 200
/// (odd as often as not: C runs zero-padded to 8), W 1 to 48 and H a multiple of 8 / gcd(W, 8)
/// up to about 24 (so H*W is a multiple of 8), R 1 to 5, S 1, 3 or 5, padding 0 to 3 on each
/// axis, dilation 1 or 2 on each, stride 1; those whose tile does not fit are redrawn.
pub fn nchw_patch_problems() -> impl Strategy<Value = (Conv2d, u64)> {
    (
        (1usize..=20, 1usize..=150, 1usize..=200, 1usize..=48, 1usize..=24),
        (1usize..=5, prop_oneof![Just(1usize), Just(3), Just(5)]),
        ((0usize..=3, 0usize..=3), (1usize..=2, 1usize..=2)),
        any::<u64>(),
    )
        .prop_map(|((n, c, k, w, t), (r, s), ((ph, pw), (dh, dw)), seed)| {
            let step = 8 / gcd(w, 8);
            let h = step * t.div_ceil(step);
            (Conv2d { n, c, h, w, k, r, s, pad: (ph, pw), stride: (1, 1), dilation: (dh, dw), precision: Default::default(), groups: 1, epilogue: Default::default() }, seed)
        })
        .prop_filter("filter must fit the padded input", |(p, _)| p.validate().is_ok())
        .prop_filter("the tile must fit", |(p, _)| convrs_spec::hopper::patch_geometry(p.w, p.output_hw().1, p.r, p.s, p.dilation.0, p.dilation.1).is_some())
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Random problems of the NCHW row kernel's kind: batch 1 to 20, C and K odd as often as not
/// (C runs zero-padded to 8), W a multiple of 8 up to 40, H 1 to 20, R 1 to 5 and S 1, 3 or 5,
/// row padding 0 to 3, column padding keeping Q = W or Q = W + 8, row stride 1 or 2, dilation
/// 1 or 2 on each axis (the spatial sizes stay small so the f64 reference stays quick).
pub fn nchw_row_problems() -> impl Strategy<Value = (Conv2d, u64)> {
    (
        (1usize..=20, 1usize..=24, 1usize..=20, 1usize..=5, 1usize..=80),
        (1usize..=5, prop_oneof![Just(1usize), Just(3), Just(5)]),
        ((0usize..=3, any::<bool>()), 1usize..=2, (1usize..=2, 1usize..=2)),
        any::<u64>(),
    )
        .prop_map(|((n, c, h, w8, k), (r, s), ((ph, wide), stride, (dh, dw)), seed)| {
            let pw = dw * (s - 1) / 2 + if wide { 4 } else { 0 };
            (Conv2d { n, c, h, w: 8 * w8, k, r, s, pad: (ph, pw), stride: (stride, 1), dilation: (dh, dw), precision: Default::default(), groups: 1, epilogue: Default::default() }, seed)
        })
        .prop_filter("filter must fit the padded input", |(p, _)| p.validate().is_ok())
}

/// Random problems of the plane kernels' kind: 1x1, stride 1, unpadded, batch 1 to 20, C and K
/// odd as often as not (C runs zero-padded to 8, fp32: 4), H*W a multiple of `hw` (8, or 4 for
/// the fp32 kernels) with H or W odd, dilation (which a 1x1 filter ignores) 1 to 3.
pub fn conv_1x1_plane_problems(hw: usize) -> impl Strategy<Value = (Conv2d, u64)> {
    (1usize..=20, 1usize..=200, 1usize..=300, (1usize..=24, 1usize..=48 / hw, any::<bool>()), 1usize..=3, any::<u64>()).prop_map(move |(n, c, k, (free, steps, flip), dil, seed)| {
        let (h, w) = if flip { (free, hw * steps) } else { (hw * steps, free) };
        (Conv2d { n, c, h, w, k, r: 1, s: 1, pad: (0, 0), stride: (1, 1), dilation: (dil, dil), precision: Default::default(), groups: 1, epilogue: Default::default() }, seed)
    })
}

/// Random depthwise problems (groups = C): batch 1 to 20, C 1 to 48 (a multiple of 4 half the
/// time, the NHWC vector entries' case), multiplier K/C of 1 (most often) to 3, sizes 1 to 40,
/// filters 3, 5, 7 (the unrolled entries) or 1 to 9 per axis, padding up to 4, stride up to 3
/// and dilation up to 2 per axis, each 1 half the time (the register-window path).
pub fn depthwise_problems() -> impl Strategy<Value = (Conv2d, u64)> {
    let steps = |max: usize| prop_oneof![Just(1usize), 1usize..=max];
    let filter = || prop_oneof![Just(3usize), Just(5), Just(7), 1usize..=9];
    let channels = prop_oneof![(1usize..=12).prop_map(|c| 4 * c), 1usize..=48];
    let multiplier = prop_oneof![3 => Just(1usize), 1 => 2usize..=3];
    (
        (1usize..=20, channels, multiplier, 1usize..=40, 1usize..=40),
        prop_oneof![filter().prop_map(|r| (r, r)), (filter(), filter())],
        ((0usize..=4, 0usize..=4), (steps(3), steps(3)), (steps(2), steps(2))),
        any::<u64>(),
    )
        .prop_map(|((n, c, m, h, w), (r, s), (pad, stride, dilation), seed)| {
            (Conv2d { n, c, h, w, k: m * c, r, s, pad, stride, dilation, precision: Default::default(), groups: c, epilogue: Default::default() }, seed)
        })
        .prop_filter("filter must fit the padded input", |(p, _)| p.validate().is_ok())
}

/// Random depthwise problems the strip entries take: batch 1 to 20, sizes 1 to 40 (ragged against
/// the thread blocks, 4 x 4 to 2 x 4), square 3x3, 5x5 or 7x7 filters, padding up to the filter's
/// half or one beyond it (every thread on the border path on small images). For
/// `depthwise_nhwc_strip` (`nhwc`) C a multiple of 4 up to 64, K = C and stride 1; for
/// `depthwise_nchw_strip` any C up to 48, multiplier 1 (most often) or 2, stride 1 or 2.
pub fn depthwise_strip_problems(nhwc: bool) -> impl Strategy<Value = (Conv2d, u64)> {
    let channels = if nhwc { (1usize..=16).prop_map(|c| 4 * c).boxed() } else { (1usize..=48).boxed() };
    let multiplier = if nhwc { Just(1usize).boxed() } else { prop_oneof![3 => Just(1usize), 1 => Just(2usize)].boxed() };
    let stride = if nhwc { Just(1usize).boxed() } else { (1usize..=2).boxed() };
    (
        (1usize..=20, channels, multiplier, 1usize..=40, 1usize..=40),
        prop_oneof![Just(3usize), Just(5), Just(7)],
        (stride, 0usize..=4, 0usize..=4),
        any::<u64>(),
    )
        .prop_map(|((n, c, m, h, w), r, (stride, ph, pw), seed)| {
            let pad = (ph.min(r / 2 + 1), pw.min(r / 2 + 1));
            (Conv2d { n, c, h, w, k: m * c, r, s: r, pad, stride: (stride, stride), dilation: (1, 1), precision: Default::default(), groups: c, epilogue: Default::default() }, seed)
        })
        .prop_filter("filter must fit the padded input", |(p, _)| p.validate().is_ok())
}

/// Random depthwise problems the tile entries take: batch 1 to 12, sizes 1 to 60 (ragged against
/// the tiles, whose blocks the plane's size and the channels choose), square 3x3, 5x5 or 7x7
/// filters at stride 1 or 2, padding up to the filter's half or one beyond it, multiplier 1 and
/// C a multiple of 8 up to 320 (channel blocks partly past C; more channels a block on small
/// planes).
pub fn depthwise_tile_problems() -> impl Strategy<Value = (Conv2d, u64)> {
    (
        (1usize..=12, 1usize..=40, 1usize..=60, 1usize..=60),
        prop_oneof![Just(3usize), Just(5), Just(7)],
        (1usize..=2, 0usize..=4, 0usize..=4),
        any::<u64>(),
    )
        .prop_map(|((n, c8, h, w), r, (stride, ph, pw), seed)| {
            let (c, pad) = (8 * c8, (ph.min(r / 2 + 1), pw.min(r / 2 + 1)));
            (Conv2d { n, c, h, w, k: c, r, s: r, pad, stride: (stride, stride), dilation: (1, 1), precision: Default::default(), groups: c, epilogue: Default::default() }, seed)
        })
        .prop_filter("filter must fit the padded input", |(p, _)| p.validate().is_ok())
}

/// The random problems a property test of `algo` draws: [`conv_problems_with`] its multiples,
/// for the plane kernel [`conv_1x1_plane_problems`], for the row kernel [`nchw_row_problems`],
/// for the depthwise kernels
/// [`depthwise_problems`] ([`depthwise_strip_problems`] for the strip entries and
/// [`depthwise_tile_problems`] for the tile entries, which take only those).
pub fn problems_for(algo: Algorithm) -> BoxedStrategy<(Conv2d, u64)> {
    if is_planes(algo) {
        let fp32 = algo.kernel().is_some_and(|k| k.dtypes == [DType::F32]);
        conv_1x1_plane_problems(if fp32 { 4 } else { 8 }).boxed()
    } else if is_plane_rows(algo) {
        nchw_row_problems().boxed()
    } else if is_nchw_patch(algo) {
        nchw_patch_problems().boxed()
    } else if algo == Algorithm::DepthwiseNhwcTile {
        depthwise_tile_problems().boxed()
    } else if matches!(algo, Algorithm::DepthwiseNhwcStrip | Algorithm::DepthwiseNchwStrip) {
        depthwise_strip_problems(algo == Algorithm::DepthwiseNhwcStrip).boxed()
    } else if algo.family() == Some(convrs::registry::Family::Depthwise) {
        depthwise_problems().boxed()
    } else {
        conv_problems_with(size_multiples(algo)).boxed()
    }
}

/// The output element type a GPU check asks of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// The input's type (the default of `conv2d`): fp16/bf16 outputs rounded from the fp32
    /// accumulators by the tensor-core kernels.
    Input,
    /// fp32 (the accumulators unrounded; what every kernel can write).
    F32,
}

/// The relative L2 tolerance for a kernel reading `input` and writing `out`
/// (`convrs::bench::tolerance`: the fp32 accumulation, plus the output rounding of a 16-bit
/// output).
pub fn tolerance(input: DType, out: Out) -> f64 {
    convrs::bench::tolerance(input, if out == Out::F32 { DType::F32 } else { input })
}

/// Every (kernel, element type) pair of the registry that `keep` accepts: what the GPU tests
/// iterate, so a kernel added to the registry is tested without a hand list.
pub fn kernels(keep: impl Fn(&convrs::registry::KernelDesc) -> bool) -> Vec<(Algorithm, DType)> {
    let only = kernels_only();
    convrs::registry::KERNELS
        .iter()
        .filter(|k| keep(k) && only.as_ref().is_none_or(|names| names.iter().any(|n| n == k.name)))
        .flat_map(|k| k.dtypes.iter().map(move |&d| (k.algorithm, d)))
        .collect()
}

/// The kernels a developer restricted the GPU tests to (`CONVRS_TEST_KERNELS=name,name`, to spend
/// less device time on a change to those kernels), announced on stderr; `None` (every kernel)
/// when unset, as in CI and every full run. A name that is no registry kernel panics: a typo
/// would otherwise leave nothing to test, and every test would pass.
pub fn kernels_only() -> Option<Vec<String>> {
    let names = std::env::var("CONVRS_TEST_KERNELS").ok().filter(|v| !v.trim().is_empty())?;
    eprintln!("CONVRS_TEST_KERNELS: testing only {names}");
    let names: Vec<String> = names.split(',').map(|n| n.trim().to_string()).collect();
    for n in &names {
        assert!(convrs::registry::by_name(n).is_some(), "CONVRS_TEST_KERNELS names `{n}`, which is no kernel of the registry (`convrs list`)");
    }
    Some(names)
}

/// Runs `algo` on fresh random `dtype` data (the output poisoned with NaN first, inside
/// `conv2d`) and compares with the f64 CPU reference on the same inputs, the output in the
/// input's type. For fp16/bf16 kernels the inputs are rounded first and the reference sums the
/// rounded values, so only the kernel's own arithmetic (and its output rounding) is judged.
pub fn gpu_vs_cpu(gpu: &Gpu, algo: Algorithm, dtype: DType, p: &Conv2d, seed: u64) -> convrs::Result<Comparison> {
    gpu_vs_cpu_to(gpu, algo, dtype, p, seed, Out::Input)
}

/// [`gpu_vs_cpu`] with the output in `out`. A named kernel runs fp32 data at its own precision
/// (`KernelDesc::precision`); for a TF32 kernel the reference sums the inputs as the tensor
/// cores read them (each truncated to its upper 19 bits), so that, as for 16-bit data, only
/// the kernel's accumulation is judged ([`tolerance_of`]).
pub fn gpu_vs_cpu_to(gpu: &Gpu, algo: Algorithm, dtype: DType, p: &Conv2d, seed: u64, out: Out) -> convrs::Result<Comparison> {
    let x = Tensor::random(p.input_shape(), Layout::Nchw, seed)?;
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed ^ 0x9E37_79B9_7F4A_7C15)?;
    let p = &algo.kernel().map_or(*p, |k| p.with_precision(k.precision));
    match dtype {
        DType::F32 if p.precision == Precision::Tf32 => {
            let tf32 = |t: &Tensor<f32>| t.map(|v| f32::from_bits(v.to_bits() & !0x1FFF));
            run_and_compare(gpu, algo, p, &x, &w, (&tf32(&x), &tf32(&w)), out)
        }
        DType::F32 => run_and_compare(gpu, algo, p, &x, &w, (&x, &w), out),
        DType::F16 => {
            let (x, w) = (x.map(f16::from_f32), w.map(f16::from_f32));
            run_and_compare(gpu, algo, p, &x, &w, (&x, &w), out)
        }
        DType::BF16 => {
            let (x, w) = (x.map(half::bf16::from_f32), w.map(half::bf16::from_f32));
            run_and_compare(gpu, algo, p, &x, &w, (&x, &w), out)
        }
    }
}

/// The tolerance of `algo` on `dtype` data writing `out`: [`tolerance`], except for a TF32
/// kernel judged against the truncated inputs' reference ([`gpu_vs_cpu_to`]): its products of
/// 11-bit significands are exact in fp32, so only the tensor cores' fp32 accumulation rounds, as
/// for 16-bit inputs (`FP16_REL_L2_TOLERANCE`).
pub fn tolerance_of(algo: Algorithm, dtype: DType, out: Out) -> f64 {
    match (dtype, algo.kernel().map(|k| k.precision)) {
        (DType::F32, Some(Precision::Tf32)) => convrs::bench::FP16_REL_L2_TOLERANCE,
        _ => tolerance(dtype, out),
    }
}

fn run_and_compare<T: convrs::Element>(gpu: &Gpu, algo: Algorithm, p: &Conv2d, x: &Tensor<T>, w: &Tensor<T>, reference_inputs: (&Tensor<T>, &Tensor<T>), out: Out) -> convrs::Result<Comparison> {
    let reference = conv2d_cpu(p, reference_inputs.0, reference_inputs.1)?;
    Ok(match out {
        Out::Input => compare(conv2d(gpu, algo, p, x, w)?.data(), reference.data()),
        Out::F32 => compare(conv2d_to::<T, f32>(gpu, algo, p, x, w)?.data(), reference.data()),
    })
}

/// Each of `shapes` through `algo` on `dtype` data writing both output types (the input's and
/// fp32), on fresh data from `seed`: every output written and within [`tolerance`] of the CPU
/// reference.
pub fn check_shapes_both_outputs(gpu: &Gpu, algo: Algorithm, dtype: DType, shapes: &[Conv2d], seed: u64) {
    for p in shapes {
        for out in [Out::Input, Out::F32] {
            let c = gpu_vs_cpu_to(gpu, algo, dtype, p, seed, out).unwrap_or_else(|e| panic!("{algo} ({dtype}) on {p} ({out:?} output): {e}"));
            assert_eq!(c.non_finite, 0, "{algo} ({dtype}) on {p} ({out:?} output): {c}");
            assert!(c.rel_l2_err <= tolerance_of(algo, dtype, out), "{algo} ({dtype}) on {p} ({out:?} output): {c}");
        }
    }
}

/// Property test: `cases` random problems (see [`problems_for`]) through `algo` on `dtype` data, each within [`tolerance`] of the CPU reference with
/// every output written; the output type alternates with the case's seed (the input's type, or
/// fp32), so a 16-bit kernel is checked writing both. Problems the algorithm reports as
/// unsupported are counted and must stay a minority.
pub fn property_test_gpu(gpu: &Gpu, algo: Algorithm, dtype: DType, cases: u32) {
    property_test_gpu_on(gpu, algo, dtype, cases, problems_for(algo), "random problems");
}

/// [`property_test_gpu`] on the problems `problems` draws (`what` names them in the report).
pub fn property_test_gpu_on(gpu: &Gpu, algo: Algorithm, dtype: DType, cases: u32, problems: BoxedStrategy<(Conv2d, u64)>, what: &str) {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let ran = std::cell::Cell::new(0u32);
    let unsupported = std::cell::Cell::new(0u32);
    let f32_outputs = std::cell::Cell::new(0u32);
    let result = runner.run(&problems, |(p, seed)| {
        let out = if seed & 1 == 1 { Out::F32 } else { Out::Input };
        match gpu_vs_cpu_to(gpu, algo, dtype, &p, seed, out) {
            Err(convrs::Error::Unsupported { .. }) => unsupported.set(unsupported.get() + 1),
            Err(e) => return Err(TestCaseError::fail(format!("{algo} ({dtype}) on {p} ({out:?} output): {e}"))),
            Ok(c) => {
                prop_assert_eq!(c.non_finite, 0, "{} ({}) on {} ({:?} output): {} outputs not written or not finite ({})", algo, dtype, p, out, c.non_finite, c);
                prop_assert!(c.rel_l2_err <= tolerance_of(algo, dtype, out), "{} ({}) on {} ({:?} output): {}", algo, dtype, p, out, c);
            }
        }
        ran.set(ran.get() + 1);
        f32_outputs.set(f32_outputs.get() + u32::from(out == Out::F32));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{algo} ({dtype}): {e}");
    }
    shout(&format!(
        "{algo} ({dtype}): {} {what} checked on the GPU ({} with fp32 outputs, the rest in the input's type), {} unsupported",
        ran.get(),
        f32_outputs.get(),
        unsupported.get()
    ));
    assert!(ran.get() >= cases, "only {} of {cases} cases ran", ran.get());
    assert!(unsupported.get() * 4 <= ran.get(), "{algo} ({dtype}) refused {} of {} problems", unsupported.get(), ran.get());
}

/// The 16-bit epilogue of `algo` on `dtype` (fp16 or bf16) data rounds, and only rounds: on the
/// same data its 16-bit output is bit for bit the round-to-nearest-even of its own fp32 output
/// (the mainloop's sums do not depend on the output type), on ragged shapes whose edges predicate
/// the stores (C and K not multiples of 8 run zero-padded). Panics on the first shape that differs.
pub fn check_sixteen_bit_rounding(gpu: &Gpu, algo: Algorithm, dtype: DType) {
    let shapes: Vec<Conv2d> = sixteen_bit_rounding_shapes().to_vec();
    check_sixteen_bit_rounding_on(gpu, algo, dtype, &shapes, &rounding_shapes_taken(algo));
}

/// [`check_sixteen_bit_rounding`] on `shapes` (those at the indices `taken`).
pub fn check_sixteen_bit_rounding_on(gpu: &Gpu, algo: Algorithm, dtype: DType, shapes: &[Conv2d], taken: &[usize]) {
    match dtype {
        DType::F16 => sixteen_bit_rounding::<f16>(gpu, algo, shapes, taken),
        DType::BF16 => sixteen_bit_rounding::<half::bf16>(gpu, algo, shapes, taken),
        DType::F32 => panic!("{algo}: fp32 is not a 16-bit type"),
    }
}

/// The shapes [`check_sixteen_bit_rounding`] runs: K ragged against every tile width, C and K
/// not multiples of 8 in the last; every reduction spans at least two 64-wide k-tiles, so the
/// split-K kernels take them too.
pub fn sixteen_bit_rounding_shapes() -> [Conv2d; 4] {
    [Conv2d::new(3, 24, 13, 11, 40, 3, 3).with_pad(1), Conv2d::new(2, 136, 20, 20, 136, 1, 1), Conv2d::new(1, 5, 9, 9, 7, 3, 3), Conv2d::new(2, 20, 11, 16, 40, 3, 3).with_pad(1)]
}

/// Which of [`sixteen_bit_rounding_shapes`] `algo` is checked on: the first three, but the
/// plane kernel's the 1x1 one and the row kernel's the last (W a multiple of 8).
pub fn rounding_shapes_taken(algo: Algorithm) -> Vec<usize> {
    if is_planes(algo) {
        vec![1]
    } else if is_plane_rows(algo) || is_nchw_patch(algo) {
        vec![3]
    } else {
        vec![0, 1, 2]
    }
}

fn sixteen_bit_rounding<T: convrs::Element>(gpu: &Gpu, algo: Algorithm, shapes: &[Conv2d], taken: &[usize]) {
    for (i, p) in shapes.iter().enumerate() {
        // The plane kernel takes only the 1x1 shape ([`rounding_shapes_taken`]).
        if !taken.contains(&i) {
            continue;
        }
        let x = Tensor::random(p.input_shape(), Layout::Nchw, 50 + i as u64).unwrap().map(T::from_f32);
        let w = Tensor::random(p.filter_shape(), Layout::Nchw, 60 + i as u64).unwrap().map(T::from_f32);
        let y32 = conv2d_to::<T, f32>(gpu, algo, p, &x, &w).unwrap();
        assert!(y32.data().iter().all(|v| v.is_finite()), "{algo} on {p}: fp32 output not all written");
        let y16 = conv2d(gpu, algo, p, &x, &w).unwrap();
        // Bit for bit: widening a 16-bit value to f64 is exact and one-to-one (signed zeros too),
        // and the rounded side is never NaN, so equal f64 bits mean equal 16-bit patterns.
        let bits = |v: T| Into::<f64>::into(v).to_bits();
        let wrong = y16.data().iter().zip(y32.data()).filter(|&(&a, &b)| bits(a) != bits(T::from_f32(b))).count();
        assert_eq!(wrong, 0, "{algo} on {p}: {wrong} of {} 16-bit outputs are not the rounded fp32 outputs", y16.data().len());
    }
}

/// The repository README's Rust examples compile as doc tests (`no_run`: they need a GPU).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct RepositoryReadmeExamples;

/// Short fp32 reductions (C*R*S from 64 to 512) on which the 3xTF32 kernels once lost to FMA
/// in accuracy (issue 24: e.g. 8,64,56,56 -> 256 1x1, 2.4e-7 against 1.4e-7), each to be run
/// by every 3xTF32 kernel that takes it: 1x1 layers of 2, 4 and 6 k-tiles (each k-step summed
/// apart), of 8 and 16 (each k-tile), and a 3x3 layer of 16 channels (9 half k-tiles).
pub fn short_reduction_shapes() -> [Conv2d; 6] {
    [
        Conv2d::new(8, 64, 56, 56, 256, 1, 1),
        Conv2d::new(4, 128, 28, 28, 512, 1, 1),
        Conv2d::new(4, 192, 28, 28, 64, 1, 1),
        Conv2d::new(2, 256, 14, 14, 256, 1, 1),
        Conv2d::new(2, 512, 14, 14, 256, 1, 1),
        Conv2d::new(4, 16, 24, 60, 32, 3, 3).with_pad(1),
    ]
}

/// Issue 24's criterion for `Precision::Fp32`, "accuracy no worse than our FMA kernels": each of
/// `x3` (3xTF32 kernels) on each of `shapes` it takes, against the f64 reference, has a relative
/// L2 error no larger than the more accurate of the FMA kernels `tiled_nchw` and `direct_smem`
/// on the same data (the same seed). No tolerance of its own: the FMA kernels' error is the
/// bound. Returns how many (kernel, shape) pairs ran, so a caller can insist that some did.
pub fn check_as_accurate_as_fma(gpu: &Gpu, x3: &[Algorithm], shapes: &[Conv2d]) -> usize {
    let fma = ["tiled_nchw", "direct_smem"].map(|n| convrs::registry::by_name(n).expect("an FMA kernel of the registry").algorithm);
    let mut ran = 0;
    for (i, p) in shapes.iter().enumerate() {
        let seed = 0x3_7F32 + i as u64;
        let bound = fma
            .iter()
            .filter_map(|&a| gpu_vs_cpu(gpu, a, DType::F32, p, seed).ok())
            .map(|c| c.rel_l2_err)
            .fold(f64::INFINITY, f64::min);
        assert!(bound.is_finite() && bound > 0.0, "{p}: no FMA kernel ran");
        for &algo in x3 {
            match gpu_vs_cpu(gpu, algo, DType::F32, p, seed) {
                Ok(c) => {
                    eprintln!("{algo} on {p}: rel L2 {:.3e}, FMA {bound:.3e}", c.rel_l2_err);
                    assert!(c.rel_l2_err <= bound, "{algo} on {p}: rel L2 {:.3e} against the FMA kernels' {bound:.3e}", c.rel_l2_err);
                    ran += 1;
                }
                Err(convrs::Error::Unsupported { .. }) => {}
                Err(e) => panic!("{algo} on {p}: {e}"),
            }
        }
    }
    ran
}
