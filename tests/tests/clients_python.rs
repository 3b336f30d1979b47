//! Python lock libraries against tumbler (tests/clients/python/locks.py): redis-py's Lock
//! over RESP2 and RESP3, pottery's Redlock over three servers, python-redis-lock.

use std::process::Command;
use std::time::Duration;

use tumbler_tests::clients::{self, assert_scripting, require, run_scenario, servers};

fn scenario(name: &str, n: usize, needs_scripting: bool) {
    let Some(python) = require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    ) else {
        return;
    };
    let servers = servers(n);
    if needs_scripting {
        assert_scripting(&servers[0]);
    }
    let mut cmd = Command::new(python);
    cmd.arg(clients::programs_dir().join("python/locks.py"))
        .arg(name)
        .args(servers.iter().map(|s| s.port().to_string()));
    run_scenario(cmd, name, Duration::from_secs(120));
}

// redis-py's Lock acquires with SET NX PX but releases/extends with EVALSHA.
#[test]
fn redis_py_lock_resp2() {
    scenario("redis_py_lock", 1, true);
}

#[test]
fn redis_py_lock_resp3() {
    scenario("redis_py_lock_resp3", 1, true);
}

#[test]
fn pottery_redlock_over_three_servers() {
    scenario("pottery_redlock", 3, true);
}

// Also needs BLPOP (lists) for its blocking acquire.
#[test]
fn python_redis_lock() {
    scenario("python_redis_lock", 1, true);
}

// Mutual exclusion under contention: threads wait for each other through real retries
// (redis-py) and BLPOP wake-ups (python-redis-lock), over RESP3.
#[test]
fn contended_locks_lose_no_update() {
    scenario("contended", 1, true);
}
