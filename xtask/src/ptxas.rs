//! Finding `ptxas` and reading its resource report, so broken or spilling PTX never lands.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Per-kernel resources as `ptxas -v` reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelResources {
    pub name: String,
    /// A kernel entry point (`.entry`), as opposed to a device function ptxas also reports.
    pub is_entry: bool,
    pub registers: u32,
    pub stack_frame_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    /// ptxas serialized the kernel's `wgmma.mma_async` instructions (info C7518, e.g. a
    /// divergent branch between wgmmas in flight): every MMA waits for the previous one.
    pub wgmma_serialized: bool,
}

impl KernelResources {
    pub fn spills(&self) -> bool {
        self.spill_store_bytes > 0 || self.spill_load_bytes > 0
    }
}

/// Looks for ptxas: `$CONVRS_PTXAS`, then `PATH`, then the `nvidia-cuda-nvcc-cu12` pip wheel
/// of any `python3` on `PATH`.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CONVRS_PTXAS") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let cand = dir.join("ptxas");
            if cand.is_file() {
                return Some(cand);
            }
        }
    }
    let out = Command::new("python3")
        .args(["-c", "import nvidia.cuda_nvcc as m; print(list(m.__path__)[0])"])
        .output()
        .ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Some(dir.join("bin/ptxas")).filter(|p| out.status.success() && p.is_file())
}

/// Assembles `ptx` for `arch` and returns each kernel's resources; an assembler error is `Err`
/// with ptxas's own message.
pub fn assemble(ptxas: &Path, ptx: &Path, arch: &str) -> Result<Vec<KernelResources>, String> {
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(ptx)
        .args(["-o", "/dev/null"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let text = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("ptxas failed for {arch} on {}:\n{text}", ptx.display()));
    }
    Ok(parse_report(&text))
}

/// Parses `ptxas -v` output into one entry per kernel.
pub fn parse_report(text: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    let mut entries: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            entries.push(rest.split('\'').next().unwrap_or("").to_string());
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            let name = rest.trim().to_string();
            kernels.push(KernelResources {
                is_entry: entries.contains(&name),
                name,
                registers: 0,
                stack_frame_bytes: 0,
                spill_store_bytes: 0,
                spill_load_bytes: 0,
                wgmma_serialized: false,
            });
        } else if let Some(k) = kernels.last_mut() {
            if line.contains("stack frame") {
                k.stack_frame_bytes = number_before(line, "bytes stack frame");
                k.spill_store_bytes = number_before(line, "bytes spill stores");
                k.spill_load_bytes = number_before(line, "bytes spill loads");
            } else if line.contains("Used ") && line.contains(" registers") {
                k.registers = number_before(line, "registers");
            }
        }
    }
    // "(C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized ... in
    // the function 'NAME'", anywhere in the report.
    for line in text.lines().filter(|l| l.contains("C7518")) {
        if let Some(name) = line.split("in the function '").nth(1).and_then(|r| r.split('\'').next()) {
            kernels.iter_mut().filter(|k| k.name == name).for_each(|k| k.wgmma_serialized = true);
        }
    }
    kernels
}

fn number_before(line: &str, label: &str) -> u32 {
    line.split(label)
        .next()
        .and_then(|head| head.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).next_back())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_ptxas_report() {
        let text = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'direct_naive' for 'sm_90'\n\
ptxas info    : Function properties for direct_naive\n\
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 30 registers, 448 bytes cmem[0]\n\
ptxas info    : Function properties for other\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 128 registers, used 1 barriers, 448 bytes cmem[0]\n\
ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.DP in divergent path in the function 'other'\n";
        let r = parse_report(text);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0], KernelResources { name: "direct_naive".into(), is_entry: true, registers: 30, stack_frame_bytes: 8, spill_store_bytes: 4, spill_load_bytes: 12, wgmma_serialized: false });
        assert!(r[1].wgmma_serialized);
        assert!(r[0].spills());
        assert_eq!(r[1].registers, 128);
        assert!(!r[1].is_entry);
        assert!(!r[1].spills());
    }
}
