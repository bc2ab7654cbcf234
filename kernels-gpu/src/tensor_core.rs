//! Family 3, tensor-core convolution (fp16 in, fp32 accumulate): not implemented yet.

pub mod nhwc;
pub mod nhwcnc;
