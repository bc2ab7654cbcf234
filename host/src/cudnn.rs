//! The cuDNN baseline every benchmark is measured against, in the same process and run.
//!
//! The algorithm is chosen the way `torch.backends.cudnn.benchmark = True` does: every forward
//! algorithm cuDNN accepts for the problem is run and timed, and the fastest is kept.
//! - fp32 ([`CudnnConv::fp32_nchw`]): NCHW with `CUDNN_FMA_MATH`, so TF32 tensor cores are off
//!   and the comparison is fp32 against fp32.
//! - fp16 and bf16 ([`CudnnConv::nhwc_tensor_op`]): NHWC (channels-last, what PyTorch's 16-bit path uses),
//!   16-bit input, filter and output, fp32 accumulation, tensor cores allowed.

use std::sync::Arc;

use cudarc::cudnn::{sys, ConvDescriptor, ConvForward, Cudnn, CudnnDataType, FilterDescriptor, TensorDescriptor};
use cudarc::driver::CudaSlice;

use crate::timing::{time_runs, TimingConfig};
use crate::{Conv2d, Element, Error, Gpu, Result};

use sys::cudnnConvolutionFwdAlgo_t as Algo;

const ALGOS: [Algo; 8] = [
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_FFT,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
    Algo::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
];

/// Workspace cuDNN may take for one algorithm; larger requests are skipped.
const MAX_WORKSPACE_BYTES: usize = 4 << 30;

fn cudnn_err(what: &'static str) -> impl FnOnce(cudarc::cudnn::CudnnError) -> Error {
    move |e| Error::Cudnn(format!("{what}: {e}"))
}

/// Is libcudnn loadable on this machine? (Without the `dynamic-loading` feature libcudnn is
/// linked, so a process that started has it.)
pub fn available() -> bool {
    #[cfg(feature = "dynamic-loading")]
    // SAFETY: only tries to dlopen the library.
    return unsafe { sys::is_culib_present() };
    #[cfg(not(feature = "dynamic-loading"))]
    true
}

/// cuDNN's version as major.minor.patch.
pub fn version() -> String {
    let v = cudarc::cudnn::result::get_version();
    format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
}

/// A planned forward convolution in cuDNN on `T` data (input, filter and output), accumulating in fp32.
pub struct CudnnConv<T: CudnnDataType> {
    x: TensorDescriptor<T>,
    w: FilterDescriptor<T>,
    y: TensorDescriptor<T>,
    conv: ConvDescriptor<f32>,
    algo: Algo,
    workspace: Option<CudaSlice<u8>>,
    _handle: Arc<Cudnn>,
}

fn dims4(d: [usize; 4]) -> [i32; 4] {
    d.map(|v| v as i32)
}

/// The convolution descriptor's group count (a validated problem's groups divide C < 2^31).
fn group_count(p: &Conv2d) -> Result<i32> {
    i32::try_from(p.groups).map_err(|_| Error::InvalidArgument(format!("{} groups do not fit cuDNN's int group count", p.groups)))
}

impl CudnnConv<f32> {
    /// Describes the fp32 NCHW `problem` to cuDNN (TF32 off) and picks its fastest algorithm by
    /// timing each on the given buffers (NCHW input, KCRS filter, NKPQ output).
    pub fn fp32_nchw(gpu: &Gpu, problem: &Conv2d, x: &CudaSlice<f32>, w: &CudaSlice<f32>, y: &mut CudaSlice<f32>) -> Result<Self> {
        Self::new(gpu, problem, sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW, sys::cudnnMathType_t::CUDNN_FMA_MATH, x, w, y)
    }
}

impl<T: CudnnDataType + Element> CudnnConv<T> {
    /// Describes the 16-bit (fp16 or bf16) NHWC `problem` to cuDNN (NHWC input, KRSC filter,
    /// NHWK output, fp32 accumulation, tensor cores allowed) and picks its fastest algorithm by
    /// timing each.
    pub fn nhwc_tensor_op(gpu: &Gpu, problem: &Conv2d, x: &CudaSlice<T>, w: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<Self> {
        Self::new(gpu, problem, sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC, sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH, x, w, y)
    }

    fn new(
        gpu: &Gpu,
        problem: &Conv2d,
        format: sys::cudnnTensorFormat_t,
        math: sys::cudnnMathType_t,
        x: &CudaSlice<T>,
        w: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<Self> {
        if !available() {
            return Err(Error::Cudnn("libcudnn was not found on the library path".into()));
        }
        problem.validate()?;
        let handle = Cudnn::new(gpu.stream().clone()).map_err(cudnn_err("handle"))?;
        // Dims are always logical (N, C, H, W); `format` says how they lie in memory. The filter
        // is K x C/G x R x S (KCRS or KRSC with C/G channels), as cuDNN wants it for G groups.
        let xd = handle.create_4d_tensor::<T>(format, dims4(problem.input_shape())).map_err(cudnn_err("input descriptor"))?;
        let wd = handle.create_4d_filter::<T>(format, dims4(problem.filter_shape())).map_err(cudnn_err("filter descriptor"))?;
        let yd = handle.create_4d_tensor::<T>(format, dims4(problem.output_shape())).map_err(cudnn_err("output descriptor"))?;
        let mut conv = handle
            .create_conv2d::<f32>(
                [problem.pad.0 as i32, problem.pad.1 as i32],
                [problem.stride.0 as i32, problem.stride.1 as i32],
                [problem.dilation.0 as i32, problem.dilation.1 as i32],
                sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
            )
            .map_err(cudnn_err("convolution descriptor"))?;
        conv.set_math_type(math).map_err(cudnn_err("math type"))?;
        // cudnnSetConvolutionGroupCount (cudarc loads it with the other cuDNN symbols); the
        // descriptor's default is 1, set anyway so that every problem describes itself.
        conv.set_group_count(group_count(problem)?).map_err(cudnn_err("group count"))?;
        let mut this = CudnnConv { x: xd, w: wd, y: yd, conv, algo: ALGOS[0], workspace: None, _handle: handle };
        let mut best: Option<(f64, Algo)> = None;
        for algo in ALGOS {
            let Ok(bytes) = this.forward().get_workspace_size(algo) else { continue };
            if bytes > MAX_WORKSPACE_BYTES {
                continue;
            }
            this.algo = algo;
            this.workspace = if bytes > 0 { gpu.alloc_zeros::<u8>(bytes).ok() } else { None };
            if bytes > 0 && this.workspace.is_none() {
                continue;
            }
            if this.run(x, w, y).is_err() || gpu.synchronize().is_err() {
                continue;
            }
            let t = time_runs(gpu, TimingConfig::new(1, 5), |_| this.run(x, w, y))?;
            if best.is_none_or(|(ms, _)| t.median_ms < ms) {
                best = Some((t.median_ms, algo));
            }
        }
        let (_, algo) = best.ok_or_else(|| Error::Cudnn("no forward algorithm accepted this problem".into()))?;
        let bytes = this.forward().get_workspace_size(algo).map_err(cudnn_err("workspace size"))?;
        this.algo = algo;
        this.workspace = if bytes > 0 { Some(gpu.alloc_zeros::<u8>(bytes)?) } else { None };
        Ok(this)
    }

    fn forward(&self) -> ConvForward<'_, T, f32, T> {
        ConvForward { conv: &self.conv, x: &self.x, w: &self.w, y: &self.y }
    }

    /// The chosen algorithm's name, e.g. `WINOGRAD_NONFUSED`.
    pub fn algo_name(&self) -> String {
        format!("{:?}", self.algo).trim_start_matches("CUDNN_CONVOLUTION_FWD_ALGO_").to_string()
    }

    /// Enqueues one forward convolution.
    pub fn run(&mut self, x: &CudaSlice<T>, w: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        let algo = self.algo;
        let fwd = ConvForward { conv: &self.conv, x: &self.x, w: &self.w, y: &self.y };
        // SAFETY: the buffers hold the problem's input, filter and output in the format the descriptors describe.
        unsafe { fwd.launch(algo, self.workspace.as_mut(), (T::from_f32(1.0), T::from_f32(0.0)), x, w, y) }.map_err(cudnn_err("forward"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_problems_give_the_filter_c_over_g_channels_and_the_groups_to_the_convolution() {
        // C = 8 in 4 groups: each filter reads 2 channels.
        let p = Conv2d::new(2, 8, 9, 9, 8, 3, 3).with_pad(1).with_groups(4);
        assert_eq!(dims4(p.filter_shape()), [8, 2, 3, 3]);
        assert_eq!(group_count(&p), Ok(4));
        // Depthwise with channel multiplier 2: K = 32 filters of one channel each.
        let dw = Conv2d::new(1, 16, 9, 9, 32, 3, 3).with_groups(16);
        assert_eq!(dims4(dw.filter_shape()), [32, 1, 3, 3]);
        assert_eq!(group_count(&dw), Ok(16));
        let dense = Conv2d::new(1, 16, 9, 9, 32, 3, 3);
        assert_eq!((dims4(dense.filter_shape()), group_count(&dense)), ([32, 16, 3, 3], Ok(1)));
        assert!(group_count(&dense.with_groups(1 << 31)).is_err());
    }
}
