//! One module per command.

pub mod benchmark;
pub mod ci;
pub mod ci_record;
pub mod compare;
pub mod config;
pub mod demo;
pub mod exec;
pub mod fleet;
pub mod fleet_node;
pub mod harness;
pub mod harness_run;
pub mod list;
pub mod migrate;
pub mod monitor;
pub mod net_server;
pub mod noise;
pub mod outliers;
pub mod report;
pub mod results;
pub mod run;
pub mod schema;
pub mod serve;
pub mod shell;
pub mod stress;
pub mod trend;
pub mod worker;
