//! Every kernel of convrs, once, in the order of the progression. [`crate::Algorithm`]'s
//! properties, `convrs list`, the automatic choice, `convrs explain`, the test generators and
//! the "every kernel is in the PTX" checks all read this list; the descriptions themselves
//! ([`KernelDesc`]: name, family, element types, layouts, plan) live with each family's plans.
//!
//! Adding a kernel: its kernel file in `kernels-gpu`, its plan (with a [`KernelDesc`]) under
//! `host/src/plan/`, an [`crate::Algorithm`] variant and one line here. A Hopper configuration is
//! only a row of `convrs_spec::hopper_configs!` (and its rate in `plan::hopper::RATES`): its
//! policy's kernel comes from [`plan::hopper::KERNELS`].
//!
//! ```
//! use convrs::registry::{Family, KERNELS};
//! assert!(KERNELS.iter().any(|k| k.name == "tiled_nchw" && k.family == Family::Tiled));
//! ```

use crate::plan;
pub use crate::plan::{Family, KernelDesc};
use crate::Algorithm;

/// The kernels before the Hopper family, each written out.
const LISTED: [KernelDesc; 16] = [
    plan::direct::naive::KERNEL,
    plan::direct::smem::KERNEL,
    plan::tiled::hwcn::KERNEL,
    plan::tiled::nchw::KERNEL,
    plan::tensor_core::nhwcnc::KERNEL,
    plan::tensor_core::nhwc::KERNEL,
    plan::tensor_core::nhwc_f32::TF32,
    plan::tensor_core::nhwc_f32::TF32X3,
    plan::tensor_core::small_c::KERNEL,
    plan::tensor_core::patch::KERNEL,
    plan::tensor_core::patch::KERNEL_NCHW,
    plan::depthwise::NCHW,
    plan::depthwise::NHWC,
    plan::depthwise::STRIP,
    plan::depthwise::NCHW_STRIP,
    plan::depthwise::TILE,
];

/// Every kernel, in the order of the progression: the listed ones, then one per Hopper policy.
pub const KERNELS: [KernelDesc; LISTED.len() + plan::hopper::KERNELS.len()] = {
    let mut all = [LISTED[0]; LISTED.len() + plan::hopper::KERNELS.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = if i < LISTED.len() { LISTED[i] } else { plan::hopper::KERNELS[i - LISTED.len()] };
        i += 1;
    }
    all
};

/// The description of `algorithm`, `None` for [`Algorithm::Auto`].
pub fn find(algorithm: Algorithm) -> Option<&'static KernelDesc> {
    KERNELS.iter().find(|k| k.algorithm == algorithm)
}

/// The description named `name`.
pub fn by_name(name: &str) -> Option<&'static KernelDesc> {
    KERNELS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Conv2d, DType, DeviceModel, Precision};

    #[test]
    fn every_algorithm_has_one_entry_and_names_are_unique() {
        for a in Algorithm::ALL {
            assert_eq!(KERNELS.iter().filter(|k| k.algorithm == *a).count(), 1, "{a:?}");
        }
        assert_eq!(KERNELS.len(), Algorithm::ALL.len());
        for (i, k) in KERNELS.iter().enumerate() {
            assert!(KERNELS[..i].iter().all(|o| o.name != k.name), "{} twice", k.name);
            assert_eq!(by_name(k.name).map(|d| d.algorithm), Some(k.algorithm));
            assert!(!k.dtypes.is_empty(), "{}", k.name);
        }
        assert!(find(Algorithm::Auto).is_none());
    }

    #[test]
    fn run_problems_round_up_to_the_multiples() {
        let nhwc = by_name("wmma_nhwc").unwrap();
        let p = Conv2d::new(3, 3, 9, 9, 6, 3, 3).with_pad(1);
        assert_eq!(nhwc.run_problem(&p), Conv2d { c: 8, k: 8, ..p });
        assert_eq!(by_name("wmma_nhwcnc").unwrap().run_problem(&p), Conv2d { n: 16, c: 16, k: 16, ..p });
        assert_eq!(by_name("tiled_nchw").unwrap().run_problem(&p), p);
        let fits = Conv2d::new(2, 16, 9, 9, 24, 3, 3);
        assert_eq!(nhwc.run_problem(&fits), fits);
    }

    #[test]
    fn multiples_and_types_are_what_the_plans_demand() {
        let d = DeviceModel::named("h100").unwrap();
        for k in &KERNELS {
            let (n, c, kk) = k.multiples;
            for dtype in [DType::F32, DType::F16, DType::BF16] {
                // At the multiples: accepted for the types it reads, refused for the others.
                // (TF32 admits every kernel's precision.)
                // The NCHW plane kernels take 1x1 filters on H*W a multiple of 8 (fp32: 4) only.
                // The NCHW row kernel takes W and Q multiples of 8, the patch kernel H*W.
                let planes = matches!(k.algorithm, Algorithm::Wgmma(p) if p.producer.nchw_planes());
                let rows = matches!(k.algorithm, Algorithm::Wgmma(p) if matches!(p.producer, convrs_spec::hopper::Producer::PlaneRows | convrs_spec::hopper::Producer::NchwPatch));
                let ok = if planes {
                    Conv2d::new(n.max(2), 2 * c, 8, 8, 2 * kk, 1, 1)
                } else {
                    Conv2d::new(n.max(2), 2 * c, 9, if rows { 8 } else { 9 }, 2 * kk, 3, 3).with_pad(1)
                };
                let ok = ok.with_precision(Precision::Tf32);
                // The depthwise kernels take groups = C only; the strip entries C a multiple of 4.
                let ok = match k.algorithm {
                    Algorithm::DepthwiseNhwcStrip => Conv2d { c: 4, k: 4, ..ok }.with_groups(4),
                    Algorithm::DepthwiseNhwcTile => Conv2d { c: 8, k: 8, ..ok }.with_groups(8),
                    _ if k.family == Family::Depthwise => ok.with_groups(ok.c),
                    _ => ok,
                };
                let plan = k.plan(&ok, dtype, &d);
                assert_eq!(plan.is_ok(), k.reads(dtype), "{} on {dtype}: {plan:?}", k.name);
                // A precision above the kernel's: refused with the reason, for fp32 data.
                for asked in [Precision::Fp32, Precision::Fma] {
                    let plan = k.plan(&ok.with_precision(asked), dtype, &d);
                    if dtype == DType::F32 && k.reads(dtype) && !asked.admits(k.precision) {
                        assert!(plan.unwrap_err().to_string().contains(&format!("asks for {asked}")), "{}", k.name);
                    } else {
                        assert_eq!(plan.is_ok(), k.reads(dtype), "{} on {dtype} at {asked}", k.name);
                    }
                }
                let Ok(plan) = plan else { continue };
                assert_eq!(plan.dtype, dtype, "{}", k.name);
                // One channel off a multiple above 1: refused.
                if c > 1 {
                    let off = Conv2d { c: 2 * c + 1, ..ok };
                    assert!(k.plan(&off, dtype, &d).is_err(), "{}: {off}", k.name);
                }
                // The input's type and fp32 outputs, nothing else.
                for out in [DType::F32, DType::F16, DType::BF16] {
                    let plan = k.plan_writing(&ok, dtype, &d, out);
                    assert_eq!(plan.is_ok(), out == DType::F32 || out == dtype, "{} on {dtype} writing {out}", k.name);
                    assert!(plan.is_err() || plan.unwrap().out_dtype == out);
                }
            }
        }
    }
}
