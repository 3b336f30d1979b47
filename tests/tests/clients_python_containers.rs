//! pottery's Redis-backed containers (tests/clients/python/containers.py): RedisCounter,
//! RedisSet, RedisDeque, RedisDict, HyperLogLog and BloomFilter, each created, updated, read
//! back and put through its own operations (set algebra, both deque ends and maxlen, dict
//! iteration, HLL union by PFMERGE, Bloom membership by SETBIT/GETBIT/BITCOUNT). The same
//! program runs against redis-server with the same assertions, so a passing assertion there
//! and a failing one here is a fidelity bug, not a wrong expectation.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use tumbler_tests::clients::{self, require, run_scenario, servers};
use tumbler_tests::RedisServer;

fn python() -> Option<PathBuf> {
    require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    )
}

fn run_all(python: PathBuf, port: u16, protocol: u8) {
    let mut cmd = Command::new(python);
    cmd.arg(clients::programs_dir().join("python/containers.py"))
        .arg("all")
        .arg(port.to_string())
        .arg(protocol.to_string());
    run_scenario(cmd, "all", Duration::from_secs(120));
}

#[test]
fn pottery_containers_on_tumbler() {
    let Some(python) = python() else { return };
    let servers = servers(1);
    run_all(python, servers[0].port(), 2);
}

// redis-py parses RESP3 replies (maps, sets, doubles) differently; pottery must not notice.
#[test]
fn pottery_containers_on_tumbler_resp3() {
    let Some(python) = python() else { return };
    let servers = servers(1);
    run_all(python, servers[0].port(), 3);
}

// The reference run: the assertions hold on Redis itself. A missing redis-server fails
// (skips under TUMBLER_SKIP_MISSING=1).
#[test]
fn pottery_containers_on_redis_server() {
    let Some(python) = python() else { return };
    let Some(redis) = RedisServer::start() else {
        return;
    };
    run_all(python, redis.addr.port(), 2);
}
