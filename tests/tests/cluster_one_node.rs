//! A node that owns every slot (a one-primary cluster) takes a shorter slot check
//! (`Topology::owns_all`): it only looks for keys in two slots. These tests hold it to the
//! full check: CROSSSLOT for commands, EXEC and scripts as a one-node redis-server cluster
//! gives it (differentially), MOVED from its replica, and the switch between the two checks
//! when slots move so that one primary comes to own every slot, and stops owning one.

use std::net::SocketAddr;

use lockcore::slots::key_hash_slot;
use tumbler::embed::TestServer;
use tumbler_tests::{diff_script, Raw, RedisServer};

const CROSS: &str = "-CROSSSLOT Keys in request don't hash to the same slot\r\n";

fn cluster(nodes: usize, replicas: usize) -> TestServer {
    TestServer::builder()
        .nodes(nodes)
        .cluster(replicas)
        .test_control(true)
        .spawn()
        .expect("start cluster")
}

fn moved(key: &str, to: SocketAddr) -> String {
    format!("-MOVED {} {}\r\n", key_hash_slot(key.as_bytes()), to)
}

/// A redis-server in cluster mode that owns all 16384 slots (CLUSTER ADDSLOTSRANGE).
fn redis_one_node_cluster(dir: &std::path::Path) -> Option<RedisServer> {
    let conf = dir.join("nodes.conf");
    let redis = RedisServer::start_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        conf.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
    ])?;
    let mut r = redis.raw();
    assert_eq!(
        r.cmd_str(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]),
        "+OK\r\n"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !r.cmd_str(&["CLUSTER", "INFO"]).contains("cluster_state:ok") {
        assert!(
            std::time::Instant::now() < deadline,
            "redis-server cluster did not come up"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Some(redis)
}

#[test]
fn one_node_cluster_replies_match_redis() {
    let dir = std::env::temp_dir().join(format!(
        "tumbler-one-node-cluster-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(redis) = redis_one_node_cluster(&dir) else {
        return;
    };
    let t = cluster(1, 0);
    let (mut a, mut b) = (Raw::connect(t.addrs()[0]), redis.raw());
    // "a" and "b" are in different slots; "{a}x" is in a's.
    assert_ne!(key_hash_slot(b"a"), key_hash_slot(b"b"));
    diff_script(
        &mut a,
        &mut b,
        r#"
        SET foo 1
        GET foo
        GET nosuch
        MSET a 1 b 2
        MSET {a}x 1 a 2
        MGET a a a
        MGET a {a}x
        DEL a b
        EXISTS a a {a}x
        RENAME a b
        RENAME a {a}y
        EVAL "return 1" 2 a b
        EVAL "return 1" 2 a a
        EVAL "return redis.call('get', KEYS[1])" 2 {a}y a
        EVAL "return redis.call('get', 'b')" 1 {a}y
        EVAL "return redis.call('mget', 'a', 'b')" 0
        EVAL "return redis.call('mget', 'a', '{a}y')" 0
        EVAL "return 7" 0
        MULTI
        SET a 1
        SET b 1
        EXEC
        MULTI
        SET a 1
        GET {a}x
        INCR a
        EXEC
        MULTI
        PING
        EXEC
        SELECT 1
        SELECT 0
        READONLY
        GET a
        MSET a 1 b 2
        READWRITE
        "#,
    );
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replica_of_the_sole_primary_redirects_as_before() {
    let s = cluster(2, 1);
    let a = s.addrs().to_vec();
    let mut primary = Raw::connect(a[0]);
    let mut replica = Raw::connect(a[1]);
    assert_eq!(primary.cmd_str(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(replica.cmd_str(&["GET", "k"]), moved("k", a[0]));
    assert_eq!(replica.cmd_str(&["MSET", "a", "1", "b", "2"]), CROSS);
    assert_eq!(replica.cmd_str(&["READONLY"]), "+OK\r\n");
    assert_eq!(replica.cmd_str(&["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(replica.cmd_str(&["MGET", "a", "b"]), CROSS);
    assert_eq!(replica.cmd_str(&["SET", "k", "w"]), moved("k", a[0]));
    // In a transaction: a read is queued, a write redirected (and EXEC then aborts).
    replica.cmd(&["MULTI"]);
    assert_eq!(replica.cmd_str(&["GET", "k"]), "+QUEUED\r\n");
    assert_eq!(replica.cmd_str(&["SET", "k", "w"]), moved("k", a[0]));
    assert!(replica.cmd_str(&["EXEC"]).starts_with("-EXECABORT"));
    replica.cmd(&["MULTI"]);
    replica.cmd(&["GET", "k"]);
    assert_eq!(replica.cmd_str(&["EXEC"]), "*1\r\n$1\r\nv\r\n");
    assert_eq!(primary.cmd_str(&["GET", "k"]), "$1\r\nv\r\n");
}

/// Moves `slots` to node `to` in one pipeline; returns the replies.
fn move_slots(c: &mut Raw, slots: impl Iterator<Item = u16>, to: &str) -> Vec<String> {
    let slots: Vec<String> = slots.map(|s| s.to_string()).collect();
    for s in &slots {
        c.send(&["TUMBLER.CLUSTER", "MOVESLOT", s.as_str(), to]);
    }
    slots
        .iter()
        .map(|_| String::from_utf8_lossy(&c.read_reply()).into_owned())
        .collect()
}

#[test]
fn owning_every_slot_switches_the_check_both_ways() {
    // Two primaries: node 0 has slots 0-8191, node 1 8192-16383.
    let s = cluster(2, 0);
    let a = s.addrs().to_vec();
    let mut c0 = Raw::connect(a[0]);
    let mut c1 = Raw::connect(a[1]);
    let high = (0..)
        .map(|i| format!("h{i}"))
        .find(|k| key_hash_slot(k.as_bytes()) >= 8192)
        .unwrap();
    let low = (0..)
        .map(|i| format!("l{i}"))
        .find(|k| key_hash_slot(k.as_bytes()) < 8192)
        .unwrap();
    assert_eq!(c0.cmd_str(&["SET", &high, "1"]), moved(&high, a[1]));
    assert_eq!(c1.cmd_str(&["SET", &high, "1"]), "+OK\r\n");

    // Node 0 comes to own every slot.
    let replies = move_slots(&mut c0, 8192..16384, "0");
    assert!(replies.iter().all(|r| r.starts_with(':')), "{replies:?}");
    assert_eq!(c0.cmd_str(&["GET", &high]), "$1\r\n1\r\n");
    assert_eq!(c0.cmd_str(&["MSET", &high, "2", &low, "3"]), CROSS);
    assert_eq!(c0.cmd_str(&["EVAL", "return 1", "2", &high, &low]), CROSS);
    let r = c0.cmd_str(&[
        "EVAL",
        "return redis.call('mget', ARGV[1], ARGV[2])",
        "0",
        &high,
        &low,
    ]);
    assert!(
        r.starts_with("-ERR Script attempted to access a non local key in a cluster node"),
        "{r}"
    );
    assert_eq!(c1.cmd_str(&["GET", &low]), moved(&low, a[0]));

    // A slot starts migrating back: node 0 answers -ASK for keys it does not have there.
    let slot = key_hash_slot(high.as_bytes());
    let fresh = (0..)
        .map(|i| format!("f{i}"))
        .find(|k| key_hash_slot(k.as_bytes()) == slot)
        .unwrap();
    assert_eq!(
        c0.cmd_str(&["TUMBLER.CLUSTER", "MOVESLOT", &slot.to_string(), "1", "ASK"]),
        "+OK\r\n"
    );
    assert_eq!(c0.cmd_str(&["GET", &high]), "$1\r\n1\r\n");
    assert_eq!(
        c0.cmd_str(&["GET", &fresh]),
        format!("-ASK {slot} {}\r\n", a[1])
    );
    // ... and once it has moved, -MOVED; the rest of the slots stay served.
    assert_eq!(
        move_slots(&mut c0, std::iter::once(slot), "1"),
        vec![":1\r\n".to_string()]
    );
    assert_eq!(c0.cmd_str(&["GET", &high]), moved(&high, a[1]));
    assert_eq!(c1.cmd_str(&["GET", &high]), "$1\r\n1\r\n");
    assert_eq!(c0.cmd_str(&["GET", &low]), "$-1\r\n");
    assert_eq!(c0.cmd_str(&["SET", &low, "x"]), "+OK\r\n");
    let r = c0.cmd_str(&["EVAL", "return redis.call('get', ARGV[1])", "0", &high]);
    assert!(
        r.starts_with("-ERR Script attempted to access a non local key in a cluster node"),
        "{r}"
    );

    // Back again: node 0 owns every slot once more.
    assert_eq!(
        move_slots(&mut c0, std::iter::once(slot), "0"),
        vec![":1\r\n".to_string()]
    );
    assert_eq!(c0.cmd_str(&["GET", &high]), "$1\r\n1\r\n");
    assert_eq!(c0.cmd_str(&["MGET", &high, &low]), CROSS);
    assert_eq!(c1.cmd_str(&["GET", &high]), moved(&high, a[0]));
}
