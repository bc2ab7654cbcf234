//! Element types the kernels read: fp32 for the direct and tiled families, fp16 and bf16 for
//! the tensor-core family. The tensor-core kernels write their input's type (rounded from fp32
//! accumulators) or fp32; the others write fp32.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// The element type of a kernel's input and filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum DType {
    F32,
    F16,
    BF16,
}

impl DType {
    /// `"fp32"` or `"fp16"`, as the bench table prints it.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "fp32",
            DType::F16 => "fp16",
            DType::BF16 => "bf16",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 | DType::BF16 => 2,
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DType {
    type Err = crate::Error;
    /// `fp32`/`f32` or `fp16`/`f16`, any case.
    fn from_str(s: &str) -> crate::Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fp32" | "f32" => Ok(DType::F32),
            "fp16" | "f16" => Ok(DType::F16),
            "bf16" => Ok(DType::BF16),
            _ => Err(crate::Error::InvalidArgument(format!("unknown element type `{s}`; expected fp32, fp16 or bf16"))),
        }
    }
}

/// A host element type that a kernel can take as input: `f32`, [`half::f16`] or [`half::bf16`].
///
/// ```
/// use convrs::dtype::{DType, Element};
/// assert_eq!(<half::f16 as Element>::DTYPE, DType::F16);
/// assert_eq!(<f32 as Element>::from_f32(0.1), 0.1f32);
/// ```
pub trait Element: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + Into<f64> + 'static {
    const DTYPE: DType;
    /// Rounds an `f32` to this type (round to nearest even).
    fn from_f32(v: f32) -> Self;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    fn from_f32(v: f32) -> Self {
        v
    }
}

impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
    fn from_f32(v: f32) -> Self {
        half::f16::from_f32(v)
    }
}

impl Element for half::bf16 {
    const DTYPE: DType = DType::BF16;
    fn from_f32(v: f32) -> Self {
        half::bf16::from_f32(v)
    }
}
