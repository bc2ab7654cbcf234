//! PyTorch's `conv2d` on the same shapes, timed in the same run by a child `python3` (the
//! script is `pytorch.py` beside this file, embedded in the binary), so every table shows what a
//! PyTorch user gets next to our in-process cuDNN baseline.

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};

use crate::timing::{TimingMethod, GRAPH_MAX_BATCH, GRAPH_MIN_BATCH, GRAPH_TARGET_MS};
use crate::{Conv2d, Error, Result};

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
}

fn key(label: &str, config: &str) -> String {
    format!("{label}|{config}")
}

/// The JSON request the script reads on stdin (per shape its extents, per-axis `pad`, `stride`
/// and `dilation`, and `groups`: F.conv2d's, the weight K x C/groups x R x S); `method` is how the script times (as
/// [`crate::timing`] does: CUDA graph replays, or back-to-back calls between events), and
/// `graph_batch` sizes its graphs as [`crate::timing::graph_batch`] sizes ours.
pub fn request(device: usize, shapes: &[TorchShape], seed: u64, method: TimingMethod) -> serde_json::Value {
    let shapes: Vec<_> = shapes
        .iter()
        .map(|s| {
            let p = &s.problem;
            serde_json::json!({
                "label": s.label, "n": p.n, "c": p.c, "h": p.h, "w": p.w, "k": p.k, "r": p.r, "s": p.s,
                "pad": [p.pad.0, p.pad.1], "stride": [p.stride.0, p.stride.1], "dilation": [p.dilation.0, p.dilation.1],
                "groups": p.groups, "sets": s.sets, "configs": s.configs,
            })
        })
        .collect();
    let graph_batch = serde_json::json!([GRAPH_TARGET_MS, GRAPH_MIN_BATCH, GRAPH_MAX_BATCH]);
    serde_json::json!({ "device": device, "seed": seed, "trials": 15, "timing": method.name(), "graph_batch": graph_batch, "shapes": shapes })
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
    fn request_carries_per_axis_geometry() {
        let p = Conv2d { pad: (1, 2), stride: (2, 1), dilation: (1, 3), ..Conv2d::new(2, 3, 9, 10, 4, 3, 3) };
        let r = request(1, &[TorchShape { label: "x".into(), problem: p, sets: 3, configs: vec!["fp16"] }], 7, TimingMethod::Graph);
        assert_eq!((r["device"].as_u64(), r["timing"].as_str()), (Some(1), Some("graph")));
        assert_eq!(r["graph_batch"], serde_json::json!([0.2, 8, 256]));
        let s = &r["shapes"][0];
        assert_eq!((s["pad"][1].as_u64(), s["stride"][0].as_u64(), s["dilation"][1].as_u64()), (Some(2), Some(2), Some(3)));
        assert_eq!((s["w"].as_u64(), s["sets"].as_u64(), s["configs"][0].as_str()), (Some(10), Some(3), Some("fp16")));
        assert_eq!(s["groups"].as_u64(), Some(1));
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
