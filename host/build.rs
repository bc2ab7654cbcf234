//! Builds the kernels to PTX for every embedded arch, so a fresh clone's `cargo build` needs no
//! manual step. The same executable serves as the nvptx linker (see the xtask crate docs).

fn main() {
    xtask::link_if_invoked_as_linker();
    let root = xtask::workspace_root();
    println!("cargo:rerun-if-changed={}", root.join("kernels-gpu/src").display());
    println!("cargo:rerun-if-changed={}", root.join("kernels-gpu/Cargo.toml").display());
    // The kernels take their tables and formulas from the spec crate.
    println!("cargo:rerun-if-changed={}", root.join("spec/src").display());
    println!("cargo:rerun-if-changed={}", root.join("spec/Cargo.toml").display());
    println!("cargo:rerun-if-changed={}", root.join("rust-toolchain.toml").display());
    println!("cargo:rerun-if-env-changed=CONVRS_PTX_DIR");
    let out_dir = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for arch in xtask::EMBEDDED_ARCHES {
        // CONVRS_PTX_DIR lets a build reuse PTX that `cargo xtask build-ptx` already made.
        let ptx = match std::env::var_os("CONVRS_PTX_DIR") {
            Some(dir) => std::path::Path::new(&dir).join(format!("convrs_{arch}.ptx")),
            None => match xtask::build_ptx(arch, &root.join("target/ptx").join(arch)) {
                Ok(p) => p,
                Err(e) => panic!(
                    "\nconvrs: could not build the GPU kernels for {arch}: {e}\n\
                     Run `cargo xtask build-ptx --arch {arch}` to see the full error; it needs the toolchain in\n\
                     rust-toolchain.toml with the rust-src and llvm-tools components (rustup installs them).\n"
                ),
            },
        };
        let dest = out_dir.join(format!("convrs_{arch}.ptx"));
        std::fs::copy(&ptx, &dest).unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", ptx.display(), dest.display()));
    }
}
