//! The Server arrival schedule, drawn exactly as LoadGen draws it: a
//! 32-bit Mersenne Twister (`std::mt19937`) seeded with
//! `schedule_rng_seed`, exponential gaps through libstdc++'s
//! `exponential_distribution` (`-log(1 - U) / qps` with `U` from
//! `generate_canonical<double, 53>`, two draws per number), each gap
//! truncated to whole nanoseconds. With the same seed and QPS, warpt and
//! the official LoadGen issue the same queries at the same instants, so
//! their results differ by the engines, not by the luck of the schedule.

use std::time::Duration;

/// `std::mt19937`: the 32-bit Mersenne Twister, MT19937.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl Mt19937 {
    /// Seeded as `std::mt19937(seed)` with a 64-bit `uint_fast32_t`
    /// (Linux): the seed is taken modulo 2^32.
    pub fn new(seed: u64) -> Self {
        let mut state = [0u32; 624];
        state[0] = seed as u32;
        for i in 1..624 {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: 624 }
    }

    fn twist(&mut self) {
        for i in 0..624 {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % 624] & 0x7fff_ffff);
            let mut next = self.state[(i + 397) % 624] ^ (y >> 1);
            if y & 1 != 0 {
                next ^= 0x9908_b0df;
            }
            self.state[i] = next;
        }
        self.index = 0;
    }

    /// The next 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// libstdc++'s `generate_canonical<double, 53>`: in [0, 1).
    pub fn canonical(&mut self) -> f64 {
        let lo = self.next_u32() as f64;
        let hi = self.next_u32() as f64;
        let r = (lo + hi * 4_294_967_296.0) / 18_446_744_073_709_551_616.0;
        if r >= 1.0 {
            1.0 - f64::EPSILON / 2.0
        } else {
            r
        }
    }

    /// libstdc++'s `exponential_distribution<double>(rate)`.
    pub fn exponential(&mut self, rate: f64) -> f64 {
        -(1.0 - self.canonical()).ln() / rate
    }
}

/// LoadGen's Server schedule: arrival times (ns from the start) at `qps`,
/// until the last one reaches `min_duration` and there are at least
/// `min_queries` (LoadGen's `GenerateQueries` loop).
pub fn server_schedule(qps: f64, min_duration: Duration, min_queries: u64, seed: u64) -> Vec<u64> {
    server_schedule_with_end(qps, min_duration, min_queries, seed).0
}

/// [`server_schedule`] and the time one gap past its last arrival, which
/// LoadGen logs as `generated_query_duration`.
pub fn server_schedule_with_end(
    qps: f64,
    min_duration: Duration,
    min_queries: u64,
    seed: u64,
) -> (Vec<u64>, u64) {
    let mut rng = Mt19937::new(seed);
    let gen_ns = min_duration.as_nanos() as u64;
    let mut times = Vec::new();
    let (mut t, mut prev) = (0u64, 0u64);
    while prev < gen_ns || (times.len() as u64) < min_queries {
        times.push(t);
        prev = t;
        // duration_cast<nanoseconds>(duration<double>(gap)): truncation.
        t += (rng.exponential(qps) * 1e9) as u64;
    }
    (times, t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_the_standard() {
        // C++11 [rand.predef]: the 10000th output of a default-constructed
        // std::mt19937 (seed 5489) is 4123659995.
        let mut rng = Mt19937::new(5489);
        let mut last = 0;
        for _ in 0..10_000 {
            last = rng.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
        // The first outputs for seed 5489 (the reference implementation).
        let mut rng = Mt19937::new(5489);
        assert_eq!(rng.next_u32(), 3_499_211_612);
        assert_eq!(rng.next_u32(), 581_869_302);
    }

    #[test]
    fn the_schedule_is_poisson() {
        let a = server_schedule(1000.0, Duration::from_secs(10), 100, 7);
        assert_eq!(a, server_schedule(1000.0, Duration::from_secs(10), 100, 7));
        assert!((a.len() as f64 - 10_000.0).abs() < 500.0, "{}", a.len());
        let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e9).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean - 1e-3).abs() < 5e-5, "{mean}");
        assert!((var.sqrt() / mean - 1.0).abs() < 0.05);
        assert_eq!(server_schedule(1.0, Duration::ZERO, 100, 1).len(), 100);
    }
}
