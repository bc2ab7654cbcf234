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
//!
//! A problem with a fused epilogue ([`crate::Epilogue`], `y = act(alpha * conv * scale[k] +
//! bias[k] + beta * residual)`) is cuDNN's fused graph of the whole layer
//! ([`GraphConv::new_fused`]): the convolution writes a virtual fp32 tensor, and a chain of
//! pointwise nodes (fp32 math, virtual fp32 tensors between them) computes the epilogue, the
//! last one writing the real output:
//!
//! ```text
//!  conv(X uid 1, W uid 2) -> v100
//!    [MUL  by alpha   (uid 7, K copies, owned by the graph)   if alpha != 1]
//!    [MUL  by scale   (uid 4, [1,K,1,1] fp32, the caller's)   if scale]
//!    [ADD  bias       (uid 5, [1,K,1,1] fp32, the caller's)   if bias]
//!    [ADD  residual   (uid 6, the output's shape and type)    if residual, beta = 1]
//!    [MUL 1/beta (uid 8), ADD residual, MUL beta (uid 9)      if residual, beta != 0, 1]
//!    [RELU_FWD / SWISH_FWD / GELU_APPROX_TANH_FWD / GELU_FWD  if an activation]
//!  -> Y (uid 3); the intermediate outputs are virtual, uids 101, 102, ...
//! ```
//!
//! Only the runtime-fusion engines take such graphs; the search tolerates every other engine's
//! refusal, and where none takes the graph the error says so and why, engine by engine.

use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;
use std::sync::Arc;
use std::time::Instant;

use cudarc::cudnn::sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use crate::epilogue::EpilogueOperands;
use crate::timing::{time_runs, TimingConfig, TimingMethod};
use crate::{Activation, Conv2d, DType, Element, Epilogue, Error, Gpu, Layout, Result};

use sys::cudnnBackendAttributeName_t as Attr;
use sys::cudnnBackendAttributeType_t as Ty;
use sys::cudnnBackendDescriptorType_t as Kind;
use sys::cudnnBackendNumericalNote_t as Note;
use sys::cudnnPointwiseMode_t as Pw;

/// Unique id of the input tensor. The real tensors' ids (1 to 9) are the variant pack's; the
/// input, filter and output come first in it, then each pointwise node's operand in chain order.
const UID_X: i64 = 1;
/// Unique id of the filter tensor.
const UID_W: i64 = 2;
/// Unique id of the output tensor (the last node's output).
const UID_Y: i64 = 3;
/// Unique id of the caller's per-channel scale, a `[1, K, 1, 1]` fp32 tensor.
const UID_SCALE: i64 = 4;
/// Unique id of the caller's per-channel bias, a `[1, K, 1, 1]` fp32 tensor.
const UID_BIAS: i64 = 5;
/// Unique id of the caller's residual: the output's shape, strides and element type.
const UID_RESIDUAL: i64 = 6;
/// Unique id of the graph's own `[1, K, 1, 1]` fp32 vector of alpha (the factor on the sum).
const UID_ALPHA: i64 = 7;
/// Unique id of the graph's own vector of 1 / beta (the sum divided before the residual is added).
const UID_INV_BETA: i64 = 8;
/// Unique id of the graph's own vector of beta (the factor on the residual, and on that sum).
const UID_BETA: i64 = 9;
/// Unique id of the convolution's virtual fp32 output where pointwise nodes follow it; node `i`
/// of the chain (from 0) writes virtual tensor `UID_VIRTUAL + 1 + i`, all but the last.
const UID_VIRTUAL: i64 = 100;
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

/// A forward convolution planned as a cuDNN operation graph, with the fastest allowed engine;
/// with the problem's fused epilogue, if it has one (cuDNN's fused graph of the layer).
pub struct GraphConv<T> {
    // Fields drop in order: everything made from the handle goes before it.
    packs: HashMap<Vec<u64>, Desc>,
    chosen: Chosen,
    _graph: OpGraph,
    handle: Handle,
    stream: Arc<CudaStream>,
    lens: [usize; 3],
    /// The problem's epilogue, which the operands of each run are checked against.
    epilogue: Epilogue,
    /// Output channels: the length of the scale and bias vectors.
    k: usize,
    /// The chain of pointwise nodes after the convolution (empty for the bare convolution).
    nodes: Vec<Node>,
    /// The variant pack's unique ids, in its order ([`pack_uids`]).
    uids: Vec<i64>,
    /// The constant vectors the chain multiplies by (alpha, 1 / beta, beta): uid and buffer,
    /// which every variant pack points to.
    constants: Vec<(i64, CudaSlice<f32>)>,
    candidates: Vec<Candidate>,
    _element: PhantomData<T>,
}

impl<T: Element> GraphConv<T> {
    /// Builds the graph for `problem` in `layout` (`Nchw`: NCHW / KCRS / NKPQ, `Nhwc`: NHWC /
    /// KRSC / NPQK, the filter with C/G channels for G groups; anything else is
    /// [`Error::InvalidArgument`]) and picks the fastest engine
    /// that `math` allows by timing candidates on the given buffers within `budget`.
    ///
    /// The problem's epilogue is part of the graph ([`GraphConv::new_fused`]); one that reads
    /// operands (scale, bias, residual) needs them, so it is an error here: pass the bare
    /// problem (`problem.with_epilogue(Epilogue::NONE)`) for the convolution alone.
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
        Self::new_fused(gpu, problem, layout, math, budget, x, w, &EpilogueOperands::none(), y)
    }

    /// [`GraphConv::new`] for a problem with a fused epilogue, given its operands: cuDNN's
    /// fused graph of the layer (the module docs show it), searched and timed on these buffers
    /// like the bare convolution. `ep` holds exactly the operands `problem.epilogue` names:
    /// `scale` and `bias` of K fp32 values, a `residual` of the output's length in `layout` and
    /// type `T` (otherwise [`Error::InvalidArgument`] or [`Error::BufferSize`]). Where no
    /// engine takes the graph (most engines do not fuse; the runtime-fusion ones may), the
    /// error is [`Error::Cudnn`] naming each candidate's refusal.
    #[allow(clippy::too_many_arguments)]
    pub fn new_fused(
        gpu: &Gpu,
        problem: &Conv2d,
        layout: Layout,
        math: Math,
        budget: &SearchBudget,
        x: &CudaSlice<T>,
        w: &CudaSlice<T>,
        ep: &EpilogueOperands<'_, T>,
        y: &mut CudaSlice<T>,
    ) -> Result<Self> {
        if !crate::cudnn::available() {
            return Err(Error::Cudnn("libcudnn was not found on the library path".into()));
        }
        problem.validate()?;
        problem.epilogue.validate()?;
        strides(problem.input_shape(), layout)?;
        let lens = [problem.input_len(), problem.filter_len(), problem.output_len()];
        check_lens(lens, [x.len(), w.len(), y.len()])?;
        let nodes = epilogue_nodes(&problem.epilogue)?;
        let uids = pack_uids(&nodes);
        let stream = gpu.stream().clone();
        let constants = constant_vectors(&nodes).into_iter().map(|(uid, value)| Ok((uid, gpu.upload(&vec![value; problem.k])?))).collect::<Result<Vec<_>>>()?;
        let handle = Handle::new(&stream)?;
        let graph = OpGraph::new(&handle, problem, layout, data_type(T::DTYPE), &nodes)?;
        let mut candidates = Vec::new();
        let configs = gather_configs(&graph, &mut candidates);
        let start = Instant::now();
        let chosen = {
            let (ptrs, _guards) = addresses(&stream, &uids, &problem.epilogue, problem.k, x, w, y, ep, &constants)?;
            let mut search = Search { gpu, handle: &handle, math, budget, start, uids: &uids, ptrs, tried: 0, best: None, candidates };
            for config in configs {
                search.consider(config);
            }
            candidates = search.candidates;
            search.best
        };
        let chosen = chosen.ok_or_else(|| no_engine(&candidates, &nodes))?;
        Ok(GraphConv {
            packs: HashMap::new(),
            chosen,
            _graph: graph,
            handle,
            stream,
            lens,
            epilogue: problem.epilogue,
            k: problem.k,
            nodes,
            uids,
            constants,
            candidates,
            _element: PhantomData,
        })
    }

    /// Enqueues one forward convolution on these buffers (same sizes as at planning); for a
    /// graph with an epilogue, one that reads no operands.
    pub fn run(&mut self, x: &CudaSlice<T>, w: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        self.run_fused(x, w, &EpilogueOperands::none(), y)
    }

    /// Enqueues one run of the layer on these buffers and the epilogue operands `ep` (exactly
    /// those the problem's epilogue names, of the sizes [`GraphConv::new_fused`] takes).
    pub fn run_fused(&mut self, x: &CudaSlice<T>, w: &CudaSlice<T>, ep: &EpilogueOperands<'_, T>, y: &mut CudaSlice<T>) -> Result<()> {
        check_lens(self.lens, [x.len(), w.len(), y.len()])?;
        let (ptrs, _guards) = addresses(&self.stream, &self.uids, &self.epilogue, self.k, x, w, y, ep, &self.constants)?;
        if !self.packs.contains_key(&ptrs) {
            if self.packs.len() >= MAX_VARIANT_PACKS {
                self.packs.clear();
            }
            let pack = variant_pack(&self.uids, &ptrs, self.chosen.workspace_ptr)?;
            self.packs.insert(ptrs.clone(), pack);
        }
        let pack = self.packs.get(&ptrs).ok_or_else(|| Error::Cudnn("variant pack cache".into()))?;
        execute(&self.handle, &self.chosen.plan, pack)
    }

    /// The chosen engine, e.g. `graph eng12 (heur_b)`.
    pub fn engine_name(&self) -> String {
        format!("graph eng{} ({})", self.chosen.engine, self.chosen.source)
    }

    /// The graph's nodes, e.g. `conv -> add(bias) -> relu` (`conv` alone for the bare convolution).
    pub fn graph_description(&self) -> String {
        describe_nodes(&self.nodes)
    }

    /// Every candidate the search looked at, in order, with its time or why it was skipped.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }
}

/// The device addresses of the variant pack's tensors in `uids` order ([`pack_uids`]), with the
/// guards that order the buffers' use on `stream` (cudarc records it when they drop, after the
/// enqueue that reads them). The epilogue operands `ep` are checked against `epilogue` first
/// ([`operand_addresses`]).
#[allow(clippy::too_many_arguments)]
fn addresses<'s, T>(
    stream: &'s Arc<CudaStream>,
    uids: &[i64],
    epilogue: &Epilogue,
    k: usize,
    x: &'s CudaSlice<T>,
    w: &'s CudaSlice<T>,
    y: &'s mut CudaSlice<T>,
    ep: &EpilogueOperands<'s, T>,
    constants: &'s [(i64, CudaSlice<f32>)],
) -> Result<(Vec<u64>, Vec<SyncOnDrop<'s>>)> {
    let output_len = y.len();
    let mut guards = Vec::new();
    let mut located = |address: (u64, SyncOnDrop<'s>)| {
        guards.push(address.1);
        address.0
    };
    let given = [
        ep.scale.map(|s| (located(s.device_ptr(stream)), s.len())),
        ep.bias.map(|b| (located(b.device_ptr(stream)), b.len())),
        ep.residual.map(|r| (located(r.device_ptr(stream)), r.len())),
    ];
    let operands = operand_addresses(epilogue, k, output_len, given)?;
    let core = [located(x.device_ptr(stream)), located(w.device_ptr(stream)), located(y.device_ptr_mut(stream))];
    let owned: Vec<(i64, u64)> = constants.iter().map(|(uid, c)| (*uid, located(c.device_ptr(stream)))).collect();
    Ok((pack_pointers(uids, core, operands, &owned)?, guards))
}

fn check_lens(expected: [usize; 3], got: [usize; 3]) -> Result<()> {
    for ((tensor, expected), got) in ["input", "filter", "output"].into_iter().zip(expected).zip(got) {
        if expected != got {
            return Err(Error::BufferSize { tensor, expected, got });
        }
    }
    Ok(())
}

fn no_engine(candidates: &[Candidate], nodes: &[Node]) -> Error {
    // The failures of candidates that were actually tried say most; filtered ones come last.
    let filtered = |c: &&Candidate| c.note.as_deref().is_some_and(|n| n.starts_with("excluded") || n.starts_with("not tried"));
    let reasons: Vec<String> = candidates
        .iter()
        .filter(|c| !filtered(c))
        .chain(candidates.iter().filter(filtered))
        .take(8)
        .map(|c| format!("eng{} ({}): {}", c.engine, c.source, c.note.as_deref().unwrap_or("?")))
        .collect();
    let graph = if nodes.is_empty() { String::new() } else { format!(" [{}]", describe_nodes(nodes)) };
    Error::Cudnn(format!("no engine ran this graph{graph} ({} candidates; first: {})", candidates.len(), reasons.join("; ")))
}

/// The second input of a binary pointwise node.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Operand {
    /// The caller's per-output-channel scale ([`UID_SCALE`]).
    Scale,
    /// The caller's per-output-channel bias ([`UID_BIAS`]).
    Bias,
    /// The caller's residual ([`UID_RESIDUAL`]).
    Residual,
    /// K copies of `value`, a `[1, K, 1, 1]` fp32 tensor the graph allocates and owns (the same
    /// form as the scale's, which every fusing engine reads; a scalar would need a by-value or
    /// broadcast tensor that fewer engines take).
    Constant { uid: i64, value: f32 },
}

impl Operand {
    fn uid(self) -> i64 {
        match self {
            Operand::Scale => UID_SCALE,
            Operand::Bias => UID_BIAS,
            Operand::Residual => UID_RESIDUAL,
            Operand::Constant { uid, .. } => uid,
        }
    }

    fn name(self) -> String {
        match self {
            Operand::Scale => "scale".into(),
            Operand::Bias => "bias".into(),
            Operand::Residual => "residual".into(),
            Operand::Constant { value, .. } => format!("{value}"),
        }
    }
}

/// A pointwise descriptor's parameters beyond its mode (those cudnn-frontend sets, all
/// `CUDNN_TYPE_DOUBLE`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Params {
    None,
    /// `RELU_FWD`: `v < lower_clip ? lower_clip + lower_clip_slope * (v - lower_clip) : min(v, upper_clip)`.
    Relu { lower_clip: f64, upper_clip: f64, lower_clip_slope: f64 },
    /// `SWISH_FWD`: `v * sigmoid(beta * v)`.
    Swish { beta: f64 },
}

/// One pointwise node of the chain after the convolution: `mode(previous output[, operand])`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Node {
    mode: sys::cudnnPointwiseMode_t,
    operand: Option<Operand>,
    params: Params,
}

impl Node {
    fn binary(mode: Pw, operand: Operand) -> Node {
        Node { mode, operand: Some(operand), params: Params::None }
    }

    fn unary(mode: Pw, params: Params) -> Node {
        Node { mode, operand: None, params }
    }

    /// `mul(scale)`, `add(bias)`, `relu`, ...
    fn describe(&self) -> String {
        let op = match self.mode {
            Pw::CUDNN_POINTWISE_MUL => "mul",
            Pw::CUDNN_POINTWISE_ADD => "add",
            Pw::CUDNN_POINTWISE_RELU_FWD => "relu",
            Pw::CUDNN_POINTWISE_SWISH_FWD => "swish",
            Pw::CUDNN_POINTWISE_GELU_APPROX_TANH_FWD => "gelu_approx_tanh",
            Pw::CUDNN_POINTWISE_GELU_FWD => "gelu",
            _ => "pointwise",
        };
        let params = match self.params {
            Params::None => String::new(),
            Params::Relu { lower_clip_slope, upper_clip, .. } => {
                let mut p = Vec::new();
                if lower_clip_slope != 0.0 {
                    p.push(format!("slope {lower_clip_slope}"));
                }
                if upper_clip < f32::MAX as f64 {
                    p.push(format!("upper {upper_clip}"));
                }
                if p.is_empty() { String::new() } else { format!("[{}]", p.join(", ")) }
            }
            Params::Swish { beta } if beta != 1.0 => format!("[beta {beta}]"),
            Params::Swish { .. } => String::new(),
        };
        match self.operand {
            Some(o) => format!("{op}({}){params}", o.name()),
            None => format!("{op}{params}"),
        }
    }
}

/// The graph's nodes in order: `conv`, then each pointwise node (`conv -> add(bias) -> relu`).
fn describe_nodes(nodes: &[Node]) -> String {
    std::iter::once("conv".to_string()).chain(nodes.iter().map(Node::describe)).collect::<Vec<_>>().join(" -> ")
}

/// The pointwise node computing `act` (fp32 math), `None` for the identity: ReLU, ReLU6 (upper
/// clip 6) and LeakyReLU (lower clip slope) are `RELU_FWD` (the upper clip otherwise the
/// largest fp32, as cudnn-frontend sets it), SiLU is `SWISH_FWD` with beta 1, GELU's tanh form
/// `GELU_APPROX_TANH_FWD` and its erf form `GELU_FWD`.
fn activation_node(act: Activation) -> Option<Node> {
    let relu = |upper_clip: f64, lower_clip_slope: f64| Node::unary(Pw::CUDNN_POINTWISE_RELU_FWD, Params::Relu { lower_clip: 0.0, upper_clip, lower_clip_slope });
    Some(match act {
        Activation::Identity => return None,
        Activation::Relu => relu(f32::MAX as f64, 0.0),
        Activation::Relu6 => relu(6.0, 0.0),
        Activation::LeakyRelu(slope) => relu(f32::MAX as f64, slope as f64),
        Activation::Silu => Node::unary(Pw::CUDNN_POINTWISE_SWISH_FWD, Params::Swish { beta: 1.0 }),
        Activation::GeluTanh => Node::unary(Pw::CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, Params::None),
        Activation::GeluErf => Node::unary(Pw::CUDNN_POINTWISE_GELU_FWD, Params::None),
    })
}

/// The chain of pointwise nodes computing `ep` after the convolution, in
/// [`Epilogue::apply`]'s order (empty for the bare convolution): the sum times alpha (where not
/// 1) and the scale, plus the bias, plus beta times the residual, then the activation. A beta
/// other than 1 is applied on the chain itself, with no second branch in the graph:
/// `v + beta * r = beta * (v / beta + r)` (two more fp32 roundings); beta 0 drops the residual.
fn epilogue_nodes(ep: &Epilogue) -> Result<Vec<Node>> {
    ep.validate()?;
    let mut nodes = Vec::new();
    if ep.is_none() {
        return Ok(nodes);
    }
    let constant = |uid, value| Operand::Constant { uid, value };
    if ep.alpha() != 1.0 {
        nodes.push(Node::binary(Pw::CUDNN_POINTWISE_MUL, constant(UID_ALPHA, ep.alpha())));
    }
    if ep.scale {
        nodes.push(Node::binary(Pw::CUDNN_POINTWISE_MUL, Operand::Scale));
    }
    if ep.bias {
        nodes.push(Node::binary(Pw::CUDNN_POINTWISE_ADD, Operand::Bias));
    }
    let beta = ep.beta();
    if ep.residual && beta == 1.0 {
        nodes.push(Node::binary(Pw::CUDNN_POINTWISE_ADD, Operand::Residual));
    } else if ep.residual && beta != 0.0 {
        let inverse = 1.0 / beta;
        if !inverse.is_normal() {
            return Err(Error::InvalidArgument(format!("the cuDNN fused graph applies beta as 1/beta, then beta; beta = {beta} has no finite fp32 inverse")));
        }
        nodes.push(Node::binary(Pw::CUDNN_POINTWISE_MUL, constant(UID_INV_BETA, inverse)));
        nodes.push(Node::binary(Pw::CUDNN_POINTWISE_ADD, Operand::Residual));
        nodes.push(Node::binary(Pw::CUDNN_POINTWISE_MUL, constant(UID_BETA, beta)));
    }
    nodes.extend(activation_node(ep.activation));
    Ok(nodes)
}

/// The unique ids of the graph's real tensors in variant-pack order: input, filter, output,
/// then each node's operand in chain order (each appears once).
fn pack_uids(nodes: &[Node]) -> Vec<i64> {
    [UID_X, UID_W, UID_Y].into_iter().chain(nodes.iter().filter_map(|n| n.operand.map(Operand::uid))).collect()
}

/// The constant vectors the chain multiplies by: uid and value.
fn constant_vectors(nodes: &[Node]) -> Vec<(i64, f32)> {
    nodes
        .iter()
        .filter_map(|n| match n.operand {
            Some(Operand::Constant { uid, value }) => Some((uid, value)),
            _ => None,
        })
        .collect()
}

/// The caller's epilogue operands checked against `ep` on a problem of `k` output channels and
/// `output_len` output elements: `given` holds the device address and length of each of
/// scale, bias and residual where given. Every operand the epilogue names must be given, with
/// its length (K, K, `output_len`) and at an address of the tensors' promised alignment, and no
/// other; returns each one's address.
fn operand_addresses(ep: &Epilogue, k: usize, output_len: usize, given: [Option<(u64, usize)>; 3]) -> Result<[Option<u64>; 3]> {
    let operand = |name: &'static str, wanted: bool, len: usize, given: Option<(u64, usize)>| match (wanted, given) {
        (false, None) => Ok(None),
        (true, Some((a, _))) if a % ALIGNMENT as u64 != 0 => {
            Err(Error::InvalidArgument(format!("the epilogue's {name} is at {a:#x}, not {ALIGNMENT}-byte aligned as the graph's tensors promise")))
        }
        (true, Some((a, got))) if got == len => Ok(Some(a)),
        (true, Some((_, got))) => Err(Error::BufferSize { tensor: name, expected: len, got }),
        (true, None) => Err(Error::InvalidArgument(format!("the epilogue ({ep}) reads a {name}, and none was given"))),
        (false, Some(_)) => Err(Error::InvalidArgument(format!("a {name} was given, but the epilogue ({ep}) does not read one"))),
    };
    let [scale, bias, residual] = given;
    Ok([operand("scale", ep.scale, k, scale)?, operand("bias", ep.bias, k, bias)?, operand("residual", ep.residual, output_len, residual)?])
}

/// The variant pack's data pointers for `uids`: `core` for the input, filter and output,
/// `operands` for scale, bias and residual ([`operand_addresses`]), `constants` for the graph's
/// own vectors. A uid with no pointer is an error (a pack cuDNN would read out of bounds with).
fn pack_pointers(uids: &[i64], core: [u64; 3], operands: [Option<u64>; 3], constants: &[(i64, u64)]) -> Result<Vec<u64>> {
    uids.iter()
        .map(|&uid| {
            let pointer = match uid {
                UID_X => Some(core[0]),
                UID_W => Some(core[1]),
                UID_Y => Some(core[2]),
                UID_SCALE => operands[0],
                UID_BIAS => operands[1],
                UID_RESIDUAL => operands[2],
                _ => constants.iter().find(|c| c.0 == uid).map(|c| c.1),
            };
            pointer.ok_or_else(|| Error::Cudnn(format!("the graph's tensor uid {uid} has no device pointer")))
        })
        .collect()
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
// SAFETY: `double` (the pointwise descriptor's clips and Swish beta).
unsafe impl AttrValue for f64 {
    const TYPE: Ty = Ty::CUDNN_TYPE_DOUBLE;
}
// SAFETY: C's `bool` (`CUDNN_ATTR_TENSOR_IS_VIRTUAL`): one byte, 0 or 1, as Rust's `bool`.
unsafe impl AttrValue for bool {
    const TYPE: Ty = Ty::CUDNN_TYPE_BOOLEAN;
}
// SAFETY: `cudnnPointwiseMode_t`, a C enum.
unsafe impl AttrValue for sys::cudnnPointwiseMode_t {
    const TYPE: Ty = Ty::CUDNN_TYPE_POINTWISE_MODE;
}
// SAFETY: `cudnnNanPropagation_t`, a C enum (the attribute type's name is misspelled in cuDNN).
unsafe impl AttrValue for sys::cudnnNanPropagation_t {
    const TYPE: Ty = Ty::CUDNN_TYPE_NAN_PROPOGATION;
}

/// A knob's kind (`cudnnBackendKnobType_t`), kept raw: a newer cuDNN may name kinds this
/// binding does not, which must not become invalid Rust enums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
struct KnobType(u32);

// SAFETY: `cudnnBackendKnobType_t`, a C enum (4 bytes, as the repr(transparent) u32).
unsafe impl AttrValue for KnobType {
    const TYPE: Ty = Ty::CUDNN_TYPE_KNOB_TYPE;
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

    /// One element of an attribute of `V`'s C type.
    fn get_one<V: AttrValue + Default>(&self, name: Attr) -> Result<V> {
        let (mut value, mut count) = (V::default(), 0i64);
        // SAFETY: room for the one element of V::TYPE requested (AttrValue's contract).
        let status = unsafe { sys::cudnnBackendGetAttribute(self.raw, name, V::TYPE, 1, &mut count, (&mut value as *mut V).cast()) };
        check(status, || format!("cudnnBackendGetAttribute({name:?})"))?;
        if count != 1 {
            return Err(Error::Cudnn(format!("cudnnBackendGetAttribute({name:?}): {count} elements, expected 1")));
        }
        Ok(value)
    }

    /// The descriptors of kind `kind` an attribute holds.
    fn get_descs(&self, name: Attr, kind: Kind) -> Result<Vec<Desc>> {
        let count = self.count_descs(name)?;
        let mut out = (0..count).map(|_| Desc::new(kind)).collect::<Result<Vec<_>>>()?;
        let filled = self.fill_descs(name, &out)?;
        out.truncate(filled);
        Ok(out)
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
    /// The convolution's operation, then each pointwise node's.
    _ops: Vec<Desc>,
    _conv: Desc,
    _pointwise: Vec<Desc>,
    _tensors: Vec<Desc>,
}

impl OpGraph {
    /// The graph of `problem` in `layout` with `dtype` data: the convolution, then `nodes`
    /// ([`epilogue_nodes`]; none for the bare convolution, which writes the output itself).
    fn new(handle: &Handle, problem: &Conv2d, layout: Layout, dtype: sys::cudnnDataType_t, nodes: &[Node]) -> Result<OpGraph> {
        let float = sys::cudnnDataType_t::CUDNN_DATA_FLOAT;
        let [xd, wd, yd] = operands(problem, layout)?;
        let vector = channel_vector(problem.k, layout)?;
        let x = tensor(UID_X, dtype, xd, false)?;
        let w = tensor(UID_W, dtype, wd, false)?;
        let y = tensor(UID_Y, dtype, yd, false)?;
        // With nodes after it, the convolution writes a virtual fp32 tensor of the output's shape.
        let mut previous = if nodes.is_empty() { None } else { Some(tensor(UID_VIRTUAL, float, yd, true)?) };
        let conv = convolution(problem)?;
        let op = Desc::new(Kind::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR)?;
        op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, &[&x])?;
        op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, &[&w])?;
        op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, &[previous.as_ref().unwrap_or(&y)])?;
        op.set_descs(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, &[&conv])?;
        op.set(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, &[1.0f32])?;
        op.set(Attr::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, &[0.0f32])?;
        op.finalize()?;
        let mut ops = vec![op];
        let mut pointwise = Vec::new();
        let mut tensors = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let input = previous.take().ok_or_else(|| Error::Cudnn("a pointwise node has no input".into()))?;
            // Every node but the last writes a virtual fp32 tensor; the last writes Y.
            let output = if i + 1 < nodes.len() { Some(tensor(UID_VIRTUAL + 1 + i as i64, float, yd, true)?) } else { None };
            let operand = match node.operand {
                None => None,
                Some(Operand::Residual) => Some(tensor(UID_RESIDUAL, dtype, yd, false)?),
                Some(other) => Some(tensor(other.uid(), float, vector, false)?),
            };
            let pw = pointwise_desc(node)?;
            let op = Desc::new(Kind::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)?;
            op.set_descs(Attr::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, &[&pw])?;
            op.set_descs(Attr::CUDNN_ATTR_OPERATION_POINTWISE_XDESC, &[&input])?;
            if let Some(b) = &operand {
                op.set_descs(Attr::CUDNN_ATTR_OPERATION_POINTWISE_BDESC, &[b])?;
            }
            op.set_descs(Attr::CUDNN_ATTR_OPERATION_POINTWISE_YDESC, &[output.as_ref().unwrap_or(&y)])?;
            op.finalize()?;
            ops.push(op);
            pointwise.push(pw);
            tensors.push(input);
            tensors.extend(operand);
            previous = output;
        }
        let graph = Desc::new(Kind::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
        graph.set(Attr::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, &[handle.0])?;
        graph.set_descs(Attr::CUDNN_ATTR_OPERATIONGRAPH_OPS, &ops.iter().collect::<Vec<_>>())?;
        graph.finalize()?;
        tensors.extend([x, w, y]);
        Ok(OpGraph { graph, _ops: ops, _conv: conv, _pointwise: pointwise, _tensors: tensors })
    }
}

/// A finalized pointwise descriptor for `node`, computing in fp32 (the attributes and their
/// types as cudnn-frontend's `PointWiseDescBuilder_v8` sets them).
fn pointwise_desc(node: &Node) -> Result<Desc> {
    let d = Desc::new(Kind::CUDNN_BACKEND_POINTWISE_DESCRIPTOR)?;
    d.set(Attr::CUDNN_ATTR_POINTWISE_MODE, &[node.mode])?;
    d.set(Attr::CUDNN_ATTR_POINTWISE_MATH_PREC, &[sys::cudnnDataType_t::CUDNN_DATA_FLOAT])?;
    match node.params {
        Params::None => {}
        Params::Relu { lower_clip, upper_clip, lower_clip_slope } => {
            d.set(Attr::CUDNN_ATTR_POINTWISE_NAN_PROPAGATION, &[sys::cudnnNanPropagation_t::CUDNN_NOT_PROPAGATE_NAN])?;
            d.set(Attr::CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, &[lower_clip])?;
            d.set(Attr::CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, &[upper_clip])?;
            d.set(Attr::CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, &[lower_clip_slope])?;
        }
        Params::Swish { beta } => d.set(Attr::CUDNN_ATTR_POINTWISE_SWISH_BETA, &[beta])?,
    }
    d.finalize()?;
    Ok(d)
}

/// Logical dims and element strides of the input, filter and output tensors (in that order)
/// in `layout`. The filter is `[K, C/G, R, S]`, KCRS or KRSC with C/G channels: the backend's
/// convolution descriptor has no group count, cuDNN infers the groups G from the input's C over
/// the filter's (as cudnn-frontend and PyTorch describe grouped convolutions).
fn operands(problem: &Conv2d, layout: Layout) -> Result<[([i64; 4], [i64; 4]); 3]> {
    let desc = |dims: [usize; 4]| Ok((dims.map(|v| v as i64), strides(dims, layout)?));
    Ok([desc(problem.input_shape())?, desc(problem.filter_shape())?, desc(problem.output_shape())?])
}

/// Dims and strides of a per-output-channel vector of `k` values broadcast over the output:
/// `[1, K, 1, 1]`, strides `[K, 1, 1, 1]` in NCHW and `[K, 1, K, K]` in NHWC (cudnn-frontend's).
fn channel_vector(k: usize, layout: Layout) -> Result<([i64; 4], [i64; 4])> {
    let dims = [1, k, 1, 1];
    Ok((dims.map(|v| v as i64), strides(dims, layout)?))
}

/// A finalized tensor descriptor; a virtual one lives only inside a fused engine (no pointer).
fn tensor(uid: i64, dtype: sys::cudnnDataType_t, (dims, strides): ([i64; 4], [i64; 4]), is_virtual: bool) -> Result<Desc> {
    let d = Desc::new(Kind::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    d.set(Attr::CUDNN_ATTR_TENSOR_DATA_TYPE, &[dtype])?;
    d.set(Attr::CUDNN_ATTR_TENSOR_DIMENSIONS, &dims)?;
    d.set(Attr::CUDNN_ATTR_TENSOR_STRIDES, &strides)?;
    d.set(Attr::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[uid])?;
    d.set(Attr::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[ALIGNMENT])?;
    if is_virtual {
        d.set(Attr::CUDNN_ATTR_TENSOR_IS_VIRTUAL, &[true])?;
    }
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
/// the same config from two heuristic modes is timed twice, within the search budget); then the
/// default-knob config of every engine no heuristic named; then the first engines' configs with
/// one knob moved ([`knob_variants`]). Failures go to `candidates` and are otherwise skipped.
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
    // The first configs of the first KNOB_ENGINES engines the heuristics name, each with one
    // knob moved at a time (issue 26). Settings cuDNN refuses are dropped without a record:
    // most of a knob's range is invalid for a given problem. They go last, so that a search cut
    // short by its budget tries what it tried before they existed.
    let mut varied = HashSet::new();
    let firsts: Vec<usize> = (0..configs.len()).filter(|&i| varied.insert(configs[i].engine)).take(KNOB_ENGINES).collect();
    let variants: Vec<Config> = firsts.into_iter().filter_map(|i| knob_variants(graph, &configs[i]).ok()).flatten().collect();
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
    configs.extend(variants);
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
    let engine = engine(graph, index)?;
    let notes = engine.numerical_notes()?;
    let cfg = Desc::new(Kind::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)?;
    cfg.set_descs(Attr::CUDNN_ATTR_ENGINECFG_ENGINE, &[&engine])?;
    cfg.finalize()?;
    Ok(Config { cfg, engine: index, source: "global", notes })
}

/// How many of the heuristics' engines get their knobs varied ([`knob_variants`]).
const KNOB_ENGINES: usize = 4;

/// The most values of one knob tried, spread over its range.
const KNOB_VALUES: usize = 8;

/// The values of a knob from `lo` to `hi` in steps of `stride`: all of them, or
/// [`KNOB_VALUES`] spread evenly over the range (both ends included).
fn knob_values(lo: i64, hi: i64, stride: i64) -> Vec<i64> {
    let stride = stride.max(1);
    if hi < lo {
        return Vec::new();
    }
    let steps = (hi - lo) / stride;
    if steps < KNOB_VALUES as i64 {
        return (0..=steps).map(|i| lo + i * stride).collect();
    }
    let last = KNOB_VALUES as i64 - 1;
    (0..=last).map(|i| lo + (i * steps / last) * stride).collect()
}

/// The settings one knob away from `base` (the knob kinds and values a config sets): for each
/// knob, each of its `values` other than the base's, the rest as in the base.
fn one_knob_away(base: &[(KnobType, i64)], knobs: &[(KnobType, Vec<i64>)]) -> Vec<Vec<(KnobType, i64)>> {
    let mut out = Vec::new();
    for (kind, values) in knobs {
        let current = base.iter().find(|(k, _)| k == kind).map(|&(_, v)| v);
        for &v in values.iter().filter(|&&v| Some(v) != current) {
            let mut setting: Vec<(KnobType, i64)> = base.iter().copied().filter(|(k, _)| k != kind).collect();
            setting.push((*kind, v));
            out.push(setting);
        }
    }
    out
}

/// `config`'s engine with one knob moved at a time ([`one_knob_away`]), each a finalized
/// config; settings cuDNN refuses are left out.
fn knob_variants(graph: &OpGraph, config: &Config) -> Result<Vec<Config>> {
    let engine = engine(graph, config.engine)?;
    let knobs = engine
        .get_descs(Attr::CUDNN_ATTR_ENGINE_KNOB_INFO, Kind::CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR)?
        .iter()
        .map(|info| {
            let kind = info.get_one::<KnobType>(Attr::CUDNN_ATTR_KNOB_INFO_TYPE)?;
            let (lo, hi) = (info.get_i64(Attr::CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE)?, info.get_i64(Attr::CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE)?);
            Ok((kind, knob_values(lo, hi, info.get_i64(Attr::CUDNN_ATTR_KNOB_INFO_STRIDE)?)))
        })
        .collect::<Result<Vec<_>>>()?;
    let base = config
        .cfg
        .get_descs(Attr::CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, Kind::CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)?
        .iter()
        .map(|c| Ok((c.get_one::<KnobType>(Attr::CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE)?, c.get_i64(Attr::CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE)?)))
        .collect::<Result<Vec<_>>>()?;
    let made = |setting: &[(KnobType, i64)]| -> Result<Config> {
        let choices = setting
            .iter()
            .map(|&(kind, value)| {
                let c = Desc::new(Kind::CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)?;
                c.set(Attr::CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, &[kind])?;
                c.set(Attr::CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, &[value])?;
                c.finalize()?;
                Ok(c)
            })
            .collect::<Result<Vec<_>>>()?;
        let cfg = Desc::new(Kind::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)?;
        cfg.set_descs(Attr::CUDNN_ATTR_ENGINECFG_ENGINE, &[&engine])?;
        cfg.set_descs(Attr::CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, &choices.iter().collect::<Vec<_>>())?;
        cfg.finalize()?;
        Ok(Config { cfg, engine: config.engine, source: "knobs", notes: config.notes.clone() })
    };
    Ok(one_knob_away(&base, &knobs).iter().filter_map(|s| made(s).ok()).collect())
}

/// Engine `index` of the graph, finalized; fails if it does not support the graph.
fn engine(graph: &OpGraph, index: i64) -> Result<Desc> {
    let engine = Desc::new(Kind::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    engine.set_descs(Attr::CUDNN_ATTR_ENGINE_OPERATION_GRAPH, &[&graph.graph])?;
    engine.set(Attr::CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &[index])?;
    engine.finalize()?;
    Ok(engine)
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

/// A variant pack of the tensors `uids` at `ptrs` (one each, in the same order) and `workspace`.
fn variant_pack(uids: &[i64], ptrs: &[u64], workspace: *mut c_void) -> Result<Desc> {
    if uids.len() != ptrs.len() {
        return Err(Error::Cudnn(format!("a variant pack of {} tensors given {} pointers", uids.len(), ptrs.len())));
    }
    let pack = Desc::new(Kind::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
    pack.set(Attr::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)?;
    let pointers: Vec<*mut c_void> = ptrs.iter().map(|&p| p as *mut c_void).collect();
    pack.set(Attr::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, &pointers)?;
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
    /// The variant pack's unique ids, and the device pointers of the search's buffers for them.
    uids: &'a [i64],
    ptrs: Vec<u64>,
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
        let pack = variant_pack(self.uids, &self.ptrs, workspace_ptr(self.gpu, workspace.as_ref())).map_err(|e| e.to_string())?;
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
        let e = no_engine(&[c(0, "excluded by Math::Fma: TENSOR_CORE note"), c(7, "first run failed: boom")], &[]);
        let Error::Cudnn(msg) = e else { panic!("not a cuDNN error: {e:?}") };
        assert!(msg.starts_with("no engine ran this graph (2 candidates; first: eng7 (global): first run failed: boom; eng0"), "{msg}");
        // A fused graph's error names its nodes, so the bench row says which graph no engine took.
        let nodes = epilogue_nodes(&"bias+relu".parse().unwrap()).unwrap();
        let Error::Cudnn(msg) = no_engine(&[c(3, "cudnnBackendFinalize: CUDNN_STATUS_NOT_SUPPORTED")], &nodes) else { panic!() };
        assert!(msg.starts_with("no engine ran this graph [conv -> add(bias) -> relu] (1 candidates; first: eng3 (global): cudnnBackendFinalize"), "{msg}");
    }

    #[test]
    fn knob_values_cover_small_ranges_and_spread_over_large_ones() {
        assert_eq!(knob_values(0, 3, 1), [0, 1, 2, 3]);
        assert_eq!(knob_values(2, 8, 2), [2, 4, 6, 8]);
        assert_eq!(knob_values(5, 5, 0), [5]);
        assert!(knob_values(3, 2, 1).is_empty());
        let wide = knob_values(0, 1000, 1);
        assert_eq!((wide.len(), wide[0], wide[KNOB_VALUES - 1]), (KNOB_VALUES, 0, 1000));
        assert!(wide.windows(2).all(|w| w[0] < w[1]));
        // On the stride: 0..=70 in steps of 10 is 8 values; 0..=100 spreads 8 of its 11.
        assert_eq!(knob_values(0, 70, 10).len(), 8);
        assert!(knob_values(0, 100, 10).iter().all(|v| v % 10 == 0));
    }

    #[test]
    fn settings_move_one_knob_at_a_time() {
        let (tile, split) = (KnobType(1), KnobType(3));
        let base = [(tile, 2), (split, 1)];
        let knobs = [(tile, vec![1, 2, 3]), (split, vec![1, 4])];
        let got = one_knob_away(&base, &knobs);
        // tile 1 and 3 (split kept), split 4 (tile kept): the base itself is not repeated.
        assert_eq!(got.len(), 3);
        assert!(got.contains(&vec![(split, 1), (tile, 1)]));
        assert!(got.contains(&vec![(split, 1), (tile, 3)]));
        assert!(got.contains(&vec![(tile, 2), (split, 4)]));
        // A knob the base leaves at its default is set explicitly, to each value.
        assert_eq!(one_knob_away(&[], &knobs).len(), 5);
    }

    #[test]
    fn default_budget() {
        let b = SearchBudget::default();
        assert_eq!((b.warmup, b.runs, b.max_candidates, b.max_seconds, b.max_workspace_bytes), (1, 3, 256, 3.0, 4 << 30));
    }

    fn ep(spec: &str) -> Epilogue {
        spec.parse().unwrap()
    }

    #[test]
    fn activations_map_to_pointwise_modes_with_their_parameters() {
        let relu = |upper_clip: f64, lower_clip_slope: f64| Some(Node::unary(Pw::CUDNN_POINTWISE_RELU_FWD, Params::Relu { lower_clip: 0.0, upper_clip, lower_clip_slope }));
        let f32_max = f32::MAX as f64;
        assert_eq!(activation_node(Activation::Identity), None);
        assert_eq!(activation_node(Activation::Relu), relu(f32_max, 0.0));
        assert_eq!(activation_node(Activation::Relu6), relu(6.0, 0.0));
        assert_eq!(activation_node(Activation::LeakyRelu(0.2)), relu(f32_max, 0.2f32 as f64));
        assert_eq!(activation_node(Activation::Silu), Some(Node::unary(Pw::CUDNN_POINTWISE_SWISH_FWD, Params::Swish { beta: 1.0 })));
        assert_eq!(activation_node(Activation::GeluTanh), Some(Node::unary(Pw::CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, Params::None)));
        assert_eq!(activation_node(Activation::GeluErf), Some(Node::unary(Pw::CUDNN_POINTWISE_GELU_FWD, Params::None)));
        // Each node computes what the CPU reference does, read as cuDNN documents its modes.
        let apply = |n: &Node, v: f64| match (n.mode, n.params) {
            (Pw::CUDNN_POINTWISE_RELU_FWD, Params::Relu { lower_clip, upper_clip, lower_clip_slope }) => {
                if v < lower_clip { lower_clip + lower_clip_slope * (v - lower_clip) } else { v.min(upper_clip) }
            }
            (Pw::CUDNN_POINTWISE_SWISH_FWD, Params::Swish { beta }) => v / (1.0 + (-beta * v).exp()),
            (Pw::CUDNN_POINTWISE_GELU_FWD, _) => Activation::GeluErf.apply(v),
            (Pw::CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, _) => Activation::GeluTanh.apply(v),
            other => panic!("unexpected {other:?}"),
        };
        for act in Activation::ALL.into_iter().chain([Activation::LeakyRelu(-0.5), Activation::LeakyRelu(3.0)]) {
            for v in [-7.5, -1.0, -0.01, 0.0, 0.3, 2.0, 6.5, 40.0] {
                let want = act.apply(v);
                let got = activation_node(act).map_or(v, |n| apply(&n, v));
                assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "{} at {v}: {got} vs {want}", act.name());
            }
        }
        // Every activation node is unary: it reads only the previous node's output.
        assert!(Activation::ALL.into_iter().filter_map(activation_node).all(|n| n.operand.is_none()));
    }

    #[test]
    fn the_chain_follows_the_epilogue_in_order() {
        let modes = |spec: &str| epilogue_nodes(&ep(spec)).unwrap().iter().map(|n| (n.mode, n.operand.map(Operand::uid))).collect::<Vec<_>>();
        use Pw::{CUDNN_POINTWISE_ADD as ADD, CUDNN_POINTWISE_MUL as MUL, CUDNN_POINTWISE_RELU_FWD as RELU};
        assert!(epilogue_nodes(&Epilogue::NONE).unwrap().is_empty());
        // beta without a residual is the bare convolution.
        assert!(epilogue_nodes(&Epilogue::NONE.with_beta(3.0)).unwrap().is_empty());
        assert_eq!(modes("bias+relu"), vec![(ADD, Some(UID_BIAS)), (RELU, None)]);
        assert_eq!(modes("relu"), vec![(RELU, None)]);
        assert_eq!(modes("scale+bias+residual"), vec![(MUL, Some(UID_SCALE)), (ADD, Some(UID_BIAS)), (ADD, Some(UID_RESIDUAL))]);
        assert_eq!(
            modes("alpha=2+scale+bias+residual+beta=0.5+relu"),
            vec![(MUL, Some(UID_ALPHA)), (MUL, Some(UID_SCALE)), (ADD, Some(UID_BIAS)), (MUL, Some(UID_INV_BETA)), (ADD, Some(UID_RESIDUAL)), (MUL, Some(UID_BETA)), (RELU, None)]
        );
        // beta 0 reads no residual.
        assert_eq!(modes("bias+residual+beta=0"), vec![(ADD, Some(UID_BIAS))]);
        // Constants carry their values: alpha, 1/beta, beta.
        assert_eq!(constant_vectors(&epilogue_nodes(&ep("alpha=2+residual+beta=0.5")).unwrap()), vec![(UID_ALPHA, 2.0), (UID_INV_BETA, 2.0), (UID_BETA, 0.5)]);
        assert!(constant_vectors(&epilogue_nodes(&ep("scale+bias+residual+gelu")).unwrap()).is_empty());
        // A beta whose inverse is not a normal fp32 number is refused with the reason.
        let e = epilogue_nodes(&ep("residual").with_beta(1e-39)).unwrap_err();
        assert!(e.to_string().contains("no finite fp32 inverse"), "{e}");
        assert!(epilogue_nodes(&Epilogue::NONE.with_alpha(f32::INFINITY)).is_err());
        assert_eq!(describe_nodes(&epilogue_nodes(&ep("alpha=2+scale+bias+leaky_relu:0.25")).unwrap()), "conv -> mul(2) -> mul(scale) -> add(bias) -> relu[slope 0.25]");
        assert_eq!(describe_nodes(&epilogue_nodes(&ep("residual+relu6")).unwrap()), "conv -> add(residual) -> relu[upper 6]");
        assert_eq!(describe_nodes(&[]), "conv");
    }

    #[test]
    fn the_chain_computes_the_epilogue() {
        // The chain evaluated in f64 with the operands' values equals Epilogue::apply.
        let (acc, scale, bias, res) = (1.7, 0.8, -0.4, 2.5);
        for spec in ["bias+relu", "scale+bias+residual+silu", "alpha=-1.5+scale+residual+beta=0.25+gelu", "alpha=3+residual+beta=-2+relu6", "residual+beta=0+gelu_tanh", "alpha=0.5"] {
            let e = ep(spec);
            let mut v = acc;
            for n in epilogue_nodes(&e).unwrap() {
                let b = match n.operand {
                    None => 0.0,
                    Some(Operand::Scale) => scale,
                    Some(Operand::Bias) => bias,
                    Some(Operand::Residual) => res,
                    Some(Operand::Constant { value, .. }) => value as f64,
                };
                v = match n.mode {
                    Pw::CUDNN_POINTWISE_MUL => v * b,
                    Pw::CUDNN_POINTWISE_ADD => v + b,
                    _ => e.activation.apply(v),
                };
            }
            let want = e.apply(acc, scale, bias, res);
            assert!((v - want).abs() < 1e-6 * want.abs().max(1.0), "{spec}: {v} vs {want}");
        }
    }

    #[test]
    fn uids_are_unique_and_only_operands_and_constants_join_the_pack() {
        for spec in ["none", "relu", "gelu", "bias+relu", "scale+bias+residual+silu", "alpha=2+scale+bias+residual+beta=0.5+relu6", "alpha=0.5+leaky_relu"] {
            let nodes = epilogue_nodes(&ep(spec)).unwrap();
            let uids = pack_uids(&nodes);
            assert_eq!(&uids[..3], &[UID_X, UID_W, UID_Y], "{spec}");
            let mut sorted = uids.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), uids.len(), "{spec}: {uids:?}");
            // Real tensors stay under the virtual ones' ids, which number the nodes.
            assert!(uids.iter().all(|&u| (1..UID_VIRTUAL).contains(&u)), "{spec}");
            assert!(UID_VIRTUAL + nodes.len() as i64 <= 2 * UID_VIRTUAL);
        }
        // An epilogue without operands makes no extra pointers: relu alone is X, W, Y.
        assert_eq!(pack_uids(&epilogue_nodes(&ep("relu")).unwrap()), vec![UID_X, UID_W, UID_Y]);
        assert_eq!(pack_uids(&epilogue_nodes(&ep("gelu_tanh")).unwrap()), vec![UID_X, UID_W, UID_Y]);
        // alpha alone adds the graph's own vector, not a caller's buffer.
        assert_eq!(pack_uids(&epilogue_nodes(&ep("alpha=2+silu")).unwrap()), vec![UID_X, UID_W, UID_Y, UID_ALPHA]);
        assert_eq!(pack_uids(&epilogue_nodes(&ep("bias+residual+relu")).unwrap()), vec![UID_X, UID_W, UID_Y, UID_BIAS, UID_RESIDUAL]);
    }

    #[test]
    fn pack_pointers_follow_the_uids() {
        let nodes = epilogue_nodes(&ep("alpha=2+scale+bias+residual+beta=0.5+relu")).unwrap();
        let uids = pack_uids(&nodes);
        let core = [0x1000, 0x2000, 0x3000];
        let operands = [Some(0x4000), Some(0x5000), Some(0x6000)];
        let constants = [(UID_ALPHA, 0x7000), (UID_INV_BETA, 0x8000), (UID_BETA, 0x9000)];
        let ptrs = pack_pointers(&uids, core, operands, &constants).unwrap();
        assert_eq!(uids, vec![1, 2, 3, UID_ALPHA, UID_SCALE, UID_BIAS, UID_INV_BETA, UID_RESIDUAL, UID_BETA]);
        assert_eq!(ptrs, vec![0x1000, 0x2000, 0x3000, 0x7000, 0x4000, 0x5000, 0x8000, 0x6000, 0x9000]);
        // No operands: the bare pack.
        assert_eq!(pack_pointers(&[1, 2, 3], core, [None; 3], &[]).unwrap(), core.to_vec());
        // A uid with nothing to point to is an error, not a pack cuDNN would read garbage through.
        assert!(pack_pointers(&uids, core, [None, Some(0x5000), Some(0x6000)], &constants).unwrap_err().to_string().contains("uid 4"));
        assert!(pack_pointers(&uids, core, operands, &constants[..1]).is_err());
    }

    #[test]
    fn operands_are_checked_against_the_epilogue() {
        let e = ep("scale+residual+relu");
        let (k, out) = (8, 100);
        assert_eq!(operand_addresses(&e, k, out, [Some((0x100, 8)), None, Some((0x200, 100))]).unwrap(), [Some(0x100), None, Some(0x200)]);
        // None given where the epilogue reads none.
        assert_eq!(operand_addresses(&ep("relu"), k, out, [None; 3]).unwrap(), [None; 3]);
        let err = |given| operand_addresses(&e, k, out, given).unwrap_err().to_string();
        assert!(err([None, None, Some((0x200, 100))]).contains("reads a scale, and none was given"));
        assert!(err([Some((0x100, 8)), Some((0x300, 8)), Some((0x200, 100))]).contains("a bias was given, but the epilogue"));
        assert!(matches!(operand_addresses(&e, k, out, [Some((0x100, 7)), None, Some((0x200, 100))]), Err(Error::BufferSize { tensor: "scale", expected: 8, got: 7 })));
        assert!(matches!(operand_addresses(&e, k, out, [Some((0x100, 8)), None, Some((0x200, 99))]), Err(Error::BufferSize { tensor: "residual", expected: 100, got: 99 })));
        assert!(err([Some((0x108, 8)), None, Some((0x200, 100))]).contains("not 16-byte aligned"));
    }

    #[test]
    fn channel_vectors_broadcast_over_the_output() {
        assert_eq!(channel_vector(64, Layout::Nchw).unwrap(), ([1, 64, 1, 1], [64, 1, 1, 1]));
        assert_eq!(channel_vector(64, Layout::Nhwc).unwrap(), ([1, 64, 1, 1], [64, 1, 64, 64]));
        assert!(channel_vector(64, Layout::Hwcn).is_err());
    }
}
