//! Sentinel clients against a primary, two replicas and three sentinels, on both sides in
//! each test: real redis-server processes, then one tumbler process (tests/src/replset.rs),
//! the same client program and assertions for each (tests/clients/python/sentinel.py,
//! tests/clients/node/sentinel.mjs). Each program also prints what its clients observed
//! (`obs ...` lines: replies, errors, events, ports named by role); the two sides must
//! observe the same.
//!
//! - redis-py's `Sentinel`: discovery, the master_for/slave_for read-write split, WAIT,
//!   `redis.lock.Lock` across a failover (SENTINEL FAILOVER, and the primary going down:
//!   SIGKILL of its process on the real side, TUMBLER.NODE DOWN and the clock moved on
//!   Tumbler), the clients following the new master.
//! - ioredis with `sentinels`/`name` (and `role: 'slave'`): the same story (the lock is node
//!   `redlock` over the sentinel-managed client), and `+switch-master`: its failoverDetector
//!   following the failover, and the event's text as a subscriber of a sentinel reads it.
//! - The lost lock: `SET NX PX` answered by a primary whose replicas had not received it,
//!   then a failover: a second client acquires the same lock. The same code protected by
//!   WAIT 1 (no acknowledgement = not acquired) keeps one holder. The replicas are cut off
//!   deterministically on both sides: TUMBLER.REPL PAUSE on Tumbler; SIGSTOP of each
//!   replica process plus CLIENT KILL TYPE replica on the primary on the real side.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use tumbler_tests::binary::output_within;
use tumbler_tests::clients::{self, require};
use tumbler_tests::replset::{ReplSet, Side};

#[derive(Clone, Copy)]
enum Lang {
    Python,
    Node,
}

/// The program's interpreter and path, or `None` (skip) if its toolchain is missing.
fn program(lang: Lang) -> Option<(PathBuf, PathBuf)> {
    match lang {
        Lang::Python => {
            let python = require(
                clients::clients_dir().join("venv/bin/python"),
                "python venv",
            )?;
            Some((python, clients::programs_dir().join("python/sentinel.py")))
        }
        Lang::Node => {
            let node_dir = require(
                clients::clients_dir().join("node/node_modules/ioredis"),
                "node client libraries",
            )?
            .parent()?
            .parent()?
            .to_path_buf();
            // ES modules resolve packages from the script's own directory: the program is
            // copied next to node_modules (and removed by RemoveOnDrop).
            Some((PathBuf::from("node"), node_dir))
        }
    }
}

/// The copied program goes away however the test ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `scenario` against a fresh topology on `side` (90 s at most); asserts it printed
/// `ok <scenario>` and returns its `obs` lines.
fn run_side(
    lang: Lang,
    side: Side,
    scenario: &str,
    sentinels: usize,
    password: Option<&str>,
) -> Option<Vec<String>> {
    let (interp, path) = program(lang)?;
    let set = ReplSet::start_with_sentinel_password(side, 2, sentinels, password)?;
    let mut cmd = Command::new(interp);
    if let Some(p) = password {
        cmd.env("SENTINEL_PASSWORD", p);
    }
    let _remove;
    match lang {
        Lang::Python => {
            cmd.arg(path);
        }
        Lang::Node => {
            let script = path.join(format!(
                "sentinel-{}-{}-{scenario}.mjs",
                std::process::id(),
                side.name()
            ));
            std::fs::copy(clients::programs_dir().join("node/sentinel.mjs"), &script).unwrap();
            cmd.arg(&script);
            _remove = RemoveOnDrop(script);
        }
    }
    cmd.arg(scenario).args(set.program_args());
    let (out, killed) = output_within(&mut cmd, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !killed && out.status.success() && stdout.contains(&format!("ok {scenario}")),
        "{scenario} failed on the {} side ({:?}{})\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- server log\n{}",
        side.name(),
        out.status,
        if killed { ", killed after 90 s" } else { "" },
        set.log()
    );
    for l in stdout.lines().filter(|l| l.starts_with("timing ")) {
        eprintln!("{scenario} on {}: {l}", side.name());
    }
    Some(
        stdout
            .lines()
            .filter(|l| l.starts_with("obs "))
            .map(str::to_string)
            .collect(),
    )
}

/// `scenario` on redis-server, then on tumbler: both pass, and observe the same.
fn both(lang: Lang, scenario: &str, sentinels: usize) {
    both_with(lang, scenario, sentinels, None)
}

/// [`both`] with sentinels that require `password`.
fn both_with(lang: Lang, scenario: &str, sentinels: usize, password: Option<&str>) {
    let Some(real) = run_side(lang, Side::Real, scenario, sentinels, password) else {
        return;
    };
    let Some(tumbler) = run_side(lang, Side::Tumbler, scenario, sentinels, password) else {
        return;
    };
    assert!(!real.is_empty(), "{scenario}: no observations");
    eprintln!("{scenario} observed on redis-server:\n{}", real.join("\n"));
    if real != tumbler {
        let mut diff = String::new();
        for i in 0..real.len().max(tumbler.len()) {
            let (r, t) = (real.get(i), tumbler.get(i));
            if r != t {
                diff.push_str(&format!("  redis-server: {r:?}\n  tumbler:      {t:?}\n"));
            }
        }
        panic!("{scenario}: tumbler observed otherwise than redis-server:\n{diff}");
    }
}

// ---- redis-py

#[test]
fn redis_py_sentinel_failover_command() {
    both(Lang::Python, "redis_py_sentinel_failover_command", 3);
}

#[test]
fn redis_py_sentinel_primary_down() {
    both(Lang::Python, "redis_py_sentinel_primary_down", 3);
}

// The sentinels' own requirepass: refused without it or with a wrong one, the Sentinel client
// with it discovers and splits reads and writes; the data nodes take no password.
#[test]
fn redis_py_sentinel_auth() {
    both_with(
        Lang::Python,
        "redis_py_sentinel_auth",
        3,
        Some("s3cret-pass"),
    );
}

// ---- ioredis

#[test]
fn ioredis_sentinel_failover_command() {
    both(Lang::Node, "ioredis_sentinel_failover_command", 3);
}

#[test]
fn ioredis_sentinel_primary_down() {
    both(Lang::Node, "ioredis_sentinel_primary_down", 3);
}

#[test]
fn ioredis_sentinel_auth() {
    both_with(Lang::Node, "ioredis_sentinel_auth", 3, Some("s3cret-pass"));
}

// ---- the lock lost to a lagging failover, and WAIT protecting it

#[test]
fn lock_lost_to_lossy_failover() {
    both(Lang::Python, "lost_lock", 3);
}

#[test]
fn lock_protected_by_wait() {
    both(Lang::Python, "wait_lock", 3);
}

// ---- the same two without sentinels: the operator's failover (REPLICAOF NO ONE on a
// replica, the other pointed at it) after the primary goes down

#[test]
fn lock_lost_to_lossy_manual_failover() {
    both(Lang::Python, "lost_lock_manual_failover", 0);
}

#[test]
fn lock_protected_by_wait_manual_failover() {
    both(Lang::Python, "wait_lock_manual_failover", 0);
}
