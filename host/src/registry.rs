//! Every kernel of convrs, once: its name, family, element type, layouts, what it needs of the
//! problem and its plan. [`crate::Algorithm`]'s properties, `convrs list`, the automatic choice,
//! `convrs explain`, the test generators and the "every kernel is in the PTX" checks all read
//! this table.
//!
//! Adding a kernel: its kernel file in `kernels-gpu`, its plan (with a [`KernelDesc`]) under
//! `host/src/plan/`, an [`crate::Algorithm`] variant and one line in [`KERNELS`].
//!
//! ```
//! use convrs::registry::{Family, KERNELS};
//! assert!(KERNELS.iter().any(|k| k.name == "tiled_nchw" && k.family == Family::Tiled));
//! ```

use crate::plan::{self, DeviceModel, LaunchPlan};
use crate::{Algorithm, Conv2d, DType, Layout, Result};

/// A kernel family: each reads as a progression from naive to fast.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Family {
    Direct,
    Tiled,
    TensorCore,
}

impl Family {
    /// `direct`, `tiled` or `tensor-core`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Direct => "direct",
            Family::Tiled => "tiled",
            Family::TensorCore => "tensor-core",
        }
    }
}

/// One kernel's description.
#[derive(Clone, Copy, Debug)]
pub struct KernelDesc {
    pub algorithm: Algorithm,
    /// The name the CLI takes and tables print.
    pub name: &'static str,
    pub family: Family,
    /// One line for `convrs list` and `explain`.
    pub summary: &'static str,
    /// The element type of the input and filter it reads.
    pub dtype: DType,
    /// The element types of the output it can write, the default first: fp32 for the fp32
    /// kernels; the input's own 16-bit type (rounded from the fp32 accumulators), or fp32 on
    /// request, for the tensor-core kernels.
    pub outputs: &'static [DType],
    /// The layouts of (input, filter, output) it reads and writes; filters use the (K, C, R, S)
    /// reading of [`Layout`].
    pub layouts: (Layout, Layout, Layout),
    /// (N, C, K) must be multiples of these; the test generators draw problems from them.
    pub multiples: (usize, usize, usize),
    /// The launch on a problem and device, with its predicted time, or why it cannot take it.
    pub plan: fn(&Conv2d, &DeviceModel) -> Result<LaunchPlan>,
}

impl KernelDesc {
    /// [`KernelDesc::plan`] for writing `out`, one of [`KernelDesc::outputs`] (the cost
    /// models do not price the output's width: the mainloop dominates every timed shape).
    ///
    /// ```
    /// use convrs::registry::by_name;
    /// use convrs::{Conv2d, DType, DeviceModel};
    /// let (k, d) = (by_name("wmma_nhwc").unwrap(), DeviceModel::named("h100")?);
    /// let p = Conv2d::new(8, 64, 28, 28, 64, 3, 3).with_pad(1);
    /// assert_eq!(k.plan_writing(&p, &d, DType::F16)?.out_dtype, DType::F16);
    /// assert!(k.plan_writing(&p, &d, DType::BF16).is_err()); // an fp16 kernel writes fp16 or fp32
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn plan_writing(&self, p: &Conv2d, device: &DeviceModel, out: DType) -> Result<LaunchPlan> {
        if !self.outputs.contains(&out) {
            let can: Vec<_> = self.outputs.iter().map(|d| d.name()).collect();
            return Err(crate::Error::InvalidArgument(format!("{} writes {} outputs, not {out}", self.name, can.join(" or "))));
        }
        Ok(LaunchPlan { out_dtype: out, ..(self.plan)(p, device)? })
    }

    /// The problem the kernel runs for `p`: N, C and K rounded up to its [`KernelDesc::multiples`]
    /// (the extra images and channels are zeros on the way in and dropped on the way out).
    pub fn run_problem(&self, p: &Conv2d) -> Conv2d {
        let up = |v: usize, m: usize| v.div_ceil(m.max(1)).saturating_mul(m.max(1));
        let (n, c, k) = self.multiples;
        Conv2d { n: up(p.n, n), c: up(p.c, c), k: up(p.k, k), ..*p }
    }
}

/// Every kernel, in the order of the progression.
pub const KERNELS: &[KernelDesc] = &[
    plan::direct::naive::KERNEL,
    plan::direct::smem::KERNEL,
    plan::tiled::hwcn::KERNEL,
    plan::tiled::nchw::KERNEL,
    plan::tensor_core::nhwcnc::KERNEL,
    plan::tensor_core::nhwc::KERNEL,
    plan::tensor_core::nhwcnc::KERNEL_BF16,
    plan::tensor_core::nhwc::KERNEL_BF16,
    plan::tensor_core::small_c::KERNEL,
    plan::tensor_core::small_c::KERNEL_BF16,
    plan::tensor_core::patch::KERNEL,
    plan::tensor_core::patch::KERNEL_BF16,
    plan::tensor_core::wgmma::KERNEL,
    plan::tensor_core::wgmma::KERNEL_BF16,
    plan::tensor_core::wgmma::KERNEL_WS,
    plan::tensor_core::wgmma::KERNEL_WS_BF16,
    plan::tensor_core::wgmma::KERNEL_MC,
    plan::tensor_core::wgmma::KERNEL_MC_BF16,
    plan::tensor_core::wgmma::KERNEL_PWS,
    plan::tensor_core::wgmma::KERNEL_PWS_BF16,
    plan::tensor_core::wgmma::KERNEL_PMC,
    plan::tensor_core::wgmma::KERNEL_PMC_BF16,
    plan::tensor_core::wgmma::KERNEL_TMA,
    plan::tensor_core::wgmma::KERNEL_TMA_BF16,
    plan::tensor_core::wgmma::KERNEL_TMC,
    plan::tensor_core::wgmma::KERNEL_TMC_BF16,
    plan::tensor_core::wgmma::KERNEL_SK,
    plan::tensor_core::wgmma::KERNEL_SK_BF16,
];

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

    #[test]
    fn every_algorithm_has_one_entry_and_names_are_unique() {
        for a in Algorithm::ALL {
            assert_eq!(KERNELS.iter().filter(|k| k.algorithm == *a).count(), 1, "{a:?}");
        }
        assert_eq!(KERNELS.len(), Algorithm::ALL.len());
        for (i, k) in KERNELS.iter().enumerate() {
            assert!(KERNELS[..i].iter().all(|o| o.name != k.name), "{} twice", k.name);
            assert_eq!(by_name(k.name).map(|d| d.algorithm), Some(k.algorithm));
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
    fn multiples_are_what_the_plans_demand() {
        let d = DeviceModel::named("h100").unwrap();
        for k in KERNELS {
            let (n, c, kk) = k.multiples;
            // At the multiples: accepted. One channel off a multiple above 1: refused.
            let ok = Conv2d::new(n.max(2), 2 * c, 9, 9, 2 * kk, 3, 3).with_pad(1);
            assert!((k.plan)(&ok, &d).is_ok(), "{}: {ok}", k.name);
            if c > 1 {
                let off = Conv2d { c: 2 * c + 1, ..ok };
                assert!((k.plan)(&off, &d).is_err(), "{}: {off}", k.name);
            }
            assert_eq!((k.plan)(&ok, &d).unwrap().dtype, k.dtype, "{}", k.name);
            // The default output is the input's type; fp32 is always available.
            assert_eq!(k.outputs[0], k.dtype, "{}", k.name);
            for out in [DType::F32, DType::F16, DType::BF16] {
                let plan = k.plan_writing(&ok, &d, out);
                assert_eq!(plan.is_ok(), out == DType::F32 || out == k.dtype, "{} writing {out}", k.name);
                assert!(plan.is_err() || plan.unwrap().out_dtype == out);
            }
        }
    }
}
