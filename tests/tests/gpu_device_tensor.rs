//! Device tensors: the `relayout` transform kernels copy exactly (every plain layout pair, with
//! zero padding and cropping of N and C, fp32 and fp16 bits), and `conv2d_device` on tensors in
//! the caller's layout matches the f64 CPU reference (NaN-poisoned kernel output), whichever
//! kernel runs behind it and whatever layout the output is asked in.

use convrs::bench::tolerance;
use convrs::device_tensor::{conv2d_device, conv2d_device_to, DeviceTensor};
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
