//! GPU tests of the fused epilogue (`y = act(alpha * conv * scale[k] + bias[k] + beta *
//! residual)`) on every kernel that fuses it (the warp-specialized Hopper kernels, the
//! depthwise ones, `wmma_smallc` and `wmma_patch`, from the registry) in every element type and both output types, against the
//! f64 CPU reference (`conv2d_cpu` then `reference::apply_epilogue` on the same rounded inputs
//! and residual), NaN-poisoned outputs; and the refusals (CPU and GPU). Without a GPU (or, for
//! the Hopper kernels, a Hopper) each GPU test announces that it was skipped.

use convrs::bench::EpilogueData;
use convrs::epilogue::{Activation, Epilogue};
use convrs::prepared::EpilogueTensors;
use convrs::registry::Family;
use convrs::{compare, conv2d_cpu, conv2d_fused, Algorithm, Comparison, Conv2d, DType, DeviceModel, Element, Error, Gpu, Layout, Precision, Tensor};
use convrs_tests::{gpu_or_skip, hopper_or_skip, kernels, problems_for, shout, tolerance_of, Out};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// The fusing kernels with the element types they read; `hopper` says whether to take the
/// Hopper ones (which need compute capability 9.0) or the others.
fn fusing(hopper: bool) -> Vec<(Algorithm, DType)> {
    kernels(|k| k.fuses_epilogue() && matches!(k.algorithm, Algorithm::Wgmma(_)) == hopper)
}

/// A problem the kernel runs, at the kernel's own precision for fp32 data (TF32 kernels).
fn at_kernel_precision(algo: Algorithm, p: Conv2d) -> Conv2d {
    algo.kernel().map_or(p, |k| p.with_precision(k.precision))
}

/// Runs `algo` on `p` (with its epilogue) on fresh `T` data from `seed`, writing `O`, and
/// compares with the reference: the bare convolution of the same (rounded; for TF32 kernels
/// truncated) inputs in f64, then the epilogue in f64 on the same operands. Returns the
/// comparison and the tolerance it must meet:
/// the kernel's bare tolerance (accumulation, output rounding) scaled by how much the
/// epilogue can enlarge the sum's error relative to the output (the largest |alpha * scale|
/// times the activation's slope, over the ratio of the outputs' norms), plus the epilogue's own
/// arithmetic.
fn fused_vs_cpu<T: Element, O: Element>(gpu: &Gpu, algo: Algorithm, p: &Conv2d, seed: u64, out: Out, round: impl Fn(f32) -> T) -> convrs::Result<(Comparison, f64)> {
    let x = Tensor::random(p.input_shape(), Layout::Nhwc, seed)?.map(&round);
    let w = Tensor::random(p.filter_shape(), Layout::Nhwc, seed ^ 0x9E37_79B9_7F4A_7C15)?.map(&round);
    // The bench's operands (scale in [0.5, 1.5], bias in [-1, 1)), the residual times 4 (the
    // size of a sum of a few dozen products), rounded to the output's type as the kernel reads it.
    let mut data = EpilogueData::random(p, seed)?;
    data.residual = data.residual.map(|r| r.map(|v| 4.0 * v));
    let data = data.rounded::<O>();
    let tensors = EpilogueTensors { scale: data.scale.as_deref(), bias: data.bias.as_deref(), residual: data.residual.as_ref() };
    let y: Tensor<O> = conv2d_fused(gpu, algo, p, &x, &w, &tensors)?;
    // The reference reads what the tensor cores read: fp32 data truncated to TF32 by a TF32 kernel.
    let tf32 = |t: &Tensor<T>| t.map(|v| v.into()).map(|v: f64| if p.precision == Precision::Tf32 && T::DTYPE == DType::F32 { f32::from_bits((v as f32).to_bits() & !0x1FFF) as f64 } else { v });
    let conv = conv2d_cpu(&Conv2d { epilogue: Epilogue::NONE, ..*p }, &tf32(&x), &tf32(&w))?;
    let reference = data.reference(p, conv.clone())?;
    let tol = data.tolerance(p, tolerance_of(algo, T::DTYPE, out), &conv, &reference);
    Ok((compare(y.data(), reference.data()), tol))
}

/// [`fused_vs_cpu`] for `dtype` data writing the input's type or fp32.
fn check(gpu: &Gpu, algo: Algorithm, dtype: DType, p: &Conv2d, seed: u64, out: Out) -> convrs::Result<(Comparison, f64)> {
    use half::{bf16, f16};
    match (dtype, out) {
        (DType::F32, _) => fused_vs_cpu::<f32, f32>(gpu, algo, p, seed, out, |v| v),
        (DType::F16, Out::Input) => fused_vs_cpu::<f16, f16>(gpu, algo, p, seed, out, f16::from_f32),
        (DType::F16, Out::F32) => fused_vs_cpu::<f16, f32>(gpu, algo, p, seed, out, f16::from_f32),
        (DType::BF16, Out::Input) => fused_vs_cpu::<bf16, bf16>(gpu, algo, p, seed, out, bf16::from_f32),
        (DType::BF16, Out::F32) => fused_vs_cpu::<bf16, f32>(gpu, algo, p, seed, out, bf16::from_f32),
    }
}

/// Random epilogues: each activation, each of scale, bias and residual half the time, alpha 1
/// most often (else 0.5 or -2), beta 1 most often (else 0.25 or -1).
fn epilogues() -> impl Strategy<Value = Epilogue> {
    let act = prop::sample::select(Activation::ALL.to_vec());
    let alpha = prop_oneof![2 => Just(1.0f32), 1 => Just(0.5), 1 => Just(-2.0)];
    let beta = prop_oneof![2 => Just(1.0f32), 1 => Just(0.25), 1 => Just(-1.0)];
    (act, any::<(bool, bool, bool)>(), alpha, beta).prop_map(|(act, (scale, bias, residual), alpha, beta)| {
        let mut ep = Epilogue::NONE.with_activation(act).with_alpha(alpha).with_beta(beta);
        (ep.scale, ep.bias, ep.residual) = (scale, bias, residual);
        ep
    })
}

/// `cases` random problems of `algo`'s kind, each with a random epilogue, the output type
/// alternating with the seed; every output written and within tolerance.
fn property_test(gpu: &Gpu, algo: Algorithm, dtype: DType, cases: u32) {
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let (ran, refused) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let result = runner.run(&(problems_for(algo), epilogues()), |((p, seed), ep)| {
        let p = at_kernel_precision(algo, p.with_epilogue(ep));
        let out = if seed & 1 == 1 || dtype == DType::F32 { Out::F32 } else { Out::Input };
        match check(gpu, algo, dtype, &p, seed, out) {
            Err(Error::Unsupported { .. }) => refused.set(refused.get() + 1),
            Err(e) => return Err(TestCaseError::fail(format!("{algo} ({dtype}) on {p}: {e}"))),
            Ok((c, tol)) => {
                prop_assert_eq!(c.non_finite, 0, "{} ({}) on {} ({:?} output): {}", algo, dtype, p, out, c);
                prop_assert!(c.rel_l2_err <= tol, "{} ({}) on {} ({:?} output): {} (tolerance {:.2e})", algo, dtype, p, out, c, tol);
            }
        }
        ran.set(ran.get() + 1);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{algo} ({dtype}): {e}");
    }
    shout(&format!("{algo} ({dtype}): {} random problems with random fused epilogues checked on the GPU, {} refused", ran.get(), refused.get()));
    assert!(refused.get() * 4 <= ran.get(), "{algo} ({dtype}) refused {} of {} problems", refused.get(), ran.get());
}

/// Every activation with scale, bias and residual (alpha 0.5, beta -1), both output types, on
/// `shapes` (those the kernel takes).
fn every_activation(gpu: &Gpu, algo: Algorithm, dtype: DType, shapes: &[Conv2d]) {
    let k = algo.kernel().unwrap();
    let mut ran = 0;
    for (i, shape) in shapes.iter().enumerate() {
        for (j, act) in Activation::ALL.into_iter().enumerate() {
            let ep = Epilogue::NONE.with_scale().with_bias().with_residual().with_activation(act).with_alpha(0.5).with_beta(-1.0);
            let p = at_kernel_precision(algo, shape.with_epilogue(ep));
            if k.plan(&k.run_problem(&p), dtype, gpu.model()).is_err() {
                continue;
            }
            for out in [Out::Input, Out::F32] {
                if dtype == DType::F32 && out == Out::Input {
                    continue;
                }
                let (c, tol) = check(gpu, algo, dtype, &p, (100 * i + j) as u64, out).unwrap_or_else(|e| panic!("{algo} ({dtype}) on {p}: {e}"));
                assert_eq!(c.non_finite, 0, "{algo} ({dtype}) on {p} ({out:?} output): {c}");
                assert!(c.rel_l2_err <= tol, "{algo} ({dtype}) on {p} ({out:?} output): {c} (tolerance {tol:.2e})");
                ran += 1;
            }
        }
    }
    assert!(ran >= Activation::ALL.len(), "{algo} ({dtype}) took only {ran} of the named shapes' runs");
}

/// Shapes of the Hopper kernels' paths: 128x256 and 128x64 tiles with ragged M, several tiles a
/// persistent block, a long reduction for split-K (and a short one), the NCHW 1x1 planes, W a
/// multiple of 8 (the NCHW rows), a grouped layer (ResNeXt's 4 channels a group, run in merged
/// groups), and the NCHW store's runs (steps 16 and 17: P*Q, or Q for step 17, in runs of 8, 4,
/// 2 or 1 pixels: 14x14 and 13x11 above, 9x10 and 8x10 and 8x5 here).
fn hopper_shapes() -> Vec<Conv2d> {
    vec![
        Conv2d::new(2, 128, 12, 10, 128, 3, 3).with_pad(1).with_groups(32),
        Conv2d::new(2, 64, 14, 14, 264, 3, 3).with_pad(1),
        Conv2d::new(3, 40, 13, 11, 72, 3, 3).with_pad(1),
        Conv2d::new(12, 72, 31, 29, 136, 3, 3).with_pad(1),
        Conv2d::new(1, 832, 7, 7, 128, 5, 5).with_pad(2),
        Conv2d::new(3, 72, 9, 11, 40, 1, 1),
        Conv2d::new(2, 136, 8, 9, 200, 1, 1),
        Conv2d::new(2, 40, 11, 16, 72, 3, 3).with_pad(1),
        Conv2d::new(2, 64, 9, 10, 40, 1, 1),
        Conv2d::new(2, 64, 8, 10, 40, 3, 3).with_pad(1),
        Conv2d::new(1, 16, 8, 5, 24, 3, 3).with_pad(1),
    ]
}

/// The NCHW 1x1 plane kernels on planes whose H*W is even but not a multiple of 8 (copied by
/// cp.async, the stores in runs of 4 and 2 pixels): the register epilogues they take, a
/// residual too, both output types; and what they refuse (odd planes, other epilogues there).
#[test]
fn hopper_grouped_planes_fuse_register_epilogues() {
    let Some(gpu) = hopper_or_skip("hopper_grouped_planes_fuse_register_epilogues") else { return };
    let cases = [
        (Conv2d::new(3, 128, 14, 14, 72, 1, 1), "scale+bias+residual+relu6"),
        (Conv2d::new(2, 192, 6, 5, 64, 1, 1), "bias+residual+leaky_relu:0.1+alpha=0.5+beta=-1"),
        (Conv2d::new(5, 40, 10, 5, 136, 1, 1), "bias+relu"),
        (Conv2d::new(7, 72, 14, 14, 200, 1, 1), "scale+bias"),
    ];
    let mut ran = 0;
    for (algo, dtype) in fusing(true).into_iter().filter(|&(a, d)| convrs_tests::is_planes(a) && d != DType::F32) {
        for (i, (shape, ep)) in cases.iter().enumerate() {
            let p = shape.with_epilogue(ep.parse().unwrap());
            for out in [Out::Input, Out::F32] {
                let (c, tol) = check(&gpu, algo, dtype, &p, 40 + i as u64, out).unwrap_or_else(|e| panic!("{algo} ({dtype}) on {p}: {e}"));
                assert_eq!(c.non_finite, 0, "{algo} ({dtype}) on {p} ({out:?} output): {c}");
                assert!(c.rel_l2_err <= tol, "{algo} ({dtype}) on {p} ({out:?} output): {c} (tolerance {tol:.2e})");
                ran += 1;
            }
        }
        for refused in [Conv2d::new(6, 64, 7, 7, 136, 1, 1), Conv2d::new(3, 128, 14, 14, 72, 1, 1).with_epilogue("bias+silu".parse().unwrap())] {
            assert!(matches!(algo.plan(&refused, dtype, gpu.model()), Err(Error::Unsupported { .. })), "{algo} took {refused}");
        }
    }
    assert!(ran >= 16, "only {ran} runs");
    shout(&format!("grouped planes: {ran} fused runs checked on the GPU"));
}

/// Depthwise shapes: each compiled filter size, stride 2, a multiplier of 2, C not a multiple
/// of 4, ragged tiles.
fn depthwise_shapes() -> Vec<Conv2d> {
    let dw = |n, c, hw, r: usize, stride| Conv2d::new(n, c, hw, hw, c, r, r).with_pad(r / 2).with_stride(stride).with_groups(c);
    vec![dw(2, 32, 23, 3, 1), dw(3, 30, 17, 5, 2), dw(2, 48, 14, 7, 1), Conv2d::new(2, 8, 13, 11, 16, 3, 3).with_pad(1).with_groups(8), dw(1, 12, 9, 9, 1)]
}

#[test]
fn hopper_epilogues_match_cpu_on_random_problems() {
    let Some(gpu) = hopper_or_skip("hopper_epilogues_match_cpu_on_random_problems") else { return };
    for (algo, dtype) in fusing(true) {
        property_test(&gpu, algo, dtype, 24);
    }
}

#[test]
fn hopper_epilogues_match_cpu_for_every_activation() {
    let Some(gpu) = hopper_or_skip("hopper_epilogues_match_cpu_for_every_activation") else { return };
    for (algo, dtype) in fusing(true) {
        every_activation(&gpu, algo, dtype, &hopper_shapes());
    }
}

/// Few-channel shapes (`wmma_smallc`, `wmma_patch`): C = 1 and 3, a 5x20 speech filter with stride 2, ragged
/// rows and columns, K of one and several column tiles.
fn small_c_shapes() -> Vec<Conv2d> {
    vec![
        Conv2d::new(2, 1, 23, 37, 16, 5, 5).with_pad(2),
        Conv2d::new(2, 3, 17, 19, 24, 3, 3).with_pad(1).with_stride(2),
        Conv2d::new(1, 1, 30, 70, 72, 5, 20).with_stride(2),
    ]
}

/// The fusing kernels that run on any GPU (depthwise, few channels), on the random problems of
/// their kind.
#[test]
fn other_epilogues_match_cpu_on_random_problems() {
    let Some(gpu) = gpu_or_skip("other_epilogues_match_cpu_on_random_problems") else { return };
    for (algo, dtype) in fusing(false) {
        property_test(&gpu, algo, dtype, 48);
    }
}

#[test]
fn other_epilogues_match_cpu_for_every_activation() {
    let Some(gpu) = gpu_or_skip("other_epilogues_match_cpu_for_every_activation") else { return };
    for (algo, dtype) in fusing(false) {
        let shapes = if algo.family() == Some(Family::Depthwise) { depthwise_shapes() } else { small_c_shapes() };
        every_activation(&gpu, algo, dtype, &shapes);
    }
}

/// Missing, unasked-for or wrongly sized operands are errors before anything launches.
#[test]
fn epilogue_operands_are_checked() {
    let Some(gpu) = gpu_or_skip("epilogue_operands_are_checked") else { return };
    let p = Conv2d::new(1, 8, 6, 6, 8, 3, 3).with_pad(1).with_groups(8);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 1).unwrap();
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 2).unwrap();
    let bias = vec![0.0f32; 8];
    let short = vec![0.0f32; 7];
    let with_bias = p.with_epilogue(Epilogue::NONE.with_bias());
    let run = |p: &Conv2d, ops: &EpilogueTensors<'_, f32>| conv2d_fused::<f32, f32>(&gpu, Algorithm::DepthwiseNchw, p, &x, &w, ops).map(|_| ()).unwrap_err().to_string();
    assert!(run(&with_bias, &EpilogueTensors::none()).contains("reads a bias, and none was given"));
    assert!(run(&p, &EpilogueTensors { bias: Some(&bias), ..EpilogueTensors::none() }).contains("does not read one"));
    assert!(run(&with_bias, &EpilogueTensors { bias: Some(&short), ..EpilogueTensors::none() }).contains("7 elements but the problem needs 8"));
    let res = Tensor::random([1, 8, 5, 6], Layout::Nchw, 3).unwrap();
    let with_res = p.with_epilogue(Epilogue::NONE.with_residual());
    assert!(run(&with_res, &EpilogueTensors { residual: Some(&res), ..EpilogueTensors::none() }).contains("residual dims"));
}

/// A kernel that does not fuse refuses a problem with an epilogue, naming those that do; Auto
/// picks one that fuses; an activation-only epilogue needs no operands.
#[test]
fn kernels_without_a_fused_epilogue_refuse_it() {
    let d = DeviceModel::named("h100").unwrap();
    let p = Conv2d::new(8, 64, 28, 28, 64, 3, 3).with_pad(1).with_epilogue(Epilogue::NONE.with_bias().with_activation(Activation::Relu));
    let e = Algorithm::WmmaNhwc.plan(&p, DType::F16, &d).unwrap_err().to_string();
    assert!(e.contains("no fused epilogue") && e.contains("wgmma_ws_tma_persistent") && e.contains("depthwise_nhwc"), "{e}");
    let pick = convrs::select::choose(&p, DType::F16, Layout::Nhwc, &d).unwrap().pick;
    assert!(pick.kernel().unwrap().fuses_epilogue(), "{pick}");
    assert_eq!(Algorithm::DepthwiseNhwc.kernel().unwrap().family, Family::Depthwise);
    // fp32 FMA precision: no fusing kernel computes it (the TF32 ones are less accurate).
    let fma = p.with_precision(Precision::Fma);
    assert!(convrs::select::choose(&fma, DType::F32, Layout::Nchw, &d).is_err());
}
