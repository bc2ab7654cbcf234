//! The `wmma_nhwc` and `wmma_nhwcnc` entries of the embedded PTX (fp16 and bf16) really use the
//! tensor-core instructions (`mma.sync` m16n8k16 of their type, `ldmatrix`, `cp.async`), so a
//! refactor cannot silently fall back to scalar code. CPU-only: reads the PTX text.

/// The body of entry `name` in `ptx` (from `.entry name(` to the closing brace at column 0).
fn entry_body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("entry {name} not in the PTX"));
    let body = &ptx[start..];
    let end = body.find("\n}").unwrap_or(body.len());
    &body[..end]
}

#[test]
fn wmma_entries_use_mma_sync_and_ldmatrix() {
    use convrs::plan::tensor_core::{nhwc, nhwcnc};
    let f16 = nhwc::kernel_names().into_iter().chain(nhwcnc::kernel_names()).map(|n| (n, "f16"));
    let bf16 = nhwc::kernel_names_bf16().into_iter().chain(nhwcnc::kernel_names_bf16()).map(|n| (n, "bf16"));
    let names: Vec<_> = f16.chain(bf16).collect();
    assert_eq!(names.len(), 20);
    for (arch, ptx) in convrs::ptx::ALL {
        for &(name, ty) in &names {
            let body = entry_body(ptx, name);
            let count = |needle: &str| body.matches(needle).count();
            let mma = format!("mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32");
            assert!(count(&mma) >= 16, "{arch} {name}: too few {mma}");
            let other = if ty == "f16" { ".bf16.bf16" } else { ".f32.f16.f16" };
            assert_eq!(count(other), 0, "{arch} {name}: an mma of the other type");
            assert!(count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") >= 4, "{arch} {name}: no ldmatrix.x4");
            assert!(count("cp.async.cg.shared.global") >= 2, "{arch} {name}: no 16-byte cp.async");
            assert!(count("cp.async.wait_group") >= 1, "{arch} {name}: no cp.async.wait_group");
            assert_eq!(count("ld.local") + count("st.local"), 0, "{arch} {name}: local memory in the PTX");
            assert_eq!(count("wmma."), 0, "{arch} {name}: the old wmma.* API");
        }
    }
}

/// The fp32 entries (`wmma_nhwc_tf32_*`, `wmma_nhwc_3xtf32_*`) use the TF32 `mma.sync` (three per
/// product under 3xTF32, after the splits' `cvt.rna.tf32.f32`), `ldmatrix` and `cp.async`, and
/// no 16-bit MMA.
#[test]
fn wmma_f32_entries_use_tf32_mma_sync() {
    use convrs::plan::tensor_core::nhwc_f32;
    use convrs_spec::hopper::Math;
    for (arch, ptx) in convrs::ptx::ALL {
        for math in [Math::Tf32, Math::Tf32x3] {
            for name in nhwc_f32::kernel_names(math) {
                let body = entry_body(ptx, name);
                let count = |needle: &str| body.matches(needle).count();
                let mma = count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
                assert!(mma >= 16, "{arch} {name}: {mma} tf32 mma.sync");
                assert_eq!(count("m16n8k16"), 0, "{arch} {name}: a 16-bit MMA");
                let splits = count("cvt.rna.tf32.f32");
                if math == Math::Tf32x3 {
                    assert!(mma % 3 == 0 && splits > 0, "{arch} {name}: {mma} MMAs, {splits} splits");
                } else {
                    assert_eq!(splits, 0, "{arch} {name}: TF32 drops the low bits, it does not round");
                }
                assert!(count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") >= 4, "{arch} {name}: no ldmatrix.x4");
                assert!(count("cp.async.cg.shared.global") >= 2, "{arch} {name}: no 16-byte cp.async");
                assert_eq!(count("ld.local") + count("st.local"), 0, "{arch} {name}: local memory in the PTX");
            }
        }
    }
}
