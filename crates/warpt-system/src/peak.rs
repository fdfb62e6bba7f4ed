//! The theoretical FMA peak of this machine, and how it was derived.

use crate::clock::{Clock, ClockSource};
use warpt_model::ParamValue;

use crate::isa::Isa;

/// A theoretical ceiling with its derivation spelled out.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// fp64 GFLOP/s over the given thread count.
    pub fp64_gflops: f64,
    /// fp32 GFLOP/s over the given thread count.
    pub fp32_gflops: f64,
    /// The formula with every factor and where it came from.
    pub derivation: String,
    /// The clock the formula used.
    pub clock: Clock,
}

impl Peak {
    /// Result details naming the clock: `effective_mhz` and `clock_source`
    /// (`cpufreq`, `measured` or `nominal`).
    pub fn clock_details(&self) -> Vec<(String, ParamValue)> {
        vec![
            ("effective_mhz".into(), ParamValue::Float(self.clock.mhz)),
            (
                "clock_source".into(),
                ParamValue::from(self.clock.source.as_str()),
            ),
        ]
    }

    /// Why a measured share of this peak came out above 1, or `None` when
    /// it did not: the figure is printed with its reason, never alone.
    pub fn share_above_one(&self, what: &str, share: f64) -> Option<String> {
        (share > 1.0).then(|| {
            format!(
                "{what}: {share:.3} of the theoretical peak, above 1: the core ran faster than the \
                 {:.0} MHz the peak assumes ({}), or has more FMA pipes than the two assumed",
                self.clock.mhz,
                match self.clock.source {
                    ClockSource::Cpufreq => "cpufreq's maximum",
                    ClockSource::Measured => "measured once before the run; it may have risen",
                    ClockSource::Nominal => "the nominal clock; the real one is unknown here",
                }
            )
        })
    }
}

/// cores x `clock` x lanes x vector FP pipes x 2 for `threads` threads
/// with `isa`.
///
/// The number of FMA pipes is not exposed by CPUID or sysfs; warpt assumes
/// two (true of current server cores from Intel since Skylake-SP Gold/Platinum
/// and AMD since Zen 1 for 256-bit, Zen 5 for 512-bit; Zen 4 runs 512-bit
/// operations on its two 256-bit pipes, [`datapath_bytes`]) and says so. The
/// clock is cpufreq's maximum where present, else measured (a timed chain of
/// dependent adds: under a hypervisor /proc/cpuinfo gives the nominal clock,
/// not the boost clock the core runs at), else the nominal one: see
/// [`warpt_system::clock::clock_from`], given readings taken around the
/// benchmark's parts.
pub fn theoretical_peak(isa: Isa, threads: usize, clock: Clock) -> Peak {
    let mhz = clock.mhz;
    let pipes = 2.0;
    let core = x86_core();
    let datapath = datapath_bytes(isa, core.as_ref().map(|(v, f)| (v.as_str(), *f)));
    let halves = if datapath < isa.vector_bytes() {
        format!(
            ", each {}-bit operation on two {}-bit halves (AMD family 25)",
            isa.vector_bytes() * 8,
            datapath * 8
        )
    } else {
        String::new()
    };
    let lanes64 = (datapath / 8) as f64;
    let per_cycle64 = lanes64 * pipes * 2.0;
    let fp64 = threads as f64 * mhz * 1e6 * per_cycle64 / 1e9;
    let op = if isa.fused() { "FMA" } else { "mul+add" };
    let derivation = format!(
        "{threads} threads x {mhz:.0} MHz ({src}) x {lanes64} fp64 lanes ({isa}{halves}) x {pipes} vector {op} pipes \
         (assumed; not readable from the CPU) x 2 flops = {fp64:.1} GFLOP/s fp64, twice that fp32",
        src = match clock.source {
            ClockSource::Cpufreq => "cpufreq max",
            ClockSource::Measured => "measured: dependent integer adds, timed",
            ClockSource::Nominal => "/proc/cpuinfo cpu MHz, nominal",
        },
        isa = isa.name(),
    );
    Peak {
        fp64_gflops: fp64,
        fp32_gflops: fp64 * 2.0,
        derivation,
        clock,
    }
}

/// Bytes an FMA pipe multiplies a cycle for `isa` on a core of `core`
/// (vendor and family, as /proc/cpuinfo gives them): the ISA's vector,
/// except on AMD's family 25, whose Zen 4 cores run AVX-512 on two 256-bit
/// pipes, each 512-bit operation in two halves (Zen 3, the same family,
/// has no AVX-512; Zen 5, family 26, has 512-bit pipes). `cpu_flops`'
/// measured FMA loop on Zen 4 reaches half the two-512-bit-pipe figure.
pub fn datapath_bytes(isa: Isa, core: Option<(&str, u32)>) -> usize {
    let width = isa.vector_bytes();
    match core {
        Some(("AuthenticAMD", 25)) => width.min(32),
        _ => width,
    }
}

/// This CPU's vendor and family from /proc/cpuinfo (x86 only; None
/// elsewhere or unreadable).
fn x86_core() -> Option<(String, u32)> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let field = |name: &str| crate::cpu::cpuinfo_field(&text, name);
    Some((field("vendor_id")?, field("cpu family")?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn zen_4_runs_avx512_on_256_bit_pipes_and_others_on_their_full_width() {
        let amd = |family| Some(("AuthenticAMD", family));
        assert_eq!(datapath_bytes(Isa::Avx512, amd(25)), 32);
        assert_eq!(datapath_bytes(Isa::Avx2Fma, amd(25)), 32);
        assert_eq!(datapath_bytes(Isa::Avx512, amd(26)), 64);
        assert_eq!(datapath_bytes(Isa::Avx512, Some(("GenuineIntel", 6))), 64);
        assert_eq!(datapath_bytes(Isa::Avx512, None), 64);
    }
}
