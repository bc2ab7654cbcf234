//! Timing on the device: CUDA events around each run, warm-up first, median of many.

use crate::gpu::cuda_err;
use crate::{Gpu, Result};

/// Run times of one kernel, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: usize,
}

/// How many runs to make.
#[derive(Clone, Copy, Debug)]
pub struct TimingConfig {
    pub warmup: usize,
    pub runs: usize,
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig { warmup: 5, runs: 50 }
    }
}

/// Times `run(i)` for `i` in `0..cfg.runs`, each between its own pair of events on the GPU's
/// stream, after `cfg.warmup` untimed runs. `run` only enqueues work; `i` lets the caller rotate
/// input buffers so the timed runs do not just re-read the L2 cache.
pub fn time_runs(gpu: &Gpu, cfg: TimingConfig, mut run: impl FnMut(usize) -> Result<()>) -> Result<Timing> {
    for i in 0..cfg.warmup {
        run(i)?;
    }
    gpu.synchronize()?;
    let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let ctx = gpu.context();
    let mut events = Vec::with_capacity(cfg.runs);
    for i in 0..cfg.runs.max(1) {
        let start = ctx.new_event(flags).map_err(cuda_err("event"))?;
        let end = ctx.new_event(flags).map_err(cuda_err("event"))?;
        start.record(gpu.stream()).map_err(cuda_err("event record"))?;
        run(i)?;
        end.record(gpu.stream()).map_err(cuda_err("event record"))?;
        events.push((start, end));
    }
    gpu.synchronize()?;
    let mut ms = events
        .iter()
        .map(|(s, e)| s.elapsed_ms(e).map(f64::from).map_err(cuda_err("event timing")))
        .collect::<Result<Vec<f64>>>()?;
    Ok(summarize(&mut ms))
}

/// Median, min and max of `ms` (sorted in place).
pub fn summarize(ms: &mut [f64]) -> Timing {
    ms.sort_by(f64::total_cmp);
    let n = ms.len();
    let median_ms = if n == 0 { f64::NAN } else if n % 2 == 1 { ms[n / 2] } else { (ms[n / 2 - 1] + ms[n / 2]) / 2.0 };
    Timing { median_ms, min_ms: ms.first().copied().unwrap_or(f64::NAN), max_ms: ms.last().copied().unwrap_or(f64::NAN), runs: n }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let t = summarize(&mut [3.0, 1.0, 2.0]);
        assert_eq!((t.median_ms, t.min_ms, t.max_ms, t.runs), (2.0, 1.0, 3.0, 3));
        let t = summarize(&mut [4.0, 1.0, 3.0, 2.0]);
        assert_eq!(t.median_ms, 2.5);
    }
}
