//! A primary, its replicas and the sentinels that watch them, on either side of a differential
//! test: real redis-server processes (one primary, `--replicaof` replicas, `redis-server conf
//! --sentinel` sentinels, each its own child process in a temporary directory), or one
//! `tumbler --replicas R --sentinels S` process (with the personality imitating that reference,
//! redis-7.0 for redis-server 7.0.15). Both are started on free loopback ports,
//! waited for until every sentinel sees the replicas and the other sentinels, and stopped by
//! the PIDs this helper started (on drop).
//!
//! Tests drive client libraries against [`ReplSet::data`] / [`ReplSet::sentinels`] and make
//! faults with [`ReplSet::signal`] (the real side: SIGKILL/SIGSTOP/SIGCONT of one data node's
//! own process) or `TUMBLER.NODE` / `TUMBLER.REPL` / `TUMBLER.TIME` (the Tumbler side).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::binary::{self, Proc};
use crate::{tools, Raw};

/// Which server runs the topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// redis-server (`REDIS_SERVER` overrides the binary): 1 + R + S processes.
    Real,
    /// One tumbler process (`--replicas R --sentinels S`), time and test control on.
    Tumbler,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Real => "real",
            Side::Tumbler => "tumbler",
        }
    }
}

enum Procs {
    /// Data nodes first (primary, then replicas), then sentinels.
    Real {
        children: Vec<Child>,
        dir: PathBuf,
    },
    Tumbler(Proc),
}

/// A running topology (see the module documentation). The master is named
/// [`ReplSet::MASTER_NAME`] and the sentinels' quorum is 2 (or 1 with one sentinel).
pub struct ReplSet {
    pub side: Side,
    /// Data node ports: `data[0]` is the primary at start, the rest its replicas.
    pub data: Vec<u16>,
    /// Sentinel ports.
    pub sentinels: Vec<u16>,
    /// From the first spawn to ready ([`ReplSet::wait_ready`]).
    pub started_in: Duration,
    /// What the sentinels require from their clients (AUTH), if anything.
    pub sentinel_password: Option<String>,
    procs: Procs,
}

/// `down-after-milliseconds` of the sentinels on both sides.
pub const DOWN_AFTER_MS: u64 = 1000;
/// `failover-timeout` of the sentinels on both sides.
pub const FAILOVER_TIMEOUT_MS: u64 = 10000;

fn quorum(sentinels: usize) -> usize {
    sentinels.min(2).max(1)
}

/// The flat field/value array of a RESP2 reply (`SENTINEL MASTER`, one element of `SENTINEL
/// REPLICAS`) as bulk strings in order: the lines that are not headers.
fn flat_strings(reply: &str) -> Vec<String> {
    reply
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with('$'))
        .map(|l| l.trim_start_matches(['+', ':']).to_string())
        .collect()
}

fn field(flat: &[String], name: &str) -> Option<String> {
    flat.chunks(2)
        .find(|c| c.len() == 2 && c[0] == name)
        .map(|c| c[1].clone())
}

/// `args` on a new connection to `port` (after `AUTH password` if given); `None` if the
/// connection or the reply failed.
fn try_cmd(port: u16, auth: Option<&str>, args: &[&str]) -> Option<String> {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut raw = Raw {
        stream,
        buf: Vec::new(),
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Some(pass) = auth {
            let ok = raw.cmd_str(&["AUTH", pass]);
            assert_eq!(ok, "+OK\r\n");
        }
        raw.cmd_str(args)
    }));
    r.ok()
}

impl ReplSet {
    pub const MASTER_NAME: &'static str = "mymaster";

    /// Starts `side` with `replicas` replicas and `sentinels` sentinels and waits (30 s at
    /// most) until it is ready. `None` only for a missing redis-server under
    /// `TUMBLER_SKIP_MISSING=1`.
    pub fn start(side: Side, replicas: usize, sentinels: usize) -> Option<ReplSet> {
        ReplSet::start_with_sentinel_password(side, replicas, sentinels, None)
    }

    /// [`ReplSet::start`] with sentinels that require `password` from their clients (the
    /// sentinel's own `requirepass` in redis-server's sentinel config; Tumbler's
    /// `sentinel-requirepass`). The data nodes have none.
    pub fn start_with_sentinel_password(
        side: Side,
        replicas: usize,
        sentinels: usize,
        password: Option<&str>,
    ) -> Option<ReplSet> {
        let t0 = Instant::now();
        let mut set = match side {
            Side::Real => ReplSet::real(replicas, sentinels, password)?,
            Side::Tumbler => ReplSet::tumbler(replicas, sentinels, password),
        };
        set.wait_ready(Duration::from_secs(30));
        set.started_in = t0.elapsed();
        eprintln!(
            "{} topology (1 primary, {replicas} replicas, {sentinels} sentinels) ready in {:?}",
            side.name(),
            set.started_in
        );
        Some(set)
    }

    fn real(replicas: usize, sentinels: usize, password: Option<&str>) -> Option<ReplSet> {
        let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        tools::tool(&bin)?;
        let dir = std::env::temp_dir().join(format!(
            "tumbler-replset-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut set = ReplSet {
            side: Side::Real,
            data: Vec::new(),
            sentinels: Vec::new(),
            started_in: Duration::ZERO,
            sentinel_password: password.map(str::to_string),
            procs: Procs::Real {
                children: Vec::new(),
                dir: dir.clone(),
            },
        };
        // Starts `cmd` listening on `port` and waits for it; false (the child killed) if the
        // port turned out to be another process's (free_port released it, someone took it).
        let spawn = |set: &mut ReplSet, cmd: &mut Command, port: u16, auth: Option<&str>| {
            let mut child = cmd
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if try_cmd(port, auth, &["PING"]).as_deref() == Some("+PONG\r\n") {
                    let info = try_cmd(port, auth, &["INFO", "server"]).unwrap_or_default();
                    if info.contains(&format!("process_id:{}\r\n", child.id())) {
                        break;
                    }
                }
                if Instant::now() > deadline || matches!(child.try_wait(), Ok(Some(_))) {
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Procs::Real { children, .. } = &mut set.procs {
                children.push(child);
            }
            true
        };
        let started = |what: &str, tries: usize| {
            assert!(tries < 5, "{bin}: the {what} did not start (5 ports tried)");
        };
        for i in 0..=replicas {
            let mut tries = 0;
            loop {
                started("data node", tries);
                tries += 1;
                let port = crate::free_port();
                let mut cmd = Command::new(&bin);
                cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                    .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                    .args(["--dbfilename", &format!("dump-{port}.rdb")])
                    // A full resync starts at once instead of after 5 s (any node may become
                    // the primary a replica syncs from).
                    .args(["--repl-diskless-sync-delay", "0"]);
                if i > 0 {
                    cmd.args(["--replicaof", "127.0.0.1", &set.data[0].to_string()]);
                }
                if spawn(&mut set, &mut cmd, port, None) {
                    set.data.push(port);
                    break;
                }
            }
        }
        for _ in 0..sentinels {
            let mut tries = 0;
            loop {
                started("sentinel", tries);
                tries += 1;
                let port = crate::free_port();
                let conf = dir.join(format!("sentinel-{port}.conf"));
                std::fs::write(
                    &conf,
                    format!(
                        "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {}\n\
                         sentinel monitor {m} 127.0.0.1 {p} {q}\n\
                         sentinel down-after-milliseconds {m} {DOWN_AFTER_MS}\n\
                         sentinel failover-timeout {m} {FAILOVER_TIMEOUT_MS}\n\
                         sentinel parallel-syncs {m} 1\n{auth}",
                        dir.display(),
                        m = Self::MASTER_NAME,
                        p = set.data[0],
                        q = quorum(sentinels),
                        auth = password.map_or(String::new(), |p| format!("requirepass {p}\n")),
                    ),
                )
                .unwrap();
                let mut cmd = Command::new(&bin);
                cmd.arg(&conf).arg("--sentinel");
                if spawn(&mut set, &mut cmd, port, password) {
                    set.sentinels.push(port);
                    break;
                }
            }
        }
        Some(set)
    }

    fn tumbler(replicas: usize, sentinels: usize, password: Option<&str>) -> ReplSet {
        // The personality imitating the reference the real side runs (redis-server 7.0.15:
        // redis-7.0), as every differential test runs Tumbler.
        let reference = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let mut cmd = binary::command();
        cmd.args(["--port", "0", "--bind", "127.0.0.1"])
            .args(["--personality", crate::personality_of_bin(&reference)])
            .args(["--replicas", &replicas.to_string()])
            .args(["--sentinels", &sentinels.to_string()])
            .args(["--sentinel-master-name", Self::MASTER_NAME])
            .args(["--sentinel-quorum", &quorum(sentinels).to_string()])
            .args([
                "--sentinel-down-after-milliseconds",
                &DOWN_AFTER_MS.to_string(),
            ])
            .args([
                "--sentinel-failover-timeout",
                &FAILOVER_TIMEOUT_MS.to_string(),
            ])
            .args(["--enable-time-control", "yes"])
            .args(["--enable-test-control", "yes"])
            .args(["--save", "", "--appendonly", "no"]);
        if let Some(pass) = password {
            cmd.args(["--sentinel-requirepass", pass]);
        }
        let p = Proc::spawn(cmd);
        let mut data = Vec::new();
        let mut sents = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while data.len() < replicas + 1 || sents.len() < sentinels {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = p.next_line(left).unwrap_or_else(|| {
                panic!(
                    "tumbler --replicas {replicas} --sentinels {sentinels}: missing port lines; \
                     output:\n{}",
                    p.log()
                )
            });
            if !line.starts_with("tumbler listening on ") {
                continue;
            }
            let port = binary::port_of(&line, "port=");
            if line.contains(" sentinel=") {
                sents.push(port);
            } else if line.contains(" node=") {
                data.push(port);
            }
        }
        ReplSet {
            side: Side::Tumbler,
            data,
            sentinels: sents,
            started_in: Duration::ZERO,
            sentinel_password: password.map(str::to_string),
            procs: Procs::Tumbler(p),
        }
    }

    /// Waits until every replica's link is up and every sentinel lists every replica (link
    /// ok, not down) and every other sentinel: what a failover needs.
    pub fn wait_ready(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let r = self.data.len() - 1;
        let s = self.sentinels.len();
        let auth = self.sentinel_password.as_deref();
        loop {
            let mut why = None;
            for &port in &self.data[1..] {
                let info = try_cmd(port, None, &["INFO", "replication"]).unwrap_or_default();
                if !info.contains("master_link_status:up") {
                    why = Some(format!("replica {port}: {info}"));
                }
            }
            for &port in &self.sentinels {
                let m = flat_strings(
                    &try_cmd(port, auth, &["SENTINEL", "MASTER", Self::MASTER_NAME])
                        .unwrap_or_default(),
                );
                let replicas = try_cmd(port, auth, &["SENTINEL", "REPLICAS", Self::MASTER_NAME])
                    .unwrap_or_default();
                let ok_links = replicas
                    .matches("master-link-status\r\n$2\r\nok\r\n")
                    .count();
                if field(&m, "num-slaves") != Some(r.to_string())
                    || field(&m, "num-other-sentinels") != Some((s - 1).to_string())
                    || ok_links != r
                    || replicas.contains("s_down")
                    || replicas.contains("disconnected")
                {
                    why = Some(format!("sentinel {port}: {m:?} {replicas:?}"));
                }
            }
            let Some(why) = why else { return };
            assert!(
                Instant::now() < deadline,
                "{} topology not ready within {timeout:?}: {why}",
                self.side.name()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The PID of data node `i`'s own process (the real side); on the Tumbler side the one
    /// process's PID.
    pub fn data_pid(&self, i: usize) -> u32 {
        match &self.procs {
            Procs::Real { children, .. } => children[i].id(),
            Procs::Tumbler(p) => p.child.id(),
        }
    }

    /// Sends `sig` (`KILL`, `STOP`, `CONT`) to data node `i`'s process: the real side only
    /// (on the Tumbler side the one process holds every node; use TUMBLER.NODE DOWN).
    pub fn signal(&self, i: usize, sig: &str) {
        assert_eq!(
            self.side,
            Side::Real,
            "signals stop one node on the real side only"
        );
        let st = Command::new("kill")
            .args([&format!("-{sig}"), &self.data_pid(i).to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "kill -{sig} of data node {i}");
    }

    /// The master's port as sentinel `k` answers `SENTINEL GET-MASTER-ADDR-BY-NAME`.
    pub fn master_port(&self, k: usize) -> Option<u16> {
        let r = try_cmd(
            self.sentinels[k],
            self.sentinel_password.as_deref(),
            &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", Self::MASTER_NAME],
        )?;
        flat_strings(&r).get(1)?.parse().ok()
    }

    /// `side`, the sentinel ports, the data ports and the data PIDs, comma-separated, as the
    /// client programs in tests/clients take them.
    pub fn program_args(&self) -> Vec<String> {
        let join = |v: Vec<String>| v.join(",");
        vec![
            self.side.name().to_string(),
            join(self.sentinels.iter().map(|p| p.to_string()).collect()),
            join(self.data.iter().map(|p| p.to_string()).collect()),
            join(
                (0..self.data.len())
                    .map(|i| self.data_pid(i).to_string())
                    .collect(),
            ),
        ]
    }

    /// Everything the Tumbler process printed (empty on the real side).
    pub fn log(&self) -> String {
        match &self.procs {
            Procs::Tumbler(p) => p.log(),
            Procs::Real { .. } => String::new(),
        }
    }
}

impl Drop for ReplSet {
    fn drop(&mut self) {
        if let Procs::Real { children, dir } = &mut self.procs {
            for c in children.iter_mut() {
                // A node a test stopped (SIGSTOP) must still die: SIGKILL does it.
                let _ = c.kill();
                let _ = c.wait();
            }
            let _ = std::fs::remove_dir_all(dir);
        }
        // Procs::Tumbler kills its child on drop.
    }
}
