//! Node lock libraries against tumbler (tests/clients/node/locks.mjs): ioredis, node
//! `redlock` over three servers, `redis-semaphore` Mutex and Semaphore.

use std::process::Command;
use std::time::Duration;

use tumbler_tests::clients::{self, assert_scripting, require, run_scenario, servers};

fn scenario(name: &str, n: usize, needs_scripting: bool) {
    let Some(node_dir) = require(
        clients::clients_dir().join("node/node_modules/ioredis"),
        "node client libraries",
    )
    .map(|p| p.parent().unwrap().parent().unwrap().to_path_buf()) else {
        return;
    };
    let servers = servers(n);
    if needs_scripting {
        assert_scripting(&servers[0]);
    }
    // ES modules resolve packages from the script's own directory, so the program runs
    // from next to node_modules.
    let script = node_dir.join(format!("locks-{}-{name}.mjs", std::process::id()));
    std::fs::copy(clients::programs_dir().join("node/locks.mjs"), &script).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script)
        .arg(name)
        .args(servers.iter().map(|s| s.port().to_string()));
    run_scenario(cmd, name, Duration::from_secs(120));
    let _ = std::fs::remove_file(&script);
}

#[test]
fn ioredis_basics_and_time_control() {
    scenario("ioredis_basics", 1, false);
}

#[test]
fn node_redlock_over_three_servers() {
    scenario("redlock", 3, true);
}

#[test]
fn redis_semaphore_mutex_and_semaphore() {
    scenario("redis_semaphore", 1, true);
}

// Mutual exclusion under contention: redlock, Mutex and Semaphore retried by four
// connections around non-atomic updates.
#[test]
fn contended_locks_lose_no_update() {
    scenario("contended", 1, true);
}
