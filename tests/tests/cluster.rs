//! One process, many nodes (server/src/cluster/, docs/cluster.md), over TCP with raw RESP:
//! independent nodes, the emulated Redis Cluster (slots, MOVED, CROSSSLOT, ASK, TRYAGAIN,
//! replicas, pub/sub), faults on command, per-node clocks, and a Redisson-style multi-lock
//! over three nodes.

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use lockcore::slots::key_hash_slot;
use tumbler::embed::TestServer;
use tumbler_tests::Raw;

fn cluster(nodes: usize, replicas: usize) -> TestServer {
    TestServer::builder()
        .nodes(nodes)
        .cluster(replicas)
        .test_control(true)
        .time_control(true)
        .spawn()
        .expect("start cluster")
}

/// The primary (0, 1 or 2) that owns a slot of a 3-primary cluster.
fn owner3(slot: u16) -> usize {
    match slot {
        0..=5460 => 0,
        5461..=10922 => 1,
        _ => 2,
    }
}

/// A key (with hash tag `{tag}`) whose slot node `node` of a 3-primary cluster owns.
fn key_on(node: usize, name: &str) -> String {
    (0..)
        .map(|i| format!("{{t{i}}}{name}"))
        .find(|k| owner3(key_hash_slot(k.as_bytes())) == node)
        .unwrap()
}

fn moved(key: &str, to: SocketAddr) -> String {
    format!("-MOVED {} {}\r\n", key_hash_slot(key.as_bytes()), to)
}

#[test]
fn independent_nodes_are_separate_servers() {
    let s = TestServer::builder().nodes(3).spawn().expect("start nodes");
    let addrs = s.addrs().to_vec();
    assert_eq!(addrs.len(), 3);
    let mut c: Vec<Raw> = addrs.iter().map(|a| Raw::connect(*a)).collect();
    assert_eq!(c[0].cmd_str(&["SET", "k", "0"]), "+OK\r\n");
    assert_eq!(c[1].cmd_str(&["GET", "k"]), "$-1\r\n");
    assert_eq!(c[2].cmd_str(&["SET", "k", "2"]), "+OK\r\n");
    assert_eq!(c[0].cmd_str(&["GET", "k"]), "$1\r\n0\r\n");
    // Scripts, pub/sub and clients are per node too.
    let sha = c[0].cmd_str(&["SCRIPT", "LOAD", "return 1"]);
    let sha = sha.lines().nth(1).unwrap().to_string();
    assert!(c[1]
        .cmd_str(&["EVALSHA", &sha, "0"])
        .starts_with("-NOSCRIPT"));
    let mut sub = Raw::connect(addrs[1]);
    sub.cmd(&["SUBSCRIBE", "ch"]);
    assert_eq!(c[0].cmd_str(&["PUBLISH", "ch", "x"]), ":0\r\n");
    assert_eq!(c[1].cmd_str(&["PUBLISH", "ch", "x"]), ":1\r\n");
    // Not a cluster: CLUSTER is refused as by a standalone redis-server.
    assert_eq!(
        c[0].cmd_str(&["CLUSTER", "INFO"]),
        "-ERR This instance has cluster support disabled\r\n"
    );
    assert!(c[0]
        .cmd_str(&["INFO", "cluster"])
        .contains("cluster_enabled:0"));
    // Test control is off unless asked for: the commands do not exist.
    assert!(c[0]
        .cmd_str(&["TUMBLER.NODE", "DOWN", "1"])
        .starts_with("-ERR unknown command 'TUMBLER.NODE'"));
    assert_eq!(
        c[0].cmd_str(&["COMMAND", "INFO", "tumbler.node"]),
        "*1\r\n$-1\r\n"
    );
}

#[test]
fn cluster_slots_are_split_as_redis_cli_does() {
    let s = cluster(3, 0);
    let a = s.addrs().to_vec();
    let mut c = Raw::connect(a[1]);
    let slots = c.cmd_str(&["CLUSTER", "SLOTS"]);
    let mut expect = String::from("*3\r\n");
    for (i, (lo, hi)) in [(0, 5460), (5461, 10922), (10923, 16383)]
        .iter()
        .enumerate()
    {
        expect.push_str(&format!(
            "*3\r\n:{lo}\r\n:{hi}\r\n*4\r\n$9\r\n127.0.0.1\r\n:{}\r\n$40\r\n",
            a[i].port()
        ));
        assert!(slots.contains(&expect), "{slots}");
        let id = slots[expect.len()..]
            .split("\r\n")
            .next()
            .unwrap()
            .to_string();
        expect.push_str(&id);
        expect.push_str("\r\n*0\r\n");
    }
    assert_eq!(slots, expect);
    let ids: Vec<String> = a
        .iter()
        .map(|x| Raw::connect(*x).cmd_str(&["CLUSTER", "MYID"]))
        .collect();
    assert!(ids[0] != ids[1] && ids[1] != ids[2]);
    let nodes = c.cmd_str(&["CLUSTER", "NODES"]);
    assert!(nodes.contains(&format!(
        "127.0.0.1:{}@{} myself,master - 0 0",
        a[1].port(),
        a[1].port() as u32 + 10000
    )));
    assert!(nodes.contains(" connected 5461-10922\n"), "{nodes}");
    let info = c.cmd_str(&["CLUSTER", "INFO"]);
    assert!(info.contains("cluster_state:ok\r\n") && info.contains("cluster_size:3\r\n"));
    assert!(c
        .cmd_str(&["INFO", "cluster"])
        .contains("cluster_enabled:1"));
    assert!(c
        .cmd_str(&["INFO", "server"])
        .contains("redis_mode:cluster"));
    assert_eq!(c.cmd_str(&["CLUSTER", "KEYSLOT", "foo"]), ":12182\r\n");
    assert_eq!(
        c.cmd_str(&["CLUSTER", "KEYSLOT", "{foo}.lock"]),
        ":12182\r\n"
    );
    assert_eq!(
        c.cmd_str(&["SELECT", "1"]),
        "-ERR SELECT is not allowed in cluster mode\r\n"
    );
    assert_eq!(c.cmd_str(&["SELECT", "0"]), "+OK\r\n");
}

#[test]
fn moved_and_crossslot_follow_the_key_specs() {
    let s = cluster(3, 0);
    let a = s.addrs().to_vec();
    let mut c0 = Raw::connect(a[0]);
    let k0 = key_on(0, "lock");
    let k2 = key_on(2, "lock");
    assert_eq!(c0.cmd_str(&["SET", &k0, "v"]), "+OK\r\n");
    assert_eq!(c0.cmd_str(&["GET", &k2]), moved(&k2, a[2]));
    assert_eq!(c0.cmd_str(&["HSET", &k2, "f", "1"]), moved(&k2, a[2]));
    // Multi-key commands: one slot is fine (hash tags), two is CROSSSLOT.
    let k0b = format!("{}:b", &k0);
    assert_eq!(c0.cmd_str(&["MSET", &k0, "1", &k0b, "2"]), "+OK\r\n");
    let cross = "-CROSSSLOT Keys in request don't hash to the same slot\r\n";
    assert_eq!(c0.cmd_str(&["MSET", &k0, "1", &k2, "2"]), cross);
    assert_eq!(c0.cmd_str(&["DEL", &k0, &k2]), cross);
    // Scripts: declared keys must share a slot; undeclared keys must be local.
    assert_eq!(c0.cmd_str(&["EVAL", "return 1", "2", &k0, &k2]), cross);
    assert_eq!(
        c0.cmd_str(&["EVAL", "return 1", "2", &k2, &k2]),
        moved(&k2, a[2])
    );
    assert_eq!(
        c0.cmd_str(&["EVAL", "return redis.call('get', KEYS[1])", "1", &k0]),
        "$1\r\n1\r\n"
    );
    let r = c0.cmd_str(&["EVAL", "return redis.call('get', ARGV[1])", "0", &k2]);
    assert!(
        r.starts_with("-ERR Script attempted to access a non local key in a cluster node"),
        "{r}"
    );
    // Several local slots in one script are fine (Redis 7.0).
    let other0 = key_on(0, "other");
    assert_eq!(
        c0.cmd_str(&[
            "EVAL",
            "redis.call('get', ARGV[1]); return redis.call('get', ARGV[2])",
            "0",
            &k0,
            &other0
        ]),
        "$-1\r\n"
    );
    // MULTI: a queued command for another node flags the transaction; EXEC of keys in two
    // slots answers CROSSSLOT and discards it.
    assert_eq!(c0.cmd_str(&["MULTI"]), "+OK\r\n");
    assert_eq!(c0.cmd_str(&["SET", &k2, "1"]), moved(&k2, a[2]));
    assert!(c0.cmd_str(&["EXEC"]).starts_with("-EXECABORT"));
    let other_slot = (0..)
        .map(|i| format!("x{i}"))
        .find(|k| {
            owner3(key_hash_slot(k.as_bytes())) == 0
                && key_hash_slot(k.as_bytes()) != key_hash_slot(k0.as_bytes())
        })
        .unwrap();
    c0.cmd(&["MULTI"]);
    assert_eq!(c0.cmd_str(&["SET", &k0, "1"]), "+QUEUED\r\n");
    assert_eq!(c0.cmd_str(&["SET", &other_slot, "1"]), "+QUEUED\r\n");
    assert_eq!(c0.cmd_str(&["EXEC"]), cross);
    assert_eq!(c0.cmd_str(&["EXEC"]), "-ERR EXEC without MULTI\r\n");
    // Keyless commands run anywhere.
    assert_eq!(c0.cmd_str(&["PING"]), "+PONG\r\n");
    assert_eq!(c0.cmd_str(&["EVAL", "return 7", "0"]), ":7\r\n");
}

#[test]
fn slot_moves_redirect_with_moved_ask_and_tryagain() {
    let s = cluster(3, 0);
    let a = s.addrs().to_vec();
    let mut c0 = Raw::connect(a[0]);
    let mut c1 = Raw::connect(a[1]);
    let k = key_on(0, "lock");
    let slot = key_hash_slot(k.as_bytes()).to_string();
    let k2 = format!("{k}:2");
    c0.cmd(&["SET", &k, "v", "PX", "60000"]);
    c0.cmd(&["SET", &k2, "w"]);
    assert_eq!(c0.cmd_str(&["CLUSTER", "COUNTKEYSINSLOT", &slot]), ":2\r\n");

    // Migration: keys still at the source are served there; a missing key is -ASK.
    assert_eq!(
        c0.cmd_str(&["TUMBLER.CLUSTER", "MOVESLOT", &slot, "1", "ASK"]),
        "+OK\r\n"
    );
    assert_eq!(c0.cmd_str(&["GET", &k]), "$1\r\nv\r\n");
    let fresh = format!("{k}:new");
    let ask = format!("-ASK {slot} {}\r\n", a[1]);
    assert_eq!(c0.cmd_str(&["GET", &fresh]), ask);
    // At the target: MOVED back without ASKING, served with it (for one command).
    assert_eq!(
        c1.cmd_str(&["SET", &fresh, "n"]),
        format!("-MOVED {slot} {}\r\n", a[0])
    );
    assert_eq!(c1.cmd_str(&["ASKING"]), "+OK\r\n");
    assert_eq!(c1.cmd_str(&["SET", &fresh, "n"]), "+OK\r\n");
    assert_eq!(
        c1.cmd_str(&["GET", &fresh]),
        format!("-MOVED {slot} {}\r\n", a[0])
    );
    // A multi-key command with keys missing at the target: TRYAGAIN.
    c1.cmd(&["ASKING"]);
    assert_eq!(
        c1.cmd_str(&["MGET", &fresh, &k]),
        "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
    );
    let nodes = c0.cmd_str(&["CLUSTER", "NODES"]);
    assert!(nodes.contains(&format!("[{slot}->-")), "{nodes}");
    // Move one key, then finish: every key is at the target, with its TTL.
    assert_eq!(
        c0.cmd_str(&["TUMBLER.CLUSTER", "MIGRATEKEYS", &slot, "1"]),
        ":1\r\n"
    );
    assert_eq!(
        c0.cmd_str(&["TUMBLER.CLUSTER", "MOVESLOT", &slot, "1"]),
        ":1\r\n"
    );
    assert_eq!(
        c0.cmd_str(&["GET", &k]),
        format!("-MOVED {slot} {}\r\n", a[1])
    );
    assert_eq!(c1.cmd_str(&["GET", &k]), "$1\r\nv\r\n");
    assert_eq!(c1.cmd_str(&["GET", &k2]), "$1\r\nw\r\n");
    let pttl: i64 = c1.cmd_str(&["PTTL", &k])[1..].trim().parse().unwrap();
    assert!(pttl > 50_000 && pttl <= 60_000, "{pttl}");
    assert!(c1.cmd_str(&["PTTL", &k2]) == ":-1\r\n");
    assert_eq!(c1.cmd_str(&["CLUSTER", "COUNTKEYSINSLOT", &slot]), ":3\r\n");
    let keys = c1.cmd_str(&["CLUSTER", "GETKEYSINSLOT", &slot, "10"]);
    assert!(keys.starts_with("*3\r\n") && keys.contains(&k2));
    let slots = c1.cmd_str(&["CLUSTER", "SLOTS"]);
    assert!(
        slots.starts_with("*5\r\n"),
        "the moved slot splits node 0's range: {slots}"
    );
}

#[test]
fn replicas_are_discoverable_readable_and_fail_over() {
    let s = cluster(6, 1);
    let a = s.addrs().to_vec();
    let mut c = Raw::connect(a[0]);
    let slots = c.cmd_str(&["CLUSTER", "SLOTS"]);
    // Node 3 replicates node 0, 4 node 1, 5 node 2; each range lists primary then replica.
    assert!(slots.contains(&format!(
        ":0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:{}\r\n",
        a[0].port()
    )));
    assert!(slots.contains(&format!(":{}\r\n", a[3].port())));
    let shards = c.cmd_str(&["CLUSTER", "SHARDS"]);
    assert!(shards.contains("$4\r\nrole\r\n$7\r\nreplica\r\n"));
    let k = key_on(0, "lock");
    c.cmd(&["SET", &k, "v"]);
    let mut r = Raw::connect(a[3]);
    assert_eq!(r.cmd_str(&["GET", &k]), moved(&k, a[0]));
    assert_eq!(r.cmd_str(&["READONLY"]), "+OK\r\n");
    assert_eq!(r.cmd_str(&["GET", &k]), "$1\r\nv\r\n");
    assert_eq!(r.cmd_str(&["SET", &k, "w"]), moved(&k, a[0]));
    assert_eq!(r.cmd_str(&["READWRITE"]), "+OK\r\n");
    assert_eq!(r.cmd_str(&["GET", &k]), moved(&k, a[0]));
    let nodes = r.cmd_str(&["CLUSTER", "NODES"]);
    assert!(nodes.contains("myself,slave "), "{nodes}");
    // Fail over: the replica is the primary now, with the data.
    assert_eq!(c.cmd_str(&["TUMBLER.CLUSTER", "FAILOVER", "3"]), "+OK\r\n");
    assert_eq!(r.cmd_str(&["SET", &k, "w"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["GET", &k]), moved(&k, a[3]));
    assert!(c
        .cmd_str(&["TUMBLER.CLUSTER", "FAILOVER", "3"])
        .starts_with("-ERR"));
}

#[test]
fn publish_reaches_every_node_and_sharded_pubsub_stays_on_the_owner() {
    let s = cluster(3, 0);
    let a = s.addrs().to_vec();
    let mut sub = Raw::connect(a[2]);
    sub.cmd(&["SUBSCRIBE", "news"]);
    let mut c0 = Raw::connect(a[0]);
    // The count is this node's subscribers, as in Redis; the message reaches node 2.
    assert_eq!(c0.cmd_str(&["PUBLISH", "news", "hi"]), ":0\r\n");
    assert_eq!(
        String::from_utf8_lossy(&sub.read_reply()),
        "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
    );
    // Redisson's unlock script publishes from inside EVAL: that crosses nodes too.
    let k = key_on(0, "lock");
    c0.cmd(&[
        "EVAL",
        "return redis.call('publish', ARGV[1], 'unlocked')",
        "1",
        &k,
        "news",
    ]);
    assert!(String::from_utf8_lossy(&sub.read_reply()).contains("unlocked"));
    let ch = key_on(1, "chan");
    assert_eq!(c0.cmd_str(&["SPUBLISH", &ch, "x"]), moved(&ch, a[1]));
    let mut ssub0 = Raw::connect(a[0]);
    assert_eq!(ssub0.cmd_str(&["SSUBSCRIBE", &ch]), moved(&ch, a[1]));
    let mut ssub = Raw::connect(a[1]);
    assert!(ssub.cmd_str(&["SSUBSCRIBE", &ch]).contains("ssubscribe"));
    assert_eq!(
        Raw::connect(a[1]).cmd_str(&["SPUBLISH", &ch, "y"]),
        ":1\r\n"
    );
    assert!(String::from_utf8_lossy(&ssub.read_reply()).contains("smessage"));
}

fn refused(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err()
}

#[test]
fn nodes_go_down_and_come_back_with_or_without_their_data() {
    let s = TestServer::builder()
        .nodes(3)
        .test_control(true)
        .spawn()
        .unwrap();
    let a = s.addrs().to_vec();
    let mut ctl = Raw::connect(a[0]);
    let mut c2 = Raw::connect(a[2]);
    c2.cmd(&["SET", "k", "v"]);
    assert_eq!(ctl.cmd_str(&["TUMBLER.NODE", "DOWN", "2"]), "+OK\r\n");
    assert!(c2.is_closed(), "a down node drops its connections");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !refused(a[2]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(refused(a[2]), "a down node refuses connections");
    let list = ctl.cmd_str(&["TUMBLER.NODE", "LIST"]);
    assert!(list.contains(&format!("node=2 port={} ", a[2].port())) && list.contains("down=1"));
    assert_eq!(ctl.cmd_str(&["TUMBLER.NODE", "UP", "2"]), "+OK\r\n");
    let connect = |addr| {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Ok(s) = TcpStream::connect(addr) {
                drop(s);
                return Raw::connect(addr);
            }
            assert!(Instant::now() < deadline, "node did not come back");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let mut c2 = connect(a[2]);
    assert_eq!(c2.cmd_str(&["GET", "k"]), "$1\r\nv\r\n");
    ctl.cmd(&["TUMBLER.NODE", "DOWN", "2"]);
    assert_eq!(
        ctl.cmd_str(&["TUMBLER.NODE", "UP", "2", "FLUSH"]),
        "+OK\r\n"
    );
    let mut c2 = connect(a[2]);
    assert_eq!(c2.cmd_str(&["GET", "k"]), "$-1\r\n");
    assert!(ctl
        .cmd_str(&["TUMBLER.NODE", "DOWN", "3"])
        .starts_with("-ERR no such node"));
}

#[test]
fn delayed_and_dropped_replies() {
    let s = TestServer::builder()
        .nodes(2)
        .test_control(true)
        .spawn()
        .unwrap();
    let a = s.addrs().to_vec();
    let mut ctl = Raw::connect(a[0]);
    let mut c1 = Raw::connect(a[1]);
    assert_eq!(
        ctl.cmd_str(&["TUMBLER.NODE", "DELAY", "1", "200"]),
        "+OK\r\n"
    );
    let t = Instant::now();
    assert_eq!(c1.cmd_str(&["PING"]), "+PONG\r\n");
    assert!(
        t.elapsed() >= Duration::from_millis(200),
        "reply came early"
    );
    ctl.cmd(&["TUMBLER.NODE", "DELAY", "1", "0"]);
    // Node 0 is unaffected.
    assert_eq!(ctl.cmd_str(&["PING"]), "+PONG\r\n");
    assert_eq!(ctl.cmd_str(&["TUMBLER.NODE", "DROP", "1", "1"]), "+OK\r\n");
    let mut s1 = TcpStream::connect(a[1]).unwrap();
    s1.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    use std::io::{Read, Write};
    s1.write_all(b"SET dropped 1\r\n").unwrap();
    let mut b = [0u8; 16];
    assert!(s1.read(&mut b).is_err(), "a dropped reply was sent");
    ctl.cmd(&["TUMBLER.NODE", "DROP", "1", "0"]);
    // The command ran; only its reply was lost.
    assert_eq!(
        Raw::connect(a[1]).cmd_str(&["GET", "dropped"]),
        "$1\r\n1\r\n"
    );
    assert!(ctl
        .cmd_str(&["TUMBLER.NODE", "DROP", "1", "1.5"])
        .starts_with("-ERR"));
}

#[test]
fn each_node_has_its_own_clock() {
    let s = TestServer::builder()
        .nodes(3)
        .time_control(true)
        .spawn()
        .unwrap();
    let a = s.addrs().to_vec();
    let mut c: Vec<Raw> = a.iter().map(|x| Raw::connect(*x)).collect();
    for x in c.iter_mut() {
        x.cmd(&["SET", "lease", "holder", "PX", "10000"]);
    }
    // Node 1's clock runs 10 s ahead: its lease is gone, the others still hold.
    c[1].cmd(&["TUMBLER.TIME", "ADVANCE", "10001"]);
    assert_eq!(c[1].cmd_str(&["GET", "lease"]), "$-1\r\n");
    assert_eq!(c[0].cmd_str(&["GET", "lease"]), "$6\r\nholder\r\n");
    assert_eq!(c[2].cmd_str(&["GET", "lease"]), "$6\r\nholder\r\n");
}

const LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
const UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end";

/// Redisson's RedissonMultiLock/RedLock over three nodes: take the lock script on every
/// node; with a majority down the sequence fails and rolls back what it took.
#[test]
fn redisson_style_multilock_over_three_nodes() {
    let s = TestServer::builder()
        .nodes(3)
        .test_control(true)
        .time_control(true)
        .spawn()
        .unwrap();
    let a = s.addrs().to_vec();
    let lock =
        |c: &mut Raw, owner: &str| c.cmd_str(&["EVAL", LOCK, "1", "{order}:lock", "30000", owner]);
    let unlock = |c: &mut Raw, owner: &str| {
        c.cmd_str(&[
            "EVAL",
            UNLOCK,
            "2",
            "{order}:lock",
            "redisson_lock__channel:{order}:lock",
            "0",
            "30000",
            owner,
        ])
    };
    let mut c: Vec<Raw> = a.iter().map(|x| Raw::connect(*x)).collect();
    for x in c.iter_mut() {
        assert_eq!(lock(x, "uuid-a:1"), "$-1\r\n");
    }
    // A second owner is refused everywhere (each node answers the remaining PTTL).
    let mut d: Vec<Raw> = a.iter().map(|x| Raw::connect(*x)).collect();
    for x in d.iter_mut() {
        assert!(lock(x, "uuid-b:1").starts_with(':'));
    }
    for x in c.iter_mut() {
        assert_eq!(unlock(x, "uuid-a:1"), ":1\r\n");
    }
    // Two nodes down: only one lock can be taken, less than the quorum of 2; the client
    // releases the one it got.
    let mut ctl = Raw::connect(a[0]);
    ctl.cmd(&["TUMBLER.NODE", "DOWN", "1"]);
    ctl.cmd(&["TUMBLER.NODE", "DOWN", "2"]);
    let mut got = 0;
    for addr in &a {
        if let Ok(s) = TcpStream::connect_timeout(addr, Duration::from_millis(200)) {
            drop(s);
            let mut x = Raw::connect(*addr);
            if lock(&mut x, "uuid-b:1") == "$-1\r\n" {
                got += 1;
                assert_eq!(unlock(&mut x, "uuid-b:1"), ":1\r\n");
            }
        }
    }
    assert_eq!(got, 1, "only node 0 is up");
    // One node down: two of three is a quorum.
    ctl.cmd(&["TUMBLER.NODE", "UP", "1"]);
    let mut got = 0;
    for addr in &a[..2] {
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut x = Raw::connect(*addr);
        if lock(&mut x, "uuid-b:1") == "$-1\r\n" {
            got += 1;
        }
    }
    assert_eq!(got, 2);
}

/// A stopped multi-node server closes every node's port at once: the nodes keep their
/// sockets for TUMBLER.NODE DOWN/UP, and those must not outlive the server (a connection
/// would queue on them and never be served).
#[test]
fn stopping_the_server_closes_every_node_port() {
    let s = TestServer::builder()
        .nodes(3)
        .test_control(true)
        .spawn()
        .unwrap();
    let addrs: Vec<SocketAddr> = s.addrs().to_vec();
    // A DOWN and UP first, so a node serves a socket that UP bound.
    let mut c = Raw::connect(addrs[0]);
    assert_eq!(c.cmd_str(&["TUMBLER.NODE", "DOWN", "1"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["TUMBLER.NODE", "UP", "1"]), "+OK\r\n");
    assert_eq!(Raw::connect(addrs[1]).cmd_str(&["PING"]), "+PONG\r\n");
    drop(c);
    drop(s);
    for a in addrs {
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok() {
            assert!(
                Instant::now() < deadline,
                "{a} still accepts after the server stopped"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
