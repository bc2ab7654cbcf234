//! Family 1, direct convolution (NCHW input, KCRS filter, NKPQ output, fp32).
//!
//! - [`naive`]: step 1, one thread per output element, every operand read from global memory.
//! - [`smem`]: step 2, the block stages its input tile (with halo) and filter taps in shared
//!   memory, each thread accumulates several output channels in registers, global loads are
//!   16 bytes wide where alignment allows, and the next input channel is fetched into
//!   registers while the current one is computed.

pub mod naive;
pub mod smem;
