//! Family 1, direct convolution (kernels-gpu/src/direct/): one plan per kernel, each step of the
//! progression on its own.

pub mod naive;
pub mod smem;
