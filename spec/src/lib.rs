//! The contract between the convrs kernels (`kernels-gpu`, nvptx64) and the host that plans and
//! launches them (`convrs`): everything both sides must agree on, written once.
//!
//! - [`args`]: the `i32` shape arguments every entry point takes after its pointers, and their order.
//! - [`epilogue`]: the fused epilogue's arguments (scale, bias, residual, activation) after those.
//! - [`split_k`]: how the split-K schedule splits the reduction and where its partial sums go.
//! - [`direct`], [`tiled`], [`depthwise`], [`tensor_core`], [`small_c`], [`patch`], [`hopper`]: per kernel family, the compiled instantiations with
//!   their entry-point names, and the formulas both sides evaluate (block threads, shared-memory
//!   bytes, tile geometry, which thread computes which output).
//!
//! Each family's instantiations are one `macro_rules!` table ([`direct_naive_entry!`],
//! [`direct_smem_variants!`], [`tiled_tiles!`], [`tensor_core_tiles!`], [`hopper_configs!`]) that hands its rows to a
//! callback macro: the kernel crate's callback declares the entry points (their names must be
//! literal identifiers), and this crate's own callback builds the `const` tables the host plans
//! from (names via `stringify!`). The host keeps only its cost model's measurements, in arrays of
//! the tables' length.
//!
//! Plain `no_std` Rust with no dependencies: the kernel crate builds it for nvptx64 with
//! `-Zbuild-std=core`, and its PTX must not change by taking the contract from here. So every
//! function the kernels call keeps the shape it had in the kernel crate (`#[inline(always)]`,
//! generic where it was generic), and formulas the kernels used to write in place are
//! expression macros ([`direct_smem_geometry!`]) that expand to exactly that code; generic
//! functions over an integer trait computed the same values but changed the generated code.
#![no_std]
#![warn(missing_docs)]

pub mod args;
pub mod depthwise;
pub mod epilogue;
pub mod direct;
pub mod hopper;
pub mod tensor_core;
pub mod tiled;
pub mod small_c;
pub mod split_k;
pub mod patch;
pub mod transform;

pub use args::ConvShape;
pub use epilogue::{Act, EpilogueArgs};
