//! The sm_90a module (Hopper's `wgmma`; not embedded in the library yet: issue 11) builds from the
//! kernel sources, every `wgmma_nhwc_*` entry holds the warpgroup MMA of its type with its fences,
//! and ptxas assembles them for sm_90a with no spills and no stack frame. CPU-only; it compiles the
//! kernels (the pinned nightly and cargo are needed: the GPU machine, which has neither, skips it).

use convrs_spec::wgmma::TILES;
use convrs_tests::{ptxas_or_skip, shout};

/// The body of entry `name` in `ptx`: from `.entry name(` to LLVM's end-of-function comment (the
/// inline asm's own `{ }` blocks may close at column 0).
fn entry_body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("entry {name} not in the sm_90a PTX"));
    let body = &ptx[start..];
    &body[..body.find("// -- End function").unwrap_or(body.len())]
}

#[test]
fn wgmma_entries_build_and_assemble_for_sm_90a_without_spills() {
    let Some(ptxas) = ptxas_or_skip("wgmma_entries_build_and_assemble_for_sm_90a_without_spills") else { return };
    let cargo_runs = std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())).arg("--version").output().is_ok_and(|o| o.status.success());
    if !cargo_runs {
        assert!(std::env::var("CONVRS_REQUIRE_PTXAS").as_deref() != Ok("1"), "CONVRS_REQUIRE_PTXAS=1 but cargo cannot run to build the sm_90a PTX");
        shout("SKIPPED `wgmma_entries_build_and_assemble_for_sm_90a_without_spills`: no cargo to build the kernels with");
        return;
    }
    // Through the xtask binary: it is the kernel build's linker (a test binary cannot be).
    let ptx_path = xtask::workspace_root().join("target/ptx/convrs_sm_90a.ptx");
    let status = std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(xtask::workspace_root())
        .args(["run", "--quiet", "--package", "xtask", "--", "build-ptx", "--arch", "sm_90a", "--no-ptxas", "--out"])
        .arg(&ptx_path)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo xtask build-ptx --arch sm_90a failed ({status})");
    let ptx = std::fs::read_to_string(&ptx_path).unwrap();
    assert!(ptx.contains(".target sm_90a"), "not sm_90a PTX");
    let report = xtask::ptxas::assemble(&ptxas, &ptx_path, "sm_90a").unwrap_or_else(|e| panic!("{e}"));
    for t in TILES {
        for (name, ty) in [(t.fp16, "f16"), (t.bf16, "bf16")] {
            let body = entry_body(&ptx, name);
            let count = |needle: &str| body.matches(needle).count();
            let mma = format!("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{ty}.{ty}", t.bn);
            // One per k16 step of a loop that ptxas unrolls (4 HGMMA a k-tile in the SASS).
            assert!(count(&mma) >= 1, "{name}: no {mma}");
            let other = if ty == "f16" { ".bf16.bf16" } else { ".f32.f16.f16" };
            assert_eq!(count(other), 0, "{name}: a wgmma of the other type");
            for needle in ["wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned", "fence.proxy.async.shared::cta"] {
                assert!(count(needle) >= 1, "{name}: no {needle}");
            }
            assert_eq!(count("ld.local") + count("st.local"), 0, "{name}: local memory in the PTX");
            let k = report.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{name}: not in ptxas's report"));
            assert!(!k.spills() && k.stack_frame_bytes == 0, "{name} spills or uses a stack frame on sm_90a: {k:?}");
            eprintln!("sm_90a: {name}: {} registers", k.registers);
        }
    }
}
