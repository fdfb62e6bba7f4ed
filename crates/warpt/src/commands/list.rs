//! `warpt list`: what this machine is.

use anyhow::Result;

use crate::Outcome;
use crate::cli::ListMachineArgs;

/// Prints the machine snapshot: a summary, or the full model with `--json`.
pub fn run(args: &ListMachineArgs) -> Result<Outcome> {
    let mut snap = warpt_system::snapshot();
    snap.compute_adapters = warpt_gpu::adapters()
        .into_iter()
        .map(|a| warpt_model::ComputeAdapter {
            index: a.index as u32,
            name: a.name,
            backend: a.backend,
            device_type: a.device_type,
            driver: a.driver,
            software: a.software,
            shader_f16: a.shader_f16,
        })
        .collect();
    snap.model_support = warpt_models::support::table();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&snap)?);
    } else {
        print!("{}", warpt_report::terminal::machine(&snap));
    }
    Ok(Outcome::Success)
}
