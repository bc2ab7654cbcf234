//! Memory layouts of 4-D tensors, and a host tensor that knows its layout.
//!
//! A tensor's logical dimensions are always `[N, C, H, W]` (for filters read `[K, C, R, S]`);
//! the layout only decides where each logical element lives in memory. Keeping the two apart
//! lets the CPU reference and the tests read any layout through one accessor, while kernels get
//! the exact memory order they were written for.

use std::fmt;
use std::str::FromStr;

use crate::random::SplitMix64;
use crate::{Error, Result};

/// Batch and channel block of [`Layout::Nhwc16n16c`].
const BLOCK: usize = 16;

/// Where element `(n, c, h, w)` of a tensor lives in memory.
///
/// Filters use the same enum with `(N, C, H, W)` read as `(K, C, R, S)`: KCRS is
/// [`Nchw`](Layout::Nchw), KRSC is [`Nhwc`](Layout::Nhwc), RSCK is [`Hwcn`](Layout::Hwcn).
///
/// ```
/// use convrs::Layout;
/// let dims = [2, 3, 4, 5]; // N, C, H, W
/// assert_eq!(Layout::Nchw.offset(dims, 1, 2, 3, 4), 119); // the last element
/// assert_eq!(Layout::Nhwc.offset(dims, 0, 1, 0, 0), 1);   // channels are innermost
/// assert_eq!("nhwc".parse::<Layout>()?, Layout::Nhwc);
/// # Ok::<(), convrs::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `W` innermost, then `H`, `C`, `N` (PyTorch's default; KCRS for filters).
    Nchw,
    /// `C` innermost, then `W`, `H`, `N` (channels-last; KRSC for filters).
    Nhwc,
    /// `N` innermost, then `C`, `W`, `H` (RSCK for filters).
    Hwcn,
    /// Blocked channels-last for tensor-core kernels: memory order
    /// `(N/16, H, W, C/16, 16 [n], 16 [c])`, so each `(h, w)` position holds 16x16 tiles of
    /// batch x channel. Needs `N` and `C` to be multiples of 16.
    Nhwc16n16c,
    /// Blocked filter layout for tensor-core kernels, read as `(K, C, R, S)`: memory order
    /// `(R, S, C/16, K/16, 16 [k], 16 [c])` ("RSCK16k16c"), so each filter tap holds 16x16 tiles
    /// of output x input channel with the reduction (input channel) contiguous, like the input's
    /// tiles: the GEMM's B operand column-major. Needs `K` and `C` to be multiples of 16.
    Hwcn16n16c,
}

impl Layout {
    /// Every layout, for iteration in tests and CLIs.
    pub const ALL: [Layout; 5] = [Layout::Nchw, Layout::Nhwc, Layout::Hwcn, Layout::Nhwc16n16c, Layout::Hwcn16n16c];

    /// The conventional name: `"NCHW"`, `"NHWC"`, `"HWCN"`, `"NHWC16n16c"` or `"HWCN16n16c"`.
    pub fn name(&self) -> &'static str {
        match self {
            Layout::Nchw => "NCHW",
            Layout::Nhwc => "NHWC",
            Layout::Hwcn => "HWCN",
            Layout::Nhwc16n16c => "NHWC16n16c",
            Layout::Hwcn16n16c => "HWCN16n16c",
        }
    }

    /// Fails with [`Error::InvalidArgument`] if a tensor of logical `dims` cannot be stored in
    /// this layout (only the blocked layouts have a requirement: `N` and `C` multiples of 16).
    pub fn check_dims(&self, dims: [usize; 4]) -> Result<()> {
        if matches!(self, Layout::Nhwc16n16c | Layout::Hwcn16n16c) && (!dims[0].is_multiple_of(BLOCK) || !dims[1].is_multiple_of(BLOCK)) {
            return Err(Error::InvalidArgument(format!(
                "layout {} needs N and C (K and C for filters) to be multiples of {BLOCK}, got dims {dims:?}",
                self.name()
            )));
        }
        Ok(())
    }

    /// Memory offset of logical element `(n, c, h, w)` of a tensor with logical `dims`
    /// `[N, C, H, W]`.
    ///
    /// The coordinates must be in range and, for the blocked layout, `dims` must pass
    /// [`check_dims`](Self::check_dims); otherwise the offset is meaningless (it is not checked
    /// here because this sits in inner loops; [`Tensor`] checks both).
    pub fn offset(&self, dims: [usize; 4], n: usize, c: usize, h: usize, w: usize) -> usize {
        let [nn, cc, hh, ww] = dims;
        match self {
            Layout::Nchw => ((n * cc + c) * hh + h) * ww + w,
            Layout::Nhwc => ((n * hh + h) * ww + w) * cc + c,
            Layout::Hwcn => ((h * ww + w) * cc + c) * nn + n,
            Layout::Nhwc16n16c => {
                let c_blocks = cc / BLOCK;
                ((((n / BLOCK * hh + h) * ww + w) * c_blocks + c / BLOCK) * BLOCK + n % BLOCK) * BLOCK + c % BLOCK
            }
            Layout::Hwcn16n16c => {
                let (c_blocks, n_blocks) = (cc / BLOCK, nn / BLOCK);
                ((((h * ww + w) * c_blocks + c / BLOCK) * n_blocks + n / BLOCK) * BLOCK + n % BLOCK) * BLOCK + c % BLOCK
            }
        }
    }

    /// Whether it is a plain strided 4-D layout (NCHW, NHWC, HWCN), which the device transforms
    /// reach, rather than a blocked one.
    pub fn is_plain(&self) -> bool {
        self.strides([1, 1, 1, 1]).is_some()
    }

    /// The logical axes (0 = N, 1 = C, 2 = H, 3 = W) in memory order, slowest first, and each
    /// logical axis's element stride, for the plain layouts (`None` for the blocked ones, which
    /// are not strided 4-D arrays).
    ///
    /// ```
    /// use convrs::Layout;
    /// assert_eq!(Layout::Nhwc.strides([2, 3, 4, 5]), Some(([0, 2, 3, 1], [60, 1, 15, 3])));
    /// assert_eq!(Layout::Nhwc16n16c.strides([16, 16, 4, 5]), None);
    /// ```
    pub fn strides(&self, dims: [usize; 4]) -> Option<([usize; 4], [usize; 4])> {
        let order = match self {
            Layout::Nchw => [0, 1, 2, 3],
            Layout::Nhwc => [0, 2, 3, 1],
            Layout::Hwcn => [2, 3, 1, 0],
            Layout::Nhwc16n16c | Layout::Hwcn16n16c => return None,
        };
        let mut strides = [0; 4];
        let mut step = 1;
        for &axis in order.iter().rev() {
            strides[axis] = step;
            step *= dims[axis];
        }
        Some((order, strides))
    }

    /// The logical coordinates `(n, c, h, w)` stored at memory offset `i`: the inverse of
    /// [`offset`](Self::offset), so conversions can walk the destination in memory order.
    fn coords(&self, dims: [usize; 4], mut i: usize) -> (usize, usize, usize, usize) {
        let [nn, cc, hh, ww] = dims;
        // Peels the innermost (fastest-varying) index off `i`.
        let mut next = |extent: usize| {
            let v = i % extent;
            i /= extent;
            v
        };
        match self {
            Layout::Nchw => {
                let (w, h, c) = (next(ww), next(hh), next(cc));
                (i, c, h, w)
            }
            Layout::Nhwc => {
                let (c, w, h) = (next(cc), next(ww), next(hh));
                (i, c, h, w)
            }
            Layout::Hwcn => {
                let (n, c, w) = (next(nn), next(cc), next(ww));
                (n, c, i, w)
            }
            Layout::Nhwc16n16c => {
                let (ci, ni, cb, w, h) = (next(BLOCK), next(BLOCK), next(cc / BLOCK), next(ww), next(hh));
                (i * BLOCK + ni, cb * BLOCK + ci, h, w)
            }
            Layout::Hwcn16n16c => {
                let (ci, ni, nb, cb, w) = (next(BLOCK), next(BLOCK), next(nn / BLOCK), next(cc / BLOCK), next(ww));
                (nb * BLOCK + ni, cb * BLOCK + ci, i, w)
            }
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layout {
    type Err = Error;

    /// Case-insensitive [`name`](Layout::name)s, plus the filter spellings `KCRS`, `KRSC`,
    /// `RSCK` and `RSCK16k16c`.
    fn from_str(s: &str) -> Result<Self> {
        let aliases = [("KCRS", Layout::Nchw), ("KRSC", Layout::Nhwc), ("RSCK", Layout::Hwcn), ("RSCK16k16c", Layout::Hwcn16n16c)];
        Layout::ALL
            .iter()
            .map(|l| (l.name(), *l))
            .chain(aliases)
            .find(|(name, _)| name.eq_ignore_ascii_case(s.trim()))
            .map(|(_, l)| l)
            .ok_or_else(|| {
                let names: Vec<_> = Layout::ALL.iter().map(|l| l.name()).collect();
                Error::InvalidArgument(format!("unknown layout `{s}`; expected one of: {}", names.join(", ")))
            })
    }
}

/// A host tensor: logical dimensions `[N, C, H, W]`, a [`Layout`], and the elements in that
/// layout's memory order.
///
/// ```
/// use convrs::{Layout, Tensor};
/// let t = Tensor::from_fn([1, 2, 2, 2], Layout::Nchw, |_, c, h, w| (c * 100 + h * 10 + w) as f32)?;
/// let u = t.to_layout(Layout::Nhwc)?;
/// assert_eq!(u.get(0, 1, 1, 0), 110.0);               // same logical element
/// assert_eq!(&u.data()[..4], &[0.0, 100.0, 1.0, 101.0]); // channels innermost
/// # Ok::<(), convrs::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T> {
    dims: [usize; 4],
    layout: Layout,
    data: Vec<T>,
}

/// Element count of `dims`, or an error instead of a wrapped product.
fn element_count(dims: [usize; 4]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::InvalidArgument(format!("tensor dims {dims:?} have more elements than fit in memory")))
}

impl<T: Copy> Tensor<T> {
    /// Wraps `data`, which must already be in `layout`'s memory order.
    ///
    /// Fails with [`Error::BufferSize`] if `data` does not hold exactly `N*C*H*W` elements,
    /// and [`Error::InvalidArgument`] if `layout` cannot hold `dims`.
    pub fn new(dims: [usize; 4], layout: Layout, data: Vec<T>) -> Result<Self> {
        layout.check_dims(dims)?;
        let expected = element_count(dims)?;
        if data.len() != expected {
            return Err(Error::BufferSize { tensor: "tensor", expected, got: data.len() });
        }
        Ok(Self { dims, layout, data })
    }

    /// A tensor whose element `(n, c, h, w)` is `f(n, c, h, w)`.
    ///
    /// `f` is called once per element, in `layout`'s memory order.
    pub fn from_fn(dims: [usize; 4], layout: Layout, mut f: impl FnMut(usize, usize, usize, usize) -> T) -> Result<Self> {
        layout.check_dims(dims)?;
        let len = element_count(dims)?;
        let data = (0..len)
            .map(|i| {
                let (n, c, h, w) = layout.coords(dims, i);
                f(n, c, h, w)
            })
            .collect();
        Ok(Self { dims, layout, data })
    }

    /// Logical dimensions `[N, C, H, W]` (`[K, C, R, S]` for filters).
    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }

    /// The memory layout of [`data`](Self::data).
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The elements in memory order, ready to upload to a kernel expecting this layout.
    pub fn data(&self) -> &[T] {
        &self.data
    }

    /// The elements in memory order, for filling in place.
    pub fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The elements in memory order, without copying.
    pub fn into_data(self) -> Vec<T> {
        self.data
    }

    /// Number of elements, `N*C*H*W`.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether some dimension is zero.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Logical element `(n, c, h, w)`, whatever the layout.
    ///
    /// # Panics
    /// If a coordinate is out of range, like slice indexing (an out-of-range coordinate could
    /// otherwise land on a different, valid element).
    pub fn get(&self, n: usize, c: usize, h: usize, w: usize) -> T {
        let [nn, cc, hh, ww] = self.dims;
        assert!(
            n < nn && c < cc && h < hh && w < ww,
            "coordinates ({n}, {c}, {h}, {w}) out of range for dims {:?}",
            self.dims
        );
        self.data[self.layout.offset(self.dims, n, c, h, w)]
    }

    /// The tensor grown to `dims` with zeros in the new places (only the first two dims, N and C
    /// or K and C, may grow: a kernel that needs channel multiples runs on zero channels, which add
    /// exactly nothing), in `layout`.
    ///
    /// ```
    /// use convrs::{Layout, Tensor};
    /// let t = Tensor::from_fn([1, 3, 1, 2], Layout::Nchw, |_, c, _, w| (10 * c + w) as f32 + 1.0)?;
    /// let p = t.zero_padded([2, 8, 1, 2], Layout::Nhwc)?;
    /// assert_eq!((p.get(0, 2, 0, 1), p.get(0, 3, 0, 1), p.get(1, 0, 0, 0)), (22.0, 0.0, 0.0));
    /// assert_eq!(p.cropped([1, 3, 1, 2], Layout::Nchw)?.data(), t.data());
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn zero_padded(&self, dims: [usize; 4], layout: Layout) -> Result<Tensor<T>>
    where
        T: Default,
    {
        self.sampled_padded(dims, layout, (1, 1))
    }

    /// [`Tensor::zero_padded`] of the tensor sampled on a `(sh, sw)` grid first: pixel `(y, x)`
    /// of the result is `(y * sh, x * sw)` of this one, `dims[2..]` the grid's extent
    /// (`ceil(H / sh)`, `ceil(W / sw)`). What a kernel running a [`crate::Conv2d::subsampled`]
    /// problem reads.
    ///
    /// ```
    /// use convrs::{Layout, Tensor};
    /// let t = Tensor::from_fn([1, 1, 3, 4], Layout::Nchw, |_, _, y, x| (10 * y + x) as f32)?;
    /// let s = t.sampled_padded([1, 2, 2, 2], Layout::Nhwc, (2, 2))?;
    /// assert_eq!((s.get(0, 0, 1, 1), s.get(0, 1, 1, 1)), (22.0, 0.0)); // channel 1 is padding
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn sampled_padded(&self, dims: [usize; 4], layout: Layout, (sh, sw): (usize, usize)) -> Result<Tensor<T>>
    where
        T: Default,
    {
        if dims == self.dims && (sh, sw) == (1, 1) {
            return self.to_layout(layout);
        }
        let [n, c, h, w] = self.dims;
        if sh == 0 || sw == 0 || dims[0] < n || dims[1] < c || dims[2] != h.div_ceil(sh) || dims[3] != w.div_ceil(sw) {
            return Err(Error::InvalidArgument(format!("cannot pad dims {:?} sampled every ({sh}, {sw}) to {dims:?}: only the first two may grow", self.dims)));
        }
        Tensor::from_fn(dims, layout, |i, j, y, x| if i < n && j < c { self.get(i, j, y * sh, x * sw) } else { T::default() })
    }

    /// The leading `dims` of the tensor (the inverse of [`Tensor::zero_padded`]), in `layout`.
    pub fn cropped(&self, dims: [usize; 4], layout: Layout) -> Result<Tensor<T>> {
        if dims == self.dims {
            return self.to_layout(layout);
        }
        if dims.iter().zip(self.dims).any(|(&d, s)| d > s) {
            return Err(Error::InvalidArgument(format!("cannot crop dims {:?} to {dims:?}", self.dims)));
        }
        Tensor::from_fn(dims, layout, |i, j, y, x| self.get(i, j, y, x))
    }

    /// The same logical tensor in `layout` (a copy, also when the layout is unchanged).
    ///
    /// Fails with [`Error::InvalidArgument`] if `layout` cannot hold these dims.
    pub fn to_layout(&self, layout: Layout) -> Result<Tensor<T>> {
        if layout == self.layout {
            return Ok(self.clone());
        }
        layout.check_dims(self.dims)?;
        let data = (0..self.data.len())
            .map(|i| {
                let (n, c, h, w) = layout.coords(self.dims, i);
                self.data[self.layout.offset(self.dims, n, c, h, w)]
            })
            .collect();
        Ok(Tensor { dims: self.dims, layout, data })
    }

    /// Applies `f` to every element, keeping dims and layout (e.g. `f32` to `f16` and back).
    ///
    /// With [`to_layout`](Self::to_layout) this converts NCHW fp32 data to what the tensor-core
    /// kernels read, and their output back:
    ///
    /// ```
    /// use convrs::{Layout, Tensor};
    /// use half::f16;
    /// let x = Tensor::random([16, 32, 5, 5], Layout::Nchw, 7)?;           // NCHW fp32
    /// let blocked = x.map(f16::from_f32).to_layout(Layout::Nhwc16n16c)?;   // NHWC16n16c fp16
    /// let back = blocked.to_layout(Layout::Nchw)?.map(f32::from);
    /// assert_eq!(back.get(3, 17, 2, 4), f16::from_f32(x.get(3, 17, 2, 4)).to_f32());
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn map<U: Copy>(&self, f: impl FnMut(T) -> U) -> Tensor<U> {
        Tensor { dims: self.dims, layout: self.layout, data: self.data.iter().copied().map(f).collect() }
    }
}

impl Tensor<f32> {
    /// Values uniform in `[-1, 1)`, determined by `seed`.
    ///
    /// The values are drawn in logical (NCHW) order whatever `layout` is, so one seed gives
    /// the same logical tensor in every layout and results can be compared across layouts.
    ///
    /// ```
    /// use convrs::{Layout, Tensor};
    /// let a = Tensor::random([16, 16, 2, 3], Layout::Nchw, 9)?;
    /// let b = Tensor::random([16, 16, 2, 3], Layout::Nhwc16n16c, 9)?;
    /// assert_eq!(a, b.to_layout(Layout::Nchw)?);
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn random(dims: [usize; 4], layout: Layout, seed: u64) -> Result<Self> {
        layout.check_dims(dims)?;
        let mut data = vec![0.0f32; element_count(dims)?];
        SplitMix64::new(seed).fill_uniform_f32(&mut data);
        let nchw = Tensor { dims, layout: Layout::Nchw, data };
        if layout == Layout::Nchw { Ok(nchw) } else { nchw.to_layout(layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coords_inverts_offset() {
        let dims = [32, 16, 3, 2];
        for layout in Layout::ALL {
            let len = dims.iter().product::<usize>();
            let mut seen = vec![false; len];
            for (i, seen) in seen.iter_mut().enumerate() {
                let (n, c, h, w) = layout.coords(dims, i);
                assert!(n < dims[0] && c < dims[1] && h < dims[2] && w < dims[3], "{layout} {i}");
                assert_eq!(layout.offset(dims, n, c, h, w), i, "{layout}");
                assert!(!*seen);
                *seen = true;
            }
        }
    }

    #[test]
    fn parse_names_and_aliases() {
        for l in Layout::ALL {
            assert_eq!(l.name().parse::<Layout>().unwrap(), l);
            assert_eq!(l.name().to_lowercase().parse::<Layout>().unwrap(), l);
        }
        assert_eq!("rsck".parse::<Layout>().unwrap(), Layout::Hwcn);
        assert!(matches!("NCWH".parse::<Layout>(), Err(Error::InvalidArgument(_))));
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn get_out_of_range_panics() {
        let t = Tensor::new([1, 1, 2, 2], Layout::Nchw, vec![0u8; 4]).unwrap();
        t.get(0, 0, 0, 2);
    }
}
