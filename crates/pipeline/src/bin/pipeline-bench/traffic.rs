//! Traffic for the scaling section: a pool of distinct frames and the
//! order they arrive in (uniform or Zipf over the flows).
//!
//! The frames sit back to back in one buffer, and each packet is copied
//! from it into the worker's frame before processing, as a receive ring
//! would hand it over: with many flows the pool does not fit in the CPU's
//! caches, and walking it is part of the cost a real switch pays. The
//! order is precomputed (a sampler in the timed loop would be measured
//! too). The generator is a xorshift64*: fast, seeded, the same on every
//! run; statistical quality beyond "not periodic over a few million
//! draws" does not matter here.

/// Length of every frame in a pool.
pub const FRAME_LEN: usize = 64;

/// xorshift64* (Vigna): a tiny seeded generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n` > 0; the multiply-shift bias is below 2^-32
    /// for the sizes here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Fisher-Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// How the packets spread over the flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    /// Every flow equally likely.
    Uniform,
    /// Flow of rank r with probability proportional to 1/r (exponent 1.0).
    Zipf,
}

impl Dist {
    pub fn name(self) -> &'static str {
        match self {
            Dist::Uniform => "uniform",
            Dist::Zipf => "zipf",
        }
    }
}

/// Zipf (exponent 1.0) over `0..k`: the cumulative weights, sampled by
/// binary search.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(k: usize) -> Zipf {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=k)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf { cdf }
    }

    /// A rank in `0..k`, 0 the most likely.
    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }
}

/// Distinct frames back to back.
pub struct Pool {
    bytes: Vec<u8>,
}

impl Pool {
    /// One frame per item (each [`FRAME_LEN`] bytes).
    pub fn new(items: impl ExactSizeIterator<Item = Vec<u8>>) -> Pool {
        let mut bytes = Vec::with_capacity(items.len() * FRAME_LEN);
        for f in items {
            assert_eq!(f.len(), FRAME_LEN, "pool frames are {FRAME_LEN} bytes");
            bytes.extend_from_slice(&f);
        }
        Pool { bytes }
    }

    pub fn len(&self) -> usize {
        self.bytes.len() / FRAME_LEN
    }

    /// Frame `i`.
    #[inline]
    pub fn frame(&self, i: usize) -> &[u8] {
        &self.bytes[i * FRAME_LEN..(i + 1) * FRAME_LEN]
    }
}

/// The arrival order over `k` flows: `len` indices into the pool, drawn
/// from `dist`. Zipf ranks map to flows through a random permutation, so
/// the popular flows are not the first frames of the pool.
pub fn sequence(dist: Dist, k: usize, len: usize, rng: &mut Rng) -> Vec<u32> {
    match dist {
        Dist::Uniform => (0..len).map(|_| rng.below(k as u64) as u32).collect(),
        Dist::Zipf => {
            let z = Zipf::new(k);
            let mut flow_of_rank: Vec<u32> = (0..k as u32).collect();
            rng.shuffle(&mut flow_of_rank);
            (0..len).map(|_| flow_of_rank[z.sample(rng)]).collect()
        }
    }
}

/// `k` distinct values from `0..n`, in random order.
pub fn pick(n: u32, k: usize, rng: &mut Rng) -> Vec<u32> {
    let mut all: Vec<u32> = (0..n).collect();
    // A partial Fisher-Yates: the first k are a uniform sample.
    let k = k.min(all.len());
    for i in 0..k {
        let j = i + rng.below((all.len() - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(k);
    all
}
