//! The PTX the published crate ships in `host/ptx/`: users build convrs on the stable toolchain
//! with no CUDA toolkit because these files stand in for the kernel build. `ship` regenerates
//! them; `check` proves they are exactly what the sources produce (CI runs it).

use std::path::PathBuf;

use crate::{build_ptx, workspace_root, EMBEDDED_ARCHES};

/// Where the shipped PTX of `arch` lives.
pub fn shipped_path(arch: &str) -> PathBuf {
    workspace_root().join("host/ptx").join(format!("convrs_{arch}.ptx"))
}

fn fresh(arch: &str) -> Result<Vec<u8>, String> {
    let built = build_ptx(arch, &workspace_root().join("target/ptx").join(arch))?;
    std::fs::read(&built).map_err(|e| format!("cannot read {}: {e}", built.display()))
}

/// Rebuilds every embedded arch and writes it to `host/ptx/`.
pub fn ship() -> Result<(), String> {
    for arch in EMBEDDED_ARCHES {
        let bytes = fresh(arch)?;
        let dest = shipped_path(arch);
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(&dest, &bytes).map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
        println!("shipped {} ({} bytes)", dest.display(), bytes.len());
    }
    Ok(())
}

/// Rebuilds every embedded arch and compares it byte for byte with `host/ptx/`.
pub fn check() -> Result<(), String> {
    let mut stale = Vec::new();
    for arch in EMBEDDED_ARCHES {
        let bytes = fresh(arch)?;
        let path = shipped_path(arch);
        match std::fs::read(&path) {
            Ok(shipped) if shipped == bytes => println!("{}: identical to the sources' PTX ({} bytes)", path.display(), bytes.len()),
            Ok(shipped) => {
                let at = shipped.iter().zip(&bytes).position(|(a, b)| a != b).unwrap_or(shipped.len().min(bytes.len()));
                stale.push(format!("{} differs from the sources' PTX (first at byte {at}; {} vs {} bytes)", path.display(), shipped.len(), bytes.len()));
            }
            Err(e) => stale.push(format!("{} cannot be read: {e}", path.display())),
        }
    }
    if stale.is_empty() { Ok(()) } else { Err(format!("{}\nrun `cargo xtask ship-ptx` and commit host/ptx/", stale.join("\n"))) }
}
