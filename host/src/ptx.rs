//! The kernels' PTX, built by `host/build.rs` and embedded in the library.

/// PTX built for sm_80: runs on every GPU from Ampere on (the driver compiles it at load).
pub const SM80: &str = include_str!(concat!(env!("OUT_DIR"), "/convrs_sm_80.ptx"));
/// PTX built for sm_90 (Hopper: H100, H200).
pub const SM90: &str = include_str!(concat!(env!("OUT_DIR"), "/convrs_sm_90.ptx"));

/// Every embedded PTX with its arch name, e.g. for ptxas checks.
pub const ALL: &[(&str, &str)] = &[("sm_80", SM80), ("sm_90", SM90)];

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
