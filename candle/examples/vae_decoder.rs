//! The Stable Diffusion (1.x) VAE decoder, diffusers' `AutoencoderKL` layout, written with
//! candle_nn layers, run with candle's own convolution and with convrs's (`Conv2d` in its place;
//! and, fused, each ResNet block's second convolution adding the block's shortcut in its
//! epilogue), same random weights and latents: outputs compared, time per decode (median of N,
//! each synchronized). A 64x64 latent decodes to a 512x512 image; most of the work is 3x3
//! convolutions of 128-512 channels at 64x64 to 512x512.
//!
//!   cargo run --release --example vae_decoder -- [--latent 64] [--batch 1] [--dtype f32,f16] [--iters 5]

mod common;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{group_norm, linear, Conv2dConfig, GroupNorm, Linear, VarBuilder, VarMap};
use convrs_candle::Precision;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Backend {
    Candle,
    Convrs,
    /// convrs, with each ResNet block's shortcut added in its second convolution's epilogue.
    ConvrsFused,
}

enum Conv {
    Candle(candle_nn::Conv2d),
    Convrs(convrs_candle::Conv2d),
}

impl Conv {
    fn new(be: Backend, cin: usize, cout: usize, k: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        let cfg = Conv2dConfig { padding: k / 2, ..Default::default() };
        Ok(match be {
            Backend::Candle => Conv::Candle(candle_nn::conv2d(cin, cout, k, cfg, vb)?),
            _ => Conv::Convrs(convrs_candle::conv2d(cin, cout, k, cfg, vb)?.with_precision(Precision::Tf32)),
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Conv::Candle(c) => c.forward(x),
            Conv::Convrs(c) => c.forward(x),
        }
    }

    /// `conv(x) + residual`, in the epilogue where the backend fuses it.
    fn forward_add(&self, x: &Tensor, residual: &Tensor, fused: bool) -> candle_core::Result<Tensor> {
        match self {
            Conv::Convrs(c) if fused => c.forward_residual(x, residual),
            _ => self.forward(x)? + residual,
        }
    }
}

struct ResnetBlock {
    norm1: GroupNorm,
    conv1: Conv,
    norm2: GroupNorm,
    conv2: Conv,
    shortcut: Option<Conv>,
    fused: bool,
}

impl ResnetBlock {
    fn new(be: Backend, cin: usize, cout: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(ResnetBlock {
            norm1: group_norm(32, cin, 1e-6, vb.pp("norm1"))?,
            conv1: Conv::new(be, cin, cout, 3, vb.pp("conv1"))?,
            norm2: group_norm(32, cout, 1e-6, vb.pp("norm2"))?,
            conv2: Conv::new(be, cout, cout, 3, vb.pp("conv2"))?,
            shortcut: (cin != cout).then(|| Conv::new(be, cin, cout, 1, vb.pp("conv_shortcut"))).transpose()?,
            fused: be == Backend::ConvrsFused,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let h = self.conv1.forward(&self.norm1.forward(x)?.silu()?)?;
        let h = self.norm2.forward(&h)?.silu()?;
        let shortcut = match &self.shortcut {
            Some(s) => s.forward(x)?,
            None => x.clone(),
        };
        self.conv2.forward_add(&h, &shortcut, self.fused)
    }
}

/// Single-head self-attention over the latent's pixels (the decoder's mid block).
struct Attention {
    norm: GroupNorm,
    q: Linear,
    k: Linear,
    v: Linear,
    out: Linear,
}

impl Attention {
    fn new(c: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(Attention { norm: group_norm(32, c, 1e-6, vb.pp("group_norm"))?, q: linear(c, c, vb.pp("to_q"))?, k: linear(c, c, vb.pp("to_k"))?, v: linear(c, c, vb.pp("to_v"))?, out: linear(c, c, vb.pp("to_out"))? })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (b, c, h, w) = x.dims4()?;
        let t = self.norm.forward(x)?.reshape((b, c, h * w))?.transpose(1, 2)?.contiguous()?;
        let (q, k, v) = (self.q.forward(&t)?, self.k.forward(&t)?, self.v.forward(&t)?);
        let scores = (q.matmul(&k.transpose(1, 2)?.contiguous()?)? / (c as f64).sqrt())?;
        let a = candle_nn::ops::softmax_last_dim(&scores)?.matmul(&v)?;
        let a = self.out.forward(&a)?.transpose(1, 2)?.reshape((b, c, h, w))?;
        a + x
    }
}

struct Decoder {
    post_quant: Conv,
    conv_in: Conv,
    mid: (ResnetBlock, Attention, ResnetBlock),
    /// Per level: its ResNet blocks, and the convolution after the 2x nearest upsampling.
    up: Vec<(Vec<ResnetBlock>, Option<Conv>)>,
    norm_out: GroupNorm,
    conv_out: Conv,
}

impl Decoder {
    fn new(be: Backend, vb: VarBuilder) -> candle_core::Result<Self> {
        let post_quant = Conv::new(be, 4, 4, 1, vb.pp("post_quant_conv"))?;
        let vb = vb.pp("decoder");
        let conv_in = Conv::new(be, 4, 512, 3, vb.pp("conv_in"))?;
        let m = vb.pp("mid_block");
        let mid = (ResnetBlock::new(be, 512, 512, m.pp("resnets.0"))?, Attention::new(512, m.pp("attentions.0"))?, ResnetBlock::new(be, 512, 512, m.pp("resnets.1"))?);
        let channels = [512, 512, 256, 128];
        let mut up = Vec::new();
        let mut cin = 512;
        for (i, &cout) in channels.iter().enumerate() {
            let u = vb.pp(format!("up_blocks.{i}"));
            let blocks = (0..3).map(|j| ResnetBlock::new(be, if j == 0 { cin } else { cout }, cout, u.pp(format!("resnets.{j}")))).collect::<candle_core::Result<Vec<_>>>()?;
            let upsample = (i + 1 < channels.len()).then(|| Conv::new(be, cout, cout, 3, u.pp("upsamplers.0.conv"))).transpose()?;
            up.push((blocks, upsample));
            cin = cout;
        }
        Ok(Decoder { post_quant, conv_in, mid, up, norm_out: group_norm(32, 128, 1e-6, vb.pp("conv_norm_out"))?, conv_out: Conv::new(be, 128, 3, 3, vb.pp("conv_out"))? })
    }

    fn forward(&self, z: &Tensor) -> candle_core::Result<Tensor> {
        let mut x = self.conv_in.forward(&self.post_quant.forward(z)?)?;
        x = self.mid.2.forward(&self.mid.1.forward(&self.mid.0.forward(&x)?)?)?;
        for (blocks, upsample) in &self.up {
            for b in blocks {
                x = b.forward(&x)?;
            }
            if let Some(conv) = upsample {
                let (_, _, h, w) = x.dims4()?;
                x = conv.forward(&x.upsample_nearest2d(2 * h, 2 * w)?)?;
            }
        }
        self.conv_out.forward(&self.norm_out.forward(&x)?.silu()?)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut latent, mut batch, mut iters, mut dtypes) = (64usize, 1usize, 5usize, vec![DType::F32, DType::F16]);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--latent" => latent = value()?.parse()?,
            "--batch" => batch = value()?.parse()?,
            "--iters" => iters = value()?.parse()?,
            "--dtype" => dtypes = value()?.split(',').map(|s| if s == "f16" { DType::F16 } else { DType::F32 }).collect(),
            _ => return Err("usage: vae_decoder [--latent 64] [--batch 1] [--dtype f32,f16] [--iters 5]".into()),
        }
    }
    let dev = Device::new_cuda(0)?;
    println!("| dtype | latent | image | convolution | ms / decode | vs candle | rel L2 vs candle |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for dtype in dtypes {
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, dtype, &dev);
        let reference = Decoder::new(Backend::Candle, vb.clone())?;
        let z = Tensor::randn(0f32, 1.0, (batch, 4, latent, latent), &dev)?.to_dtype(dtype)?;
        let y_ref = reference.forward(&z)?;
        let t_ref = common::median_ms(&|| reference.forward(&z), &dev, 1, iters)?;
        let image = 8 * latent;
        println!("| {dtype:?} | {batch}x{latent}x{latent} | {image}x{image} | candle (im2col + cuBLAS) | {t_ref:.2} | 1.00x | 0 |");
        for be in [Backend::Convrs, Backend::ConvrsFused] {
            let model = Decoder::new(be, vb.clone())?;
            let y = model.forward(&z)?;
            let err = common::rel_l2(&y, &y_ref)?;
            let t = common::median_ms(&|| model.forward(&z), &dev, 1, iters)?;
            let name = match (be, dtype) {
                (Backend::Convrs, DType::F32) => "convrs conv (TF32)",
                (Backend::Convrs, _) => "convrs conv",
                (_, DType::F32) => "convrs, shortcut fused (TF32)",
                _ => "convrs, shortcut fused",
            };
            println!("| {dtype:?} | {batch}x{latent}x{latent} | {image}x{image} | {name} | {t:.2} | {:.2}x | {err:.2e} |", t_ref / t);
        }
    }
    Ok(())
}
