//! The kernels' PTX, built by `host/build.rs` and embedded in the library.

/// PTX built for sm_80: runs on every GPU from Ampere on (the driver compiles it at load).
pub const SM80: &str = include_str!(concat!(env!("OUT_DIR"), "/convrs_sm_80.ptx"));
/// PTX built for sm_90 (Hopper: H100, H200).
pub const SM90: &str = include_str!(concat!(env!("OUT_DIR"), "/convrs_sm_90.ptx"));

/// PTX built for sm_90a: only the entries that need Hopper's architecture-specific instructions
/// (`wgmma`), loaded beside [`SM90`] on compute capability 9.0 exactly (sm_90a code runs nowhere
/// else).
pub const SM90A: &str = include_str!(concat!(env!("OUT_DIR"), "/convrs_sm_90a.ptx"));

/// Every embedded PTX that holds the whole kernel set, with its arch name, e.g. for ptxas checks
/// ([`SM90A`] holds the Hopper-only entries alone).
pub const ALL: &[(&str, &str)] = &[("sm_80", SM80), ("sm_90", SM90)];

/// Whether a device of compute capability `cc` loads [`SM90A`] too.
pub fn loads_sm90a(cc: (i32, i32)) -> bool {
    cc == (9, 0)
}

/// The embedded arch to load on a device of compute capability `cc`, if any fits.
pub fn arch_for(cc: (i32, i32)) -> Option<&'static str> {
    match cc {
        (major, _) if major >= 9 => Some("sm_90"),
        (8, _) => Some("sm_80"),
        _ => None,
    }
}

/// The PTX text for an arch returned by [`arch_for`].
pub fn source(arch: &str) -> &'static str {
    ALL.iter().find(|(a, _)| *a == arch).map(|(_, s)| *s).unwrap_or(SM80)
}
