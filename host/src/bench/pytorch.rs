//! PyTorch's `conv2d` on the same shapes, timed in the same run by a child `python3` (the
//! script is `pytorch.py` beside this file, embedded in the binary), so every table shows what a
//! PyTorch user gets next to our in-process cuDNN baseline. A shape with a fused epilogue is the
//! whole layer in eager mode, as a PyTorch user writes it ([`eager_calls`]).

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};

use crate::timing::{TimingMethod, GRAPH_MAX_BATCH, GRAPH_MIN_BATCH, GRAPH_TARGET_MS};
use crate::{Activation, Conv2d, Epilogue, Error, Result};

const SCRIPT: &str = include_str!("pytorch.py");

/// Whether to time PyTorch (`--pytorch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TorchMode {
    /// When `python3` with a CUDA-enabled torch is present; otherwise the column says why not.
    Auto,
    /// Always; a missing torch is an error.
    On,
    /// Never.
    Off,
}

/// One shape for the script: its label (the key of the answer), geometry, how many input sets
/// to rotate over, and which configurations to time (`fp32`, `tf32`, `fp16`).
#[derive(Clone, Debug)]
pub struct TorchShape {
    pub label: String,
    pub problem: Conv2d,
    pub sets: usize,
    pub configs: Vec<&'static str>,
}

/// What the PyTorch run gave: per (shape label, configuration) a median time, or why none.
#[derive(Clone, Debug, serde::Serialize)]
pub enum TorchOutcome {
    Ran { torch: String, cudnn: Option<String>, times: HashMap<String, Option<f64>> },
    NotRun(String),
}

impl TorchOutcome {
    /// The median ms for `label` in `config`, or the reason there is none.
    pub fn time(&self, label: &str, config: &str) -> std::result::Result<f64, String> {
        match self {
            TorchOutcome::NotRun(why) => Err(why.clone()),
            TorchOutcome::Ran { times, .. } => match times.get(&key(label, config)) {
                Some(Some(ms)) if ms.is_finite() && *ms > 0.0 => Ok(*ms),
                Some(_) => Err("PyTorch failed on this shape (see the log)".into()),
                None => Err("not timed".into()),
            },
        }
    }

    /// `torch 2.11.0, cuDNN 9.19.0`, or why PyTorch did not run.
    pub fn describe(&self) -> String {
        match self {
            TorchOutcome::Ran { torch, cudnn, .. } => format!("torch {torch}, cuDNN {}", cudnn.as_deref().unwrap_or("?")),
            TorchOutcome::NotRun(why) => format!("PyTorch NOT RUN: {why}"),
        }
    }

    /// The cuDNN PyTorch ran, where it is newer than `in_process` (the one this process
    /// loaded): the in-process baseline is then not the newest cuDNN on the machine, as the
    /// bench's rule asks (`run-gpu.sh` puts PyTorch's copy first on the library path).
    pub fn newer_cudnn(&self, in_process: &str) -> Option<String> {
        let TorchOutcome::Ran { cudnn: Some(theirs), .. } = self else { return None };
        (version_key(theirs)? > version_key(in_process)?).then(|| theirs.clone())
    }
}

/// "9.19.0" as (9, 19, 0); None for anything else.
fn version_key(v: &str) -> Option<(u32, u32, u32)> {
    let mut it = v.trim().split('.').map(|x| x.parse::<u32>().ok());
    Some((it.next()??, it.next()??, it.next().unwrap_or(Some(0))?))
}

fn key(label: &str, config: &str) -> String {
    format!("{label}|{config}")
}

/// The JSON request the script reads on stdin (per shape its extents, per-axis `pad`, `stride`
/// and `dilation`, and `groups`: F.conv2d's, the weight K x C/groups x R x S; the output's
/// `out_hw`, the residual's; the `epilogue`, [`epilogue_json`]); `method` is how the script times (as
/// [`crate::timing`] does: CUDA graph replays, or back-to-back calls between events), and
/// `graph_batch` sizes its graphs as [`crate::timing::graph_batch`] sizes ours.
pub fn request(device: usize, shapes: &[TorchShape], seed: u64, method: TimingMethod) -> serde_json::Value {
    let shapes: Vec<_> = shapes
        .iter()
        .map(|s| {
            let p = &s.problem;
            let (out_h, out_w) = p.output_hw();
            serde_json::json!({
                "label": s.label, "n": p.n, "c": p.c, "h": p.h, "w": p.w, "k": p.k, "r": p.r, "s": p.s,
                "pad": [p.pad.0, p.pad.1], "stride": [p.stride.0, p.stride.1], "dilation": [p.dilation.0, p.dilation.1],
                "groups": p.groups, "out_hw": [out_h, out_w], "epilogue": epilogue_json(&p.epilogue), "sets": s.sets, "configs": s.configs,
            })
        })
        .collect();
    let graph_batch = serde_json::json!([GRAPH_TARGET_MS, GRAPH_MIN_BATCH, GRAPH_MAX_BATCH]);
    serde_json::json!({ "device": device, "seed": seed, "trials": 15, "timing": method.name(), "graph_batch": graph_batch, "shapes": shapes })
}

/// An epilogue as the script reads it: which operands there are, `alpha` and `beta` (the
/// fp32 values the kernels use), the activation's name (`Activation::name` without a slope) and
/// the LeakyReLU `slope` (0 for the other activations, which read none); `spec` is the CLI's
/// spelling, for the log.
pub fn epilogue_json(ep: &Epilogue) -> serde_json::Value {
    let (act, slope) = match ep.activation {
        Activation::LeakyRelu(slope) => ("leaky_relu".to_string(), slope),
        a => (a.name(), 0.0),
    };
    serde_json::json!({
        "spec": ep.to_string(), "scale": ep.scale, "bias": ep.bias, "residual": ep.residual,
        "alpha": ep.alpha(), "beta": ep.beta(), "act": act, "slope": slope,
    })
}

/// The eager calls the script makes for one layer with epilogue `ep`, in order (its `layer`),
/// as the rows' notes name them: `conv2d+bias` (the bias inside `F.conv2d`, where nothing comes
/// between the sum and it) or `conv2d`; `addcmul` (bias + alpha * y * scale, one pass), `mul_`
/// (scale or alpha alone), `add` (bias + alpha * y); `add_` (the residual, times beta); the
/// activation in place where PyTorch has that form (`relu_`, `relu6_`, `leaky_relu_`, `silu_`),
/// else `gelu_tanh` or `gelu`.
///
/// ```
/// use convrs::bench::pytorch::eager_calls;
/// use convrs::Epilogue;
/// assert_eq!(eager_calls(&"bias+residual+relu".parse::<Epilogue>()?), ["conv2d+bias", "add_", "relu_"]);
/// assert_eq!(eager_calls(&"scale+bias+silu".parse::<Epilogue>()?), ["conv2d", "addcmul", "silu_"]);
/// # Ok::<(), convrs::Error>(())
/// ```
pub fn eager_calls(ep: &Epilogue) -> Vec<&'static str> {
    let alpha = ep.alpha() != 1.0;
    let mut calls = vec![if ep.bias && !ep.scale && !alpha { "conv2d+bias" } else { "conv2d" }];
    match (ep.scale, ep.bias) {
        (true, true) => calls.push("addcmul"),
        (true, false) => calls.extend(if alpha { &["mul_", "mul_"][..] } else { &["mul_"][..] }),
        (false, true) if alpha => calls.push("add"),
        (false, false) if alpha => calls.push("mul_"),
        (false, _) => {}
    }
    if ep.residual {
        calls.push("add_");
    }
    calls.extend(match ep.activation {
        Activation::Identity => None,
        Activation::Relu => Some("relu_"),
        Activation::Relu6 => Some("relu6_"),
        Activation::LeakyRelu(_) => Some("leaky_relu_"),
        Activation::Silu => Some("silu_"),
        Activation::GeluTanh => Some("gelu_tanh"),
        Activation::GeluErf => Some("gelu"),
    });
    calls
}

/// Parses the script's last stdout line.
pub fn parse_answer(stdout: &str) -> Result<TorchOutcome> {
    let bad = |why: String| Error::InvalidArgument(format!("PyTorch timing script: {why}"));
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).ok_or_else(|| bad("printed nothing".into()))?;
    let v: serde_json::Value = serde_json::from_str(last).map_err(|e| bad(format!("unreadable answer ({e}): {last}")))?;
    let torch = v["torch"].as_str().ok_or_else(|| bad("no torch version in the answer".into()))?.to_string();
    let cudnn = v["cudnn"].as_str().map(str::to_string);
    let times = v["times"].as_object().ok_or_else(|| bad("no times in the answer".into()))?;
    let times = times.iter().map(|(k, t)| (k.clone(), t.as_f64())).collect();
    Ok(TorchOutcome::Ran { torch, cudnn, times })
}

/// The interpreter to use: `CONVRS_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("CONVRS_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Is there a python with a CUDA-enabled torch? `Err` says why not.
fn probe() -> std::result::Result<(), String> {
    let py = python();
    let out = Command::new(&py)
        .args(["-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 3)"])
        .output()
        .map_err(|e| format!("cannot start `{py}`: {e}"))?;
    match out.status.code() {
        Some(0) => Ok(()),
        Some(3) => Err(format!("`{py}` has torch but torch sees no CUDA device")),
        _ => Err(format!("`{py}` cannot import torch: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("").trim())),
    }
}

/// Times `shapes` in PyTorch on GPU `device` per `mode` and `method`; progress lines of the script go to stderr.
pub fn run(mode: TorchMode, device: usize, shapes: &[TorchShape], seed: u64, method: TimingMethod) -> Result<TorchOutcome> {
    if mode == TorchMode::Off {
        return Ok(TorchOutcome::NotRun("--pytorch off".into()));
    }
    if let Err(why) = probe() {
        return match mode {
            TorchMode::On => Err(Error::InvalidArgument(format!("--pytorch on: {why}"))),
            _ => Ok(TorchOutcome::NotRun(why)),
        };
    }
    let py = python();
    let mut child = Command::new(&py)
        .args(["-c", SCRIPT])
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Error::InvalidArgument(format!("cannot start `{py}`: {e}")))?;
    let req = request(device, shapes, seed, method).to_string();
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(req.as_bytes()).map_err(|e| Error::InvalidArgument(format!("writing to `{py}`: {e}")))?;
    }
    let out = child.wait_with_output().map_err(|e| Error::InvalidArgument(format!("waiting for `{py}`: {e}")))?;
    let answer = if out.status.success() {
        parse_answer(&String::from_utf8_lossy(&out.stdout))
    } else {
        Err(Error::InvalidArgument(format!("the PyTorch timing script exited with {}", out.status)))
    };
    match (answer, mode) {
        (Ok(a), _) => Ok(a),
        (Err(e), TorchMode::On) => Err(e),
        (Err(e), _) => Ok(TorchOutcome::NotRun(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_cudnn_compares_versions_numerically() {
        let ran = |v: Option<&str>| TorchOutcome::Ran { torch: "2.11".into(), cudnn: v.map(String::from), times: HashMap::new() };
        assert_eq!(ran(Some("9.19.0")).newer_cudnn("9.14.0").as_deref(), Some("9.19.0"));
        assert_eq!(ran(Some("9.19.0")).newer_cudnn("9.19.0"), None);
        assert_eq!(ran(Some("9.9.0")).newer_cudnn("9.14.0"), None, "9.9 is older than 9.14, not newer");
        assert_eq!(ran(Some("10.0.1")).newer_cudnn("9.19.0").as_deref(), Some("10.0.1"));
        assert_eq!(ran(Some("?")).newer_cudnn("9.14.0"), None);
        assert_eq!(ran(None).newer_cudnn("9.14.0"), None);
        assert_eq!(TorchOutcome::NotRun("no torch".into()).newer_cudnn("9.14.0"), None);
    }

    #[test]
    fn request_carries_per_axis_geometry() {
        let p = Conv2d { pad: (1, 2), stride: (2, 1), dilation: (1, 3), ..Conv2d::new(2, 3, 9, 10, 4, 3, 3) };
        let r = request(1, &[TorchShape { label: "x".into(), problem: p, sets: 3, configs: vec!["fp16"] }], 7, TimingMethod::Graph);
        assert_eq!((r["device"].as_u64(), r["timing"].as_str()), (Some(1), Some("graph")));
        assert_eq!(r["graph_batch"], serde_json::json!([0.2, 8, 256]));
        let s = &r["shapes"][0];
        assert_eq!((s["pad"][1].as_u64(), s["stride"][0].as_u64(), s["dilation"][1].as_u64()), (Some(2), Some(2), Some(3)));
        assert_eq!((s["w"].as_u64(), s["sets"].as_u64(), s["configs"][0].as_str()), (Some(10), Some(3), Some("fp16")));
        assert_eq!(s["groups"].as_u64(), Some(1));
        // The residual's extents: (9 + 2 - 3) / 2 + 1 = 5 rows, (10 + 4 - 7) / 1 + 1 = 8 columns.
        assert_eq!(s["out_hw"], serde_json::json!([5, 8]));
        assert_eq!(s["epilogue"], serde_json::json!({ "spec": "none", "scale": false, "bias": false, "residual": false, "alpha": 1.0, "beta": 1.0, "act": "identity", "slope": 0.0 }));
    }

    #[test]
    fn request_carries_the_epilogue() {
        let ep: Epilogue = "alpha=0.5+scale+bias+residual+beta=2+leaky_relu:0.2".parse().unwrap();
        let p = Conv2d::new(2, 8, 9, 9, 16, 3, 3).with_pad(1).with_epilogue(ep);
        let r = request(0, &[TorchShape { label: "x".into(), problem: p, sets: 2, configs: vec!["bf16"] }], 1, TimingMethod::Events);
        let e = &r["shapes"][0]["epilogue"];
        assert_eq!((e["scale"].as_bool(), e["bias"].as_bool(), e["residual"].as_bool()), (Some(true), Some(true), Some(true)));
        assert_eq!((e["alpha"].as_f64(), e["beta"].as_f64(), e["act"].as_str()), (Some(0.5), Some(2.0), Some("leaky_relu")));
        // The slope the kernels use (fp32), not its decimal spelling.
        assert_eq!(e["slope"].as_f64(), Some(0.2f32 as f64));
        assert_eq!(e["spec"].as_str(), Some(ep.to_string().as_str()));
        assert_eq!(r["shapes"][0]["out_hw"], serde_json::json!([9, 9]));
        assert_eq!(epilogue_json(&Epilogue::NONE.with_activation(Activation::GeluTanh))["act"], "gelu_tanh");
    }

    /// Runs the script's `epilogue_of`, `activation` and `layer` in python3 on one-element fake
    /// tensors (a fake `torch` and `F` that compute on plain floats and log each call) for each
    /// of `cases` (`shape`: one shape of a request; `x`, `wt`, `scale`, `bias`, `res`: values);
    /// answers per case the layer's value and the calls it made. `None` where there is no python3.
    fn script_layer(cases: &[serde_json::Value]) -> Option<Vec<serde_json::Value>> {
        const PROBE: &str = r#"import ast, json, math, sys, types
d = json.load(sys.stdin)
fns = [n for n in ast.parse(d['script']).body if isinstance(n, ast.FunctionDef) and n.name in ('epilogue_of', 'activation', 'layer')]
calls = []
class T:
    def __init__(self, v): self.v = float(v)
    def view(self, *shape): return self
    def mul_(self, o):
        calls.append('mul_'); self.v *= o.v if isinstance(o, T) else o; return self
    def add_(self, o, alpha=1):
        calls.append('add_'); self.v += alpha * o.v; return self
def act(name, f):
    def g(y, *args, inplace=False, approximate='none'):
        calls.append(name(inplace, approximate)); v = f(y.v, approximate, *args)
        if inplace or name(inplace, approximate).endswith('_'):
            y.v = v; return y
        return T(v)
    return g
def conv2d(x, wt, bias=None, **kw):
    calls.append('conv2d' if bias is None else 'conv2d+bias'); return T(x.v * wt.v + (0 if bias is None else bias.v))
def gelu(v, approximate):
    if approximate == 'tanh':
        return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))
F = types.SimpleNamespace(
    conv2d=conv2d,
    relu_=act(lambda i, a: 'relu_', lambda v, a: max(v, 0.0)),
    relu6=act(lambda i, a: 'relu6_' if i else 'relu6', lambda v, a: min(max(v, 0.0), 6.0)),
    leaky_relu_=act(lambda i, a: 'leaky_relu_', lambda v, a, slope: v if v >= 0 else slope * v),
    silu=act(lambda i, a: 'silu_' if i else 'silu', lambda v, a: v / (1 + math.exp(-v))),
    gelu=act(lambda i, a: 'gelu_tanh' if a == 'tanh' else 'gelu', gelu),
)
def addcmul(a, b, c, value=1):
    calls.append('addcmul'); return T(a.v + value * b.v * c.v)
def add(a, b, alpha=1):
    calls.append('add'); return T(a.v + alpha * b.v)
ns = {'F': F, 'torch': types.SimpleNamespace(addcmul=addcmul, add=add)}
exec(compile(ast.Module(body=fns, type_ignores=[]), 'pytorch.py', 'exec'), ns)
out = []
for c in d['cases']:
    calls.clear()
    forward = ns['layer'](ns['epilogue_of'](c['shape']), {})
    y = forward(T(c['x']), T(c['wt']), T(c['scale']), T(c['bias']), T(c['res']))
    out.append({'value': y.v, 'calls': list(calls)})
print(json.dumps(out))
"#;
        let Ok(mut child) = Command::new(python()).args(["-c", PROBE]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn() else {
            eprintln!("python3 not found: the PyTorch script's epilogue was not checked");
            return None;
        };
        child.stdin.take().unwrap().write_all(serde_json::json!({ "script": SCRIPT, "cases": cases }).to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "the probe of pytorch.py's layer failed");
        Some(serde_json::from_slice(&out.stdout).unwrap())
    }

    /// Every combination of operands, alpha and beta (beta only with a residual), with `act`.
    fn epilogues(act: Activation) -> Vec<Epilogue> {
        let mut all = Vec::new();
        for mask in 0..8 {
            let mut ep = Epilogue::NONE.with_activation(act);
            for (bit, with) in [(1, Epilogue::with_scale as fn(Epilogue) -> Epilogue), (2, Epilogue::with_bias), (4, Epilogue::with_residual)] {
                if mask & bit != 0 {
                    ep = with(ep);
                }
            }
            for alpha in [1.0, 0.5] {
                let betas: &[f32] = if ep.residual { &[1.0, -0.75] } else { &[1.0] };
                all.extend(betas.iter().map(|&beta| ep.with_alpha(alpha).with_beta(beta)));
            }
        }
        all
    }

    #[test]
    fn the_script_computes_the_epilogue_with_the_eager_calls_named() {
        let acts = Activation::ALL.into_iter().chain([Activation::LeakyRelu(0.2)]);
        let eps: Vec<Epilogue> = acts.flat_map(epilogues).collect();
        // Sums of both signs (x * wt), so each activation's two sides are seen.
        let values = [(1.5, -0.8, 0.7, 0.4, -0.9), (1.5, 0.8, 1.3, -0.6, 0.25)];
        let mut cases = Vec::new();
        for ep in &eps {
            let p = Conv2d::new(1, 4, 3, 3, 4, 1, 1).with_epilogue(*ep);
            let shape = request(0, &[TorchShape { label: "x".into(), problem: p, sets: 1, configs: vec!["fp32"] }], 1, TimingMethod::Graph)["shapes"][0].clone();
            for (x, wt, scale, bias, res) in values {
                cases.push((*ep, x * wt, scale, bias, res, serde_json::json!({ "shape": shape, "x": x, "wt": wt, "scale": scale, "bias": bias, "res": res })));
            }
        }
        let Some(answers) = script_layer(&cases.iter().map(|c| c.5.clone()).collect::<Vec<_>>()) else { return };
        for ((ep, acc, scale, bias, res, _), a) in cases.iter().zip(&answers) {
            let want = ep.apply(*acc, *scale, *bias, *res);
            let got = a["value"].as_f64().unwrap();
            // The fp32 GELU constants of the Rust reference against Python's exact ones.
            assert!((got - want).abs() <= 1e-6 * (1.0 + want.abs()), "{ep}: script {got}, reference {want}");
            assert_eq!(a["calls"], serde_json::json!(eager_calls(ep)), "{ep}");
        }
        // A request without an epilogue (an older convrs) is the bare convolution, one call.
        let mut old = cases[0].5.clone();
        old["shape"].as_object_mut().unwrap().remove("epilogue");
        let a = &script_layer(&[old]).unwrap()[0];
        assert_eq!((a["value"].as_f64(), a["calls"].clone()), (Some(1.5 * -0.8), serde_json::json!(["conv2d"])));
    }

    #[test]
    fn eager_calls_put_the_bias_in_conv2d_only_with_nothing_before_it() {
        let calls = |spec: &str| eager_calls(&spec.parse::<Epilogue>().unwrap());
        assert_eq!(calls("none"), ["conv2d"]);
        assert_eq!(calls("bias"), ["conv2d+bias"]);
        assert_eq!(calls("alpha=2+bias+gelu_tanh"), ["conv2d", "add", "gelu_tanh"]);
        assert_eq!(calls("scale+relu6"), ["conv2d", "mul_", "relu6_"]);
        assert_eq!(calls("alpha=2+scale"), ["conv2d", "mul_", "mul_"]);
        assert_eq!(calls("alpha=2+scale+bias+residual+beta=0.5+gelu"), ["conv2d", "addcmul", "add_", "gelu"]);
        assert_eq!(calls("alpha=2+residual"), ["conv2d", "mul_", "add_"]);
    }

    /// What the script's `weight_shape` and `conv_kwargs` make of `shape` (one shape of a
    /// request), run alone in python3; `None` where there is no python3.
    fn script_geometry(shape: &serde_json::Value) -> Option<serde_json::Value> {
        const PROBE: &str = "import ast, json, sys\n\
d = json.load(sys.stdin)\n\
fns = [n for n in ast.parse(d['script']).body if isinstance(n, ast.FunctionDef) and n.name in ('weight_shape', 'conv_kwargs')]\n\
ns = {}\n\
exec(compile(ast.Module(body=fns, type_ignores=[]), 'pytorch.py', 'exec'), ns)\n\
print(json.dumps({'weight': list(ns['weight_shape'](d['shape'])), 'kw': ns['conv_kwargs'](d['shape'])}))\n";
        let Ok(mut child) = Command::new(python()).args(["-c", PROBE]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn() else {
            eprintln!("python3 not found: the PyTorch script's geometry was not checked");
            return None;
        };
        child.stdin.take().unwrap().write_all(serde_json::json!({ "script": SCRIPT, "shape": shape }).to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "the probe of pytorch.py failed");
        Some(serde_json::from_slice(&out.stdout).unwrap())
    }

    #[test]
    fn the_script_convolves_in_the_requested_groups() {
        // N=2, C=8, K=8, 3x3 in 4 groups: torch's weight is 8 x 2 x 3 x 3 and F.conv2d gets groups=4.
        let grouped = Conv2d::new(2, 8, 9, 9, 8, 3, 3).with_pad(1).with_groups(4);
        let depthwise = Conv2d { pad: (1, 2), ..Conv2d::new(2, 16, 9, 9, 32, 3, 5).with_stride(2).with_groups(16) };
        let shapes: Vec<_> = [grouped, depthwise].into_iter().map(|problem| TorchShape { label: problem.to_string(), problem, sets: 2, configs: vec!["fp32"] }).collect();
        let r = request(0, &shapes, 1, TimingMethod::Events);
        assert_eq!((r["shapes"][0]["groups"].as_u64(), r["shapes"][1]["groups"].as_u64()), (Some(4), Some(16)));
        let Some(g) = script_geometry(&r["shapes"][0]) else { return };
        assert_eq!(g["weight"], serde_json::json!([8, 2, 3, 3]));
        assert_eq!(g["kw"], serde_json::json!({ "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 4 }));
        // Depthwise with channel multiplier 2: 32 filters of one channel each.
        let g = script_geometry(&r["shapes"][1]).unwrap();
        assert_eq!(g["weight"], serde_json::json!([32, 1, 3, 5]));
        assert_eq!(g["kw"], serde_json::json!({ "stride": [2, 2], "padding": [1, 2], "dilation": [1, 1], "groups": 16 }));
        // A request without groups (an older convrs) is a dense convolution.
        let mut old = r["shapes"][0].clone();
        old.as_object_mut().unwrap().remove("groups");
        let g = script_geometry(&old).unwrap();
        assert_eq!((g["weight"].clone(), g["kw"]["groups"].clone()), (serde_json::json!([8, 8, 3, 3]), serde_json::json!(1)));
    }

    #[test]
    fn answers_parse_and_missing_times_say_why() {
        let a = parse_answer("noise\n{\"torch\":\"2.11.0\",\"cudnn\":\"9.19.0\",\"gpu\":\"H100\",\"times\":{\"s|fp16\":0.25,\"s|fp32\":null}}\n").unwrap();
        assert_eq!(a.time("s", "fp16"), Ok(0.25));
        assert!(a.time("s", "fp32").unwrap_err().contains("failed"));
        assert!(a.time("t", "fp16").unwrap_err().contains("not timed"));
        assert_eq!(a.describe(), "torch 2.11.0, cuDNN 9.19.0");
        assert!(parse_answer("").is_err());
        assert!(parse_answer("{\"times\":{}}").is_err());
        let n = TorchOutcome::NotRun("no torch".into());
        assert_eq!(n.time("s", "fp16"), Err("no torch".into()));
        assert!(n.describe().contains("NOT RUN"));
    }

    #[test]
    fn the_embedded_script_is_valid_python() {
        // The script only runs on a GPU machine; its syntax is checked wherever python3 is.
        let Ok(mut child) = Command::new(python()).args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"]).stdin(Stdio::piped()).spawn() else {
            eprintln!("python3 not found: the PyTorch script's syntax was not checked");
            return;
        };
        child.stdin.take().unwrap().write_all(SCRIPT.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success(), "pytorch.py does not parse");
    }

    #[test]
    fn off_never_starts_python() {
        assert!(matches!(run(TorchMode::Off, 0, &[], 1, TimingMethod::Events), Ok(TorchOutcome::NotRun(_))));
    }
}
