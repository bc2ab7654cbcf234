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

/// How fp32 data is multiplied: what a caller asks of an fp32 convolution
/// ([`crate::Conv2d::precision`]) and what each kernel does ([`crate::registry::KernelDesc::precision`]).
/// 16-bit data is multiplied exactly (fp32 accumulators) whatever this says.
///
/// A request admits every kernel at least as accurate: `Tf32` takes any kernel, `Fp32` the
/// 3xTF32 and FMA kernels, `Fma` only the FMA kernels.
///
/// ```
/// use convrs::Precision;
/// assert!(Precision::Tf32.admits(Precision::Fp32) && !Precision::Fp32.admits(Precision::Tf32));
/// assert_eq!("tf32".parse::<Precision>()?, Precision::Tf32);
/// assert_eq!(Precision::default(), Precision::Fp32);
/// # Ok::<(), convrs::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Precision {
    /// Inputs read as TF32 (10 mantissa bits; the tensor cores drop the low 13 bits of each
    /// fp32 element), products accumulated in fp32: what PyTorch computes fp32 convolutions in
    /// by default (`torch.backends.cudnn.allow_tf32`). Relative error per product up to 2^-9.
    Tf32,
    /// fp32 accuracy: the FMA kernels, or tensor cores by 3xTF32 (each operand split into a TF32
    /// high part and a TF32 remainder, three products; per product error about 2^-21, against
    /// fp32's 2^-24; the tensor cores' truncating sums kept to 8 or 32 products, each added in
    /// fp32, so that against the f64 sum the 3xTF32 kernels measure no worse than the FMA ones
    /// on reductions of 64 products and more). The default.
    #[default]
    Fp32,
    /// The FMA kernels only (fp32 multiply-adds, no tensor cores).
    Fma,
}

impl Precision {
    /// `tf32`, `fp32` or `fma`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Tf32 => "tf32",
            Precision::Fp32 => "fp32",
            Precision::Fma => "fma",
        }
    }

    /// Whether a kernel computing at precision `kernel` serves this request.
    pub fn admits(self, kernel: Precision) -> bool {
        kernel >= self
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Precision {
    type Err = crate::Error;
    /// `tf32`, `fp32` (also `3xtf32`) or `fma`, any case.
    fn from_str(s: &str) -> crate::Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "tf32" => Ok(Precision::Tf32),
            "fp32" | "f32" | "3xtf32" => Ok(Precision::Fp32),
            "fma" => Ok(Precision::Fma),
            _ => Err(crate::Error::InvalidArgument(format!("unknown precision `{s}`; expected tf32, fp32 (3xTF32 or FMA) or fma"))),
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
