fn main() {
    xtask::link_if_invoked_as_linker();
    let root = xtask::workspace_root();
    let ptx = xtask::build_ptx("sm_90", &root.join("target/ptx/sm_90")).unwrap();
    println!("{}", ptx.display());
}
