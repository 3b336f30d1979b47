//! What an operator reads: INFO, MEMORY, MONITOR, DEBUG DIGEST, lock-order reports, metrics.

pub mod digest;
pub mod info;
pub mod lockdep;
pub mod memory;
pub mod metrics;
pub mod monitor;
