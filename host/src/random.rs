//! A tiny deterministic random number generator for test and benchmark data.
//!
//! SplitMix64 (Steele, Lea and Flood, 2014): statistically good enough for filling buffers,
//! trivially seedable (every `u64` seed, zero included, gives a distinct full-period stream),
//! and dependency-free, so the same seed reproduces the same data on every machine and
//! version of the toolchain.

/// A SplitMix64 stream.
///
/// ```
/// use convrs::random::SplitMix64;
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// let x = a.uniform_f32();
/// assert!((-1.0..1.0).contains(&x));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A stream determined by `seed` alone.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[-1, 1)` on a grid of 2^-23: 24 random bits are exactly representable in
    /// an `f32`, so no rounding can produce 1.0.
    pub fn uniform_f32(&mut self) -> f32 {
        let bits = (self.next_u64() >> 40) as u32; // 24 bits
        bits as f32 * (1.0 / (1u32 << 23) as f32) - 1.0
    }

    /// Uniform in `[-1, 1)` on a grid of 2^-52 (53 random bits, exact in an `f64`).
    pub fn uniform_f64(&mut self) -> f64 {
        let bits = self.next_u64() >> 11; // 53 bits
        bits as f64 * (1.0 / (1u64 << 52) as f64) - 1.0
    }

    /// Fills `out` with [`uniform_f32`](Self::uniform_f32) values, in order.
    pub fn fill_uniform_f32(&mut self, out: &mut [f32]) {
        out.iter_mut().for_each(|v| *v = self.uniform_f32());
    }
}

/// `len` values uniform in `[-1, 1)` from the stream seeded with `seed`.
pub fn uniform_vec_f32(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..len).map(|_| rng.uniform_f32()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_reference_splitmix64() {
        // First outputs for seed 0 of the reference C implementation (Vigna, splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn uniform_is_in_range_and_spread() {
        let v = uniform_vec_f32(100_000, 42);
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        let negative = v.iter().filter(|&&x| x < 0.0).count();
        assert!((49_000..51_000).contains(&negative), "{negative} negative of 100000");
        let mut r = SplitMix64::new(3);
        assert!((0..10_000).map(|_| r.uniform_f64()).all(|x| (-1.0..1.0).contains(&x)));
    }

    #[test]
    fn extremes_stay_in_range() {
        // All-ones bits map to the largest grid value, below 1.
        let top = ((u64::MAX >> 40) as u32) as f32 * (1.0 / (1u32 << 23) as f32) - 1.0;
        assert!(top < 1.0);
    }
}
