//! A cuDNN baseline through cuDNN's graph (backend) API, as cudnn-frontend and PyTorch's
//! `cudnn.benchmark = True` reach it.
//!
//! The legacy `cudnnConvolutionForward` path ([`crate::cudnn`]) only reaches the engines behind
//! its 8 algorithm enums; in cuDNN 9 many faster engines are only reachable as engine
//! configurations of an operation graph. Here the forward convolution is one node of such a
//! graph, and the search times engine configurations from three heuristic modes and then every
//! engine by global index, keeping the fastest one that the [`Math`] policy allows.
//!
//! ```text
//!  X, W, Y tensors + convolution -> CONVOLUTION_FORWARD op -> operation graph
//!  graph -> heuristics (instant, B, fallback) + engines 0..global count -> engine configs
//!  engine config -> execution plan (+ workspace) -> variant pack (pointers) -> execute, time
//! ```

use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;
use std::sync::Arc;
use std::time::Instant;

use cudarc::cudnn::sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use crate::timing::{time_runs, TimingConfig, TimingMethod};
use crate::{Conv2d, DType, Element, Error, Gpu, Layout, Result};

use sys::cudnnBackendAttributeName_t as Attr;
use sys::cudnnBackendAttributeType_t as Ty;
use sys::cudnnBackendDescriptorType_t as Kind;
use sys::cudnnBackendNumericalNote_t as Note;

/// Unique ids of the graph's tensors, in variant-pack order: input, filter, output.
const UIDS: [i64; 3] = [1, 2, 3];
/// Byte alignment promised for every tensor (device allocations are 256-byte aligned).
const ALIGNMENT: i64 = 16;
/// Room for numerical notes; cuDNN 9.2 defines 10, later versions may add some.
const MAX_NOTES: usize = 16;
/// A candidate whose single probe run is this many times slower than the best median so far
/// cannot win, so it is not timed further.
const SLOW_FACTOR: f64 = 4.0;
/// The probe is timed alone between events, host enqueue included (tens of microseconds at
/// most), while the best may be graph-timed device time: a probe under this is always timed.
const PROBE_FLOOR_MS: f64 = 0.05;
/// Variant packs kept for distinct pointer triples; the bench rotates a handful of buffers.
const MAX_VARIANT_PACKS: usize = 16;

/// Which numerics an engine may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Math {
    /// Plain fp32 FMA arithmetic: no tensor-core engine (so no TF32) and no engine that
    /// down-converts its inputs.
    Fma,
    /// fp32 data with TF32 tensor cores allowed (PyTorch's default for fp32 convolutions).
    Tf32,
    /// fp16 data with tensor cores allowed.
    TensorCore,
}

/// How much time the engine search may spend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchBudget {
    /// Untimed runs before each candidate's timed runs.
    pub warmup: usize,
    /// Timed runs per candidate; the median decides.
    pub runs: usize,
    /// Candidates attempted at most, failed plans included (those excluded by [`Math`] do not count).
    /// 256: with graph timing, a cap of 64 stopped the search before engines PyTorch's own search
    /// found faster (H100, 2026-11-24: 27 of the 30 deepbench shapes where PyTorch was more than
    /// 5% faster had untried candidates left); `max_seconds` bounds the search's time.
    pub max_candidates: usize,
    /// Wall time after which no new candidate is started, counted from the end of the
    /// gathering of configurations (the first search of a process also loads cuDNN's engine
    /// libraries there, which can take seconds from a cold disk and must not spend the budget).
    pub max_seconds: f64,
    /// Candidates that ask for more workspace are skipped.
    pub max_workspace_bytes: usize,
    /// How candidates are timed: as the bench times its rows, so the fastest by that measure wins.
    pub method: TimingMethod,
}

impl Default for SearchBudget {
    fn default() -> Self {
        SearchBudget { warmup: 1, runs: 3, max_candidates: 256, max_seconds: 3.0, max_workspace_bytes: 4 << 30, method: TimingMethod::Graph }
    }
}

/// One engine configuration the search looked at.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Candidate {
    /// The engine's global index; -1 where a heuristic query itself failed (see `note`).
    pub engine: i64,
    /// Where it came from: `"heur_instant"`, `"heur_b"`, `"fallback"` or `"global"`.
    pub source: &'static str,
    /// Median of its timed runs, if it got that far.
    pub median_ms: Option<f64>,
    /// Why it was skipped or not fully timed.
    pub note: Option<String>,
}

/// A forward convolution planned as a cuDNN operation graph, with the fastest allowed engine.
pub struct GraphConv<T> {
    // Fields drop in order: everything made from the handle goes before it.
    packs: HashMap<[u64; 3], Desc>,
    chosen: Chosen,
    _graph: OpGraph,
    handle: Handle,
    stream: Arc<CudaStream>,
    lens: [usize; 3],
    candidates: Vec<Candidate>,
    _element: PhantomData<T>,
}

impl<T: Element> GraphConv<T> {
    /// Builds the graph for `problem` in `layout` (`Nchw`: NCHW / KCRS / NKPQ, `Nhwc`: NHWC /
    /// KRSC / NPQK, the filter with C/G channels for G groups; anything else is
    /// [`Error::InvalidArgument`]) and picks the fastest engine
    /// that `math` allows by timing candidates on the given buffers within `budget`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: &Gpu,
        problem: &Conv2d,
        layout: Layout,
        math: Math,
        budget: &SearchBudget,
        x: &CudaSlice<T>,
        w: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<Self> {
        if !crate::cudnn::available() {
            return Err(Error::Cudnn("libcudnn was not found on the library path".into()));
        }
        problem.validate()?;
        strides(problem.input_shape(), layout)?;
        let lens = [problem.input_len(), problem.filter_len(), problem.output_len()];
        check_lens(lens, [x.len(), w.len(), y.len()])?;
        let stream = gpu.stream().clone();
        let handle = Handle::new(&stream)?;
        let graph = OpGraph::new(&handle, problem, layout, data_type(T::DTYPE))?;
        let mut candidates = Vec::new();
        let configs = gather_configs(&graph, &mut candidates);
        let start = Instant::now();
        let chosen = {
            let (xp, _gx) = x.device_ptr(&stream);
            let (wp, _gw) = w.device_ptr(&stream);
            let (yp, _gy) = y.device_ptr_mut(&stream);
            let mut search = Search { gpu, handle: &handle, math, budget, start, ptrs: [xp, wp, yp], tried: 0, best: None, candidates };
            for config in configs {
                search.consider(config);
            }
            candidates = search.candidates;
            search.best
        };
        let chosen = chosen.ok_or_else(|| no_engine(&candidates))?;
        Ok(GraphConv { packs: HashMap::new(), chosen, _graph: graph, handle, stream, lens, candidates, _element: PhantomData })
    }

    /// Enqueues one forward convolution on these buffers (same sizes as at planning).
    pub fn run(&mut self, x: &CudaSlice<T>, w: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        check_lens(self.lens, [x.len(), w.len(), y.len()])?;
        let (xp, _gx) = x.device_ptr(&self.stream);
        let (wp, _gw) = w.device_ptr(&self.stream);
        let (yp, _gy) = y.device_ptr_mut(&self.stream);
        let key = [xp, wp, yp];
        if !self.packs.contains_key(&key) {
            if self.packs.len() >= MAX_VARIANT_PACKS {
                self.packs.clear();
            }
            self.packs.insert(key, variant_pack(key, self.chosen.workspace_ptr)?);
        }
        let pack = self.packs.get(&key).ok_or_else(|| Error::Cudnn("variant pack cache".into()))?;
        execute(&self.handle, &self.chosen.plan, pack)
    }

    /// The chosen engine, e.g. `graph eng12 (heur_b)`.
    pub fn engine_name(&self) -> String {
        format!("graph eng{} ({})", self.chosen.engine, self.chosen.source)
    }

    /// Every candidate the search looked at, in order, with its time or why it was skipped.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }
}

fn check_lens(expected: [usize; 3], got: [usize; 3]) -> Result<()> {
    for ((tensor, expected), got) in ["input", "filter", "output"].into_iter().zip(expected).zip(got) {
        if expected != got {
            return Err(Error::BufferSize { tensor, expected, got });
        }
    }
    Ok(())
}

fn no_engine(candidates: &[Candidate]) -> Error {
    // The failures of candidates that were actually tried say most; filtered ones come last.
    let filtered = |c: &&Candidate| c.note.as_deref().is_some_and(|n| n.starts_with("excluded") || n.starts_with("not tried"));
    let reasons: Vec<String> = candidates
        .iter()
        .filter(|c| !filtered(c))
        .chain(candidates.iter().filter(filtered))
        .take(8)
        .map(|c| format!("eng{} ({}): {}", c.engine, c.source, c.note.as_deref().unwrap_or("?")))
        .collect();
    Error::Cudnn(format!("no engine ran this graph ({} candidates; first: {})", candidates.len(), reasons.join("; ")))
}

fn data_type(dtype: DType) -> sys::cudnnDataType_t {
    match dtype {
        DType::F32 => sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
        DType::F16 => sys::cudnnDataType_t::CUDNN_DATA_HALF,
        DType::BF16 => sys::cudnnDataType_t::CUDNN_DATA_BFLOAT16,
    }
}

/// Element strides of a tensor with logical dims `[N, C, H, W]` (or `[K, C, R, S]`) in
/// `layout`, in the same logical order, as the backend tensor descriptor wants them.
fn strides(dims: [usize; 4], layout: Layout) -> Result<[i64; 4]> {
    match (layout, layout.strides(dims)) {
        // Validated problems have fewer than 2^31 elements per tensor, so every stride fits.
        (Layout::Nchw | Layout::Nhwc, Some((_, s))) => Ok(s.map(|v| v as i64)),
        (other, _) => Err(Error::InvalidArgument(format!("the cuDNN graph baseline takes NCHW or NHWC, not {other}"))),
    }
}

/// Why `math` excludes an engine with these numerical notes, or `None` if it allows it.
fn excluded(math: Math, notes: &[u32]) -> Option<&'static str> {
    // Down-converting engines compute in a narrower type than the data (fp32 inputs rounded to
    // fp16, say): PyTorch refuses them in every mode, so the baseline does too.
    if notes.contains(&(Note::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS as u32)) {
        return Some("excluded: DOWN_CONVERT_INPUTS note (PyTorch refuses these too)");
    }
    if math == Math::Fma && notes.contains(&(Note::CUDNN_NUMERICAL_NOTE_TENSOR_CORE as u32)) {
        return Some("excluded by Math::Fma: TENSOR_CORE note");
    }
    None
}

/// Whether the search may start another candidate after `tried` of them and `elapsed_s` seconds.
fn may_try(tried: usize, elapsed_s: f64, budget: &SearchBudget) -> bool {
    tried < budget.max_candidates && elapsed_s < budget.max_seconds
}

/// Whether a candidate whose probe run took `probe_ms` can still beat `best_ms` and so
/// deserves its full timing.
fn worth_timing(probe_ms: f64, best_ms: Option<f64>) -> bool {
    probe_ms < PROBE_FLOOR_MS || best_ms.is_none_or(|best| probe_ms <= SLOW_FACTOR * best)
}

fn status_err(call: String, status: sys::cudnnStatus_t) -> Error {
    Error::Cudnn(format!("{call}: {status:?}"))
}

fn check(status: sys::cudnnStatus_t, call: impl FnOnce() -> String) -> Result<()> {
    if status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS { Ok(()) } else { Err(status_err(call(), status)) }
}

/// A raw cuDNN handle bound to our stream. cudarc's `Cudnn` keeps its handle private, so the
/// backend calls, which need it, get their own.
struct Handle(sys::cudnnHandle_t);

impl Handle {
    fn new(stream: &Arc<CudaStream>) -> Result<Handle> {
        stream.context().bind_to_thread().map_err(|e| Error::Cuda(format!("binding the context: {e}")))?;
        let raw = cudarc::cudnn::result::create_handle().map_err(|e| Error::Cudnn(format!("cudnnCreate: {e}")))?;
        let handle = Handle(raw);
        // SAFETY: `raw` is a live handle and GraphConv keeps the stream alive as long as the handle.
        unsafe { cudarc::cudnn::result::set_stream(handle.0, stream.cu_stream() as sys::cudaStream_t) }
            .map_err(|e| Error::Cudnn(format!("cudnnSetStream: {e}")))?;
        Ok(handle)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle came from cudnnCreate and every descriptor using it is dropped before it.
        let _ = unsafe { cudarc::cudnn::result::destroy_handle(self.0) };
    }
}

/// A value that can be an element of a backend attribute of type `TYPE`.
///
/// # Safety
/// `Self` must have the size and layout of the C type that `TYPE` names, so that cuDNN reads
/// (or writes) exactly the elements it is given room for.
unsafe trait AttrValue: Copy {
    const TYPE: Ty;
}

// SAFETY: `int64_t`.
unsafe impl AttrValue for i64 {
    const TYPE: Ty = Ty::CUDNN_TYPE_INT64;
}
// SAFETY: `float`.
unsafe impl AttrValue for f32 {
    const TYPE: Ty = Ty::CUDNN_TYPE_FLOAT;
}
// SAFETY: `void *` (device pointers in variant packs).
unsafe impl AttrValue for *mut c_void {
    const TYPE: Ty = Ty::CUDNN_TYPE_VOID_PTR;
}
// SAFETY: `cudnnHandle_t`.
unsafe impl AttrValue for sys::cudnnHandle_t {
    const TYPE: Ty = Ty::CUDNN_TYPE_HANDLE;
}
// SAFETY: `cudnnDataType_t`, a C enum (4 bytes, as the repr(u32) binding).
unsafe impl AttrValue for sys::cudnnDataType_t {
    const TYPE: Ty = Ty::CUDNN_TYPE_DATA_TYPE;
}
// SAFETY: `cudnnConvolutionMode_t`, a C enum.
unsafe impl AttrValue for sys::cudnnConvolutionMode_t {
    const TYPE: Ty = Ty::CUDNN_TYPE_CONVOLUTION_MODE;
}
// SAFETY: `cudnnBackendHeurMode_t`, a C enum.
unsafe impl AttrValue for sys::cudnnBackendHeurMode_t {
    const TYPE: Ty = Ty::CUDNN_TYPE_HEUR_MODE;
}

/// An owned backend descriptor, destroyed on drop.
struct Desc {
    raw: sys::cudnnBackendDescriptor_t,
    kind: Kind,
}

impl Desc {
    fn new(kind: Kind) -> Result<Desc> {
        let mut raw = ptr::null_mut();
        // SAFETY: cuDNN writes one descriptor pointer into `raw`.
        let status = unsafe { sys::cudnnBackendCreateDescriptor(kind, &mut raw) };
        check(status, || format!("cudnnBackendCreateDescriptor({kind:?})"))?;
        Ok(Desc { raw, kind })
    }

    fn set<V: AttrValue>(&self, name: Attr, values: &[V]) -> Result<()> {
        // SAFETY: `values` holds `len` elements of the C type V::TYPE names (AttrValue's contract).
        let status = unsafe { sys::cudnnBackendSetAttribute(self.raw, name, V::TYPE, values.len() as i64, values.as_ptr().cast()) };
        check(status, || format!("cudnnBackendSetAttribute({name:?})"))
    }

    /// Sets an attribute whose elements are other (finalized) descriptors.
    fn set_descs(&self, name: Attr, descs: &[&Desc]) -> Result<()> {
        let raws: Vec<sys::cudnnBackendDescriptor_t> = descs.iter().map(|d| d.raw).collect();
        // SAFETY: `raws` holds `len` live descriptor pointers, which cuDNN only reads.
        let status = unsafe {
            sys::cudnnBackendSetAttribute(self.raw, name, Ty::CUDNN_TYPE_BACKEND_DESCRIPTOR, raws.len() as i64, raws.as_ptr().cast())
        };
        check(status, || format!("cudnnBackendSetAttribute({name:?})"))
    }

    fn get_i64(&self, name: Attr) -> Result<i64> {
        let (mut value, mut count) = (0i64, 0i64);
        // SAFETY: room for the one INT64 requested.
        let status =
            unsafe { sys::cudnnBackendGetAttribute(self.raw, name, Ty::CUDNN_TYPE_INT64, 1, &mut count, (&mut value as *mut i64).cast()) };
        check(status, || format!("cudnnBackendGetAttribute({name:?})"))?;
        if count != 1 {
            return Err(Error::Cudnn(format!("cudnnBackendGetAttribute({name:?}): {count} elements, expected 1")));
        }
        Ok(value)
    }

    /// The engine's numerical notes, as raw enum values (a newer cuDNN may return notes this
    /// binding does not name, which must not become invalid Rust enums).
    fn numerical_notes(&self) -> Result<Vec<u32>> {
        let name = Attr::CUDNN_ATTR_ENGINE_NUMERICAL_NOTE;
        let mut notes = [0u32; MAX_NOTES];
        let mut count = 0i64;
        // SAFETY: room for MAX_NOTES 4-byte C enums, the number requested.
        let status = unsafe {
            sys::cudnnBackendGetAttribute(self.raw, name, Ty::CUDNN_TYPE_NUMERICAL_NOTE, MAX_NOTES as i64, &mut count, notes.as_mut_ptr().cast())
        };
        check(status, || format!("cudnnBackendGetAttribute({name:?})"))?;
        Ok(notes[..(count.clamp(0, MAX_NOTES as i64) as usize)].to_vec())
    }

    /// Fills the pre-created descriptors `out` from an attribute whose elements are
    /// descriptors; returns how many cuDNN filled.
    fn fill_descs(&self, name: Attr, out: &[Desc]) -> Result<usize> {
        let mut raws: Vec<sys::cudnnBackendDescriptor_t> = out.iter().map(|d| d.raw).collect();
        let mut count = 0i64;
        // SAFETY: `raws` holds `len` live descriptors of the kind the attribute yields; cuDNN fills them in place.
        let status = unsafe {
            sys::cudnnBackendGetAttribute(
                self.raw,
                name,
                Ty::CUDNN_TYPE_BACKEND_DESCRIPTOR,
                raws.len() as i64,
                &mut count,
                raws.as_mut_ptr().cast(),
            )
        };
        check(status, || format!("cudnnBackendGetAttribute({name:?})"))?;
        Ok(count.clamp(0, out.len() as i64) as usize)
    }

    /// How many descriptors an attribute holds (asked with room for none).
    fn count_descs(&self, name: Attr) -> Result<usize> {
        let mut count = 0i64;
        // SAFETY: zero elements are requested, so cuDNN writes only `count`.
        let status = unsafe {
            sys::cudnnBackendGetAttribute(self.raw, name, Ty::CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &mut count, ptr::null_mut())
        };
        check(status, || format!("cudnnBackendGetAttribute({name:?}) count"))?;
        Ok(count.max(0) as usize)
    }

    fn finalize(&self) -> Result<()> {
        // SAFETY: `raw` is a live descriptor; the attributes set on it point to live data.
        let status = unsafe { sys::cudnnBackendFinalize(self.raw) };
        check(status, || format!("cudnnBackendFinalize({:?})", self.kind))
    }
}

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: `raw` came from cudnnBackendCreateDescriptor and is destroyed once, here.
        let _ = unsafe { sys::cudnnBackendDestroyDescriptor(self.raw) };
    }
}

/// The finalized operation graph and the descriptors it was built from, which stay alive as
/// long as it does (cudnn-frontend keeps them too).
struct OpGraph {
    graph: Desc,
    _op: Desc,
    _conv: Desc,
    _tensors: [Desc; 3],
}

impl OpGraph {
    fn new(handle: &Handle, problem: &Conv2d, layout: Layout, dtype: sys::cudnnDataType_t) -> Result<OpGraph> {
        let [x, w, y] = operands(problem, layout)?;
        let x = tensor(UIDS[0], dtype, x)?;
        let w = tensor(UIDS[1], dtype, w)?;
        let y = tensor(UIDS[2], dtype, y)?;
        let conv = convolution(problem)?;
        let op = Desc::new(Kind::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR)?;
        op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, &[&x])?;
        op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, &[&w])?;
        op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, &[&y])?;
        op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, &[&conv])?;
        op.set(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, &[1.0f32])?;
        op.set(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, &[0.0f32])?;
        op.finalize()?;
        let graph = Desc::new(Kind::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
        graph.set(Attr::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, &[handle.0])?;
        graph.set_descs(Attr::CUDNN_ATTR_OPERATIONGRAPH_OPS, &[&op])?;
        graph.finalize()?;
        Ok(OpGraph { graph, _op: op, _conv: conv, _tensors: [x, w, y] })
    }
}

/// Logical dims and element strides of the input, filter and output tensors (in [`UIDS`] order)
/// in `layout`. The filter is `[K, C/G, R, S]`, KCRS or KRSC with C/G channels: the backend's
/// convolution descriptor has no group count, cuDNN infers the groups G from the input's C over
/// the filter's (as cudnn-frontend and PyTorch describe grouped convolutions).
fn operands(problem: &Conv2d, layout: Layout) -> Result<[([i64; 4], [i64; 4]); 3]> {
    let desc = |dims: [usize; 4]| Ok((dims.map(|v| v as i64), strides(dims, layout)?));
    Ok([desc(problem.input_shape())?, desc(problem.filter_shape())?, desc(problem.output_shape())?])
}

fn tensor(uid: i64, dtype: sys::cudnnDataType_t, (dims, strides): ([i64; 4], [i64; 4])) -> Result<Desc> {
    let d = Desc::new(Kind::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    d.set(Attr::CUDNN_ATTR_TENSOR_DATA_TYPE, &[dtype])?;
    d.set(Attr::CUDNN_ATTR_TENSOR_DIMENSIONS, &dims)?;
    d.set(Attr::CUDNN_ATTR_TENSOR_STRIDES, &strides)?;
    d.set(Attr::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[uid])?;
    d.set(Attr::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[ALIGNMENT])?;
    d.finalize()?;
    Ok(d)
}

fn convolution(p: &Conv2d) -> Result<Desc> {
    let pair = |(h, w): (usize, usize)| [h as i64, w as i64];
    let d = Desc::new(Kind::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)?;
    // fp32 accumulation for both fp32 and fp16 data, as the legacy baseline does.
    d.set(Attr::CUDNN_ATTR_CONVOLUTION_COMP_TYPE, &[sys::cudnnDataType_t::CUDNN_DATA_FLOAT])?;
    d.set(Attr::CUDNN_ATTR_CONVOLUTION_CONV_MODE, &[sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION])?;
    d.set(Attr::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &[2i64])?;
    // Conv2d pads both sides of an axis equally.
    d.set(Attr::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, &pair(p.pad))?;
    d.set(Attr::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, &pair(p.pad))?;
    d.set(Attr::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, &pair(p.stride))?;
    d.set(Attr::CUDNN_ATTR_CONVOLUTION_DILATIONS, &pair(p.dilation))?;
    d.finalize()?;
    Ok(d)
}

/// A finalized engine configuration waiting to be planned.
struct Config {
    cfg: Desc,
    engine: i64,
    source: &'static str,
    notes: Vec<u32>,
}

const HEURISTICS: [(sys::cudnnBackendHeurMode_t, &str); 3] = [
    (sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_INSTANT, "heur_instant"),
    (sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_B, "heur_b"),
    (sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_FALLBACK, "fallback"),
];

/// Every engine configuration to try: every one the heuristics recommend, best first (knob
/// variants of one engine included: taking only the first per engine dropped tile and split
/// choices that PyTorch's cuDNN benchmarking times, and the H100 deepbench run of 2026-11-23 had
/// PyTorch more than 5% faster than this search on 11 fp16 shapes with every engine index tried;
/// the same config from two heuristic modes is timed twice, within the search budget), then the
/// default-knob config of every engine no heuristic named. Failures go to `candidates` and are
/// otherwise skipped.
fn gather_configs(graph: &OpGraph, candidates: &mut Vec<Candidate>) -> Vec<Config> {
    let mut seen = HashSet::new();
    let mut configs = Vec::new();
    let mut fail = |engine, source, e: Error| candidates.push(Candidate { engine, source, median_ms: None, note: Some(e.to_string()) });
    for (mode, source) in HEURISTICS {
        match heuristic_configs(graph, mode) {
            Err(e) => fail(-1, source, e),
            Ok(cfgs) => {
                for cfg in cfgs {
                    match describe(cfg, source) {
                        Err(e) => fail(-1, source, e),
                        Ok(c) => {
                            seen.insert(c.engine);
                            configs.push(c);
                        }
                    }
                }
            }
        }
    }
    let count = match graph.graph.get_i64(Attr::CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT) {
        Ok(n) => n,
        Err(e) => {
            fail(-1, "global", e);
            0
        }
    };
    for index in (0..count).filter(|i| !seen.contains(i)) {
        match global_config(graph, index) {
            Ok(c) => configs.push(c),
            Err(e) => fail(index, "global", e),
        }
    }
    configs
}

/// The finalized engine configurations heuristic `mode` recommends, best first.
fn heuristic_configs(graph: &OpGraph, mode: sys::cudnnBackendHeurMode_t) -> Result<Vec<Desc>> {
    let heur = Desc::new(Kind::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
    heur.set_descs(Attr::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &[&graph.graph])?;
    heur.set(Attr::CUDNN_ATTR_ENGINEHEUR_MODE, &[mode])?;
    heur.finalize()?;
    let count = heur.count_descs(Attr::CUDNN_ATTR_ENGINEHEUR_RESULTS)?;
    let mut cfgs = (0..count).map(|_| Desc::new(Kind::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)).collect::<Result<Vec<_>>>()?;
    let filled = heur.fill_descs(Attr::CUDNN_ATTR_ENGINEHEUR_RESULTS, &cfgs)?;
    cfgs.truncate(filled);
    Ok(cfgs)
}

/// Reads the engine (global index and numerical notes) out of a heuristic's engine config.
fn describe(cfg: Desc, source: &'static str) -> Result<Config> {
    let engine = Desc::new(Kind::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    let filled = cfg.fill_descs(Attr::CUDNN_ATTR_ENGINECFG_ENGINE, std::slice::from_ref(&engine))?;
    if filled != 1 {
        return Err(Error::Cudnn("cudnnBackendGetAttribute(CUDNN_ATTR_ENGINECFG_ENGINE): no engine".into()));
    }
    let index = engine.get_i64(Attr::CUDNN_ATTR_ENGINE_GLOBAL_INDEX)?;
    Ok(Config { notes: engine.numerical_notes()?, cfg, engine: index, source })
}

/// Engine `index` of the graph with its default knobs; fails if it does not support the graph.
fn global_config(graph: &OpGraph, index: i64) -> Result<Config> {
    let engine = Desc::new(Kind::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    engine.set_descs(Attr::CUDNN_ATTR_ENGINE_OPERATION_GRAPH, &[&graph.graph])?;
    engine.set(Attr::CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &[index])?;
    engine.finalize()?;
    let notes = engine.numerical_notes()?;
    let cfg = Desc::new(Kind::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)?;
    cfg.set_descs(Attr::CUDNN_ATTR_ENGINECFG_ENGINE, &[&engine])?;
    cfg.finalize()?;
    Ok(Config { cfg, engine: index, source: "global", notes })
}

/// An execution plan with its workspace, ready to run.
struct Chosen {
    // The plan goes before the config it was made from.
    plan: Desc,
    _cfg: Desc,
    /// Held for `workspace_ptr`, which the variant packs carry.
    _workspace: Option<CudaSlice<u8>>,
    workspace_ptr: *mut c_void,
    engine: i64,
    source: &'static str,
    median_ms: f64,
}

fn plan(handle: &Handle, cfg: &Desc) -> Result<Desc> {
    let plan = Desc::new(Kind::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
    plan.set(Attr::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, &[handle.0])?;
    plan.set_descs(Attr::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &[cfg])?;
    plan.finalize()?;
    Ok(plan)
}

fn variant_pack(ptrs: [u64; 3], workspace: *mut c_void) -> Result<Desc> {
    let pack = Desc::new(Kind::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
    pack.set(Attr::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, &UIDS)?;
    pack.set(Attr::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, &ptrs.map(|p| p as *mut c_void))?;
    pack.set(Attr::CUDNN_ATTR_VARIANT_PACK_WORKSPACE, &[workspace])?;
    pack.finalize()?;
    Ok(pack)
}

fn execute(handle: &Handle, plan: &Desc, pack: &Desc) -> Result<()> {
    // SAFETY: the plan was finalized on this handle; the pack's pointers are live device
    // buffers of the sizes the graph describes (callers hold them borrowed) and a workspace
    // of the plan's size.
    let status = unsafe { sys::cudnnBackendExecute(handle.0, plan.raw, pack.raw) };
    check(status, || "cudnnBackendExecute".into())
}

/// The state of one engine search.
struct Search<'a> {
    gpu: &'a Gpu,
    handle: &'a Handle,
    math: Math,
    budget: &'a SearchBudget,
    start: Instant,
    ptrs: [u64; 3],
    tried: usize,
    best: Option<Chosen>,
    candidates: Vec<Candidate>,
}

impl Search<'_> {
    /// Filters, plans, runs and times one configuration, keeping it if it is the fastest yet.
    fn consider(&mut self, config: Config) {
        let mut record = Candidate { engine: config.engine, source: config.source, median_ms: None, note: None };
        if let Some(why) = excluded(self.math, &config.notes) {
            record.note = Some(why.into());
        } else if !may_try(self.tried, self.start.elapsed().as_secs_f64(), self.budget) {
            record.note = Some("not tried: search budget spent".into());
        } else {
            self.tried += 1;
            match self.evaluate(&config) {
                Ok((chosen_plan, workspace, median_ms)) => {
                    record.median_ms = Some(median_ms);
                    if self.best.as_ref().is_none_or(|b| median_ms < b.median_ms) {
                        let workspace_ptr = workspace_ptr(self.gpu, workspace.as_ref());
                        let Config { cfg, engine, source, .. } = config;
                        self.best = Some(Chosen { plan: chosen_plan, _cfg: cfg, _workspace: workspace, workspace_ptr, engine, source, median_ms });
                    }
                }
                Err(why) => record.note = Some(why),
            }
        }
        self.candidates.push(record);
    }

    /// The plan, its workspace and its median time, or why the candidate was dropped.
    fn evaluate(&self, config: &Config) -> std::result::Result<(Desc, Option<CudaSlice<u8>>, f64), String> {
        let plan = plan(self.handle, &config.cfg).map_err(|e| e.to_string())?;
        let bytes = plan.get_i64(Attr::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE).map_err(|e| e.to_string())?;
        let bytes = usize::try_from(bytes).map_err(|_| format!("negative workspace size {bytes}"))?;
        if bytes > self.budget.max_workspace_bytes {
            return Err(format!("workspace of {bytes} bytes is over the {} byte limit", self.budget.max_workspace_bytes));
        }
        let workspace = if bytes > 0 { Some(self.gpu.alloc_zeros::<u8>(bytes).map_err(|e| e.to_string())?) } else { None };
        let pack = variant_pack(self.ptrs, workspace_ptr(self.gpu, workspace.as_ref())).map_err(|e| e.to_string())?;
        let run = |_: usize| execute(self.handle, &plan, &pack);
        run(0).and_then(|()| self.gpu.synchronize()).map_err(|e| format!("first run failed: {e}"))?;
        let probe = time_runs(self.gpu, TimingConfig { warmup: 0, runs: 1, method: TimingMethod::Events }, run).map_err(|e| e.to_string())?;
        let best_ms = self.best.as_ref().map(|b| b.median_ms);
        if !worth_timing(probe.median_ms, best_ms) {
            return Err(format!("probe run {:.4} ms is over {SLOW_FACTOR}x the best {:.4} ms", probe.median_ms, best_ms.unwrap_or(0.0)));
        }
        let cfg = TimingConfig { warmup: self.budget.warmup, runs: self.budget.runs.max(1), method: self.budget.method };
        let timing = time_runs(self.gpu, cfg, run).map_err(|e| e.to_string())?;
        Ok((plan, workspace, timing.median_ms))
    }
}

/// The workspace's device address, or null for none. The address stays valid as long as the
/// slice does, wherever it moves.
fn workspace_ptr(gpu: &Gpu, workspace: Option<&CudaSlice<u8>>) -> *mut c_void {
    workspace.map_or(ptr::null_mut(), |ws| ws.device_ptr(gpu.stream()).0 as *mut c_void)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_for_both_layouts() {
        // N=2, C=3, H=4, W=5.
        assert_eq!(strides([2, 3, 4, 5], Layout::Nchw).unwrap(), [60, 20, 5, 1]);
        assert_eq!(strides([2, 3, 4, 5], Layout::Nhwc).unwrap(), [60, 1, 15, 3]);
        // A KCRS / KRSC filter, K=8, C=3, R=S=3.
        assert_eq!(strides([8, 3, 3, 3], Layout::Nchw).unwrap(), [27, 9, 3, 1]);
        assert_eq!(strides([8, 3, 3, 3], Layout::Nhwc).unwrap(), [27, 1, 9, 3]);
        assert!(matches!(strides([2, 3, 4, 5], Layout::Hwcn), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn strides_agree_with_layout_offsets() {
        let dims = [2, 3, 4, 5];
        for layout in [Layout::Nchw, Layout::Nhwc] {
            let s = strides(dims, layout).unwrap();
            let offset = |n: usize, c: usize, h: usize, w: usize| (n as i64 * s[0] + c as i64 * s[1] + h as i64 * s[2] + w as i64 * s[3]) as usize;
            assert_eq!(offset(1, 2, 3, 4), layout.offset(dims, 1, 2, 3, 4));
            assert_eq!(offset(0, 1, 2, 0), layout.offset(dims, 0, 1, 2, 0));
        }
    }

    #[test]
    fn grouped_filters_have_c_over_g_channels_in_both_layouts() {
        // N=2, C=8, 9x9, K=8, 3x3 in 4 groups: the filter is 8 x 2 x 3 x 3; input and output keep all channels.
        let p = Conv2d::new(2, 8, 9, 9, 8, 3, 3).with_pad(1).with_groups(4);
        let [x, w, y] = operands(&p, Layout::Nchw).unwrap();
        assert_eq!(x, ([2, 8, 9, 9], [648, 81, 9, 1]));
        assert_eq!(w, ([8, 2, 3, 3], [18, 9, 3, 1])); // KCRS
        assert_eq!(y, ([2, 8, 9, 9], [648, 81, 9, 1]));
        let [x, w, y] = operands(&p, Layout::Nhwc).unwrap();
        assert_eq!(x, ([2, 8, 9, 9], [648, 1, 72, 8]));
        assert_eq!(w, ([8, 2, 3, 3], [18, 1, 6, 2])); // KRSC: C/G = 2 channels innermost
        assert_eq!(y, ([2, 8, 9, 9], [648, 1, 72, 8]));
        // Depthwise, stride 2: C = K = 16 filters of one channel, 9x9 -> 5x5.
        let dw = Conv2d::new(2, 16, 9, 9, 16, 3, 3).with_pad(1).with_stride(2).with_groups(16);
        let [_, w, y] = operands(&dw, Layout::Nchw).unwrap();
        assert_eq!((w, y), (([16, 1, 3, 3], [9, 9, 3, 1]), ([2, 16, 5, 5], [400, 25, 5, 1])));
        let [_, w, y] = operands(&dw, Layout::Nhwc).unwrap();
        assert_eq!((w, y), (([16, 1, 3, 3], [9, 1, 3, 1]), ([2, 16, 5, 5], [400, 1, 80, 16])));
        // Every descriptor's extent is the buffer length the graph checks against.
        for (layout, p) in [(Layout::Nchw, p), (Layout::Nhwc, p), (Layout::Nhwc, dw)] {
            let lens = operands(&p, layout).unwrap().map(|(d, s)| (0..4).map(|i| (d[i] - 1) * s[i]).sum::<i64>() as usize + 1);
            assert_eq!(lens, [p.input_len(), p.filter_len(), p.output_len()], "{p} {layout}");
        }
        assert!(matches!(operands(&p, Layout::Hwcn), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn fma_rejects_tensor_core_notes_and_every_mode_rejects_down_convert() {
        let tc = Note::CUDNN_NUMERICAL_NOTE_TENSOR_CORE as u32;
        let down = Note::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS as u32;
        let fft = Note::CUDNN_NUMERICAL_NOTE_FFT as u32;
        let wino = Note::CUDNN_NUMERICAL_NOTE_WINOGRAD as u32;
        assert!(excluded(Math::Fma, &[]).is_none());
        assert!(excluded(Math::Fma, &[fft, wino]).is_none());
        assert!(excluded(Math::Fma, &[tc]).is_some());
        assert!(excluded(Math::Fma, &[fft, down]).is_some());
        assert!(excluded(Math::Fma, &[99, tc]).is_some());
        for math in [Math::Tf32, Math::TensorCore] {
            assert!(excluded(math, &[tc, wino]).is_none());
            assert!(excluded(math, &[tc, down]).is_some());
            assert!(excluded(math, &[]).is_none());
        }
    }

    #[test]
    fn budget_stops_on_count_or_wall_time() {
        let budget = SearchBudget { max_candidates: 3, max_seconds: 2.0, ..SearchBudget::default() };
        assert!(may_try(0, 0.0, &budget));
        assert!(may_try(2, 1.99, &budget));
        assert!(!may_try(3, 0.0, &budget));
        assert!(!may_try(0, 2.0, &budget));
        assert!(!may_try(1, 5.0, &budget));
    }

    #[test]
    fn slow_probes_are_not_timed_further() {
        assert!(worth_timing(100.0, None));
        assert!(worth_timing(4.0, Some(1.0)));
        assert!(!worth_timing(4.01, Some(1.0)));
        // A few microseconds of host enqueue in the probe never prune a small layer's engine.
        assert!(worth_timing(0.012, Some(0.002)));
        assert!(!worth_timing(0.06, Some(0.002)));
        assert!(worth_timing(0.5, Some(1.0)));
    }

    #[test]
    fn no_engine_error_names_tried_failures_first() {
        let c = |engine, note: &str| Candidate { engine, source: "global", median_ms: None, note: Some(note.into()) };
        let e = no_engine(&[c(0, "excluded by Math::Fma: TENSOR_CORE note"), c(7, "first run failed: boom")]);
        let Error::Cudnn(msg) = e else { panic!("not a cuDNN error: {e:?}") };
        assert!(msg.starts_with("no engine ran this graph (2 candidates; first: eng7 (global): first run failed: boom; eng0"), "{msg}");
    }

    #[test]
    fn default_budget() {
        let b = SearchBudget::default();
        assert_eq!((b.warmup, b.runs, b.max_candidates, b.max_seconds, b.max_workspace_bytes), (1, 3, 256, 3.0, 4 << 30));
    }
}
