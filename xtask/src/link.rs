//! Our stand-in for rustc's `llvm-bitcode-linker` (see the crate docs for why).

use std::path::PathBuf;
use std::process::Command;

/// Set in the kernel build's environment; a process started with it set is acting as the linker.
pub const LINKER_MODE_ENV: &str = "CONVRS_PTX_LINKER_MODE";

/// If rustc started this executable as the nvptx linker, links and exits; otherwise returns.
pub fn link_if_invoked_as_linker() {
    if std::env::var_os(LINKER_MODE_ENV).is_none() {
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match link(&args) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("convrs ptx linker: {e}");
            std::process::exit(1);
        }
    }
}

/// What rustc asks of the bitcode linker.
#[derive(Default, Debug)]
struct LinkRequest {
    inputs: Vec<PathBuf>,
    exports: Vec<String>,
    output: Option<PathBuf>,
    cpu: Option<String>,
    opt_level: String,
}

fn parse(args: &[String]) -> Result<LinkRequest, String> {
    let mut req = LinkRequest { opt_level: "3".into(), ..Default::default() };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("`{name}` needs a value"));
        match a.as_str() {
            "--export-symbol" => req.exports.push(value(a)?),
            "-o" => req.output = Some(value(a)?.into()),
            "--target-cpu" => req.cpu = Some(value(a)?),
            "--target" | "-L" | "--linker-flavor" => {
                value(a)?;
            }
            "--debug" => {}
            s if s.starts_with("-O") => req.opt_level = s[2..].to_string(),
            s if s.starts_with('-') => return Err(format!("unexpected linker argument `{s}`")),
            s => req.inputs.push(s.into()),
        }
    }
    Ok(req)
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    if status.success() { Ok(()) } else { Err(format!("{:?} failed ({status})", cmd.get_program())) }
}

fn link(args: &[String]) -> Result<(), String> {
    let req = parse(args)?;
    let output = req.output.ok_or("no `-o` output given")?;
    let cpu = req.cpu.ok_or("no `--target-cpu` given")?;
    let tools = crate::llvm_tools_dir()?;
    let work = output.with_extension("link");
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;

    let linked = work.join("linked.bc");
    run(Command::new(tools.join("llvm-link")).arg("--ignore-non-bitcode").args(&req.inputs).arg("-o").arg(&linked))?;

    // Internalizing everything but the kernels lets globaldce drop unused core code.
    let exports = work.join("exports.txt");
    std::fs::write(&exports, req.exports.join("\n")).map_err(|e| format!("cannot write {}: {e}", exports.display()))?;
    let level = match req.opt_level.as_str() {
        "0" | "1" | "2" | "3" => req.opt_level.clone(),
        _ => "2".to_string(), // "s"/"z": size levels have no meaning for PTX; a plain level stands in.
    };
    let optimized = work.join("optimized.bc");
    run(Command::new(tools.join("opt"))
        .arg(&linked)
        .arg("--strip-debug") // nvptx cannot lower debug info from build-std's core.
        .arg(format!("--internalize-public-api-file={}", exports.display()))
        .arg(format!("--passes=default<O{level}>,internalize,globaldce"))
        .arg("-o")
        .arg(&optimized))?;

    run(Command::new(tools.join("llc")).arg(format!("--mcpu={cpu}")).arg(&optimized).arg("-o").arg(&output))?;
    let ptx = std::fs::read_to_string(&output).map_err(|e| format!("cannot read {}: {e}", output.display()))?;
    let bounded = add_launch_bounds(&strip_label_comments(&ptx), &cpu);
    if bounded != ptx {
        std::fs::write(&output, bounded).map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    }
    Ok(())
}

/// Launch bounds of an entry, which rustc cannot emit: `.maxntid THREADS, 1, 1` and
/// `.minnctapersm BLOCKS`, and with a cluster size above 1 also `.explicitcluster` and
/// `.reqnctapercluster CLUSTER, 1, 1` (a plain launch then forms the clusters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bounds {
    threads: u32,
    cluster: usize,
    blocks: u32,
}

/// The bounds of entry `name`, if it has any. The warp-specialized Hopper entries (every
/// configuration of `convrs_spec::hopper` whose policy is warp-specialized) need them for
/// `setmaxnreg`, which takes effect only when ptxas knows the register count at entry
/// (notes/hopper.md §5), and for their clusters. `wmma_patch` caps registers so that several
/// blocks fit on an SM (it is latency-bound: resident blocks hide its copies), and so does
/// `depthwise_tile_*` (two blocks an SM, one's copies under the other's arithmetic: uncapped, its
/// 3x3 entries take 138-152 registers). Only these
/// entries change; every other entry's PTX stays byte-identical.
fn bounds(name: &str) -> Option<Bounds> {
    use convrs_spec::hopper::CONFIGS;
    if let Some(c) = CONFIGS.iter().find(|c| c.entries.contains(&name)) {
        let p = c.policy;
        return p.warp_specialized().then_some(Bounds { threads: p.threads() as u32, cluster: p.cluster, blocks: 1 });
    }
    if name.starts_with("depthwise_tile_") {
        use convrs_spec::depthwise::{TILE_MIN_BLOCKS, TILE_THREADS};
        return Some(Bounds { threads: TILE_THREADS, cluster: 1, blocks: TILE_MIN_BLOCKS });
    }
    use convrs_spec::patch::TILES;
    TILES.iter().position(|t| t.entries().contains(&name)).map(|i| Bounds {
        threads: convrs_spec::patch::THREADS as u32,
        cluster: 1,
        blocks: convrs_spec::patch::MIN_BLOCKS[i],
    })
}

/// Drops llc's comments after basic-block labels (`$L__BB3_7:  // %name.exit`): they name
/// inlined functions by their mangled symbols, whose crate hash depends on the checkout's path,
/// so the shipped PTX would differ between clones of the same commit.
fn strip_label_comments(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    for line in ptx.split_inclusive('\n') {
        match (line.starts_with("$L__"), line.find("//")) {
            (true, Some(at)) => {
                out.push_str(line[..at].trim_end());
                out.push('\n');
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// Inserts each entry's [`bounds`] between its parameter list and its body (the first line that
/// is exactly `{` after the entry line).
fn add_launch_bounds(ptx: &str, cpu: &str) -> String {
    // sm_80's ptxas spills `wmma_patch_128x32` under 5 blocks' registers; 4 there, 5 on sm_90.
    let cap = if cpu.starts_with("sm_8") { 4 } else { u32::MAX };
    let mut out = String::with_capacity(ptx.len() + 256);
    let mut pending: Option<Bounds> = None;
    for line in ptx.split_inclusive('\n') {
        if let Some(entry) = line.trim_start().strip_prefix(".visible .entry ").or_else(|| line.trim_start().strip_prefix(".entry ")) {
            let name = entry.split('(').next().unwrap_or(entry).trim();
            pending = bounds(name).map(|b| Bounds { blocks: b.blocks.min(cap), ..b });
        }
        if let (Some(b), "{") = (pending, line.trim_end()) {
            out.push_str(&format!(".maxntid {}, 1, 1\n.minnctapersm {}\n", b.threads, b.blocks));
            if b.cluster > 1 {
                out.push_str(&format!(".explicitcluster\n.reqnctapercluster {}, 1, 1\n", b.cluster));
            }
            pending = None;
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_comments_go_and_nothing_else_changes() {
        let ptx = "$L__BB0_2:                              // %_RNvCs1a2b_4spec2of.exit\n\tadd.s32 %r1, %r2, 1; // kept\n$L__BB0_3:\n";
        assert_eq!(strip_label_comments(ptx), "$L__BB0_2:\n\tadd.s32 %r1, %r2, 1; // kept\n$L__BB0_3:\n");
    }

    #[test]
    fn parses_rustc_arguments() {
        let args: Vec<String> = [
            "--export-symbol", "k1", "-L", "/x", "a.o", "--target", "nvptx64-nvidia-cuda", "--target-cpu",
            "sm_90", "-O3", "--export-symbol", "k2", "b.rlib", "-o", "out.ptx",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let r = parse(&args).unwrap();
        assert_eq!(r.exports, ["k1", "k2"]);
        assert_eq!(r.inputs, [PathBuf::from("a.o"), PathBuf::from("b.rlib")]);
        assert_eq!(r.cpu.as_deref(), Some("sm_90"));
        assert_eq!(r.opt_level, "3");
        assert_eq!(r.output, Some(PathBuf::from("out.ptx")));
    }

    #[test]
    fn launch_bounds_go_before_the_body_of_matching_entries() {
        // A multistage entry has none; a warp-specialized one gets its threads.
        let ptx = ".visible .entry wgmma_multistage_128x256k64(\n\t.param .u64 a_param_0\n)\n{\n\tret;\n}\n.visible .entry wgmma_ws_cpasync_128x256k64(\n\t.param .u64 p\n)\n{\n\tret;\n}\n";
        let want = ".visible .entry wgmma_multistage_128x256k64(\n\t.param .u64 a_param_0\n)\n{\n\tret;\n}\n.visible .entry wgmma_ws_cpasync_128x256k64(\n\t.param .u64 p\n)\n.maxntid 384, 1, 1\n.minnctapersm 1\n{\n\tret;\n}\n";
        assert_eq!(add_launch_bounds(ptx, "sm_90a"), want);
        let mc = ".visible .entry wgmma_ws_tma_persistent_cluster2_bf16_128x128k64(\n)\n{\n\tret;\n}\n";
        let want = ".visible .entry wgmma_ws_tma_persistent_cluster2_bf16_128x128k64(\n)\n.maxntid 384, 1, 1\n.minnctapersm 1\n.explicitcluster\n.reqnctapercluster 2, 1, 1\n{\n\tret;\n}\n";
        assert_eq!(add_launch_bounds(mc, "sm_90a"), want);
        // Every warp-specialized configuration's entries have bounds; names not in the table none.
        for c in convrs_spec::hopper::CONFIGS {
            for &e in c.entries {
                assert_eq!(bounds(e).is_some(), c.policy.warp_specialized(), "{e}");
            }
        }
        assert_eq!(bounds("wgmma_ws_unknown"), None);
        assert_eq!(bounds("wmma_patch_bf16_128x64").map(|b| b.blocks), Some(convrs_spec::patch::MIN_BLOCKS[1]));
        assert_eq!(bounds("wmma_patch_128x32c8").map(|b| b.blocks), Some(convrs_spec::patch::MIN_BLOCKS[0]));
        assert_eq!(bounds("wmma_patch_nchw_bf16_128x32").map(|b| b.blocks), Some(convrs_spec::patch::MIN_BLOCKS[0]));
        assert_eq!(bounds("wmma_patch_128x6"), None);
    }

    #[test]
    fn rejects_unknown_flags() {
        assert!(parse(&["--frobnicate".to_string()]).is_err());
    }
}
