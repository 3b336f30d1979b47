//! redis-py's stream API against tumbler (tests/clients/python/streams.py): a consumer-group
//! work queue with blocked workers, crash recovery by XAUTOCLAIM, XINFO/XPENDING parsed by
//! the client, and a blocking XREAD, over RESP2 and RESP3.

use std::process::Command;
use std::time::Duration;

use tumbler_tests::clients::{self, require, run_scenario, servers};

fn scenario(name: &str) {
    let Some(python) = require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    ) else {
        return;
    };
    let servers = servers(1);
    let mut cmd = Command::new(python);
    cmd.arg(clients::programs_dir().join("python/streams.py"))
        .arg(name)
        .arg(servers[0].port().to_string());
    run_scenario(cmd, name, Duration::from_secs(120));
}

#[test]
fn work_queue_resp2() {
    scenario("work_queue");
}

#[test]
fn work_queue_resp3() {
    scenario("work_queue_resp3");
}

#[test]
fn blocking_xread_resp2() {
    scenario("blocking_xread");
}

#[test]
fn blocking_xread_resp3() {
    scenario("blocking_xread_resp3");
}
