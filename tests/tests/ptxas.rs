//! The embedded PTX assembles with ptxas for sm_80 and sm_90, every kernel an algorithm can
//! launch is in it, and no kernel spills registers or uses a stack frame.

use convrs::plan::DeviceLimits;
use convrs::{Algorithm, Conv2d};
use convrs_tests::ptxas_or_skip;

fn entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split(|c: char| c == '(' || c.is_whitespace()).next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn every_kernel_assembles_without_spills() {
    let Some(ptxas) = ptxas_or_skip("every_kernel_assembles_without_spills") else { return };
    let dir = std::env::temp_dir().join(format!("convrs-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // sm_80 PTX must also assemble for sm_90: that is what a newer GPU's driver does with it.
    for (ptx_arch, text, targets) in [("sm_80", convrs::ptx::SM80, &["sm_80", "sm_90"][..]), ("sm_90", convrs::ptx::SM90, &["sm_90"][..])] {
        let file = dir.join(format!("convrs_{ptx_arch}.ptx"));
        std::fs::write(&file, text).unwrap();
        let expected = entries(text);
        assert!(!expected.is_empty(), "no kernel entry points in the {ptx_arch} PTX");
        for target in targets {
            let report = xtask::ptxas::assemble(&ptxas, &file, target).unwrap_or_else(|e| panic!("{e}"));
            for name in &expected {
                let k = report.iter().find(|k| &k.name == name).unwrap_or_else(|| panic!("ptxas did not report kernel {name}"));
                assert!(k.is_entry, "{name} should be an entry point");
                assert!(!k.spills(), "{name} spills on {target} ({ptx_arch} PTX): {k:?}");
                assert_eq!(k.stack_frame_bytes, 0, "{name} uses a stack frame on {target} ({ptx_arch} PTX): {k:?}");
                eprintln!("{ptx_arch} PTX on {target}: {name}: {} registers", k.registers);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_planned_kernel_is_in_the_ptx() {
    let shapes = [
        Conv2d::new(1, 6, 768, 512, 6, 6, 6),
        Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1),
        Conv2d::new(3, 5, 17, 13, 7, 1, 1).with_stride(2),
        Conv2d::new(2, 3, 30, 30, 9, 7, 7).with_pad(3).with_dilation(2),
    ];
    for (_, text) in convrs::ptx::ALL {
        let names = entries(text);
        for algo in Algorithm::ALL {
            for p in &shapes {
                if let Ok(plan) = algo.plan(p, &DeviceLimits::SM80) {
                    assert!(names.iter().any(|n| n == plan.kernel), "{algo} plans kernel {} which is not in the PTX", plan.kernel);
                }
            }
        }
    }
}
