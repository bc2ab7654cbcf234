//! Plan for `wmma_nhwcnc`: tensor-core implicit GEMM on the blocked layouts (see
//! `kernels_gpu::tensor_core::nhwcnc`). M = P*Q*N/16 row tiles of 16 (pixel, batch tile), N = K
//! output channels; the plan picks the block tile that its cost model says finishes first.

use super::{div_ceil_u32, DeviceLimits, LaunchPlan};
use crate::dtype::DType;
use crate::{Conv2d, Error, Result};

/// SMs of the GPUs the cost model assumes (H100 SXM: 132).
const MODEL_SMS: usize = 132;

/// One compiled entry: block tile BM x BN over WM x WN warps, `chunks` 16-channel chunks per
/// pipeline step, `stages` pipeline stages, and the blocks an SM holds at once (by the registers
/// ptxas reports, 124 to 128 a thread for the 4 x 2 warp tiles and 78 to 80 for 2 x 2).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Variant {
    kernel: &'static str,
    bm: usize,
    bn: usize,
    wm: usize,
    wn: usize,
    chunks: usize,
    stages: usize,
    blocks_per_sm: usize,
}

impl Variant {
    fn threads(&self) -> usize {
        32 * self.wm * self.wn
    }
}

const fn v(kernel: &'static str, bm: usize, bn: usize, wm: usize, wn: usize, blocks_per_sm: usize) -> Variant {
    Variant { kernel, bm, bn, wm, wn, chunks: 2, stages: 3, blocks_per_sm }
}

/// Must match the `conv_kernel!` lines of `kernels_gpu::tensor_core::nhwcnc`.
const VARIANTS: [Variant; 7] = [
    v("wmma_nhwcnc_m128n256", 128, 256, 2, 8, 1),
    v("wmma_nhwcnc_m256n128", 256, 128, 4, 4, 1),
    v("wmma_nhwcnc_m128n128", 128, 128, 2, 4, 2),
    v("wmma_nhwcnc_m256n64", 256, 64, 4, 2, 2),
    v("wmma_nhwcnc_m128n64", 128, 64, 2, 2, 4),
    v("wmma_nhwcnc_m64n128", 64, 128, 1, 4, 4),
    v("wmma_nhwcnc_m64n64", 64, 64, 2, 2, 6),
];

/// Must equal `kernels_gpu::tensor_core::nhwcnc::shared_bytes`: per stage A is BM rows of
/// 16*chunks + 8 halves, B is 16*chunks rows of BN + 8 halves; plus 32 bytes of alignment slack.
fn shared_bytes(v: &Variant) -> usize {
    v.stages * (v.bm * (16 * v.chunks + 8) * 2 + 16 * v.chunks * (v.bn + 8) * 2) + 32
}

/// Blocks of the 1-D grid: M block fastest-varying second, K block fastest.
fn blocks(p: &Conv2d, v: &Variant) -> usize {
    let (out_p, out_q) = p.output_hw();
    let m_tiles = out_p * out_q * (p.n / 16);
    m_tiles.div_ceil(v.bm / 16) * (p.k / 16).div_ceil(v.bn / 16)
}

/// Modelled time (arbitrary units). The mainloop is bound by L2 -> shared memory traffic (ncu
/// on the speed-target shape with the 128 x 128 tile: L2 throughput 86%, tensor pipes 37%), so
/// a block's speed is taken proportional to its FLOPs per byte copied, BM*BN/(BM+BN), and a
/// little lower when an SM has fewer than 16 warps resident. Each SM runs its share of blocks;
/// edge tiles cost a full tile. Fitted on H100 timings: 256x128 0.49 ms and 128x128 0.59 ms on
/// 256,256,14,14 -> 512; 256x64 0.124 ms, 128x64 0.161 and 64x64 0.219 on 64,64,56,56 -> 64;
/// 128x64 0.079 ms and 64x64 0.091 on 32,512,7,7 -> 512.
fn cost(p: &Conv2d, v: &Variant) -> f64 {
    let blocks = blocks(p, v);
    let per_sm = blocks.div_ceil(MODEL_SMS);
    let resident_warps = (per_sm.min(v.blocks_per_sm) * v.wm * v.wn) as f64;
    let util = (resident_warps / 16.0).min(1.0).powf(0.2);
    let bytes_per_flop = (v.bm + v.bn) as f64 / (v.bm * v.bn) as f64;
    // Ties (same blocks per SM) go to the grid with less work in total: fewer edge tiles.
    let per_sm = per_sm as f64 + blocks as f64 / (MODEL_SMS * 1000) as f64;
    per_sm * (v.bm * v.bn) as f64 * bytes_per_flop / util
}

pub fn plan(problem: &Conv2d, limits: &DeviceLimits) -> Result<LaunchPlan> {
    problem.validate()?;
    let p = problem;
    if p.n % 16 != 0 || p.c % 16 != 0 || p.k % 16 != 0 {
        return Err(Error::Unsupported {
            algorithm: "wmma_nhwcnc",
            reason: format!(
                "its blocked layouts need N, C and K to be multiples of 16 (got N={}, C={}, K={}); \
                 use wmma_nhwc (plain NHWC, C and K multiples of 8)",
                p.n, p.c, p.k
            ),
        });
    }
    let max_smem = limits.max_shared_bytes_per_block as usize;
    let best = VARIANTS
        .iter()
        .filter(|v| shared_bytes(v) <= max_smem)
        .min_by(|a, b| cost(p, a).total_cmp(&cost(p, b)))
        .ok_or_else(|| Error::Unsupported {
            algorithm: "wmma_nhwcnc",
            reason: format!("every block tile needs more shared memory than the device's {max_smem} bytes per block"),
        })?;
    Ok(LaunchPlan {
        kernel: best.kernel,
        grid: (div_ceil_u32(blocks(p, best), 1), 1, 1),
        block: (best.threads() as u32, 1, 1),
        shared_bytes: shared_bytes(best) as u32,
        dtype: DType::F16,
    })
}

/// Every entry point a plan may name.
pub fn kernel_names() -> Vec<&'static str> {
    VARIANTS.iter().map(|v| v.kernel).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: DeviceLimits = DeviceLimits { max_shared_bytes_per_block: 227 * 1024, max_grid_y: 65535, max_grid_z: 65535 };

    fn variant(plan: &LaunchPlan) -> Variant {
        *VARIANTS.iter().find(|v| v.kernel == plan.kernel).unwrap()
    }

    /// Replays the kernel's block -> (row tiles, output tiles) -> warp -> fragment mapping and
    /// checks that every output tile (nb, p, q, kb) is stored exactly once.
    fn assert_covers_exactly_once(p: &Conv2d, plan: &LaunchPlan) {
        let v = variant(plan);
        let (out_p, out_q) = p.output_hw();
        let (nbs, kbs) = (p.n / 16, p.k / 16);
        let m_tiles = out_p * out_q * nbs;
        let warps = v.wm * v.wn;
        let (fm, fn_) = (v.bm / 16 / v.wm, v.bn / 16 / v.wn);
        let k_blocks = kbs.div_ceil(v.bn / 16);
        let mut hits = vec![0u8; m_tiles * kbs];
        for b in 0..plan.grid.0 as usize {
            let (mbi, kbi) = (b / k_blocks, b % k_blocks);
            for warp in 0..warps {
                let (wm, wn) = (warp / v.wn, warp % v.wn);
                for i in 0..fm {
                    let t = mbi * v.bm / 16 + wm * fm + i;
                    for j in 0..fn_ {
                        let kb = kbi * v.bn / 16 + wn * fn_ + j;
                        if t < m_tiles && kb < kbs {
                            hits[t * kbs + kb] += 1;
                        }
                    }
                }
            }
        }
        assert!(hits.iter().all(|&h| h == 1), "{p}: {} output tiles not written exactly once", hits.iter().filter(|&&h| h != 1).count());
    }

    #[test]
    fn speed_target_gets_the_large_tile() {
        let p = Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1);
        let plan = super::plan(&p, &H100).unwrap();
        assert_eq!(plan.kernel, "wmma_nhwcnc_m128n256");
        assert_eq!(plan.grid, (196 * 2 * 2, 1, 1));
        assert_eq!(plan.block, (512, 1, 1));
        assert_eq!(plan.shared_bytes, 3 * (128 * 40 * 2 + 32 * 264 * 2) + 32);
        assert_eq!(plan.dtype, DType::F16);
        assert_covers_exactly_once(&p, &plan);
    }

    #[test]
    fn small_batches_and_few_channels_get_smaller_tiles() {
        // 32 images of 7x7: 98 row tiles; 128 x 128 would give only 52 blocks for 132 SMs, and
        // 64 x 64 (200 blocks) measured 15% slower than 128 x 64 (104 blocks).
        let p = Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1);
        let plan = super::plan(&p, &H100).unwrap();
        assert!(["wmma_nhwcnc_m128n64", "wmma_nhwcnc_m64n128"].contains(&plan.kernel), "{plan:?}");
        assert_covers_exactly_once(&p, &plan);
        // K = 64: a 128-wide K tile would waste half of every block.
        let p = Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1);
        let plan = super::plan(&p, &H100).unwrap();
        assert_eq!(plan.kernel, "wmma_nhwcnc_m256n64", "{plan:?}");
        assert_covers_exactly_once(&p, &plan);
    }

    #[test]
    fn plans_cover_every_output_once() {
        let shapes = [
            Conv2d::new(16, 16, 1, 1, 16, 1, 1),
            Conv2d::new(16, 48, 9, 11, 80, 3, 3).with_pad(1),
            Conv2d::new(48, 16, 13, 7, 144, 7, 7).with_pad(3).with_stride(2),
            Conv2d::new(32, 32, 20, 24, 16, 3, 3).with_pad(2).with_dilation(2),
            Conv2d::new(160, 32, 5, 5, 272, 1, 1),
            Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1),
        ];
        for p in &shapes {
            let plan = super::plan(p, &H100).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(kernel_names().contains(&plan.kernel));
            assert!(plan.shared_bytes <= H100.max_shared_bytes_per_block);
            assert_covers_exactly_once(p, &plan);
        }
    }

    #[test]
    fn every_variant_is_somebody_s_best() {
        // The shapes tests/tests/gpu_wmma_nhwcnc.rs runs so that every entry meets the GPU.
        let picks: Vec<_> = [
            Conv2d::new(16, 16, 28, 28, 256, 3, 3).with_pad(1),
            Conv2d::new(32, 16, 28, 28, 96, 3, 3).with_pad(1),
            Conv2d::new(16, 256, 14, 14, 512, 3, 3).with_pad(1),
            Conv2d::new(32, 32, 28, 28, 64, 3, 3).with_pad(1),
            Conv2d::new(16, 32, 28, 28, 64, 3, 3).with_pad(1),
            Conv2d::new(16, 64, 9, 9, 512, 3, 3).with_pad(1),
            Conv2d::new(16, 16, 9, 9, 16, 3, 3).with_pad(1),
        ]
        .iter()
        .map(|p| super::plan(p, &H100).unwrap().kernel)
        .collect();
        assert_eq!(picks, kernel_names(), "the first shape should pick the first variant, and so on");
    }

    #[test]
    fn sizes_not_multiples_of_16_point_to_wmma_nhwc() {
        for p in [Conv2d::new(8, 16, 8, 8, 16, 3, 3), Conv2d::new(16, 24, 8, 8, 16, 3, 3), Conv2d::new(16, 16, 8, 8, 40, 3, 3)] {
            match super::plan(&p, &H100) {
                Err(Error::Unsupported { algorithm: "wmma_nhwcnc", reason }) => assert!(reason.contains("wmma_nhwc "), "{reason}"),
                other => panic!("{p}: expected Unsupported, got {other:?}"),
            }
        }
    }

    #[test]
    fn invalid_problems_are_rejected_before_planning() {
        assert!(matches!(super::plan(&Conv2d::new(16, 16, 4, 4, 16, 7, 7), &H100), Err(Error::FilterLargerThanPaddedInput { .. })));
    }
}
