//! Family 1, direct convolution (NCHW input, KCRS filter, NKPQ output, fp32).
//!
//! - [`naive`]: step 1, one thread per output element, every operand read from global memory.
//! - [`smem`]: step 2, the block stages its input tile (with halo) and filter taps in shared
//!   memory, each thread accumulates several output channels (and several adjacent outputs) in
//!   registers, global loads are 16 bytes wide where alignment allows (`cp.async.cg`, zero-fill
//!   for the padding), and the next input channel is copied into a second shared buffer while
//!   the current one is computed. Its module docs give the tile sizes and per-shape reasoning.

pub mod naive;
pub mod smem;
