//! `machines.toml`: what an hour of each machine costs, for the per-cost
//! comparison of `report --by machine`.
//!
//! ```toml
//! [machines.node17]
//! cost_per_hour = 3.2
//! ```

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

/// The file's shape. Unknown keys are errors.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MachinesFile {
    #[serde(default)]
    machines: HashMap<String, MachineEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MachineEntry {
    cost_per_hour: Option<f64>,
}

/// Each host's price per hour from `file`, or from `./machines.toml` when
/// no file is named and it exists (else none). A file that cannot be
/// read or parsed, or a price that is not above 0, is refused with a
/// message naming the file.
pub fn load(file: Option<&Path>) -> Result<HashMap<String, f64>, String> {
    let default = Path::new("machines.toml");
    let path = match file {
        Some(p) => p,
        None if default.is_file() => default,
        None => return Ok(HashMap::new()),
    };
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let parsed: MachinesFile = toml::from_str(&text).map_err(|e| format!("{shown}: {e}"))?;
    let mut out = HashMap::new();
    for (host, entry) in parsed.machines {
        if let Some(c) = entry.cost_per_hour {
            if !(c.is_finite() && c > 0.0) {
                return Err(format!(
                    "{shown}: [machines.{host}] cost_per_hour = {c}: a price above 0 is needed"
                ));
            }
            out.insert(host, c);
        }
    }
    Ok(out)
}
