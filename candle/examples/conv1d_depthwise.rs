//! Depthwise 1-D convolutions (the short causal convolutions of Mamba blocks and the long ones of
//! Conformer blocks) through candle's own `conv1d` and through `convrs_candle::Conv1d` (convrs's
//! depthwise kernels, the signal as an image of height 1), same weights and inputs: outputs
//! compared, time per call (median of N, each synchronized).
//!
//!   cargo run --release --example conv1d_depthwise -- [--iters 20]

mod common;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::Conv1dConfig;

/// (batch, channels, length, kernel, padding): Mamba-style (kernel 4, padded 3: causal once the
/// tail is cut) and Conformer-style (kernel 31, padded 15) layers.
const LAYERS: [(usize, usize, usize, usize, usize); 4] = [(1, 5120, 2048, 4, 3), (8, 1536, 1024, 4, 3), (16, 512, 1000, 31, 15), (1, 2048, 4096, 4, 3)];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let iters = common::iters_flag("conv1d_depthwise")?;
    let dev = Device::new_cuda(0)?;
    println!("| layer (B, C, L, kernel, pad; groups = C) | dtype | candle ms | convrs ms | speed-up | convrs kernel | rel L2 |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (b, c, l, k, p) in LAYERS {
        for dtype in [DType::F32, DType::F16] {
            let x = Tensor::randn(0f32, 1.0, (b, c, l), &dev)?.to_dtype(dtype)?;
            let w = Tensor::randn(0f32, 0.3, (c, 1, k), &dev)?.to_dtype(dtype)?;
            let cfg = Conv1dConfig { padding: p, stride: 1, dilation: 1, groups: c, cudnn_fwd_algo: None };
            let theirs = candle_nn::Conv1d::new(w.clone(), None, cfg);
            let ours = convrs_candle::Conv1d::new(w, None, cfg)?;
            let (a, o) = (theirs.forward(&x)?, ours.forward(&x)?);
            let err = common::rel_l2(&o, &a)?;
            let kernel = ours.as_conv2d().kernel_for([b, c, 1, l], &dev)?.unwrap_or_else(|| "candle (fallback)".into());
            let t_candle = common::median_ms(&|| theirs.forward(&x), &dev, 1, iters)?;
            let t_convrs = common::median_ms(&|| ours.forward(&x), &dev, 1, iters)?;
            println!("| {b}, {c}, {l}, {k}, {p} | {dtype:?} | {t_candle:.3} | {t_convrs:.3} | {:.1}x | {kernel} | {err:.2e} |", t_candle / t_convrs);
        }
    }
    Ok(())
}
