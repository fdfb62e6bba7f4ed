//! The theoretical FMA peak of this machine, and how it was derived.

use crate::cpu_flops::Isa;

/// A theoretical ceiling with its derivation spelled out.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// fp64 GFLOP/s over the given thread count.
    pub fp64_gflops: f64,
    /// fp32 GFLOP/s over the given thread count.
    pub fp32_gflops: f64,
    /// The formula with every factor and where it came from.
    pub derivation: String,
}

/// cores x frequency x lanes x vector FP pipes x 2 for `threads` threads
/// with `isa`, or `None` when no frequency can be read.
///
/// The number of FMA pipes is not exposed by CPUID or sysfs; warpt assumes
/// two (true of current server cores from Intel since Skylake-SP Gold/Platinum
/// and AMD since Zen 1 for 256-bit, Zen 5 for 512-bit) and says so. The
/// frequency is cpufreq's maximum where present, otherwise the nominal
/// `cpu MHz` of /proc/cpuinfo, which under a hypervisor may not be the
/// frequency the core really runs at: measured shares above 1 mean exactly that.
pub fn theoretical_peak(isa: Isa, threads: usize) -> Option<Peak> {
    let info = warpt_system::cpu_info();
    let mhz = info.mhz.filter(|m| *m > 0.0)?;
    let pipes = 2.0;
    let lanes64 = (isa.vector_bytes() / 8) as f64;
    let per_cycle64 = lanes64 * pipes * 2.0;
    let fp64 = threads as f64 * mhz * 1e6 * per_cycle64 / 1e9;
    let op = if isa.fused() { "FMA" } else { "mul+add" };
    let derivation = format!(
        "{threads} threads x {mhz:.0} MHz ({src}) x {lanes64} fp64 lanes ({isa}) x {pipes} vector {op} pipes \
         (assumed; not readable from the CPU) x 2 flops = {fp64:.1} GFLOP/s fp64, twice that fp32",
        src = if std::path::Path::new("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
            .exists()
        {
            "cpufreq max"
        } else {
            "/proc/cpuinfo cpu MHz"
        },
        isa = isa.name(),
    );
    Some(Peak {
        fp64_gflops: fp64,
        fp32_gflops: fp64 * 2.0,
        derivation,
    })
}
