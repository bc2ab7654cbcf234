//! Layouts and tensors: literal offsets, logical access through every layout, round trips,
//! and the blocked layout's divisibility rule.

use convrs::{Conv2d, Error, Layout, Tensor};

/// A value that names its own logical coordinates, so a misplaced element is recognisable.
fn tag(n: usize, c: usize, h: usize, w: usize) -> f64 {
    (((n * 100 + c) * 100 + h) * 100 + w) as f64
}

/// Small enough for the debug build, N and C multiples of 16 for the blocked layout, and every
/// extent different so that swapped dimensions show.
const DIMS: [usize; 4] = [32, 48, 3, 5];

#[test]
fn literal_offsets_plain_layouts() {
    let d = [2, 3, 4, 5];
    // (n, c, h, w), NCHW, NHWC, HWCN offsets, worked out by hand.
    let cases = [
        ((0, 0, 0, 0), 0, 0, 0),
        ((0, 0, 0, 1), 1, 3, 6),
        ((0, 0, 1, 0), 5, 15, 30),
        ((0, 1, 0, 0), 20, 1, 2),
        ((1, 0, 0, 0), 60, 60, 1),
        ((0, 1, 2, 3), 33, 40, 80),
        ((1, 2, 3, 4), 119, 119, 119),
    ];
    for ((n, c, h, w), nchw, nhwc, hwcn) in cases {
        assert_eq!(Layout::Nchw.offset(d, n, c, h, w), nchw, "NCHW {:?}", (n, c, h, w));
        assert_eq!(Layout::Nhwc.offset(d, n, c, h, w), nhwc, "NHWC {:?}", (n, c, h, w));
        assert_eq!(Layout::Hwcn.offset(d, n, c, h, w), hwcn, "HWCN {:?}", (n, c, h, w));
    }
}

#[test]
fn literal_offsets_blocked_layout() {
    // Memory order (N/16=2, H=3, W=5, C/16=2, 16 n, 16 c): strides 7680, 2560, 512, 256, 16, 1.
    let d = [32, 32, 3, 5];
    let cases = [
        ((0, 0, 0, 0), 0),
        ((0, 1, 0, 0), 1),
        ((1, 0, 0, 0), 16),
        ((0, 16, 0, 0), 256),
        ((0, 0, 0, 1), 512),
        ((0, 0, 1, 0), 2560),
        ((16, 0, 0, 0), 7680),
        ((17, 18, 2, 3), 7680 + 16 + 256 + 2 + 2 * 2560 + 3 * 512),
        ((31, 31, 2, 4), 15359),
    ];
    for ((n, c, h, w), want) in cases {
        assert_eq!(Layout::Nhwc16n16c.offset(d, n, c, h, w), want, "{:?}", (n, c, h, w));
    }
    // The tensor's storage agrees with the offsets.
    let t = Tensor::from_fn(d, Layout::Nhwc16n16c, tag).unwrap();
    assert_eq!(t.data()[14610], tag(17, 18, 2, 3));
    assert_eq!(t.data()[16], tag(1, 0, 0, 0));
    assert_eq!(t.data()[256], tag(0, 16, 0, 0));
    assert_eq!(t.data()[15359], tag(31, 31, 2, 4));
}

#[test]
fn literal_offsets_blocked_filter_layout() {
    // Dims read (K=32, C=48, R=3, S=5); memory order (R=3, S=5, C/16=3, K/16=2, 16 k, 16 c):
    // strides 7680, 1536, 512, 256, 16, 1 (input channel innermost, like NHWC16n16c's tiles).
    let d = [32, 48, 3, 5];
    let cases = [
        ((0, 0, 0, 0), 0),
        ((0, 1, 0, 0), 1),
        ((1, 0, 0, 0), 16),
        ((16, 0, 0, 0), 256),
        ((0, 16, 0, 0), 512),
        ((0, 0, 0, 1), 1536),
        ((0, 0, 1, 0), 7680),
        // k%16 = 1, k/16 = 1, c%16 = 1, c/16 = 2, r = 2, s = 4.
        ((17, 33, 2, 4), 16 + 256 + 1 + 2 * 512 + 2 * 7680 + 4 * 1536),
        ((17, 33, 2, 4), 22801),
        ((31, 47, 2, 4), 23039),
    ];
    for ((k, c, r, s), want) in cases {
        assert_eq!(Layout::Hwcn16n16c.offset(d, k, c, r, s), want, "{:?}", (k, c, r, s));
    }
    let t = Tensor::from_fn(d, Layout::Hwcn16n16c, tag).unwrap();
    assert_eq!(t.data()[1], tag(0, 1, 0, 0));
    assert_eq!(t.data()[16], tag(1, 0, 0, 0));
    assert_eq!(t.data()[22801], tag(17, 33, 2, 4));
    assert_eq!(t.data()[23039], tag(31, 47, 2, 4));
    assert_eq!("rsck16k16c".parse::<Layout>().unwrap(), Layout::Hwcn16n16c);
    assert_eq!("HWCN16n16c".parse::<Layout>().unwrap(), Layout::Hwcn16n16c);
    assert!("rsck16c16k".parse::<Layout>().is_err(), "the old tile order is gone");
    assert!(matches!(Tensor::random([8, 16, 1, 1], Layout::Hwcn16n16c, 1), Err(Error::InvalidArgument(_))));
}

#[test]
fn storage_order_of_each_layout() {
    // The first elements in memory walk the innermost dimension of each layout.
    let first = |l: Layout| Tensor::from_fn(DIMS, l, tag).unwrap().data()[..3].to_vec();
    assert_eq!(first(Layout::Nchw), [tag(0, 0, 0, 0), tag(0, 0, 0, 1), tag(0, 0, 0, 2)]);
    assert_eq!(first(Layout::Nhwc), [tag(0, 0, 0, 0), tag(0, 1, 0, 0), tag(0, 2, 0, 0)]);
    assert_eq!(first(Layout::Hwcn), [tag(0, 0, 0, 0), tag(1, 0, 0, 0), tag(2, 0, 0, 0)]);
    assert_eq!(first(Layout::Nhwc16n16c), [tag(0, 0, 0, 0), tag(0, 1, 0, 0), tag(0, 2, 0, 0)]);
    let blocked = Tensor::from_fn(DIMS, Layout::Nhwc16n16c, tag).unwrap();
    assert_eq!(blocked.data()[16], tag(1, 0, 0, 0));
}

#[test]
fn get_reads_the_same_logical_element_in_every_layout() {
    for layout in Layout::ALL {
        let t = Tensor::from_fn(DIMS, layout, tag).unwrap();
        assert_eq!((t.dims(), t.layout(), t.len()), (DIMS, layout, DIMS.iter().product()));
        for n in 0..DIMS[0] {
            for c in 0..DIMS[1] {
                for h in 0..DIMS[2] {
                    for w in 0..DIMS[3] {
                        assert_eq!(t.get(n, c, h, w), tag(n, c, h, w), "{layout} at {:?}", (n, c, h, w));
                    }
                }
            }
        }
        // Every element stored exactly once.
        let mut seen: Vec<u64> = t.data().iter().map(|&v| v as u64).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), t.len(), "{layout}");
    }
}

#[test]
fn round_trips_between_every_pair() {
    let originals: Vec<_> = Layout::ALL.iter().map(|&l| Tensor::from_fn(DIMS, l, tag).unwrap()).collect();
    for a in &originals {
        for b in &originals {
            let converted = a.to_layout(b.layout()).unwrap();
            assert_eq!(&converted, b, "{} -> {}", a.layout(), b.layout());
            assert_eq!(&converted.to_layout(a.layout()).unwrap(), a, "{} -> {} -> back", a.layout(), b.layout());
        }
    }
}

#[test]
fn random_tensors_round_trip_and_agree_across_layouts() {
    let base = Tensor::random(DIMS, Layout::Nchw, 5).unwrap();
    assert!(base.data().iter().all(|v| (-1.0..1.0).contains(v)));
    // Different seeds give different data; the same seed, the same logical tensor in any layout.
    assert_ne!(base, Tensor::random(DIMS, Layout::Nchw, 6).unwrap());
    for a in Layout::ALL {
        let ta = Tensor::random(DIMS, a, 5).unwrap();
        assert_eq!(ta.to_layout(Layout::Nchw).unwrap(), base, "{a}");
        for b in Layout::ALL {
            assert_eq!(ta.to_layout(b).unwrap().to_layout(a).unwrap(), ta, "{a} -> {b} -> {a}");
        }
    }
}

#[test]
fn plain_layouts_take_any_dims() {
    let dims = [3, 5, 2, 7];
    let t = Tensor::from_fn(dims, Layout::Nchw, tag).unwrap();
    for l in [Layout::Nhwc, Layout::Hwcn] {
        let u = t.to_layout(l).unwrap();
        assert_eq!(u.get(2, 4, 1, 6), tag(2, 4, 1, 6));
        assert_eq!(u.to_layout(Layout::Nchw).unwrap(), t);
    }
}

#[test]
fn blocked_layout_rejects_n_or_c_not_multiple_of_16() {
    for dims in [[8, 16, 2, 2], [16, 8, 2, 2], [17, 32, 1, 1], [32, 1, 1, 1]] {
        let len = dims.iter().product();
        let bad = |r: Result<Tensor<f32>, Error>| matches!(r, Err(Error::InvalidArgument(_)));
        assert!(bad(Tensor::new(dims, Layout::Nhwc16n16c, vec![0.0; len])), "new {dims:?}");
        assert!(bad(Tensor::from_fn(dims, Layout::Nhwc16n16c, |_, _, _, _| 0.0)), "from_fn {dims:?}");
        assert!(bad(Tensor::random(dims, Layout::Nhwc16n16c, 1)), "random {dims:?}");
        let plain = Tensor::random(dims, Layout::Nhwc, 1).unwrap();
        assert!(bad(plain.to_layout(Layout::Nhwc16n16c)), "to_layout {dims:?}");
        assert!(Layout::Nhwc16n16c.check_dims(dims).is_err());
    }
    assert!(Tensor::random([16, 32, 1, 1], Layout::Nhwc16n16c, 1).is_ok());
}

#[test]
fn map_keeps_dims_and_layout() {
    let t = Tensor::from_fn([16, 16, 2, 1], Layout::Nhwc16n16c, |n, c, h, _| (n + c + h) as f32 * 0.5).unwrap();
    let h = t.map(half::f16::from_f32);
    assert_eq!((h.dims(), h.layout()), (t.dims(), t.layout()));
    assert_eq!(h.map(|v| v.to_f32()), t); // halves of small integers are exact in f16
    let mut m = t.clone();
    m.data_mut()[0] = 99.0;
    assert_eq!(m.get(0, 0, 0, 0), 99.0);
    assert_eq!(m.into_data().len(), 512);
}

#[test]
fn names_parse_and_display() {
    let cases = [("NCHW", Layout::Nchw), ("nhwc", Layout::Nhwc), ("Hwcn", Layout::Hwcn), ("nhwc16n16c", Layout::Nhwc16n16c)];
    for (s, l) in cases {
        assert_eq!(s.parse::<Layout>().unwrap(), l);
    }
    let shown: Vec<String> = Layout::ALL.iter().map(|l| l.to_string()).collect();
    assert_eq!(shown, ["NCHW", "NHWC", "HWCN", "NHWC16n16c", "HWCN16n16c"]);
    assert!(matches!("NCHW16".parse::<Layout>(), Err(Error::InvalidArgument(_))));
    assert!(matches!("".parse::<Layout>(), Err(Error::InvalidArgument(_))));
}

/// The padding the tensor-core kernels run on is exact: a problem zero-padded to the kernel's
/// multiples (extra images, channels and filters all zero), with its output cropped back, gives
/// the same f64 sums as the problem itself (zeros add exactly nothing), in any layout pair.
#[test]
fn zero_padding_to_kernel_multiples_changes_no_output() {
    use convrs::conv2d_cpu;
    use convrs::registry::by_name;
    let problems = [
        Conv2d::new(2, 3, 9, 11, 6, 3, 3).with_pad(1),
        Conv2d { stride: (2, 1), dilation: (1, 2), ..Conv2d::new(3, 5, 13, 12, 7, 3, 3) },
        Conv2d::new(1, 1, 16, 20, 1, 5, 5).with_pad(2),
    ];
    for kernel in ["wmma_nhwc", "wmma_nhwcnc"] {
        let k = by_name(kernel).unwrap();
        for (i, p) in problems.iter().enumerate() {
            let run = k.run_problem(p);
            assert_ne!(run, *p, "{kernel} on {p}: the test wants a problem that needs padding");
            let x = Tensor::random(p.input_shape(), Layout::Nchw, 10 + i as u64).unwrap();
            let w = Tensor::random(p.filter_shape(), Layout::Nchw, 20 + i as u64).unwrap();
            let reference = conv2d_cpu(p, &x, &w).unwrap();
            let (xl, wl, _) = k.layouts;
            let (xp, wp) = (x.zero_padded(run.input_shape(), xl).unwrap(), w.zero_padded(run.filter_shape(), wl).unwrap());
            let padded = conv2d_cpu(&run, &xp, &wp).unwrap();
            let cropped = padded.cropped(p.output_shape(), Layout::Nchw).unwrap();
            assert_eq!(cropped.data(), reference.data(), "{kernel} on {p}");
        }
    }
}
