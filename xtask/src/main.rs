//! `cargo xtask <task>`: developer tasks for convrs. Run `cargo xtask help` for the list.

use std::path::PathBuf;
use std::process::ExitCode;

const HELP: &str = "\
cargo xtask <task> [options]

tasks:
  build-ptx [--arch sm_80|sm_86|sm_89|sm_90|sm_90a] [--out PATH] [--no-ptxas]
      Compile kernels-gpu to PTX (default arch sm_90; default out target/ptx/convrs_<arch>.ptx).
      sm_90a adds the Hopper-only wgmma kernels (its PTX runs only on compute capability 9.0).
      If ptxas is found ($CONVRS_PTXAS, PATH, or the nvidia-cuda-nvcc-cu12 pip wheel) the PTX is
      assembled for the arch and registers, stack frame and spills are printed per kernel; a ptxas
      error fails the task. --no-ptxas skips that (host/build.rs uses it).
  ship-ptx
      Rebuild the PTX of every embedded arch and write it to host/ptx/, where the published crate
      takes it from (so users need no nightly toolchain). Run after every kernel change.
  check-ptx
      Rebuild the PTX of every embedded arch and fail unless host/ptx/ holds exactly those bytes
      (CI runs this: the build is deterministic, so any difference is a stale ship).
  gpu-bundle [--out DIR]
      Build everything the GPU machine needs (PTX, release test binaries, the convrs CLI) into one
      folder (default target/gpu-bundle) with run-gpu.sh, which runs the GPU tests, compute-sanitizer
      and the benchmark there.
  help
      This text.
";

fn main() -> ExitCode {
    xtask::link_if_invoked_as_linker();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build-ptx") => build_ptx(&args[1..]),
        Some("gpu-bundle") => xtask::bundle::gpu_bundle(&args[1..]),
        Some("ship-ptx") => xtask::shipped::ship(),
        Some("check-ptx") => xtask::shipped::check(),
        Some("help" | "--help" | "-h") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => Err(format!("unknown task `{other}`\n\n{HELP}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Value of `--name VALUE` in `args`, if present.
fn option(args: &[String], name: &str) -> Result<Option<String>, String> {
    match args.iter().position(|a| a == name) {
        Some(i) => args.get(i + 1).cloned().map(Some).ok_or_else(|| format!("`{name}` needs a value")),
        None => Ok(None),
    }
}

fn build_ptx(args: &[String]) -> Result<(), String> {
    for a in args.iter().filter(|a| a.starts_with("--")) {
        if a != "--arch" && a != "--out" && a != "--no-ptxas" {
            return Err(format!("unknown option `{a}`\n\n{HELP}"));
        }
    }
    let arch = option(args, "--arch")?.unwrap_or_else(|| "sm_90".into());
    let root = xtask::workspace_root();
    let out = option(args, "--out")?.map(PathBuf::from).unwrap_or_else(|| root.join(format!("target/ptx/convrs_{arch}.ptx")));
    let built = xtask::build_ptx(&arch, &root.join("target/ptx").join(&arch))?;
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::copy(&built, &out).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("PTX for {arch}: {}", out.display());
    if args.iter().any(|a| a == "--no-ptxas") {
        return Ok(());
    }
    match xtask::ptxas::find_ptxas() {
        None => println!("ptxas not found: PTX NOT ASSEMBLED (install the nvidia-cuda-nvcc-cu12 wheel or set CONVRS_PTXAS)"),
        Some(ptxas) => {
            let kernels = xtask::ptxas::assemble(&ptxas, &out, &arch)?;
            println!("ptxas {arch}: {:<28} {:>5} {:>12} {:>12} {:>12}", "kernel", "regs", "stack bytes", "spill st", "spill ld");
            for k in kernels.iter().filter(|k| k.is_entry) {
                println!(
                    "ptxas {arch}: {:<28} {:>5} {:>12} {:>12} {:>12}",
                    k.name, k.registers, k.stack_frame_bytes, k.spill_store_bytes, k.spill_load_bytes
                );
            }
        }
    }
    Ok(())
}
