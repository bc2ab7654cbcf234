//! The CPU reference every GPU result is checked against.
//!
//! It accumulates in `f64` so its own rounding error (about 1e-16 relative) is negligible next
//! to an fp32 or fp16 kernel's, and it is a direct loop nest, simple enough to trust by
//! reading. It is still fast enough for benchmark-sized problems (about 1 GFLOP in well under a
//! second on 16 cores): inputs are converted to dense NCHW `f64` once, bounds are hoisted out
//! of the innermost loop, and output rows are spread over all cores.

use std::sync::Mutex;

use crate::{Conv2d, Error, Layout, Result, Tensor};

/// The CPU reference of a fused epilogue ([`Conv2d::epilogue`]) applied to `conv`, the bare
/// convolution's output in NCHW (what [`conv2d_cpu`] returns), in f64: each element
/// [`crate::Epilogue::apply`] with its channel's `scale` and `bias` (K values each, given when
/// the epilogue names them) and its `residual` element (any layout, of the output's shape).
///
/// ```
/// use convrs::reference::apply_epilogue;
/// use convrs::{Activation, Conv2d, Epilogue, Layout, Tensor};
/// let p = Conv2d::new(1, 1, 1, 2, 2, 1, 1).with_epilogue(Epilogue::NONE.with_bias().with_activation(Activation::Relu));
/// let conv = Tensor::new(p.output_shape(), Layout::Nchw, vec![1.0, -2.0, 3.0, -4.0])?; // K = 2 planes of 2
/// let y = apply_epilogue(&p, &conv, None, Some(&[0.5, 5.0]), None::<&Tensor<f32>>)?;
/// assert_eq!(y.data(), &[1.5, 0.0, 8.0, 1.0]);
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn apply_epilogue<R: Copy + Into<f64>>(problem: &Conv2d, conv: &Tensor<f64>, scale: Option<&[f32]>, bias: Option<&[f32]>, residual: Option<&Tensor<R>>) -> Result<Tensor<f64>> {
    let ep = &problem.epilogue;
    check_dims("convolution output", conv, problem.output_shape())?;
    let conv = conv.to_layout(Layout::Nchw)?;
    for (name, wanted, v) in [("scale", ep.scale, scale), ("bias", ep.bias, bias)] {
        match v {
            Some(v) if v.len() != problem.k => return Err(Error::BufferSize { tensor: name, expected: problem.k, got: v.len() }),
            None if wanted => return Err(Error::InvalidArgument(format!("the epilogue ({ep}) reads a {name}, and none was given"))),
            _ => {}
        }
    }
    let residual = match residual {
        Some(r) => {
            check_dims("residual", r, problem.output_shape())?;
            Some(to_nchw_f64(r))
        }
        None if ep.residual => return Err(Error::InvalidArgument(format!("the epilogue ({ep}) reads a residual, and none was given"))),
        None => None,
    };
    let plane = conv.data().len() / (problem.n * problem.k).max(1);
    let out = conv
        .data()
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let k = i / plane.max(1) % problem.k;
            let at = |v: Option<&[f32]>| v.map_or(0.0, |v| v[k] as f64);
            ep.apply(v, at(scale), at(bias), residual.as_ref().map_or(0.0, |r| r[i]))
        })
        .collect();
    Tensor::new(problem.output_shape(), Layout::Nchw, out)
}

/// Output rows per work item: big enough to amortise the scheduling lock, small enough to
/// balance the load when there are few output planes (e.g. N=1, K=6 on 16 cores).
const ROWS_PER_ITEM: usize = 8;

/// Computes the convolution `problem` on the CPU, accumulating in `f64`.
///
/// `input` and `filter` may be in any [`Layout`] (and any element type that widens to `f64`,
/// such as `f32` or `half::f16`); the output is always `[N, K, P, Q]` in
/// [`Layout::Nchw`]. Uses every core (`std::thread::available_parallelism`).
///
/// Fails if the problem does not [`validate`](Conv2d::validate), or with
/// [`Error::InvalidArgument`] if a tensor's dims differ from the problem's.
///
/// ```
/// use convrs::{conv2d_cpu, Conv2d, Layout, Tensor};
/// // 1x1x2x2 input, one 1x1 filter of weight 2, padding 1: the input doubled inside a zero border.
/// let problem = Conv2d::new(1, 1, 2, 2, 1, 1, 1).with_pad(1);
/// let x = Tensor::new(problem.input_shape(), Layout::Nchw, vec![1.0f32, 2.0, 3.0, 4.0])?;
/// let w = Tensor::new(problem.filter_shape(), Layout::Nchw, vec![2.0f32])?;
/// let y = conv2d_cpu(&problem, &x, &w)?;
/// assert_eq!(y.dims(), [1, 1, 4, 4]);
/// assert_eq!(&y.data()[4..8], &[0.0, 2.0, 4.0, 0.0]);
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn conv2d_cpu<T: Copy + Into<f64> + Send + Sync>(problem: &Conv2d, input: &Tensor<T>, filter: &Tensor<T>) -> Result<Tensor<f64>> {
    problem.validate()?;
    check_dims("input", input, problem.input_shape())?;
    check_dims("filter", filter, problem.filter_shape())?;

    let x = to_nchw_f64(input);
    let wt = to_nchw_f64(filter);
    let (p, q) = problem.output_hw();
    let mut out = vec![0.0f64; problem.output_len()];
    if !out.is_empty() {
        let rows = out.chunks_mut(q * ROWS_PER_ITEM).enumerate();
        let n_items = (problem.n * problem.k * p).div_ceil(ROWS_PER_ITEM);
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(n_items);
        // Dynamic scheduling: rows near the border do less work than interior ones.
        let work = Mutex::new(rows);
        let geo = Geometry::new(problem);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    // The guard is consumed inside, so the lock is held only to take an item.
                    // A poisoned lock means another worker panicked; the scope re-raises that.
                    let next = || work.lock().ok().and_then(|mut it| it.next());
                    while let Some((item, chunk)) = next() {
                        for (i, row) in chunk.chunks_mut(q).enumerate() {
                            geo.row(&x, &wt, item * ROWS_PER_ITEM + i, row);
                        }
                    }
                });
            }
        });
    }
    Tensor::new(problem.output_shape(), Layout::Nchw, out)
}

fn check_dims<T: Copy>(name: &str, t: &Tensor<T>, expected: [usize; 4]) -> Result<()> {
    if t.dims() == expected {
        Ok(())
    } else {
        let what = if name == "filter" { "[K, C, R, S]" } else { "[N, C, H, W]" };
        Err(Error::InvalidArgument(format!(
            "the {name} has dims {:?} but the problem needs {what} = {expected:?}",
            t.dims()
        )))
    }
}

fn to_nchw_f64<T: Copy + Into<f64>>(t: &Tensor<T>) -> Vec<f64> {
    let [n, c, h, w] = t.dims();
    let mut v = Vec::with_capacity(t.len());
    for ni in 0..n {
        for ci in 0..c {
            for hi in 0..h {
                for wi in 0..w {
                    v.push(t.get(ni, ci, hi, wi).into());
                }
            }
        }
    }
    v
}

/// The problem in signed arithmetic: validate() bounded every index by i32::MAX, so `isize`
/// (at least 32 bits on every target with threads, 64 on all we build for) cannot overflow
/// on `out * stride + tap * dilation - pad`.
struct Geometry {
    c: usize,
    /// Input channels per group (the filter's second dimension) and output channels per group.
    group_c: usize,
    group_k: usize,
    h: isize,
    w: isize,
    k: usize,
    r: usize,
    s: usize,
    p: usize,
    q: usize,
    pad: (isize, isize),
    stride: (isize, isize),
    dilation: (isize, isize),
}

impl Geometry {
    fn new(pb: &Conv2d) -> Self {
        let (p, q) = pb.output_hw();
        let i = |v: usize| v as isize;
        Self {
            c: pb.c,
            group_c: pb.group_c(),
            group_k: pb.k / pb.groups.max(1),
            h: i(pb.h),
            w: i(pb.w),
            k: pb.k,
            r: pb.r,
            s: pb.s,
            p,
            q,
            pad: (i(pb.pad.0), i(pb.pad.1)),
            stride: (i(pb.stride.0), i(pb.stride.1)),
            dilation: (i(pb.dilation.0), i(pb.dilation.1)),
        }
    }

    /// Output positions `q` in `0..q` whose input column `q*stride + off` lies in `0..w`.
    fn valid_cols(&self, off: isize) -> std::ops::Range<usize> {
        let st = self.stride.1;
        // First q with q*st + off >= 0, and first q with q*st + off >= w.
        let lo = if off >= 0 { 0 } else { (-off + st - 1) / st };
        let hi = if self.w - off <= 0 { 0 } else { (self.w - off + st - 1) / st };
        let (lo, hi) = (lo as usize, (hi as usize).min(self.q));
        lo..hi.max(lo)
    }

    /// Computes output row `row_index` (a flat index over `(n, k, p)`) into `out` (length Q).
    fn row(&self, x: &[f64], wt: &[f64], row_index: usize, out: &mut [f64]) {
        let op = row_index % self.p;
        let ok = (row_index / self.p) % self.k;
        let on = row_index / (self.p * self.k);
        let (hw, rs) = (self.h as usize * self.w as usize, self.r * self.s);
        let st = self.stride.1 as usize;
        // Output channel ok reads the input channels of its group only.
        let c0 = ok / self.group_k * self.group_c;
        for gi in 0..self.group_c {
            let plane = &x[(on * self.c + c0 + gi) * hw..][..hw];
            let taps = &wt[(ok * self.group_c + gi) * rs..][..rs];
            for ri in 0..self.r {
                let ih = op as isize * self.stride.0 + ri as isize * self.dilation.0 - self.pad.0;
                if ih < 0 || ih >= self.h {
                    continue;
                }
                let x_row = &plane[ih as usize * self.w as usize..][..self.w as usize];
                for si in 0..self.s {
                    let weight = taps[ri * self.s + si];
                    let off = si as isize * self.dilation.1 - self.pad.1;
                    let cols = self.valid_cols(off);
                    if cols.is_empty() {
                        continue;
                    }
                    // valid_cols guarantees lo*st + off >= 0 and every index stays below w.
                    let first = (cols.start as isize * st as isize + off) as usize;
                    if st == 1 {
                        // Contiguous case kept separate so it vectorises.
                        for (o, &xv) in out[cols].iter_mut().zip(&x_row[first..]) {
                            *o += weight * xv;
                        }
                    } else {
                        for (o, &xv) in out[cols].iter_mut().zip(x_row[first..].iter().step_by(st)) {
                            *o += weight * xv;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_cols_bounds() {
        // w = 5, q = 3, stride 2: columns q*2 + off must be in 0..5.
        let g = Geometry { q: 3, w: 5, stride: (1, 2), ..Geometry::new(&Conv2d::new(1, 1, 5, 5, 1, 1, 1)) };
        assert_eq!(g.valid_cols(0), 0..3); // 0, 2, 4
        assert_eq!(g.valid_cols(1), 0..2); // 1, 3 (5 is out)
        assert_eq!(g.valid_cols(-1), 1..3); // 1, 3
        assert_eq!(g.valid_cols(-3), 2..3); // 1
        assert!(g.valid_cols(5).is_empty());
        assert!(g.valid_cols(-7).is_empty());
    }

    #[test]
    fn f16_inputs_work() {
        use half::f16;
        let p = Conv2d::new(1, 1, 2, 2, 1, 2, 2);
        let x = Tensor::new(p.input_shape(), Layout::Nchw, vec![1.0f32, 2.0, 3.0, 4.0]).unwrap().map(f16::from_f32);
        let w = Tensor::new(p.filter_shape(), Layout::Nchw, vec![0.5f32, 0.25, -1.0, 2.0]).unwrap().map(f16::from_f32);
        let y = conv2d_cpu(&p, &x, &w).unwrap();
        assert_eq!(y.data(), &[0.5 + 0.5 - 3.0 + 8.0]);
    }

    #[test]
    fn groups_read_their_own_channels() {
        // C = 4, K = 2, 2 groups, 1x1: y0 = w0 . (x0, x1), y1 = w1 . (x2, x3).
        let p = Conv2d::new(1, 4, 1, 1, 2, 1, 1).with_groups(2);
        let x = Tensor::new(p.input_shape(), Layout::Nchw, vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let w = Tensor::new(p.filter_shape(), Layout::Nchw, vec![10.0f32, 100.0, 1000.0, 10000.0]).unwrap();
        assert_eq!(conv2d_cpu(&p, &x, &w).unwrap().data(), &[10.0 + 200.0, 3000.0 + 40000.0]);
        // Depthwise with multiplier 2: C = 2, K = 4; channels 0, 1 read x0 and 2, 3 read x1.
        let p = Conv2d::new(1, 2, 1, 1, 4, 1, 1).with_groups(2);
        let x = Tensor::new(p.input_shape(), Layout::Nchw, vec![1.0f32, 2.0]).unwrap();
        let w = Tensor::new(p.filter_shape(), Layout::Nchw, vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(conv2d_cpu(&p, &x, &w).unwrap().data(), &[1.0, 2.0, 6.0, 8.0]);
    }

    #[test]
    fn rejects_mismatched_dims() {
        let p = Conv2d::new(1, 1, 3, 3, 1, 2, 2);
        let x = Tensor::new([1, 1, 3, 2], Layout::Nchw, vec![0.0f32; 6]).unwrap();
        let w = Tensor::new(p.filter_shape(), Layout::Nchw, vec![0.0f32; 4]).unwrap();
        assert!(matches!(conv2d_cpu(&p, &x, &w), Err(Error::InvalidArgument(_))));
    }
}
