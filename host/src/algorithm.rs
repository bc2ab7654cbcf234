//! The kernels a user can pick, and `conv2d`, which runs one of them.

use std::str::FromStr;

use convrs_spec::ConvShape;
use cudarc::driver::{CudaSlice, LaunchConfig};

use crate::dtype::{DType, Element};
use crate::epilogue::EpilogueOperands;
use crate::gpu::{cuda_err, KernelArgs};
use crate::plan::{DeviceModel, Family, KernelDesc, LaunchPlan};
use crate::registry;
use crate::workspace::Workspace;
use crate::{Conv2d, Error, Gpu, Layout, Result, Tensor};

/// A conv2d kernel of convrs, or [`Algorithm::Auto`]. Each family reads as a progression from
/// naive to fast; [`crate::registry`] describes each kernel (element types, layouts, plan). The
/// element type is the data's: a tensor-core kernel runs its fp16 or its bf16 entry for fp16 or
/// bf16 tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// The kernel with the lowest predicted time for the problem, the element type and the
    /// layout the caller holds, layout conversions included ([`crate::select::choose`]).
    Auto,
    /// Family 1, step 1: one output element per thread (NCHW, fp32).
    DirectNaive,
    /// Family 1, step 2: shared-memory tiles, register blocking over output channels,
    /// 16-byte loads and prefetching (NCHW, fp32).
    DirectSmem,
    /// Family 2, step 1: block tiles of (output channel x batch) per output pixel staged through
    /// shared memory, register tiles with virtual-thread striding (HWCN input, RSCK filter,
    /// HWKN output, fp32).
    TiledHwcn,
    /// Family 2, step 2: the same tiling as an implicit GEMM over the layout most users hold
    /// (NCHW input, KCRS filter, NKPQ output, fp32).
    TiledNchw,
    /// Family 3, step 1: tensor cores on the blocked layout (NHWC16n16c input, RSCK16k16c
    /// filter, NHWC16n16c output; fp16 or bf16 in, fp32 accumulate, the input's type or fp32
    /// out), on `WmmaNhwc`'s implicit-GEMM mainloop. N, C, K multiples of 16 (others run
    /// zero-padded).
    WmmaNhwcnc,
    /// Family 3, step 2: tensor-core implicit GEMM on plain channels-last data (NHWC input,
    /// KRSC filter, NHWK output; fp16 or bf16 in, fp32 accumulate, the input's type or fp32
    /// out). C, K multiples of 8 (others run zero-padded).
    WmmaNhwc,
    /// Family 3, step 2 on fp32 data: `WmmaNhwc`'s mainloop with `mma.sync` m16n8k8 TF32
    /// (each operand's low 13 bits dropped, fp32 accumulation: [`crate::Precision::Tf32`]), NHWC
    /// input, KRSC filter, NHWK fp32 output; every GPU of compute capability 8.0 and up. C a
    /// multiple of 4, K of 2 (others run zero-padded).
    WmmaNhwcTf32,
    /// The same to fp32 accuracy by 3xTF32 ([`crate::Precision::Fp32`]): each operand split in
    /// a TF32 high part and remainder, three MMAs a product, each k-tile's sums added in fp32.
    WmmaNhwc3xTf32,
    /// Family 3, step 2b: tensor cores for layers with few input channels (C = 1, 3): the
    /// reduction runs over taps and channels together and operands are gathered element by
    /// element, so C is not padded (NHWC, KRSC, NHWK; fp16 or bf16). Any C; K a multiple of 8
    /// (others run zero-padded).
    WmmaSmallC,
    /// Family 3, step 2c: `WmmaSmallC`'s reduction over taps and channels with each output
    /// tile's input patch staged in shared memory once, the tensor cores' operands read from it
    /// through a table of tap offsets, and the output written through shared memory in 16-byte
    /// chunks (NHWC, KRSC, NHWK; fp16 or bf16). Any C whose patch fits in shared memory; K a
    /// multiple of 8 (others run zero-padded).
    WmmaPatch,
    /// Family 3, step 2d: `WmmaPatch` on the layouts an NCHW caller holds, with no transposes
    /// around it (NCHW input, KCRS filter, NKPQ output; fp16 or bf16): the reduction runs in the
    /// KCRS filter's order, the patch is copied plane by plane, and the output is staged
    /// transposed and written in runs of pixels of one channel. Any C whose patch fits in
    /// shared memory, any K.
    WmmaPatchNchw,
    /// Family 3 on Hopper (compute capability 9.0 only): `WmmaNhwc`'s implicit GEMM with the
    /// warpgroup MMA `wgmma.mma_async` (sm_90a; fp16 or bf16 in, fp32 accumulate), under one of
    /// the policies of `convrs_spec::hopper` (how the tiles reach shared memory, how the output
    /// tiles are scheduled, clusters): `wgmma_multistage`, `wgmma_ws_cpasync`, ...,
    /// `wgmma_ws_tma_persistent`, `wgmma_ws_tma_splitk` (`convrs list`). C, K multiples of 8.
    ///
    /// ```
    /// use convrs::Algorithm;
    /// let a: Algorithm = "wgmma_ws_tma_persistent".parse()?;
    /// assert!(matches!(a, Algorithm::Wgmma(p) if p.persistent() && p.input_map()));
    /// # Ok::<(), convrs::Error>(())
    /// ```
    Wgmma(convrs_spec::hopper::Policy),
    /// Family 4: depthwise convolution (groups = C, K = m*C) on NCHW data (KCRS filter of
    /// K x 1 x R x S, NKPQ output): memory-bound, a thread per column of output rows; fp32, fp16
    /// or bf16 in, fp32 accumulate. Takes depthwise problems only.
    DepthwiseNchw,
    /// Family 4: depthwise convolution on NHWC data (RSK filter: the `Hwcn` reading of
    /// K x 1 x R x S, NHWK output): vectors of channels per thread; fp32, fp16 or bf16.
    DepthwiseNhwc,
    /// Family 4, step 2 of `DepthwiseNhwc` (the same layouts): a block of output rows and
    /// columns per thread, each input row loaded once for every output row it feeds. Multiplier 1
    /// with C a multiple of 4, square 3x3, 5x5 or 7x7 filters at stride 1, dilation 1.
    DepthwiseNhwcStrip,
    /// Family 4, step 2 of `DepthwiseNchw` (the same layouts): a block of output rows and
    /// columns of one plane per thread, each input row loaded once for every output row it
    /// feeds. Any multiplier, square 3x3, 5x5 or 7x7 filters at stride 1 or 2, dilation 1.
    DepthwiseNchwStrip,
    /// Family 4, step 3 of `DepthwiseNhwc` (the same layouts): a block stages an input tile in
    /// shared memory by `cp.async` (two stages, persistent blocks) and its threads compute a
    /// block of outputs each from there. Multiplier 1 with whole 16-byte chunks of channels (C a
    /// multiple of 8 for fp16/bf16, 4 for fp32), square 3x3, 5x5 or 7x7 filters at stride 1 or
    /// 2, dilation 1.
    DepthwiseNhwcTile,
}

/// The kernels of the registry, in its order (const-evaluated, so it cannot drift from it).
const KERNEL_ALGORITHMS: [Algorithm; registry::KERNELS.len()] = {
    let mut all = [Algorithm::Auto; registry::KERNELS.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = registry::KERNELS[i].algorithm;
        i += 1;
    }
    all
};

impl Algorithm {
    /// Every kernel (not `Auto`), in the order of the progression.
    pub const ALL: &'static [Algorithm] = &KERNEL_ALGORITHMS;

    /// The kernel's description; `None` for `Auto`.
    pub fn kernel(self) -> Option<&'static KernelDesc> {
        registry::find(self)
    }

    /// The name the CLI takes (`--algo`): `auto` or the kernel's name.
    pub fn name(self) -> &'static str {
        self.kernel().map_or("auto", |k| k.name)
    }

    /// The element types of the input and filter the kernel reads (it writes the input's type or
    /// fp32); empty for `Auto`.
    pub fn dtypes(self) -> &'static [DType] {
        self.kernel().map_or(&[], |k| k.dtypes)
    }

    /// Layouts of (input, filter, output) the kernel reads and writes; filters use the
    /// (K, C, R, S) reading of [`Layout`]. `None` for `Auto`.
    pub fn layouts(self) -> Option<(Layout, Layout, Layout)> {
        self.kernel().map(|k| k.layouts)
    }

    /// The kernel's family; `None` for `Auto`.
    pub fn family(self) -> Option<Family> {
        self.kernel().map(|k| k.family)
    }

    /// How this kernel would be launched on `problem` for `dtype` data, with its predicted time,
    /// or why it cannot take it. `Auto` needs the layout too: see [`crate::select::choose`].
    pub fn plan(self, problem: &Conv2d, dtype: DType, device: &DeviceModel) -> Result<LaunchPlan> {
        let k = self.kernel().ok_or_else(|| Error::InvalidArgument("`auto` is not a kernel: resolve it with convrs::select::choose".into()))?;
        k.plan(problem, dtype, device)
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Names earlier versions used: the kernels that took bf16 data under a name of their own, and the
/// Hopper steps named by history; `FromStr` points each to what replaced it.
const RENAMED: [(&str, &str); 12] = [
    ("wgmma_nhwc", "wgmma_multistage"),
    ("wgmma_ws_nhwc", "wgmma_ws_cpasync"),
    ("wgmma_mc_nhwc", "wgmma_ws_cpasync_cluster2"),
    ("wgmma_pws_nhwc", "wgmma_ws_cpasync_persistent"),
    ("wgmma_pmc_nhwc", "wgmma_ws_cpasync_persistent_cluster2"),
    ("wgmma_tma_nhwc", "wgmma_ws_tma_persistent"),
    ("wgmma_tmc_nhwc", "wgmma_ws_tma_persistent_cluster2"),
    ("wgmma_sk_nhwc", "wgmma_ws_tma_splitk"),
    ("wmma_nhwcnc_bf16", "wmma_nhwcnc"),
    ("wmma_nhwc_bf16", "wmma_nhwc"),
    ("wmma_smallc_bf16", "wmma_smallc"),
    ("wmma_patch_bf16", "wmma_patch"),
];

impl FromStr for Algorithm {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        if s == "auto" {
            return Ok(Algorithm::Auto);
        }
        if let Some(k) = registry::by_name(s) {
            return Ok(k.algorithm);
        }
        let stem = s.strip_suffix("_bf16").unwrap_or(s);
        if let Some((_, now)) = RENAMED.iter().find(|(old, _)| *old == s || *old == stem) {
            let bf16 = if s.ends_with("_bf16") { " with bf16 data (--dtype bf16): a kernel runs the type of its data" } else { "" };
            return Err(Error::InvalidArgument(format!("`{s}` is now `{now}`{bf16}")));
        }
        let names: Vec<_> = Algorithm::ALL.iter().map(|a| a.name()).collect();
        Err(Error::InvalidArgument(format!("unknown algorithm `{s}`; expected auto or one of: {}", names.join(", "))))
    }
}

/// The `i32` geometry every kernel takes after its pointers, in the argument order of
/// [`ConvShape`] (the kernels declare their parameters from the same definition), for an output
/// of element type `out`.
pub(crate) fn shape_args(p: &Conv2d, out: DType) -> [i32; ConvShape::LEN] {
    conv_shape(p, out).to_args()
}

/// The kernels' view of `p` writing `out` (what [`shape_args`] pushes); `p` must be validated.
pub(crate) fn conv_shape(p: &Conv2d, out: DType) -> ConvShape {
    let (out_h, out_w) = p.output_hw();
    // validate() has bounded every one of these by i32::MAX.
    let i = |v: usize| v as i32;
    ConvShape {
        n: i(p.n),
        c: i(p.c),
        h: i(p.h),
        w: i(p.w),
        k: i(p.k),
        r: i(p.r),
        s: i(p.s),
        p: i(out_h),
        q: i(out_w),
        pad_h: i(p.pad.0),
        pad_w: i(p.pad.1),
        stride_h: i(p.stride.0),
        stride_w: i(p.stride.1),
        dil_h: i(p.dilation.0),
        dil_w: i(p.dilation.1),
        groups: i(p.groups),
        y_bits: 8 * out.size() as i32,
        // The launch fills the epilogue's arguments from its operands (launch_fused).
        ep: convrs_spec::EpilogueArgs::NONE,
    }
}

/// Pushes the epilogue's arguments in the kernels' order (`convrs_spec::epilogue_fields!`).
macro_rules! push_epilogue_args {
    ([$b:ident $ep:ident] $($field:ident: $ty:ident $doc:literal),*) => {
        $( $b.value($ep.$field); )*
    };
}

/// Enqueues `plan`'s kernel on buffers already on the device, in the layouts of
/// [`Algorithm::layouts`] (asynchronous: call [`Gpu::synchronize`] before reading `output`).
/// The plan comes from [`Algorithm::plan`] (fp32 output) or
/// [`crate::registry::KernelDesc::plan_writing`]; `T` must be the plan's input type and `O` its
/// output type; `filter` holds [`LaunchPlan::filter_buffer_len`] elements (a 3xTF32 plan reads
/// the filter split by [`crate::device_tensor::split_tf32`]). `workspace` must hold at least the plan's [`LaunchPlan::workspace_bytes`]
/// ([`Workspace::for_plan`]; [`Workspace::none`] for plans that take none) and stay
/// allocated while the launch, or a CUDA graph that captured it, may run.
///
/// ```no_run
/// use convrs::workspace::Workspace;
/// use convrs::{launch, Algorithm, Conv2d, DType, Gpu};
/// let gpu = Gpu::new(0)?;
/// let p = Conv2d::new(16, 832, 7, 7, 128, 5, 5).with_pad(2); // few output tiles: split-K
/// let plan = "wgmma_ws_tma_splitk".parse::<Algorithm>()?.plan(&p, DType::F16, gpu.model())?;
/// let (x, w) = (gpu.alloc_zeros::<half::f16>(p.input_len())?, gpu.alloc_zeros::<half::f16>(p.filter_len())?);
/// let mut y = gpu.alloc_zeros::<f32>(p.output_len())?;
/// let mut ws = Workspace::for_plan(&gpu, &plan)?; // zeroed, owned by the caller
/// launch(&gpu, &plan, &p, &x, &w, &mut y, &mut ws)?;
/// gpu.synchronize()?;
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn launch<T: Element, O: Element>(gpu: &Gpu, plan: &LaunchPlan, problem: &Conv2d, input: &CudaSlice<T>, filter: &CudaSlice<T>, output: &mut CudaSlice<O>, workspace: &mut Workspace) -> Result<()> {
    launch_fused(gpu, plan, problem, input, filter, output, workspace, &EpilogueOperands::none())
}

/// [`launch`] of a problem with a fused epilogue ([`Conv2d::epilogue`]), reading its operands
/// from `ep`: `scale` and `bias` of `problem.k` fp32 values and a `residual` of the output's
/// length in the kernel's output layout and type, each given exactly when the epilogue names it
/// (an error otherwise). `problem` is the one the kernel runs (padded to its multiples, as for
/// [`launch`]), so the vectors and the residual are sized for it too.
///
/// ```no_run
/// use convrs::workspace::Workspace;
/// use convrs::epilogue::{Activation, Epilogue, EpilogueOperands};
/// use convrs::{launch_fused, Algorithm, Conv2d, DType, Gpu};
/// use half::f16;
/// let gpu = Gpu::new(0)?;
/// let ep = Epilogue::NONE.with_bias().with_residual().with_activation(Activation::Relu);
/// let p = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1).with_epilogue(ep);
/// let plan = "wgmma_ws_tma_persistent".parse::<Algorithm>()?.plan(&p, DType::F16, gpu.model())?;
/// let plan = convrs::plan::LaunchPlan { out_dtype: DType::F16, ..plan }; // fp16 out
/// let (x, w) = (gpu.alloc_zeros::<f16>(p.input_len())?, gpu.alloc_zeros::<f16>(p.filter_len())?);
/// let bias = gpu.upload(&vec![0.5f32; p.k])?;
/// let residual = gpu.alloc_zeros::<f16>(p.output_len())?; // NHWK, like the output
/// let mut y = gpu.alloc_zeros::<f16>(p.output_len())?;
/// let mut ws = Workspace::for_plan(&gpu, &plan)?;
/// let ops = EpilogueOperands { scale: None, bias: Some(&bias), residual: Some(&residual) };
/// launch_fused(&gpu, &plan, &p, &x, &w, &mut y, &mut ws, &ops)?;
/// gpu.synchronize()?;
/// # Ok::<(), convrs::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn launch_fused<T: Element, O: Element>(gpu: &Gpu, plan: &LaunchPlan, problem: &Conv2d, input: &CudaSlice<T>, filter: &CudaSlice<T>, output: &mut CudaSlice<O>, workspace: &mut Workspace, ep: &EpilogueOperands<'_, O>) -> Result<()> {
    if T::DTYPE != plan.dtype {
        return Err(Error::InvalidArgument(format!("{} reads {} inputs but {} buffers were given", plan.kernel, plan.dtype, T::DTYPE)));
    }
    if O::DTYPE != plan.out_dtype {
        return Err(Error::InvalidArgument(format!("{} is planned to write {} outputs but a {} buffer was given", plan.kernel, plan.out_dtype, O::DTYPE)));
    }
    check_len("input", problem.input_len(), input.len())?;
    check_len("filter", plan.filter_buffer_len(problem), filter.len())?;
    check_len("output", problem.output_len(), output.len())?;
    if workspace.bytes() < plan.workspace_bytes {
        return Err(Error::BufferSize { tensor: "workspace", expected: plan.workspace_bytes, got: workspace.bytes() });
    }
    let (mut ep_args, _ep_guards) = ep.args(gpu, &problem.epilogue, problem.k, problem.output_len())?;
    if plan.epilogue != problem.epilogue {
        return Err(Error::InvalidArgument(format!("{} was planned with the epilogue {} and is launched on a problem with {}: plan the problem it runs", plan.kernel, plan.epilogue, problem.epilogue)));
    }
    let f = gpu.function(plan.kernel, plan.shared_bytes)?;
    let args = shape_args(&plan.kernel_problem(problem)?, plan.out_dtype);
    let cfg = LaunchConfig { grid_dim: plan.grid, block_dim: plan.block, shared_mem_bytes: plan.shared_bytes };
    let filter_map = plan.filter_map_rows.map(|rows| gpu.filter_map(filter, &plan.filter_map_problem(problem)?, rows)).transpose()?;
    let input_map = plan.input_map.map(|kind| gpu.input_map(input, problem, kind, plan.fold_w)).transpose()?;
    ep_args.residual_map = residual_map::<O>(gpu, plan, problem, ep_args.residual)?;
    let mut b = KernelArgs::default();
    b.input(gpu, input).input(gpu, filter).output(gpu, output);
    if let Some(map) = filter_map {
        b.value(map);
    }
    if let Some(map) = input_map {
        b.value(map);
    }
    let ws = workspace.slice();
    if plan.workspace_bytes > 0 {
        let ws = ws.ok_or(Error::BufferSize { tensor: "workspace", expected: plan.workspace_bytes, got: 0 })?;
        b.input(gpu, ws);
    }
    for a in args {
        b.value(a);
    }
    convrs_spec::epilogue_fields!(push_epilogue_args, [b ep_args]);
    // SAFETY: the kernel's arguments are (input, filter, output, shape..., epilogue...) by the
    // conv_kernel! convention, with the filter's tensor map after the output, the input's after
    // that and the workspace last where the plan says the kernel takes them (the maps of these
    // buffers and this problem); the buffer lengths were checked above (the epilogue's by
    // `EpilogueOperands::args`, whose addresses stay valid while `ep` borrows them), and a
    // workspace is at least as large as the plan says, its split-K counters zero (allocated
    // zeroed; every launch leaves them so).
    unsafe { gpu.launch(&f, cfg, b) }.map_err(cuda_err(plan.kernel))?;
    Ok(())
}

/// The device address of the tensor map of the residual at `residual` where `plan` takes a
/// 16-bit residual by TMA ([`LaunchPlan::residual_map_rows`]), for `problem`, the one the kernel
/// runs; 0 otherwise (an fp32 residual, or none: the kernel's threads load it).
pub(crate) fn residual_map<O: Element>(gpu: &Gpu, plan: &LaunchPlan, problem: &Conv2d, residual: u64) -> Result<u64> {
    match plan.residual_map_rows {
        Some(rows) if residual != 0 && O::DTYPE.size() == 2 => gpu.residual_map(residual, problem.k, problem.output_len(), rows, O::DTYPE),
        _ => Ok(0),
    }
}

fn check_len(tensor: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got { Ok(()) } else { Err(Error::BufferSize { tensor, expected, got }) }
}

/// Runs `algo` on host tensors and returns the output (NKPQ, i.e. [`Layout::Nchw`]) in the
/// input's element type: fp32 for fp32 data; for fp16 or bf16 data the tensor-core kernels
/// accumulate in fp32 and round each output to the input's type ([`conv2d_to`] returns fp32
/// instead).
///
/// [`Algorithm::Auto`] picks the kernel with the lowest predicted time for `T` and the input's
/// layout. Inputs in another layout than the kernel's are converted first. `T` is `f32` for the
/// direct and tiled families and [`half::f16`] or [`half::bf16`] for the tensor-core family
/// ([`Algorithm::dtypes`]); a mismatch is an error. The output buffer is poisoned with NaN
/// before the launch, so an element the kernel failed to write cannot pass for a result.
///
/// ```no_run
/// use convrs::{conv2d, Algorithm, Conv2d, Gpu, Layout, Tensor};
/// let gpu = Gpu::new(0)?;
/// let problem = Conv2d::new(1, 3, 32, 32, 8, 3, 3).with_pad(1);
/// let x = Tensor::random(problem.input_shape(), Layout::Nchw, 1)?;
/// let w = Tensor::random(problem.filter_shape(), Layout::Nchw, 2)?;
/// let y = conv2d(&gpu, Algorithm::Auto, &problem, &x, &w)?;
/// assert_eq!(y.dims(), problem.output_shape());
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn conv2d<T: Element>(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, input: &Tensor<T>, filter: &Tensor<T>) -> Result<Tensor<T>> {
    conv2d_to::<T, T>(gpu, algo, problem, input, filter)
}

/// [`conv2d`] with the output in element type `O`: the input's type `T`, or `f32` (the fp32
/// accumulators unrounded; what every kernel can write). Any other `O` is an error.
///
/// ```no_run
/// use convrs::{conv2d_to, Algorithm, Conv2d, Gpu, Layout, Tensor};
/// use half::f16;
/// let gpu = Gpu::new(0)?;
/// let problem = Conv2d::new(8, 64, 28, 28, 64, 3, 3).with_pad(1);
/// let x = Tensor::random(problem.input_shape(), Layout::Nhwc, 1)?.map(f16::from_f32);
/// let w = Tensor::random(problem.filter_shape(), Layout::Nhwc, 2)?.map(f16::from_f32);
/// let y: Tensor<f32> = conv2d_to(&gpu, Algorithm::Auto, &problem, &x, &w)?; // fp16 in, fp32 out
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn conv2d_to<T: Element, O: Element>(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, input: &Tensor<T>, filter: &Tensor<T>) -> Result<Tensor<O>> {
    use crate::prepared::{Prepared, Runnable};
    let mut run = Prepared::<T, O>::new(gpu, algo, problem, input, filter)?;
    run.poison_output(gpu)?;
    run.enqueue(gpu)?;
    gpu.synchronize()?;
    run.output(gpu)
}

/// [`conv2d_to`] of a problem with a fused epilogue ([`Conv2d::with_epilogue`]) and its
/// operands: `y = act(alpha * conv(x, w) * scale[k] + bias[k] + beta * residual)` computed on
/// the fp32 accumulators and rounded once to `O`. [`Algorithm::Auto`] chooses among the kernels
/// that fuse it ([`crate::registry::KernelDesc::fuses_epilogue`]); another kernel is refused.
///
/// ```no_run
/// use convrs::epilogue::{Activation, Epilogue};
/// use convrs::prepared::EpilogueTensors;
/// use convrs::{conv2d_fused, Algorithm, Conv2d, Gpu, Layout, Tensor};
/// use half::f16;
/// let gpu = Gpu::new(0)?;
/// let ep = Epilogue::NONE.with_scale().with_bias().with_residual().with_activation(Activation::Relu);
/// let p = Conv2d::new(8, 64, 56, 56, 64, 3, 3).with_pad(1).with_epilogue(ep);
/// let x = Tensor::random(p.input_shape(), Layout::Nhwc, 1)?.map(f16::from_f32);
/// let w = Tensor::random(p.filter_shape(), Layout::Nhwc, 2)?.map(f16::from_f32);
/// let shortcut = Tensor::random(p.output_shape(), Layout::Nhwc, 3)?.map(f16::from_f32);
/// let (scale, bias) = (vec![1.0f32; p.k], vec![0.1f32; p.k]); // a folded BatchNorm
/// let ops = EpilogueTensors { scale: Some(&scale), bias: Some(&bias), residual: Some(&shortcut) };
/// let y: Tensor<f16> = conv2d_fused(&gpu, Algorithm::Auto, &p, &x, &w, &ops)?; // NCHW
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn conv2d_fused<T: Element, O: Element>(gpu: &Gpu, algo: Algorithm, problem: &Conv2d, input: &Tensor<T>, filter: &Tensor<T>, ep: &crate::prepared::EpilogueTensors<'_, O>) -> Result<Tensor<O>> {
    use crate::prepared::{Prepared, Runnable};
    let mut run = Prepared::<T, O>::new_fused(gpu, algo, problem, input, filter, ep)?;
    run.poison_output(gpu)?;
    run.enqueue(gpu)?;
    gpu.synchronize()?;
    run.output(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>().unwrap(), *a);
        }
        assert!(matches!("direct_fast".parse::<Algorithm>(), Err(Error::InvalidArgument(_))));
        // Earlier names say what replaced them.
        let e = "wgmma_tma_nhwc_bf16".parse::<Algorithm>().unwrap_err().to_string();
        assert!(e.contains("`wgmma_ws_tma_persistent` with bf16 data"), "{e}");
        assert!("wmma_patch_bf16".parse::<Algorithm>().unwrap_err().to_string().contains("`wmma_patch`"));
        assert_eq!("auto".parse::<Algorithm>().unwrap(), Algorithm::Auto);
        assert!(!Algorithm::ALL.contains(&Algorithm::Auto));
    }

    #[test]
    fn shape_args_follow_the_kernel_order() {
        let p = Conv2d::new(2, 3, 10, 12, 4, 3, 5).with_pad(1).with_stride(2).with_dilation(1);
        // P = (10 + 2 - 2 - 1)/2 + 1 = 5; Q = (12 + 2 - 4 - 1)/2 + 1 = 5.
        assert_eq!(shape_args(&p, DType::F32), [2, 3, 10, 12, 4, 3, 5, 5, 5, 1, 1, 2, 2, 1, 1, 1, 32]);
        assert_eq!(shape_args(&p, DType::BF16)[16], 16);
        let g = Conv2d::new(2, 4, 10, 12, 6, 3, 5).with_groups(2);
        assert_eq!(shape_args(&g, DType::F16)[15], 2);
    }
}
