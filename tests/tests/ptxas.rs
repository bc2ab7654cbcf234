//! The embedded PTX assembles with ptxas for sm_80 and sm_90, every kernel an algorithm can
//! launch is in it, no kernel spills registers or uses a stack frame, and every planned block
//! fits the register file.

use convrs::DeviceModel;
use convrs::{Algorithm, Conv2d};
use std::sync::OnceLock;

use convrs_tests::ptxas_or_skip;

fn entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split(|c: char| c == '(' || c.is_whitespace()).next().unwrap_or("").to_string())
        .collect()
}

/// ptxas's report for each (PTX arch, target) pair: sm_80 PTX must also assemble for sm_90,
/// since that is what a newer GPU's driver does with it. `None` when ptxas is missing (skipped).
fn reports(test: &str) -> Option<&'static [(&'static str, &'static str, &'static str, Vec<xtask::ptxas::KernelResources>)]> {
    static REPORTS: OnceLock<Vec<(&str, &str, &str, Vec<xtask::ptxas::KernelResources>)>> = OnceLock::new();
    let ptxas = ptxas_or_skip(test)?;
    Some(REPORTS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("convrs-ptxas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut out = Vec::new();
        for (ptx_arch, text, targets) in [("sm_80", convrs::ptx::SM80, &["sm_80", "sm_90"][..]), ("sm_90", convrs::ptx::SM90, &["sm_90"][..])] {
            let file = dir.join(format!("convrs_{ptx_arch}.ptx"));
            std::fs::write(&file, text).unwrap();
            for &target in targets {
                out.push((ptx_arch, text, target, xtask::ptxas::assemble(&ptxas, &file, target).unwrap_or_else(|e| panic!("{e}"))));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        out
    }))
}

#[test]
fn every_kernel_assembles_without_spills() {
    let Some(reports) = reports("every_kernel_assembles_without_spills") else { return };
    for (ptx_arch, text, target, report) in reports {
        let expected = entries(text);
        assert!(!expected.is_empty(), "no kernel entry points in the {ptx_arch} PTX");
        for name in &expected {
            let k = report.iter().find(|k| &k.name == name).unwrap_or_else(|| panic!("ptxas did not report kernel {name}"));
            assert!(k.is_entry, "{name} should be an entry point");
            assert!(!k.spills(), "{name} spills on {target} ({ptx_arch} PTX): {k:?}");
            assert_eq!(k.stack_frame_bytes, 0, "{name} uses a stack frame on {target} ({ptx_arch} PTX): {k:?}");
            eprintln!("{ptx_arch} PTX on {target}: {name}: {} registers", k.registers);
        }
    }
}

/// Shapes whose plans, together, launch every kind of block the algorithms use: the issues'
/// targets, small and odd problems, and the tensor-core kernels' multiples of 8 and 16.
fn plan_shapes() -> Vec<Conv2d> {
    let mut shapes = vec![
        Conv2d::new(1, 6, 768, 512, 6, 6, 6),
        Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1),
        Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1),
        Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1),
        Conv2d::new(3, 5, 17, 13, 7, 1, 1).with_stride(2),
        Conv2d::new(2, 3, 30, 30, 9, 7, 7).with_pad(3).with_dilation(2),
        Conv2d::new(16, 32, 15, 13, 48, 3, 3).with_pad(1),
        Conv2d::new(32, 16, 9, 11, 16, 1, 1).with_stride(2),
        Conv2d::new(130, 9, 5, 6, 131, 3, 3).with_pad(1),
        Conv2d::new(8, 64, 28, 28, 128, 3, 3).with_pad(1),
    ];
    // Depthwise: each compiled filter size, the generic one, and the scalar NHWC entry.
    let dw = |r: usize, c: usize, k: usize| Conv2d::new(2, c, 20, 20, k, r, r).with_pad(r / 2).with_groups(c);
    shapes.extend([dw(3, 32, 32), dw(5, 32, 32), dw(7, 32, 32), dw(9, 32, 32), dw(3, 30, 60)]);
    shapes
}

#[test]
fn every_planned_kernel_is_in_the_ptx() {
    for (_, text) in convrs::ptx::ALL {
        let names = entries(text);
        for algo in Algorithm::ALL {
            for p in &plan_shapes() {
                for &dtype in algo.dtypes() {
                    if let Ok(plan) = algo.plan(p, dtype, &DeviceModel::named("a100").unwrap()) {
                        assert!(names.iter().any(|n| n == plan.kernel), "{algo} ({dtype}) plans kernel {} which is not in the PTX", plan.kernel);
                    }
                }
            }
        }
    }
}

/// A block launches only if its threads' registers fit the SM's 64 Ki (allocated per warp in
/// units of 256, i.e. 8 a thread): 512-thread blocks need at most 128 registers a thread.
/// The driver's own assembly of the PTX may differ slightly; this catches the large margins.
#[test]
fn every_planned_block_fits_the_register_file() {
    let Some(reports) = reports("every_planned_block_fits_the_register_file") else { return };
    for (ptx_arch, _, target, report) in reports {
        for (algo, dtype) in Algorithm::ALL.iter().flat_map(|a| a.dtypes().iter().map(move |d| (*a, *d))) {
            for p in &plan_shapes() {
                let Ok(plan) = algo.plan(p, dtype, &DeviceModel::named("a100").unwrap()) else { continue };
                let threads = plan.block.0 * plan.block.1 * plan.block.2;
                let k = report.iter().find(|k| k.name == plan.kernel).unwrap_or_else(|| panic!("{} not in the report", plan.kernel));
                let per_thread = k.registers.div_ceil(8) * 8;
                assert!(
                    threads * per_thread <= 65536,
                    "{algo} on {p}: {} x {threads} threads needs {per_thread} registers a thread on {target} ({ptx_arch} PTX)",
                    plan.kernel
                );
            }
        }
    }
}
