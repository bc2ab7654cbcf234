//! The conv2d problem: its shape, the checks that make it safe to hand to a kernel, and the
//! sizes derived from it.
//!
//! Kernels index with 32-bit signed integers (faster on the GPU than 64-bit), so
//! [`Conv2d::validate`] is the single gate that guarantees every index a kernel forms fits in
//! an `i32`. Everything here uses widened, checked or saturating arithmetic so that absurd
//! shapes (say `usize::MAX`) become errors instead of overflow panics or wrapped sizes.

use std::fmt;

use crate::epilogue::Epilogue;
use crate::{Error, Precision, Result};

/// One 2-D convolution (cross-correlation, as in cuDNN and PyTorch): input `N x C x H x W`,
/// filter `K x C/G x R x S`, output `N x K x P x Q`, in `G` groups ([`Conv2d::groups`]; 1 unless
/// set): output channel `k` reads the `C/G` input channels of its group `k / (K/G)` only.
///
/// Pairs are `(along H, along W)`. The fields are public so callers can set each axis on its
/// own; the `with_*` builders set both axes at once.
///
/// ```
/// use convrs::Conv2d;
/// let p = Conv2d::new(2, 3, 32, 32, 8, 3, 3).with_pad(1).with_stride(2);
/// p.validate()?;
/// assert_eq!(p.output_hw(), (16, 16));
/// assert_eq!(p.output_shape(), [2, 8, 16, 16]);
/// assert_eq!(p.flops(), 2.0 * (2 * 8 * 16 * 16 * 3 * 3 * 3) as f64);
/// # Ok::<(), convrs::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2d {
    /// Batch size N.
    pub n: usize,
    /// Input channels C.
    pub c: usize,
    /// Input height H.
    pub h: usize,
    /// Input width W.
    pub w: usize,
    /// Output channels K.
    pub k: usize,
    /// Filter height R.
    pub r: usize,
    /// Filter width S.
    pub s: usize,
    /// Zero padding on each side, `(along H, along W)`.
    pub pad: (usize, usize),
    /// Step between output positions, `(along H, along W)`.
    pub stride: (usize, usize),
    /// Step between filter taps, `(along H, along W)`; 1 is a dense filter.
    pub dilation: (usize, usize),
    /// How fp32 data may be multiplied ([`Precision`]; ignored for 16-bit data): like cuDNN's
    /// math type, part of the convolution's description. [`Precision::Fp32`] unless set.
    pub precision: Precision,
    /// Groups G (PyTorch's `groups`, cuDNN's group count): G divides C and K, and each group's
    /// K/G output channels read only its C/G input channels. 1 is a dense convolution; G = C is
    /// depthwise (K = m*C, m the channel multiplier).
    pub groups: usize,
    /// What the kernel does to each output before storing it ([`Epilogue`]: scale, bias,
    /// residual, activation); [`Epilogue::NONE`] unless set. Its operands are given at the call
    /// ([`crate::conv2d_fused`]).
    pub epilogue: Epilogue,
}

/// Widest value every kernel index must stay within.
const INDEX_LIMIT: u128 = i32::MAX as u128;

/// Product in `u128`, saturating so that even four `usize::MAX` factors cannot panic.
fn product(factors: &[usize]) -> u128 {
    factors.iter().fold(1u128, |acc, &f| acc.saturating_mul(f as u128))
}

fn saturate_usize(v: u128) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Output extent along one axis, 0 where the filter does not fit (or a size is zero).
fn output_extent(size: usize, pad: usize, dilation: usize, taps: usize, stride: usize) -> u128 {
    if taps == 0 || stride == 0 {
        return 0;
    }
    let padded = size as u128 + 2 * pad as u128;
    let extent = dilation as u128 * (taps as u128 - 1) + 1;
    if extent > padded { 0 } else { (padded - extent) / stride as u128 + 1 }
}

impl Conv2d {
    /// A problem with no padding, unit stride and unit dilation.
    pub fn new(n: usize, c: usize, h: usize, w: usize, k: usize, r: usize, s: usize) -> Self {
        Self { n, c, h, w, k, r, s, pad: (0, 0), stride: (1, 1), dilation: (1, 1), precision: Precision::Fp32, groups: 1, epilogue: Epilogue::NONE }
    }

    /// The same problem computed at `precision` on fp32 data.
    ///
    /// ```
    /// use convrs::{Conv2d, Precision};
    /// let p = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1).with_precision(Precision::Tf32);
    /// assert_eq!(p.to_string(), "N=8 C=64 H=56 W=56 -> K=64 R=3 S=3 pad=(1,1) stride=(1,1) dilation=(1,1) precision=tf32");
    /// ```
    pub fn with_precision(self, precision: Precision) -> Self {
        Self { precision, ..self }
    }

    /// The same problem in `g` groups ([`Conv2d::groups`]).
    ///
    /// ```
    /// use convrs::Conv2d;
    /// let dw = Conv2d::new(32, 96, 56, 56, 96, 3, 3).with_pad(1).with_groups(96); // depthwise
    /// assert_eq!(dw.filter_shape(), [96, 1, 3, 3]);
    /// assert!(dw.is_depthwise());
    /// assert_eq!(dw.flops(), 2.0 * (32 * 96 * 56 * 56 * 9) as f64);
    /// ```
    pub fn with_groups(self, g: usize) -> Self {
        Self { groups: g, ..self }
    }

    /// The same problem with the fused epilogue `ep`.
    ///
    /// ```
    /// use convrs::epilogue::{Activation, Epilogue};
    /// use convrs::Conv2d;
    /// let p = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1).with_epilogue(Epilogue::NONE.with_bias().with_activation(Activation::Relu));
    /// assert!(p.to_string().ends_with(" epilogue=bias+relu"));
    /// ```
    pub fn with_epilogue(self, ep: Epilogue) -> Self {
        Self { epilogue: ep, ..self }
    }

    /// Input channels per group, `C/G` (the filter's second dimension).
    pub fn group_c(&self) -> usize {
        self.c / self.groups.max(1)
    }

    /// Whether every group has one input channel (`G = C`, `K = m*C`): a depthwise convolution
    /// (a dense one when C = 1).
    pub fn is_depthwise(&self) -> bool {
        self.groups == self.c
    }

    /// A strided 1x1 convolution without padding reads only the pixels on its stride's grid:
    /// it is the stride-1 1x1 convolution of the input sampled on that grid (`[N, C, P, Q]`,
    /// pixel `(p, q)` the input's `(p * stride_h, q * stride_w)`). That problem, for such a
    /// problem; `None` for every other (stride 1, a larger filter, padding).
    ///
    /// ```
    /// use convrs::Conv2d;
    /// let p = Conv2d::new(8, 256, 56, 56, 128, 1, 1).with_stride(2);
    /// assert_eq!(p.subsampled(), Some(Conv2d::new(8, 256, 28, 28, 128, 1, 1)));
    /// assert_eq!(p.subsampled().unwrap().output_shape(), p.output_shape());
    /// assert_eq!(Conv2d::new(8, 256, 56, 56, 128, 3, 3).with_stride(2).subsampled(), None);
    /// ```
    pub fn subsampled(&self) -> Option<Conv2d> {
        let strided = self.stride != (1, 1);
        if !(strided && self.r == 1 && self.s == 1 && self.pad == (0, 0)) {
            return None;
        }
        let (p, q) = self.output_hw();
        Some(Conv2d { h: p, w: q, stride: (1, 1), dilation: (1, 1), ..*self })
    }

    /// A convolution at column stride f >= 2, with S a multiple of f, no column padding, column
    /// dilation 1 and one group, has its column stride folded into the channels: input columns
    /// `f*q + s .. f*q + s + f - 1` (s a multiple of f) are f*C contiguous channels of NHWC, so
    /// it is the convolution at column stride 1 of S/f taps of f*C channels over W/f (rounded
    /// down) such pixels, with the same output. That problem reads the same bytes: the NHWC
    /// input with its rows W*C elements apart (the last `W mod f` columns are never read), the
    /// KRSC filter as K x R x S/f x fC. `None` for every other problem.
    ///
    /// The 5x10 speech layers at stride 2 on 32 channels fill a 64-channel k-tile this way
    /// (notes/hopper.md §22).
    ///
    /// ```
    /// use convrs::Conv2d;
    /// let p = Conv2d::new(16, 32, 79, 341, 32, 5, 10).with_stride(2);
    /// let f = p.folded_w().unwrap();
    /// assert_eq!((f.c, f.w, f.s, f.stride), (64, 170, 5, (2, 1)));
    /// assert_eq!(f.output_shape(), p.output_shape());
    /// assert_eq!(Conv2d::new(16, 32, 79, 341, 32, 5, 5).with_stride(2).folded_w(), None); // S odd
    /// ```
    pub fn folded_w(&self) -> Option<Conv2d> {
        let f = self.stride.1;
        if f < 2 || self.s % f != 0 || self.pad.1 != 0 || self.dilation.1 != 1 || self.groups != 1 || self.w < self.s {
            return None;
        }
        Some(Conv2d { c: f * self.c, w: self.w / f, s: self.s / f, stride: (self.stride.0, 1), ..*self })
    }

    /// The grid on which `run`, the problem a kernel runs for this one, samples this one's input:
    /// the stride where `run` is [`Conv2d::subsampled`] (its input smaller), else `(1, 1)`.
    pub fn sampling(&self, run: &Conv2d) -> (usize, usize) {
        if (run.h, run.w) != (self.h, self.w) { self.stride } else { (1, 1) }
    }

    /// The same problem with `p` zero padding on every side.
    pub fn with_pad(self, p: usize) -> Self {
        Self { pad: (p, p), ..self }
    }

    /// The same problem with stride `s` along both axes.
    pub fn with_stride(self, s: usize) -> Self {
        Self { stride: (s, s), ..self }
    }

    /// The same problem with dilation `d` along both axes.
    pub fn with_dilation(self, d: usize) -> Self {
        Self { dilation: (d, d), ..self }
    }

    /// Checks that the problem is well formed and that every index a kernel computes fits in
    /// an `i32`.
    ///
    /// The checks run in this order, and the first failure is returned:
    /// 1. [`Error::ZeroSize`] if any of `n, c, h, w, k, r, s`, a stride or a dilation is zero
    ///    (`dim` is the field name, with `_h`/`_w` for the pairs).
    /// 2. [`Error::Groups`] if the groups do not divide C and K.
    /// 3. [`Error::FilterLargerThanPaddedInput`] if the dilated filter, `dil*(R-1)+1`, is larger
    ///    than the padded input `H + 2*pad` (height first, then width).
    /// 4. [`Error::IndexOverflow`] if, in this order, the input element count, a padded input
    ///    extent `H + 2*pad` / `W + 2*pad`, a stride or a dilation (all of which kernels handle
    ///    as input indices; `tensor` is `"input"` and `elements` is the offending value), the
    ///    filter element count or the output element count exceeds `i32::MAX`.
    ///
    /// ```
    /// use convrs::{Conv2d, Error};
    /// assert!(Conv2d::new(1, 3, 8, 8, 4, 3, 3).validate().is_ok());
    /// assert!(matches!(Conv2d::new(1, 3, 8, 8, 0, 3, 3).validate(), Err(Error::ZeroSize { dim: "k" })));
    /// assert!(matches!(
    ///     Conv2d::new(1, 3, 2, 8, 4, 3, 3).validate(),
    ///     Err(Error::FilterLargerThanPaddedInput { axis: "height", filter_extent: 3, padded_input: 2 })
    /// ));
    /// ```
    pub fn validate(&self) -> Result<()> {
        let sizes = [
            ("n", self.n),
            ("c", self.c),
            ("h", self.h),
            ("w", self.w),
            ("k", self.k),
            ("r", self.r),
            ("s", self.s),
            ("stride_h", self.stride.0),
            ("stride_w", self.stride.1),
            ("dilation_h", self.dilation.0),
            ("dilation_w", self.dilation.1),
            ("groups", self.groups),
        ];
        if let Some(&(dim, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(Error::ZeroSize { dim });
        }
        self.epilogue.validate()?;
        if self.c % self.groups != 0 || self.k % self.groups != 0 {
            return Err(Error::Groups { groups: self.groups, c: self.c, k: self.k });
        }

        let axes = [
            ("height", self.h, self.pad.0, self.dilation.0, self.r),
            ("width", self.w, self.pad.1, self.dilation.1, self.s),
        ];
        for (axis, size, pad, dilation, taps) in axes {
            // Every operand is below 2^64, so neither expression can overflow u128.
            let padded = size as u128 + 2 * pad as u128;
            let extent = dilation as u128 * (taps as u128 - 1) + 1;
            if extent > padded {
                return Err(Error::FilterLargerThanPaddedInput {
                    axis,
                    filter_extent: saturate_usize(extent),
                    padded_input: saturate_usize(padded),
                });
            }
        }

        let overflow = |tensor: &'static str, elements: u128| {
            if elements > INDEX_LIMIT { Err(Error::IndexOverflow { tensor, elements }) } else { Ok(()) }
        };
        overflow("input", product(&[self.n, self.c, self.h, self.w]))?;
        // Kernels compute `out * stride - pad + tap * dilation`; its largest value is below
        // the padded extent, but the operands themselves are passed as i32 and must fit too.
        overflow("input", self.h as u128 + 2 * self.pad.0 as u128)?;
        overflow("input", self.w as u128 + 2 * self.pad.1 as u128)?;
        overflow("input", self.stride.0 as u128)?;
        overflow("input", self.stride.1 as u128)?;
        overflow("input", self.dilation.0 as u128)?;
        overflow("input", self.dilation.1 as u128)?;
        overflow("filter", product(&self.filter_shape()))?;
        let (p, q) = self.output_hw();
        overflow("output", product(&[self.n, self.k, p, q]))
    }

    /// Output height and width `(P, Q)`.
    ///
    /// Meaningful only once [`validate`](Self::validate) has passed; before that it never
    /// panics, but answers 0 where the filter does not fit and saturates at `usize::MAX`.
    pub fn output_hw(&self) -> (usize, usize) {
        let p = output_extent(self.h, self.pad.0, self.dilation.0, self.r, self.stride.0);
        let q = output_extent(self.w, self.pad.1, self.dilation.1, self.s, self.stride.1);
        (saturate_usize(p), saturate_usize(q))
    }

    /// Floating-point operations of the convolution, `2*N*K*P*Q*(C/G)*R*S` (a multiply and an
    /// add per tap, padding taps included, as cuDNN and most papers count them).
    pub fn flops(&self) -> f64 {
        let (p, q) = self.output_hw();
        [self.n, self.k, p, q, self.group_c(), self.r, self.s].iter().fold(2.0, |acc, &v| acc * v as f64)
    }

    /// Elements of the input, `N*C*H*W` (saturating; exact once validated).
    pub fn input_len(&self) -> usize {
        saturate_usize(product(&self.input_shape()))
    }

    /// Elements of the filter, `K*(C/G)*R*S` (saturating; exact once validated).
    pub fn filter_len(&self) -> usize {
        saturate_usize(product(&self.filter_shape()))
    }

    /// Elements of the output, `N*K*P*Q` (saturating; exact once validated).
    pub fn output_len(&self) -> usize {
        saturate_usize(product(&self.output_shape()))
    }

    /// Elements of input, filter and output together: what a convolution moves at least, read
    /// and written once each (saturating; exact once validated).
    ///
    /// ```
    /// use convrs::Conv2d;
    /// let p = Conv2d::new(1, 2, 4, 4, 2, 3, 3).with_pad(1).with_groups(2); // 32 + 18 + 32
    /// assert_eq!(p.tensor_elements(), 82);
    /// ```
    pub fn tensor_elements(&self) -> usize {
        self.input_len().saturating_add(self.filter_len()).saturating_add(self.output_len())
    }

    /// Logical input dimensions `[N, C, H, W]`.
    pub fn input_shape(&self) -> [usize; 4] {
        [self.n, self.c, self.h, self.w]
    }

    /// Logical filter dimensions `[K, C/G, R, S]`.
    pub fn filter_shape(&self) -> [usize; 4] {
        [self.k, self.group_c(), self.r, self.s]
    }

    /// Logical output dimensions `[N, K, P, Q]`.
    pub fn output_shape(&self) -> [usize; 4] {
        let (p, q) = self.output_hw();
        [self.n, self.k, p, q]
    }

    /// Fails with [`Error::ExceedsDeviceMemory`] when input and filter (`elem_bytes_in` bytes
    /// per element each) plus output (`elem_bytes_out` per element) need more than
    /// `available_bytes`.
    ///
    /// Callers holding several copies of the buffers pass multiples of the element size.
    ///
    /// ```
    /// use convrs::{Conv2d, Error};
    /// let p = Conv2d::new(1, 1, 4, 4, 1, 1, 1); // 16 + 1 + 16 elements
    /// assert!(p.check_device_memory(4, 4, 132).is_ok());
    /// assert_eq!(
    ///     p.check_device_memory(4, 4, 131),
    ///     Err(Error::ExceedsDeviceMemory { needed_bytes: 132, available_bytes: 131 })
    /// );
    /// ```
    pub fn check_device_memory(&self, elem_bytes_in: usize, elem_bytes_out: usize, available_bytes: u64) -> Result<()> {
        let inputs = product(&self.input_shape()).saturating_add(product(&self.filter_shape()));
        let needed = inputs
            .saturating_mul(elem_bytes_in as u128)
            .saturating_add(product(&self.output_shape()).saturating_mul(elem_bytes_out as u128));
        if needed > available_bytes as u128 {
            Err(Error::ExceedsDeviceMemory { needed_bytes: u64::try_from(needed).unwrap_or(u64::MAX), available_bytes })
        } else {
            Ok(())
        }
    }
}

impl fmt::Display for Conv2d {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "N={} C={} H={} W={} -> K={} R={} S={} pad=({},{}) stride=({},{}) dilation=({},{})",
            self.n,
            self.c,
            self.h,
            self.w,
            self.k,
            self.r,
            self.s,
            self.pad.0,
            self.pad.1,
            self.stride.0,
            self.stride.1,
            self.dilation.0,
            self.dilation.1
        )?;
        if self.groups != 1 {
            write!(f, " groups={}", self.groups)?;
        }
        if !self.epilogue.is_none() {
            write!(f, " epilogue={}", self.epilogue)?;
        }
        if self.precision != Precision::Fp32 {
            write!(f, " precision={}", self.precision)?;
        }
        Ok(())
    }
}

/// Parses `"N,C,H,W,K,R,S"` (seven comma-separated non-negative integers, spaces allowed
/// around each) into a problem with no padding, unit stride and unit dilation.
///
/// Zeros parse, so that [`Conv2d::validate`] can name the zero dimension precisely; anything
/// else malformed is an [`Error::InvalidArgument`].
///
/// ```
/// use convrs::{problem::parse_shape, Conv2d};
/// assert_eq!(parse_shape("1,6,768,512,6,6,6")?, Conv2d::new(1, 6, 768, 512, 6, 6, 6));
/// assert!(parse_shape("1,6,768").is_err());
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn parse_shape(s: &str) -> Result<Conv2d> {
    const NAMES: [&str; 7] = ["N", "C", "H", "W", "K", "R", "S"];
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != NAMES.len() {
        return Err(Error::InvalidArgument(format!(
            "shape `{s}` has {} comma-separated fields but needs 7: N,C,H,W,K,R,S (e.g. 1,6,768,512,6,6,6)",
            parts.len()
        )));
    }
    let mut v = [0usize; 7];
    for ((slot, part), name) in v.iter_mut().zip(&parts).zip(NAMES) {
        // usize::from_str accepts a leading '+'; refusing it keeps the format strictly digits.
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::InvalidArgument(format!(
                "shape `{s}`: {name} = `{part}` is not a non-negative integer (expected N,C,H,W,K,R,S)"
            )));
        }
        *slot = part.parse().map_err(|e| Error::InvalidArgument(format!("shape `{s}`: {name} = `{part}`: {e}")))?;
    }
    Ok(Conv2d::new(v[0], v[1], v[2], v[3], v[4], v[5], v[6]))
}

/// Parses a per-axis value: `"a"` for both axes or `"h,w"` (as `--pad 1,2` and suite files write
/// it); `what` names the option in errors.
///
/// ```
/// use convrs::problem::parse_pair;
/// assert_eq!(parse_pair("pad", "1")?, (1, 1));
/// assert_eq!(parse_pair("stride", "2,1")?, (2, 1));
/// assert!(parse_pair("pad", "1,2,3").is_err());
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn parse_pair(what: &str, s: &str) -> Result<(usize, usize)> {
    let bad = || Error::InvalidArgument(format!("{what} `{s}` is not `A` or `H,W` with non-negative integers (e.g. 1 or 1,2)"));
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let num = |t: &str| count(t).ok_or_else(bad);
    match parts.as_slice() {
        [a] => num(a).map(|v| (v, v)),
        [h, w] => Ok((num(h)?, num(w)?)),
        _ => Err(bad()),
    }
}

/// Parses a group count ([`Conv2d::groups`], `--groups` and the suite files' 14th field): a
/// non-negative integer, spaces allowed around it; `what` names it in the error. Zero parses, so
/// that [`Conv2d::validate`] can name it.
///
/// ```
/// use convrs::problem::parse_groups;
/// assert_eq!(parse_groups("--groups", " 32 ")?, 32);
/// assert!(parse_groups("--groups", "-1").unwrap_err().to_string().contains("--groups = `-1`"));
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn parse_groups(what: &str, s: &str) -> Result<usize> {
    count(s.trim()).ok_or_else(|| Error::InvalidArgument(format!("{what} = `{s}` is not a non-negative integer (G divides C and K; G = C is depthwise)")))
}

/// `t` as a non-negative integer: ASCII digits only (`usize::from_str` would take a leading '+'),
/// and in range.
fn count(t: &str) -> Option<usize> {
    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Conv2d::folded_w`]'s problem, on the same bytes read as it says (the NHWC input with
    /// rows W*C apart, the KRSC filter as is), gives the same output as the problem, exactly
    /// (small integers: every sum exact in the f64 reference); odd W, stride 3 and row strides
    /// and padding included.
    #[test]
    fn the_folded_problem_reads_the_same_bytes_to_the_same_output() {
        use crate::{conv2d_cpu, Layout, Tensor};
        let cases = [
            Conv2d::new(2, 8, 9, 21, 5, 3, 10).with_stride(2),
            Conv2d { stride: (1, 2), pad: (1, 0), ..Conv2d::new(1, 16, 7, 20, 3, 3, 4) },
            Conv2d { stride: (2, 3), dilation: (2, 1), ..Conv2d::new(3, 8, 11, 17, 4, 2, 6) },
        ];
        for p in cases {
            let f = p.folded_w().unwrap();
            let fold = p.stride.1;
            let x = Tensor::from_fn(p.input_shape(), Layout::Nhwc, |n, c, h, w| ((n * 7 + c * 5 + h * 3 + w) % 7) as f64 - 3.0).unwrap();
            let w = Tensor::from_fn(p.filter_shape(), Layout::Nhwc, |k, c, r, s| ((k * 3 + c * 5 + r * 7 + s) % 5) as f64 - 2.0).unwrap();
            // The folded input's element (n, c', h, q') at offset ((n*H + h)*W + fold*q')*C + c'
            // of the NHWC data: rows W*C apart; the filter's (k, c', r, s') at
            // ((k*R + r)*S + fold*s')*C + c' of the KRSC data.
            let x_folded = Tensor::from_fn(f.input_shape(), Layout::Nhwc, |n, c2, h, q2| x.data()[((n * p.h + h) * p.w + fold * q2) * p.c + c2]).unwrap();
            let w_folded = Tensor::from_fn(f.filter_shape(), Layout::Nhwc, |k, c2, r, s2| w.data()[((k * p.r + r) * p.s + fold * s2) * p.c + c2]).unwrap();
            let (y, yf) = (conv2d_cpu(&p, &x, &w).unwrap(), conv2d_cpu(&f, &x_folded, &w_folded).unwrap());
            assert_eq!((y.dims(), y.data()), (yf.dims(), yf.data()), "{p}");
        }
        // What does not fold: stride 1, S not a multiple of the stride, column padding or
        // dilation, groups.
        let base = Conv2d::new(1, 8, 9, 20, 8, 3, 4).with_stride(2);
        for q in [Conv2d { stride: (2, 1), ..base }, Conv2d { s: 3, ..base }, Conv2d { pad: (0, 1), ..base }, Conv2d { dilation: (1, 2), ..base }, Conv2d { groups: 2, ..base }] {
            assert_eq!(q.folded_w(), None, "{q}");
        }
    }

    #[test]
    fn output_hw_matches_formula() {
        // (H + 2p - d(R-1) - 1)/s + 1 = (10 + 2 - 4 - 1)/2 + 1 = 4; (9 + 2 - 2 - 1)/3 + 1 = 3.
        let p = Conv2d { pad: (1, 1), stride: (2, 3), dilation: (2, 1), ..Conv2d::new(1, 1, 10, 9, 1, 3, 3) };
        assert_eq!(p.output_hw(), (4, 3));
    }

    #[test]
    fn absurd_sizes_do_not_panic() {
        let m = usize::MAX;
        let p = Conv2d { pad: (m, m), stride: (1, 1), dilation: (m, m), ..Conv2d::new(m, m, m, m, m, m, m) };
        let _ = p.output_hw();
        let _ = p.flops();
        let _ = (p.input_len(), p.filter_len(), p.output_len());
        assert!(p.validate().is_err());
        assert!(p.check_device_memory(m, m, u64::MAX).is_err());
    }

    #[test]
    fn display_names_every_field() {
        let p = Conv2d { pad: (1, 2), stride: (3, 4), dilation: (5, 6), ..Conv2d::new(1, 6, 768, 512, 6, 7, 8) };
        assert_eq!(p.to_string(), "N=1 C=6 H=768 W=512 -> K=6 R=7 S=8 pad=(1,2) stride=(3,4) dilation=(5,6)");
    }

    #[test]
    fn parse_accepts_spaces() {
        assert_eq!(parse_shape(" 1, 2 ,3,4,5,6, 7 ").unwrap(), Conv2d::new(1, 2, 3, 4, 5, 6, 7));
    }
}
