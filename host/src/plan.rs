//! Launch plans: for each kernel, the grid, block and shared memory a problem needs and the
//! predicted time on the device, or the reason the kernel cannot take it. Pure functions of the
//! problem and the [`DeviceModel`], so they are tested on CPU against built-in device models.

pub mod direct;
pub mod model;
pub mod tensor_core;
pub mod tiled;

use crate::dtype::DType;

/// How to launch one kernel on one problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchPlan {
    /// The PTX entry point's name.
    pub kernel: &'static str,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    /// Dynamic shared memory bytes per block.
    pub shared_bytes: u32,
    /// The element type of the input and filter buffers the kernel reads.
    pub dtype: DType,
    /// The element type of the output it writes: fp32 from every plan function;
    /// [`crate::registry::KernelDesc::plan_writing`] sets another the kernel can write (the
    /// tensor-core kernels round to their input's 16-bit type).
    pub out_dtype: DType,
    /// The plan's cost model's prediction of the kernel's time on the device, microseconds (the
    /// unit every family answers in, so predictions compare across families).
    pub predicted_us: f64,
    /// `Some(rows)` if the kernel takes one more pointer after the output: a TMA tensor map of
    /// the filter (KRSC, the input's 16-bit type) whose boxes are `rows` output channels by 64
    /// channels ([`crate::tensor_map`]); [`crate::launch`] builds it once per filter buffer.
    pub filter_map_rows: Option<u32>,
    /// Whether the kernel takes one more pointer after the filter's map: an im2col TMA tensor
    /// map of the input (NHWC, boxes of 128 pixels by 64 channels, [`crate::tensor_map`]).
    pub input_map: bool,
    /// Bytes of the [`crate::Gpu`]'s workspace the kernel takes in place of the filter pointer
    /// (which step 7 does not read): step 8's split-K, whose grid's z slices meet there
    /// (`convrs_spec::split_k`); 0 for none. [`crate::launch`] keeps it allocated and zeroed.
    pub workspace_bytes: usize,
}

pub use crate::device::DeviceModel;

/// `ceil(a / b)` for launch arithmetic.
pub(crate) fn div_ceil_u32(a: usize, b: usize) -> u32 {
    a.div_ceil(b).try_into().unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use crate::{Algorithm, Conv2d, DeviceModel};

    /// Every plan's prediction lands within 1.6x of what the kernel measured on an H100
    /// (`convrs bench`, median of 50, BENCHMARKS.md 2026-11-22, commit 9aa0812): the cost models
    /// answer in microseconds on the device's clock and SM count, so they compare across families.
    #[test]
    fn predictions_track_the_h100_measurements() {
        let d = DeviceModel::named("h100").unwrap();
        let shapes = [
            Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1),
            Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1),
            Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1),
            Conv2d::new(1, 6, 768, 512, 6, 6, 6),
        ];
        // Measured ms per shape, in Algorithm::ALL order (None: the kernel refuses the shape).
        let measured: [[Option<f64>; 6]; 4] = [
            [Some(106.972), Some(7.0751), Some(2.4973), Some(3.3155), Some(0.2741), Some(0.2758)],
            [Some(12.7489), Some(0.4402), Some(0.3918), Some(0.5776), Some(0.0579), Some(0.0741)],
            [Some(7.1824), Some(0.8452), Some(0.3800), Some(0.4445), Some(0.0415), Some(0.0395)],
            [Some(0.6948), Some(0.0314), Some(30.1332), Some(0.2873), None, None],
        ];
        for (p, row) in shapes.iter().zip(measured) {
            for (a, ms) in Algorithm::ALL.iter().zip(row) {
                match (a.plan(p, &d), ms) {
                    (Ok(plan), Some(ms)) => {
                        let ratio = plan.predicted_us / (ms * 1e3);
                        assert!((1.0 / 1.6..=1.6).contains(&ratio), "{a} on {p}: predicted {:.1} us, measured {:.1} us", plan.predicted_us, ms * 1e3);
                    }
                    (Err(_), None) => {}
                    (plan, ms) => panic!("{a} on {p}: plan {plan:?} but measured {ms:?}"),
                }
            }
        }
    }
}
