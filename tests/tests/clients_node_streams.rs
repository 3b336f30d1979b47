//! ioredis against tumbler's streams (tests/clients/node/streams.mjs), used the way
//! BullMQ-style queues use them: a Lua script adds a job and an event with `MAXLEN ~`
//! trimming, a listener follows the events with XREAD BLOCK, and workers in a consumer
//! group take each job exactly once with XREADGROUP BLOCK.

use std::process::Command;
use std::time::Duration;

use tumbler_tests::clients::{self, assert_scripting, require, run_scenario, servers};

#[test]
fn bullmq_style_queue_over_ioredis() {
    let Some(node_dir) = require(
        clients::clients_dir().join("node/node_modules/ioredis"),
        "node client libraries",
    )
    .map(|p| p.parent().unwrap().parent().unwrap().to_path_buf()) else {
        return;
    };
    let servers = servers(1);
    assert_scripting(&servers[0]);
    // ES modules resolve packages from the script's own directory.
    let script = node_dir.join(format!("streams-{}.mjs", std::process::id()));
    std::fs::copy(clients::programs_dir().join("node/streams.mjs"), &script).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script)
        .arg("queue")
        .arg(servers[0].port().to_string());
    run_scenario(cmd, "queue", Duration::from_secs(120));
    let _ = std::fs::remove_file(&script);
}
