//! Sentinel clients against a primary, two replicas and three sentinels, on both sides: real
//! redis-server processes and one tumbler process (tests/src/replset.rs), the same client
//! program and assertions for each (tests/clients/python/sentinel.py,
//! tests/clients/node/sentinel.mjs).
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

use std::process::Command;
use std::time::Duration;

use tumbler_tests::clients::{self, require, run_scenario};
use tumbler_tests::replset::{ReplSet, Side};

fn python(side: Side, scenario: &str) {
    let Some(python) = require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    ) else {
        return;
    };
    let Some(set) = ReplSet::start(side, 2, 3) else {
        return;
    };
    let mut cmd = Command::new(python);
    cmd.arg(clients::programs_dir().join("python/sentinel.py"))
        .arg(scenario)
        .args(set.program_args());
    run_scenario(cmd, scenario, Duration::from_secs(90));
}

fn node(side: Side, scenario: &str) {
    let Some(node_dir) = require(
        clients::clients_dir().join("node/node_modules/ioredis"),
        "node client libraries",
    )
    .map(|p| p.parent().unwrap().parent().unwrap().to_path_buf()) else {
        return;
    };
    let Some(set) = ReplSet::start(side, 2, 3) else {
        return;
    };
    // ES modules resolve packages from the script's own directory.
    let script = node_dir.join(format!(
        "sentinel-{}-{}-{scenario}.mjs",
        std::process::id(),
        side.name()
    ));
    std::fs::copy(clients::programs_dir().join("node/sentinel.mjs"), &script).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(scenario).args(set.program_args());
    let _remove = RemoveOnDrop(script);
    run_scenario(cmd, scenario, Duration::from_secs(90));
}

/// The copied program goes away however the test ends.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

// ---- redis-py

#[test]
fn redis_py_sentinel_failover_command_real() {
    python(Side::Real, "redis_py_sentinel_failover_command");
}

#[test]
fn redis_py_sentinel_failover_command_tumbler() {
    python(Side::Tumbler, "redis_py_sentinel_failover_command");
}

#[test]
fn redis_py_sentinel_primary_down_real() {
    python(Side::Real, "redis_py_sentinel_primary_down");
}

#[test]
fn redis_py_sentinel_primary_down_tumbler() {
    python(Side::Tumbler, "redis_py_sentinel_primary_down");
}

// ---- ioredis

#[test]
fn ioredis_sentinel_failover_command_real() {
    node(Side::Real, "ioredis_sentinel_failover_command");
}

#[test]
fn ioredis_sentinel_failover_command_tumbler() {
    node(Side::Tumbler, "ioredis_sentinel_failover_command");
}

#[test]
fn ioredis_sentinel_primary_down_real() {
    node(Side::Real, "ioredis_sentinel_primary_down");
}

#[test]
fn ioredis_sentinel_primary_down_tumbler() {
    node(Side::Tumbler, "ioredis_sentinel_primary_down");
}

// ---- the lock lost to a lagging failover, and WAIT protecting it

#[test]
fn lock_lost_to_lossy_failover_real() {
    python(Side::Real, "lost_lock");
}

#[test]
fn lock_lost_to_lossy_failover_tumbler() {
    python(Side::Tumbler, "lost_lock");
}

#[test]
fn lock_protected_by_wait_real() {
    python(Side::Real, "wait_lock");
}

#[test]
fn lock_protected_by_wait_tumbler() {
    python(Side::Tumbler, "wait_lock");
}

// ---- the same two without sentinels: the operator's failover (REPLICAOF NO ONE on a
// replica, the other pointed at it) after the primary goes down

fn python_no_sentinels(side: Side, scenario: &str) {
    let Some(python) = require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    ) else {
        return;
    };
    let Some(set) = ReplSet::start(side, 2, 0) else {
        return;
    };
    let mut cmd = Command::new(python);
    cmd.arg(clients::programs_dir().join("python/sentinel.py"))
        .arg(scenario)
        .args(set.program_args());
    run_scenario(cmd, scenario, Duration::from_secs(60));
}

#[test]
fn lock_lost_to_lossy_manual_failover_real() {
    python_no_sentinels(Side::Real, "lost_lock_manual_failover");
}

#[test]
fn lock_lost_to_lossy_manual_failover_tumbler() {
    python_no_sentinels(Side::Tumbler, "lost_lock_manual_failover");
}

#[test]
fn lock_protected_by_wait_manual_failover_real() {
    python_no_sentinels(Side::Real, "wait_lock_manual_failover");
}

#[test]
fn lock_protected_by_wait_manual_failover_tumbler() {
    python_no_sentinels(Side::Tumbler, "wait_lock_manual_failover");
}
