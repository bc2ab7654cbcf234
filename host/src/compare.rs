//! Comparing a kernel's output with the reference.
//!
//! The pass/fail criterion is the relative L2 error of the whole output: unlike a per-element
//! relative error it is not blown up by outputs that happen to be near zero, and unlike a max
//! absolute error it does not depend on the scale of the data. Non-finite outputs (including
//! the NaN poison of elements a kernel never wrote) always fail, whatever the tolerance.

use std::fmt;

/// How far an output is from the reference.
///
/// Serializable for benchmark reports (serde_json writes the infinities of a failed check as `null`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Comparison {
    /// Largest `|got - reference|` (infinite if anything is non-finite or missing).
    pub max_abs_err: f64,
    /// `||got - reference||_2 / ||reference||_2`, or the absolute L2 error when the reference
    /// is all zeros (infinite if anything is non-finite or missing).
    pub rel_l2_err: f64,
    /// Index of the largest absolute error, or of the first non-finite or missing element.
    pub worst_index: usize,
    /// Elements that are NaN or infinite (in either slice), plus the length difference.
    pub non_finite: usize,
    /// Elements compared (the shorter of the two lengths).
    pub len: usize,
}

/// Compares `got` with `reference`, element by element in the same order; never panics.
///
/// If the lengths differ, the common prefix is compared and every missing or extra element
/// counts as non-finite, so the comparison fails: a wrongly sized output is as broken as
/// one full of NaN.
///
/// ```
/// use convrs::compare;
/// let c = compare(&[1.0f32, 2.0, 3.5], &[1.0, 2.0, 3.0]);
/// assert_eq!(c.max_abs_err, 0.5);
/// assert_eq!(c.worst_index, 2);
/// assert!((c.rel_l2_err - 0.5 / 14f64.sqrt()).abs() < 1e-15);
/// assert!(!c.passes(1e-3));
/// assert!(!compare(&[f32::NAN], &[0.0]).passes(1.0));
/// ```
pub fn compare<G: Copy + Into<f64>>(got: &[G], reference: &[f64]) -> Comparison {
    let len = got.len().min(reference.len());
    let mut non_finite = got.len().abs_diff(reference.len());
    let mut first_non_finite = (non_finite > 0).then_some(len);
    let (mut max_abs, mut worst) = (0.0f64, 0usize);
    // Sums of squares scaled by the running maximum (as in LAPACK's dnrm2), so that large
    // values cannot overflow to infinity and spoil an otherwise finite ratio.
    let mut err_norm = ScaledNorm::default();
    let mut ref_norm = ScaledNorm::default();
    for (i, (&g, &r)) in got.iter().zip(reference).enumerate() {
        let g: f64 = g.into();
        if !g.is_finite() || !r.is_finite() {
            non_finite += 1;
            first_non_finite = Some(first_non_finite.map_or(i, |f| f.min(i)));
            continue;
        }
        let e = (g - r).abs();
        if e > max_abs {
            max_abs = e;
            worst = i;
        }
        err_norm.add(e);
        ref_norm.add(r);
    }
    if let Some(first) = first_non_finite {
        return Comparison { max_abs_err: f64::INFINITY, rel_l2_err: f64::INFINITY, worst_index: first, non_finite, len };
    }
    let (err, refn) = (err_norm.norm(), ref_norm.norm());
    let rel_l2_err = if refn == 0.0 { err } else { err / refn };
    Comparison { max_abs_err: max_abs, rel_l2_err, worst_index: worst, non_finite, len }
}

/// An L2 norm accumulated as `scale * sqrt(ssq)`.
#[derive(Default)]
struct ScaledNorm {
    scale: f64,
    ssq: f64,
}

impl ScaledNorm {
    fn add(&mut self, v: f64) {
        let a = v.abs();
        if a == 0.0 {
            return;
        }
        if a > self.scale {
            self.ssq = 1.0 + self.ssq * (self.scale / a).powi(2);
            self.scale = a;
        } else {
            self.ssq += (a / self.scale).powi(2);
        }
    }

    fn norm(&self) -> f64 {
        self.scale * self.ssq.sqrt()
    }
}

impl Comparison {
    /// Whether every element is finite and the relative L2 error is within `rel_l2_tol`.
    pub fn passes(&self, rel_l2_tol: f64) -> bool {
        self.non_finite == 0 && self.rel_l2_err <= rel_l2_tol
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rel L2 err {:.3e}, max abs err {:.3e} (worst at index {}), {} non-finite of {} compared",
            self.rel_l2_err, self.max_abs_err, self.worst_index, self.non_finite, self.len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_passes_with_zero_error() {
        let c = compare(&[1.0f64, -2.0, 3.0], &[1.0, -2.0, 3.0]);
        assert_eq!((c.max_abs_err, c.rel_l2_err, c.non_finite, c.len), (0.0, 0.0, 0, 3));
        assert!(c.passes(0.0));
    }

    #[test]
    fn zero_reference_uses_absolute_l2() {
        let c = compare(&[3.0f32, 4.0], &[0.0, 0.0]);
        assert_eq!(c.rel_l2_err, 5.0);
        assert_eq!(c.worst_index, 1);
    }

    #[test]
    fn non_finite_and_length_mismatch_fail() {
        let c = compare(&[1.0f32, f32::INFINITY, f32::NAN], &[1.0, 1.0, 1.0]);
        assert_eq!((c.non_finite, c.worst_index), (2, 1));
        assert!(c.max_abs_err.is_infinite() && c.rel_l2_err.is_infinite() && !c.passes(f64::MAX));
        let c = compare(&[1.0f32, 2.0], &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!((c.non_finite, c.worst_index, c.len), (2, 2, 2));
        assert!(!c.passes(f64::MAX));
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let c = compare(&[1e300f64, 1e300], &[1e300, 2e300]);
        assert!((c.rel_l2_err - 1.0 / 5f64.sqrt()).abs() < 1e-12, "{c}");
    }

    #[test]
    fn empty_passes() {
        assert!(compare::<f32>(&[], &[]).passes(0.0));
    }
}
