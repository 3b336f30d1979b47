//! Real cluster and RedLock clients against one tumbler process serving several nodes
//! (tests/clients/python/cluster.py, tests/clients/node/cluster.mjs): redis-py
//! `RedisCluster` and ioredis `Cluster` with locks across slots, slot moves and CROSSSLOT;
//! redis-py reading from replicas and following a failover; pottery `Redlock` and node
//! `redlock` with one and then two of three nodes down.

use std::process::Command;
use std::time::Duration;

use tumbler::embed::TestServer;
use tumbler_tests::clients::{self, require, run_scenario};

/// Three nodes, independent or as a cluster; `replicas` adds that many per primary.
fn nodes(cluster: bool, replicas: usize) -> TestServer {
    let b = TestServer::builder()
        .nodes(3 * (replicas + 1))
        .test_control(true);
    let b = if cluster { b.cluster(replicas) } else { b };
    b.spawn().expect("start tumbler nodes")
}

fn python(name: &str, cluster: bool) {
    python_with(name, cluster, 0)
}

fn python_with(name: &str, cluster: bool, replicas: usize) {
    let Some(python) = require(
        clients::clients_dir().join("venv/bin/python"),
        "python venv",
    ) else {
        return;
    };
    let s = nodes(cluster, replicas);
    let mut cmd = Command::new(python);
    cmd.arg(clients::programs_dir().join("python/cluster.py"))
        .arg(name)
        .args(s.addrs().iter().map(|a| a.port().to_string()));
    run_scenario(cmd, name, Duration::from_secs(120));
}

fn node(name: &str, cluster: bool) {
    let Some(node_dir) = require(
        clients::clients_dir().join("node/node_modules/ioredis"),
        "node client libraries",
    )
    .map(|p| p.parent().unwrap().parent().unwrap().to_path_buf()) else {
        return;
    };
    let s = nodes(cluster, 0);
    // ES modules resolve packages from the script's own directory.
    let script = node_dir.join(format!("cluster-{}-{name}.mjs", std::process::id()));
    std::fs::copy(clients::programs_dir().join("node/cluster.mjs"), &script).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script)
        .arg(name)
        .args(s.addrs().iter().map(|a| a.port().to_string()));
    run_scenario(cmd, name, Duration::from_secs(120));
    let _ = std::fs::remove_file(&script);
}

#[test]
fn redis_py_cluster_locks_moves_and_crossslot() {
    python("redis_py_cluster", true);
}

// READONLY reads from replicas, then a failover the client follows.
#[test]
fn redis_py_cluster_reads_from_replicas_and_follows_a_failover() {
    python_with("redis_py_cluster_replicas", true, 1);
}

#[test]
fn pottery_redlock_with_one_then_two_nodes_down() {
    python("pottery_redlock_faults", false);
}

#[test]
fn ioredis_cluster_locks_moves_and_crossslot() {
    node("ioredis_cluster", true);
}

#[test]
fn node_redlock_with_one_then_two_nodes_down() {
    node("redlock_faults", false);
}
