//! Timing on the device: warm-up first, then CUDA events, median of many.
//!
//! Two methods ([`TimingMethod`]):
//! - **graph** (the default): the runs are captured into a CUDA graph of `batch` runs, and each
//!   timed replay is preceded by one untimed replay, so the GPU is already busy when the timed
//!   replay's start event fires and the host's enqueue time is hidden. The figure is the replay's
//!   time over `batch`: device time per run, launch gaps inside a graph included, host work
//!   excluded. This is the figure for layers of a few microseconds, where the host's enqueue
//!   (ours: a kernel launch; cuDNN's: `cudnnBackendExecute`) is as long as the kernel itself.
//! - **events**: each run between its own pair of events on an idle stream, so the host's enqueue
//!   of that run lies inside the interval. What a caller gets who launches one convolution and
//!   waits for it.
//!
//! A run that cannot be captured (an API call not allowed in stream capture) is timed by events,
//! and [`Timing::method`] says so.

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::CudaGraph;

use crate::gpu::cuda_err;
use crate::{Error, Gpu, Result};

/// How [`time_runs`] times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimingMethod {
    /// Replays of a captured CUDA graph behind a lead replay: device time per run.
    #[default]
    Graph,
    /// Each run between its own events on an idle stream: host enqueue included.
    Events,
}

/// Run times of one kernel, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Timed samples (graph replays, or single runs).
    pub runs: usize,
    /// How the samples were taken (graph unless capture failed, or events were asked for).
    pub method: TimingMethod,
    /// Runs per sample: the graph's length (1 for events).
    pub batch: usize,
}

/// How many runs to make, and how to time them.
#[derive(Clone, Copy, Debug)]
pub struct TimingConfig {
    pub warmup: usize,
    pub runs: usize,
    pub method: TimingMethod,
}

impl TimingMethod {
    pub fn name(self) -> &'static str {
        match self {
            TimingMethod::Graph => "graph",
            TimingMethod::Events => "events",
        }
    }

    /// What one sample of this method is, for tables and the CLI.
    pub fn describe(self) -> &'static str {
        match self {
            TimingMethod::Graph => "CUDA graph replays (per run: device time, host enqueue hidden)",
            TimingMethod::Events => "event-timed runs (host enqueue included)",
        }
    }
}

impl std::str::FromStr for TimingMethod {
    type Err = Error;
    /// `graph` or `events`, any case.
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "graph" => Ok(TimingMethod::Graph),
            "events" => Ok(TimingMethod::Events),
            _ => Err(Error::InvalidArgument(format!("unknown timing method `{s}`; expected graph or events"))),
        }
    }
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig { warmup: 5, runs: 50, method: TimingMethod::Graph }
    }
}

impl TimingConfig {
    /// `warmup` untimed runs, then `runs` samples by the default method (graph).
    pub fn new(warmup: usize, runs: usize) -> Self {
        TimingConfig { warmup, runs, method: TimingMethod::default() }
    }
}

/// Whether a capture failure was reported already (once per process is enough to say why).
static CAPTURE_FAILURE_TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Device time a graph replay should at least take, so that the events' resolution (~0.5 us)
/// and the replay's own start are small beside it.
pub const GRAPH_TARGET_MS: f64 = 0.2;
/// At least this many runs in a graph: the callers rotate over up to 8 input sets, and a graph
/// replays the same sequence, so every set is in it.
pub const GRAPH_MIN_BATCH: usize = 8;
pub const GRAPH_MAX_BATCH: usize = 256;

/// Runs per graph for a run whose single, event-timed run took `probe_ms` (an upper bound on
/// its device time): enough for [`GRAPH_TARGET_MS`], within [`GRAPH_MIN_BATCH`]..=[`GRAPH_MAX_BATCH`].
///
/// ```
/// use convrs::timing::graph_batch;
/// assert_eq!(graph_batch(0.01), 20);   // 10 us runs: 20 make 0.2 ms
/// assert_eq!(graph_batch(1.0), 8);     // long runs: the rotation's sets, no fewer
/// assert_eq!(graph_batch(1e-6), 256);
/// assert_eq!(graph_batch(f64::NAN), 8);
/// ```
pub fn graph_batch(probe_ms: f64) -> usize {
    let want = (GRAPH_TARGET_MS / probe_ms).ceil();
    // NaN or a negative probe says nothing: the fewest runs. (`as` saturates an infinite want.)
    if want.is_nan() || want <= 0.0 { GRAPH_MIN_BATCH } else { (want.min(GRAPH_MAX_BATCH as f64) as usize).max(GRAPH_MIN_BATCH) }
}

/// Times `run(i)` after `cfg.warmup` untimed runs, by `cfg.method` (see the module docs). `run`
/// only enqueues work on the GPU's stream; `i` counts the runs, and a caller may rotate input
/// buffers with it (or keep its own rotation) so the runs do not just re-read the L2 cache.
pub fn time_runs(gpu: &Gpu, cfg: TimingConfig, mut run: impl FnMut(usize) -> Result<()>) -> Result<Timing> {
    for i in 0..cfg.warmup {
        run(i)?;
    }
    gpu.synchronize()?;
    match cfg.method {
        TimingMethod::Events => time_events(gpu, cfg.runs, &mut run),
        TimingMethod::Graph => {
            // One eager run first: it sizes the graph, and anything a first run sets up
            // (a workspace, a tensor map) is done before the capture, where it is not allowed.
            let batch = graph_batch(time_events(gpu, 1, &mut run)?.median_ms);
            match capture(gpu, batch, &mut run) {
                Ok(graph) => time_graph(gpu, cfg.runs, &graph, batch),
                Err(why) => {
                    if !CAPTURE_FAILURE_TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        eprintln!("convrs: WARNING: a run could not be captured into a CUDA graph ({why}); such runs are timed by events (Timing::method says which)");
                    }
                    time_events(gpu, cfg.runs, &mut run)
                }
            }
        }
    }
}

/// Each run between its own pair of events.
fn time_events(gpu: &Gpu, runs: usize, run: &mut impl FnMut(usize) -> Result<()>) -> Result<Timing> {
    let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let ctx = gpu.context();
    let mut events = Vec::with_capacity(runs);
    for i in 0..runs.max(1) {
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
    Ok(summarize(&mut ms, TimingMethod::Events, 1))
}

/// `batch` runs captured from the GPU's stream into an instantiated graph, uploaded and
/// launched once (so a broken capture fails here); `graph.launch()` replays it on the stream.
/// The capture is ended whatever happens, so the stream is usable again after an error. What
/// the runs touch (operands, outputs, a plan's workspace) must outlive every replay.
pub fn capture(gpu: &Gpu, batch: usize, run: &mut impl FnMut(usize) -> Result<()>) -> Result<CudaGraph> {
    let stream = gpu.stream();
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(cuda_err("begin graph capture"))?;
    let enqueued = (0..batch).try_for_each(|i| run(i));
    let ended = stream.end_capture(CUgraphInstantiate_flags(0)).map_err(cuda_err("end graph capture"));
    enqueued?;
    let graph = ended?.ok_or_else(|| Error::Cuda("graph capture recorded nothing".into()))?;
    if std::env::var_os("CONVRS_GRAPH_NODES").is_some() {
        eprintln!("convrs: CONVRS_GRAPH_NODES: a graph of {batch} runs holds {}", graph_nodes(&graph));
    }
    graph.upload().map_err(cuda_err("graph upload"))?;
    graph.launch().map_err(cuda_err("graph launch"))?;
    gpu.synchronize()?;
    Ok(graph)
}

/// A dev aid (`CONVRS_GRAPH_NODES=1`, printed for every capture): the nodes of `graph` by kind,
/// kernels by name, e.g. `20 x kernel wgmma_ws_tma_persistent_128x128k64`. It shows what a
/// library's call adds around its kernel (a memset, a second kernel) where its time differs from
/// the kernel's own. Best effort: a driver call that fails leaves its node as `?`.
fn graph_nodes(graph: &CudaGraph) -> String {
    use cudarc::driver::sys;
    let g = graph.cu_graph();
    let mut n = 0usize;
    // SAFETY: `g` is the live graph `graph` owns; a null array asks for the count only.
    if unsafe { sys::cuGraphGetNodes(g, std::ptr::null_mut(), &mut n) } != sys::CUresult::CUDA_SUCCESS {
        return "? nodes".into();
    }
    let mut nodes = vec![std::ptr::null_mut(); n];
    // SAFETY: `nodes` has room for the `n` nodes the driver reported.
    unsafe { sys::cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut n) };
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for &node in &nodes[..n.min(nodes.len())] {
        let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: a node of the live graph; `kind` is written by the driver.
        let ok = unsafe { sys::cuGraphNodeGetType(node, &mut kind) } == sys::CUresult::CUDA_SUCCESS;
        let name = match kind {
            _ if !ok => "?".to_string(),
            sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL => {
                // SAFETY: an all-zero CUDA_KERNEL_NODE_PARAMS is a valid value (null handles).
                let mut params: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
                let mut name: *const std::ffi::c_char = std::ptr::null();
                // SAFETY: a kernel node of the live graph; the driver fills `params`, and then
                // `name` with a string it owns for the function's lifetime.
                let named = unsafe { sys::cuGraphKernelNodeGetParams_v2(node, &mut params) == sys::CUresult::CUDA_SUCCESS && !params.func.is_null() && sys::cuFuncGetName(&mut name, params.func) == sys::CUresult::CUDA_SUCCESS };
                // SAFETY: a NUL-terminated string from the driver, read at once.
                let func = if named && !name.is_null() { unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned() } else { "?".into() };
                format!("kernel {func}")
            }
            other => format!("{other:?}").trim_start_matches("CU_GRAPH_NODE_TYPE_").to_lowercase(),
        };
        *kinds.entry(name).or_default() += 1;
    }
    kinds.iter().map(|(k, c)| format!("{c} x {k}")).collect::<Vec<_>>().join(", ")
}

/// `samples` replays of `graph`, each between its own events and each after the replay before
/// it (plus one lead replay), so the stream never waits for the host.
fn time_graph(gpu: &Gpu, samples: usize, graph: &CudaGraph, batch: usize) -> Result<Timing> {
    let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let ctx = gpu.context();
    let events = (0..samples.max(1))
        .map(|_| Ok((ctx.new_event(flags).map_err(cuda_err("event"))?, ctx.new_event(flags).map_err(cuda_err("event"))?)))
        .collect::<Result<Vec<_>>>()?;
    graph.launch().map_err(cuda_err("graph launch"))?;
    for (start, end) in &events {
        start.record(gpu.stream()).map_err(cuda_err("event record"))?;
        graph.launch().map_err(cuda_err("graph launch"))?;
        end.record(gpu.stream()).map_err(cuda_err("event record"))?;
    }
    gpu.synchronize()?;
    let mut ms = events
        .iter()
        .map(|(s, e)| s.elapsed_ms(e).map(|ms| f64::from(ms) / batch as f64).map_err(cuda_err("event timing")))
        .collect::<Result<Vec<f64>>>()?;
    Ok(summarize(&mut ms, TimingMethod::Graph, batch))
}

/// Median, min and max of `ms` (sorted in place), per run.
pub fn summarize(ms: &mut [f64], method: TimingMethod, batch: usize) -> Timing {
    ms.sort_by(f64::total_cmp);
    let n = ms.len();
    let median_ms = if n == 0 { f64::NAN } else if n % 2 == 1 { ms[n / 2] } else { (ms[n / 2 - 1] + ms[n / 2]) / 2.0 };
    Timing { median_ms, min_ms: ms.first().copied().unwrap_or(f64::NAN), max_ms: ms.last().copied().unwrap_or(f64::NAN), runs: n, method, batch }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let t = summarize(&mut [3.0, 1.0, 2.0], TimingMethod::Events, 1);
        assert_eq!((t.median_ms, t.min_ms, t.max_ms, t.runs), (2.0, 1.0, 3.0, 3));
        let t = summarize(&mut [4.0, 1.0, 3.0, 2.0], TimingMethod::Graph, 20);
        assert_eq!((t.median_ms, t.batch, t.method), (2.5, 20, TimingMethod::Graph));
    }

    #[test]
    fn graph_batches_cover_the_target_time_and_every_input_set() {
        for probe_ms in [1e-4, 0.003, 0.0076, 0.02, 0.05, 0.3, 2.0] {
            let b = graph_batch(probe_ms);
            assert!((GRAPH_MIN_BATCH..=GRAPH_MAX_BATCH).contains(&b), "{probe_ms}: {b}");
            // Either the replay reaches the target, or the batch is at its cap.
            assert!(b as f64 * probe_ms >= GRAPH_TARGET_MS || b == GRAPH_MAX_BATCH, "{probe_ms}: {b}");
        }
        assert_eq!(graph_batch(0.0), GRAPH_MAX_BATCH);
        assert_eq!(graph_batch(-1.0), GRAPH_MIN_BATCH);
    }
}
