//! Transposed 2-D convolution on the same kernels. A transposed convolution of stride `s` is `s`
//! x `s` ordinary convolutions, one per output phase (the outputs `o = q*s + a`): phase `a` takes
//! the filter taps `k = k0, k0 + s, ...` with `k0 = (a + p) mod s`, flipped, with in- and
//! output channels swapped, over the input padded so that output `q` reads inputs
//! `q + (a + p) div s - m`. The phases' outputs interleave into the result (one copy, by candle).
//! Stride 1 is one phase (any dilation). What does not map (a phase without taps, a phase that
//! would need negative padding, dilation with stride) runs on candle's `conv_transpose2d`.

use candle_core::{Module, Tensor};
use candle_nn::{Conv2dConfig, ConvTranspose2dConfig};
use convrs::Precision;

use crate::conv2d::{Conv2d, Fallback};

/// One phase along one axis: its flipped taps, symmetric padding, and where its `q` range
/// starts in the convolution's output.
#[derive(Clone, Debug, PartialEq)]
struct Phase {
    taps: Vec<u32>,
    pad: usize,
    crop: usize,
}

/// The phases along an axis of input length `i`, filter `k`, stride `s`, padding `p`, dilation
/// `d`, output length `o`; `None` where one does not map. Each phase yields `ceil(o / s)` outputs.
fn phases(i: usize, k: usize, s: usize, p: usize, d: usize, o: usize) -> Option<Vec<Phase>> {
    if s > 1 && d != 1 {
        return None;
    }
    let q = o.div_ceil(s);
    (0..s)
        .map(|a| {
            let (k0, c) = ((a + p) % s, (a + p) / s);
            if k0 >= k {
                return None;
            }
            let m = (k - k0).div_ceil(s);
            // Output q reads input q + c - m' (m' the tap's index), i.e. with the taps flipped,
            // input q - left + j*d for j < m.
            let left = (d * (m - 1)) as isize - c as isize;
            if left < 0 {
                return None;
            }
            let left = left as usize;
            // The convolution's output, i + 2*pad - d*(m-1), must reach crop + q.
            let need = (q + d * (m - 1)).saturating_sub(i + left);
            let pad = left.max(need);
            let taps = (0..m).rev().map(|j| (k0 + j * s) as u32).collect();
            Some(Phase { taps, pad, crop: pad - left })
        })
        .collect()
}

/// `candle_nn::ConvTranspose2d`'s twin on convrs's kernels (weights `[C_in, C_out, R, S]`, as
/// candle and PyTorch hold them): for stride 1 one convolution, for stride `s` the `s * s`
/// phases (see the module docs), each a [`Conv2d`] with the bias in its epilogue, planned and
/// cached like any other.
///
/// ```no_run
/// use candle_core::{Device, Module, Tensor};
/// use candle_nn::ConvTranspose2dConfig;
/// let dev = Device::new_cuda(0)?;
/// let w = Tensor::randn(0f32, 0.1, (64, 32, 4, 4), &dev)?; // C_in, C_out, R, S
/// let up = convrs_candle::ConvTranspose2d::new(w, None, ConvTranspose2dConfig { padding: 1, stride: 2, ..Default::default() })?;
/// let y = up.forward(&Tensor::randn(0f32, 1.0, (2, 64, 16, 16), &dev)?)?; // (2, 32, 32, 32)
/// # Ok::<(), candle_core::Error>(())
/// ```
pub struct ConvTranspose2d {
    weight: Tensor,
    bias: Option<Tensor>,
    config: ConvTranspose2dConfig,
    precision: Precision,
    /// Per input (H, W): the phases' layers, row-major over (phase along H, phase along W), and
    /// the crops; planned at the first forward of that size.
    plans: std::sync::Mutex<std::collections::HashMap<(usize, usize), std::sync::Arc<Option<Phased>>>>,
}

/// The phase layers of one input size.
struct Phased {
    layers: Vec<Conv2d>,
    crops: Vec<(usize, usize)>,
    per_phase: (usize, usize),
    out: (usize, usize),
}

impl ConvTranspose2d {
    pub fn new(weight: Tensor, bias: Option<Tensor>, config: ConvTranspose2dConfig) -> candle_core::Result<Self> {
        weight.dims4()?;
        Ok(ConvTranspose2d { weight, bias, config, precision: Precision::Fp32, plans: Default::default() })
    }

    /// The precision of fp32 layers (see [`Conv2d::with_precision`]).
    pub fn with_precision(self, precision: Precision) -> Self {
        ConvTranspose2d { precision, plans: Default::default(), ..self }
    }

    /// The output's (H, W) for an input's.
    fn output_hw(&self, h: usize, w: usize) -> candle_core::Result<(usize, usize)> {
        let (_, _, r, s) = self.weight.dims4()?;
        let c = self.config;
        let len = |i: usize, k: usize| -> candle_core::Result<usize> {
            let full = (i - 1) * c.stride + c.dilation * (k - 1) + c.output_padding + 1;
            full.checked_sub(2 * c.padding).filter(|&o| o > 0).ok_or_else(|| candle_core::Error::Msg(format!("conv_transpose2d: padding {} leaves no output of {i} inputs", c.padding)))
        };
        Ok((len(h, r)?, len(w, s)?))
    }

    /// The phase layers for an input of (h, w), or `None` where candle's own transposed
    /// convolution must run it.
    fn plan(&self, h: usize, w: usize) -> candle_core::Result<Option<Phased>> {
        let (_, _, r, s) = self.weight.dims4()?;
        let c = self.config;
        let (oh, ow) = self.output_hw(h, w)?;
        let (Some(ph), Some(pw)) = (phases(h, r, c.stride, c.padding, c.dilation, oh), phases(w, s, c.stride, c.padding, c.dilation, ow)) else {
            return Ok(None);
        };
        let dev = self.weight.device();
        let mut layers = Vec::new();
        let mut crops = Vec::new();
        for a in &ph {
            for b in &pw {
                let taps = |t: &[u32]| Tensor::new(t, dev);
                // [C_in, C_out, R, S] -> the phase's taps, flipped -> [C_out, C_in, M_h, M_w].
                let sub = self.weight.index_select(&taps(&a.taps)?, 2)?.index_select(&taps(&b.taps)?, 3)?.transpose(0, 1)?.contiguous()?;
                let cfg = Conv2dConfig { padding: 0, stride: 1, dilation: c.dilation, groups: 1, cudnn_fwd_algo: None };
                let mut layer = Conv2d::new(sub, self.bias.clone(), cfg).with_precision(self.precision);
                layer.geometry = [(a.pad, b.pad), (1, 1), (c.dilation, c.dilation)];
                layer.fallback = Fallback::Padded(a.pad, b.pad);
                layers.push(layer);
                crops.push((a.crop, b.crop));
            }
        }
        Ok(Some(Phased { layers, crops, per_phase: (oh.div_ceil(c.stride), ow.div_ceil(c.stride)), out: (oh, ow) }))
    }

    /// Whether convrs runs an input of (h, w) (else candle's `conv_transpose2d` does).
    pub fn runs_on_convrs(&self, h: usize, w: usize) -> candle_core::Result<bool> {
        Ok(self.plan(h, w)?.is_some())
    }
}

impl Module for ConvTranspose2d {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (n, _, h, w) = x.dims4()?;
        let phased = {
            let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
            match plans.get(&(h, w)) {
                Some(p) => p.clone(),
                None => {
                    let p = std::sync::Arc::new(self.plan(h, w)?);
                    plans.insert((h, w), p.clone());
                    p
                }
            }
        };
        let Some(ph) = &*phased else {
            let c = self.config;
            let y = x.conv_transpose2d(&self.weight, c.padding, c.output_padding, c.stride, c.dilation)?;
            return match &self.bias {
                None => Ok(y),
                Some(b) => y.broadcast_add(&b.reshape((1, b.dims1()?, 1, 1))?),
            };
        };
        let (qh, qw) = ph.per_phase;
        let outs = ph.layers.iter().zip(&ph.crops).map(|(l, &(ch, cw))| l.forward(x)?.narrow(2, ch, qh)?.narrow(3, cw, qw)).collect::<candle_core::Result<Vec<_>>>()?;
        let s = self.config.stride;
        let k = outs[0].dim(1)?;
        let y = if s == 1 {
            outs.into_iter().next().expect("one phase")
        } else {
            // (s*s, N, K, qh, qw) -> (N, K, qh, s, qw, s) -> (N, K, qh*s, qw*s).
            Tensor::stack(&outs, 0)?.reshape((s, s, n, k, qh, qw))?.permute((2, 3, 4, 0, 5, 1))?.contiguous()?.reshape((n, k, qh * s, qw * s))?
        };
        let (oh, ow) = ph.out;
        if (qh * s, qw * s) == (oh, ow) { Ok(y) } else { y.narrow(2, 0, oh)?.narrow(3, 0, ow) }
    }
}

/// `candle_nn::conv_transpose2d`'s twin (weights `weight` and `bias` from `vb`).
pub fn conv_transpose2d(in_channels: usize, out_channels: usize, kernel_size: usize, config: ConvTranspose2dConfig, vb: candle_nn::VarBuilder) -> candle_core::Result<ConvTranspose2d> {
    let inner = candle_nn::conv_transpose2d(in_channels, out_channels, kernel_size, config, vb)?;
    ConvTranspose2d::new(inner.weight().clone(), inner.bias().cloned(), config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The phases reproduce the transposed convolution's sum on a 1-D example, tap by tap.
    #[test]
    fn phases_cover_every_tap_once() {
        for (i, k, s, p, d, op) in [(5, 4, 2, 1, 1, 0), (7, 3, 2, 1, 1, 1), (6, 5, 3, 2, 1, 0), (4, 3, 1, 1, 2, 0), (6, 2, 2, 0, 1, 0), (5, 3, 1, 0, 1, 0)] {
            let o = (i - 1) * s + d * (k - 1) + op + 1 - 2 * p;
            let x: Vec<f64> = (0..i).map(|v| (v * 7 % 5) as f64 + 1.0).collect();
            let w: Vec<f64> = (0..k).map(|v| (v * 3 % 4) as f64 - 1.5).collect();
            let mut want = vec![0.0; o];
            for (ii, xv) in x.iter().enumerate() {
                for (kk, wv) in w.iter().enumerate() {
                    let pos = (ii * s + kk * d) as isize - p as isize;
                    if (0..o as isize).contains(&pos) {
                        want[pos as usize] += xv * wv;
                    }
                }
            }
            let ph = phases(i, k, s, p, d, o).expect("maps");
            let q = o.div_ceil(s);
            let mut got = vec![0.0; o];
            for (a, phase) in ph.iter().enumerate() {
                // The phase's ordinary convolution: padded input, flipped taps, cropped.
                let m = phase.taps.len();
                let len = i + 2 * phase.pad - d * (m - 1);
                assert!(len >= phase.crop + q, "{i} {k} {s} {p} {d}: phase {a} too short");
                for qq in 0..q {
                    let oo = qq * s + a;
                    if oo >= o {
                        continue;
                    }
                    let mut acc = 0.0;
                    for (j, &t) in phase.taps.iter().enumerate() {
                        let src = (qq + phase.crop + j * d) as isize - phase.pad as isize;
                        if (0..i as isize).contains(&src) {
                            acc += x[src as usize] * w[t as usize];
                        }
                    }
                    got[oo] = acc;
                }
            }
            assert_eq!(got, want, "i={i} k={k} s={s} p={p} d={d} op={op}");
        }
        // A stride larger than the filter leaves phases without taps: candle runs those.
        assert_eq!(phases(4, 2, 3, 0, 1, 11), None);
    }
}
