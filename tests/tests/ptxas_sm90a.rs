//! The embedded sm_90a module (Hopper's `wgmma`, loaded beside the sm_90 one on compute
//! capability 9.0) holds every `wgmma_nhwc_*` entry the plans name and the warp-specialized
//! `wgmma_ws_nhwc_*` and clustered `wgmma_mc_nhwc_*` entries (and their persistent and im2col
//! steps), each
//! with the warpgroup MMA of its type and its fences, and ptxas assembles them for sm_90a with no
//! spills, no stack frame and blocks that fit the register file. CPU-only (`cargo xtask check-ptx` proves the embedded module
//! is the kernel sources' build).

use convrs::{Algorithm, Conv2d, DeviceModel};
use convrs_spec::wgmma::{Tile, MC_CLUSTER, MC_TILES, PMC_TILES, PWS_TILES, TILES, TMA_TILES, TMC_TILES, WS_THREADS, WS_TILES};

/// The warp-specialized steps' tiles (4 to 7).
fn ws_tiles() -> impl Iterator<Item = &'static Tile> {
    WS_TILES.iter().chain(&MC_TILES).chain(&PWS_TILES).chain(&PMC_TILES).chain(&TMA_TILES).chain(&TMC_TILES)
}
use convrs_tests::ptxas_or_skip;

/// The body of entry `name` in `ptx`: from `.entry name(` to LLVM's end-of-function comment (the
/// inline asm's own `{ }` blocks may close at column 0).
fn entry_body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("entry {name} not in the sm_90a PTX"));
    let body = &ptx[start..];
    &body[..body.find("// -- End function").unwrap_or(body.len())]
}

#[test]
fn wgmma_entries_hold_the_warpgroup_mma_and_nothing_else_is_in_the_module() {
    let ptx = convrs::ptx::SM90A;
    assert!(ptx.contains(".target sm_90a"), "not sm_90a PTX");
    let entries = ptx.matches(".visible .entry ").count();
    assert_eq!(entries, 2 * (TILES.len() + ws_tiles().count()), "the sm_90a module should hold the wgmma entries alone");
    for t in TILES.iter().chain(ws_tiles()) {
        let im2col = TMA_TILES.contains(t) || TMC_TILES.contains(t);
        for (name, ty) in [(t.fp16, "f16"), (t.bf16, "bf16")] {
            let body = entry_body(ptx, name);
            let count = |needle: &str| body.matches(needle).count();
            // One per k16 step of a loop that ptxas unrolls (4 HGMMA a k-tile in the SASS).
            let mma = format!("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{ty}.{ty}", t.bn);
            assert!(count(&mma) >= 1, "{name}: no {mma}");
            let other = if ty == "f16" { ".bf16.bf16" } else { ".f32.f16.f16" };
            assert_eq!(count(other), 0, "{name}: a wgmma of the other type");
            for needle in ["wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned"] {
                assert!(count(needle) >= 1, "{name}: no {needle}");
            }
            // Activations by cp.async need the generic-to-async proxy fence before wgmma reads
            // them; step 7's arrive by TMA (im2col mode) and need none.
            // (The barrier initialisation's fence comes with one of its own.)
            let fences = count("fence.proxy.async.shared::cta") - count("fence.mbarrier_init");
            assert_eq!(fences >= 1, !im2col, "{name}: proxy fence");
            assert_eq!(count("cp.async.cg.shared.global") >= 1, !im2col, "{name}: cp.async activations");
            assert_eq!(count("cp.async.bulk.tensor.4d.shared::cluster.global.im2col") >= 1, im2col, "{name}: im2col TMA");
            // The 16-bit epilogue of its type (ConvShape::y_bits) beside the fp32 one; the
            // warp-specialized steps store 16 bytes a lane after quad shuffles.
            let wide = if TILES.contains(t) { "st.global.v2.f32" } else { "st.global.v4.b32" };
            assert!(count(&format!("cvt.rn.{ty}x2.f32")) >= 1 && count(wide) >= 1, "{name}: an output path is missing");
            assert_eq!(count("ld.local") + count("st.local"), 0, "{name}: local memory in the PTX");
        }
    }
}

#[test]
fn wgmma_entries_assemble_for_sm_90a_without_spills_and_fit_the_register_file() {
    let Some(ptxas) = ptxas_or_skip("wgmma_entries_assemble_for_sm_90a_without_spills_and_fit_the_register_file") else { return };
    let file = std::env::temp_dir().join(format!("convrs-test-{}-sm_90a.ptx", std::process::id()));
    std::fs::write(&file, convrs::ptx::SM90A).unwrap();
    let report = xtask::ptxas::assemble(&ptxas, &file, "sm_90a").unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_file(&file).ok();
    // The warp-specialized entries: 384 threads, `setmaxnreg` needing the `.maxntid` the link step
    // inserts (ptxas then caps the entry at 65536 / 384 registers a thread).
    for t in ws_tiles() {
        for name in [t.fp16, t.bf16] {
            let k = report.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{name} not in ptxas's report"));
            assert!(!k.spills() && k.stack_frame_bytes == 0, "{name} spills or uses a stack frame on sm_90a: {k:?}");
            assert!(!k.wgmma_serialized, "{name}: ptxas serialized its wgmmas (C7518)");
            assert!(WS_THREADS as u32 * k.registers.div_ceil(8) * 8 <= 65536, "{name}: {WS_THREADS} threads x {} registers", k.registers);
            let body = entry_body(convrs::ptx::SM90A, name);
            assert!(body.contains(&format!(".maxntid {WS_THREADS}, 1, 1")), "{name}: no .maxntid for setmaxnreg");
            assert!(body.contains("setmaxnreg.dec.sync.aligned.u32") && body.contains("setmaxnreg.inc.sync.aligned.u32"), "{name}: no setmaxnreg");
            assert!(body.contains("cp.async.bulk.tensor.3d") && body.contains("mbarrier.try_wait"), "{name}: no TMA load or mbarrier wait");
            // Step 5's entries carry their cluster shape, multicast the filter and arrive remotely.
            let clustered = MC_TILES.contains(t) || PMC_TILES.contains(t) || TMC_TILES.contains(t);
            assert_eq!(body.contains(&format!(".reqnctapercluster {MC_CLUSTER}, 1, 1")), clustered, "{name}: cluster directive");
            assert_eq!(body.contains(".multicast::cluster") && body.contains("mapa.shared::cluster"), clustered, "{name}: multicast and remote arrivals");
        }
    }
    let h100 = DeviceModel::named("h100").unwrap();
    let shapes = [Conv2d::new(256, 256, 14, 14, 512, 3, 3).with_pad(1), Conv2d::new(8, 64, 56, 56, 64, 1, 1), Conv2d::new(32, 512, 7, 7, 512, 3, 3).with_pad(1)];
    for algo in [Algorithm::WgmmaNhwc, Algorithm::WgmmaNhwcBf16, Algorithm::WgmmaWsNhwc, Algorithm::WgmmaWsNhwcBf16, Algorithm::WgmmaMcNhwc, Algorithm::WgmmaMcNhwcBf16, Algorithm::WgmmaPwsNhwc, Algorithm::WgmmaPmcNhwcBf16, Algorithm::WgmmaTmaNhwc, Algorithm::WgmmaTmcNhwcBf16] {
        for p in &shapes {
            let plan = algo.plan(p, &h100).unwrap_or_else(|e| panic!("{algo} on {p}: {e}"));
            let k = report.iter().find(|k| k.name == plan.kernel).unwrap_or_else(|| panic!("{} not in ptxas's report", plan.kernel));
            assert!(!k.spills() && k.stack_frame_bytes == 0, "{} spills or uses a stack frame on sm_90a: {k:?}", plan.kernel);
            let threads = plan.block.0 * plan.block.1 * plan.block.2;
            assert!(threads * k.registers.div_ceil(8) * 8 <= 65536, "{}: {threads} threads x {} registers", plan.kernel, k.registers);
            eprintln!("sm_90a: {}: {} registers", plan.kernel, k.registers);
        }
    }
}
