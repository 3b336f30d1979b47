//! Statistics every layer above records into: per-command stats, latency monitor, slow log.

pub mod cmdstats;
pub mod latency;
pub mod latency_report;
pub mod slowlog;
