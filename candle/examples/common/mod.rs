//! What the examples share: the timing, the `--iters` flag, and the error measure.
// Each example is compiled with its own copy of this module and uses a part of it.
#![allow(dead_code)]

use std::time::Instant;

use candle_core::{DType, Device, Tensor};

/// Median milliseconds of `iters` calls of `f`, each followed by a device synchronize, after
/// `warmups` untimed calls: what a caller waits, host launch time included.
pub fn median_ms(f: &dyn Fn() -> candle_core::Result<Tensor>, dev: &Device, warmups: usize, iters: usize) -> candle_core::Result<f64> {
    for _ in 0..warmups {
        f()?;
    }
    dev.synchronize()?;
    let mut t = Vec::new();
    for _ in 0..iters {
        let start = Instant::now();
        f()?;
        dev.synchronize()?;
        t.push(start.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// `--iters N` (default 20), the example's only flag; `name` for the usage line.
pub fn iters_flag(name: &str) -> Result<usize, Box<dyn std::error::Error>> {
    match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => Ok(20),
        [flag, n] if flag == "--iters" => Ok(n.parse()?),
        _ => Err(format!("usage: {name} [--iters N]").into()),
    }
}

/// Relative L2 distance of `ours` from `theirs`, in f64.
pub fn rel_l2(ours: &Tensor, theirs: &Tensor) -> candle_core::Result<f64> {
    let (a, b) = (ours.to_dtype(DType::F64)?, theirs.to_dtype(DType::F64)?);
    Ok(((&a - &b)?.sqr()?.sum_all()?.to_scalar::<f64>()? / b.sqr()?.sum_all()?.to_scalar::<f64>()?).sqrt())
}
