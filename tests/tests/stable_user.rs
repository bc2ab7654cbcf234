//! A Rust user's view: a throwaway project outside the workspace depends on convrs by path, is
//! built with the stable toolchain (no nightly, no CUDA toolkit: the crate ships its PTX), and
//! runs the quick-start example: without a GPU it must end with the clear no-GPU error, not a
//! panic; with one, it must succeed. The build time is printed (the target: under 2
//! minutes on 2 cores, a benchmark figure, not asserted here).
//!
//! Needs `rustup` and `cargo` (the GPU machine has neither: there it says SKIPPED);
//! `CONVRS_REQUIRE_STABLE=1` (CI) turns a skip into a failure.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use convrs_tests::shout;

fn require() -> bool {
    std::env::var("CONVRS_REQUIRE_STABLE").is_ok_and(|v| v == "1")
}

/// A command with the workspace's toolchain and build settings removed from its environment.
fn clean(program: &str) -> Command {
    let mut c = Command::new(program);
    for var in ["RUSTUP_TOOLCHAIN", "CONVRS_BUILD_KERNELS", "CONVRS_PTX_DIR", "CARGO", "RUSTC", "RUSTDOC", "RUSTC_WRAPPER", "CARGO_TARGET_DIR", "CARGO_ENCODED_RUSTFLAGS", "RUSTFLAGS"] {
        c.env_remove(var);
    }
    c
}

#[test]
fn a_stable_project_builds_and_runs_the_quick_start() {
    if clean("rustup").arg("--version").output().is_err() {
        assert!(!require(), "CONVRS_REQUIRE_STABLE=1 but rustup is missing");
        shout("SKIPPED `a_stable_project_builds_and_runs_the_quick_start`: rustup not found");
        return;
    }
    let status = clean("rustup").args(["toolchain", "install", "stable", "--profile", "minimal"]).status().expect("rustup runs");
    assert!(status.success(), "rustup could not install the stable toolchain");

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests lives in the workspace").to_path_buf();
    let project = std::env::temp_dir().join(format!("convrs-stable-user-{}", std::process::id()));
    std::fs::create_dir_all(project.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"stable-user\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nconvrs = {{ path = {:?} }}\n",
        root.join("host")
    );
    std::fs::write(project.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(root.join("host/examples/quickstart.rs"), project.join("src/main.rs")).unwrap();

    // Its own target directory inside ours, so a rerun is incremental and a clean removes it.
    let target = root.join("target/stable-user");
    let start = Instant::now();
    let build = clean("cargo").current_dir(&project).args(["+stable", "build", "--quiet", "--target-dir"]).arg(&target).output().expect("cargo runs");
    let seconds = start.elapsed().as_secs_f64();
    assert!(build.status.success(), "stable build failed:\n{}", String::from_utf8_lossy(&build.stderr));
    shout(&format!("stable-toolchain user project built in {seconds:.1} s (target: under 120 s on 2 cores from scratch)"));

    let run = clean(target.join("debug/stable-user").to_str().unwrap()).output().expect("the program runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    std::fs::remove_dir_all(&project).ok();
    if convrs::Gpu::new(0).is_ok() {
        assert!(run.status.success(), "quick start failed on a GPU machine:\n{stderr}");
    } else {
        assert_eq!(run.status.code(), Some(1), "expected the no-GPU exit status 1:\n{stderr}");
        assert!(stderr.contains("quickstart: no usable GPU"), "expected the no-GPU error:\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
