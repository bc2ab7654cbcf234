//! `convrs bench`: each algorithm next to cuDNN on the same shapes, in the same process.
//!
//! Per shape and input type (fp32, fp16): several input sets of fresh random data (rotated
//! between timed runs, so the runs do not just re-read L2), one f64 CPU reference on the same
//! (rounded) inputs, cuDNN's fastest algorithm, then each of ours in its own layout: a checked
//! run into a NaN-poisoned output, then warm-up and event-timed runs, median kept.

use cudarc::driver::CudaSlice;

use crate::cudnn::CudnnConv;
use crate::timing::{time_runs, Timing, TimingConfig};
use crate::{compare, conv2d_cpu, launch, Algorithm, Comparison, Conv2d, DType, Element, Gpu, Layout, Result, Tensor};

/// fp32 results with sums in fp32 land far under this relative L2 error against the f64
/// reference (rounding grows like sqrt(C*R*S) * 2^-24); a wrong index lands far above it.
pub const FP32_REL_L2_TOLERANCE: f64 = 1e-5;

/// fp16 inputs with fp32 accumulation, against the f64 sum of the same fp16-rounded inputs:
/// each product of two fp16 values is exact in fp32, so only the fp32 accumulation rounds (the
/// tensor cores' adder truncates a few more bits than IEEE fp32, still far under 1e-4 for
/// C*R*S in the thousands). Accumulating in fp16 instead would give about 2^-11 = 5e-4, so
/// this tolerance also proves that the accumulators are fp32.
pub const FP16_REL_L2_TOLERANCE: f64 = 1e-4;

/// The relative L2 tolerance for a kernel reading `dtype` inputs.
pub fn tolerance(dtype: crate::DType) -> f64 {
    match dtype {
        crate::DType::F32 => FP32_REL_L2_TOLERANCE,
        crate::DType::F16 => FP16_REL_L2_TOLERANCE,
    }
}

/// The shapes `convrs bench` times when none are given: the issues' target and report shapes.
pub fn default_shapes() -> Vec<Conv2d> {
    vec![
        Conv2d::new(1, 6, 768, 512, 6, 6, 6),
        Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1),
        Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1),
        Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1),
    ]
}

/// One line of the results table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    pub shape: String,
    pub algorithm: String,
    pub layout: String,
    pub dtype: String,
    pub flops: f64,
    pub timing: Option<Timing>,
    pub tflops: Option<f64>,
    pub cudnn_ms: Option<f64>,
    pub cudnn_algo: Option<String>,
    /// cuDNN's median time over ours: above 1 means faster than cuDNN.
    pub speedup_vs_cudnn: Option<f64>,
    pub check: Option<Comparison>,
    pub passed: bool,
    /// Why a row has no timing (unsupported shape, error), if so.
    pub note: Option<String>,
}

/// Everything one bench run measured, for `--json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchReport {
    pub gpu: String,
    pub date: String,
    pub cudnn_version: Option<String>,
    pub timing_runs: usize,
    pub rows: Vec<BenchRow>,
}

/// Compact shape label: `N,C,H,W->K,RxS,pad,stride[,dil]`.
pub fn shape_label(p: &Conv2d) -> String {
    let mut s = format!("{},{},{},{}->{},{}x{}", p.n, p.c, p.h, p.w, p.k, p.r, p.s);
    s += &format!(" p{}", if p.pad.0 == p.pad.1 { p.pad.0.to_string() } else { format!("{:?}", p.pad) });
    if p.stride != (1, 1) {
        s += &format!(" s{}", if p.stride.0 == p.stride.1 { p.stride.0.to_string() } else { format!("{:?}", p.stride) });
    }
    if p.dilation != (1, 1) {
        s += &format!(" d{}", if p.dilation.0 == p.dilation.1 { p.dilation.0.to_string() } else { format!("{:?}", p.dilation) });
    }
    s
}

/// Input sets to rotate through: enough that they together exceed twice the L2 cache, at least
/// two, at most eight, and within a quarter of the free device memory (sized for fp32).
fn rotation_sets(gpu: &Gpu, p: &Conv2d) -> usize {
    let set_bytes = 4 * (p.input_len() + p.filter_len() + p.output_len()) as u64;
    let want = (2 * gpu.info().l2_cache_bytes as u64).div_ceil(set_bytes.max(1)) as usize;
    let fit = (gpu.info().free_memory_bytes / 4 / set_bytes.max(1)) as usize;
    want.clamp(2, 8).min(fit.max(1))
}

/// One input set on the device, in one (input, filter) layout pair.
struct Operands<T> {
    x: CudaSlice<T>,
    w: CudaSlice<T>,
}

/// Everything one shape's measurements share: the problem, its host input sets, the device
/// output buffers, and the rows so far.
struct ShapeBench<'a> {
    gpu: &'a Gpu,
    problem: &'a Conv2d,
    label: String,
    cfg: TimingConfig,
    outputs: Vec<CudaSlice<f32>>,
    rows: Vec<BenchRow>,
}

/// Benchmarks `algos` and cuDNN on `problem`; `progress` hears what is happening.
///
/// fp32 kernels are compared with cuDNN fp32 NCHW (TF32 off), fp16 kernels with cuDNN fp16 NHWC;
/// each kernel reads the inputs in its own layout ([`Algorithm::layouts`]), converted on the host
/// before timing.
pub fn bench_shape(gpu: &Gpu, problem: &Conv2d, algos: &[Algorithm], cfg: TimingConfig, seed: u64, progress: &mut dyn FnMut(&str)) -> Result<Vec<BenchRow>> {
    problem.validate()?;
    let label = shape_label(problem);
    let nsets = rotation_sets(gpu, problem);
    problem.check_device_memory(4 * nsets, 4 * nsets, gpu.info().free_memory_bytes)?;
    progress(&format!("{label}: {nsets} random input sets"));
    let host_sets = (0..nsets as u64)
        .map(|i| {
            let x = Tensor::random(problem.input_shape(), Layout::Nchw, seed.wrapping_add(2 * i))?;
            let w = Tensor::random(problem.filter_shape(), Layout::Nchw, seed.wrapping_add(2 * i + 1))?;
            Ok((x, w))
        })
        .collect::<Result<Vec<_>>>()?;
    let outputs = (0..nsets).map(|_| gpu.alloc_zeros::<f32>(problem.output_len())).collect::<Result<Vec<_>>>()?;
    let mut bench = ShapeBench { gpu, problem, label, cfg, outputs, rows: Vec::new() };
    let of = |d: DType| algos.iter().copied().filter(|a| a.dtype() == d).collect::<Vec<_>>();
    let (fp32, fp16) = (of(DType::F32), of(DType::F16));
    if !fp32.is_empty() {
        bench.dtype_group::<f32>(&host_sets, &fp32, progress)?;
    }
    if !fp16.is_empty() {
        let rounded: Vec<_> = host_sets.iter().map(|(x, w)| (x.map(half::f16::from_f32), w.map(half::f16::from_f32))).collect();
        drop(host_sets);
        bench.dtype_group::<half::f16>(&rounded, &fp16, progress)?;
    }
    Ok(bench.rows)
}

impl ShapeBench<'_> {
    fn row(&self, algorithm: &str, layout: Layout, dtype: DType) -> BenchRow {
        BenchRow {
            shape: self.label.clone(),
            algorithm: algorithm.to_string(),
            layout: layout.name().into(),
            dtype: dtype.name().into(),
            flops: self.problem.flops(),
            timing: None,
            tflops: None,
            cudnn_ms: None,
            cudnn_algo: None,
            speedup_vs_cudnn: None,
            check: None,
            passed: false,
            note: None,
        }
    }

    /// The host sets in `(input, filter)` layouts, on the device.
    fn upload<T: Element>(&self, sets: &[(Tensor<T>, Tensor<T>)], layouts: (Layout, Layout)) -> Result<Vec<Operands<T>>> {
        sets.iter()
            .map(|(x, w)| Ok(Operands { x: self.gpu.upload(x.to_layout(layouts.0)?.data())?, w: self.gpu.upload(w.to_layout(layouts.1)?.data())? }))
            .collect()
    }

    /// The f64 reference on set 0, cuDNN's baseline for `T`, then each of `algos`.
    fn dtype_group<T: Element + CudnnBaseline>(&mut self, sets: &[(Tensor<T>, Tensor<T>)], algos: &[Algorithm], progress: &mut dyn FnMut(&str)) -> Result<()> {
        let (label, p, gpu, cfg) = (self.label.clone(), self.problem, self.gpu, self.cfg);
        progress(&format!("{label}: f64 CPU reference on the {} inputs ({:.1} GFLOP)", T::DTYPE, p.flops() / 1e9));
        let reference = conv2d_cpu(p, &sets[0].0, &sets[0].1)?;
        let flops = p.flops();

        // cuDNN first: its time goes into every row of this dtype.
        progress(&format!("{label}: cuDNN {} {} (trying every forward algorithm)", T::DTYPE, T::CUDNN_LAYOUT));
        let mut cudnn_row = self.row("cudnn", T::CUDNN_LAYOUT, T::DTYPE);
        let (mut cudnn_ms, mut cudnn_algo) = (None, None);
        let operands = self.upload(sets, (T::CUDNN_LAYOUT, T::CUDNN_LAYOUT))?;
        let mut ys = (0..operands.len()).map(|_| gpu.alloc_zeros::<T>(p.output_len())).collect::<Result<Vec<_>>>()?;
        match T::plan_cudnn(gpu, p, &operands[0].x, &operands[0].w, &mut ys[0]) {
            Err(e) => cudnn_row.note = Some(e.to_string()),
            Ok(mut cudnn) => {
                gpu.poison(&mut ys[0])?;
                cudnn.run(&operands[0].x, &operands[0].w, &mut ys[0])?;
                let got = gpu.download(&ys[0])?;
                let check = compare(&Tensor::new(p.output_shape(), T::CUDNN_LAYOUT, got)?.to_layout(Layout::Nchw)?.into_data(), reference.data());
                let n = operands.len();
                let t = time_runs(gpu, cfg, |i| cudnn.run(&operands[i % n].x, &operands[i % n].w, &mut ys[i % n]))?;
                cudnn_ms = Some(t.median_ms);
                cudnn_algo = Some(cudnn.algo_name());
                cudnn_row.timing = Some(t);
                cudnn_row.tflops = Some(flops / (t.median_ms * 1e-3) / 1e12);
                cudnn_row.cudnn_ms = cudnn_ms;
                cudnn_row.cudnn_algo = cudnn_algo.clone();
                cudnn_row.speedup_vs_cudnn = Some(1.0);
                // cuDNN may use FFT/Winograd, or round its output to fp16: reported, not judged.
                cudnn_row.passed = check.non_finite == 0;
                cudnn_row.check = Some(check);
            }
        }
        drop((operands, ys));
        self.rows.push(cudnn_row);

        let mut uploaded: Option<((Layout, Layout), Vec<Operands<T>>)> = None;
        for &algo in algos {
            progress(&format!("{label}: {algo}"));
            let (in_layout, filter_layout, out_layout) = algo.layouts();
            let mut row = self.row(algo.name(), in_layout, T::DTYPE);
            row.cudnn_ms = cudnn_ms;
            row.cudnn_algo = cudnn_algo.clone();
            let plan = match algo.plan(p, &gpu.limits()) {
                Err(e) => {
                    row.note = Some(e.to_string());
                    self.rows.push(row);
                    continue;
                }
                Ok(plan) => plan,
            };
            // Kernels reading the same layouts share one upload.
            if uploaded.as_ref().is_none_or(|(l, _)| *l != (in_layout, filter_layout)) {
                drop(uploaded.take()); // frees the previous sets first
                uploaded = Some(((in_layout, filter_layout), self.upload(sets, (in_layout, filter_layout))?));
            }
            let operands = &uploaded.as_ref().expect("uploaded above").1;
            let y = &mut self.outputs[0];
            gpu.poison(y)?;
            launch(gpu, &plan, p, &operands[0].x, &operands[0].w, y)?;
            let got = Tensor::new(p.output_shape(), out_layout, gpu.download(y)?)?.to_layout(Layout::Nchw)?;
            let check = compare(got.data(), reference.data());
            row.passed = check.passes(tolerance(T::DTYPE));
            row.check = Some(check);
            let n = operands.len();
            let outputs = &mut self.outputs;
            let t = time_runs(gpu, cfg, |i| launch(gpu, &plan, p, &operands[i % n].x, &operands[i % n].w, &mut outputs[i % n]))?;
            row.timing = Some(t);
            row.tflops = Some(flops / (t.median_ms * 1e-3) / 1e12);
            row.speedup_vs_cudnn = cudnn_ms.map(|c| c / t.median_ms);
            self.rows.push(row);
        }
        Ok(())
    }
}

/// The cuDNN configuration each input type is measured against.
trait CudnnBaseline: Element + cudarc::cudnn::CudnnDataType {
    /// The layout of cuDNN's input, filter and output for this type.
    const CUDNN_LAYOUT: Layout;
    fn plan_cudnn(gpu: &Gpu, p: &Conv2d, x: &CudaSlice<Self>, w: &CudaSlice<Self>, y: &mut CudaSlice<Self>) -> Result<CudnnConv<Self>>;
}

impl CudnnBaseline for f32 {
    const CUDNN_LAYOUT: Layout = Layout::Nchw;
    fn plan_cudnn(gpu: &Gpu, p: &Conv2d, x: &CudaSlice<f32>, w: &CudaSlice<f32>, y: &mut CudaSlice<f32>) -> Result<CudnnConv<f32>> {
        CudnnConv::fp32_nchw(gpu, p, x, w, y)
    }
}

impl CudnnBaseline for half::f16 {
    const CUDNN_LAYOUT: Layout = Layout::Nhwc;
    fn plan_cudnn(gpu: &Gpu, p: &Conv2d, x: &CudaSlice<Self>, w: &CudaSlice<Self>, y: &mut CudaSlice<Self>) -> Result<CudnnConv<Self>> {
        CudnnConv::fp16_nhwc(gpu, p, x, w, y)
    }
}

/// Today's date (UTC) as YYYY-MM-DD, for the results table.
pub fn today() -> String {
    let days = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() / 86_400).unwrap_or(0) as i64;
    // Civil-from-days (Howard Hinnant's algorithm): avoids a date dependency for one line of output.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The table `convrs bench` prints (Markdown, so it can go into BENCHMARKS.md as is).
pub fn table(report: &BenchReport) -> String {
    let mut out = String::from(
        "| shape | kernel | layout, type | median ms | TFLOP/s | cuDNN ms (algo) | speed vs cuDNN | rel L2 err | check |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in &report.rows {
        let ms = r.timing.map(|t| format!("{:.4}", t.median_ms)).unwrap_or_else(|| "-".into());
        let tf = r.tflops.map(|t| format!("{t:.2}")).unwrap_or_else(|| "-".into());
        let cu = match (r.cudnn_ms, &r.cudnn_algo) {
            (Some(ms), Some(a)) => format!("{ms:.4} ({a})"),
            _ => "n/a".into(),
        };
        let ratio = r.speedup_vs_cudnn.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "n/a".into());
        let err = r.check.map(|c| format!("{:.1e}", c.rel_l2_err)).unwrap_or_else(|| "-".into());
        let verdict = match (&r.note, r.passed) {
            (Some(n), _) => format!("not run: {n}"),
            (None, true) => "ok".into(),
            (None, false) => "FAIL".into(),
        };
        out += &format!("| {} | {} | {} {} | {ms} | {tf} | {cu} | {ratio} | {err} | {verdict} |\n", r.shape, r.algorithm, r.layout, r.dtype);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_show_only_non_default_stride_and_dilation() {
        assert_eq!(shape_label(&Conv2d::new(1, 6, 768, 512, 6, 6, 6)), "1,6,768,512->6,6x6 p0");
        assert_eq!(shape_label(&Conv2d::new(2, 3, 9, 9, 4, 3, 3).with_pad(2).with_stride(2).with_dilation(2)), "2,3,9,9->4,3x3 p2 s2 d2");
    }

    #[test]
    fn date_has_iso_shape() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
        assert_eq!(&d[4..5], "-");
    }
}
