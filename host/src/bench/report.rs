//! What one bench run measured, and what follows from it: per shape and precision the best
//! convrs kernel, the best baseline, their ratio, the flag for a weak baseline; per suite the
//! summary (geometric mean, count at or above 1.0x, worst shape, and the geomeans against each
//! baseline alone); the Markdown table, with a bandwidth line (GB/s of our kernel and of the
//! best baseline) for each depthwise shape.
//!
//! A shape with a fused epilogue ([`GroupResult::epilogue`]) is judged against the faster of the
//! two baselines that compute the same layer: PyTorch eager and cuDNN's fused graph
//! ([`GroupResult::cudnn_fused`]). cuDNN's bare-convolution rows are shown in their own column,
//! marked so and left out of every ratio and flag; the table names the strongest baseline per
//! shape, and [`GroupResult::judgement`] records it in the JSON.

use crate::compare::Comparison;
use crate::timing::Timing;

/// An in-process baseline more than this factor slower than PyTorch's on the same shape is
/// flagged: it is a bug in the baseline, never a win for convrs.
pub const FLAG_SLACK: f64 = 1.05;

/// One timed row: a convrs kernel or a baseline.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Measurement {
    /// Kernel name, or the baseline with its choice (`cudnn graph eng28 (heur_b)`).
    pub name: String,
    /// `direct`, `tiled`, `tensor-core`, `cudnn` or `pytorch`.
    pub family: String,
    pub layout: String,
    pub dtype: String,
    pub timing: Option<Timing>,
    pub tflops: Option<f64>,
    pub check: Option<Comparison>,
    pub passed: bool,
    /// Why there is no timing, or what else to know (e.g. PyTorch not run).
    pub note: Option<String>,
    /// For a cuDNN graph baseline: every engine configuration its search looked at, with its
    /// time or why it was skipped (to tell a weak baseline from a strong one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<crate::cudnn_graph::Candidate>,
    /// A kernel that reads and writes the activations in the layouts the baselines do (the
    /// caller's: NHWC for the 16-bit types, NCHW for fp32) at the problem's own sizes, so its time
    /// is what that caller gets; its filter may be in another layout, which a `DeviceConv` brings
    /// it to once per weights (as the NCHW caller's rows do, untimed). Other kernels' rows leave
    /// their layout conversion and zero-padding untimed, and count only in the "any layout" figures.
    pub user_layout: bool,
    /// Depthwise shapes only: the achieved bandwidth in GB/s, [`GroupResult::bytes`] over the
    /// median time (a timed row's, like `tflops`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbps: Option<f64>,
}

impl Measurement {
    pub fn new(name: impl Into<String>, family: &str, layout: &str, dtype: &str) -> Self {
        Measurement {
            name: name.into(),
            family: family.into(),
            layout: layout.into(),
            dtype: dtype.into(),
            timing: None,
            tflops: None,
            check: None,
            passed: false,
            note: None,
            engines: Vec::new(),
            user_layout: false,
            gbps: None,
        }
    }

    /// A row that was not run, and why.
    pub fn not_run(mut self, why: impl Into<String>) -> Self {
        self.note = Some(why.into());
        self
    }

    /// Records a median time (of a row that passed its check, or was not checkable).
    pub fn timed(mut self, timing: Timing, flops: f64) -> Self {
        self.tflops = Some(flops / (timing.median_ms * 1e-3) / 1e12);
        self.timing = Some(timing);
        self
    }

    /// The median time of a row that ran and passed its check; anything else takes no part in
    /// a comparison.
    pub fn ms(&self) -> Option<f64> {
        self.timing.filter(|_| self.passed).map(|t| t.median_ms).filter(|ms| ms.is_finite() && *ms > 0.0)
    }

    /// Sets [`Measurement::gbps`] from `bytes` moved per run (`None`: no figure).
    fn set_bandwidth(&mut self, bytes: Option<f64>) {
        self.gbps = bytes.zip(self.timing).map(|(b, t)| b / (t.median_ms * 1e-3) / 1e9).filter(|g| g.is_finite());
    }
}

fn fastest<'a>(rows: impl IntoIterator<Item = &'a Measurement>) -> Option<&'a Measurement> {
    rows.into_iter().filter(|m| m.ms().is_some()).min_by(|a, b| a.ms().unwrap_or(f64::INFINITY).total_cmp(&b.ms().unwrap_or(f64::INFINITY)))
}

/// One shape in one precision: our kernels and every baseline, on the same inputs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GroupResult {
    pub shape: String,
    /// `fp32` (FMA arithmetic on both sides) or `fp16`.
    pub precision: String,
    pub flops: f64,
    /// The fused epilogue every row of ours and PyTorch's computes (`bias+relu`; see
    /// [`crate::Epilogue`]), `None` for the bare convolution. With one, cuDNN's rows (the bare
    /// convolution: it cannot apply it) take no part in any ratio or flag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epilogue: Option<String>,
    /// In-process cuDNN: the graph API's fastest engine, the legacy API's fastest algorithm
    /// (the bare convolution: not judged under an epilogue).
    pub cudnn: Vec<Measurement>,
    /// With an epilogue: cuDNN's fused graph of the layer (the convolution, then pointwise nodes
    /// computing the epilogue; [`crate::cudnn_graph::GraphConv::new_fused`]), the in-process
    /// cuDNN baseline judged there (a row not run says why: often no engine takes the graph).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cudnn_fused: Vec<Measurement>,
    /// `torch.nn.functional.conv2d` in the same run (or why not).
    pub pytorch: Measurement,
    /// fp32 only: PyTorch's default for fp32 convolutions, TF32 tensor cores (cuDNN graph with
    /// tensor-core engines, and PyTorch with `allow_tf32`). Shown beside, never the judged baseline.
    pub tf32_cudnn: Vec<Measurement>,
    /// fp32 with an epilogue: cuDNN's fused graph with TF32 engines allowed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tf32_cudnn_fused: Vec<Measurement>,
    pub tf32_pytorch: Option<Measurement>,
    pub kernels: Vec<Measurement>,
    /// Tensor-core types: the fastest kernel on plain layouts run for a caller holding NCHW
    /// tensors, the GPU layout transforms of input, filter and output timed with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nchw_user: Option<Measurement>,
    /// The same caller's route where it leaves the choice to convrs (`Algorithm::Auto` through
    /// `DeviceConv`: `device_conv::auto_kernel`), timed the same way; [`GroupResult::nchw_user`]
    /// is the fastest of it and the other routes tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nchw_auto: Option<Measurement>,
    /// fp32 groups with TF32 baselines: the fastest kernel at TF32 precision or better run for
    /// an NCHW caller asking for TF32 (transforms timed), where that kernel is a TF32 one (else
    /// [`GroupResult::nchw_user`] answers for that caller too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nchw_user_tf32: Option<Measurement>,
    /// Tensor-core types: the baselines given what that caller holds, NCHW tensors of the same
    /// type: cuDNN's graph API with NCHW strides (every tensor-core engine), and PyTorch on
    /// contiguous (NCHW) tensors. The NCHW user row is judged against these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nchw_cudnn: Vec<Measurement>,
    /// With an epilogue: cuDNN's fused graph given NCHW tensors (judged there instead of
    /// [`GroupResult::nchw_cudnn`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nchw_cudnn_fused: Vec<Measurement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nchw_pytorch: Option<Measurement>,
    /// The kernel the automatic choice's cost models predict fastest here (kernel time alone,
    /// each in its own layout, as the rows are timed).
    pub heuristic_pick: Option<String>,
    /// Depthwise shapes (G = C > 1) only: the bytes of input, filter and output in the data's
    /// element size ([`crate::bench::depthwise_bytes`]), from which each row's
    /// [`Measurement::gbps`] follows; such a layer moves bytes rather than doing FLOPs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    /// Which baseline the shape was judged against and the ratios, for the JSON
    /// ([`GroupResult::record_judgement`], once every row is in).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judgement: Option<Judgement>,
}

/// The verdict on one group, as the JSON records it: the strongest baseline (the faster of
/// PyTorch and the judged cuDNN rows: cuDNN's fused graph under an epilogue, its bare
/// convolution otherwise), and our best kernel's speed against it and against each alone.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Judgement {
    /// The strongest baseline's row (`pytorch eager fp16`, `cudnn fused graph eng12 (heur_b)`),
    /// `None` where no baseline gave a figure.
    pub strongest: Option<String>,
    /// Which it is: `"pytorch"` or `"cudnn"`.
    pub strongest_family: Option<String>,
    /// [`GroupResult::ratio`]: the strongest baseline's time over our best kernel's.
    pub ratio: Option<f64>,
    /// [`GroupResult::ratio_vs_pytorch`].
    pub ratio_vs_pytorch: Option<f64>,
    /// [`GroupResult::ratio_vs_cudnn`].
    pub ratio_vs_cudnn: Option<f64>,
}

/// Whether row `m` is one of a kernel that reads fp32 data as TF32 ([`crate::Precision::Tf32`]; only
/// fp32 kernels have it): judged against the TF32 baselines only.
fn reads_tf32(m: &Measurement) -> bool {
    crate::registry::by_name(&m.name).is_some_and(|k| k.precision == crate::Precision::Tf32)
}

impl GroupResult {
    /// Records the bytes a run moves (`None`: not a depthwise shape) and every timed row's
    /// bandwidth from them.
    pub fn set_bytes(&mut self, bytes: Option<f64>) {
        self.bytes = bytes;
        let rows = self
            .kernels
            .iter_mut()
            .chain(&mut self.cudnn)
            .chain(&mut self.cudnn_fused)
            .chain([&mut self.pytorch])
            .chain(&mut self.tf32_cudnn)
            .chain(&mut self.tf32_cudnn_fused)
            .chain(&mut self.tf32_pytorch)
            .chain(&mut self.nchw_user)
            .chain(&mut self.nchw_auto)
            .chain(&mut self.nchw_user_tf32)
            .chain(&mut self.nchw_cudnn)
            .chain(&mut self.nchw_cudnn_fused)
            .chain(&mut self.nchw_pytorch);
        for m in rows {
            m.set_bandwidth(bytes);
        }
    }

    /// The kernel whose bandwidth a depthwise shape reports: the judged one (caller's layouts),
    /// else the fastest in any layout.
    pub fn bandwidth_kernel(&self) -> Option<&Measurement> {
        self.best_user_kernel().or_else(|| self.best_kernel())
    }

    /// The fastest kernel in any layout (its conversion untimed), at this precision (TF32
    /// kernels left out: they meet the TF32 baselines in [`GroupResult::ratio_tf32`]).
    pub fn best_kernel(&self) -> Option<&Measurement> {
        fastest(self.kernels.iter().filter(|k| !reads_tf32(k)))
    }

    /// The fastest kernel whose input and output are in `layout` (conversion untimed; the
    /// filter, constant, is brought to the kernel's layout once per weights), at this precision.
    pub fn best_kernel_in(&self, layout: crate::Layout) -> Option<&Measurement> {
        let all_in = |m: &&Measurement| crate::registry::by_name(&m.name).is_some_and(|k| (k.layouts.0, k.layouts.2) == (layout, layout));
        fastest(self.kernels.iter().filter(|k| !reads_tf32(k)).filter(all_in))
    }

    /// The fastest kernel whose output is in `layout` (whatever its input's), at this precision:
    /// a caller holding `layout` tensors transforms only its input for it.
    pub fn best_kernel_writing(&self, layout: crate::Layout) -> Option<&Measurement> {
        let writes = |m: &&Measurement| crate::registry::by_name(&m.name).is_some_and(|k| k.layouts.2 == layout);
        fastest(self.kernels.iter().filter(|k| !reads_tf32(k)).filter(writes))
    }

    /// The fastest kernel in the caller's layouts ([`Measurement::user_layout`]) at this
    /// precision: the judged one.
    pub fn best_user_kernel(&self) -> Option<&Measurement> {
        fastest(self.kernels.iter().filter(|k| k.user_layout && !reads_tf32(k)))
    }

    /// The fastest kernel of any precision down to TF32, in the caller's layouts (fp32 groups:
    /// what a caller asking for [`crate::Precision::Tf32`] gets).
    pub fn best_tf32_kernel(&self) -> Option<&Measurement> {
        fastest(self.kernels.iter().filter(|k| k.user_layout))
    }

    /// The fastest kernel of any precision down to TF32, in any layout (conversion untimed).
    pub fn best_tf32_any_layout(&self) -> Option<&Measurement> {
        fastest(&self.kernels)
    }

    /// The fastest TF32 kernel whose input and output are in `layout` (conversion,
    /// or a subsampled input's sampling, untimed): the one a caller in `layout` may run with the
    /// fewest transforms, which the fastest kernel in any layout can lose to once they are timed.
    pub fn best_tf32_kernel_in(&self, layout: crate::Layout) -> Option<&Measurement> {
        let all_in = |m: &&Measurement| crate::registry::by_name(&m.name).is_some_and(|k| (k.layouts.0, k.layouts.2) == (layout, layout));
        fastest(self.kernels.iter().filter(|k| reads_tf32(k)).filter(all_in))
    }

    /// What a caller holding the baselines' tensors (NCHW fp32) and asking for TF32 gets: the
    /// faster of [`GroupResult::best_tf32_kernel`], the NCHW caller's row and its TF32 row.
    pub fn best_tf32_caller(&self) -> Option<&Measurement> {
        fastest(self.best_tf32_kernel().into_iter().chain(&self.nchw_user).chain(&self.nchw_user_tf32))
    }

    pub fn best_cudnn(&self) -> Option<&Measurement> {
        fastest(&self.cudnn)
    }

    /// The cuDNN rows that compute what our rows do: `fused` (cuDNN's fused graph) under an
    /// epilogue, where the `bare` convolution is a lighter task than the layer; `bare` otherwise.
    fn judged_cudnn<'a>(&self, bare: &'a [Measurement], fused: &'a [Measurement]) -> &'a [Measurement] {
        if self.epilogue.is_some() {
            fused
        } else {
            bare
        }
    }

    /// The fastest judged in-process cuDNN row of this precision: the fused graph under an
    /// epilogue, the graph or legacy API's bare convolution otherwise.
    pub fn best_judged_cudnn(&self) -> Option<&Measurement> {
        fastest(self.judged_cudnn(&self.cudnn, &self.cudnn_fused))
    }

    /// The strongest baseline of this precision: in-process cuDNN or PyTorch, whichever is
    /// faster; under an epilogue PyTorch eager or cuDNN's fused graph.
    pub fn best_baseline(&self) -> Option<&Measurement> {
        fastest(self.best_judged_cudnn().into_iter().chain([&self.pytorch]))
    }

    /// The strongest baseline given NCHW tensors of this type (tensor-core types).
    pub fn best_nchw_baseline(&self) -> Option<&Measurement> {
        fastest(self.judged_cudnn(&self.nchw_cudnn, &self.nchw_cudnn_fused).iter().chain(&self.nchw_pytorch))
    }

    /// The fastest judged in-process cuDNN row with TF32 allowed (fp32 groups).
    pub fn best_judged_tf32_cudnn(&self) -> Option<&Measurement> {
        fastest(self.judged_cudnn(&self.tf32_cudnn, &self.tf32_cudnn_fused))
    }

    /// The strongest TF32 baseline (fp32 groups).
    pub fn best_tf32(&self) -> Option<&Measurement> {
        fastest(self.best_judged_tf32_cudnn().into_iter().chain(&self.tf32_pytorch))
    }

    /// Best baseline time over our best kernel's in the caller's layouts: above 1 means convrs
    /// is faster for a caller holding the tensors the baselines read.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.best_baseline()?.ms()? / self.best_user_kernel()?.ms()?)
    }

    /// PyTorch's time (eager under an epilogue) over our best kernel's in the caller's layouts.
    pub fn ratio_vs_pytorch(&self) -> Option<f64> {
        Some(self.pytorch.ms()? / self.best_user_kernel()?.ms()?)
    }

    /// The judged cuDNN row's time ([`GroupResult::best_judged_cudnn`]: the fused graph under an
    /// epilogue) over our best kernel's in the caller's layouts.
    pub fn ratio_vs_cudnn(&self) -> Option<f64> {
        Some(self.best_judged_cudnn()?.ms()? / self.best_user_kernel()?.ms()?)
    }

    /// The same with kernels in any layout, their conversions and zero-padding untimed.
    pub fn ratio_any_layout(&self) -> Option<f64> {
        Some(self.best_baseline()?.ms()? / self.best_kernel()?.ms()?)
    }

    /// The NCHW caller's time ([`GroupResult::nchw_user`]) against the strongest baseline
    /// given the same NCHW tensors: the judged figure for that caller.
    pub fn ratio_nchw_user(&self) -> Option<f64> {
        Some(self.best_nchw_baseline()?.ms()? / self.nchw_user.as_ref()?.ms()?)
    }

    /// The NCHW caller's time against the NHWC baselines (what a caller who could hold NHWC
    /// would get from them).
    pub fn ratio_nchw_user_vs_nhwc(&self) -> Option<f64> {
        Some(self.best_baseline()?.ms()? / self.nchw_user.as_ref()?.ms()?)
    }

    /// The TF32 baselines against what a caller holding NCHW fp32 and asking for TF32 gets
    /// ([`GroupResult::best_tf32_caller`]; fp32 groups only).
    pub fn ratio_tf32(&self) -> Option<f64> {
        Some(self.best_tf32()?.ms()? / self.best_tf32_caller()?.ms()?)
    }

    /// [`GroupResult::ratio_tf32`] against PyTorch's TF32 figure alone.
    pub fn ratio_tf32_vs_pytorch(&self) -> Option<f64> {
        Some(self.tf32_pytorch.as_ref()?.ms()? / self.best_tf32_caller()?.ms()?)
    }

    /// [`GroupResult::ratio_tf32`] against the judged TF32 cuDNN row alone.
    pub fn ratio_tf32_vs_cudnn(&self) -> Option<f64> {
        Some(self.best_judged_tf32_cudnn()?.ms()? / self.best_tf32_caller()?.ms()?)
    }

    /// Records [`GroupResult::judgement`] from the rows as they are now.
    pub fn record_judgement(&mut self) {
        let strongest = self.best_baseline();
        self.judgement = Some(Judgement {
            strongest: strongest.map(|m| m.name.clone()),
            strongest_family: strongest.map(|m| m.family.clone()),
            ratio: self.ratio(),
            ratio_vs_pytorch: self.ratio_vs_pytorch(),
            ratio_vs_cudnn: self.ratio_vs_cudnn(),
        });
    }

    /// Auto's route for an NCHW caller ([`GroupResult::nchw_auto`]) over that caller's best
    /// route (1 = Auto took it).
    pub fn nchw_auto_ratio(&self) -> Option<f64> {
        Some(self.nchw_auto.as_ref()?.ms()? / self.nchw_user.as_ref()?.ms()?)
    }

    /// The heuristic pick's measured time over the fastest kernel's (1 = it picked the fastest).
    pub fn heuristic_ratio(&self) -> Option<f64> {
        let pick = self.kernels.iter().find(|k| Some(&k.name) == self.heuristic_pick.as_ref())?;
        Some(pick.ms()? / self.best_kernel()?.ms()?)
    }

    /// Which in-process baselines are more than [`FLAG_SLACK`] slower than PyTorch's
    /// (`"fp32"`/`"fp16"`, and `"tf32"`, `"fp16_nchw"`). None under an epilogue: cuDNN's bare
    /// convolution is then no judged baseline, so its weakness cannot make a win, and PyTorch's
    /// figure is another task's; cuDNN's fused graph is judged beside PyTorch eager, so where it
    /// is the slower one PyTorch eager is the baseline and no win comes from it either.
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if self.epilogue.is_some() {
            return flags;
        }
        let pair = |c: Option<&Measurement>, p: Option<&Measurement>| match (c.and_then(Measurement::ms), p.and_then(Measurement::ms)) {
            (Some(c), Some(p)) => baseline_flagged(c, p),
            _ => false,
        };
        if pair(self.best_cudnn(), Some(&self.pytorch)) {
            flags.push(self.precision.clone());
        }
        if pair(fastest(&self.tf32_cudnn), self.tf32_pytorch.as_ref()) {
            flags.push("tf32".into());
        }
        if pair(fastest(&self.nchw_cudnn), self.nchw_pytorch.as_ref()) {
            flags.push(format!("{}_nchw", self.precision));
        }
        flags
    }
}

/// The flag rule: the in-process baseline is more than 5% slower than PyTorch's.
pub fn baseline_flagged(in_process_ms: f64, pytorch_ms: f64) -> bool {
    in_process_ms > FLAG_SLACK * pytorch_ms
}

/// Geometric mean of positive finite values; `None` for none.
pub fn geomean(xs: &[f64]) -> Option<f64> {
    let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite() && *x > 0.0).collect();
    (!xs.is_empty()).then(|| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// One suite's result in one precision.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    pub suite: String,
    pub precision: String,
    pub shapes: usize,
    /// Shapes with both a passing convrs kernel in the caller's layouts and a baseline.
    pub compared: usize,
    /// Geometric mean of the speed ratio to the best baseline over the compared shapes
    /// ([`GroupResult::ratio`]: kernels in the caller's layouts).
    pub geomean: Option<f64>,
    /// The same with kernels in any layout, conversions untimed ([`GroupResult::ratio_any_layout`]).
    pub geomean_any_layout: Option<f64>,
    /// Geometric mean of the ratio to PyTorch alone (eager under an epilogue;
    /// [`GroupResult::ratio_vs_pytorch`]), over the shapes with both figures.
    pub geomean_vs_pytorch: Option<f64>,
    /// Geometric mean of the ratio to the judged in-process cuDNN alone (its fused graph under an
    /// epilogue; [`GroupResult::ratio_vs_cudnn`]), over the shapes with both figures.
    pub geomean_vs_cudnn: Option<f64>,
    pub at_or_above_1: usize,
    /// The shape with the lowest ratio, and the ratio.
    pub worst: Option<(String, f64)>,
    /// Shapes no convrs kernel of this precision took (or none passed).
    pub no_kernel: usize,
    /// Shapes whose in-process baseline was flagged against PyTorch.
    pub flagged: usize,
    /// Shapes where the heuristic pick is within 10% of the fastest kernel, of those with both.
    pub heuristic_within_10pct: usize,
    pub heuristic_compared: usize,
    /// The shape where the heuristic pick is slowest against the fastest kernel, and by how much.
    pub heuristic_worst: Option<(String, f64)>,
    /// Geometric mean for a caller holding NCHW tensors (tensor-core types; conversions timed)
    /// against the baselines given NCHW tensors, and against the NHWC baselines.
    pub geomean_nchw_user: Option<f64>,
    pub geomean_nchw_user_vs_nhwc: Option<f64>,
    /// Shapes where Auto's NCHW route is within 5% of the NCHW caller's best route, of those
    /// with both ([`GroupResult::nchw_auto_ratio`]); the worst shape and its ratio.
    pub nchw_auto_within_5pct: usize,
    pub nchw_auto_compared: usize,
    pub nchw_auto_worst: Option<(String, f64)>,
}

/// Per precision (in the order first seen), the suite's summary; for fp32 groups with TF32
/// baselines also a `tf32` line: what an NCHW fp32 caller asking for TF32 gets from us
/// ([`GroupResult::best_tf32_caller`]) against them.
pub fn summarize(suite: &str, groups: &[GroupResult]) -> Vec<Summary> {
    let mut precisions: Vec<&str> = Vec::new();
    for g in groups {
        if !precisions.contains(&g.precision.as_str()) {
            precisions.push(&g.precision);
        }
    }
    let mut out = Vec::new();
    for prec in precisions {
        let of: Vec<&GroupResult> = groups.iter().filter(|g| g.precision == prec).collect();
        out.push(summary_of(suite, prec, &of, Judge { best: GroupResult::ratio, pytorch: GroupResult::ratio_vs_pytorch, cudnn: GroupResult::ratio_vs_cudnn }));
        if of.iter().any(|g| !g.tf32_cudnn.is_empty() || g.tf32_pytorch.is_some()) {
            // Only the TF32 baselines' flags and our TF32-admitted kernels count; the heuristic and
            // any-layout columns are the fp32 line's.
            out.push(Summary {
                flagged: of.iter().filter(|g| g.flags().iter().any(|f| f == "tf32")).count(),
                no_kernel: of.iter().filter(|g| g.best_tf32_caller().is_none()).count(),
                geomean_any_layout: None,
                // Its geomean is already the NCHW caller's (the baselines' layout).
                geomean_nchw_user: None,
                geomean_nchw_user_vs_nhwc: None,
                heuristic_within_10pct: 0,
                heuristic_compared: 0,
                heuristic_worst: None,
                nchw_auto_within_5pct: 0,
                nchw_auto_compared: 0,
                nchw_auto_worst: None,
                ..summary_of(suite, "tf32", &of, Judge { best: GroupResult::ratio_tf32, pytorch: GroupResult::ratio_tf32_vs_pytorch, cudnn: GroupResult::ratio_tf32_vs_cudnn })
            });
        }
    }
    out
}

/// How a summary line judges a group: its ratio to the strongest baseline, and to each alone.
struct Judge {
    best: fn(&GroupResult) -> Option<f64>,
    pytorch: fn(&GroupResult) -> Option<f64>,
    cudnn: fn(&GroupResult) -> Option<f64>,
}

/// The summary of groups `of` under the name `prec`, judged by `judge`.
fn summary_of(suite: &str, prec: &str, of: &[&GroupResult], judge: Judge) -> Summary {
    let ratios: Vec<(&str, f64)> = of.iter().filter_map(|g| Some((g.shape.as_str(), (judge.best)(g)?))).collect();
    let geomean_of = |ratio: fn(&GroupResult) -> Option<f64>| geomean(&of.iter().filter_map(|g| ratio(g)).collect::<Vec<_>>());
    let values: Vec<f64> = ratios.iter().map(|r| r.1).collect();
    let picks: Vec<(&str, f64)> = of.iter().filter_map(|g| Some((g.shape.as_str(), g.heuristic_ratio()?))).collect();
    let autos: Vec<(&str, f64)> = of.iter().filter_map(|g| Some((g.shape.as_str(), g.nchw_auto_ratio()?))).collect();
    Summary {
        suite: suite.into(),
        precision: prec.into(),
        shapes: of.len(),
        compared: ratios.len(),
        geomean: geomean(&values),
        geomean_any_layout: geomean(&of.iter().filter_map(|g| g.ratio_any_layout()).collect::<Vec<_>>()),
        geomean_vs_pytorch: geomean_of(judge.pytorch),
        geomean_vs_cudnn: geomean_of(judge.cudnn),
        at_or_above_1: values.iter().filter(|&&r| r >= 1.0).count(),
        worst: ratios.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|(s, r)| (s.to_string(), *r)),
        no_kernel: of.iter().filter(|g| g.best_kernel().is_none()).count(),
        flagged: of.iter().filter(|g| !g.flags().is_empty()).count(),
        heuristic_within_10pct: picks.iter().filter(|p| p.1 <= 1.1).count(),
        heuristic_compared: picks.len(),
        heuristic_worst: picks.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(s, r)| (s.to_string(), *r)),
        geomean_nchw_user: geomean(&of.iter().filter_map(|g| g.ratio_nchw_user()).collect::<Vec<_>>()),
        geomean_nchw_user_vs_nhwc: geomean(&of.iter().filter_map(|g| g.ratio_nchw_user_vs_nhwc()).collect::<Vec<_>>()),
        nchw_auto_within_5pct: autos.iter().filter(|a| a.1 <= 1.05).count(),
        nchw_auto_compared: autos.len(),
        nchw_auto_worst: autos.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(s, r)| (s.to_string(), *r)),
    }
}

/// A baseline's median, or "not run" (the reason is in the run's header line and the JSON).
fn ms_cell(m: Option<&Measurement>) -> String {
    match m.map(|m| (m.ms(), m.timing.is_some())) {
        Some((Some(ms), _)) => format!("{ms:.4}"),
        Some((None, false)) => "not run".into(),
        _ => "n/a".into(),
    }
}

fn named_cell(m: Option<&Measurement>) -> String {
    match m.and_then(|m| Some((m.ms()?, &m.name))) {
        Some((ms, name)) => format!("{ms:.4} {name}"),
        None => "n/a".into(),
    }
}

fn ratio_cell(r: Option<f64>) -> String {
    r.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "n/a".into())
}

fn check_cell(m: &Measurement) -> String {
    match (&m.note, m.passed, m.timing.is_some()) {
        (Some(n), _, false) => format!("not run: {n}"),
        (_, true, _) => "ok".into(),
        _ => "FAIL".into(),
    }
}

/// The table's header for bare convolutions.
const HEADER: &str = "| shape | type | convrs kernel | ms | TFLOP/s | cuDNN in-process (ms, choice) | PyTorch ms | speed vs best baseline | rel L2 err | check |\n";

/// The header where shapes have a fused epilogue: the judged baselines are cuDNN's fused graph
/// and PyTorch eager, the strongest of them is named per line, and cuDNN's bare convolution is
/// shown last, for what the epilogue costs beside it.
const EPILOGUE_HEADER: &str = "| shape | type | convrs kernel (fused epilogue) | ms | TFLOP/s | cuDNN fused graph, conv + pointwise nodes (ms, choice) | PyTorch eager ms (conv2d + epilogue calls) | strongest baseline | speed vs strongest baseline | cuDNN bare convolution, not judged (ms, choice) | rel L2 err | check |\n";

/// One line of the table, cell by cell. A bare table has 10 columns (`cudnn` is the in-process
/// cuDNN cell; `strongest` and `bare` are not shown); a table of fused shapes has 12 (`cudnn` is
/// the fused graph's cell, `strongest` names the judged baseline, `bare` is the bare convolution).
struct Line {
    shape: String,
    kind: String,
    kernel: String,
    ms: String,
    tflops: String,
    cudnn: String,
    pytorch: String,
    strongest: String,
    ratio: String,
    bare: String,
    err: String,
    check: String,
}

impl Line {
    fn render(&self, fused: bool) -> String {
        let l = self;
        if fused {
            format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                l.shape, l.kind, l.kernel, l.ms, l.tflops, l.cudnn, l.pytorch, l.strongest, l.ratio, l.bare, l.err, l.check
            )
        } else {
            format!("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", l.shape, l.kind, l.kernel, l.ms, l.tflops, l.cudnn, l.pytorch, l.ratio, l.err, l.check)
        }
    }
}

/// A cuDNN cell of group `g`: marked as the bare convolution where `g` has an epilogue.
fn cudnn_cell(g: &GroupResult, m: Option<&Measurement>) -> String {
    let bare = if g.epilogue.is_some() && m.and_then(Measurement::ms).is_some() { " (bare conv)" } else { "" };
    format!("{}{bare}", named_cell(m))
}

/// A cell of cuDNN's fused graph: its time and engine, or that it was not run (the reason is
/// listed under the table) or failed its check.
fn fused_cell(rows: &[Measurement]) -> String {
    match (fastest(rows), rows.first()) {
        (Some(m), _) => named_cell(Some(m)),
        (None, None) => "-".into(),
        (None, Some(m)) if m.timing.is_none() => "not run (reason under the table)".into(),
        (None, Some(_)) => "FAIL".into(),
    }
}

/// The kind of a judged baseline row, for the "strongest baseline" cell.
fn strongest_cell(m: Option<&Measurement>) -> String {
    match m {
        Some(m) if m.family == "pytorch" => "PyTorch eager".into(),
        Some(m) if m.family == "cudnn" => "cuDNN fused graph".into(),
        Some(m) => m.name.clone(),
        None => "none".into(),
    }
}

/// The Markdown table: per shape and precision the best kernel (every kernel with
/// `all_kernels`), then for fp32 a line against the TF32 baselines; flagged baselines say so.
/// Shapes with an epilogue get [`EPILOGUE_HEADER`] (the shape label names the epilogue), and
/// under the table the reason of every cuDNN fused graph that was not run.
pub fn table(groups: &[GroupResult], all_kernels: bool) -> String {
    let fused = groups.iter().any(|g| g.epilogue.is_some());
    let (header, columns) = if fused { (EPILOGUE_HEADER, 12) } else { (HEADER, 10) };
    let mut out = format!("{header}|{}\n", " --- |".repeat(columns));
    for g in groups {
        let best = g.best_user_kernel();
        // The judged row, and the fastest in any layout beside it when that is another kernel.
        let rows: Vec<&Measurement> = if all_kernels {
            g.kernels.iter().collect()
        } else {
            let any = g.best_kernel().filter(|k| best.is_none_or(|b| b.name != k.name));
            best.into_iter().chain(any).collect()
        };
        let flags = g.flags();
        let flag = |prec: &str| if flags.iter().any(|f| f == prec) { " **FLAG: baseline >5% slower than PyTorch**" } else { "" };
        let bare_cudnn = format!("{}{}", cudnn_cell(g, g.best_cudnn()), flag(&g.precision));
        // In a fused table the cuDNN column is the fused graph's and the bare one comes last.
        let (cudnn, bare) = if fused { (fused_cell(&g.cudnn_fused), bare_cudnn) } else { (bare_cudnn, String::new()) };
        let baseline_ms = g.best_baseline().and_then(Measurement::ms);
        let line = |kernel: String, ms: String, tflops: String, ratio: String, err: String, check: String| Line {
            shape: g.shape.clone(),
            kind: g.precision.clone(),
            kernel,
            ms,
            tflops,
            cudnn: cudnn.clone(),
            pytorch: ms_cell(Some(&g.pytorch)),
            strongest: strongest_cell(g.best_baseline()),
            ratio,
            bare: bare.clone(),
            err,
            check,
        };
        if rows.is_empty() {
            let why = g.kernels.iter().filter_map(|k| k.note.as_deref()).next().unwrap_or("no kernel passed");
            out += &line(format!("none: {why}"), "-".into(), "-".into(), "n/a".into(), "-".into(), "-".into()).render(fused);
        }
        for k in rows {
            let ratio = baseline_ms.zip(k.ms()).map(|(b, ms)| b / ms);
            let err = k.check.map(|c| format!("{:.1e}", c.rel_l2_err)).unwrap_or_else(|| "-".into());
            let tf = k.tflops.map(|t| format!("{t:.2}")).unwrap_or_else(|| "-".into());
            let ms = k.timing.map(|t| format!("{:.4}", t.median_ms)).unwrap_or_else(|| "-".into());
            let untimed = if k.user_layout { "" } else { ", conversion untimed" };
            out += &line(format!("{} ({}{untimed})", k.name, k.layout), ms, tf, ratio_cell(ratio), err, check_cell(k)).render(fused);
        }
        if g.bytes.is_some() {
            out += &bandwidth_line(g).render(fused);
        }
        if let Some(k) = &g.nchw_user {
            let ms = k.ms().map(|ms| format!("{ms:.4}")).unwrap_or_else(|| "-".into());
            let err = k.check.map(|c| format!("{:.1e}", c.rel_l2_err)).unwrap_or_else(|| "-".into());
            let bare_nchw = cudnn_cell(g, fastest(&g.nchw_cudnn));
            let (cudnn, bare) = if fused { (fused_cell(&g.nchw_cudnn_fused), bare_nchw) } else { (bare_nchw, String::new()) };
            out += &Line {
                shape: g.shape.clone(),
                kind: format!("{} NCHW user (transforms timed; baselines given NCHW)", g.precision),
                kernel: k.name.clone(),
                ms,
                tflops: "-".into(),
                cudnn,
                pytorch: ms_cell(g.nchw_pytorch.as_ref()),
                strongest: strongest_cell(g.best_nchw_baseline()),
                ratio: format!("{} ({} vs NHWC)", ratio_cell(g.ratio_nchw_user()), ratio_cell(g.ratio_nchw_user_vs_nhwc())),
                bare,
                err,
                check: check_cell(k),
            }
            .render(fused);
        }
        if !g.tf32_cudnn.is_empty() || g.tf32_pytorch.is_some() {
            let best = g.best_tf32_caller();
            let kernel = best.map(|k| format!("{} ({})", k.name, k.layout)).unwrap_or_else(|| "none".into());
            let ms = best.and_then(Measurement::ms).map(|ms| format!("{ms:.4}")).unwrap_or_else(|| "-".into());
            let bare_tf32 = format!("{}{}", cudnn_cell(g, fastest(&g.tf32_cudnn)), flag("tf32"));
            let (cudnn, bare) = if fused { (fused_cell(&g.tf32_cudnn_fused), bare_tf32) } else { (bare_tf32, String::new()) };
            out += &Line {
                shape: g.shape.clone(),
                kind: "tf32 (PyTorch's fp32 default)".into(),
                kernel,
                ms,
                tflops: "-".into(),
                cudnn,
                pytorch: ms_cell(g.tf32_pytorch.as_ref()),
                strongest: strongest_cell(g.best_tf32()),
                ratio: ratio_cell(g.ratio_tf32()),
                bare,
                err: "-".into(),
                check: "-".into(),
            }
            .render(fused);
        }
    }
    if fused {
        out += &fused_graph_notes(groups);
    }
    out
}

/// Under a table of fused shapes: why each cuDNN fused graph that has no time was not run.
fn fused_graph_notes(groups: &[GroupResult]) -> String {
    let mut out = String::new();
    for g in groups {
        let rows = [("", &g.cudnn_fused), (" NCHW", &g.nchw_cudnn_fused), (" tf32", &g.tf32_cudnn_fused)];
        for (what, rows) in rows {
            for m in rows.iter().filter(|m| m.timing.is_none()) {
                if out.is_empty() {
                    out += "\ncuDNN fused graphs not run (no figure from cuDNN for these; PyTorch eager is their only baseline):\n\n";
                }
                out += &format!("- {} {}{what} ({}): {}\n", g.shape, g.precision, m.layout, m.note.as_deref().unwrap_or("no reason recorded"));
            }
        }
    }
    out
}

/// A depthwise shape's line: the achieved bandwidth of our kernel ([`GroupResult::bandwidth_kernel`])
/// and of the best baseline, each the shape's bytes over its median time.
fn bandwidth_line(g: &GroupResult) -> Line {
    let cell = |m: Option<&Measurement>| match m.and_then(|m| Some((m, m.ms()?, m.gbps?))) {
        Some((m, ms, gbps)) => {
            let untimed = if m.family == "cudnn" || m.family == "pytorch" || m.user_layout { "" } else { ", conversion untimed" };
            (format!("{} ({}{untimed}): {gbps:.1} GB/s", m.name, m.layout), format!("{ms:.4}"))
        }
        None => ("n/a".into(), "-".into()),
    };
    let ((kernel, ms), (baseline, _)) = (cell(g.bandwidth_kernel()), cell(g.best_baseline()));
    let mb = g.bytes.map_or_else(|| "-".into(), |b| format!("{:.2} MB", b / 1e6));
    let dash = || "-".to_string();
    Line {
        shape: g.shape.clone(),
        kind: format!("{} depthwise bandwidth ({mb} of input + filter + output over the median)", g.precision),
        kernel,
        ms,
        tflops: dash(),
        cudnn: format!("best baseline {baseline}"),
        pytorch: dash(),
        strongest: dash(),
        ratio: dash(),
        bare: dash(),
        err: dash(),
        check: dash(),
    }
}

/// The automatic choice against the measurements: per shape and type the heuristic pick, the
/// fastest kernel, and the pick's time over the fastest's.
pub fn heuristic_table(groups: &[GroupResult]) -> String {
    let mut out = String::from("| shape | type | heuristic pick | fastest kernel | pick / fastest |\n| --- | --- | --- | --- | --- |\n");
    for g in groups {
        let fastest = g.best_kernel().map(|k| format!("{} ({:.4} ms)", k.name, k.ms().unwrap_or(f64::NAN))).unwrap_or_else(|| "none".into());
        let ratio = g.heuristic_ratio().map(|r| format!("{r:.2}x")).unwrap_or_else(|| "n/a".into());
        out += &format!("| {} | {} | {} | {fastest} | {ratio} |\n", g.shape, g.precision, g.heuristic_pick.as_deref().unwrap_or("none"));
    }
    out
}

/// The suite summaries as Markdown: beside the geomean against the strongest baseline, the
/// geomeans against PyTorch alone and against the judged in-process cuDNN alone (its fused graph
/// under an epilogue).
pub fn summary_table(summaries: &[Summary]) -> String {
    let mut out = String::from(
        "| suite | type | shapes | compared | geomean vs best baseline (caller's layout) | geomean vs PyTorch | geomean vs cuDNN in-process (fused graph under an epilogue) | at or above 1.0x | worst shape | no kernel | flagged baselines | heuristic pick within 10% | heuristic worst | geomean, NCHW user vs NCHW baselines | NCHW user vs NHWC baselines | geomean, any layout (conversion untimed) | Auto's NCHW route within 5% of the best | Auto's NCHW route worst |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for s in summaries {
        let worst = s.worst.as_ref().map(|(shape, r)| format!("{shape} ({r:.2}x)")).unwrap_or_else(|| "-".into());
        let pick_worst = s.heuristic_worst.as_ref().map(|(shape, r)| format!("{shape} ({r:.2}x slower)")).unwrap_or_else(|| "-".into());
        let auto_worst = s.nchw_auto_worst.as_ref().map(|(shape, r)| format!("{shape} ({r:.2}x slower)")).unwrap_or_else(|| "-".into());
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {worst} | {} | {} | {}/{} | {pick_worst} | {} | {} | {} | {}/{} | {auto_worst} |\n",
            s.suite,
            s.precision,
            s.shapes,
            s.compared,
            ratio_cell(s.geomean),
            ratio_cell(s.geomean_vs_pytorch),
            ratio_cell(s.geomean_vs_cudnn),
            s.at_or_above_1,
            s.no_kernel,
            s.flagged,
            s.heuristic_within_10pct,
            s.heuristic_compared,
            ratio_cell(s.geomean_nchw_user),
            ratio_cell(s.geomean_nchw_user_vs_nhwc),
            ratio_cell(s.geomean_any_layout),
            s.nchw_auto_within_5pct,
            s.nchw_auto_compared
        );
    }
    out
}

/// One sentence per summary: the geomean against each baseline and against the strongest
/// (`fused`: the shapes have an epilogue, so the baselines are PyTorch eager and cuDNN's fused
/// graph), e.g. `deepbench fp16: geomean 1.02x vs PyTorch eager, 0.85x vs cuDNN's fused graph,
/// 0.84x vs the strongest of the two per shape (45 shapes compared of 45)`.
pub fn summary_lines(summaries: &[Summary], fused: bool) -> String {
    let (pytorch, cudnn) = if fused { ("PyTorch eager", "cuDNN's fused graph") } else { ("PyTorch", "cuDNN in-process") };
    summaries
        .iter()
        .map(|s| {
            format!(
                "{} {}: geomean {} vs {pytorch}, {} vs {cudnn}, {} vs the strongest of the two per shape ({} shapes compared of {})\n",
                s.suite,
                s.precision,
                ratio_cell(s.geomean_vs_pytorch),
                ratio_cell(s.geomean_vs_cudnn),
                ratio_cell(s.geomean),
                s.compared,
                s.shapes
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, ms: Option<f64>, passed: bool) -> Measurement {
        let mut r = Measurement::new(name, "x", "NHWC", "fp16");
        if let Some(ms) = ms {
            r = r.timed(Timing { median_ms: ms, min_ms: ms, max_ms: ms, runs: 3, method: crate::timing::TimingMethod::Graph, batch: 20 }, 1e9);
        }
        r.passed = passed;
        r.user_layout = true;
        r
    }

    fn group(shape: &str, kernels: &[f64], cudnn: f64, pytorch: Option<f64>) -> GroupResult {
        GroupResult {
            shape: shape.into(),
            precision: "fp16".into(),
            flops: 1e9,
            epilogue: None,
            cudnn: vec![m("cudnn graph", Some(cudnn), true)],
            cudnn_fused: vec![],
            pytorch: m("pytorch", pytorch, pytorch.is_some()),
            tf32_cudnn: vec![],
            tf32_cudnn_fused: vec![],
            tf32_pytorch: None,
            kernels: kernels.iter().enumerate().map(|(i, &ms)| m(&format!("k{i}"), Some(ms), true)).collect(),
            heuristic_pick: (!kernels.is_empty()).then(|| "k0".to_string()),
            nchw_user: None,
            nchw_auto: None,
            nchw_user_tf32: None,
            nchw_cudnn: vec![],
            nchw_cudnn_fused: vec![],
            nchw_pytorch: None,
            bytes: None,
            judgement: None,
        }
    }

    #[test]
    fn the_tf32_line_judges_the_nchw_caller_asking_for_tf32() {
        let mut g = group("s", &[4.0], 2.0, None);
        g.precision = "fp32".into();
        g.tf32_cudnn = vec![m("cudnn graph tf32", Some(1.0), true)];
        g.nchw_user = Some(m("k0 from NCHW", Some(5.0), true));
        // Without a TF32 row, the fastest user-layout kernel (4 ms) meets the TF32 baseline.
        assert_eq!(g.ratio_tf32(), Some(0.25));
        g.nchw_user_tf32 = Some(m("tf32 kernel from NCHW", Some(0.5), true));
        assert_eq!(g.ratio_tf32(), Some(2.0));
        let lines = summarize("t", &[g]);
        let tf32 = lines.iter().find(|l| l.precision == "tf32").unwrap();
        assert_eq!((tf32.geomean, tf32.no_kernel, tf32.geomean_nchw_user), (Some(2.0), 0, None));
        // The fp32 line keeps the fp32 NCHW caller's own judgement.
        assert!(lines.iter().any(|l| l.precision == "fp32" && l.geomean == Some(0.5)));
    }

    /// The fastest kernel writing NCHW is found by the registry's layouts, whatever its input's:
    /// step 16 (NHWC in) and the plane kernels (NCHW in), not an NHWC kernel however fast.
    #[test]
    fn the_fastest_kernel_writing_a_layout_is_found_by_its_output() {
        let mut g = group("s", &[], 2.0, None);
        g.kernels = vec![
            m("wgmma_ws_tma_pingpong_m64", Some(1.0), true),
            m("wgmma_ws_tma_pingpong_m64_to_nchw", Some(3.0), true),
            m("wgmma_nchw1x1_persistent", Some(4.0), true),
            m("wgmma_ws_tma_persistent_to_nchw", Some(2.5), false),
        ];
        assert_eq!(g.best_kernel_writing(crate::Layout::Nchw).unwrap().name, "wgmma_ws_tma_pingpong_m64_to_nchw");
        assert_eq!(g.best_kernel_in(crate::Layout::Nchw).unwrap().name, "wgmma_nchw1x1_persistent");
        assert_eq!(g.best_kernel_writing(crate::Layout::Nhwc).unwrap().name, "wgmma_ws_tma_pingpong_m64");
    }

    #[test]
    fn geomean_of_known_values() {
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert!((geomean(&[0.5, 2.0, 1.0]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
        // Non-positive or non-finite ratios cannot be averaged geometrically: they are left out.
        assert!((geomean(&[8.0, f64::NAN, 0.0]).unwrap() - 8.0).abs() < 1e-12);
    }

    #[test]
    fn ratio_uses_the_fastest_passing_rows_on_both_sides() {
        // Kernels 2 ms and 1 ms; baselines cuDNN 3 ms and PyTorch 1.5 ms: 1.5 / 1 = 1.5x.
        let g = group("a", &[2.0, 1.0], 3.0, Some(1.5));
        assert_eq!(g.ratio(), Some(1.5));
        assert_eq!(g.best_baseline().unwrap().name, "pytorch");
        // A failed kernel takes no part, however fast.
        let mut g = group("b", &[2.0], 4.0, None);
        g.kernels.push(m("wrong", Some(0.1), false));
        assert_eq!(g.ratio(), Some(2.0));
        // No passing kernel: no ratio.
        let mut g = group("c", &[], 4.0, None);
        g.kernels.push(m("wrong", Some(0.1), false));
        assert_eq!(g.ratio(), None);
    }

    #[test]
    fn kernels_in_other_layouts_count_only_in_the_any_layout_figures() {
        // k0 in the caller's layout at 2 ms; a blocked-layout kernel at 1 ms; cuDNN 3 ms.
        let mut g = group("a", &[2.0], 3.0, None);
        let mut blocked = m("blocked", Some(1.0), true);
        blocked.user_layout = false;
        g.kernels.push(blocked);
        assert_eq!((g.ratio(), g.ratio_any_layout()), (Some(1.5), Some(3.0)));
        let s = &summarize("t", std::slice::from_ref(&g))[0];
        let close = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-12);
        assert!(close(s.geomean, 1.5) && close(s.geomean_any_layout, 3.0) && s.at_or_above_1 == 1, "{s:?}");
        // The table shows the judged row and, beside it, the faster one with its caveat.
        let t = table(&[g.clone()], false);
        assert!(t.contains("| k0 (NHWC) | 2.0000 |") && t.contains("| blocked (NHWC, conversion untimed) | 1.0000 |"), "{t}");
        // Only kernels in other layouts: nothing to judge.
        g.kernels.remove(0);
        assert_eq!((g.ratio(), g.ratio_any_layout()), (None, Some(3.0)));
    }

    #[test]
    fn heuristic_ratio_compares_the_pick_with_the_fastest() {
        // k0 = 2 ms (the pick), k1 = 1 ms: the pick is 2x slower.
        let g = group("a", &[2.0, 1.0], 3.0, None);
        assert_eq!(g.heuristic_ratio(), Some(2.0));
        let s = &summarize("t", &[g, group("b", &[1.0, 1.05], 3.0, None)])[0];
        assert_eq!((s.heuristic_within_10pct, s.heuristic_compared), (1, 2));
        assert_eq!(s.heuristic_worst, Some(("a".to_string(), 2.0)));
        assert!(heuristic_table(&[group("a", &[2.0, 1.0], 3.0, None)]).contains("| a | fp16 | k0 | k1 (1.0000 ms) | 2.00x |"));
    }

    #[test]
    fn nchw_user_rows_are_judged_against_the_nchw_baselines() {
        // NHWC baselines: cuDNN 2.0 ms; NCHW baselines: cuDNN 6.0, PyTorch 3.0 (the strongest).
        let mut g = group("a", &[1.0], 2.0, None);
        g.nchw_user = Some(m("k0 from NCHW", Some(4.0), true));
        g.nchw_cudnn = vec![m("cudnn graph", Some(6.0), true)];
        g.nchw_pytorch = Some(m("pytorch conv2d fp16_nchw", Some(3.0), true));
        assert_eq!(g.ratio_nchw_user(), Some(0.75));
        assert_eq!(g.ratio_nchw_user_vs_nhwc(), Some(0.5));
        // A group without NCHW baselines has no judged NCHW ratio (and does not enter its geomean).
        let mut h = group("b", &[1.0], 2.0, None);
        h.nchw_user = Some(m("k0 from NCHW", Some(1.0), true));
        assert_eq!(h.ratio_nchw_user(), None);
        let s = &summarize("t", &[g.clone(), h, group("c", &[1.0], 2.0, None)])[0];
        assert_eq!(s.geomean_nchw_user, Some(0.75));
        assert_eq!(s.geomean_nchw_user_vs_nhwc, Some((0.5f64 * 2.0).sqrt()));
        let t = table(&[g], false);
        assert!(t.contains("fp16 NCHW user (transforms timed; baselines given NCHW) | k0 from NCHW | 4.0000 | - | 6.0000 cudnn graph | 3.0000 | 0.75x (0.50x vs NHWC)"), "{t}");
    }

    #[test]
    fn auto_nchw_routes_are_counted_against_the_best_route() {
        // Auto took the best route on "a" (ratio 1), a route 1.2x slower on "b", none on "c".
        let mut a = group("a", &[1.0], 2.0, None);
        a.nchw_user = Some(m("k0 from NCHW", Some(4.0), true));
        a.nchw_auto = a.nchw_user.clone();
        let mut b = group("b", &[1.0], 2.0, None);
        b.nchw_user = Some(m("k0 from NCHW", Some(5.0), true));
        b.nchw_auto = Some(m("k1 from NCHW", Some(6.0), true));
        let c = group("c", &[1.0], 2.0, None);
        assert_eq!((a.nchw_auto_ratio(), c.nchw_auto_ratio()), (Some(1.0), None));
        assert!((b.nchw_auto_ratio().unwrap() - 1.2).abs() < 1e-12);
        let s = &summarize("t", &[a, b, c])[0];
        assert_eq!((s.nchw_auto_within_5pct, s.nchw_auto_compared), (1, 2));
        assert_eq!(s.nchw_auto_worst.as_ref().map(|w| w.0.as_str()), Some("b"));
        let t = summary_table(std::slice::from_ref(s));
        assert!(t.contains("| 1/2 | b (1.20x slower) |"), "{t}");
    }

    #[test]
    fn flag_rule_is_five_percent_against_pytorch() {
        assert!(!baseline_flagged(1.05, 1.0));
        assert!(baseline_flagged(1.0501, 1.0));
        assert!(!baseline_flagged(0.5, 1.0));
        assert_eq!(group("a", &[1.0], 1.2, Some(1.0)).flags(), vec!["fp16".to_string()]);
        assert!(group("a", &[1.0], 1.04, Some(1.0)).flags().is_empty());
        // No PyTorch figure: nothing to flag against.
        assert!(group("a", &[1.0], 9.0, None).flags().is_empty());
    }

    #[test]
    fn summary_counts_geomean_and_worst() {
        let groups = vec![
            group("a", &[1.0], 2.0, None),  // 2.0x
            group("b", &[2.0], 1.0, None),  // 0.5x
            group("c", &[1.0], 1.0, Some(1.2)), // 1.0x (cuDNN 1.0 is the best baseline)
            group("d", &[], 1.0, None),     // no kernel
            group("e", &[1.0], 1.3, Some(1.0)), // 1.0x against PyTorch; cuDNN flagged
        ];
        let s = summarize("t", &groups);
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!((s.shapes, s.compared, s.at_or_above_1, s.no_kernel, s.flagged), (5, 4, 3, 1, 1));
        assert!((s.geomean.unwrap() - 1.0).abs() < 1e-12, "{:?}", s.geomean);
        assert_eq!(s.worst, Some(("b".to_string(), 0.5)));
        // One kernel per shape, and the heuristic picked it: always the fastest.
        assert_eq!((s.heuristic_within_10pct, s.heuristic_compared), (4, 4));
    }

    #[test]
    fn depthwise_groups_report_bandwidth_of_the_best_kernel_and_baseline() {
        // 2e6 bytes: kernels 2 ms (1.0 GB/s) and 1 ms (2.0 GB/s); cuDNN 4 ms (0.5 GB/s), PyTorch 0.5 ms (4.0 GB/s).
        let mut g = group("dw", &[2.0, 1.0], 4.0, Some(0.5));
        g.set_bytes(Some(2e6));
        assert_eq!(g.bytes, Some(2e6));
        let gbps: Vec<_> = g.kernels.iter().map(|k| k.gbps).collect();
        assert_eq!(gbps, vec![Some(1.0), Some(2.0)]);
        assert_eq!((g.cudnn[0].gbps, g.pytorch.gbps), (Some(0.5), Some(4.0)));
        assert_eq!(g.bandwidth_kernel().unwrap().name, "k1");
        let t = table(std::slice::from_ref(&g), false);
        let line = t.lines().find(|l| l.contains("depthwise bandwidth")).unwrap_or_else(|| panic!("{t}"));
        assert!(line.starts_with("| dw | fp16 depthwise bandwidth (2.00 MB of input + filter + output over the median) | k1 (NHWC): 2.0 GB/s | 1.0000 |"), "{line}");
        assert!(line.contains("| best baseline pytorch (NHWC): 4.0 GB/s |"), "{line}");
        // The figures go to the JSON beside the existing ones.
        let json = serde_json::to_value(&g).unwrap();
        assert_eq!((json["bytes"].as_f64(), json["kernels"][1]["gbps"].as_f64(), json["pytorch"]["gbps"].as_f64()), (Some(2e6), Some(2.0), Some(4.0)));
        assert_eq!(json["kernels"][1]["tflops"], serde_json::to_value(g.kernels[1].tflops).unwrap());
        // A row that was not run has no bandwidth; a kernel only in another layout is named with its caveat.
        let mut h = group("dw2", &[], 4.0, None);
        let mut blocked = m("blocked", Some(0.5), true);
        blocked.user_layout = false;
        h.kernels.push(blocked);
        h.set_bytes(Some(1e6));
        assert_eq!((h.pytorch.gbps, h.kernels[0].gbps), (None, Some(2.0)));
        let t = table(&[h], false);
        assert!(t.contains("| blocked (NHWC, conversion untimed): 2.0 GB/s | 0.5000 |") && t.contains("| best baseline cudnn graph (NHWC): 0.2 GB/s |"), "{t}");
    }

    #[test]
    fn other_groups_have_no_bandwidth_line_or_field() {
        let mut g = group("a", &[1.0], 2.0, Some(1.5));
        g.set_bytes(None);
        assert!(g.kernels.iter().chain(&g.cudnn).chain([&g.pytorch]).all(|m| m.gbps.is_none()));
        assert!(!table(std::slice::from_ref(&g), true).contains("bandwidth"));
        let json = serde_json::to_value(&g).unwrap();
        assert!(json.get("bytes").is_none() && json["kernels"][0].get("gbps").is_none(), "{json}");
    }

    /// `m` of a baseline family (`"pytorch"`, `"cudnn"`), as the bench names them.
    fn of(family: &str, mut r: Measurement) -> Measurement {
        r.family = family.into();
        r.user_layout = false;
        r
    }

    #[test]
    fn an_epilogue_is_judged_against_the_stronger_of_pytorch_eager_and_the_fused_graph() {
        // cuDNN's bare convolution 0.5 ms (faster than anything fused), PyTorch eager 3 ms, ours 2 ms.
        let mut g = group("a ep=bias+relu", &[2.0], 0.5, Some(3.0));
        g.pytorch = of("pytorch", m("pytorch eager fp16", Some(3.0), true));
        g.cudnn[0] = of("cudnn", m("cudnn graph eng1 (heur_b)", Some(0.5), true));
        assert_eq!(g.ratio(), Some(0.25));
        g.epilogue = Some("bias+relu".into());
        // No fused graph row (or none that passed): PyTorch eager alone.
        assert_eq!((g.ratio(), g.best_baseline().map(|b| b.name.as_str())), (Some(1.5), Some("pytorch eager fp16")));
        assert_eq!((g.ratio_vs_pytorch(), g.ratio_vs_cudnn()), (Some(1.5), None));
        g.cudnn_fused = vec![of("cudnn", m("cudnn fused graph eng7 (heur_b)", Some(1.0), false))];
        assert_eq!(g.ratio(), Some(1.5));
        g.cudnn_fused = vec![of("cudnn", m("cudnn fused graph", None, false).not_run("no engine ran this graph"))];
        assert_eq!(g.ratio(), Some(1.5));
        // cuDNN's fused graph at 2.5 ms is stronger than PyTorch eager: the ratio is to it.
        g.cudnn_fused = vec![of("cudnn", m("cudnn fused graph eng7 (heur_b)", Some(2.5), true))];
        assert_eq!((g.ratio(), g.best_baseline().map(|b| b.name.as_str())), (Some(1.25), Some("cudnn fused graph eng7 (heur_b)")));
        assert_eq!((g.ratio_vs_pytorch(), g.ratio_vs_cudnn()), (Some(1.5), Some(1.25)));
        // cuDNN's bare convolution 6x slower than PyTorch would be flagged on a bare convolution; not here.
        g.cudnn[0] = of("cudnn", m("cudnn graph eng1 (heur_b)", Some(18.0), true));
        assert!(g.flags().is_empty());
        // The NCHW figures take the fused graph given NCHW tensors, never the bare one.
        g.nchw_user = Some(m("k0 from NCHW", Some(4.0), true));
        g.nchw_cudnn = vec![of("cudnn", m("cudnn graph", Some(1.0), true))];
        g.nchw_pytorch = Some(of("pytorch", m("pytorch eager fp16_nchw", Some(6.0), true)));
        assert_eq!(g.ratio_nchw_user(), Some(1.5));
        g.nchw_cudnn_fused = vec![of("cudnn", m("cudnn fused graph eng3 (global)", Some(5.0), true))];
        assert_eq!(g.ratio_nchw_user(), Some(1.25));
        // And the TF32 ones the fused TF32 graph.
        g.tf32_cudnn = vec![m("cudnn graph tf32", Some(0.1), true)];
        assert!(g.best_tf32().is_none());
        g.tf32_cudnn_fused = vec![of("cudnn", m("cudnn fused graph eng9 (heur_b)", Some(0.7), true))];
        assert_eq!(g.best_tf32().map(|b| b.name.as_str()), Some("cudnn fused graph eng9 (heur_b)"));
        g.tf32_cudnn_fused.clear();
        g.tf32_cudnn.clear();
        // The summary: against each baseline, and against the stronger per shape.
        let s = &summarize("t", std::slice::from_ref(&g))[0];
        assert_eq!((s.geomean, s.geomean_vs_pytorch, s.geomean_vs_cudnn, s.flagged, s.geomean_nchw_user), (Some(1.25), Some(1.5), Some(1.25), 0, Some(1.25)));
        let line = summary_lines(std::slice::from_ref(s), true);
        assert_eq!(line, "t fp16: geomean 1.50x vs PyTorch eager, 1.25x vs cuDNN's fused graph, 1.25x vs the strongest of the two per shape (1 shapes compared of 1)\n");
        assert!(summary_table(std::slice::from_ref(s)).contains("| t | fp16 | 1 | 1 | 1.25x | 1.50x | 1.25x | 1 |"), "{}", summary_table(std::slice::from_ref(s)));
        // The table: the fused graph in the cuDNN column, the strongest named, the bare convolution last.
        let t = table(std::slice::from_ref(&g), false);
        assert!(t.starts_with(EPILOGUE_HEADER), "{t}");
        assert_eq!(t.lines().nth(1), Some("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"));
        let row = "| a ep=bias+relu | fp16 | k0 (NHWC) | 2.0000 | 0.50 | 2.5000 cudnn fused graph eng7 (heur_b) | 3.0000 | cuDNN fused graph | 1.25x | 18.0000 cudnn graph eng1 (heur_b) (bare conv) | - | ok |";
        assert!(t.contains(row), "{t}");
        assert!(t.contains("| k0 from NCHW | 4.0000 | - | 5.0000 cudnn fused graph eng3 (global) | 6.0000 | cuDNN fused graph | 1.25x (0.62x vs NHWC) | 1.0000 cudnn graph (bare conv) |"), "{t}");
        assert!(t.lines().all(|l| l.is_empty() || l.matches(" | ").count() == 11), "every line has 12 cells: {t}");
        // The JSON records the fused rows and the judgement; a bare group has neither fused rows nor an epilogue.
        g.record_judgement();
        let json = serde_json::to_value(&g).unwrap();
        assert_eq!(json["epilogue"], "bias+relu");
        assert_eq!(json["cudnn_fused"][0]["name"], "cudnn fused graph eng7 (heur_b)");
        assert_eq!(json["judgement"], serde_json::json!({ "strongest": "cudnn fused graph eng7 (heur_b)", "strongest_family": "cudnn", "ratio": 1.25, "ratio_vs_pytorch": 1.5, "ratio_vs_cudnn": 1.25 }));
        let bare = serde_json::to_value(group("b", &[1.0], 1.0, None)).unwrap();
        assert!(bare.get("epilogue").is_none() && bare.get("cudnn_fused").is_none() && bare.get("nchw_cudnn_fused").is_none());
        assert!(table(&[group("b", &[1.0], 1.0, None)], false).starts_with(HEADER));
    }

    #[test]
    fn a_fused_graph_no_engine_took_says_why_and_leaves_pytorch_eager_judged() {
        let mut g = group("a ep=gelu", &[2.0], 0.5, Some(3.0));
        g.pytorch = of("pytorch", m("pytorch eager fp16", Some(3.0), true));
        g.epilogue = Some("gelu".into());
        let why = "cuDNN's fused graph of conv + gelu: no engine ran this graph [conv -> gelu] (40 candidates; first: eng3 (global): NOT_SUPPORTED)";
        g.cudnn_fused = vec![of("cudnn", m("cudnn fused graph", None, false).not_run(why))];
        assert_eq!((g.ratio(), g.ratio_vs_cudnn()), (Some(1.5), None));
        let t = table(std::slice::from_ref(&g), false);
        assert!(t.contains("| not run (reason under the table) | 3.0000 | PyTorch eager | 1.50x |"), "{t}");
        assert!(t.contains(&format!("- a ep=gelu fp16 (NHWC): {why}\n")), "{t}");
        let s = &summarize("t", std::slice::from_ref(&g))[0];
        assert_eq!((s.geomean, s.geomean_vs_pytorch, s.geomean_vs_cudnn), (Some(1.5), Some(1.5), None));
        assert!(summary_lines(std::slice::from_ref(s), true).contains("1.50x vs PyTorch eager, n/a vs cuDNN's fused graph, 1.50x vs the strongest"));
        // A fused graph that ran and failed its check is shown as such, and not judged.
        g.cudnn_fused = vec![of("cudnn", m("cudnn fused graph eng7 (heur_b)", Some(0.1), false))];
        assert!(table(std::slice::from_ref(&g), false).contains("| FAIL | 3.0000 | PyTorch eager | 1.50x |"));
        g.record_judgement();
        assert_eq!(g.judgement.as_ref().and_then(|j| j.strongest_family.as_deref()), Some("pytorch"));
    }

    #[test]
    fn an_nchw_caller_without_a_run_has_no_ratio() {
        let mut g = group("a", &[1.0], 2.0, Some(2.0));
        g.epilogue = Some("residual".into());
        g.nchw_user = Some(m("k0 from NCHW", None, false).not_run("no kernel fuses this epilogue"));
        g.nchw_pytorch = Some(of("pytorch", m("pytorch eager fp16_nchw", Some(3.0), true)));
        assert_eq!((g.ratio_nchw_user(), g.ratio_nchw_user_vs_nhwc()), (None, None));
        let t = table(&[g], false);
        assert!(t.contains("| k0 from NCHW | - | - | - | 3.0000 | PyTorch eager | n/a (n/a vs NHWC) | n/a | - | not run: no kernel fuses this epilogue |"), "{t}");
    }

    #[test]
    fn bare_summaries_name_pytorch_and_cudnn_in_process() {
        // cuDNN 2 ms, PyTorch 4 ms, ours 1 ms: 2x against the strongest (cuDNN), 4x against PyTorch.
        let s = &summarize("t", &[group("a", &[1.0], 2.0, Some(4.0))])[0];
        assert_eq!((s.geomean, s.geomean_vs_pytorch, s.geomean_vs_cudnn), (Some(2.0), Some(4.0), Some(2.0)));
        assert_eq!(summary_lines(std::slice::from_ref(s), false), "t fp16: geomean 4.00x vs PyTorch, 2.00x vs cuDNN in-process, 2.00x vs the strongest of the two per shape (1 shapes compared of 1)\n");
    }

    #[test]
    fn table_shows_flags_and_missing_kernels() {
        let t = table(&[group("a", &[1.0], 1.3, Some(1.0)), group("d", &[], 1.0, None)], false);
        assert!(t.contains("FLAG"), "{t}");
        assert!(t.contains("| d | fp16 | none"), "{t}");
        // PyTorch missing: its column says so.
        assert!(t.lines().nth(3).unwrap().contains("| not run |"), "{t}");
        assert_eq!(t.lines().count(), 4);
    }
}
