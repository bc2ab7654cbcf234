//! Every way a problem or buffer is refused, each matched on its exact error variant.

use convrs::problem::parse_shape;
use convrs::{Conv2d, Error, Layout, Tensor};

const I32_MAX: usize = i32::MAX as usize;

fn ok() -> Conv2d {
    Conv2d::new(2, 3, 8, 9, 4, 3, 3)
}

#[test]
fn baseline_is_valid() {
    assert_eq!(ok().validate(), Ok(()));
}

#[test]
fn zero_size_for_each_dimension() {
    let base = ok();
    let cases: [(&str, Conv2d); 11] = [
        ("n", Conv2d { n: 0, ..base }),
        ("c", Conv2d { c: 0, ..base }),
        ("h", Conv2d { h: 0, ..base }),
        ("w", Conv2d { w: 0, ..base }),
        ("k", Conv2d { k: 0, ..base }),
        ("r", Conv2d { r: 0, ..base }),
        ("s", Conv2d { s: 0, ..base }),
        ("stride_h", Conv2d { stride: (0, 1), ..base }),
        ("stride_w", Conv2d { stride: (1, 0), ..base }),
        ("dilation_h", Conv2d { dilation: (0, 1), ..base }),
        ("dilation_w", Conv2d { dilation: (1, 0), ..base }),
    ];
    for (dim, p) in cases {
        assert_eq!(p.validate(), Err(Error::ZeroSize { dim }), "{p}");
        // Derived sizes stay defined (no panic, no division by zero) on invalid problems.
        let _ = (p.output_hw(), p.flops(), p.output_len());
    }
    assert_eq!(base.with_stride(0).validate(), Err(Error::ZeroSize { dim: "stride_h" }));
    assert_eq!(base.with_dilation(0).validate(), Err(Error::ZeroSize { dim: "dilation_h" }));
}

#[test]
fn filter_larger_than_padded_input_height() {
    let err = |filter_extent, padded_input| Err(Error::FilterLargerThanPaddedInput { axis: "height", filter_extent, padded_input });
    assert_eq!(Conv2d::new(1, 1, 2, 9, 1, 3, 3).validate(), err(3, 2));
    assert_eq!(Conv2d::new(1, 1, 2, 9, 1, 5, 3).with_pad(1).validate(), err(5, 4));
    assert_eq!(Conv2d::new(1, 1, 6, 9, 1, 3, 1).with_dilation(3).validate(), err(7, 6));
    // Exactly fitting is fine: one output row.
    let fits = Conv2d::new(1, 1, 4, 9, 1, 6, 3).with_pad(1);
    assert_eq!(fits.validate(), Ok(()));
    assert_eq!(fits.output_hw().0, 1);
}

#[test]
fn filter_larger_than_padded_input_width() {
    let err = |filter_extent, padded_input| Err(Error::FilterLargerThanPaddedInput { axis: "width", filter_extent, padded_input });
    assert_eq!(Conv2d::new(1, 1, 9, 2, 1, 3, 3).validate(), err(3, 2));
    let p = Conv2d { pad: (0, 2), dilation: (1, 4), ..Conv2d::new(1, 1, 9, 3, 1, 3, 3) };
    assert_eq!(p.validate(), err(9, 7));
}

#[test]
fn absurd_values_are_errors_not_panics() {
    let m = usize::MAX;
    let p = Conv2d::new(1, 1, 5, 5, 1, 3, 3).with_dilation(m);
    assert_eq!(
        p.validate(),
        Err(Error::FilterLargerThanPaddedInput { axis: "height", filter_extent: m, padded_input: 5 })
    );
    let p = Conv2d::new(1, 1, 5, 5, 1, m, 3).with_pad(m);
    assert!(p.validate().is_err());
    let p = Conv2d::new(m, m, m, m, m, 1, 1);
    assert!(matches!(p.validate(), Err(Error::IndexOverflow { tensor: "input", .. })));
    assert!(p.check_device_memory(4, 4, u64::MAX).is_err());
}

#[test]
fn index_overflow_input() {
    let p = Conv2d::new(1, 1, 50_000, 50_000, 1, 1, 1);
    assert_eq!(p.validate(), Err(Error::IndexOverflow { tensor: "input", elements: 2_500_000_000 }));
    // The boundary: i32::MAX (a prime, so one long row) elements are fine, one more is not.
    assert_eq!(Conv2d::new(1, 1, 1, I32_MAX, 1, 1, 1).validate(), Ok(()));
    assert_eq!(
        Conv2d::new(1, 1, 1, I32_MAX + 1, 1, 1, 1).validate(),
        Err(Error::IndexOverflow { tensor: "input", elements: 1 << 31 })
    );
}

#[test]
fn index_overflow_padded_input_extent() {
    // A tiny input, but padded coordinates beyond i32 would wrap inside the kernels.
    let p = Conv2d::new(1, 1, 1, 1, 1, 1, 1).with_pad(1 << 30);
    assert_eq!(p.validate(), Err(Error::IndexOverflow { tensor: "input", elements: (1 << 31) + 1 }));
    let p = Conv2d { pad: (0, 1 << 30), ..Conv2d::new(1, 1, 1, 1, 1, 1, 1) };
    assert_eq!(p.validate(), Err(Error::IndexOverflow { tensor: "input", elements: (1 << 31) + 1 }));
}

#[test]
fn index_overflow_stride_and_dilation_passed_as_i32() {
    let p = Conv2d::new(1, 1, 4, 4, 1, 1, 1).with_stride(1 << 31);
    assert_eq!(p.validate(), Err(Error::IndexOverflow { tensor: "input", elements: 1 << 31 }));
    let p = Conv2d::new(1, 1, 4, 4, 1, 1, 1).with_dilation(1 << 31);
    assert_eq!(p.validate(), Err(Error::IndexOverflow { tensor: "input", elements: 1 << 31 }));
    assert_eq!(Conv2d::new(1, 1, 4, 4, 1, 1, 1).with_stride(I32_MAX).with_dilation(I32_MAX).validate(), Ok(()));
}

#[test]
fn index_overflow_filter() {
    let p = Conv2d::new(1, 1, 150, 150, 100_000, 150, 150);
    assert_eq!(p.validate(), Err(Error::IndexOverflow { tensor: "filter", elements: 2_250_000_000 }));
}

#[test]
fn index_overflow_output() {
    let p = Conv2d::new(1, 1, 46_000, 46_000, 2, 1, 1);
    assert_eq!(p.validate(), Err(Error::IndexOverflow { tensor: "output", elements: 4_232_000_000 }));
    // Padding grows the output beyond the input.
    let p = Conv2d::new(1, 1, 46_000, 46_000, 1, 1, 1).with_pad(500);
    assert_eq!(p.validate(), Err(Error::IndexOverflow { tensor: "output", elements: 47_000 * 47_000 }));
}

#[test]
fn errors_come_in_order() {
    // Zero beats a filter that does not fit.
    assert_eq!(Conv2d::new(1, 0, 2, 2, 1, 5, 5).validate(), Err(Error::ZeroSize { dim: "c" }));
    // A filter that does not fit beats an overflowing input.
    assert!(matches!(
        Conv2d::new(1, 1, 50_000, 50_000, 1, 50_001, 1).validate(),
        Err(Error::FilterLargerThanPaddedInput { axis: "height", .. })
    ));
    // Input overflow is reported before filter and output overflow.
    assert!(matches!(
        Conv2d::new(1, 1, 50_000, 50_000, 100_000, 1, 1).validate(),
        Err(Error::IndexOverflow { tensor: "input", .. })
    ));
}

#[test]
fn exceeds_device_memory() {
    // 16 input + 1 filter elements at 4 bytes, 16 output elements at 4 bytes: 132 bytes.
    let p = Conv2d::new(1, 1, 4, 4, 1, 1, 1);
    assert_eq!(p.check_device_memory(4, 4, 132), Ok(()));
    assert_eq!(p.check_device_memory(4, 4, 131), Err(Error::ExceedsDeviceMemory { needed_bytes: 132, available_bytes: 131 }));
    // f16 inputs, f32 output: 17*2 + 16*4 = 98 bytes.
    assert_eq!(p.check_device_memory(2, 4, 97), Err(Error::ExceedsDeviceMemory { needed_bytes: 98, available_bytes: 97 }));
    // A realistic problem against a realistic card: 64x64x56x56 fp32 in and out is ~103 MB.
    let big = Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1);
    assert_eq!(big.check_device_memory(4, 4, 80 << 30), Ok(()));
    assert!(matches!(big.check_device_memory(4, 4, 64 << 20), Err(Error::ExceedsDeviceMemory { .. })));
}

#[test]
fn buffer_size_from_tensor_new() {
    assert_eq!(
        Tensor::new([1, 2, 3, 4], Layout::Nchw, vec![0.0f32; 23]),
        Err(Error::BufferSize { tensor: "tensor", expected: 24, got: 23 })
    );
    assert!(matches!(Tensor::new([1, 2, 3, 4], Layout::Hwcn, vec![0u8; 25]), Err(Error::BufferSize { expected: 24, got: 25, .. })));
    assert!(Tensor::new([1, 2, 3, 4], Layout::Nhwc, vec![0.0f32; 24]).is_ok());
    // Dims whose product overflows are refused, not wrapped.
    assert!(matches!(Tensor::new([usize::MAX, 2, 1, 1], Layout::Nchw, vec![0u8; 0]), Err(Error::InvalidArgument(_))));
}

#[test]
fn parse_shape_accepts_seven_integers() {
    assert_eq!(parse_shape("1,6,768,512,6,6,6"), Ok(Conv2d::new(1, 6, 768, 512, 6, 6, 6)));
    assert_eq!(parse_shape(" 64, 64,56,56 ,64,3,3"), Ok(Conv2d::new(64, 64, 56, 56, 64, 3, 3)));
}

#[test]
fn parse_shape_rejects_garbage() {
    let garbage = [
        "",
        "1,2,3",
        "1,2,3,4,5,6",
        "1,2,3,4,5,6,7,8",
        "a,b,c,d,e,f,g",
        "1,2,3,4,5,6,x",
        "1,2,,4,5,6,7",
        "1,2,3,4,5,6,-7",
        "1,2,3,4,5,6,+7",
        "1,2,3,4,5,6,7.5",
        "1;2;3;4;5;6;7",
        "1x2x3x4x5x6x7",
        "1,2,3,4,5,6,99999999999999999999999",
    ];
    for s in garbage {
        assert!(matches!(parse_shape(s), Err(Error::InvalidArgument(_))), "`{s}` parsed as {:?}", parse_shape(s));
    }
    // The message says what was expected.
    let Err(Error::InvalidArgument(msg)) = parse_shape("1,2,3") else { panic!() };
    assert!(msg.contains("N,C,H,W,K,R,S"), "{msg}");
}

#[test]
fn parse_shape_allows_zeros_that_validate_rejects() {
    let p = parse_shape("1,0,8,8,4,3,3").unwrap();
    assert_eq!(p.c, 0);
    assert_eq!(p.validate(), Err(Error::ZeroSize { dim: "c" }));
    assert_eq!(parse_shape("1,1,8,8,4,3,0").unwrap().validate(), Err(Error::ZeroSize { dim: "s" }));
}

#[test]
fn error_messages_are_informative() {
    let e = Conv2d::new(1, 1, 50_000, 50_000, 1, 1, 1).validate().unwrap_err();
    assert!(e.to_string().contains("2500000000"), "{e}");
    let e = Conv2d::new(1, 1, 2, 9, 1, 3, 3).validate().unwrap_err();
    assert!(e.to_string().contains("height"), "{e}");
}
