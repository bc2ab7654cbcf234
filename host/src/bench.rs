//! `convrs bench`: each algorithm next to cuDNN on the same shapes, in the same process.
//!
//! Per shape: several input sets of fresh random data (rotated between timed runs, so the runs
//! do not just re-read L2), one f64 CPU reference, cuDNN's fastest algorithm, then each of ours:
//! a checked run into a NaN-poisoned output, then warm-up and event-timed runs, median kept.

use cudarc::driver::CudaSlice;

use crate::cudnn::CudnnConv;
use crate::timing::{time_runs, Timing, TimingConfig};
use crate::{compare, conv2d_cpu, launch, Algorithm, Comparison, Conv2d, Gpu, Layout, Result, Tensor};

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

/// The shapes `convrs bench` times when none are given: the targets of the open issues.
pub fn default_shapes() -> Vec<Conv2d> {
    vec![Conv2d::new(1, 6, 768, 512, 6, 6, 6), Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1)]
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
/// two, at most eight, and within a quarter of the free device memory.
fn rotation_sets(gpu: &Gpu, p: &Conv2d) -> usize {
    let set_bytes = 4 * (p.input_len() + p.filter_len() + p.output_len()) as u64;
    let want = (2 * gpu.info().l2_cache_bytes as u64).div_ceil(set_bytes.max(1)) as usize;
    let fit = (gpu.info().free_memory_bytes / 4 / set_bytes.max(1)) as usize;
    want.clamp(2, 8).min(fit.max(1))
}

struct Set {
    x: CudaSlice<f32>,
    w: CudaSlice<f32>,
    y: CudaSlice<f32>,
}

/// Benchmarks `algos` and cuDNN on `problem`; `progress` hears what is happening.
pub fn bench_shape(gpu: &Gpu, problem: &Conv2d, algos: &[Algorithm], cfg: TimingConfig, seed: u64, progress: &mut dyn FnMut(&str)) -> Result<Vec<BenchRow>> {
    problem.validate()?;
    let label = shape_label(problem);
    let nsets = rotation_sets(gpu, problem);
    problem.check_device_memory(4 * nsets, 4 * nsets, gpu.info().free_memory_bytes)?;
    progress(&format!("{label}: {nsets} random input sets"));
    let mut host_sets = Vec::with_capacity(nsets);
    let mut sets = Vec::with_capacity(nsets);
    for i in 0..nsets as u64 {
        let x = Tensor::random(problem.input_shape(), Layout::Nchw, seed.wrapping_add(2 * i))?;
        let w = Tensor::random(problem.filter_shape(), Layout::Nchw, seed.wrapping_add(2 * i + 1))?;
        sets.push(Set { x: gpu.upload(x.data())?, w: gpu.upload(w.data())?, y: gpu.alloc_zeros(problem.output_len())? });
        if i == 0 {
            host_sets.push((x, w));
        }
    }
    progress(&format!("{label}: f64 CPU reference ({:.1} GFLOP)", problem.flops() / 1e9));
    let (x0, w0) = &host_sets[0];
    let reference = conv2d_cpu(problem, x0, w0)?;

    let mut rows = Vec::new();
    let flops = problem.flops();
    let base = |algorithm: &str| BenchRow {
        shape: label.clone(),
        algorithm: algorithm.to_string(),
        layout: "NCHW".into(),
        dtype: "fp32".into(),
        flops,
        timing: None,
        tflops: None,
        cudnn_ms: None,
        cudnn_algo: None,
        speedup_vs_cudnn: None,
        check: None,
        passed: false,
        note: None,
    };

    // cuDNN first: its time goes into every row of this shape.
    progress(&format!("{label}: cuDNN (trying every forward algorithm)"));
    let mut cudnn_row = base("cudnn");
    let mut cudnn_ms = None;
    let mut cudnn_algo = None;
    let s0 = &mut sets[0];
    match CudnnConv::fp32_nchw(gpu, problem, &s0.x, &s0.w, &mut s0.y) {
        Err(e) => cudnn_row.note = Some(e.to_string()),
        Ok(mut cudnn) => {
            let check = checked_run(gpu, &mut sets[0], &reference, |s| cudnn.run(&s.x, &s.w, &mut s.y))?;
            let t = time_runs(gpu, cfg, |i| {
                let s = &mut sets[i % nsets];
                cudnn.run(&s.x, &s.w, &mut s.y)
            })?;
            cudnn_ms = Some(t.median_ms);
            cudnn_algo = Some(cudnn.algo_name());
            cudnn_row.timing = Some(t);
            cudnn_row.tflops = Some(flops / (t.median_ms * 1e-3) / 1e12);
            cudnn_row.cudnn_ms = cudnn_ms;
            cudnn_row.cudnn_algo = cudnn_algo.clone();
            cudnn_row.speedup_vs_cudnn = Some(1.0);
            // cuDNN may use FFT/Winograd, whose rounding differs from a direct sum: reported, not judged.
            cudnn_row.passed = check.non_finite == 0;
            cudnn_row.check = Some(check);
        }
    }
    rows.push(cudnn_row);

    for &algo in algos {
        progress(&format!("{label}: {algo}"));
        let mut row = base(algo.name());
        row.cudnn_ms = cudnn_ms;
        row.cudnn_algo = cudnn_algo.clone();
        match algo.plan(problem, &gpu.limits()) {
            Err(e) => row.note = Some(e.to_string()),
            Ok(plan) => {
                let check = checked_run(gpu, &mut sets[0], &reference, |s| launch(gpu, &plan, problem, &s.x, &s.w, &mut s.y))?;
                row.passed = check.passes(FP32_REL_L2_TOLERANCE);
                row.check = Some(check);
                let t = time_runs(gpu, cfg, |i| {
                    let s = &mut sets[i % nsets];
                    launch(gpu, &plan, problem, &s.x, &s.w, &mut s.y)
                })?;
                row.timing = Some(t);
                row.tflops = Some(flops / (t.median_ms * 1e-3) / 1e12);
                row.speedup_vs_cudnn = cudnn_ms.map(|c| c / t.median_ms);
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Poisons the set's output, runs once, and compares with the reference.
fn checked_run(gpu: &Gpu, set: &mut Set, reference: &Tensor<f64>, run: impl FnOnce(&mut Set) -> Result<()>) -> Result<Comparison> {
    gpu.poison(&mut set.y)?;
    run(set)?;
    gpu.synchronize()?;
    let got = gpu.download(&set.y)?;
    Ok(compare(&got, reference.data()))
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
        "| shape | kernel | layout | median ms | TFLOP/s | cuDNN ms (algo) | speed vs cuDNN | rel L2 err | check |\n\
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
        out += &format!("| {} | {} | {} | {ms} | {tf} | {cu} | {ratio} | {err} | {verdict} |\n", r.shape, r.algorithm, r.layout);
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
