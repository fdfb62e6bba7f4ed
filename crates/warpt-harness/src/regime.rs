//! What the regime probes read while a benchmark measures (see
//! [`warpt_model::RegimeProbes`]): the harness reads the effective clock
//! around every series, a benchmark adds its own probes.

use warpt_model::{CanaryReadings, ClockProbe, RegimeProbes, ScalingCheck};

/// Collects one benchmark's probe readings.
#[derive(Debug, Default)]
pub struct RegimeRecorder {
    /// How to read the core's speed around each series, if at all (CPU and
    /// memory benchmarks).
    pub(crate) clock_probe: Option<ClockProbe>,
    probes: RegimeProbes,
}

impl RegimeRecorder {
    /// Reads the core's speed, when this benchmark is probed: the effective
    /// clock ([`warpt_system::clock::measure_mhz`]) and its FP throughput
    /// ([`warpt_system::clock::measure_fp_gflops`]), about 6 ms each; or,
    /// for [`ClockProbe::Brief`], the clock alone in about 3 ms, once
    /// per benchmark (before its first series).
    pub(crate) fn clock(&mut self) {
        match self.clock_probe {
            None => {}
            Some(ClockProbe::Full) => {
                self.probes
                    .clock_mhz
                    .extend(warpt_system::clock::measure_mhz());
                self.probes
                    .fp_gflops
                    .extend(warpt_system::clock::measure_fp_gflops());
            }
            Some(ClockProbe::Brief) if self.probes.clock_mhz.is_empty() => {
                self.probes
                    .clock_mhz
                    .extend(warpt_system::clock::measure_mhz_brief());
            }
            Some(ClockProbe::Brief) => {}
        }
    }

    /// Reads the clock unless it was read already: the harness calls it at
    /// the start of the first series; a benchmark whose warm-up runs in
    /// another process reads it sooner, while that process warms up.
    pub fn first_clock(&mut self) {
        if self.probes.clock_mhz.is_empty() {
            self.clock();
        }
    }

    /// The clock readings so far, MHz (for a benchmark deriving a peak from
    /// the fastest, see [`warpt_system::clock::clock_from`]).
    pub fn clock_mhz(&self) -> &[f64] {
        &self.probes.clock_mhz
    }

    /// Records a reading of a cache canary: a chase over a fixed
    /// working set of `size_kib`, `ns` per load.
    pub fn canary(&mut self, size_kib: u64, ns: f64) {
        let probes = &mut self.probes.llc_canary;
        match probes.iter_mut().find(|c| c.size_kib == size_kib) {
            Some(c) => c.ns.push(ns),
            None => probes.push(CanaryReadings {
                size_kib,
                ns: vec![ns],
            }),
        }
    }

    /// Records a reading of the memory-bandwidth canary, GB/s (see
    /// [`RegimeProbes::bandwidth_canary_gbs`]).
    pub fn bandwidth_canary(&mut self, gbs: f64) {
        if gbs.is_finite() && gbs > 0.0 {
            self.probes.bandwidth_canary_gbs.push(gbs);
        }
    }

    /// Records an all-threads/one-thread check.
    pub fn scaling(&mut self, check: ScalingCheck) {
        self.probes.scaling.push(check);
    }

    /// The readings, taken once; `None` when nothing was probed.
    pub(crate) fn take(&mut self) -> Option<RegimeProbes> {
        let r = std::mem::take(&mut self.probes);
        (!r.is_empty()).then_some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readings(probe: Option<ClockProbe>) -> (usize, usize) {
        let mut r = RegimeRecorder {
            clock_probe: probe,
            ..Default::default()
        };
        // A benchmark with two series: the start of the first, then after each.
        r.first_clock();
        r.clock();
        r.clock();
        r.take()
            .map_or((0, 0), |p| (p.clock_mhz.len(), p.fp_gflops.len()))
    }

    #[test]
    fn each_probe_kind_reads_what_it_says() {
        assert_eq!(readings(None), (0, 0));
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(readings(Some(ClockProbe::Full)), (3, 3));
            assert_eq!(readings(Some(ClockProbe::Brief)), (1, 0));
        }
    }
}
