//! The contract between the convrs kernels (`kernels-gpu`, nvptx64) and the host that plans and
//! launches them (`convrs`): everything both sides must agree on, written once.
//!
//! - [`args`]: the `i32` shape arguments every entry point takes after its pointers, and their order.
//! - [`direct`], [`tiled`], [`tensor_core`]: per kernel family, the compiled instantiations with
//!   their entry-point names, and the formulas both sides evaluate (block threads, shared-memory
//!   bytes, tile geometry, which thread computes which output).
//!
//! Each family's instantiations are one `macro_rules!` table ([`direct_smem_variants!`],
//! [`tiled_tiles!`], [`tensor_core_tiles!`]) that hands its rows to a callback macro: the kernel
//! crate's callback declares the entry points (their names must be literal identifiers), and this
//! crate's own callback builds the `const` tables the host plans from (names via `stringify!`).
//!
//! Plain `no_std` Rust with no dependencies: the kernel crate builds it for nvptx64 with
//! `-Zbuild-std=core`. Every function the kernels call is `#[inline(always)]`, so it folds into
//! the kernel exactly as the arithmetic written in place did.
#![no_std]

pub mod args;
pub mod direct;
pub mod tensor_core;
pub mod tiled;

pub use args::ConvShape;
