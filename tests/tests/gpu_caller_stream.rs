//! convrs on the caller's memory and stream (issue 28, item 1): `Gpu::from_stream` enqueues on the
//! given stream, `DeviceConv::run_on` / `run_raw` read and write buffers the caller owns (no copy
//! of its own), bad lengths and addresses are refused before any launch, and a `Gpu` is shared
//! by threads (one `Gpu`, two threads) and used per stream (two `Gpu`s on two streams).

use std::sync::Arc;

use convrs::device_conv::DeviceConv;
use convrs::{compare, conv2d_cpu, Algorithm, Conv2d, Error, Gpu, Layout, Tensor};
use convrs_tests::gpu_or_skip;
use convrs::cudarc::driver::{CudaSlice, DevicePtr};
use half::f16;

/// fp16 inputs, fp32 accumulation, fp16 output: the output's rounding (2^-11 relative) and the
/// sums' (C*R*S products at 2^-24 each) are far inside 2e-3 of the f64 reference of the same
/// rounded inputs.
const F16_TOLERANCE: f64 = 2e-3;

fn problem() -> Conv2d {
    Conv2d::new(2, 24, 13, 11, 40, 3, 3).with_pad(1)
}

/// The input, filter and f64 reference (NCHW) of `p`, seeded.
fn operands(p: &Conv2d, seed: u64) -> (Tensor<f16>, Tensor<f16>, Vec<f64>) {
    let x = Tensor::random(p.input_shape(), Layout::Nchw, seed).unwrap().map(f16::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed + 1).unwrap().map(f16::from_f32);
    let y = conv2d_cpu(p, &x, &w).unwrap().data().to_vec();
    (x, w, y)
}

fn check(got: &[f16], want: &[f64], what: &str) {
    let got: Vec<f64> = got.iter().map(|v| v.to_f64()).collect();
    let c = compare(&got, want);
    assert!(c.passes(F16_TOLERANCE), "{what}: {c}");
}

/// A NaN-poisoned output buffer of `len` on `gpu`'s stream.
fn poisoned(gpu: &Gpu, len: usize) -> CudaSlice<f16> {
    gpu.upload(&vec![f16::NAN; len]).unwrap()
}

#[test]
fn a_gpu_on_the_callers_stream_runs_on_the_callers_buffers() {
    let Some(own) = gpu_or_skip("a_gpu_on_the_callers_stream_runs_on_the_callers_buffers") else { return };
    // The caller's stream, on the same context: a framework's.
    let stream = own.context().new_stream().unwrap();
    let gpu = Gpu::from_stream(stream.clone()).unwrap();
    assert!(Arc::ptr_eq(gpu.stream(), &stream));
    let p = problem();
    let (x, w, want) = operands(&p, 7);
    // The caller's buffers, allocated on its stream (NCHW, KCRS).
    let (dx, dw) = (stream.clone_htod(x.data()).unwrap(), stream.clone_htod(w.data()).unwrap());
    let mut dy = poisoned(&gpu, p.output_len());
    let mut conv = DeviceConv::<f16>::with_filter_slice(&gpu, Algorithm::Auto, &p, &dw, Layout::Nchw, Layout::Nchw, Layout::Nchw).unwrap();
    conv.run_on(&gpu, &dx, &mut dy).unwrap();
    check(&stream.clone_dtoh(&dy).unwrap(), &want, "run_on");

    // The same through raw addresses, into a second poisoned buffer.
    let dy2 = poisoned(&gpu, p.output_len());
    let (xa, ya) = (dx.device_ptr(&stream).0, dy2.device_ptr(&stream).0);
    // SAFETY: both buffers are alive, of the problem's lengths, until the stream is synchronized below.
    unsafe { conv.run_raw(&gpu, xa, ya) }.unwrap();
    check(&stream.clone_dtoh(&dy2).unwrap(), &want, "run_raw");
    // The borrowed buffers are still the caller's: usable after the call (not freed by convrs).
    assert_eq!(stream.clone_dtoh(&dx).unwrap(), x.data());
}

#[test]
fn bad_buffers_are_refused_before_any_launch() {
    let Some(gpu) = gpu_or_skip("bad_buffers_are_refused_before_any_launch") else { return };
    let p = problem();
    let (x, w, _) = operands(&p, 9);
    let dw = gpu.upload(w.data()).unwrap();
    let mut conv = DeviceConv::<f16>::with_filter_slice(&gpu, Algorithm::Auto, &p, &dw, Layout::Nchw, Layout::Nchw, Layout::Nchw).unwrap();
    let dx = gpu.upload(x.data()).unwrap();
    let mut short = gpu.alloc_zeros::<f16>(p.output_len() - 1).unwrap();
    assert!(matches!(conv.run_on(&gpu, &dx, &mut short), Err(Error::BufferSize { tensor: "output", .. })));
    let mut dy = gpu.alloc_zeros::<f16>(p.output_len()).unwrap();
    let short_x = gpu.alloc_zeros::<f16>(p.input_len() + 1).unwrap();
    assert!(matches!(conv.run_on(&gpu, &short_x, &mut dy), Err(Error::BufferSize { tensor: "input", .. })));
    let ya = dy.device_ptr(gpu.stream()).0;
    // SAFETY: refused before any use (the address is checked first).
    let misaligned = unsafe { conv.run_raw(&gpu, dx.device_ptr(gpu.stream()).0 + 2, ya) };
    assert!(matches!(misaligned, Err(Error::InvalidArgument(ref m)) if m.contains("16-byte")), "{misaligned:?}");
    // SAFETY: refused before any use.
    assert!(unsafe { conv.run_raw(&gpu, 0, ya) }.is_err());
    let wrong_filter = gpu.alloc_zeros::<f16>(p.filter_len() + 3).unwrap();
    assert!(matches!(conv.set_filter_slice(&gpu, &wrong_filter, Layout::Nchw), Err(Error::BufferSize { tensor: "filter", .. })));
    assert!(matches!(DeviceConv::<f16>::with_filter_slice(&gpu, Algorithm::Auto, &p, &dw, Layout::Nchw, Layout::Nhwc16n16c, Layout::Nchw), Err(Error::InvalidArgument(_))));
    gpu.synchronize().unwrap();
}

#[test]
fn one_gpu_serves_two_threads() {
    let Some(gpu) = gpu_or_skip("one_gpu_serves_two_threads") else { return };
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    assert_send_sync(&gpu);
    let p = problem();
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let gpu = &gpu;
            s.spawn(move || {
                let (x, w, want) = operands(&p, 100 + 10 * t);
                let (dx, dw) = (gpu.upload(x.data()).unwrap(), gpu.upload(w.data()).unwrap());
                let mut conv = DeviceConv::<f16>::with_filter_slice(gpu, Algorithm::Auto, &p, &dw, Layout::Nchw, Layout::Nchw, Layout::Nchw).unwrap();
                for round in 0..20 {
                    let mut dy = poisoned(gpu, p.output_len());
                    conv.run_on(gpu, &dx, &mut dy).unwrap();
                    check(&gpu.download(&dy).unwrap(), &want, &format!("thread {t}, round {round}"));
                }
            });
        }
    });
}

#[test]
fn two_gpus_on_two_streams() {
    let Some(own) = gpu_or_skip("two_gpus_on_two_streams") else { return };
    let streams = [own.context().new_stream().unwrap(), own.context().new_stream().unwrap()];
    std::thread::scope(|s| {
        for (t, stream) in streams.iter().enumerate() {
            s.spawn(move || {
                let gpu = Gpu::from_stream(stream.clone()).unwrap();
                let p = Conv2d::new(3, 16, 20, 20, 32, 1, 1).with_stride(2);
                let (x, w, want) = operands(&p, 200 + t as u64);
                let (dx, dw) = (gpu.upload(x.data()).unwrap(), gpu.upload(w.data()).unwrap());
                let mut conv = DeviceConv::<f16>::with_filter_slice(&gpu, Algorithm::Auto, &p, &dw, Layout::Nchw, Layout::Nchw, Layout::Nchw).unwrap();
                for _ in 0..10 {
                    let mut dy = poisoned(&gpu, p.output_len());
                    conv.run_on(&gpu, &dx, &mut dy).unwrap();
                    check(&stream.clone_dtoh(&dy).unwrap(), &want, &format!("stream {t}"));
                }
            });
        }
    });
}

/// The whole layer from NCHW: `DeviceConv::fused` with scale, bias, a residual in NCHW and an
/// activation, on the caller's buffers, against the f64 reference of the same rounded operands
/// (`conv2d_cpu`, then `EpilogueData::reference`), within the bench's fused tolerance (the bare
/// convolution's, scaled by what the epilogue can enlarge, plus its own arithmetic).
fn fused_from_nchw<T: convrs::Element>(gpu: &Gpu, p: &Conv2d, seed: u64) {
    use convrs::bench::{tolerance, EpilogueData};
    use convrs::device_conv::DeviceVectors;
    let x = Tensor::random(p.input_shape(), Layout::Nchw, seed).unwrap().map(T::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, seed + 1).unwrap().map(T::from_f32);
    let data = EpilogueData::random(p, seed + 2).unwrap().rounded::<T>();
    let bare = conv2d_cpu(&Conv2d { epilogue: convrs::Epilogue::NONE, ..*p }, &x, &w).unwrap();
    let want = data.reference(p, bare.clone()).unwrap();
    let tol = data.tolerance(p, tolerance(T::DTYPE, T::DTYPE), &bare, &want);
    let (dx, dw) = (gpu.upload(x.data()).unwrap(), gpu.upload(w.data()).unwrap());
    let vector = |v: &Option<Vec<f32>>| v.as_deref().map(|v| gpu.upload(v).unwrap());
    let (scale, bias) = (vector(&data.scale), vector(&data.bias));
    let residual = data.residual.as_ref().map(|r| gpu.upload(r.data()).unwrap());
    let vectors = DeviceVectors { scale: scale.as_ref(), bias: bias.as_ref() };
    let mut conv = DeviceConv::<T>::fused(gpu, Algorithm::Auto, p, &dw, Layout::Nchw, Layout::Nchw, Layout::Nchw, vectors).unwrap_or_else(|e| panic!("{p}: {e}"));
    let mut dy = gpu.upload(&vec![T::from_f32(f32::NAN); p.output_len()]).unwrap();
    conv.run_fused_on(gpu, &dx, residual.as_ref(), &mut dy).unwrap_or_else(|e| panic!("{p}: {e}"));
    let got: Vec<f64> = gpu.download(&dy).unwrap().into_iter().map(Into::into).collect();
    let c = compare(&got, want.data());
    assert!(c.passes(tol), "{} {p} ({}): {c} (tolerance {tol:.2e})", T::DTYPE, conv.name());
}

#[test]
fn fused_layers_from_nchw_match_the_reference() {
    use convrs::{Activation, Epilogue};
    let Some(gpu) = gpu_or_skip("fused_layers_from_nchw_match_the_reference") else { return };
    let full = Epilogue::NONE.with_scale().with_bias().with_residual().with_activation(Activation::Relu);
    let shapes = [
        Conv2d::new(2, 24, 13, 11, 40, 3, 3).with_pad(1).with_epilogue(full),
        // 1x1 stride 1 with H*W a multiple of 8: the NCHW plane kernel's, output written in place.
        Conv2d::new(3, 64, 8, 8, 96, 1, 1).with_epilogue(full),
        Conv2d::new(2, 32, 15, 15, 64, 3, 3).with_pad(1).with_stride(2).with_epilogue(Epilogue::NONE.with_scale().with_bias().with_activation(Activation::Silu)),
        Conv2d::new(1, 16, 9, 9, 8, 1, 1).with_epilogue(Epilogue::NONE.with_bias().with_residual()),
    ];
    for (i, p) in shapes.iter().enumerate() {
        let seed = 300 + 10 * i as u64;
        fused_from_nchw::<f16>(&gpu, p, seed);
        fused_from_nchw::<half::bf16>(&gpu, p, seed + 1);
        fused_from_nchw::<f32>(&gpu, p, seed + 2);
    }
    // A residual the epilogue does not add, and a missing one, are refused before any launch.
    let p = shapes[0];
    let w = gpu.alloc_zeros::<f16>(p.filter_len()).unwrap();
    let v = gpu.upload(&vec![1.0f32; p.k]).unwrap();
    let vectors = convrs::device_conv::DeviceVectors { scale: Some(&v), bias: Some(&v) };
    let mut conv = DeviceConv::<f16>::fused(&gpu, Algorithm::Auto, &p, &w, Layout::Nchw, Layout::Nchw, Layout::Nchw, vectors).unwrap();
    let (x, mut y) = (gpu.alloc_zeros::<f16>(p.input_len()).unwrap(), gpu.alloc_zeros::<f16>(p.output_len()).unwrap());
    assert!(matches!(conv.run_on(&gpu, &x, &mut y), Err(Error::InvalidArgument(ref m)) if m.contains("residual")));
    let no_scale = convrs::device_conv::DeviceVectors { scale: None, bias: Some(&v) };
    assert!(DeviceConv::<f16>::fused(&gpu, Algorithm::Auto, &p, &w, Layout::Nchw, Layout::Nchw, Layout::Nchw, no_scale).is_err());
}
