//! PTX build machinery shared by `cargo xtask` and `host/build.rs`.
//!
//! rustc's `nvptx64-nvidia-cuda` target links through a program named `llvm-bitcode-linker`,
//! a rustup component we cannot install. [`link_if_invoked_as_linker`] is that program: the
//! kernel build passes our own executable as `-C linker=` and marks the environment so that
//! the same executable, started by rustc, does the link (llvm-link, opt, llc) and exits.

pub mod bundle;
pub mod link;
pub mod ptxas;
pub mod shipped;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use link::link_if_invoked_as_linker;

/// GPU architectures the kernels are built for. PTX is forward compatible, so `sm_80` PTX
/// also runs on later GPUs (the driver compiles it at load time).
pub const ARCHES: &[&str] = &["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"];

/// The architectures the host library embeds: Ampere-class PTX for every GPU from sm_80 on,
/// Hopper PTX so an H100/H200 gets code generated for it, and the sm_90a module with the
/// Hopper-only (`wgmma`) entries, loaded beside the sm_90 one on compute capability 9.0.
pub const EMBEDDED_ARCHES: &[&str] = &["sm_80", "sm_90", "sm_90a"];

/// Where the workspace root is, from this crate's manifest directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Compiles `kernels-gpu` for `arch` and returns the path of the PTX it produced.
///
/// `target_dir` holds the nested build (one per arch, so that switching arch does not
/// invalidate the other's cache).
pub fn build_ptx(arch: &str, target_dir: &Path) -> Result<PathBuf, String> {
    if !ARCHES.contains(&arch) {
        return Err(format!("unsupported arch `{arch}`; expected one of {}", ARCHES.join(", ")));
    }
    let root = workspace_root();
    let manifest = root.join("kernels-gpu/Cargo.toml");
    let me = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let rustflags = [format!("-Ctarget-cpu={arch}"), format!("-Clinker={}", me.display())].join("\x1f");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root.join("kernels-gpu"))
        .args(["build", "--release", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        // A build script's environment describes the outer (host) build: none of it applies here.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags)
        .env(link::LINKER_MODE_ENV, "1");
    let status = cmd.status().map_err(|e| format!("cannot run cargo for kernels-gpu: {e}"))?;
    if !status.success() {
        return Err(format!("building kernels-gpu for {arch} failed ({status})"));
    }
    let ptx = target_dir.join("nvptx64-nvidia-cuda/release/kernels_gpu.ptx");
    if ptx.is_file() { Ok(ptx) } else { Err(format!("the kernel build finished but {} is missing", ptx.display())) }
}

/// The folder that holds rustup's llvm-tools (`llvm-link`, `opt`, `llc`) for the active toolchain.
pub fn llvm_tools_dir() -> Result<PathBuf, String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run rustc to find the sysroot: {e}"))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let rustlib = sysroot.join("lib/rustlib");
    let entries = std::fs::read_dir(&rustlib).map_err(|e| format!("cannot read {}: {e}", rustlib.display()))?;
    for entry in entries.flatten() {
        let bin = entry.path().join("bin");
        if bin.join("llvm-link").is_file() && bin.join("opt").is_file() && bin.join("llc").is_file() {
            return Ok(bin);
        }
    }
    Err(format!(
        "llvm-link/opt/llc not found under {}: install the toolchain component with `rustup component add llvm-tools`",
        rustlib.display()
    ))
}
