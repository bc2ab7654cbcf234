//! The automatic choice on the GPU: `conv2d` with `Algorithm::Auto` on random problems, fp32
//! tensors in NCHW and fp16 tensors in NHWC, each checked against the f64 CPU reference into a
//! NaN-poisoned output (fp16 channel counts that are no multiple of 8 run zero-padded); random
//! invalid problems get errors, never a panic or a launch.

use convrs::bench::tolerance;
use convrs::{compare, conv2d, conv2d_cpu, select, Algorithm, Conv2d, DType, Layout, Tensor};
use convrs_tests::{conv_problems_with, gpu_or_skip, property_test_gpu};
use half::f16;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[test]
fn auto_matches_cpu_on_random_fp32_problems() {
    let Some(gpu) = gpu_or_skip("auto_matches_cpu_on_random_fp32_problems") else { return };
    property_test_gpu(&gpu, Algorithm::Auto, DType::F32, 48);
}

#[test]
fn auto_matches_cpu_on_random_fp16_nhwc_problems() {
    let Some(gpu) = gpu_or_skip("auto_matches_cpu_on_random_fp16_nhwc_problems") else { return };
    let mut runner = TestRunner::new(Config { cases: 32, failure_persistence: None, ..Config::default() });
    let result = runner.run(&conv_problems_with((1, 1, 1)), |(p, seed)| {
        let pick = select::choose(&p, DType::F16, Layout::Nhwc, gpu.model()).map_err(|e| TestCaseError::fail(format!("{p}: {e}")))?.pick;
        let x = Tensor::random(p.input_shape(), Layout::Nchw, seed).unwrap().map(f16::from_f32).to_layout(Layout::Nhwc).unwrap();
        let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed + 1).unwrap().map(f16::from_f32).to_layout(Layout::Nhwc).unwrap();
        let y = conv2d(&gpu, Algorithm::Auto, &p, &x, &w).map_err(|e| TestCaseError::fail(format!("{p}: {e}")))?;
        let c = compare(y.data(), conv2d_cpu(&p, &x, &w).unwrap().data());
        prop_assert!(c.passes(tolerance(DType::F16, DType::F16)), "auto ({pick}) on {p}: {c}");
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn auto_refuses_invalid_problems_and_pads_small_channel_counts() {
    let Some(gpu) = gpu_or_skip("auto_refuses_invalid_problems_and_pads_small_channel_counts") else { return };
    let bad = [Conv2d::new(1, 1, 4, 4, 1, 7, 7), Conv2d::new(0, 1, 4, 4, 1, 1, 1), Conv2d { stride: (0, 1), ..Conv2d::new(1, 1, 4, 4, 1, 1, 1) }];
    for p in bad {
        let x = Tensor::from_fn(p.input_shape(), Layout::Nchw, |_, _, _, _| 1.0f32);
        let w = Tensor::from_fn(p.filter_shape(), Layout::Nchw, |_, _, _, _| 1.0f32);
        if let (Ok(x), Ok(w)) = (x, w) {
            assert!(conv2d(&gpu, Algorithm::Auto, &p, &x, &w).is_err(), "{p}");
        }
    }
    // fp16 with C = 3, K = 6 (a first layer): the tensor-core kernels run it padded to 8 channels.
    let p = Conv2d::new(2, 3, 9, 9, 6, 3, 3);
    let x = Tensor::random(p.input_shape(), Layout::Nhwc, 1).unwrap().map(f16::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nhwc, 2).unwrap().map(f16::from_f32);
    let y = conv2d(&gpu, Algorithm::Auto, &p, &x, &w).unwrap();
    let c = compare(y.data(), conv2d_cpu(&p, &x, &w).unwrap().data());
    assert!(c.passes(tolerance(DType::F16, DType::F16)), "{p}: {c}");
}

/// Autotuning times every candidate once (padded ones on their padded problem), remembers the
/// winner in the cache file, answers from it the second time, and its pick computes right.
#[test]
fn tuning_times_once_then_answers_from_the_cache() {
    let Some(gpu) = gpu_or_skip("tuning_times_once_then_answers_from_the_cache") else { return };
    let dir = std::env::temp_dir().join(format!("convrs-tune-test-{}", std::process::id()));
    // SAFETY: set before this process reads it (the cache loads at first use, in this test alone).
    unsafe { std::env::set_var("CONVRS_TUNE_CACHE", dir.join("tune.json")) };
    let p = Conv2d::new(4, 3, 20, 20, 16, 3, 3).with_pad(1);
    let first = select::tune(&gpu, &p, DType::F16, Layout::Nhwc).unwrap();
    assert!(!first.from_cache && !first.times_us.is_empty(), "{first:?}");
    let second = select::tune(&gpu, &p, DType::F16, Layout::Nhwc).unwrap();
    assert!(second.from_cache && second.pick == first.pick, "{second:?}");
    assert!(dir.join("tune.json").is_file());
    let x = Tensor::random(p.input_shape(), Layout::Nhwc, 5).unwrap().map(f16::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nhwc, 6).unwrap().map(f16::from_f32);
    let y = conv2d(&gpu, first.pick, &p, &x, &w).unwrap();
    let c = compare(y.data(), conv2d_cpu(&p, &x, &w).unwrap().data());
    assert!(c.passes(tolerance(DType::F16, DType::F16)), "{}: {c}", first.pick);
    std::fs::remove_dir_all(dir).ok();
}
