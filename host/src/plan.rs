//! Launch plans: for each kernel, the grid, block and shared memory a problem needs and the
//! predicted time on the device, or the reason the kernel cannot take it. Pure functions of the
//! problem, the element type and the [`DeviceModel`], so they are tested on CPU against built-in
//! device models.
//!
//! Each family's plans live in a submodule and describe their kernels with a [`KernelDesc`];
//! [`crate::registry`] is the one list of them.

pub mod depthwise;
pub mod direct;
pub mod hopper;
pub mod model;
pub mod tensor_core;
pub mod tiled;

use crate::dtype::DType;
use crate::{Algorithm, Conv2d, Error, Layout, Precision, Result};

/// How to launch one kernel on one problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchPlan {
    /// The PTX entry point's name.
    pub kernel: &'static str,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    /// Dynamic shared memory bytes per block.
    pub shared_bytes: u32,
    /// The element type of the input and filter buffers the kernel reads.
    pub dtype: DType,
    /// The element type of the output it writes: fp32 from every planner;
    /// [`KernelDesc::plan_writing`] sets the input's 16-bit type where the kernel can round to it.
    pub out_dtype: DType,
    /// The plan's cost model's prediction of the kernel's time on the device, microseconds (the
    /// unit every family answers in, so predictions compare across families).
    pub predicted_us: f64,
    /// `Some(rows)` if the kernel takes one more pointer after the output: a TMA tensor map of
    /// the filter (KRSC, the input's 16-bit type) whose boxes are `rows` output channels by 64
    /// channels ([`crate::tensor_map`]); [`crate::launch`] builds it once per filter buffer.
    pub filter_map_rows: Option<u32>,
    /// `Some` if the kernel takes one more pointer after the filter's map: a TMA tensor map of
    /// the input, of the kind given ([`crate::tensor_map`]).
    pub input_map: Option<InputMap>,
    /// Bytes of workspace the kernel takes as its last pointer argument (after the maps): the
    /// split-K schedule's, where the grid's z slices meet (`convrs_spec::split_k`); 0 for none.
    /// Whoever runs the plan owns it ([`crate::workspace::Workspace`]).
    pub workspace_bytes: usize,
    /// Whether the kernel reads the fp32 filter split for 3xTF32: a buffer of twice the filter's
    /// elements, its TF32 high parts then its remainders ([`crate::device_tensor::split_tf32`]),
    /// the filter's tensor map over those 2K rows.
    pub split_filter: bool,
    /// The fused epilogue the kernel was planned to apply ([`crate::Conv2d::epilogue`]; only
    /// kernels that fuse one are planned with another than [`crate::Epilogue::NONE`]): a launch
    /// runs it only on a problem with the same epilogue.
    pub epilogue: crate::Epilogue,
    /// Whether the kernel computes the problem with its column stride folded into the channels
    /// ([`Conv2d::folded_w`]) on the same buffers: its shape arguments and both tensor maps are
    /// the folded problem's ([`LaunchPlan::kernel_problem`]).
    pub fold_w: bool,
    /// `Some(rows)` if the kernel can take the fused residual by TMA: a 16-bit residual's
    /// launch passes its tensor map ({K, N*P*Q}, boxes of 64 channels by `rows` pixels) in the
    /// epilogue's `residual_map`, and `shared_bytes` holds the buffers it lands in
    /// (`convrs_spec::hopper::Config::takes_residual_map`); an fp32 one is loaded by the threads.
    pub residual_map_rows: Option<u32>,
}

/// The kinds of TMA tensor map of the input a kernel may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputMap {
    /// NHWC read in im2col mode for the problem's geometry: boxes of `pixels` output pixels'
    /// taps (the kernel's block tile rows: 128, or 64) by 128 bytes of channels.
    Im2col {
        /// Output pixels a copy brings.
        pixels: u32,
    },
    /// NCHW read as planes: a 3-D tensor {H*W, C, N}, boxes of one 128-byte row of pixels by
    /// one k-tile of channels of one image (64 by 64 of 16-bit data, 32 by 32 of fp32;
    /// `convrs_spec::hopper::Producer::Planes` and `PlanePixels`).
    Planes,
    /// NCHW read as rows: a 4-D tensor {W, H, C, N}, unswizzled boxes of 72 pixels of one row
    /// by one k-tile of channels of one image (16-bit data; `convrs_spec::hopper::Producer::PlaneRows`).
    Rows,
}

impl LaunchPlan {
    /// A plan that launches `kernel` on `grid` blocks of `block` threads with `shared_bytes` of
    /// dynamic shared memory, reading `dtype` and writing fp32, predicted to take `predicted_us`;
    /// no tensor maps, no workspace.
    ///
    /// ```
    /// use convrs::plan::{InputMap, LaunchPlan};
    /// use convrs::DType;
    /// let plan = LaunchPlan::new("wgmma_ws_tma_splitk_128x64k64", (12, 1, 4), (384, 1, 1), 197_760, DType::F16, 9.5)
    ///     .with_filter_map(64)
    ///     .with_input_map(128)
    ///     .with_workspace(1 << 20);
    /// assert_eq!((plan.filter_map_rows, plan.input_map, plan.workspace_bytes), (Some(64), Some(InputMap::Im2col { pixels: 128 }), 1 << 20));
    /// ```
    pub fn new(kernel: &'static str, grid: (u32, u32, u32), block: (u32, u32, u32), shared_bytes: u32, dtype: DType, predicted_us: f64) -> Self {
        LaunchPlan { kernel, grid, block, shared_bytes, dtype, out_dtype: DType::F32, predicted_us, filter_map_rows: None, input_map: None, workspace_bytes: 0, split_filter: false, epilogue: crate::Epilogue::NONE, fold_w: false, residual_map_rows: None }
    }

    /// The same plan reading the filter split for 3xTF32 ([`LaunchPlan::split_filter`]).
    pub fn with_split_filter(self) -> Self {
        LaunchPlan { split_filter: true, ..self }
    }

    /// Elements of the filter buffer the kernel reads for `problem`: twice the filter's when
    /// it is split for 3xTF32.
    pub fn filter_buffer_len(&self, problem: &Conv2d) -> usize {
        if self.split_filter { 2 * problem.filter_len() } else { problem.filter_len() }
    }

    /// The same plan computing the folded problem ([`LaunchPlan::fold_w`]).
    pub fn with_fold_w(self) -> Self {
        LaunchPlan { fold_w: true, ..self }
    }

    /// The problem the kernel computes for `problem`: `problem` itself, or under
    /// [`LaunchPlan::fold_w`] its folded form ([`Conv2d::folded_w`]; an error for a problem
    /// that does not fold, which this plan was not made for).
    pub fn kernel_problem(&self, problem: &Conv2d) -> Result<Conv2d> {
        if !self.fold_w {
            return Ok(*problem);
        }
        problem.folded_w().ok_or_else(|| Error::InvalidArgument(format!("{} was planned for a column stride folded into the channels, which {problem} does not allow: plan the problem it runs", self.kernel)))
    }

    /// The problem whose KRSC filter the filter's tensor map describes: the kernel's problem
    /// ([`LaunchPlan::kernel_problem`]), with K doubled when the filter is split (the
    /// remainders are rows K..2K).
    pub fn filter_map_problem(&self, problem: &Conv2d) -> Result<Conv2d> {
        let p = self.kernel_problem(problem)?;
        Ok(if self.split_filter { Conv2d { k: 2 * p.k, ..p } } else { p })
    }

    /// The same plan taking the filter's tensor map with boxes of `rows` output channels.
    pub fn with_filter_map(self, rows: u32) -> Self {
        LaunchPlan { filter_map_rows: Some(rows), ..self }
    }

    /// The same plan taking the input's im2col tensor map, copies of `pixels` output pixels.
    pub fn with_input_map(self, pixels: u32) -> Self {
        LaunchPlan { input_map: Some(InputMap::Im2col { pixels }), ..self }
    }

    /// The same plan taking the input's plane map ([`InputMap::Planes`]).
    pub fn with_plane_map(self) -> Self {
        LaunchPlan { input_map: Some(InputMap::Planes), ..self }
    }

    /// The same plan taking the input's row map ([`InputMap::Rows`]).
    pub fn with_row_map(self) -> Self {
        LaunchPlan { input_map: Some(InputMap::Rows), ..self }
    }

    /// The same plan taking a 16-bit residual's tensor map, boxes of `rows` pixels
    /// ([`LaunchPlan::residual_map_rows`]).
    pub fn with_residual_map(self, rows: u32) -> Self {
        LaunchPlan { residual_map_rows: Some(rows), ..self }
    }

    /// The same plan taking a workspace of `bytes` (none for 0).
    pub fn with_workspace(self, bytes: usize) -> Self {
        LaunchPlan { workspace_bytes: bytes, ..self }
    }
}

/// A kernel family: each reads as a progression from naive to fast.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Family {
    Direct,
    Tiled,
    TensorCore,
    /// Depthwise convolution (groups = C), memory-bound: judged by the copy bandwidth.
    Depthwise,
}

impl Family {
    /// `direct`, `tiled` or `tensor-core`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Direct => "direct",
            Family::Tiled => "tiled",
            Family::TensorCore => "tensor-core",
            Family::Depthwise => "depthwise",
        }
    }
}

/// One kernel's description: what the registry lists, `convrs list` prints and the automatic
/// choice plans.
#[derive(Clone, Copy, Debug)]
pub struct KernelDesc {
    pub algorithm: Algorithm,
    /// The name the CLI takes and tables print.
    pub name: &'static str,
    pub family: Family,
    /// One line for `convrs list` and `explain` (see [`KernelDesc::describe`]).
    pub summary: &'static str,
    /// The element types of the input and filter it reads: the data's type picks the entry.
    /// It writes outputs in that type (the tensor-core kernels round their fp32 accumulators to
    /// it) or in fp32, which every kernel can write.
    pub dtypes: &'static [DType],
    /// The layouts of (input, filter, output) it reads and writes; filters use the (K, C, R, S)
    /// reading of [`Layout`].
    pub layouts: (Layout, Layout, Layout),
    /// (N, C, K) must be multiples of these; the test generators draw problems from them.
    pub multiples: (usize, usize, usize),
    /// How it multiplies fp32 data, if it reads any: a problem asking for more accuracy
    /// ([`Conv2d::precision`]) is refused. [`Precision::Fma`] for kernels of 16-bit data only.
    pub precision: Precision,
    /// The launch on a problem of an element type this kernel reads (checked before the call),
    /// with its predicted time, or why it cannot take it. It gets its own description, so one
    /// planner serves the kernels a table generates (the Hopper policies).
    pub planner: fn(&KernelDesc, &Conv2d, DType, &DeviceModel) -> Result<LaunchPlan>,
}

impl KernelDesc {
    /// Whether input, filter and output are all in plain layouts ([`Layout::is_plain`]): the
    /// kernels device tensors in the caller's layout can reach through the transforms.
    pub fn on_plain_layouts(&self) -> bool {
        [self.layouts.0, self.layouts.1, self.layouts.2].iter().all(Layout::is_plain)
    }

    /// Whether it reads `dtype` data.
    pub fn reads(&self, dtype: DType) -> bool {
        self.dtypes.contains(&dtype)
    }

    /// The element types it reads, as `fp16/bf16`.
    pub fn dtypes_label(&self) -> String {
        self.dtypes.iter().map(|d| d.name()).collect::<Vec<_>>().join("/")
    }

    /// Its launch on `problem` for `dtype` data (writing fp32), with the predicted time, or why
    /// it cannot take it (another element type included).
    ///
    /// ```
    /// use convrs::registry::by_name;
    /// use convrs::{Conv2d, DType, DeviceModel};
    /// let (k, d) = (by_name("wgmma_ws_tma_persistent").unwrap(), DeviceModel::named("h100")?);
    /// let p = Conv2d::new(8, 64, 28, 28, 64, 3, 3).with_pad(1);
    /// assert!(k.plan(&p, DType::BF16, &d)?.kernel.starts_with("wgmma_ws_tma_persistent_bf16_")); // the bf16 entry
    /// assert!(k.plan(&p, DType::F32, &d).is_err()); // a 16-bit kernel
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn plan(&self, problem: &Conv2d, dtype: DType, device: &DeviceModel) -> Result<LaunchPlan> {
        if !self.reads(dtype) {
            return Err(Error::InvalidArgument(format!("{} reads {} data, not {dtype}", self.name, self.dtypes_label())));
        }
        if dtype == DType::F32 && !problem.precision.admits(self.precision) {
            return Err(Error::Unsupported {
                algorithm: self.name,
                reason: format!("it computes fp32 data in {}, and the problem asks for {} (Conv2d::with_precision, --precision)", self.precision, problem.precision),
            });
        }
        // Dense kernels take groups = 1, the depthwise ones groups = C (C = 1 is both).
        if self.family == Family::Depthwise && !problem.is_depthwise() {
            return Err(Error::Unsupported {
                algorithm: self.name,
                reason: format!("it computes depthwise convolutions (groups = C = {}), and the problem has {} group(s)", problem.c, problem.groups),
            });
        }
        // Grouped ones (1 < G < C) run on the Hopper im2col kernels.
        let grouped_ok = self.takes_groups() && !problem.is_depthwise();
        if self.family != Family::Depthwise && problem.groups != 1 && !grouped_ok {
            let hint = if problem.is_depthwise() {
                "the depthwise kernels (`convrs list`) take it"
            } else {
                "grouped convolutions with 1 < groups < C run on the Hopper kernels with im2col copies (wgmma_ws_tma*, compute capability 9.0)"
            };
            return Err(Error::Unsupported { algorithm: self.name, reason: format!("it computes dense convolutions (groups = 1), and the problem has {} groups: {hint}", problem.groups) });
        }
        if !problem.epilogue.is_none() && !self.fuses_epilogue() {
            let fusing: Vec<_> = crate::registry::KERNELS.iter().filter(|k| k.fuses_epilogue()).map(|k| k.name).collect();
            return Err(Error::Unsupported {
                algorithm: self.name,
                reason: format!("it has no fused epilogue, and the problem asks for one ({}); the kernels that fuse it: {}", problem.epilogue, fusing.join(", ")),
            });
        }
        Ok(LaunchPlan { epilogue: problem.epilogue, ..(self.planner)(self, problem, dtype, device)? })
    }

    /// Whether it takes grouped problems with 1 < G < C (`ConvShape::groups`): the Hopper
    /// kernels whose activations come by im2col TMA copies, each tile reading its group's
    /// channels. It runs them in merged groups ([`KernelDesc::run_problem`]).
    pub fn takes_groups(&self) -> bool {
        matches!(self.algorithm, Algorithm::Wgmma(p) if p.producer == convrs_spec::hopper::Producer::WsTma)
    }

    /// Whether it applies a fused epilogue ([`crate::Epilogue`]) in its store: the Hopper
    /// kernels with both tiles by TMA and no cluster (`convrs_spec::hopper::Policy::fuses_epilogue`),
    /// the depthwise ones, and `wmma_smallc` and `wmma_patch` (few input channels).
    pub fn fuses_epilogue(&self) -> bool {
        match self.algorithm {
            Algorithm::Wgmma(p) => p.fuses_epilogue(),
            Algorithm::DepthwiseNchw | Algorithm::DepthwiseNhwc | Algorithm::DepthwiseNhwcStrip | Algorithm::DepthwiseNchwStrip | Algorithm::DepthwiseNhwcTile | Algorithm::WmmaSmallC | Algorithm::WmmaPatch | Algorithm::WmmaPatchNchw => true,
            _ => false,
        }
    }

    /// [`KernelDesc::plan`] writing `out`: the input's type `dtype` or fp32 (the cost models do
    /// not price the output's width: the mainloop dominates every timed shape).
    ///
    /// ```
    /// use convrs::registry::by_name;
    /// use convrs::{Conv2d, DType, DeviceModel};
    /// let (k, d) = (by_name("wmma_nhwc").unwrap(), DeviceModel::named("h100")?);
    /// let p = Conv2d::new(8, 64, 28, 28, 64, 3, 3).with_pad(1);
    /// assert_eq!(k.plan_writing(&p, DType::F16, &d, DType::F16)?.out_dtype, DType::F16);
    /// assert!(k.plan_writing(&p, DType::F16, &d, DType::BF16).is_err()); // fp16 data: fp16 or fp32 out
    /// # Ok::<(), convrs::Error>(())
    /// ```
    pub fn plan_writing(&self, problem: &Conv2d, dtype: DType, device: &DeviceModel, out: DType) -> Result<LaunchPlan> {
        if out != dtype && out != DType::F32 {
            return Err(Error::InvalidArgument(format!("{} on {dtype} data writes {dtype} or fp32 outputs, not {out}", self.name)));
        }
        Ok(LaunchPlan { out_dtype: out, ..self.plan(problem, dtype, device)? })
    }

    /// The problem the kernel runs for `p`: a grouped one (1 < G < C) on a kernel that
    /// [takes groups](KernelDesc::takes_groups) in fewer, wider groups
    /// ([`crate::groups::run_groups`]: the filter expanded, block diagonal); a dense one (or
    /// one merged all the way to G = 1) with N, C and K rounded up to its
    /// [`KernelDesc::multiples`] (the extra images and channels are zeros on the way in and
    /// dropped on the way out). For the NCHW plane kernels (stride 1 only) and step 16 (NHWC in,
    /// NCHW out: its caller's input is transposed anyway), a strided 1x1 layer without padding
    /// is its [`Conv2d::subsampled`] problem: the input sampled on the stride's grid on the way
    /// in ([`Conv2d::sampling`]), the output the same.
    ///
    /// ```
    /// use convrs::registry::by_name;
    /// use convrs::Conv2d;
    /// let p = Conv2d::new(8, 256, 28, 28, 256, 3, 3).with_pad(1).with_groups(32); // 8 channels a group
    /// assert_eq!(by_name("wgmma_ws_tma_persistent").unwrap().run_problem(&p), p.with_groups(4));
    /// let s = Conv2d::new(8, 256, 56, 56, 128, 1, 1).with_stride(2); // ResNet's downsampling 1x1
    /// assert_eq!(by_name("wgmma_nchw1x1_persistent_tf32").unwrap().run_problem(&s), Conv2d::new(8, 256, 28, 28, 128, 1, 1));
    /// assert_eq!(by_name("wgmma_ws_tma_persistent_to_nchw").unwrap().run_problem(&s), Conv2d::new(8, 256, 28, 28, 128, 1, 1));
    /// assert_eq!(by_name("wgmma_ws_tma_persistent_tf32").unwrap().run_problem(&s), s); // reads strides itself
    /// ```
    pub fn run_problem(&self, p: &Conv2d) -> Conv2d {
        let up = |v: usize, m: usize| v.div_ceil(m.max(1)).saturating_mul(m.max(1));
        let p = &match self.algorithm {
            Algorithm::Wgmma(policy) if policy.producer.samples_strided_1x1() => p.subsampled().unwrap_or(*p),
            _ => *p,
        };
        let p = match self.algorithm {
            Algorithm::Wgmma(policy) if self.takes_groups() && p.groups > 1 && p.c % p.groups == 0 && p.k % p.groups == 0 => {
                p.with_groups(crate::groups::run_groups(p, policy.math.k_tile(), hopper::narrowest_tile(policy)))
            }
            _ => *p,
        };
        if p.groups != 1 {
            return p;
        }
        let (n, c, k) = self.multiples;
        Conv2d { n: up(p.n, n), c: up(p.c, c), k: up(p.k, k), ..p }
    }

    /// What it does, in one line: the summary, and for a Hopper policy its parts.
    pub fn describe(&self) -> String {
        match self.algorithm {
            Algorithm::Wgmma(policy) => format!("{} ({})", self.summary, hopper::describe(policy)),
            _ => self.summary.to_string(),
        }
    }
}

pub use crate::device::DeviceModel;

/// `ceil(a / b)` for launch arithmetic.
pub(crate) fn div_ceil_u32(a: usize, b: usize) -> u32 {
    a.div_ceil(b).try_into().unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use crate::{Algorithm, Conv2d, DType, DeviceModel};

    /// Every plan's prediction lands within 1.6x of what the kernel measured on an H100
    /// (`convrs bench`, median of 50, BENCHMARKS.md 2026-11-22, commit 9aa0812): the cost models
    /// answer in microseconds on the device's clock and SM count, so they compare across families.
    #[test]
    fn predictions_track_the_h100_measurements() {
        let d = DeviceModel::named("h100").unwrap();
        let shapes = [
            Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1),
            Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1),
            Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1),
            Conv2d::new(1, 6, 768, 512, 6, 6, 6),
        ];
        let kernels = [(Algorithm::DirectNaive, DType::F32), (Algorithm::DirectSmem, DType::F32), (Algorithm::TiledHwcn, DType::F32), (Algorithm::TiledNchw, DType::F32), (Algorithm::WmmaNhwcnc, DType::F16), (Algorithm::WmmaNhwc, DType::F16)];
        // Measured ms per shape, per kernel above (None: the kernel refuses the shape).
        let measured: [[Option<f64>; 6]; 4] = [
            [Some(106.972), Some(7.0751), Some(2.4973), Some(3.3155), Some(0.2741), Some(0.2758)],
            [Some(12.7489), Some(0.4402), Some(0.3918), Some(0.5776), Some(0.0579), Some(0.0741)],
            [Some(7.1824), Some(0.8452), Some(0.3800), Some(0.4445), Some(0.0415), Some(0.0395)],
            [Some(0.6948), Some(0.0314), Some(30.1332), Some(0.2873), None, None],
        ];
        for (p, row) in shapes.iter().zip(measured) {
            for ((a, dtype), ms) in kernels.iter().zip(row) {
                match (a.plan(p, *dtype, &d), ms) {
                    (Ok(plan), Some(ms)) => {
                        let ratio = plan.predicted_us / (ms * 1e3);
                        assert!((1.0 / 1.6..=1.6).contains(&ratio), "{a} on {p}: predicted {:.1} us, measured {:.1} us", plan.predicted_us, ms * 1e3);
                    }
                    (Err(_), None) => {}
                    (plan, ms) => panic!("{a} on {p}: plan {plan:?} but measured {ms:?}"),
                }
            }
        }
    }
}
