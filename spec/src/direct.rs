//! Family 1, direct convolution: `direct_naive` and `direct_smem`.

pub mod naive;
pub mod smem;
