//! ResNet-50 (torchvision's v1.5 layout: stride on the 3x3) written with candle_nn layers, run
//! end to end with candle's own convolution and with convrs's, on the same random weights and
//! inputs: the outputs compared, images/s at each batch size and dtype.
//!
//!   cargo run --release --example resnet50 -- [--batch 1,32] [--dtype f32,f16] [--iters 20] [--json FILE]
//!
//! The models differ only in `ConvBn::new`: candle_nn's `Conv2d`, convrs's `Conv2d` in its
//! place (the drop-in switch: one constructor), or convrs's `Conv2d` with the batch norm folded
//! in and ReLU and the block's residual applied in the convolution's epilogue. Weights are
//! generated (no download): convolutions Kaiming-normal, batch norms with random statistics,
//! the last batch norm of each bottleneck scaled to [0.15, 0.25] so that activations stay in
//! fp16's range.

mod common;

use candle_core::{DType, Device, Module, ModuleT, Tensor, D};
use candle_nn::{batch_norm, linear, BatchNorm, Conv2dConfig, Linear, VarBuilder, VarMap};
use convrs_candle::{Activation, Precision};

/// Where a model's convolutions run: the one argument a model changes to switch.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Backend {
    Candle,
    /// convrs's `Conv2d` in place of candle_nn's; batch norms and activations stay candle's.
    Convrs(Precision),
    /// convrs's `Conv2d` with each batch norm folded in and the activation (and the block's
    /// residual) applied in the convolution's epilogue.
    ConvrsFused(Precision),
}

enum Conv {
    Candle(candle_nn::Conv2d),
    Convrs(convrs_candle::Conv2d),
}

impl Module for Conv {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Conv::Candle(c) => c.forward(x),
            Conv::Convrs(c) => c.forward(x),
        }
    }
}

impl Backend {
    fn name(self) -> String {
        match self {
            Backend::Candle if cfg!(feature = "candle-cudnn") => "candle (cuDNN)".into(),
            Backend::Candle => "candle (im2col + cuBLAS)".into(),
            Backend::Convrs(p) => format!("convrs conv ({p} for f32)"),
            Backend::ConvrsFused(p) => format!("convrs conv+BN+act(+residual) fused ({p} for f32)"),
        }
    }
}

/// Convolution, batch norm (inference) and, where `act`, ReLU: three candle_nn-style layers, or
/// one fused convrs layer.
enum ConvBn {
    Layers { conv: Conv, bn: BatchNorm, act: bool },
    Fused(convrs_candle::Conv2d),
}

impl ConvBn {
    fn new(be: Backend, cin: usize, cout: usize, k: usize, stride: usize, act: bool, vb: VarBuilder) -> candle_core::Result<Self> {
        let cfg = Conv2dConfig { padding: k / 2, stride, ..Default::default() };
        let bn = batch_norm(cout, 1e-5, vb.pp("bn"))?;
        let vb = vb.pp("conv");
        Ok(match be {
            Backend::Candle => ConvBn::Layers { conv: Conv::Candle(candle_nn::conv2d_no_bias(cin, cout, k, cfg, vb)?), bn, act },
            Backend::Convrs(p) => ConvBn::Layers { conv: Conv::Convrs(convrs_candle::conv2d_no_bias(cin, cout, k, cfg, vb)?.with_precision(p)), bn, act },
            Backend::ConvrsFused(p) => {
                let activation = if act { Activation::Relu } else { Activation::Identity };
                ConvBn::Fused(convrs_candle::conv2d_no_bias(cin, cout, k, cfg, vb)?.with_precision(p).fuse_batch_norm(&bn)?.with_activation(activation))
            }
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            ConvBn::Layers { conv, bn, act } => {
                let y = bn.forward_t(&conv.forward(x)?, false)?;
                if *act { y.relu() } else { Ok(y) }
            }
            ConvBn::Fused(c) => c.forward(x),
        }
    }

    /// The layer with `residual` added before the activation.
    fn forward_residual(&self, x: &Tensor, residual: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            ConvBn::Layers { conv, bn, act } => {
                let y = (bn.forward_t(&conv.forward(x)?, false)? + residual)?;
                if *act { y.relu() } else { Ok(y) }
            }
            ConvBn::Fused(c) => c.forward_residual(x, residual),
        }
    }
}

struct Bottleneck {
    a: ConvBn,
    b: ConvBn,
    c: ConvBn,
    down: Option<ConvBn>,
}

impl Bottleneck {
    fn new(be: Backend, cin: usize, mid: usize, stride: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        let cout = 4 * mid;
        let down = (stride != 1 || cin != cout).then(|| ConvBn::new(be, cin, cout, 1, stride, false, vb.pp("down"))).transpose()?;
        Ok(Bottleneck {
            a: ConvBn::new(be, cin, mid, 1, 1, true, vb.pp("a"))?,
            b: ConvBn::new(be, mid, mid, 3, stride, true, vb.pp("b"))?,
            c: ConvBn::new(be, mid, cout, 1, 1, true, vb.pp("c"))?,
            down,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = self.a.forward(x)?;
        let y = self.b.forward(&y)?;
        let shortcut = match &self.down {
            Some(d) => d.forward(x)?,
            None => x.clone(),
        };
        self.c.forward_residual(&y, &shortcut)
    }
}

struct ResNet50 {
    stem: ConvBn,
    blocks: Vec<Bottleneck>,
    fc: Linear,
}

impl ResNet50 {
    fn new(be: Backend, vb: VarBuilder) -> candle_core::Result<Self> {
        let stem = ConvBn::new(be, 3, 64, 7, 2, true, vb.pp("stem"))?;
        let mut blocks = Vec::new();
        let mut cin = 64;
        for (stage, (mid, count, stride)) in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)].into_iter().enumerate() {
            for i in 0..count {
                blocks.push(Bottleneck::new(be, cin, mid, if i == 0 { stride } else { 1 }, vb.pp(format!("layer{stage}.{i}")))?);
                cin = 4 * mid;
            }
        }
        Ok(ResNet50 { stem, blocks, fc: linear(2048, 1000, vb.pp("fc"))? })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let x = self.stem.forward(x)?;
        // Max pool 3x3, stride 2, padding 1: after the ReLU every value is >= 0, so zero padding
        // is the same as -inf padding.
        let x = x.pad_with_zeros(2, 1, 1)?.pad_with_zeros(3, 1, 1)?.max_pool2d_with_stride(3, 2)?;
        let mut x = x;
        for b in &self.blocks {
            x = b.forward(&x)?;
        }
        self.fc.forward(&x.mean(D::Minus1)?.mean(D::Minus1)?)
    }
}

/// Random statistics for every batch norm, and 0.2 on the last of each bottleneck.
fn randomize_batch_norms(varmap: &VarMap, dtype: DType, dev: &Device) -> candle_core::Result<()> {
    let names: Vec<String> = varmap.data().lock().unwrap().keys().cloned().collect();
    for name in names {
        let n = varmap.data().lock().unwrap()[&name].as_tensor().elem_count();
        let u = Tensor::rand(0f32, 1f32, n, dev)?;
        let v = if name.ends_with("bn.running_mean") {
            (u - 0.5)?.affine(0.2, 0.0)?
        } else if name.ends_with("bn.running_var") {
            u.affine(0.5, 0.75)?
        } else if name.ends_with("bn.bias") {
            (u - 0.5)?.affine(0.2, 0.0)?
        } else if name.ends_with("c.bn.weight") {
            u.affine(0.1, 0.15)?
        } else if name.ends_with("bn.weight") {
            u.affine(0.5, 0.75)?
        } else {
            continue;
        };
        varmap.data().lock().unwrap()[&name].set(&v.to_dtype(dtype)?)?;
    }
    Ok(())
}

struct Args {
    batches: Vec<usize>,
    dtypes: Vec<DType>,
    iters: usize,
    json: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { batches: vec![1, 32], dtypes: vec![DType::F32, DType::F16], iters: 20, json: None };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--batch" => a.batches = value()?.split(',').map(|s| s.parse().map_err(|_| format!("bad batch size `{s}`"))).collect::<Result<_, _>>()?,
            "--dtype" => {
                a.dtypes = value()?
                    .split(',')
                    .map(|s| match s {
                        "f32" => Ok(DType::F32),
                        "f16" => Ok(DType::F16),
                        "bf16" => Ok(DType::BF16),
                        _ => Err(format!("dtype `{s}`: f32, f16 or bf16")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--iters" => a.iters = value()?.parse().map_err(|_| "bad --iters".to_string())?,
            "--json" => a.json = Some(value()?),
            "--help" | "-h" => {
                println!("resnet50 [--batch 1,32] [--dtype f32,f16,bf16] [--iters N] [--json FILE]\n\nResNet-50 through candle with candle's convolution and with convrs's, same random weights and inputs: outputs compared, images/s (median of N timed forwards, each synchronized).");
                std::process::exit(0);
            }
            f => return Err(format!("unknown flag `{f}` (try --help)")),
        }
    }
    Ok(a)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let dev = Device::new_cuda(0)?;
    let mut rows = Vec::new();
    println!("| dtype | batch | convolution | ms / forward | images/s | vs candle | rel L2 vs candle |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for &dtype in &args.dtypes {
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, dtype, &dev);
        let reference = ResNet50::new(Backend::Candle, vb.clone())?;
        randomize_batch_norms(&varmap, dtype, &dev)?;
        let mut backends = vec![Backend::Convrs(Precision::Fp32), Backend::ConvrsFused(Precision::Fp32)];
        if dtype == DType::F32 {
            backends.extend([Backend::Convrs(Precision::Tf32), Backend::ConvrsFused(Precision::Tf32)]);
        }
        for &batch in &args.batches {
            let x = Tensor::randn(0f32, 1f32, (batch, 3, 224, 224), &dev)?.to_dtype(dtype)?;
            let y_ref = reference.forward(&x)?;
            let t_ref = common::median_ms(&|| reference.forward(&x), &dev, 3, args.iters)? / 1e3;
            let mut row = |name: String, t: f64, err: f64| {
                println!("| {dtype:?} | {batch} | {name} | {:.3} | {:.1} | {:.2}x | {err:.2e} |", t * 1e3, batch as f64 / t, t_ref / t);
                rows.push(format!(
                    r#"{{"dtype":"{dtype:?}","batch":{batch},"convolution":"{name}","ms":{:.4},"images_per_s":{:.2},"speedup_vs_candle":{:.4},"rel_l2_vs_candle":{err:.3e}}}"#,
                    t * 1e3,
                    batch as f64 / t,
                    t_ref / t
                ));
            };
            row(Backend::Candle.name(), t_ref, 0.0);
            for &be in &backends {
                let model = ResNet50::new(be, vb.clone())?;
                let y = model.forward(&x)?;
                let err = common::rel_l2(&y, &y_ref)?;
                let t = common::median_ms(&|| model.forward(&x), &dev, 3, args.iters)? / 1e3;
                let name = if dtype == DType::F32 { be.name() } else { be.name().replace(" (fp32 for f32)", "") };
                row(name, t, err);
            }
            if let Some(path) = &args.json {
                std::fs::write(path, format!("[\n{}\n]\n", rows.join(",\n")))?;
            }
        }
    }
    Ok(())
}
