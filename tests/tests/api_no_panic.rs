//! No panic across the API for any input: random problems, valid or not (zeros, huge extents,
//! filters larger than the input, absurd strides), thrown at every kernel's plan, at the
//! automatic choice and at the candidates `convrs explain` prints, on every built-in device
//! model. Each must answer with a plan or an error; a valid problem that some kernel of the
//! dtype takes must get a pick.

use convrs::{select, Algorithm, Conv2d, DType, DeviceModel, Layout};
use proptest::prelude::*;

fn extent() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0usize..40, 1 => 0usize..5000, 1 => Just(usize::MAX), 1 => Just(1usize << 31)]
}

fn any_problem() -> impl Strategy<Value = Conv2d> {
    (
        (extent(), extent(), extent(), extent(), extent(), 0usize..9, 0usize..9),
        (0usize..6, 0usize..6, 0usize..5, 0usize..5, 0usize..4, 0usize..4),
    )
        .prop_map(|((n, c, h, w, k, r, s), (ph, pw, sh, sw, dh, dw))| Conv2d { pad: (ph, pw), stride: (sh, sw), dilation: (dh, dw), ..Conv2d::new(n, c, h, w, k, r, s) })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn plans_choices_and_explanations_never_panic(p in any_problem(), model in 0usize..DeviceModel::KNOWN.len(), f16 in any::<bool>(), nhwc in any::<bool>()) {
        let d = DeviceModel::named(DeviceModel::KNOWN[model]).unwrap();
        let dtype = if f16 { DType::F16 } else { DType::F32 };
        let layout = if nhwc { Layout::Nhwc } else { Layout::Nchw };
        for a in Algorithm::ALL {
            if let Ok(plan) = a.plan(&p, dtype, &d) {
                prop_assert!(p.validate().is_ok(), "{a} planned an invalid problem {p}");
                prop_assert!(plan.predicted_us.is_finite() && plan.predicted_us > 0.0, "{a} on {p}: {plan:?}");
                prop_assert!(plan.shared_bytes <= d.smem_per_block);
            }
        }
        prop_assert!(Algorithm::Auto.plan(&p, dtype, &d).is_err());
        let candidates = select::candidates(&p, dtype, layout, &d);
        prop_assert_eq!(candidates.len(), Algorithm::ALL.len());
        match select::choose(&p, dtype, layout, &d) {
            Ok(c) => {
                prop_assert!(p.validate().is_ok());
                prop_assert!(c.pick.dtypes().contains(&dtype));
                let best = c.estimate().unwrap().total_us();
                prop_assert!(c.candidates.iter().filter_map(|c| c.outcome.as_ref().ok()).all(|e| e.total_us() >= best));
            }
            Err(e) => prop_assert!(p.validate().is_err() || candidates.iter().all(|c| c.outcome.is_err()), "{p}: {e}"),
        }
    }
}
