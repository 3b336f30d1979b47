//! The `tumbler` binary, for the tests that run it as a process (cli, cli_nodes, process,
//! metrics_cli, top, bench_cli): where it is, and a child process with its output captured.
//!
//! Cargo tells only the integration tests of the package that has the binary where it is
//! (`CARGO_BIN_EXE_tumbler`, for the server package's tests). These tests live here, so the
//! binary is found beside the test executable instead: a test built into
//! `<target-dir>/<profile>/deps/` runs `<target-dir>/<profile>/tumbler`. scripts/test.sh
//! builds it in the same cargo invocation as the tests. If it is missing, or older than a
//! file it is built from (server/src, lockcore/src, the manifests, Cargo.lock), the first
//! use in a test process runs `cargo build --profile <profile> --workspace --bin tumbler`
//! (under cargo, which sets `CARGO` for the tests it runs), so a plain `cargo test` never
//! runs a stale binary. `TUMBLER_TEST_BINARY=path` runs that binary instead and builds
//! nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The tumbler binary under test (see the module documentation).
pub fn path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(locate)
}

/// `Command::new(path())`.
pub fn command() -> Command {
    Command::new(path())
}

fn locate() -> PathBuf {
    if let Some(p) = std::env::var_os("TUMBLER_TEST_BINARY") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "TUMBLER_TEST_BINARY={}: no such file",
            p.display()
        );
        return p;
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    // <target-dir>[/<triple>]/<profile>/deps/<test>-<hash>
    let deps = exe.parent().expect("deps directory");
    let profile_dir = deps.parent().expect("profile directory");
    let bin = profile_dir.join(format!("tumbler{}", std::env::consts::EXE_SUFFIX));
    if !is_current(&bin) {
        let Some(cargo) = std::env::var_os("CARGO") else {
            panic!(
                "no current tumbler binary at {} (build it: cargo build -p tumbler --bin \
                 tumbler with this test's profile, or set TUMBLER_TEST_BINARY)",
                bin.display()
            );
        };
        build(&cargo, profile_dir);
        assert!(bin.is_file(), "cargo built no {}", bin.display());
    }
    bin
}

/// True if `bin` exists and is newer than every file it is built from: what cargo's own
/// check compares (modification times), without running cargo.
fn is_current(bin: &Path) -> bool {
    let Ok(built) = bin.metadata().and_then(|m| m.modified()) else {
        return false;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    let mut todo: Vec<PathBuf> = [
        "server/src",
        "server/Cargo.toml",
        "lockcore/src",
        "lockcore/Cargo.toml",
        "Cargo.toml",
        "Cargo.lock",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    while let Some(p) = todo.pop() {
        let Ok(m) = p.metadata() else { continue };
        if m.is_dir() {
            if let Ok(rd) = p.read_dir() {
                todo.extend(rd.flatten().map(|e| e.path()));
            }
        } else if let Ok(t) = m.modified() {
            newest = newest.max(t);
        }
    }
    built > newest
}

/// `cargo build` of the binary with the profile and target directory the test was built with.
fn build(cargo: &std::ffi::OsStr, profile_dir: &Path) {
    let dir_name = profile_dir.file_name().unwrap().to_str().unwrap();
    // The profile directory is named after the profile, except `dev`'s.
    let profile = match dir_name {
        "debug" => "dev",
        p => p,
    };
    // `--workspace`: the features `cargo test -p tumbler-tests` resolves too, so the server
    // library that build compiled is reused (`-p tumbler` would compile it once more).
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--profile", profile])
        .args(["--workspace", "--bin", "tumbler"]);
    // <target-dir>/<profile>, or <target-dir>/<triple>/<profile> under --target: cargo marks
    // the target directory's root with CACHEDIR.TAG.
    let up = profile_dir.parent().unwrap();
    if up.join("CACHEDIR.TAG").exists() {
        cmd.arg("--target-dir").arg(up);
    } else {
        let triple = up.file_name().unwrap();
        cmd.arg("--target-dir").arg(up.parent().unwrap());
        cmd.arg("--target").arg(triple);
    }
    let out = cmd
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The next line of Tumbler's own on stdout (`tumbler listening on ... port=P`, `tumbler
/// metrics on ...`), past the Redis-format log lines that come before and between them.
/// Empty at end of output.
pub fn tumbler_line(out: &mut impl BufRead) -> String {
    loop {
        let mut line = String::new();
        match out.read_line(&mut line) {
            Ok(0) | Err(_) => return String::new(),
            Ok(_) if line.starts_with("tumbler ") => return line,
            Ok(_) => continue,
        }
    }
}

/// Runs `cmd` to completion with stdout and stderr captured; killed after `timeout`, so a
/// command line that starts a server instead of exiting fails its test rather than hanging
/// it. Returns the output and whether it was killed.
pub fn output_within(cmd: &mut Command, timeout: Duration) -> (Output, bool) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + timeout;
    let mut killed = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            killed = true;
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, killed)
}

/// A tumbler child process (killed on drop) and everything it prints: its log on stdout, as
/// redis-server's, with its own `tumbler ...` lines (port, metrics), and stderr.
pub struct Proc {
    pub child: Child,
    /// The port of the first `tumbler listening on` line ([`Proc::start`]; 0 otherwise).
    pub port: u16,
    log: Arc<Mutex<String>>,
    lines: Receiver<String>,
}

impl Proc {
    /// Starts the binary with `args` and waits (10 s at most) for its first port line.
    pub fn start(args: &[&str]) -> Proc {
        let mut cmd = command();
        cmd.args(args);
        let mut p = Proc::spawn(cmd);
        let line = p
            .next_line(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("no port line from tumbler {args:?}; output: {}", p.log()));
        assert!(line.starts_with("tumbler listening on "), "{line}");
        p.port = port_of(&line, "port=");
        p
    }

    /// Starts `cmd` (the binary with its arguments and environment) without waiting.
    pub fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, lines) = std::sync::mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { break };
                if line.starts_with("tumbler ") {
                    let _ = tx.send(line.trim().to_string());
                }
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let mut err = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut b = [0u8; 4096];
            while let Ok(n) = err.read(&mut b) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&b[..n]));
            }
        });
        Proc {
            child,
            port: 0,
            log,
            lines,
        }
    }

    /// The next `tumbler ...` line on stdout (trimmed) within `timeout`; `None` if there was
    /// none or the output ended.
    pub fn next_line(&self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Its `tumbler ...` lines printed together at startup: the first within 15 s, the rest
    /// until 300 ms pass without one.
    pub fn startup_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(l) = self.next_line(Duration::from_secs(15)) {
            lines.push(l);
            while let Some(l) = self.next_line(Duration::from_millis(300)) {
                lines.push(l);
            }
        }
        lines
    }

    /// Everything it printed so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the output contains `needle` (10 s at most), returning all of it.
    pub fn wait_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.log();
            if s.contains(needle) || Instant::now() > deadline {
                return s;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits (10 s at most) for it to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < deadline, "tumbler did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, a bounded wait (15 s) for the exit, and everything it printed.
    pub fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("tumbler ignored SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The reader threads see end of file once the process is gone.
        std::thread::sleep(Duration::from_millis(50));
        self.log()
    }

    /// Sends one inline command to `port` on a new connection; the reply's first chunk.
    pub fn cmd_on(port: u16, line: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(format!("{line}\r\n").as_bytes()).unwrap();
        let mut b = vec![0u8; 65536];
        let n = s.read(&mut b).unwrap();
        String::from_utf8_lossy(&b[..n]).into_owned()
    }

    /// [`Proc::cmd_on`] its port.
    pub fn cmd(&self, line: &str) -> String {
        Proc::cmd_on(self.port, line)
    }

    /// Sends `raw` (several commands, pipelined, on one connection) and checks that the
    /// replies are exactly `want`.
    pub fn exchange(&self, raw: &[u8], want: &str) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(raw).unwrap();
        let mut got = Vec::new();
        let mut b = [0u8; 4096];
        while got.len() < want.len() {
            let n = s.read(&mut b).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&b[..n]);
        }
        assert_eq!(String::from_utf8_lossy(&got), want);
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The number after `key` (`port=`, `tls-port=`) in a `tumbler listening on` line.
pub fn port_of(line: &str, key: &str) -> u16 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
        .parse()
        .unwrap()
}
