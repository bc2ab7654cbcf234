//! The embedded sm_90a module (Hopper's `wgmma`, loaded beside the sm_90 one on compute
//! capability 9.0) holds exactly the entries of `convrs_spec::hopper::CONFIGS`, each with the
//! warpgroup MMA of its type and the copies, fences and launch bounds of its policy, and ptxas
//! assembles them for sm_90a with no spills, no stack frame, no serialized wgmma, and the
//! occupancy the cost model assumes; and every sm_90 and sm_90a entry waits for the kernel
//! before it in the stream before it touches global memory. CPU-only (`cargo xtask check-ptx`
//! proves the embedded modules are the kernel sources' build).

use convrs::plan::hopper::registers;
use convrs::plan::model::blocks_per_sm;
use convrs::DeviceModel;
use convrs_spec::hopper::{Math, Producer, CONFIGS};
use convrs_tests::ptxas_or_skip;

/// The body of entry `name` in `ptx`: from `.entry name(` to LLVM's end-of-function comment (the
/// inline asm's own `{ }` blocks may close at column 0).
fn entry_body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("entry {name} not in the sm_90a PTX"));
    let body = &ptx[start..];
    &body[..body.find("// -- End function").unwrap_or(body.len())]
}

#[test]
fn wgmma_entries_hold_their_policy_and_nothing_else_is_in_the_module() {
    let ptx = convrs::ptx::SM90A;
    assert!(ptx.contains(".target sm_90a"), "not sm_90a PTX");
    let entries: usize = CONFIGS.iter().map(|c| c.entries.len()).sum();
    assert_eq!(ptx.matches(".visible .entry ").count(), entries, "the sm_90a module should hold the Hopper entries alone");
    for c in &CONFIGS {
        let p = c.policy;
        let typed: Vec<(&str, &str)> = match p.math {
            Math::Half => vec![(c.entries[0], "f16"), (c.entries[1], "bf16")],
            Math::Tf32 | Math::Tf32x3 => vec![(c.entries[0], "tf32")],
        };
        for (name, ty) in typed {
            let body = entry_body(ptx, name);
            let count = |needle: &str| body.matches(needle).count();
            // One per 32-byte step of a loop that ptxas unrolls (4 HGMMA a k-tile in the SASS;
            // 12 for 3xTF32).
            let k = if ty == "tf32" { 8 } else { 16 };
            let mma = format!("wgmma.mma_async.sync.aligned.m64n{}k{k}.f32.{ty}.{ty}", c.bn);
            assert!(count(&mma) >= 1, "{name}: no {mma}");
            for other in [".f16.f16", ".bf16.bf16", ".tf32.tf32"].into_iter().filter(|o| *o != format!(".{ty}.{ty}")) {
                assert_eq!(count(other), 0, "{name}: a wgmma of another type ({other})");
            }
            // 3xTF32: A from registers (ldmatrix, split by cvt.rna.tf32), three wgmmas a step,
            // and the filter's high and low tiles by two TMA copies.
            // On NCHW pixel planes A comes through registers in TF32 too, by 4-byte shared loads.
            let x3 = p.math == Math::Tf32x3;
            let pixel_planes = p.producer == Producer::PlanePixels;
            if pixel_planes {
                assert!(count("ld.shared.f32") >= 16, "{name}: register A fragments from the plane copies");
                assert_eq!(count("cvt.rna.tf32.f32") >= 2, x3, "{name}: A split in TF32 (3xTF32 only)");
            } else {
                assert_eq!(count("ldmatrix.sync.aligned.m8n8.x4") >= 1 && count("cvt.rna.tf32.f32") >= 2, x3, "{name}: register A fragments split in TF32");
            }
            assert!(!x3 || count("cp.async.bulk.tensor.3d") >= 2, "{name}: two filter copies a k-tile");
            for needle in ["wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned"] {
                assert!(count(needle) >= 1, "{name}: no {needle}");
            }
            // Activations by cp.async need the generic-to-async proxy fence before wgmma reads
            // them; by TMA (im2col mode) they need none. (The barrier initialisation's fence
            // comes with one of its own.)
            // NCHW planes come by tiled TMA (3-D, like the filter; NCHW rows 4-D) and are read
            // as an MN-major B: every wgmma with the transpose-B immediate set, and no other wgmma's.
            let rows = p.producer == Producer::PlaneRows;
            let planes = p.producer.nchw_planes() || rows;
            // NCHW patches (step 17) land by tiled 3-D copies and are transposed by
            // ldmatrix.trans and stmatrix into K-major A operands (fenced for the async proxy).
            let patch = p.producer == Producer::NchwPatch;
            assert_eq!(count("ldmatrix.sync.aligned.m8n8.x4.trans") >= 1 && count("stmatrix.sync.aligned.m8n8.x4") >= 1, patch, "{name}: the patch transposes");
            assert_eq!(count("cp.async.bulk.tensor.4d.shared::cluster.global.tile") >= 1, rows, "{name}: tiled 4-D row copies");
            // The fused residual by TMA (`Config::takes_residual_map`): 2-D tiled copies.
            assert_eq!(count("cp.async.bulk.tensor.2d.shared::cluster.global.tile") >= 1, c.takes_residual_map(), "{name}: the residual's 2-D copies");
            let by_tma = p.input_map();
            let fences = count("fence.proxy.async.shared::cta") - count("fence.mbarrier_init");
            // (A fused epilogue stages its accumulators in the last stage's A tile and fences its
            // generic writes before the stage's next copy: every fusing entry has one too, but
            // those that fuse it in their NCHW store's own staging, outside the ring.)
            let in_store = p.epilogue_in_nchw_store();
            assert_eq!(fences >= 1, !by_tma || (c.fuses_epilogue() && !in_store) || patch, "{name}: proxy fence");
            if c.fuses_epilogue() && !in_store {
                assert!(count("st.shared.v2.f32") >= 1 && count("ld.shared.v4.f32") >= 1, "{name}: the fused epilogue's staging");
            }
            if in_store && p.math == Math::Half {
                // The NCHW store's epilogue reads the residual in the runs it stores: 8 pixels of
                // 16 bits (16 bytes), pairs, single pixels (and fp32 outputs' 16-byte halves).
                assert!(c.fuses_epilogue(), "{name}: the NCHW store fuses");
                for load in ["ld.global.nc.v4.u32", "ld.global.nc.u32", "ld.global.nc.u16", "ld.global.nc.v4.f32"] {
                    assert!(count(load) >= 1, "{name}: the NCHW store's residual loads ({load})");
                }
            }
            // Step 16's residual slots come by cp.async too (`hopper/nchw_residual.rs`): 16-byte
            // copies (.cg) where the runs are 8 pixels, 8- and 4-byte ones (.ca) else, each
            // thread waiting for its own.
            let slots = c.takes_nchw_slots();
            assert_eq!(count("cp.async.cg.shared.global") >= 1, !by_tma || slots, "{name}: cp.async activations or residual slots");
            if slots {
                assert!(count("cp.async.ca.shared.global") >= 2 && count("cp.async.wait_group 0") >= 1, "{name}: the residual slots' short copies and wait");
            }
            assert_eq!(count("cp.async.bulk.tensor.4d.shared::cluster.global.im2col") >= 1, by_tma && !planes && !patch, "{name}: im2col TMA");
            if p.math == Math::Half {
                let transposed = body.lines().filter(|l| l.contains("wgmma.mma_async") && l.trim_end().ends_with(", 0, 1;")).count();
                assert_eq!(transposed, if planes { count(&mma) } else { 0 }, "{name}: transpose-B wgmmas");
            }
            // The split-K entries alone take a workspace (one more pointer parameter) and meet in it;
            // every entry takes the fused epilogue's three addresses and its residual's map
            // (`convrs_spec::epilogue_fields!`).
            let pointers = body[..body.find(')').unwrap()].matches(".param .u64").count();
            let expected = 3 + p.filter_map() as usize + p.input_map() as usize + p.split_k() as usize + 4;
            assert_eq!(pointers, expected, "{name}: pointer parameters");
            assert_eq!(count("atom.acq_rel.gpu.global.add.u32") >= 1, p.split_k(), "{name}: split-K counters");
            // The 16-bit epilogue of its type (ConvShape::y_bits) beside the fp32 one; the
            // warp-specialized steps store 16 bytes a lane after quad shuffles, except into NCHW
            // planes (step 16): a pixel pair of a channel (4 bytes), or one pixel.
            if p.math == Math::Half {
                let nchw_out = matches!(p.producer, Producer::WsTmaNchw | Producer::NchwPatch);
                let wide = if p.warp_specialized() { "st.global.v4.b32" } else { "st.global.v2.f32" };
                assert!(count(&format!("cvt.rn.{ty}x2.f32")) >= 1 && count(wide) >= 1, "{name}: an output path is missing");
                // Into NCHW planes (step 16) in runs of 8, 4, 2 or 1 pixels of a channel, as
                // P*Q allows, from the staging read down the columns.
                let runs = count("st.global.u32") >= 1 && count("st.global.b16") >= 1 && count("ld.shared.f32") >= 8;
                assert_eq!(runs, nchw_out, "{name}: NCHW runs of pixels");
            } else {
                // fp32 data writes fp32 only (a pair a store; on pixel planes, one element: a
                // pair's channels are a plane apart).
                let store = if pixel_planes { "st.global.f32" } else { "st.global.v2.f32" };
                assert!(count(store) >= 1 && count("cvt.rn.f16x2.f32") + count("cvt.rn.bf16x2.f32") == 0, "{name}: fp32 outputs only");
            }
            assert_eq!(count("ld.local") + count("st.local"), 0, "{name}: local memory in the PTX");
            // Launch bounds (inserted by the link step) on the warp-specialized entries alone:
            // `setmaxnreg` needs ptxas to know the register count at entry.
            let bounds = format!(".maxntid {}, 1, 1", c.threads());
            assert_eq!(body.contains(&bounds), p.warp_specialized(), "{name}: launch bounds");
            assert_eq!(body.contains("setmaxnreg.dec.sync.aligned.u32") && body.contains("setmaxnreg.inc.sync.aligned.u32"), p.warp_specialized(), "{name}: setmaxnreg");
            assert_eq!(body.contains("cp.async.bulk.tensor.3d") && body.contains("mbarrier.try_wait"), p.filter_map(), "{name}: filter TMA and mbarrier waits");
            // Clusters carry their shape, multicast the filter and arrive remotely.
            let clustered = p.cluster > 1;
            assert_eq!(body.contains(&format!(".reqnctapercluster {}, 1, 1", p.cluster)), clustered, "{name}: cluster directive");
            assert_eq!(body.contains(".multicast::cluster") && body.contains("mapa.shared::cluster"), clustered, "{name}: multicast and remote arrivals");
        }
    }
}

#[test]
fn wgmma_entries_assemble_without_spills_at_the_modelled_occupancy() {
    let Some(ptxas) = ptxas_or_skip("wgmma_entries_assemble_without_spills_at_the_modelled_occupancy") else { return };
    let file = std::env::temp_dir().join(format!("convrs-test-{}-sm_90a.ptx", std::process::id()));
    std::fs::write(&file, convrs::ptx::SM90A).unwrap();
    let report = xtask::ptxas::assemble(&ptxas, &file, "sm_90a").unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_file(&file).ok();
    for d in ["h100", "h200"].map(|n| DeviceModel::named(n).unwrap()) {
        for c in &CONFIGS {
            for &name in c.entries {
                let k = report.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{name} not in ptxas's report"));
                assert!(!k.spills() && k.stack_frame_bytes == 0, "{name} spills or uses a stack frame on sm_90a: {k:?}");
                assert!(!k.wgmma_serialized, "{name}: ptxas serialized its wgmmas (C7518)");
                // The cost model's registers are not a copy of ptxas's count: they are the bound
                // the entry carries (ptxas allocates exactly it under .maxntid / .minnctapersm 1)
                // or, unbounded, the most a thread can have. Either way the block fits the
                // register file, and the occupancy the model plans with is the one ptxas's count
                // gives on the device.
                let regs = k.registers as usize;
                assert!(regs <= registers(c), "{name}: {regs} registers, the model assumes at most {}", registers(c));
                if c.policy.producer != Producer::Multistage {
                    assert_eq!(regs, registers(c), "{name}: the warp-specialized entries get exactly their bound");
                }
                assert!(c.threads() * regs.div_ceil(8) * 8 <= 65536, "{name}: {} threads x {regs} registers", c.threads());
                let (model, actual) = (blocks_per_sm(&d, c.threads(), registers(c), c.smem_bytes()), blocks_per_sm(&d, c.threads(), regs, c.smem_bytes()));
                assert_eq!(model, actual, "{name} on {}: the model's occupancy ({model} blocks) is not ptxas's ({actual})", d.name);
                eprintln!("sm_90a: {name}: {regs} registers, {actual} block(s) per SM");
            }
        }
    }
}

/// The opcode of PTX instruction line `line` (its guard predicate dropped), or "" for a label,
/// directive or brace.
fn opcode(line: &str) -> &str {
    let line = line.trim();
    let line = if line.starts_with('@') { line.split_once(' ').map_or("", |(_, rest)| rest.trim_start()) } else { line };
    let op = line.split(|c: char| c.is_whitespace() || c == ';').next().unwrap_or("");
    if op.is_empty() || op.starts_with('.') || op.starts_with("//") || op.ends_with(':') || op == "{" || op == "}" { "" } else { op }
}

/// Whether `op` may touch global memory: loads and stores outside the parameter, shared, local
/// and constant spaces (generic ones included), copies, atomics and reductions outside shared
/// memory, and prefetches other than a tensor map's (the maps are written by the host before
/// the launch, never by a kernel).
fn touches_global(op: &str) -> bool {
    // The state space follows any ordering qualifiers (`ld.volatile.shared`); none is generic.
    let private = [".param", ".shared", ".local", ".const"].iter().any(|s| op.contains(s));
    if op.starts_with("ld.") || op.starts_with("st.") || op.starts_with("ldu.") {
        !private
    } else if op.starts_with("atom.") || op.starts_with("red.") {
        !op.contains(".shared")
    } else if op.starts_with("prefetch") {
        op != "prefetch.tensormap"
    } else {
        op.starts_with("cp.") || op.starts_with("tex.") || op.starts_with("suld.") || op.starts_with("sust.") || op.starts_with("multimem.")
    }
}

/// Programmatic dependent launch (notes/launch.md): a kernel's blocks may start before the
/// previous kernel in the stream has finished, so every entry of the sm_90 and sm_90a modules
/// must execute `griddepcontrol.wait` before anything that may read or write global memory (the
/// previous kernel may still be writing its inputs, or reading the buffer it is about to write).
/// The Hopper entries set up shared memory and prefetch their tensor maps first
/// (`set_up_first`); everything else waits at entry.
#[test]
fn every_sm90_entry_waits_for_its_predecessor_before_touching_global_memory() {
    for (arch, ptx) in [("sm_90", convrs::ptx::SM90), ("sm_90a", convrs::ptx::SM90A)] {
        let mut entries = 0;
        for (at, _) in ptx.match_indices(".visible .entry ") {
            let name = ptx[at + ".visible .entry ".len()..].split('(').next().unwrap_or("?");
            let body = entry_body(ptx, name);
            let wait = body.find("griddepcontrol.wait").unwrap_or_else(|| panic!("{arch} entry {name} never waits for its predecessor"));
            let early: Vec<&str> = body[..wait].lines().map(opcode).filter(|op| touches_global(op)).collect();
            assert!(early.is_empty(), "{arch} entry {name} touches global memory before griddepcontrol.wait: {early:?}");
            entries += 1;
        }
        assert!(entries > 100, "{arch}: only {entries} entries found");
    }
    // The classifier itself.
    assert!(touches_global("ld.global.nc.v4.u32") && touches_global("ld.u32") && touches_global("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"));
    assert!(touches_global("st.global.v4.b32") && touches_global("red.global.add.u32") && touches_global("prefetch.global.L2"));
    assert!(!touches_global("ld.param.u64") && !touches_global("st.shared.v4.b32") && !touches_global("ld.volatile.shared.u32") && !touches_global("prefetch.tensormap") && !touches_global("mbarrier.init.shared::cta.b64"));
    assert_eq!(opcode("\t@%p1 ld.global.u32 \t%r1, [%rd1];"), "ld.global.u32");
    assert_eq!(opcode("$L__BB0_2:"), "");
}
