//! Running third-party client programs (Python, Node) against tumbler.
//!
//! scripts/test.sh installs the libraries (tests/clients/python/requirements.txt into
//! `target/clients/venv`, tests/clients/node/package.json into `target/clients/node`). A
//! test whose toolchain is missing fails, or skips under `TUMBLER_SKIP_MISSING=1`
//! ([`crate::tools`]).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tumbler::embed::TestServer;

use crate::tools;

/// Where the client toolchains are installed (`TUMBLER_CLIENTS_DIR` overrides).
pub fn clients_dir() -> PathBuf {
    std::env::var_os("TUMBLER_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/clients"))
}

/// The client test programs in the source tree.
pub fn programs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients")
}

/// `path` if it exists; otherwise the test fails, or skips (`None`) under
/// `TUMBLER_SKIP_MISSING=1` (scripts/test.sh installs the toolchains; docs/clients.md).
#[track_caller]
pub fn require(path: PathBuf, what: &str) -> Option<PathBuf> {
    tools::installed(path, what)
}

/// `n` servers for a client scenario, with time control on so leases lapse on ADVANCE.
pub fn servers(n: usize) -> Vec<TestServer> {
    (0..n)
        .map(|_| {
            TestServer::builder()
                .time_control(true)
                .spawn()
                .expect("start tumbler")
        })
        .collect()
}

/// Asserts the server runs Lua (EVAL): most lock libraries release and extend with scripts.
/// Scripting is part of tumbler, so a scenario that needs it fails rather than skips when
/// EVAL does not answer.
pub fn assert_scripting(server: &TestServer) {
    let mut c = crate::Raw::connect(server.addr());
    let r = c.cmd_str(&["EVAL", "return 1", "0"]);
    assert_eq!(r, ":1\r\n", "this scenario needs EVAL, which must work");
}

/// Runs `program args...` (bounded by `timeout`) and asserts it exits 0 printing
/// `ok <scenario>`.
pub fn run_scenario(mut cmd: Command, scenario: &str, timeout: Duration) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    let deadline = Instant::now() + timeout;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(&format!("ok {scenario}")),
        "{scenario} failed ({:?})\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
}
