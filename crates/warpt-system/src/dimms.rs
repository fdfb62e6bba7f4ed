//! Memory modules from SMBIOS through `dmidecode`, where installed and readable.

use warpt_model::DimmInfo;

use crate::tools::run_with_timeout;

/// The populated DIMMs, or none and why.
pub fn dimms() -> (Vec<DimmInfo>, Option<String>) {
    if crate::tools::which("dmidecode").is_none() {
        return (Vec::new(), Some("dmidecode is not installed".into()));
    }
    let Some(text) = run_with_timeout("dmidecode", &["-t", "17"]) else {
        return (
            Vec::new(),
            Some("dmidecode could not read SMBIOS (needs root)".into()),
        );
    };
    let dimms = parse(&text);
    let note = dimms
        .is_empty()
        .then(|| "SMBIOS lists no populated memory device".to_string());
    (dimms, note)
}

/// Parses `dmidecode -t 17` output.
fn parse(text: &str) -> Vec<DimmInfo> {
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| b.contains("Memory Device")) {
        let field = |name: &str| {
            block
                .lines()
                .find_map(|l| {
                    l.trim()
                        .strip_prefix(name)
                        .and_then(|r| r.strip_prefix(':'))
                })
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty() && v != "Unknown" && v != "Not Specified")
        };
        let Some(size) = field("Size").and_then(|s| parse_size(&s)) else {
            continue;
        };
        out.push(DimmInfo {
            locator: field("Locator").unwrap_or_default(),
            size_bytes: size,
            kind: field("Type"),
            speed_mts: field("Configured Memory Speed")
                .or_else(|| field("Speed"))
                .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok())),
            manufacturer: field("Manufacturer"),
            part_number: field("Part Number"),
        });
    }
    out
}

fn parse_size(s: &str) -> Option<u64> {
    let mut it = s.split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    let mult = match it.next()? {
        "kB" | "KB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => return None,
    };
    Some(n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_populated_devices_and_skips_empty_slots() {
        let text = "Handle 0x0011, DMI type 17\nMemory Device\n\tSize: 16 GB\n\tLocator: DIMM_A1\n\tType: DDR5\n\
                    \tSpeed: 4800 MT/s\n\tManufacturer: Acme\n\tPart Number: X1\n\tConfigured Memory Speed: 4400 MT/s\n\n\
                    Handle 0x0012, DMI type 17\nMemory Device\n\tSize: No Module Installed\n\tLocator: DIMM_A2\n";
        let d = parse(text);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].size_bytes, 16 << 30);
        assert_eq!(d[0].speed_mts, Some(4400));
        assert_eq!(d[0].kind.as_deref(), Some("DDR5"));
    }
}
