//! convrs: conv2d on NVIDIA GPUs with kernels written in Rust, compiled to PTX, and checked
//! against a CPU reference.
//!
//! # Quick start
//!
//! ```no_run
//! use convrs::{conv2d, Algorithm, Conv2d, Gpu, Layout, Tensor};
//! let gpu = Gpu::new(0)?; // an Err, not a panic, on a machine without a GPU
//! let problem = Conv2d::new(16, 64, 56, 56, 64, 3, 3).with_pad(1);
//! let x = Tensor::random(problem.input_shape(), Layout::Nchw, 1)?;
//! let w = Tensor::random(problem.filter_shape(), Layout::Nchw, 2)?;
//! // The kernel with the lowest predicted time for f32 data held in NCHW:
//! let y = conv2d(&gpu, Algorithm::Auto, &problem, &x, &w)?;
//! assert_eq!(y.dims(), problem.output_shape());
//! # Ok::<(), convrs::Error>(())
//! ```
//!
//! What the planner would pick, and why, without a GPU ([`select`], `convrs explain`):
//!
//! ```
//! use convrs::{select, Conv2d, DType, DeviceModel, Layout};
//! let choice = select::choose(&Conv2d::new(1, 6, 768, 512, 6, 6, 6), DType::F32, Layout::Nchw, &DeviceModel::named("h100")?)?;
//! assert_eq!(choice.pick.name(), "direct_smem");
//! # Ok::<(), convrs::Error>(())
//! ```
//!
//! # How it fits together
//!
//! ```text
//!  kernels-gpu (no_std, nvptx64) --rustc + our link step (xtask)--> PTX (sm_80, sm_90; sm_90a: wgmma), shipped in ptx/
//!                                                                     | embedded by build.rs
//!  registry -> plan (per family, predicted us on the DeviceModel) -> select (Auto, tune)
//!           -> Prepared (operands in the kernel's layouts) -> launch on the Gpu (cudarc)
//!  conv2d_cpu (f64 reference) + compare  <- checks every result; bench times vs cuDNN and PyTorch
//! ```
//!
//! The CPU reference on its own:
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
pub mod device_conv;
pub mod device_tensor;
pub mod dtype;
pub mod epilogue;
pub mod error;
pub mod gpu;
pub mod groups;
pub mod plan;
pub mod plot;
pub mod prepared;
pub mod ptx;
mod tensor_map;
pub mod timing;
pub mod tune;
pub mod workspace;

/// The cudarc convrs is built on, for callers handing it their streams and buffers
/// ([`Gpu::from_stream`], [`device_conv::DeviceConv::run_on`]) without a version mismatch.
pub use cudarc;

pub use algorithm::{conv2d, conv2d_fused, conv2d_to, launch, launch_fused, Algorithm};
pub use epilogue::{Activation, Epilogue};
pub use dtype::{DType, Element, Precision};
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

/// The crate README's example compiles as a doc test (`no_run`: it needs a GPU).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
