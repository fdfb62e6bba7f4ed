//! `warpt fleet node`: one node's part of a fleet job, started by `srun`
//! ([`warpt_fleet::runs::node`]).

use anyhow::Result;

use crate::Outcome;
use crate::cli::FleetNodeArgs;

/// `warpt fleet node`.
pub fn run(args: &FleetNodeArgs) -> Result<Outcome> {
    warpt_fleet::runs::node(&args.dir.dir, &args.run_args, args.no_store)
}
