//! The bottom layer: the monotonic clock, the log, the process surface (daemonize, pid file).

pub mod argv;
pub mod clock;
pub mod consts;
pub mod log;
pub mod process;
