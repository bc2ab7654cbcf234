//! The `wmma_nhwcnc` entries in the embedded PTX really use the tensor cores: their bodies hold
//! `wmma.load` (A and B from shared memory), `wmma.mma.sync` and `wmma.store` (CPU only).

use convrs::plan::DeviceLimits;
use convrs::{Algorithm, Conv2d};

/// The text of entry `name` in `ptx`, from its `.entry` line to the closing brace at column 0.
fn entry_body<'a>(ptx: &'a str, name: &str) -> Option<&'a str> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let rest = &ptx[start..];
    let end = rest.find("\n}").map_or(rest.len(), |e| e + 2);
    Some(&rest[..end])
}

#[test]
fn wmma_nhwcnc_entries_use_wmma_instructions() {
    let shapes = [
        Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1),
        Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1),
        Conv2d::new(64, 64, 56, 56, 64, 3, 3).with_pad(1),
    ];
    let mut checked = 0;
    for (arch, ptx) in [("sm_80", convrs::ptx::SM80), ("sm_90", convrs::ptx::SM90)] {
        for p in &shapes {
            let plan = Algorithm::WmmaNhwcnc.plan(p, &DeviceLimits::SM80).unwrap();
            let body = entry_body(ptx, plan.kernel).unwrap_or_else(|| panic!("{} not in the {arch} PTX", plan.kernel));
            for needle in [
                "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32",
                "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16",
                "wmma.load.b.sync.aligned.row.m16n16k16.shared.f16",
                "wmma.store.d.sync.aligned.row.m16n16k16.global.f32",
                "cp.async.cg.shared.global",
            ] {
                assert!(body.contains(needle), "{} ({arch}) lacks `{needle}`", plan.kernel);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}
