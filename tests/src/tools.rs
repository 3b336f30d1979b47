//! The one rule for a tool a test needs that is not installed: redis-server (the reference of
//! the differential tests), redis8-server, redis-cli, redis-benchmark, tmux, the Python and
//! Node client toolchains.
//!
//! The test FAILS, naming what is missing, unless `TUMBLER_SKIP_MISSING=1` is set; then it
//! prints `skipping: ...` and returns without running. The same rule holds under CI and
//! anywhere else: a machine without redis-server does not turn the differential tests into
//! passes. scripts/ci/lib.sh applies it to the shell suites, tests/launchers/python to the
//! launcher tests (docs/testing.md).

use std::process::Command;

/// The environment switch that turns a missing tool into a skip.
pub const SKIP_MISSING: &str = "TUMBLER_SKIP_MISSING";

/// True when `TUMBLER_SKIP_MISSING=1`: a test whose tool is missing skips instead of failing.
pub fn skip_missing() -> bool {
    std::env::var(SKIP_MISSING).is_ok_and(|v| v == "1")
}

/// `what` is not installed: panics (the test fails) unless `TUMBLER_SKIP_MISSING=1`, in which
/// case it says so on stderr and returns; the caller then returns without testing.
#[track_caller]
pub fn missing(what: &str) {
    assert!(
        skip_missing(),
        "{what} is missing; this test needs it (scripts/test.sh installs it, docs/testing.md). \
         {SKIP_MISSING}=1 skips such tests instead"
    );
    eprintln!("skipping: {what} is missing ({SKIP_MISSING}=1)");
}

/// `name` if `name --version` runs and exits 0; otherwise [`missing`] and `None`.
#[track_caller]
pub fn tool(name: &str) -> Option<&str> {
    tool_probed(name, "--version")
}

/// [`tool`] with another probe argument (`tmux -V`).
#[track_caller]
pub fn tool_probed<'a>(name: &'a str, probe: &str) -> Option<&'a str> {
    let ok = Command::new(name)
        .arg(probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(name)
    } else {
        missing(name);
        None
    }
}

/// `path` if it exists; otherwise [`missing`] (naming `what` and the path) and `None`.
#[track_caller]
pub fn installed(path: std::path::PathBuf, what: &str) -> Option<std::path::PathBuf> {
    if path.exists() {
        return Some(path);
    }
    missing(&format!("{what} (at {})", path.display()));
    None
}
