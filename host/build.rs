//! Puts the kernels' PTX where `src/ptx.rs` embeds it, from the first of:
//! 1. `CONVRS_PTX_DIR`: prebuilt `convrs_<arch>.ptx` files (e.g. from `cargo xtask build-ptx`);
//! 2. `CONVRS_BUILD_KERNELS=1`: a build of the kernel crate from source (the workspace sets this
//!    in `.cargo/config.toml`; it needs the nightly toolchain pinned in `rust-toolchain.toml`);
//! 3. the PTX shipped in `ptx/`, which `cargo xtask ship-ptx` regenerates and CI proves identical
//!    to the sources' build: what users get, on the stable toolchain with no CUDA toolkit.
//!
//! The arches are the shipped files' (`ptx/convrs_<arch>.ptx`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let shipped = manifest.join("ptx");
    println!("cargo:rerun-if-env-changed=CONVRS_PTX_DIR");
    println!("cargo:rerun-if-env-changed=CONVRS_BUILD_KERNELS");
    println!("cargo:rerun-if-changed={}", shipped.display());
    let arches = shipped_arches(&shipped);
    if arches.is_empty() {
        fail(&format!("no shipped PTX in {} (expected convrs_<arch>.ptx files)", shipped.display()));
    }
    let from_source = std::env::var_os("CONVRS_BUILD_KERNELS").is_some_and(|v| v == "1");
    for arch in &arches {
        let dest = out_dir.join(format!("convrs_{arch}.ptx"));
        if let Some(dir) = std::env::var_os("CONVRS_PTX_DIR") {
            copy(&Path::new(&dir).join(format!("convrs_{arch}.ptx")), &dest);
        } else if from_source {
            build_from_source(&manifest, arch, &dest);
        } else {
            copy(&shipped.join(format!("convrs_{arch}.ptx")), &dest);
        }
    }
}

/// The `<arch>` of every `convrs_<arch>.ptx` in `dir`, sorted.
fn shipped_arches(dir: &Path) -> Vec<String> {
    let mut arches: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().filter_map(|e| e.file_name().to_str()?.strip_prefix("convrs_")?.strip_suffix(".ptx").map(str::to_string)).collect())
        .unwrap_or_default();
    arches.sort();
    arches
}

/// `cargo xtask build-ptx` for `arch` into `dest`, in a target directory of its own (the outer
/// build holds the workspace's).
fn build_from_source(manifest: &Path, arch: &str, dest: &Path) {
    let root = manifest.parent().expect("host lives in the workspace");
    for watched in ["kernels-gpu/src", "kernels-gpu/Cargo.toml", "spec/src", "spec/Cargo.toml", "rust-toolchain.toml", "xtask/src"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["run", "--quiet", "--package", "xtask", "--target-dir"])
        .arg(root.join("target/xtask-from-build"))
        .args(["--", "build-ptx", "--no-ptxas", "--arch", arch, "--out"])
        .arg(dest)
        // The outer build's flags describe the host crate, not the tool or the kernels.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!(
            "building the GPU kernels for {arch} from source failed ({s}). Run `cargo xtask build-ptx --arch {arch}` to see \
             the full error; it needs the toolchain in rust-toolchain.toml with rust-src and llvm-tools. Unset \
             CONVRS_BUILD_KERNELS to use the shipped PTX instead."
        )),
        Err(e) => fail(&format!("cannot run cargo to build the kernels: {e}")),
    }
}

fn copy(from: &Path, to: &Path) {
    if let Err(e) = std::fs::copy(from, to) {
        fail(&format!("cannot copy {} to {}: {e}", from.display(), to.display()));
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("\nconvrs: {msg}\n");
    std::process::exit(1);
}
