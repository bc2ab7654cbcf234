//! Transposed convolutions (the upsampling layers of decoders and U-Nets) through candle's own
//! `conv_transpose2d` and through convrs's phases (`convrs_candle::ConvTranspose2d`), same
//! weights and inputs: outputs compared, time per call (median of N, each synchronized).
//!
//!   cargo run --release --example conv_transpose -- [--iters 20]

mod common;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::ConvTranspose2dConfig;

/// (N, C_in, H, W, C_out, kernel, padding, stride): decoder and U-Net upsampling layers.
const LAYERS: [(usize, usize, usize, usize, usize, usize, usize, usize); 5] = [
    (1, 512, 32, 32, 256, 4, 1, 2),
    (8, 256, 32, 32, 128, 4, 1, 2),
    (1, 128, 64, 64, 64, 4, 1, 2),
    (8, 64, 56, 56, 64, 2, 0, 2),
    (1, 256, 64, 64, 128, 3, 1, 1),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let iters = common::iters_flag("conv_transpose")?;
    let dev = Device::new_cuda(0)?;
    println!("| layer (N,C,H,W -> K, RxR, pad, stride) | dtype | candle ms | convrs ms | speed-up | rel L2 |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (n, c, h, w, k, r, p, s) in LAYERS {
        for dtype in [DType::F32, DType::F16] {
            let x = Tensor::randn(0f32, 1.0, (n, c, h, w), &dev)?.to_dtype(dtype)?;
            let wt = Tensor::randn(0f32, 0.05, (c, k, r, r), &dev)?.to_dtype(dtype)?;
            let cfg = ConvTranspose2dConfig { padding: p, output_padding: 0, stride: s, dilation: 1 };
            let theirs = candle_nn::ConvTranspose2d::new(wt.clone(), None, cfg);
            let ours = convrs_candle::ConvTranspose2d::new(wt, None, cfg)?;
            let (a, b) = (theirs.forward(&x)?, ours.forward(&x)?);
            let err = common::rel_l2(&b, &a)?;
            let t_candle = common::median_ms(&|| theirs.forward(&x), &dev, 1, iters)?;
            let t_convrs = common::median_ms(&|| ours.forward(&x), &dev, 1, iters)?;
            println!("| {n},{c},{h},{w} -> {k}, {r}x{r}, p{p}, s{s} | {dtype:?} | {t_candle:.3} | {t_convrs:.3} | {:.1}x | {err:.2e} |", t_candle / t_convrs);
        }
    }
    Ok(())
}
