//! `cargo xtask gpu-bundle`: everything the GPU machine needs, in one folder.
//!
//! The GPU machine has CUDA but no Rust toolchain, so we build here: the `convrs` CLI, the
//! release test binaries and the crate's examples (the PTX is embedded in each), packed into
//! `payload.tar.xz` (the PTX repeats in every binary, which xz folds: 85 MiB become about 6), plus
//! `run-gpu.sh`, which unpacks them and runs the GPU tests, compute-sanitizer over every kernel,
//! the benchmark and the examples there. With `--candle`, convrs-candle's test binary and
//! examples come too (`candle/build-gpu.sh`: it needs the CUDA toolkit candle builds with, which
//! `candle/toolkit.sh` makes from pip wheels), for run-gpu.sh's `candle` step.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder must travel to the GPU machine, which takes at most 64 MiB in all.
const MAX_BUNDLE_BYTES: u64 = 60 << 20;

const RUN_GPU_SH: &str = include_str!("run-gpu.sh");

/// The crate's examples, run on the GPU machine by run-gpu.sh's `examples` step.
const EXAMPLES: [&str; 3] = ["quickstart", "resnet_block", "explain"];

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn run(cmd: &mut Command) -> Result<String, String> {
    eprintln!("xtask: running {cmd:?}");
    let out = cmd.stderr(std::process::Stdio::inherit()).output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Test executables named in cargo's JSON messages.
fn test_executables(json: &str) -> Vec<PathBuf> {
    json.lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\"") && l.contains("\"test\":true"))
        .filter_map(|l| l.split("\"executable\":\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(PathBuf::from)
        .collect()
}

fn copy(from: &Path, to: &Path) -> Result<u64, String> {
    std::fs::copy(from, to).map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

pub fn gpu_bundle(args: &[String]) -> Result<(), String> {
    let root = crate::workspace_root();
    let mut out = root.join("target/gpu-bundle");
    let mut candle = false;
    const USAGE: &str = "usage: cargo xtask gpu-bundle [--out DIR] [--candle]";
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--out" => out = PathBuf::from(it.next().ok_or(USAGE)?),
            "--candle" => candle = true,
            _ => return Err(USAGE.into()),
        }
    }
    run(cargo().current_dir(&root).args(["build", "--release", "-p", "convrs", "--bin", "convrs", "--examples"]))?;
    let json = run(cargo().current_dir(&root).args([
        "test", "--release", "--no-run", "--message-format=json", "-p", "convrs", "-p", "convrs-tests",
    ]))?;
    let tests = test_executables(&json);
    if tests.is_empty() {
        return Err("cargo built no test executables".into());
    }
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| format!("cannot clear {}: {e}", out.display()))?;
    }
    // Everything that runs goes into a staging folder, packed at the end.
    let stage = root.join("target/gpu-bundle-stage");
    if stage.exists() {
        std::fs::remove_dir_all(&stage).map_err(|e| format!("cannot clear {}: {e}", stage.display()))?;
    }
    for dir in [stage.join("tests"), stage.join("examples"), out.clone()] {
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    copy(&root.join("target/release/convrs"), &stage.join("convrs"))?;
    for ex in EXAMPLES {
        copy(&root.join("target/release/examples").join(ex), &stage.join("examples").join(ex))?;
    }
    for t in &tests {
        // Cargo names test binaries NAME-HASH; the hash only matters inside target/.
        let name = t.file_name().and_then(|n| n.to_str()).unwrap_or("test");
        let short = name.rsplit_once('-').map_or(name, |(stem, _)| stem);
        // A package's lib and bin unit tests share a stem: number the later ones.
        let mut dest = stage.join("tests").join(short);
        for i in 2.. {
            if !dest.exists() {
                break;
            }
            dest = stage.join("tests").join(format!("{short}_{i}"));
        }
        copy(t, &dest)?;
    }
    if candle {
        run(Command::new("bash").arg(root.join("candle/build-gpu.sh")).arg(stage.join("candle")))?;
    }
    // The GPU machine has no git: the commit travels as a file, and every figure names it.
    let commit = Command::new("git").current_dir(&root).args(["describe", "--always", "--dirty", "--abbrev=12"]).output();
    let commit = commit.ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    std::fs::write(out.join("commit.txt"), commit.as_deref().unwrap_or("unknown")).map_err(|e| format!("cannot write commit.txt: {e}"))?;
    let script = out.join("run-gpu.sh");
    std::fs::write(&script, RUN_GPU_SH).map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    Command::new("chmod").arg("+x").arg(&script).status().map_err(|e| e.to_string())?;
    // Symbols are not needed to run; stripping keeps the payload small.
    let binaries = ["tests", "examples", "candle"].iter().flat_map(|d| std::fs::read_dir(stage.join(d)).into_iter().flatten().flatten().map(|e| e.path()));
    let _ = Command::new("strip").arg(stage.join("convrs")).args(binaries).status();
    let unpacked = dir_size(&stage);
    // xz -9's 64 MiB window spans several binaries, so the PTX every one embeds (tens of MiB)
    // is stored about once; the default's 8 MiB window stored it in each.
    run(Command::new("tar").env("XZ_OPT", "-9").arg("-C").arg(&stage).arg("-cJf").arg(out.join("payload.tar.xz")).arg("."))?;
    std::fs::remove_dir_all(&stage).map_err(|e| format!("cannot clear {}: {e}", stage.display()))?;
    let total = dir_size(&out);
    println!(
        "GPU bundle: {} ({:.1} MiB; {:.1} MiB unpacked: the CLI, {} test binaries, {} examples)",
        out.display(),
        total as f64 / 1048576.0,
        unpacked as f64 / 1048576.0,
        tests.len(),
        EXAMPLES.len()
    );
    if total > MAX_BUNDLE_BYTES {
        return Err(format!("the bundle is {total} bytes, over the {MAX_BUNDLE_BYTES}-byte limit"));
    }
    println!("On the GPU machine: bash {}/run-gpu.sh  (STEPS=\"tests sanitize bench examples\" by default; one 10-minute call per step)", out.display());
    Ok(())
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_size(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_test_executables_in_cargo_json() {
        let json = r#"{"reason":"compiler-artifact","profile":{"test":true},"executable":"/t/release/deps/gpu_direct-abc123"}
{"reason":"compiler-artifact","profile":{"test":false},"executable":"/t/release/convrs"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":null}
{"reason":"build-finished","success":true}"#;
        assert_eq!(test_executables(json), [PathBuf::from("/t/release/deps/gpu_direct-abc123")]);
    }
}
