//! The GPU entry points refuse bad calls with errors, never a panic or a launch: invalid
//! problems, tensors of the wrong element type, buffers of the wrong size or type.
//! Without a GPU each test announces that it was skipped (see `convrs_tests::gpu_or_skip`).

use convrs::workspace::Workspace;
use convrs::{conv2d, launch, Algorithm, Conv2d, DType, Error, Layout, Tensor};
use convrs_tests::gpu_or_skip;
use half::f16;

#[test]
fn gpu_path_rejects_invalid_problems() {
    let Some(gpu) = gpu_or_skip("gpu_path_rejects_invalid_problems") else { return };
    let bad = Conv2d::new(1, 1, 4, 4, 1, 7, 7);
    let x = Tensor::random(bad.input_shape(), Layout::Nchw, 1).unwrap();
    let w = Tensor::random(bad.filter_shape(), Layout::Nchw, 2).unwrap();
    for algo in Algorithm::ALL {
        let e = conv2d(&gpu, *algo, &bad, &x, &w).unwrap_err();
        assert!(matches!(e, Error::FilterLargerThanPaddedInput { .. }), "{algo}: {e}");
    }
}

#[test]
fn conv2d_rejects_the_wrong_element_type() {
    let Some(gpu) = gpu_or_skip("conv2d_rejects_the_wrong_element_type") else { return };
    let p = Conv2d::new(16, 16, 8, 8, 16, 3, 3).with_pad(1);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 1).unwrap();
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 2).unwrap();
    let (xh, wh) = (x.map(f16::from_f32), w.map(f16::from_f32));
    // Kernels that read every type (the depthwise ones) have no wrong element type.
    for &algo in Algorithm::ALL.iter().filter(|a| a.dtypes().len() < 3) {
        let fp32 = algo.dtypes().contains(&DType::F32);
        let e = if fp32 { conv2d(&gpu, algo, &p, &xh, &wh).unwrap_err() } else { conv2d(&gpu, algo, &p, &x, &w).unwrap_err() };
        // The message names the types the kernel takes and the type it was given.
        let (takes, given) = if fp32 { ("fp32".to_string(), "fp16") } else { (algo.kernel().unwrap().dtypes_label(), "fp32") };
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains(&takes) && m.contains(given)), "{algo}: {e}");
    }
}

#[test]
fn launch_rejects_wrong_buffers() {
    let Some(gpu) = gpu_or_skip("launch_rejects_wrong_buffers") else { return };
    let p = Conv2d::new(1, 2, 8, 8, 3, 3, 3);
    let plan = Algorithm::DirectSmem.plan(&p, DType::F32, gpu.model()).unwrap();
    let mut ws = Workspace::none();
    let x = gpu.alloc_zeros::<f32>(p.input_len()).unwrap();
    let w = gpu.alloc_zeros::<f32>(p.filter_len()).unwrap();
    let mut short = gpu.alloc_zeros::<f32>(p.output_len() - 1).unwrap();
    let e = launch(&gpu, &plan, &p, &x, &w, &mut short, &mut ws).unwrap_err();
    assert!(matches!(e, Error::BufferSize { tensor: "output", .. }), "{e}");
    let xh = gpu.alloc_zeros::<f16>(p.input_len()).unwrap();
    let wh = gpu.alloc_zeros::<f16>(p.filter_len()).unwrap();
    let mut y = gpu.alloc_zeros::<f32>(p.output_len()).unwrap();
    let e = launch(&gpu, &plan, &p, &xh, &wh, &mut y, &mut ws).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // A split-K plan without its workspace: refused before any launch.
    if let Ok(split) = "wgmma_ws_tma_splitk".parse::<Algorithm>().unwrap().plan(&Conv2d::new(1, 832, 7, 7, 128, 5, 5).with_pad(2), DType::F16, gpu.model()) {
        let q = Conv2d::new(1, 832, 7, 7, 128, 5, 5).with_pad(2);
        let (xq, wq) = (gpu.alloc_zeros::<f16>(q.input_len()).unwrap(), gpu.alloc_zeros::<f16>(q.filter_len()).unwrap());
        let mut yq = gpu.alloc_zeros::<f32>(q.output_len()).unwrap();
        let e = launch(&gpu, &split, &q, &xq, &wq, &mut yq, &mut ws).unwrap_err();
        assert!(matches!(e, Error::BufferSize { tensor: "workspace", .. }), "{e}");
    }
}
