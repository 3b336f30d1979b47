//! Tumbler's emulated cluster against a real 3-node Redis Cluster started by the test
//! (`redis-server --cluster-enabled yes` x3 + `redis-cli --cluster create`): CLUSTER
//! SLOTS/SHARDS shape, MOVED, ASK, TRYAGAIN and CROSSSLOT replies, and the key checks of
//! scripts, compared byte for byte after node ids and ports are normalised.

use lockcore::slots::key_hash_slot;
use tumbler::embed::TestServer;
use tumbler_tests::cluster::{node_ids, normalise, RedisCluster};
use tumbler_tests::{split_line, Raw};

/// A key with a hash tag whose slot node `node` of a 3-primary cluster owns.
fn key_on(node: usize, name: &str, skip: usize) -> String {
    let owner = |s: u16| match s {
        0..=5460 => 0,
        5461..=10922 => 1,
        _ => 2,
    };
    (0..)
        .map(|i| format!("{{t{i}}}{name}"))
        .filter(|k| owner(key_hash_slot(k.as_bytes())) == node)
        .nth(skip)
        .unwrap()
}

struct Side {
    conns: Vec<Raw>,
    addrs: Vec<std::net::SocketAddr>,
    ids: Vec<String>,
}

impl Side {
    fn new(addrs: &[std::net::SocketAddr]) -> Side {
        Side {
            conns: addrs.iter().map(|a| Raw::connect(*a)).collect(),
            addrs: addrs.to_vec(),
            ids: node_ids(addrs),
        }
    }
    /// Runs `@N command...` and returns the normalised reply.
    fn run(&mut self, line: &str) -> String {
        let (node, cmd) = line[1..].split_once(' ').unwrap();
        let node: usize = node.parse().unwrap();
        let raw = self.conns[node].cmd_str(&split_line(cmd));
        let s = normalise(&raw, &self.addrs, &self.ids);
        if cmd.eq_ignore_ascii_case("CLUSTER SHARDS") {
            sorted_shards(&s)
        } else {
            s
        }
    }
}

/// CLUSTER SHARDS lists shards in Redis' dict order (not specified): compare them sorted.
fn sorted_shards(reply: &str) -> String {
    let (head, body) = reply.split_once("\r\n").unwrap();
    let marker = if body.starts_with('%') {
        "%2\r\n$5\r\nslots"
    } else {
        "*4\r\n$5\r\nslots"
    };
    let mut shards: Vec<String> = body
        .split(marker)
        .filter(|x| !x.is_empty())
        .map(|x| format!("{marker}{x}"))
        .collect();
    shards.sort();
    format!("{head}\r\n{}", shards.concat())
}

fn diff(t: &mut Side, r: &mut Side, script: &str) {
    for line in script.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // `~@N ...`: run on both, replies not compared (HELLO names the version).
        if let Some(l) = line.strip_prefix('~') {
            let (a, b) = (t.run(l), r.run(l));
            assert_eq!(a.contains("cluster"), b.contains("cluster"), "`{l}`");
            continue;
        }
        let (a, b) = (t.run(line), r.run(line));
        assert_eq!(
            a, b,
            "`{line}`: tumbler (left) and redis-server (right) disagree"
        );
    }
}

#[test]
fn cluster_replies_match_a_real_redis_cluster() {
    let Some(redis) = RedisCluster::start() else {
        return;
    };
    // Compared with redis-server 7.0.15's cluster: Tumbler as that release.
    let tumbler = TestServer::builder()
        .config("personality", "redis-7.0")
        .nodes(3)
        .cluster(0)
        .test_control(true)
        .spawn()
        .unwrap();
    let mut t = Side::new(tumbler.addrs());
    let mut r = Side::new(&redis.addrs);
    assert_eq!(r.ids, redis.ids());

    let (k0, k0b, k1, k2) = (
        key_on(0, "a", 0),
        key_on(0, "b", 1),
        key_on(1, "a", 0),
        key_on(2, "a", 0),
    );
    let k0b_same = format!("{k0}:same");
    let script = format!(
        r#"
        # Topology, before any write (replication offsets are 0 on both).
        @0 CLUSTER SLOTS
        @1 CLUSTER SLOTS
        @2 CLUSTER SHARDS
        ~@0 HELLO 3
        @0 CLUSTER SHARDS
        ~@0 HELLO 2
        @0 CLUSTER KEYSLOT {k0}
        @0 CLUSTER KEYSLOT "{{}}x"
        @0 CLUSTER KEYSLOT "a{{b}}c{{d}}"
        # MOVED, for reads, writes, scripts and sharded pub/sub
        @0 SET {k0} v
        @0 GET {k1}
        @0 SET {k2} x
        @1 HSET {k0} f 1
        @0 EVAL "return 1" 1 {k2}
        @0 SPUBLISH {k1} m
        @0 PUBLISH plain m
        # CROSSSLOT
        @0 MSET {k0} 1 {k2} 2
        @0 MSET {k0} 1 {k0b_same} 2
        @0 DEL {k0} {k0b}
        @0 EVAL "return 1" 2 {k0} {k1}
        @0 EVAL "return 1" 2 {k0} {k0b}
        @0 MULTI
        @0 SET {k0} 1
        @0 SET {k0b} 1
        @0 EXEC
        @0 EXEC
        @0 MULTI
        @0 SET {k1} 1
        @0 SET {k0} 1
        @0 EXEC
        # Script key checks: undeclared keys must be local and in one slot.
        @0 EVAL "return redis.call('get', KEYS[1])" 1 {k0}
        @0 EVAL "return redis.call('get', ARGV[1])" 0 {k0}
        @0 EVAL "return redis.call('get', ARGV[1])" 0 {k2}
        @0 EVAL "return redis.pcall('get', ARGV[1])" 0 {k2}
        @0 EVAL "redis.call('get', KEYS[1]); return redis.call('get', ARGV[1])" 1 {k0} {k0b}
        @0 EVAL "redis.call('get', ARGV[1]); return redis.call('get', ARGV[2])" 0 {k0} {k0b}
        @0 EVAL "return redis.call('mget', ARGV[1], ARGV[2])" 0 {k0} {k0b}
        # Connection commands
        @0 SELECT 1
        @0 SELECT 0
        @0 READONLY
        @0 READWRITE
        @0 ASKING
        @0 CLUSTER COUNTKEYSINSLOT {slot0}
        # (which keys a partial GETKEYSINSLOT returns is Redis' list order: not compared)
        @0 CLUSTER GETKEYSINSLOT {slot0} 0
        @0 CLUSTER GETKEYSINSLOT {slot0} -1
        @0 CLUSTER COUNTKEYSINSLOT 16384
        @0 CLUSTER KEYSLOT
        @0 CLUSTER NOSUCH
        # SORT's patterns read keys in any slot
        @0 RPUSH {k0} 1
        @0 SORT {k0} BY nosort
        @0 SORT {k0} BY w*
        @0 SORT {k0} GET #
        @0 SORT_RO {k0} GET w*
        "#,
        slot0 = key_hash_slot(k0.as_bytes()),
    );
    diff(&mut t, &mut r, &script);

    // A slot in migration from node 0 to node 1.
    let kx = key_on(0, "m", 5);
    let slot = key_hash_slot(kx.as_bytes());
    let missing = format!("{kx}:missing");
    let other = format!("{kx}:other");
    r.run(&format!("@1 CLUSTER SETSLOT {slot} IMPORTING {}", r.ids[0]));
    r.run(&format!("@0 CLUSTER SETSLOT {slot} MIGRATING {}", r.ids[1]));
    t.run(&format!("@0 TUMBLER.CLUSTER MOVESLOT {slot} 1 ASK"));
    let script = format!(
        r#"
        @0 SET {kx} here
        @0 GET {kx}
        @0 GET {missing}
        @0 MGET {kx} {missing}
        @1 GET {missing}
        @1 ASKING
        @1 SET {missing} there
        @1 GET {missing}
        @1 ASKING
        @1 GET {missing}
        @1 ASKING
        @1 MGET {missing} {other}
        @1 ASKING
        @1 MGET {missing} {kx}
        @0 GET {missing}
        @1 ASKING
        @1 EVAL "return redis.call('get', KEYS[1])" 1 {missing}
        "#
    );
    diff(&mut t, &mut r, &script);
}

const LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
const UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end";

/// Redisson's MultiLock / RedLock sequence (its lock and unlock scripts on every node,
/// reentry, a contender, release) over `tumbler --nodes 3` and three redis-servers. The
/// contender's reply is the remaining PTTL, which depends on timing: compared as "an
/// integer between 1 and the lease".
#[test]
fn redisson_multilock_sequence_matches_three_redis_servers() {
    let Some(r0) = tumbler_tests::RedisServer::start() else {
        return;
    };
    let (r1, r2) = (
        tumbler_tests::RedisServer::start().unwrap(),
        tumbler_tests::RedisServer::start().unwrap(),
    );
    let t = TestServer::builder()
        .config("personality", "redis-7.0")
        .nodes(3)
        .spawn()
        .unwrap();
    let mut tc: Vec<Raw> = t.addrs().iter().map(|a| Raw::connect(*a)).collect();
    let mut rc: Vec<Raw> = [&r0, &r1, &r2].iter().map(|r| r.raw()).collect();
    let lock = |owner: &str| {
        vec!["EVAL", LOCK, "1", "{res}:lock", "30000", owner]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let unlock = |owner: &str| {
        vec![
            "EVAL",
            UNLOCK,
            "2",
            "{res}:lock",
            "redisson_lock__channel:{res}:lock",
            "0",
            "30000",
            owner,
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let steps = [
        lock("a:1"),
        lock("a:1"),
        lock("b:1"),
        unlock("b:1"),
        unlock("a:1"),
        vec!["HGETALL".into(), "{res}:lock".into()],
        unlock("a:1"),
        vec!["EXISTS".into(), "{res}:lock".into()],
        lock("b:1"),
        unlock("b:1"),
    ];
    let pttl = |s: &str| {
        s.strip_prefix(':')
            .and_then(|n| n.trim().parse::<i64>().ok())
            .is_some_and(|n| (1..=30000).contains(&n))
    };
    for step in &steps {
        for node in 0..3 {
            let (a, b) = (tc[node].cmd_str(step), rc[node].cmd_str(step));
            if step.len() == 6 && step[5] == "b:1" && pttl(&b) {
                assert!(pttl(&a), "node {node}, {step:?}: {a:?} vs {b:?}");
            } else {
                assert_eq!(a, b, "node {node}, {step:?}");
            }
        }
    }
}
