//! What an operator reads: INFO, MONITOR, DEBUG DIGEST and the metrics endpoint.

pub mod digest;
pub mod info;
pub mod metrics;
pub mod monitor;
