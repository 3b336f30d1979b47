//! The bottom layer: the monotonic clock, the log, the process surface (daemonize, pid file).

pub mod argv;
pub mod consts;
pub mod log;
pub mod mono;
pub mod process;
