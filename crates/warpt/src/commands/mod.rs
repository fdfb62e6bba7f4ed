//! One module per top-level command.

pub mod benchmark;
pub mod schema;
pub mod worker;
