//! GPU tests of grouped convolution with 1 < G < C (ResNeXt's layers) on the Hopper im2col
//! kernels, which run it in merged groups with a block-diagonal filter (`convrs::groups`):
//! random and named problems in every element type against the f64 CPU reference on
//! NaN-poisoned outputs, and the device path (`DeviceConv` from NCHW, the filter expanded on the
//! GPU and re-expanded by `set_filter`). Without a Hopper GPU each test announces that it was
//! skipped. The plans and the merge rule are tested on CPU (host/src/groups.rs,
//! host/src/plan/hopper.rs).

use convrs::device_conv::DeviceConv;
use convrs::device_tensor::DeviceTensor;
use convrs::{compare, conv2d_cpu, Algorithm, Conv2d, DType, Layout, Tensor};
use convrs_tests::{check_shapes_both_outputs, hopper_or_skip, kernels, property_test_gpu_on, shout, tolerance, Out};
use half::{bf16, f16};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

const CASES: u32 = 64;

/// The kernels that take grouped problems, with the types they read.
fn grouped_kernels() -> Vec<(Algorithm, DType)> {
    kernels(|k| k.takes_groups())
}

/// Random grouped problems: G of 2 to 32 (odd counts too), C/G and K/G of 1 to 24 (multiples of
/// 4 and 8 as often as not, ResNeXt's 4 to 32 among them), so that every merge the host can
/// choose comes up (whole k-tiles, 8-channel rows, all the way to one group); batch 1 to 6,
/// sizes up to 24, filters 1 to 5 (3 most often), padding up to 2, stride and dilation up to 2.
fn grouped_problems() -> impl Strategy<Value = (Conv2d, u64)> {
    let width = || prop_oneof![(1usize..=8).prop_map(|v| 4 * v), 1usize..=24];
    let filter = || prop_oneof![2 => Just(3usize), 1 => 1usize..=5];
    (
        (prop_oneof![Just(2usize), Just(3), Just(4), Just(8), Just(16), Just(32)], width(), width()),
        (1usize..=6, 1usize..=24, 1usize..=24),
        (filter(), filter()),
        ((0usize..=2, 0usize..=2), (1usize..=2, 1usize..=2), (1usize..=2, 1usize..=2)),
        any::<u64>(),
    )
        .prop_map(|((g, cg, kg), (n, h, w), (r, s), (pad, stride, dilation), seed)| {
            (Conv2d { n, c: g * cg, h, w, k: g * kg, r, s, pad, stride, dilation, precision: Default::default(), groups: g, epilogue: Default::default() }, seed)
        })
        .prop_filter("filter must fit the padded input", |(p, _)| p.validate().is_ok())
}

#[test]
fn grouped_kernels_match_cpu_on_random_problems() {
    let Some(gpu) = hopper_or_skip("grouped_kernels_match_cpu_on_random_problems") else { return };
    let all = grouped_kernels();
    assert!(all.len() >= 10, "{all:?}");
    for (algo, dtype) in all {
        property_test_gpu_on(&gpu, algo, dtype, CASES, grouped_problems().boxed(), "random grouped problems");
    }
}

/// The random problems exercise the merged groups: on every kernel that takes groups, most of
/// them run merged (the rest have groups already whole k-tiles and tiles wide). CPU only.
#[test]
fn random_grouped_problems_mostly_run_merged() {
    let mut runner = TestRunner::new(Config { cases: 256, failure_persistence: None, ..Config::default() });
    let tree = |r: &mut TestRunner| grouped_problems().new_tree(r).unwrap().current().0;
    let drawn: Vec<Conv2d> = (0..256).map(|_| tree(&mut runner)).collect();
    for (algo, _) in grouped_kernels() {
        let k = algo.kernel().unwrap();
        let merged = drawn.iter().filter(|p| k.run_problem(&p.with_precision(k.precision)).groups != p.groups).count();
        assert!(merged * 4 >= drawn.len() * 3, "{algo}: {merged} of {} random problems run merged", drawn.len());
    }
}

/// ResNeXt-50 32x4d's grouped layers (batch 2; the first block of stages 2-4 at stride 2) and
/// the merges' corners: 3 groups, groups of 24 channels (merged into one dense problem, then
/// padded), 64-channel groups (not merged), 1x1 and 5x5 grouped filters, more outputs than
/// inputs a group.
fn shapes() -> Vec<Conv2d> {
    let g = |n, c, hw, k, r: usize, stride, groups| Conv2d::new(n, c, hw, hw, k, r, r).with_pad(r / 2).with_stride(stride).with_groups(groups);
    vec![
        g(2, 128, 56, 128, 3, 1, 32),
        g(2, 256, 56, 256, 3, 2, 32),
        g(2, 512, 14, 512, 3, 1, 32),
        g(2, 1024, 14, 1024, 3, 2, 32),
        g(3, 24, 17, 48, 3, 1, 3),
        g(2, 96, 15, 96, 3, 1, 4),
        g(2, 256, 9, 256, 3, 1, 4),
        g(4, 64, 11, 128, 1, 1, 8),
        g(1, 160, 13, 160, 5, 2, 10),
    ]
}

#[test]
fn grouped_kernels_match_cpu_on_named_shapes() {
    let Some(gpu) = hopper_or_skip("grouped_kernels_match_cpu_on_named_shapes") else { return };
    for (algo, dtype) in grouped_kernels() {
        let k = algo.kernel().unwrap();
        let taken: Vec<Conv2d> = shapes().into_iter().filter(|p| k.plan(&k.run_problem(&p.with_precision(k.precision)), dtype, gpu.model()).is_ok()).collect();
        assert!(taken.len() * 2 >= shapes().len(), "{algo} ({dtype}) takes only {} of the named shapes", taken.len());
        check_shapes_both_outputs(&gpu, algo, dtype, &taken, 11);
        shout(&format!("{algo} ({dtype}): {} named grouped shapes checked, both output types", taken.len()));
    }
}

/// An NCHW caller's grouped layer through `DeviceConv` (Auto): the KCRS filter transformed and
/// expanded on the GPU; after `set_filter` with new weights the runs use them.
#[test]
fn device_conv_expands_grouped_filters_on_the_gpu() {
    let Some(gpu) = hopper_or_skip("device_conv_expands_grouped_filters_on_the_gpu") else { return };
    for p in [Conv2d::new(2, 256, 14, 14, 256, 3, 3).with_pad(1).with_groups(32), Conv2d::new(2, 96, 9, 9, 96, 3, 3).with_pad(1).with_stride(2).with_groups(4)] {
        let tensor = |dims, seed| Tensor::random(dims, Layout::Nchw, seed).unwrap().map(bf16::from_f32);
        let (x, w1, w2) = (tensor(p.input_shape(), 1), tensor(p.filter_shape(), 2), tensor(p.filter_shape(), 3));
        let dx = DeviceTensor::upload(&gpu, &x).unwrap();
        let mut conv = DeviceConv::<bf16>::new(&gpu, Algorithm::Auto, &p, &DeviceTensor::upload(&gpu, &w1).unwrap(), Layout::Nchw, Layout::Nchw).unwrap();
        assert!(conv.algorithm().kernel().unwrap().takes_groups(), "{p}: {}", conv.name());
        let mut y = conv.new_output(&gpu).unwrap();
        for (w, what) in [(&w1, "first weights"), (&w2, "after set_filter")] {
            if what != "first weights" {
                conv.set_filter(&gpu, &DeviceTensor::upload(&gpu, w).unwrap()).unwrap();
            }
            conv.run(&gpu, &dx, &mut y).unwrap();
            let c = compare(y.download(&gpu).unwrap().data(), conv2d_cpu(&p, &x, w).unwrap().data());
            assert!(c.passes(tolerance(DType::BF16, Out::Input)), "{p}, {}: {what}: {c}", conv.name());
        }
        shout(&format!("{p}: DeviceConv from NCHW on {} matches the CPU, before and after set_filter", conv.name()));
    }
    // fp16 through the same path, one shape, 8-channel groups.
    let p = Conv2d::new(1, 64, 10, 10, 64, 3, 3).with_pad(1).with_groups(8);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 5).unwrap().map(f16::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 6).unwrap().map(f16::from_f32);
    let mut conv = DeviceConv::<f16>::new(&gpu, Algorithm::Auto, &p, &DeviceTensor::upload(&gpu, &w).unwrap(), Layout::Nchw, Layout::Nchw).unwrap();
    let mut y = conv.new_output(&gpu).unwrap();
    conv.run(&gpu, &DeviceTensor::upload(&gpu, &x).unwrap(), &mut y).unwrap();
    let c = compare(y.download(&gpu).unwrap().data(), conv2d_cpu(&p, &x, &w).unwrap().data());
    assert!(c.passes(tolerance(DType::F16, Out::Input)), "{p}: {c}");
}
