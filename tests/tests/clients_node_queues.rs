//! BullMQ, a Node job queue (tests/clients/node/queues.mjs): plain, delayed and prioritised
//! jobs through a Worker with completions read from QueueEvents (a blocking XREAD on the
//! events stream), retries with attempts and fixed/exponential backoff ending completed or
//! failed, a hand retry of a failed job, a job scheduler (repeat), three concurrent workers
//! that must run each of 300 jobs exactly once, and a crashed worker's job recovered by the
//! stalled checker once its lock lapses. BullMQ drives all of it with Lua scripts (EVALSHA),
//! sorted sets, lists, hashes and streams. Each scenario runs against tumbler and then, with
//! the same assertions, against redis-server.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use tumbler_tests::clients::{self, assert_scripting, require, run_scenario, servers};
use tumbler_tests::RedisServer;

fn run(node_dir: &std::path::Path, name: &str, port: u16, against: &str) {
    // ES modules resolve packages from the script's own directory, so the program runs
    // from next to node_modules.
    let script = node_dir.join(format!(
        "queues-{}-{name}-{against}.mjs",
        std::process::id()
    ));
    std::fs::copy(clients::programs_dir().join("node/queues.mjs"), &script).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(name).arg(port.to_string());
    run_scenario(cmd, name, Duration::from_secs(90));
    let _ = std::fs::remove_file(&script);
}

fn scenario(name: &str) {
    let Some(node_dir) = require(
        clients::clients_dir().join("node/node_modules/bullmq"),
        "node client libraries (bullmq)",
    )
    .map(|p: PathBuf| p.parent().unwrap().parent().unwrap().to_path_buf()) else {
        return;
    };
    let servers = servers(1);
    assert_scripting(&servers[0]);
    run(&node_dir, name, servers[0].port(), "tumbler");
    drop(servers);
    // The reference run; a missing redis-server fails (skips under TUMBLER_SKIP_MISSING=1).
    if let Some(redis) = RedisServer::start() {
        run(&node_dir, name, redis.addr.port(), "redis");
    }
}

#[test]
fn bullmq_jobs_delayed_priority_and_events() {
    scenario("jobs");
}

#[test]
fn bullmq_retries_backoff_and_failed_jobs() {
    scenario("retries");
}

#[test]
fn bullmq_job_scheduler_repeats() {
    scenario("repeat");
}

#[test]
fn bullmq_concurrent_workers_run_each_job_once_and_recover_stalled() {
    scenario("workers");
}
