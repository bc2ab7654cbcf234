//! Plan for `wmma_nhwcnc` (not implemented yet).

use super::{DeviceLimits, LaunchPlan};
use crate::{Conv2d, Error, Result};

pub fn plan(problem: &Conv2d, _limits: &DeviceLimits) -> Result<LaunchPlan> {
    problem.validate()?;
    Err(Error::Unsupported { algorithm: "wmma_nhwcnc", reason: "not implemented yet".into() })
}
