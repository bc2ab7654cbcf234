//! The one error type of the library: every failure is a value, never a panic across the API.

use std::fmt;

/// Everything convrs can refuse or fail at.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// An extent, stride or dilation of the problem is zero, so the output would be empty or undefined.
    ZeroSize { dim: &'static str },
    /// The groups do not divide the input channels C and the output channels K.
    Groups { groups: usize, c: usize, k: usize },
    /// The dilated filter does not fit in the padded input along `axis`: the output size would be zero or negative.
    FilterLargerThanPaddedInput { axis: &'static str, filter_extent: usize, padded_input: usize },
    /// A tensor has more elements than the kernels' 32-bit index arithmetic can address.
    IndexOverflow { tensor: &'static str, elements: u128 },
    /// The problem's buffers do not fit in the device memory.
    ExceedsDeviceMemory { needed_bytes: u64, available_bytes: u64 },
    /// A buffer's length does not match the problem.
    BufferSize { tensor: &'static str, expected: usize, got: usize },
    /// A tensor is not in the layout the call needs.
    LayoutMismatch { tensor: &'static str, expected: String, got: String },
    /// The chosen kernel cannot take this problem (other kernels may).
    Unsupported { algorithm: &'static str, reason: String },
    /// No usable GPU: no driver, no device, or the CUDA library did not load.
    NoGpu(String),
    /// A CUDA driver call failed.
    Cuda(String),
    /// A cuDNN call failed (the baseline only).
    Cudnn(String),
    /// Anything the caller passed that is not a shape problem (unknown names, bad options).
    InvalidArgument(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ZeroSize { dim } => write!(f, "`{dim}` is zero: the output would be empty or undefined"),
            Error::Groups { groups, c, k } => write!(f, "{groups} groups must divide both the input channels C = {c} and the output channels K = {k}"),
            Error::FilterLargerThanPaddedInput { axis, filter_extent, padded_input } => write!(
                f,
                "the dilated filter spans {filter_extent} along {axis} but the padded input is only {padded_input}: the output size would be zero or negative"
            ),
            Error::IndexOverflow { tensor, elements } => write!(
                f,
                "the {tensor} has {elements} elements, more than 32-bit index arithmetic can address (at most {})",
                i32::MAX
            ),
            Error::ExceedsDeviceMemory { needed_bytes, available_bytes } => write!(
                f,
                "the problem needs {:.2} GiB of device memory but only {:.2} GiB are available",
                *needed_bytes as f64 / (1u64 << 30) as f64,
                *available_bytes as f64 / (1u64 << 30) as f64
            ),
            Error::BufferSize { tensor, expected, got } => {
                write!(f, "the {tensor} buffer has {got} elements but the problem needs {expected}")
            }
            Error::LayoutMismatch { tensor, expected, got } => {
                write!(f, "the {tensor} is in layout {got} but this call needs {expected}")
            }
            Error::Unsupported { algorithm, reason } => write!(f, "algorithm `{algorithm}` cannot run this problem: {reason}"),
            Error::NoGpu(why) => write!(f, "no usable GPU: {why}"),
            Error::Cuda(why) => write!(f, "CUDA error: {why}"),
            Error::Cudnn(why) => write!(f, "cuDNN error: {why}"),
            Error::InvalidArgument(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
