//! convrs: conv2d on NVIDIA GPUs with kernels written in Rust, compiled to PTX, and checked
//! against a CPU reference.
//!
//! ```text
//!  kernels-gpu (no_std, nvptx64) --rustc + our link step (xtask)--> PTX (sm_80, sm_90)
//!                                                                     | embedded by host/build.rs
//!  host: Conv2d (validates) -> Algorithm::plan -> Gpu (cudarc, loads PTX) -> launch -> Tensor
//!        conv2d_cpu (f64 reference) + compare  <- checks every result; bench times vs cuDNN
//! ```
//!
//! ```
//! use convrs::{conv2d_cpu, Conv2d, Layout, Tensor};
//! let problem = Conv2d::new(1, 1, 3, 3, 1, 2, 2);
//! let x = Tensor::from_fn(problem.input_shape(), Layout::Nchw, |_, _, h, w| (h * 3 + w) as f32)?;
//! let w = Tensor::from_fn(problem.filter_shape(), Layout::Nchw, |_, _, _, _| 1.0f32)?;
//! let y = conv2d_cpu(&problem, &x, &w)?;
//! assert_eq!(y.data(), &[8.0, 12.0, 20.0, 24.0]);
//! # Ok::<(), convrs::Error>(())
//! ```

pub mod algorithm;
pub mod bench;
pub mod cudnn;
pub mod cudnn_graph;
pub mod device;
pub mod dtype;
pub mod error;
pub mod gpu;
pub mod plan;
pub mod plot;
pub mod prepared;
pub mod ptx;
pub mod timing;
pub mod tune;

pub use algorithm::{conv2d, launch, Algorithm};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use device::DeviceModel;
pub use gpu::{DeviceInfo, Gpu};

pub mod compare;
pub mod layout;
pub mod problem;
pub mod random;
pub mod reference;
pub mod registry;
pub mod select;
pub mod suite;

pub use compare::{compare, Comparison};
pub use layout::{Layout, Tensor};
pub use problem::Conv2d;
pub use reference::conv2d_cpu;

/// The README's Rust examples compile as doc tests (`no_run`: they need a GPU).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
