//! GPU tests of the Hopper kernels (every policy of `convrs_spec::hopper`, from the registry, in
//! fp16 and bf16, fp32 for the TF32 and 3xTF32 policies: Hopper's warpgroup MMA, sm_90a) against the f64 CPU reference on the same
//! rounded inputs, both output types, NaN-poisoned outputs. They need compute capability 9.0:
//! elsewhere each test announces that it was skipped (the plans refuse other devices, which
//! `wgmma_plans_refuse_other_devices` checks on the CPU).

use convrs::{Algorithm, Conv2d, DType, DeviceModel, Error};
use convrs_tests::{check_shapes_both_outputs, hopper_or_skip, property_test_gpu};

/// Every Hopper kernel of the registry with each element type it reads (fp16 and bf16; fp32
/// for the TF32 and 3xTF32 policies, run at their own precision).
fn hopper() -> Vec<(Algorithm, DType)> {
    let all = convrs_tests::kernels(|k| matches!(k.algorithm, Algorithm::Wgmma(_)));
    let half = convrs::plan::hopper::POLICIES.iter().filter(|p| p.math == convrs_spec::hopper::Math::Half).count();
    if convrs_tests::kernels_only().is_none() {
        assert_eq!(all.len(), 2 * half + (convrs::plan::hopper::POLICIES.len() - half));
    }
    all
}

/// Every Hopper kernel that reads 16-bit data.
fn hopper_16bit() -> Vec<(Algorithm, DType)> {
    hopper().into_iter().filter(|(_, d)| *d != DType::F32).collect()
}

#[test]
fn wgmma_matches_cpu_on_random_problems() {
    let Some(gpu) = hopper_or_skip("wgmma_matches_cpu_on_random_problems") else { return };
    for (algo, dtype) in hopper() {
        property_test_gpu(&gpu, algo, dtype, 64);
    }
}

/// The seed shape at small batch, every tile width, and the corners a random draw may miss.
#[test]
fn wgmma_matches_cpu_on_named_shapes() {
    let Some(gpu) = hopper_or_skip("wgmma_matches_cpu_on_named_shapes") else { return };
    let shapes = [
        Conv2d::new(2, 256, 14, 14, 512, 3, 3).with_pad(1), // the seed shape at batch 2: 128x256 tiles
        Conv2d::new(2, 64, 56, 56, 64, 3, 3).with_pad(1),   // K = 64: 128x128 or 128x64 tiles
        Conv2d::new(3, 8, 13, 11, 8, 3, 3).with_pad(1),     // C = 8, K = 8: one partial chunk each
        Conv2d::new(1, 24, 9, 7, 40, 3, 3),                 // ragged M, K not a tile multiple
        Conv2d::new(3, 40, 31, 29, 264, 1, 1).with_stride(2), // 1x1 stride 2, K spans two 256 tiles
        Conv2d::new(2, 96, 20, 23, 48, 3, 3).with_pad(2).with_dilation(2), // dilation 2, C = 1.5 k-tiles
        Conv2d { n: 2, c: 48, h: 23, w: 64, k: 72, r: 3, s: 5, pad: (1, 2), stride: (2, 1), dilation: (1, 3), precision: Default::default(), groups: 1, epilogue: Default::default() }, // per-axis values
        Conv2d::new(1, 8, 1, 1, 8, 1, 1),                   // the smallest problem
        Conv2d::new(1, 3, 33, 35, 6, 7, 7).with_pad(3),     // C = 3, K = 6: run zero-padded to 8
        // More tiles than an H100 has SMs: the persistent grids walk several tiles a block, the
        // ring carried from one tile into the next (with fewer k-tiles than stages in the 1x1).
        Conv2d::new(12, 72, 31, 29, 136, 3, 3).with_pad(1),
        Conv2d::new(16, 8, 40, 40, 256, 1, 1),
        // K <= 32: the 128x32 tile, K ragged in it, and walked several tiles a block.
        Conv2d::new(2, 32, 30, 41, 24, 5, 5).with_pad(2),
        Conv2d::new(24, 16, 31, 29, 32, 3, 3).with_pad(1),
        // Few tiles over a long reduction: split-K splits it 32 ways (325 k-tiles, one tile);
        // and two k-tiles (C = 72, 1x1), split in two.
        Conv2d::new(1, 832, 7, 7, 128, 5, 5).with_pad(2),
        Conv2d::new(3, 72, 9, 11, 40, 1, 1),
    ];
    for (algo, dtype) in hopper() {
        // Split-K refuses what it cannot split (one k-tile, or tiles that fill the GPU): the
        // shapes it takes must all pass, and it must take the two built for it. The plane kernel
        // takes the 1x1 stride-1 shapes on H*W a multiple of 8, and has its own.
        let k = algo.kernel().unwrap();
        let takes = |p: &Conv2d| k.plan(&k.run_problem(&p.with_precision(k.precision)), dtype, gpu.model()).is_ok();
        let mut taken: Vec<Conv2d> = shapes.iter().copied().filter(takes).collect();
        if let Algorithm::Wgmma(policy) = algo {
            if policy.split_k() {
                assert!(taken.contains(&shapes[13]) && taken.contains(&shapes[14]), "{algo} refused a shape built for it");
            } else if convrs_tests::is_planes(algo) {
                // Also the strided 1x1 layer without padding, on its input sampled on the
                // stride's grid (16 x 15 pixels: KernelDesc::run_problem).
                assert_eq!(taken, [shapes[4], shapes[10]], "{algo}");
                assert!(plane_shapes().iter().all(takes), "{algo} refused a plane shape");
                taken.extend(plane_shapes());
                // H*W a multiple of 4: the fp32 plane kernels by TMA, the 16-bit ones by
                // cp.async (C zero-padded to a multiple of 8).
                assert!(pixel_plane_shapes().iter().all(takes), "{algo} refused a pixel plane shape");
                taken.extend(pixel_plane_shapes());
            } else if convrs_tests::is_plane_rows(algo) {
                // W and Q multiples of 8 at column stride 1: 56x56, the per-axis values (row
                // stride 2, column dilation 3: Q = 56 of W = 64) and the 40x40 1x1.
                assert_eq!(taken, [shapes[1], shapes[6], shapes[10]], "{algo}");
                assert!(row_shapes().iter().all(takes), "{algo} refused a row shape");
                taken.extend(row_shapes());
            } else if convrs_tests::is_nchw_patch(algo) {
                // H*W a multiple of 8 at stride 1: 56x56 and the 40x40 1x1.
                assert_eq!(taken, [shapes[1], shapes[10]], "{algo}");
                assert!(patch_shapes().iter().all(takes), "{algo} refused a patch shape");
                taken.extend(patch_shapes());
            } else {
                assert_eq!(taken.len(), shapes.len(), "{algo} refused a named shape");
            }
        }
        check_shapes_both_outputs(&gpu, algo, dtype, &taken, 11);
    }
}

/// The im2col kernels on layers whose column stride folds into the channels
/// (`Conv2d::folded_w`): C short of a k-tile, S a multiple of the column stride. Their plans
/// fold it (the folded problem's shape arguments and maps over the same buffers) unless
/// `CONVRS_FOLD_W=0` (a developer's switch for measuring the unfolded launches); both must
/// match the CPU reference.
#[test]
fn wgmma_folded_column_strides_match_cpu() {
    let Some(gpu) = hopper_or_skip("wgmma_folded_column_strides_match_cpu") else { return };
    let shapes = [
        Conv2d::new(2, 32, 19, 41, 40, 5, 10).with_stride(2), // the speech layers' geometry, W odd: the last column never read
        Conv2d::new(2, 32, 19, 40, 40, 5, 10).with_stride(2), // W even
        Conv2d { stride: (1, 2), pad: (1, 0), ..Conv2d::new(3, 16, 12, 30, 24, 3, 4) }, // C = 16 -> 32, row padding
        Conv2d::new(1, 8, 9, 50, 16, 3, 6).with_stride(3),    // stride 3: 8 -> 24 channels, 48 of 50 columns read
    ];
    let folding = !std::env::var("CONVRS_FOLD_W").is_ok_and(|v| v.trim() == "0");
    for (algo, dtype) in hopper() {
        let Algorithm::Wgmma(policy) = algo else { continue };
        if !policy.im2col() {
            continue;
        }
        let k = algo.kernel().unwrap();
        for p in &shapes {
            let plan = k.plan(&k.run_problem(&p.with_precision(k.precision)), dtype, gpu.model()).unwrap();
            // Every shape folds within a 16-bit k-tile of 64 channels (fp32 k-tiles hold 32).
            if dtype != DType::F32 {
                assert_eq!(plan.fold_w, folding, "{algo} on {p}");
            }
        }
        check_shapes_both_outputs(&gpu, algo, dtype, &shapes, 13);
    }
    if !folding {
        eprintln!("wgmma_folded_column_strides_match_cpu: CONVRS_FOLD_W=0, so these shapes ran unfolded");
    }
}

/// The plane kernel's named shapes (1x1, stride 1, H*W a multiple of 8): every tile width and
/// ring depth, pixels ragged against the 64-pixel copies and the tiles (so tiles straddle
/// images), K ragged against the 128-row tile, C below, at and past one k-tile, batch 1 and 20.
fn plane_shapes() -> [Conv2d; 11] {
    [
    Conv2d::new(2, 256, 14, 16, 512, 1, 1),  // 224 pixels: 3.5 copies an image; K four row tiles
    // H*W even, not a multiple of 8: planes TMA cannot step, copied by cp.async in 8-byte
    // (H*W a multiple of 4) or 4-byte pieces, the stores in runs of 4 or 2 pixels.
    Conv2d::new(3, 128, 14, 14, 72, 1, 1),   // 196 pixels: 8-byte pieces, K ragged
    Conv2d::new(7, 72, 14, 14, 200, 1, 1),   // C = a k-tile + 8, tiles across images
    Conv2d::new(2, 192, 6, 5, 64, 1, 1),     // 30 pixels: 4-byte pieces, 3 k-tiles
    Conv2d::new(5, 40, 10, 5, 136, 1, 1),    // 50 pixels, C < 64
    Conv2d::new(5, 64, 28, 28, 192, 1, 1),   // 784 pixels: 13 copies an image, tiles across images
    Conv2d::new(1, 64, 56, 56, 64, 1, 1),    // ResNet's 56x56 at batch 1, K half a row tile
    Conv2d::new(20, 40, 8, 9, 264, 1, 1),    // 72 pixels, C < 64, K = 2 tiles + 8, 20 images
    Conv2d::new(3, 136, 20, 20, 136, 1, 1),  // C = 2 k-tiles + 8
    Conv2d::new(1, 512, 20, 20, 256, 1, 1),  // YOLOv8's batch-1 layer
    Conv2d::new(4, 8, 1, 8, 8, 1, 1),        // one row of 8 pixels, C = K = 8
    ]
}

/// The row kernel's named shapes (W and Q multiples of 8, column stride 1): Q against the
/// 64-pixel copies (32, 112: a second copy a row, partly past Q; Q = W + 8), K ragged against
/// the 128-row tiles and K = 8 (a warpgroup idle), C below and past whole k-tiles, R != S,
/// row stride 2, several tiles a persistent block.
fn row_shapes() -> [Conv2d; 7] {
    [
        Conv2d::new(1, 128, 28, 32, 200, 3, 3).with_pad(1),                        // Q = 32, K = 1.5 row tiles
        Conv2d::new(3, 40, 17, 112, 72, 5, 5).with_pad(2),                         // Q = 112: two copies a row
        Conv2d::new(1, 136, 12, 24, 8, 7, 7).with_pad(3),                          // K = 8; C = 2 k-tiles + 8
        Conv2d { pad: (0, 0), ..Conv2d::new(2, 24, 9, 16, 48, 3, 1) },             // R = 3, S = 1, P = 7
        Conv2d { stride: (2, 1), ..Conv2d::new(2, 32, 15, 40, 64, 3, 3).with_pad(1) }, // row stride 2
        Conv2d { pad: (1, 5), ..Conv2d::new(2, 16, 10, 8, 24, 3, 3) },              // Q = W + 8 = 16
        Conv2d::new(4, 64, 20, 64, 512, 3, 3).with_pad(1),                         // 4 x 20 x 4 row tiles
    ]
}

/// Shapes for the NCHW patch kernel (`Producer::NchwPatch`): each padded-row width (wp 16 to
/// 64), Q a multiple of 8, of 4, and odd (the stores' runs), ragged output rows against the
/// tile's, C past whole chunks, K past the widest tile, dilation, and several tiles a CTA.
fn patch_shapes() -> [Conv2d; 8] {
    [
        Conv2d::new(1, 128, 28, 28, 200, 3, 3).with_pad(1),                 // Q = 28 (runs of 4), wp 32, K = 1.5 tiles
        Conv2d::new(3, 40, 16, 60, 72, 3, 3).with_pad(1),                   // Q = 60: wp 64, four landing copies
        Conv2d::new(1, 136, 12, 24, 8, 5, 5).with_pad(2),                   // 5x5; K = 8; C = 2 chunks + 8
        Conv2d { pad: (0, 0), ..Conv2d::new(2, 24, 9, 16, 48, 3, 1) },      // R = 3, S = 1, P = 7: wp 16
        Conv2d { pad: (1, 5), ..Conv2d::new(2, 16, 10, 8, 24, 3, 3) },       // Q = W + 8 = 16: wide column padding
        Conv2d::new(4, 64, 20, 56, 512, 3, 3).with_pad(1),                  // 40 row tiles x 4 column tiles
        Conv2d::new(2, 24, 16, 20, 40, 3, 3).with_pad(2).with_dilation(2),  // dilation 2
        Conv2d::new(2, 8, 8, 15, 16, 3, 3).with_pad(1),                     // W = Q = 15: single-pixel runs
    ]
}

/// Shapes for the fp32 plane kernels (`Producer::PlanePixels`) alone: H*W a multiple of 4 but
/// not of 8 (ResNet's 14x14), ragged against the 128-pixel tiles; C past whole k-tiles; K past
/// the widest tile.
fn pixel_plane_shapes() -> [Conv2d; 2] {
    [
        Conv2d::new(3, 100, 14, 14, 72, 1, 1), // 196 pixels: 1.5 tiles an image; C = 3 k-tiles + 4
        Conv2d::new(2, 36, 6, 6, 300, 1, 1),   // 36 pixels; K = 300 over two 256-wide tiles
    ]
}

/// The 16-bit epilogue rounds the fp32 accumulators and does nothing else.
#[test]
fn wgmma_sixteen_bit_outputs_are_the_rounded_fp32_outputs() {
    let Some(gpu) = hopper_or_skip("wgmma_sixteen_bit_outputs_are_the_rounded_fp32_outputs") else { return };
    for (algo, dtype) in hopper_16bit() {
        convrs_tests::check_sixteen_bit_rounding(&gpu, algo, dtype);
    }
}

/// CPU-only: other devices are refused with the reason, so the automatic choice falls back.
#[test]
fn wgmma_plans_refuse_other_devices() {
    for (algo, dtype) in hopper() {
        let p = if convrs_tests::is_planes(algo) {
            Conv2d::new(2, 64, 8, 8, 64, 1, 1)
        } else {
            let rows = convrs_tests::is_plane_rows(algo) || convrs_tests::is_nchw_patch(algo);
            Conv2d::new(2, 64, 9, if rows { 8 } else { 9 }, 64, 3, 3).with_pad(1)
        };
        let p = p.with_precision(algo.kernel().unwrap().precision);
        assert!(algo.plan(&p, dtype, &DeviceModel::named("h100").unwrap()).is_ok(), "{algo}");
        match algo.plan(&p, dtype, &DeviceModel::named("a100").unwrap()) {
            Err(Error::Unsupported { reason, .. }) => assert!(reason.contains("compute capability 9.0"), "{reason}"),
            other => panic!("{algo} on an A100 model: {other:?}"),
        }
        let choice = convrs::select::choose(&p, dtype, convrs::Layout::Nhwc, &DeviceModel::named("a100").unwrap()).unwrap();
        assert_ne!(choice.pick, algo, "Auto picked a Hopper kernel for an A100");
    }
}

/// CPU-only: every Hopper kernel takes each shape of the 16-bit rounding check (a refusal there
/// fails the GPU test, as the split-K kernel's did on a one-k-tile 1x1 layer).
#[test]
fn wgmma_kernels_take_the_rounding_shapes() {
    let d = DeviceModel::named("h100").unwrap();
    for (algo, dtype) in hopper_16bit() {
        let k = algo.kernel().unwrap();
        let shapes = convrs_tests::sixteen_bit_rounding_shapes();
        for p in convrs_tests::rounding_shapes_taken(algo).into_iter().map(|i| shapes[i]) {
            if let Err(e) = k.plan(&k.run_problem(&p), dtype, &d) {
                panic!("{algo} ({dtype}) refuses {p}: {e}");
            }
        }
    }
}

/// CPU-only: the random problems the GPU property test draws are mostly ones each Hopper kernel
/// takes (the split-K policy refuses what it cannot split), so its 64 cases test the kernel, not
/// the refusals.
#[test]
fn wgmma_kernels_take_most_random_problems() {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;
    let d = DeviceModel::named("h100").unwrap();
    for (algo, dtype) in hopper() {
        let k = algo.kernel().unwrap();
        let strategy = convrs_tests::problems_for(algo);
        let mut runner = TestRunner::deterministic();
        let refused = (0..400).filter(|_| k.plan(&k.run_problem(&strategy.new_tree(&mut runner).unwrap().current().0.with_precision(k.precision)), dtype, &d).is_err()).count();
        assert!(refused * 5 <= 400, "{algo} ({dtype}) refuses {refused} of 400 random problems");
    }
}

/// Every Hopper 3xTF32 kernel on short reductions (up to 6 k-tiles: each k-step summed apart,
/// or the 128-wide tiles refused; longer: each k-tile) is no less accurate than the FMA kernels on the same data.
#[test]
fn wgmma_3xtf32_is_as_accurate_as_fma_on_short_reductions() {
    let Some(gpu) = hopper_or_skip("wgmma_3xtf32_is_as_accurate_as_fma_on_short_reductions") else { return };
    let x3: Vec<Algorithm> = hopper().into_iter().filter(|(a, _)| a.kernel().is_some_and(|k| k.precision == convrs::Precision::Fp32)).map(|(a, _)| a).collect();
    if convrs_tests::kernels_only().is_none() {
        assert!(x3.len() >= 3, "{x3:?}");
    }
    let ran = convrs_tests::check_as_accurate_as_fma(&gpu, &x3, &convrs_tests::short_reduction_shapes());
    assert!(ran >= x3.len(), "{ran} runs");
}
