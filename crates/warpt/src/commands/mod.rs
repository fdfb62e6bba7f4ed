//! One module per command.

pub mod benchmark;
pub mod compare;
pub mod config;
pub mod list;
pub mod monitor;
pub mod net_server;
pub mod report;
pub mod results;
pub mod run;
pub mod schema;
pub mod stress;
pub mod worker;
