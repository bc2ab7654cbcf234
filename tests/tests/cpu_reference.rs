//! `conv2d_cpu` against an independent formulation: im2col with explicit zero padding, then a
//! plain K x (C*R*S) by (C*R*S) x (N*P*Q) matrix product, all in f64.
//!
//! The oracle reads the raw NCHW buffers with its own index arithmetic and computes the
//! output size from the formula itself, so a bug shared with the library's `Layout::offset`,
//! `Tensor::get` or `Conv2d::output_hw` cannot hide.

use convrs::{conv2d_cpu, Conv2d, Error, Layout, Tensor};
use proptest::prelude::*;

/// Output extent from the textbook formula, `None` when the dilated filter does not fit.
fn out_extent(size: usize, pad: usize, dil: usize, taps: usize, stride: usize) -> Option<usize> {
    let span = (size + 2 * pad) as i64 - (dil * (taps - 1) + 1) as i64;
    (span >= 0).then(|| span as usize / stride + 1)
}

/// The oracle: NKPQ output of `p` on NCHW `x` and KCRS `w` (plain vectors).
fn im2col_conv(p: &Conv2d, x: &[f64], w: &[f64]) -> Vec<f64> {
    let (n, c, h, wd, k, r, s) = (p.n, p.c, p.h, p.w, p.k, p.r, p.s);
    let pp = out_extent(h, p.pad.0, p.dilation.0, r, p.stride.0).unwrap();
    let qq = out_extent(wd, p.pad.1, p.dilation.1, s, p.stride.1).unwrap();
    assert_eq!(x.len(), n * c * h * wd);
    assert_eq!(w.len(), k * c * r * s);
    let (rows, cols) = (c * r * s, n * pp * qq);

    // Zero-padded input, materialised so the im2col gather needs no bounds logic at all.
    let (hp, wp) = (h + 2 * p.pad.0, wd + 2 * p.pad.1);
    let mut padded = vec![0.0; n * c * hp * wp];
    for ni in 0..n {
        for ci in 0..c {
            for hi in 0..h {
                for wi in 0..wd {
                    padded[((ni * c + ci) * hp + hi + p.pad.0) * wp + wi + p.pad.1] = x[((ni * c + ci) * h + hi) * wd + wi];
                }
            }
        }
    }

    let mut col = vec![0.0; rows * cols];
    for ci in 0..c {
        for ri in 0..r {
            for si in 0..s {
                let row = (ci * r + ri) * s + si;
                for ni in 0..n {
                    for pi in 0..pp {
                        for qi in 0..qq {
                            let hh = pi * p.stride.0 + ri * p.dilation.0;
                            let ww = qi * p.stride.1 + si * p.dilation.1;
                            col[row * cols + (ni * pp + pi) * qq + qi] = padded[((ni * c + ci) * hp + hh) * wp + ww];
                        }
                    }
                }
            }
        }
    }

    // y[k][col] = sum_j w[k][j] * col[j][col], then (K, N, P, Q) -> (N, K, P, Q).
    let mut y = vec![0.0; n * k * pp * qq];
    for ki in 0..k {
        for j in 0..cols {
            let acc: f64 = (0..rows).map(|i| w[ki * rows + i] * col[i * cols + j]).sum();
            let (ni, pq) = (j / (pp * qq), j % (pp * qq));
            y[(ni * k + ki) * pp * qq + pq] = acc;
        }
    }
    y
}

/// Deterministic data independent of the library's RNG: a small LCG in [-1, 1).
fn data(len: usize, seed: u64) -> Vec<f64> {
    let mut st = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (st >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// Elementwise closeness for two f64 sums of the same products in different orders.
fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{what}: element {i}: got {g}, want {w}");
    }
}

/// Runs `conv2d_cpu` on `p` (NCHW f64 tensors built from `data`) and checks it against the oracle.
fn check(p: &Conv2d, seed: u64) {
    p.validate().unwrap_or_else(|e| panic!("{p}: {e}"));
    let xs = data(p.n * p.c * p.h * p.w, seed);
    let ws = data(p.k * p.c * p.r * p.s, seed ^ 0xABCDEF);
    let x = Tensor::new(p.input_shape(), Layout::Nchw, xs.clone()).unwrap();
    let w = Tensor::new(p.filter_shape(), Layout::Nchw, ws.clone()).unwrap();
    let y = conv2d_cpu(p, &x, &w).unwrap();
    let want = im2col_conv(p, &xs, &ws);
    let pq = (
        out_extent(p.h, p.pad.0, p.dilation.0, p.r, p.stride.0).unwrap(),
        out_extent(p.w, p.pad.1, p.dilation.1, p.s, p.stride.1).unwrap(),
    );
    assert_eq!(y.dims(), [p.n, p.k, pq.0, pq.1], "{p}");
    assert_eq!(y.layout(), Layout::Nchw);
    assert_close(y.data(), &want, &p.to_string());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_small_problems_match_im2col(
        n in 1usize..3, c in 1usize..5, h in 1usize..12, w in 1usize..12, k in 1usize..5,
        r in 1usize..5, s in 1usize..5, pad in (0usize..3, 0usize..3),
        stride in (1usize..3, 1usize..3), dilation in (1usize..3, 1usize..3), seed in any::<u64>(),
    ) {
        let p = Conv2d { n, c, h, w, k, r, s, pad, stride, dilation, precision: Default::default(), groups: 1, epilogue: Default::default() };
        let fits = dilation.0 * (r - 1) < h + 2 * pad.0 && dilation.1 * (s - 1) < w + 2 * pad.1;
        if !fits {
            prop_assert!(matches!(p.validate(), Err(Error::FilterLargerThanPaddedInput { .. })), "{}", p);
            return Ok(());
        }
        check(&p, seed);
    }
}

#[test]
fn one_by_one_filter() {
    check(&Conv2d::new(2, 3, 5, 4, 4, 1, 1), 1);
}

#[test]
fn seven_by_seven_filter() {
    check(&Conv2d::new(1, 2, 9, 10, 3, 7, 7), 2);
    check(&Conv2d::new(2, 2, 9, 10, 3, 7, 7).with_pad(3), 3);
}

#[test]
fn stride_two() {
    check(&Conv2d::new(2, 3, 11, 10, 4, 3, 3).with_stride(2), 4);
    check(&Conv2d::new(1, 2, 12, 7, 2, 2, 2).with_stride(2).with_pad(1), 5);
}

#[test]
fn dilation_two() {
    check(&Conv2d::new(1, 3, 9, 9, 2, 3, 3).with_dilation(2), 6);
    check(&Conv2d::new(2, 2, 8, 11, 3, 3, 2).with_dilation(2).with_pad(2), 7);
}

#[test]
fn padding_larger_than_one() {
    check(&Conv2d::new(1, 2, 4, 5, 3, 2, 2).with_pad(3), 8);
    // Padding wider than the filter: whole output rows and columns see only zeros.
    check(&Conv2d::new(1, 1, 3, 3, 1, 1, 1).with_pad(2), 9);
}

#[test]
fn per_axis_parameters() {
    let p = Conv2d { pad: (1, 2), stride: (2, 1), dilation: (1, 3), ..Conv2d::new(2, 3, 10, 13, 3, 3, 3) };
    check(&p, 10);
}

#[test]
fn many_rows_spread_over_threads() {
    // Hundreds of output rows, so the work is split into many items and every thread gets some.
    check(&Conv2d::new(3, 4, 40, 17, 5, 3, 3).with_pad(1), 11);
}

#[test]
fn input_and_filter_layouts_give_the_nchw_result() {
    let p = Conv2d::new(2, 3, 7, 6, 4, 3, 2).with_pad(1).with_stride(2);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 21).unwrap();
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 22).unwrap();
    let base = conv2d_cpu(&p, &x, &w).unwrap();
    let xs: Vec<f64> = x.data().iter().map(|&v| v as f64).collect();
    let ws: Vec<f64> = w.data().iter().map(|&v| v as f64).collect();
    assert_close(base.data(), &im2col_conv(&p, &xs, &ws), "NCHW");
    for xl in [Layout::Nchw, Layout::Nhwc, Layout::Hwcn] {
        for wl in [Layout::Nchw, Layout::Nhwc, Layout::Hwcn] {
            let y = conv2d_cpu(&p, &x.to_layout(xl).unwrap(), &w.to_layout(wl).unwrap()).unwrap();
            assert_eq!(y, base, "input {xl}, filter {wl}");
        }
    }
}

#[test]
fn blocked_layout_input_gives_the_nchw_result() {
    let p = Conv2d::new(16, 16, 5, 4, 16, 3, 3).with_pad(1);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 31).unwrap();
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 32).unwrap();
    let base = conv2d_cpu(&p, &x, &w).unwrap();
    let y = conv2d_cpu(&p, &x.to_layout(Layout::Nhwc16n16c).unwrap(), &w.to_layout(Layout::Nhwc16n16c).unwrap()).unwrap();
    assert_eq!(y, base);
    let xs: Vec<f64> = x.data().iter().map(|&v| v as f64).collect();
    let ws: Vec<f64> = w.data().iter().map(|&v| v as f64).collect();
    assert_close(base.data(), &im2col_conv(&p, &xs, &ws), "blocked");
}

/// Input [[1,2,3],[4,5,6],[7,8,9]] and filter [[1,2],[3,4]], results worked out by hand.
fn hand_tensors() -> (Tensor<f64>, Tensor<f64>) {
    let x = Tensor::new([1, 1, 3, 3], Layout::Nchw, (1..=9).map(f64::from).collect()).unwrap();
    let w = Tensor::new([1, 1, 2, 2], Layout::Nchw, vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    (x, w)
}

#[test]
fn hand_computed_valid() {
    // 1*1+2*2+3*4+4*5 = 37, 2+6+15+24 = 47, 4+10+21+32 = 67, 5+12+24+36 = 77.
    let (x, w) = hand_tensors();
    let y = conv2d_cpu(&Conv2d::new(1, 1, 3, 3, 1, 2, 2), &x, &w).unwrap();
    assert_eq!(y.dims(), [1, 1, 2, 2]);
    assert_eq!(y.data(), &[37.0, 47.0, 67.0, 77.0]);
}

#[test]
fn hand_computed_padded_strided() {
    // pad 1, stride 2: windows start at (-1,-1), (-1,1), (1,-1), (1,1).
    // (-1,-1): 4*1 = 4; (-1,1): 3*2 + 4*3 = 18; (1,-1): 2*4 + 4*7 = 36; (1,1): 5+12+24+36 = 77.
    let (x, w) = hand_tensors();
    let y = conv2d_cpu(&Conv2d::new(1, 1, 3, 3, 1, 2, 2).with_pad(1).with_stride(2), &x, &w).unwrap();
    assert_eq!(y.dims(), [1, 1, 2, 2]);
    assert_eq!(y.data(), &[4.0, 18.0, 36.0, 77.0]);
}

#[test]
fn hand_computed_dilated() {
    // Dilation 2 spreads the 2x2 taps over the corners: 1*1 + 2*3 + 3*7 + 4*9 = 64.
    let (x, w) = hand_tensors();
    let y = conv2d_cpu(&Conv2d::new(1, 1, 3, 3, 1, 2, 2).with_dilation(2), &x, &w).unwrap();
    assert_eq!(y.data(), &[64.0]);
}

#[test]
fn hand_computed_channels() {
    // Two input channels (the second is the first negated and shifted by 10) and two filters:
    // filter 0 sums channel 0's window; filter 1 takes channel 1's top-left tap only.
    let xs: Vec<f64> = (1..=4).map(f64::from).chain((1..=4).map(|v| 10.0 - v as f64)).collect();
    let x = Tensor::new([1, 2, 2, 2], Layout::Nchw, xs).unwrap();
    let w = Tensor::new([2, 2, 2, 2], Layout::Nchw, vec![1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]).unwrap();
    let y = conv2d_cpu(&Conv2d::new(1, 2, 2, 2, 2, 2, 2), &x, &w).unwrap();
    assert_eq!(y.dims(), [1, 2, 1, 1]);
    assert_eq!(y.data(), &[10.0, 9.0]);
}

#[test]
fn f16_and_f32_inputs_widen_exactly() {
    use half::f16;
    let p = Conv2d::new(1, 2, 5, 5, 2, 3, 3).with_pad(1);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 41).unwrap().map(f16::from_f32);
    let w = Tensor::random(p.filter_shape(), Layout::Nhwc, 42).unwrap().map(f16::from_f32);
    let y16 = conv2d_cpu(&p, &x, &w).unwrap();
    // The same values widened to f64 by hand must give the identical result.
    let y64 = conv2d_cpu(&p, &x.map(|v| f64::from(v.to_f32())), &w.map(|v| f64::from(v.to_f32()))).unwrap();
    assert_eq!(y16, y64);
    let xs: Vec<f64> = x.data().iter().map(|v| v.to_f64()).collect();
    let ws: Vec<f64> = w.to_layout(Layout::Nchw).unwrap().data().iter().map(|v| v.to_f64()).collect();
    assert_close(y16.data(), &im2col_conv(&p, &xs, &ws), "f16");
}

#[test]
fn rejects_tensors_that_do_not_match_the_problem() {
    let p = Conv2d::new(1, 2, 4, 4, 3, 3, 3);
    let x = Tensor::random(p.input_shape(), Layout::Nchw, 1).unwrap();
    let w = Tensor::random(p.filter_shape(), Layout::Nchw, 2).unwrap();
    let wrong_x = Tensor::random([1, 2, 4, 5], Layout::Nchw, 1).unwrap();
    let wrong_w = Tensor::random([3, 1, 3, 3], Layout::Nchw, 2).unwrap();
    assert!(matches!(conv2d_cpu(&p, &wrong_x, &w), Err(Error::InvalidArgument(_))));
    assert!(matches!(conv2d_cpu(&p, &x, &wrong_w), Err(Error::InvalidArgument(_))));
    // An invalid problem is refused before anything is read.
    let bad = Conv2d::new(1, 2, 2, 4, 3, 3, 3);
    assert!(matches!(conv2d_cpu(&bad, &x, &w), Err(Error::FilterLargerThanPaddedInput { .. })));
}
