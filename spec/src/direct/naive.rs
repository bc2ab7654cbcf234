//! `direct_naive`: one output element per thread, in a 1-D grid of fixed-size blocks.

/// Calls `$callback! { $ctx... entry }` with the kernel's one entry point.
#[macro_export]
macro_rules! direct_naive_entry {
    ($callback:path $(, $ctx:tt)*) => {
        $callback! { $($ctx)* direct_naive }
    };
}

macro_rules! declare_entry {
    ($name:ident) => {
        /// The entry point.
        pub const ENTRY: &str = stringify!($name);
    };
}
crate::direct_naive_entry!(declare_entry);

/// Threads per block: the kernel maps thread `t` of block `b` to output `b * BLOCK_THREADS + t`,
/// so the host launches `ceil(N*K*P*Q / BLOCK_THREADS)` blocks of exactly this size.
pub const BLOCK_THREADS: u32 = 256;
