//! Device tensors: the transform kernels copy exactly (every plain layout pair, with zero padding
//! and cropping of N and C, fp32 and fp16 bits; the tiled transpose over many ragged tiles, into
//! NaN-poisoned buffers), and `conv2d_device` on tensors in
//! the caller's layout matches the f64 CPU reference (NaN-poisoned kernel output), whichever
//! kernel runs behind it and whatever layout the output is asked in.

use convrs::bench::tolerance;
use convrs::device_conv::DeviceConv;
use convrs::device_tensor::{conv2d_device, conv2d_device_to, relayout_elementwise_into, relayout_into, relayout_sampled_into, DeviceTensor};
use convrs::{compare, conv2d_cpu, Algorithm, Conv2d, Element, Gpu, Layout, Tensor};
use convrs_tests::gpu_or_skip;
use half::{bf16, f16};

const PLAIN: [Layout; 3] = [Layout::Nchw, Layout::Nhwc, Layout::Hwcn];

#[test]
fn relayout_round_trips_exactly() {
    let Some(gpu) = gpu_or_skip("relayout_round_trips_exactly") else { return };
    let t = Tensor::from_fn([3, 5, 7, 9], Layout::Nchw, |n, c, h, w| (((n * 10 + c) * 10 + h) * 10 + w) as f32).unwrap();
    let th = t.map(f16::from_f32);
    for from in PLAIN {
        let (src, srch) = (t.to_layout(from).unwrap(), th.to_layout(from).unwrap());
        let (d, dh) = (DeviceTensor::upload(&gpu, &src).unwrap(), DeviceTensor::upload(&gpu, &srch).unwrap());
        for to in PLAIN {
            let got = d.relayout(&gpu, [3, 5, 7, 9], to).unwrap().download(&gpu).unwrap();
            assert_eq!(got.data(), t.to_layout(to).unwrap().data(), "f32 {from} -> {to}");
            let padded = dh.relayout(&gpu, [4, 8, 7, 9], to).unwrap();
            assert_eq!(padded.download(&gpu).unwrap().data(), th.zero_padded([4, 8, 7, 9], to).unwrap().data(), "f16 {from} -> {to} padded");
            let back = padded.relayout(&gpu, [3, 5, 7, 9], from).unwrap().download(&gpu).unwrap();
            assert_eq!(back.data(), srch.data(), "f16 {to} -> {from} cropped");
        }
    }
}

/// `conv2d_device` writing `O` (the input's type or fp32) against the CPU reference.
fn check<T: Element, O: Element>(gpu: &Gpu, algo: Algorithm, p: &Conv2d, user: Layout, out: Layout, seed: u64) {
    let x = Tensor::random(p.input_shape(), Layout::Nchw, seed).unwrap().map(T::from_f32).to_layout(user).unwrap();
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed + 1).unwrap().map(T::from_f32).to_layout(user).unwrap();
    let (dx, dw) = (DeviceTensor::upload(gpu, &x).unwrap(), DeviceTensor::upload(gpu, &w).unwrap());
    let y = conv2d_device_to::<T, O>(gpu, algo, p, &dx, &dw, out).unwrap_or_else(|e| panic!("{algo} on {p}: {e}"));
    assert_eq!((y.dims(), y.layout()), (p.output_shape(), out));
    let got = y.download(gpu).unwrap().to_layout(Layout::Nchw).unwrap();
    let c = compare(got.data(), conv2d_cpu(p, &x, &w).unwrap().data());
    assert!(c.passes(tolerance(T::DTYPE, O::DTYPE)), "{algo} on {p} ({user} -> {out}, {} output): {c}", O::DTYPE);
}

#[test]
fn conv2d_on_device_tensors_matches_cpu() {
    let Some(gpu) = gpu_or_skip("conv2d_on_device_tensors_matches_cpu") else { return };
    let p = Conv2d { stride: (2, 1), ..Conv2d::new(3, 5, 17, 15, 7, 3, 3).with_pad(1) };
    let q = Conv2d::new(4, 16, 12, 10, 24, 3, 3).with_pad(1);
    for (i, user) in PLAIN.into_iter().enumerate() {
        let out = PLAIN[(i + 1) % 3];
        check::<f32, f32>(&gpu, Algorithm::Auto, &p, user, out, 10 + i as u64);
        check::<f32, f32>(&gpu, Algorithm::TiledHwcn, &q, user, out, 20 + i as u64);
        // C = 5, K = 7: the tensor-core kernel runs it padded to 8 channels, on the device; the
        // output in the input's type (the default) and in fp32.
        check::<f16, f16>(&gpu, Algorithm::Auto, &p, user, out, 30 + i as u64);
        check::<f16, f32>(&gpu, Algorithm::Auto, &p, user, out, 35 + i as u64);
        check::<bf16, bf16>(&gpu, Algorithm::Auto, &q, user, out, 40 + i as u64);
        check::<bf16, f32>(&gpu, Algorithm::Auto, &q, user, out, 45 + i as u64);
    }
}

#[test]
fn blocked_kernels_say_they_need_host_tensors() {
    let Some(gpu) = gpu_or_skip("blocked_kernels_say_they_need_host_tensors") else { return };
    let p = Conv2d::new(16, 16, 8, 8, 16, 3, 3).with_pad(1);
    let x = DeviceTensor::upload(&gpu, &Tensor::random(p.input_shape(), Layout::Nhwc, 1).unwrap().map(f16::from_f32)).unwrap();
    let w = DeviceTensor::upload(&gpu, &Tensor::random(p.filter_shape(), Layout::Nhwc, 2).unwrap().map(f16::from_f32)).unwrap();
    let e = conv2d_device(&gpu, Algorithm::WmmaNhwcnc, &p, &x, &w, Layout::Nhwc).err().expect("refused");
    // An output type the kernel cannot write is refused, not converted.
    let e2 = conv2d_device_to::<f16, bf16>(&gpu, Algorithm::WmmaNhwc, &p, &x, &w, Layout::Nhwc).err().expect("refused");
    assert!(e2.to_string().contains("writes fp16 or fp32 outputs, not bf16"), "{e2}");
    assert!(e.to_string().contains("blocked"), "{e}");
}

/// A `DeviceConv` keeps its filter until told: runs after `set_filter` use the new weights (and
/// the cached filter was not re-read from the caller's buffer in between), for NCHW callers of
/// the tensor-core kernels with C and K that need padding.
#[test]
fn device_conv_caches_the_filter_until_set_filter() {
    let Some(gpu) = gpu_or_skip("device_conv_caches_the_filter_until_set_filter") else { return };
    let p = Conv2d::new(2, 20, 15, 13, 36, 3, 3).with_pad(1);
    let tensor = |dims, seed| Tensor::random(dims, Layout::Nchw, seed).unwrap().map(f16::from_f32);
    let (x, w1, w2) = (tensor(p.input_shape(), 1), tensor(p.filter_shape(), 2), tensor(p.filter_shape(), 3));
    let dx = DeviceTensor::upload(&gpu, &x).unwrap();
    let mut dw = DeviceTensor::upload(&gpu, &w1).unwrap();
    let mut conv = DeviceConv::<f16>::new(&gpu, Algorithm::Auto, &p, &dw, Layout::Nchw, Layout::Nchw).unwrap();
    let mut y = conv.new_output(&gpu).unwrap();
    let check = |y: &DeviceTensor<f16>, w: &Tensor<f16>, what: &str| {
        let c = compare(y.download(&gpu).unwrap().data(), conv2d_cpu(&p, &x, w).unwrap().data());
        assert!(c.passes(tolerance(convrs::DType::F16, convrs::DType::F16)), "{what}: {c}");
    };
    conv.run(&gpu, &dx, &mut y).unwrap();
    check(&y, &w1, "first weights");
    // The caller's buffer is overwritten in place with other weights, but the plan was not
    // told: still w1.
    let d2 = DeviceTensor::upload(&gpu, &w2).unwrap();
    let dims = p.filter_shape();
    relayout_into(&gpu, d2.data(), dims, Layout::Nchw, dw.data_mut(), dims, Layout::Nchw).unwrap();
    conv.run(&gpu, &dx, &mut y).unwrap();
    check(&y, &w1, "cached weights");
    conv.set_filter(&gpu, &dw).unwrap();
    conv.run(&gpu, &dx, &mut y).unwrap();
    check(&y, &w2, "after set_filter");
    // Tensors that do not match the plan are refused, not misread.
    let nhwc = DeviceTensor::upload(&gpu, &x.to_layout(Layout::Nhwc).unwrap()).unwrap();
    assert!(conv.run(&gpu, &nhwc, &mut y).unwrap_err().to_string().contains("does not match the planned"));
    let small = DeviceTensor::upload(&gpu, &tensor([36, 20, 1, 1], 4)).unwrap();
    assert!(conv.set_filter(&gpu, &small).is_err());
}

/// `relayout_into` on `src` (dims `from_dims` in `from`) into a NaN-poisoned buffer, downloaded.
fn transformed<T: Element>(gpu: &Gpu, src: &Tensor<T>, dims: [usize; 4], to: Layout, elementwise: bool) -> Vec<T> {
    let d = gpu.upload(src.data()).unwrap();
    let mut out = gpu.alloc_zeros::<T>(dims.iter().product()).unwrap();
    gpu.poison(&mut out).unwrap();
    let f = if elementwise { relayout_elementwise_into::<T> } else { relayout_into::<T> };
    f(gpu, &d, src.dims(), src.layout(), &mut out, dims, to).unwrap();
    gpu.download(&out).unwrap()
}

/// Bit-exact: a transform moves bits (NaN payloads included), so compare them as bits.
fn same_bits<T: Element>(a: &[T], b: &[T]) -> bool {
    let bits = |v: &T| Into::<f64>::into(*v).to_bits();
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bits(x) == bits(y))
}

fn transposes_copy_exactly<T: Element>(gpu: &Gpu) {
    // H*W = 37*29 = 1073 (17 tiles, the last ragged) and C = 70 (2 tiles, ragged); N and C padded
    // to 4 and 72 on the way in, cropped on the way out.
    let t = Tensor::random([3, 70, 37, 29], Layout::Nchw, 7).unwrap().map(T::from_f32);
    let (dims, padded) = ([3, 70, 37, 29], [4, 72, 37, 29]);
    for (from, to) in [(Layout::Nchw, Layout::Nhwc), (Layout::Nhwc, Layout::Nchw)] {
        let src = t.to_layout(from).unwrap();
        let want = t.zero_padded(padded, to).unwrap();
        let got = transformed(gpu, &src, padded, to, false);
        assert!(same_bits(&got, want.data()), "{} {from} -> {to} padded", T::DTYPE);
        assert!(same_bits(&got, &transformed(gpu, &src, padded, to, true)), "{} {from} -> {to}: transpose and relayout differ", T::DTYPE);
        let back = transformed(gpu, &Tensor::new(padded, to, got).unwrap(), dims, from, false);
        assert!(same_bits(&back, src.data()), "{} {to} -> {from} cropped", T::DTYPE);
    }
}

/// Few channels padded to 8 (16-bit: `pad_channels_b16`; fp32: the element-wise kernel), N
/// padded too, against the host and the element-wise kernel.
fn channel_padding_copies_exactly<T: Element>(gpu: &Gpu) {
    for c in [1, 3, 8] {
        let t = Tensor::random([3, c, 37, 29], Layout::Nchw, 11 + c as u64).unwrap().map(T::from_f32);
        let padded = [4, 8, 37, 29];
        let got = transformed(gpu, &t, padded, Layout::Nhwc, false);
        assert!(same_bits(&got, t.zero_padded(padded, Layout::Nhwc).unwrap().data()), "{} C = {c} -> 8", T::DTYPE);
        assert!(same_bits(&got, &transformed(gpu, &t, padded, Layout::Nhwc, true)), "{} C = {c}: kernels differ", T::DTYPE);
    }
}

#[test]
fn transposes_copy_exactly_over_many_tiles() {
    let Some(gpu) = gpu_or_skip("transposes_copy_exactly_over_many_tiles") else { return };
    transposes_copy_exactly::<f32>(&gpu);
    transposes_copy_exactly::<f16>(&gpu);
    transposes_copy_exactly::<bf16>(&gpu);
    channel_padding_copies_exactly::<f16>(&gpu);
    channel_padding_copies_exactly::<bf16>(&gpu);
    channel_padding_copies_exactly::<f32>(&gpu);
}

/// Dev measurement (run with --ignored on a GPU): bandwidth of the transforms an NCHW caller of
/// the NHWC kernels needs, tiled transpose against the element-wise relayout, graph-timed over
/// enough source buffers that the L2 cache holds none of them between uses. Bytes counted are
/// the source read plus the destination written; compare with the copy ceiling of the same GPU
/// (dev/ceilings.py).
#[test]
#[ignore]
fn transform_bandwidth() {
    let Some(gpu) = gpu_or_skip("transform_bandwidth") else { return };
    let cases: [(&str, [usize; 4], Layout, [usize; 4], Layout, usize); 10] = [
        ("input 1,128,512,512 NCHW->NHWC", [1, 128, 512, 512], Layout::Nchw, [1, 128, 512, 512], Layout::Nhwc, 2),
        ("output 1,128,512,512 NHWC->NCHW", [1, 128, 512, 512], Layout::Nhwc, [1, 128, 512, 512], Layout::Nchw, 2),
        ("input 16,64,112,112 NCHW->NHWC", [16, 64, 112, 112], Layout::Nchw, [16, 64, 112, 112], Layout::Nhwc, 2),
        ("input 16,256,56,56 NCHW->NHWC fp32", [16, 256, 56, 56], Layout::Nchw, [16, 256, 56, 56], Layout::Nhwc, 4),
        ("input 8,3,224,224 NCHW->NHWC C 3->8 (pad_channels for 16-bit)", [8, 3, 224, 224], Layout::Nchw, [8, 8, 224, 224], Layout::Nhwc, 2),
        ("input 16,512,7,7 NCHW->NHWC", [16, 512, 7, 7], Layout::Nchw, [16, 512, 7, 7], Layout::Nhwc, 2),
        ("output 16,512,7,7 NHWC->NCHW", [16, 512, 7, 7], Layout::Nhwc, [16, 512, 7, 7], Layout::Nchw, 2),
        ("filter 512,512,3,3 KCRS->KRSC", [512, 512, 3, 3], Layout::Nchw, [512, 512, 3, 3], Layout::Nhwc, 2),
        ("input 1,512,20,20 NCHW->NHWC", [1, 512, 20, 20], Layout::Nchw, [1, 512, 20, 20], Layout::Nhwc, 2),
        ("filter 512,2048,1,1 KCRS->KRSC (element-wise both)", [512, 2048, 1, 1], Layout::Nchw, [512, 2048, 1, 1], Layout::Nhwc, 2),
    ];
    transform_table(&gpu, &cases.map(|(name, sd, sl, dd, dl, size)| (name, sd, sl, dd, dl, size, (1, 1))));
}

/// Dev measurement (run with --ignored on a GPU): the sampled transforms of strided 1x1 layers
/// (`sample` into NCHW, the sampled transpose into NHWC), against the whole input's transform
/// the NHWC kernels read at the stride. Bytes counted: the sampled rows read (a 16-bit row of
/// the grid reads all of its sectors) plus the destination written.
#[test]
#[ignore]
fn sampled_transform_bandwidth() {
    let Some(gpu) = gpu_or_skip("sampled_transform_bandwidth") else { return };
    transform_table(&gpu, &[
        ("input 32,256,56,56 NCHW->NHWC every (2, 2)", [32, 256, 56, 56], Layout::Nchw, [32, 256, 28, 28], Layout::Nhwc, 2, (2, 2)),
        ("input 32,512,28,28 NCHW->NHWC every (2, 2)", [32, 512, 28, 28], Layout::Nchw, [32, 512, 14, 14], Layout::Nhwc, 2, (2, 2)),
        ("input 32,1024,14,14 NCHW->NHWC every (2, 2)", [32, 1024, 14, 14], Layout::Nchw, [32, 1024, 7, 7], Layout::Nhwc, 2, (2, 2)),
        ("input 8,256,56,56 NCHW->NHWC every (2, 2) fp32", [8, 256, 56, 56], Layout::Nchw, [8, 256, 28, 28], Layout::Nhwc, 4, (2, 2)),
        ("input 32,256,56,56 NCHW->NCHW every (2, 2) (sample)", [32, 256, 56, 56], Layout::Nchw, [32, 256, 28, 28], Layout::Nchw, 2, (2, 2)),
        ("input 32,512,28,28 NCHW->NCHW every (2, 2) (sample)", [32, 512, 28, 28], Layout::Nchw, [32, 512, 14, 14], Layout::Nchw, 2, (2, 2)),
    ]);
}

/// One table row a case (name, source dims and layout, destination dims and layout, element
/// bytes, sampling): unsampled, the tiled transform against the element-wise relayout; sampled,
/// the sampled transform against the whole source's (unsampled) transform into `dl`.
type Case = (&'static str, [usize; 4], Layout, [usize; 4], Layout, usize, (usize, usize));
fn transform_table(gpu: &Gpu, cases: &[Case]) {
    println!("| transform | bytes | transform ms | GB/s | relayout (sampled: the whole input's transform) ms | GB/s |");
    println!("|---|---|---|---|---|---|");
    for &(name, sd, sl, dd, dl, size, sampling) in cases {
        let (ns, nd) = (sd.iter().product::<usize>(), dd.iter().product::<usize>());
        // Each column: the transform, its destination dims, and the bytes it moves.
        let columns = if sampling == (1, 1) {
            [(How::Tiled, dd, (ns + nd) * size), (How::Elementwise, dd, (ns + nd) * size)]
        } else {
            [(How::Sampled(sampling), dd, (ns / sampling.0 + nd) * size), (How::Tiled, sd, 2 * ns * size)]
        };
        let sets = (256usize << 20).div_ceil(columns.iter().map(|c| c.2).max().unwrap()).clamp(1, 64);
        let [a, b] = columns.map(|(how, dims, bytes)| {
            let ms = if size == 2 { time_one::<f16>(gpu, sd, sl, dims, dl, sets, how) } else { time_one::<f32>(gpu, sd, sl, dims, dl, sets, how) };
            (ms, bytes as f64 / (ms * 1e-3) / 1e9)
        });
        println!("| {name} | {} | {:.4} | {:.0} | {:.4} | {:.0} |", columns[0].2, a.0, a.1, b.0, b.1);
    }
}

/// Which transform `time_one` times.
#[derive(Clone, Copy)]
enum How {
    /// `relayout_into`: the tiled kernels where they apply.
    Tiled,
    /// `relayout_elementwise_into`.
    Elementwise,
    /// `relayout_sampled_into` on this grid.
    Sampled((usize, usize)),
}

fn time_one<T: Element>(gpu: &Gpu, sd: [usize; 4], sl: Layout, dd: [usize; 4], dl: Layout, sets: usize, how: How) -> f64 {
    let srcs: Vec<_> = (0..sets).map(|i| gpu.upload(&vec![T::from_f32(i as f32); sd.iter().product()]).unwrap()).collect();
    let mut dsts: Vec<_> = (0..sets).map(|_| gpu.alloc_zeros::<T>(dd.iter().product()).unwrap()).collect();
    let t = convrs::timing::time_runs(gpu, convrs::timing::TimingConfig::new(3, 20), |i| {
        let (src, dst) = (&srcs[i % sets], &mut dsts[i % sets]);
        match how {
            How::Tiled => relayout_into(gpu, src, sd, sl, dst, dd, dl),
            How::Elementwise => relayout_elementwise_into(gpu, src, sd, sl, dst, dd, dl),
            How::Sampled(grid) => relayout_sampled_into(gpu, src, sd, sl, dst, dd, dl, grid),
        }
    })
    .unwrap();
    t.median_ms
}

/// The 16-bit NCHW plane kernels (steps 9 and 15) run on the caller's NCHW tensors where they
/// are (`DeviceConv::direct`: no transform, no copy), and where C is not a multiple of 8 from a
/// padded copy of the input, still writing the caller's output where it is (K needs no
/// padding); both against the CPU reference, the caller's output poisoned first so that nothing
/// stale passes.
#[test]
fn device_conv_runs_the_plane_kernel_on_the_callers_tensors() {
    let Some(gpu) = convrs_tests::hopper_or_skip("device_conv_runs_the_plane_kernel_on_the_callers_tensors") else { return };
    let cases = [(Conv2d::new(3, 72, 12, 10, 40, 1, 1), (true, true)), (Conv2d::new(2, 20, 8, 5, 264, 1, 1), (false, true))];
    let mut kept = Kept::default();
    for name in ["wgmma_nchw1x1_persistent", "wgmma_nchw1x1_pingpong_m64"] {
        on_the_callers_tensors(&gpu, name.parse().unwrap(), &cases, &mut kept);
    }
}

/// Step 16's kernels (NHWC input, NCHW output) through a `DeviceConv` of an NCHW caller: the
/// input transposed, the output written into the caller's tensor as it is; P*Q odd (single
/// stores) and even (pixel pairs), C not a multiple of 8 (the input padded on its way).
#[test]
fn device_conv_writes_the_callers_output_from_nhwc_kernels() {
    let Some(gpu) = convrs_tests::hopper_or_skip("device_conv_writes_the_callers_output_from_nhwc_kernels") else { return };
    let cases = [
        (Conv2d::new(3, 24, 13, 11, 40, 3, 3).with_pad(1), (false, true)),
        (Conv2d::new(2, 16, 10, 12, 72, 3, 3).with_pad(1), (false, true)),
        (Conv2d::new(2, 20, 9, 9, 64, 1, 1), (false, true)),
    ];
    let mut kept = Kept::default();
    for name in ["wgmma_ws_tma_persistent_to_nchw", "wgmma_ws_tma_pingpong_to_nchw", "wgmma_ws_tma_pingpong_m64_to_nchw"] {
        on_the_callers_tensors(&gpu, name.parse().unwrap(), &cases, &mut kept);
    }
}

/// The NCHW row kernel likewise, its filter (KCRS) brought to KRSC once by the `DeviceConv`:
/// on the caller's tensors where C is a multiple of 8, through a padded input where not; a new
/// filter reaches it only through `set_filter`.
#[test]
fn device_conv_runs_the_row_kernel_on_the_callers_tensors() {
    let Some(gpu) = convrs_tests::hopper_or_skip("device_conv_runs_the_row_kernel_on_the_callers_tensors") else { return };
    let cases = [(Conv2d::new(2, 24, 10, 16, 40, 3, 3).with_pad(1), (true, true)), (Conv2d::new(1, 20, 9, 8, 72, 3, 3).with_pad(1), (false, true))];
    let rows: Algorithm = "wgmma_nchw_rows_persistent".parse().unwrap();
    let mut kept = Kept::default();
    on_the_callers_tensors(&gpu, rows, &cases, &mut kept);
    let p = cases[0].0;
    let tensor = |dims, seed| Tensor::random(dims, Layout::Nchw, seed).unwrap().map(bf16::from_f32);
    let (x, w1, w2) = (tensor(p.input_shape(), 1), tensor(p.filter_shape(), 2), tensor(p.filter_shape(), 3));
    let (dx, mut dw) = (DeviceTensor::upload(&gpu, &x).unwrap(), DeviceTensor::upload(&gpu, &w1).unwrap());
    let mut conv = DeviceConv::<bf16>::new(&gpu, rows, &p, &dw, Layout::Nchw, Layout::Nchw).unwrap();
    let mut y = conv.new_output(&gpu).unwrap();
    let dims = p.filter_shape();
    relayout_into(&gpu, DeviceTensor::upload(&gpu, &w2).unwrap().data(), dims, Layout::Nchw, dw.data_mut(), dims, Layout::Nchw).unwrap();
    for (w, what) in [(&w1, "the cached filter"), (&w2, "after set_filter")] {
        if what == "after set_filter" {
            conv.set_filter(&gpu, &dw).unwrap();
        }
        gpu.poison(y.data_mut()).unwrap();
        conv.run(&gpu, &dx, &mut y).unwrap();
        let c = compare(y.download(&gpu).unwrap().data(), conv2d_cpu(&p, &x, w).unwrap().data());
        assert!(c.non_finite == 0 && c.passes(tolerance(convrs::DType::BF16, convrs::DType::BF16)), "{p}, {what}: {c}");
    }
}

/// What [`on_the_callers_tensors`] keeps allocated.
type Kept = (Vec<DeviceTensor<bf16>>, Vec<DeviceConv<bf16>>);

/// `algo` through a `DeviceConv` of an NCHW caller on each case, whose `direct()` (input, output
/// used where they are) is given; against the CPU reference into a poisoned output, then (where
/// the input is read where it is) a CUDA graph capture on a new buffer refused and replayed
/// after one run outside.
///
/// Every buffer (and `DeviceConv`, with its own) goes into `kept`, which the test holds to its
/// end, so that no "new" buffer takes the address of one a kernel ran on: the tensor maps are
/// cached by address, and a reused address with the same problem finds its map (rightly), so
/// the capture would not be refused (on the H200, thirty-fourth session: the second kernel's
/// new buffer at the first kernel's).
fn on_the_callers_tensors(gpu: &Gpu, algo: Algorithm, cases: &[(Conv2d, (bool, bool))], kept: &mut Kept) {
    let (kept, convs) = (&mut kept.0, &mut kept.1);
    for &(p, direct) in cases {
        for seed in [1, 2] {
            let x = Tensor::random(p.input_shape(), Layout::Nchw, seed).unwrap().map(bf16::from_f32);
            let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed + 10).unwrap().map(bf16::from_f32);
            let (dx, dw) = (DeviceTensor::upload(&gpu, &x).unwrap(), DeviceTensor::upload(&gpu, &w).unwrap());
            let mut conv = DeviceConv::<bf16>::new(&gpu, algo, &p, &dw, Layout::Nchw, Layout::Nchw).unwrap();
            assert_eq!(conv.direct(), direct, "{p}");
            let mut y = conv.new_output(&gpu).unwrap();
            gpu.poison(y.data_mut()).unwrap();
            conv.run(&gpu, &dx, &mut y).unwrap();
            let want = conv2d_cpu(&p, &x, &w).unwrap();
            let c = compare(y.download(&gpu).unwrap().data(), want.data());
            assert!(c.non_finite == 0 && c.passes(tolerance(convrs::DType::BF16, convrs::DType::BF16)), "{p}, seed {seed}: {c}");
            if !direct.0 {
                kept.extend([dx, dw, y]);
                convs.push(conv);
                continue;
            }
            // A buffer the kernel has not run on, inside a CUDA graph capture: refused with the
            // reason (its tensor map cannot be made there), not recorded with a map the graph
            // cannot hold; after one run outside, captured, and the replay is right.
            let fresh = DeviceTensor::upload(&gpu, &x).unwrap();
            let Err(e) = convrs::timing::capture(&gpu, 1, &mut |_| conv.run(&gpu, &fresh, &mut y)) else { panic!("{p}: captured a run on a new buffer") };
            assert!(e.to_string().contains("captured into a CUDA graph"), "{e}");
            conv.run(&gpu, &fresh, &mut y).unwrap();
            let graph = convrs::timing::capture(&gpu, 1, &mut |_| conv.run(&gpu, &fresh, &mut y)).unwrap();
            gpu.poison(y.data_mut()).unwrap();
            graph.launch().unwrap();
            let c = compare(y.download(&gpu).unwrap().data(), want.data());
            assert!(c.non_finite == 0 && c.passes(tolerance(convrs::DType::BF16, convrs::DType::BF16)), "{p}, seed {seed}, graph replay: {c}");
            kept.extend([dx, dw, fresh, y]);
            convs.push(conv);
        }
    }
}

/// The sampled transform (a strided 1x1 layer run at stride 1 reads its input on the stride's
/// grid) copies exactly what the host's sampling picks, into a NaN-poisoned buffer, with N and C
/// zero-padded: into NCHW (the `sample` kernel, or the element-wise relayout where N or C grow)
/// and into NHWC (from NCHW the sampled transpose, from NHWC the element-wise relayout).
#[test]
fn sampled_relayout_copies_exactly() {
    let Some(gpu) = gpu_or_skip("sampled_relayout_copies_exactly") else { return };
    let small = Tensor::from_fn([3, 5, 9, 7], Layout::Nchw, |n, c, h, w| (((n * 10 + c) * 10 + h) * 10 + w) as f32).unwrap();
    // Runs of 4 along rows of 4, 3 and 7 elements; N, C or neither padded.
    let small_cases = [((2, 2), [3, 8, 5, 4]), ((3, 2), [4, 5, 3, 4]), ((2, 2), [3, 5, 5, 4]), ((3, 3), [3, 5, 3, 3]), ((2, 1), [3, 5, 5, 7])];
    // The sampled transpose over several 64 x 64 tiles each way: 300 pixels, 72 channels (70
    // and 2 of zeros), the last tile partial in both.
    let large = Tensor::from_fn([2, 70, 30, 40], Layout::Nchw, |n, c, h, w| (((n * 71 + c) * 31 + h) * 41 + w) as f32).unwrap();
    let large_cases = [((2, 2), [2, 72, 15, 20]), ((3, 2), [2, 70, 10, 20])];
    for (t, cases) in [(&small, &small_cases[..]), (&large, &large_cases[..])] {
        for from in [Layout::Nchw, Layout::Nhwc] {
            let src = t.to_layout(from).unwrap();
            let d = DeviceTensor::upload(&gpu, &src).unwrap();
            let (th, dh) = (t.map(f16::from_f32), DeviceTensor::upload(&gpu, &src.map(f16::from_f32)).unwrap());
            for &(stride, dims) in cases {
                for to in [Layout::Nchw, Layout::Nhwc] {
                    let mut dst = gpu.alloc_zeros::<f32>(dims.iter().product()).unwrap();
                    gpu.poison(&mut dst).unwrap();
                    relayout_sampled_into(&gpu, d.data(), src.dims(), from, &mut dst, dims, to, stride).unwrap();
                    assert_eq!(gpu.download(&dst).unwrap(), t.sampled_padded(dims, to, stride).unwrap().data(), "{from} -> {to} every {stride:?} into {dims:?}");
                    let mut dst = gpu.alloc_zeros::<f16>(dims.iter().product()).unwrap();
                    gpu.poison(&mut dst).unwrap();
                    relayout_sampled_into(&gpu, dh.data(), src.dims(), from, &mut dst, dims, to, stride).unwrap();
                    assert!(same_bits(&gpu.download(&dst).unwrap(), th.sampled_padded(dims, to, stride).unwrap().data()), "f16 {from} -> {to} every {stride:?} into {dims:?}");
                }
            }
        }
    }
}

/// Strided 1x1 layers without padding through the NCHW plane kernels (stride 1 only) and step 16
/// (NHWC in, NCHW out): they run on the input sampled on the stride's grid, by the device
/// transform for an NCHW caller (`DeviceConv`: the `sample` kernel, or the sampled transpose)
/// and by the host for `conv2d`, against the f64 reference on the caller's problem.
#[test]
fn plane_kernels_run_strided_1x1_layers_on_the_sampled_input() {
    let Some(gpu) = convrs_tests::hopper_or_skip("plane_kernels_run_strided_1x1_layers_on_the_sampled_input") else { return };
    let shapes = [
        Conv2d::new(2, 64, 16, 12, 40, 1, 1).with_stride(2),                  // 8 x 6 sampled pixels
        Conv2d { stride: (2, 3), ..Conv2d::new(3, 40, 15, 17, 24, 1, 1) },      // 8 x 6, per-axis strides
    ];
    let kernels = convrs_tests::kernels(|k| matches!(k.algorithm, Algorithm::Wgmma(p) if p.producer.samples_strided_1x1()));
    // Every plane kernel and step 16 in both types, or (CONVRS_TEST_KERNELS) those of them
    // named, maybe none.
    if convrs_tests::kernels_only().is_none() {
        assert!(kernels.len() >= 10, "{kernels:?}");
    }
    for (algo, dtype) in kernels {
        for p in &shapes {
            let p = &p.with_precision(algo.kernel().unwrap().precision);
            let run = algo.kernel().unwrap().run_problem(p);
            assert_eq!(p.sampling(&run), p.stride, "{algo} on {p}");
            match dtype {
                convrs::DType::F32 => sampled_both_ways::<f32>(&gpu, algo, p),
                convrs::DType::F16 => sampled_both_ways::<f16>(&gpu, algo, p),
                convrs::DType::BF16 => sampled_both_ways::<bf16>(&gpu, algo, p),
            }
        }
    }
}

fn sampled_both_ways<T: Element>(gpu: &Gpu, algo: Algorithm, p: &Conv2d) {
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 7).unwrap().map(T::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 8).unwrap().map(T::from_f32);
    // TF32 against the inputs as the tensor cores read them (convrs_tests::gpu_vs_cpu_to).
    let tf32 = p.precision == convrs::Precision::Tf32 && T::DTYPE == convrs::DType::F32;
    let truncated = |v: T| T::from_f32(f32::from_bits((Into::<f64>::into(v) as f32).to_bits() & !0x1FFF));
    let read = |t: &Tensor<T>| if tf32 { t.map(truncated) } else { t.clone() };
    let want = conv2d_cpu(p, &read(&x), &read(&w)).unwrap();
    let tol = convrs_tests::tolerance_of(algo, T::DTYPE, convrs_tests::Out::Input);
    // The host path.
    let host = convrs::conv2d(gpu, algo, p, &x, &w).unwrap_or_else(|e| panic!("{algo} on {p}: {e}"));
    let c = compare(host.data(), want.data());
    assert!(c.non_finite == 0 && c.rel_l2_err <= tol, "{algo} on {p} (conv2d): {c}");
    // The device path, an NCHW caller.
    let (dx, dw) = (DeviceTensor::upload(gpu, &x).unwrap(), DeviceTensor::upload(gpu, &w).unwrap());
    let mut conv = DeviceConv::<T>::new(gpu, algo, p, &dw, Layout::Nchw, Layout::Nchw).unwrap();
    assert_eq!(conv.direct(), (false, true), "{algo} on {p}: the input is sampled, the output is the caller's");
    let mut y = conv.new_output(gpu).unwrap();
    gpu.poison(y.data_mut()).unwrap();
    conv.run(gpu, &dx, &mut y).unwrap();
    let c = compare(y.download(gpu).unwrap().data(), want.data());
    assert!(c.non_finite == 0 && c.rel_l2_err <= tol, "{algo} on {p} (DeviceConv): {c}");
}
