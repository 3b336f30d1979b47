//! A primary and its replicas in one process (`--replicas`): what clients see of a replica
//! against a real redis-server primary and replica, replication's atomicity under
//! concurrent writers, the faults (lag, behind, pause) on Tumbler's clock, and the failover
//! that loses a lock, with WAIT and fencing tokens as the protections.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tumbler_tests::{Raw, RedisServer, Tumbler};

fn s(r: &mut Raw, args: &[&str]) -> String {
    r.cmd_str(args)
}

/// The field names of an INFO section, in order.
fn fields(info: &str) -> Vec<String> {
    info.lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
        .filter(|k| !k.starts_with('$'))
        .collect()
}

/// A real primary with `n` replicas started with `--replicaof`, once they are in sync.
fn real_set(n: usize) -> Option<(RedisServer, Vec<RedisServer>)> {
    let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    real_set_of(&bin, n)
}

fn real_set_of(bin: &str, n: usize) -> Option<(RedisServer, Vec<RedisServer>)> {
    let primary = RedisServer::start_bin(bin, &["--repl-diskless-sync-delay", "0"])?;
    let port = primary.addr.port().to_string();
    let replicas: Vec<RedisServer> = (0..n)
        .map(|_| RedisServer::start_bin(bin, &["--replicaof", "127.0.0.1", &port]).unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut p = primary.raw();
    loop {
        let info = s(&mut p, &["INFO", "replication"]);
        let online = info.matches("state=online").count();
        let linked = replicas
            .iter()
            .all(|r| s(&mut r.raw(), &["INFO", "replication"]).contains("master_link_status:up"));
        if online == n && linked {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "real replicas did not sync: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((primary, replicas))
}

fn tumbler_set(reference: Option<&RedisServer>, replicas: usize) -> (Tumbler, Vec<SocketAddr>) {
    let n = replicas.to_string();
    let d = [
        ("replicas", n.as_str()),
        ("enable-test-control", "yes"),
        ("enable-time-control", "yes"),
    ];
    let t = match reference {
        Some(r) => Tumbler::like(r, &d),
        None => Tumbler::start_with(&d),
    };
    let addrs = t.addrs();
    assert_eq!(addrs.len(), replicas + 1);
    (t, addrs)
}

/// What a client sees of a primary and its replica, against redis-server 7.0.15: the
/// errors of writes, scripts and WAIT on a replica, ROLE, INFO replication's fields, WAIT's
/// counts and REPLICAOF's replies.
#[test]
fn a_replica_as_redis_shows_it() {
    let Some((rp, rr)) = real_set(1) else { return };
    let (_t, ta) = tumbler_set(Some(&rp), 1);
    let sides = [
        (rp.raw(), rr[0].raw(), rp.addr.port()),
        (Raw::connect(ta[0]), Raw::connect(ta[1]), ta[0].port()),
    ];
    let mut seen: Vec<Vec<String>> = Vec::new();
    for (mut p, mut r, pport) in sides {
        let mut out = Vec::new();
        out.push(s(&mut p, &["SET", "k", "v"]));
        out.push(s(&mut p, &["WAIT", "1", "0"]));
        // The write reached the replica before WAIT answered.
        out.push(s(&mut r, &["GET", "k"]));
        out.push(s(&mut r, &["SET", "k", "w"]));
        out.push(s(
            &mut r,
            &["EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "k"],
        ));
        out.push(s(
            &mut r,
            &["EVAL", "return redis.call('get', KEYS[1])", "1", "k"],
        ));
        out.push(s(&mut r, &["WAIT", "1", "0"]));
        out.push(s(&mut r, &["MULTI"]));
        out.push(s(&mut r, &["INCR", "n"]));
        out.push(s(&mut r, &["EXEC"]));
        out.push(s(&mut r, &["REPLICAOF", "127.0.0.1", &pport.to_string()]));
        out.push(s(&mut p, &["REPLICAOF", "NO", "ONE"]));
        // Two replicas asked for, one there: the count after the timeout.
        let t0 = Instant::now();
        out.push(s(&mut p, &["WAIT", "2", "150"]));
        assert!(t0.elapsed() >= Duration::from_millis(140));
        out.push(s(&mut p, &["WAIT", "-1", "0"]));
        out.push(s(&mut p, &["WAIT", "1", "-1"]));
        // ROLE: the shape, with the replica's port.
        let role = s(&mut p, &["ROLE"]);
        assert!(role.starts_with("*3\r\n$6\r\nmaster\r\n:"), "{role}");
        let rrole = s(&mut r, &["ROLE"]);
        assert!(
            rrole.starts_with(&format!(
                "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:{pport}\r\n$9\r\nconnected\r\n:"
            )),
            "{rrole}"
        );
        let pinfo = s(&mut p, &["INFO", "replication"]);
        assert!(pinfo.contains("connected_slaves:1\r\n"), "{pinfo}");
        let rinfo = s(&mut r, &["INFO", "replication"]);
        assert!(rinfo.contains("master_link_status:up\r\n"), "{rinfo}");
        out.push(fields(&pinfo).join(","));
        out.push(fields(&rinfo).join(","));
        seen.push(out);
    }
    assert_eq!(seen[0], seen[1]);
}

/// WAIT and WAITAOF as redis-server 8.0.2 answers them with appendonly off: a replica in
/// sync counts for WAIT, never for WAITAOF (no replica fsyncs an AOF).
#[test]
fn wait_and_waitaof_as_redis_8() {
    let Some((rp, rr)) = real_set_of("redis8-server", 1) else {
        return;
    };
    let (_t, ta) = tumbler_set(Some(&rp), 1);
    let sides = [
        (rp.raw(), rr[0].raw()),
        (Raw::connect(ta[0]), Raw::connect(ta[1])),
    ];
    let mut seen = Vec::new();
    for (mut p, mut r) in sides {
        let mut out = Vec::new();
        out.push(s(&mut p, &["SET", "a", "1"]));
        out.push(s(&mut p, &["WAIT", "1", "1000"]));
        let t0 = Instant::now();
        out.push(s(&mut p, &["WAITAOF", "0", "1", "200"]));
        assert!(t0.elapsed() >= Duration::from_millis(190));
        out.push(s(&mut p, &["WAITAOF", "0", "0", "0"]));
        out.push(s(&mut p, &["WAITAOF", "1", "0", "0"]));
        out.push(s(&mut r, &["WAITAOF", "0", "1", "0"]));
        out.push(s(&mut r, &["WAIT", "1", "0"]));
        seen.push(out);
    }
    assert_eq!(seen[0], seen[1]);
}

/// Concurrent writers on the primary, readers on the replicas: a transaction is applied
/// whole (readers never see half of one), counters end equal, and every replica ends with
/// the primary's data.
#[test]
fn replicas_apply_each_command_and_transaction_whole() {
    let (_t, a) = tumbler_set(None, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_millis(1500);
    let mut writers = Vec::new();
    for w in 0..3 {
        let addr = a[0];
        writers.push(std::thread::spawn(move || {
            let mut c = Raw::connect(addr);
            let mut i = 0u64;
            while Instant::now() < deadline && i < 20_000 {
                i += 1;
                let v = format!("{w}-{i}");
                c.send(&["MULTI"]);
                c.send(&["SET", "a", &v]);
                c.send(&["SET", "b", &v]);
                c.send(&["INCR", "n"]);
                c.send(&["EXEC"]);
                for _ in 0..5 {
                    c.read_reply();
                }
                assert_eq!(c.cmd_str(&["INCR", &format!("w{w}")]), format!(":{i}\r\n"));
            }
            i
        }));
    }
    let mut readers = Vec::new();
    for &addr in &a[1..] {
        let stop = stop.clone();
        readers.push(std::thread::spawn(move || {
            let mut c = Raw::connect(addr);
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                let r = c.cmd_str(&["MGET", "a", "b"]);
                let vals: Vec<&str> = r.lines().filter(|l| !l.starts_with(['*', '$'])).collect();
                if vals.len() == 2 {
                    assert_eq!(vals[0], vals[1], "a transaction seen half applied: {r}");
                }
                reads += 1;
            }
            reads
        }));
    }
    let writes: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    for h in readers {
        assert!(h.join().unwrap() > 0);
    }
    let mut p = Raw::connect(a[0]);
    assert_eq!(
        p.cmd_str(&["GET", "n"]),
        format!("${}\r\n{writes}\r\n", writes.to_string().len())
    );
    assert_eq!(p.cmd_str(&["WAIT", "2", "5000"]), ":2\r\n");
    let digest = p.cmd_str(&["DEBUG", "DIGEST"]);
    for &addr in &a[1..] {
        let mut r = Raw::connect(addr);
        assert_eq!(r.cmd_str(&["DEBUG", "DIGEST"]), digest);
        assert_eq!(r.cmd_str(&["DBSIZE"]), p.cmd_str(&["DBSIZE"]));
    }
}

/// LAG holds writes back for a time of Tumbler's clock, BEHIND by a number of writes,
/// PAUSE until RESUME; WAIT counts only the replicas that have the client's writes. TTLs,
/// hashes, flushes and keyspace events arrive as the primary made them.
#[test]
fn lag_behind_and_pause_on_tumblers_clock() {
    let (t, a) = tumbler_set(None, 2);
    let (mut p, mut r1, mut r2) = (Raw::connect(a[0]), Raw::connect(a[1]), Raw::connect(a[2]));
    // Events: a subscriber on a replica hears the primary's writes.
    s(&mut r1, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = Raw::connect(a[1]);
    s(&mut sub, &["SUBSCRIBE", "__keyevent@0__:hset"]);
    s(&mut p, &["TUMBLER.TIME", "FREEZE"]);
    assert_eq!(s(&mut p, &["TUMBLER.REPL", "LAG", "1", "5000"]), "+OK\r\n");
    assert_eq!(s(&mut p, &["HSET", "lock", "owner", "1"]), ":1\r\n");
    assert_eq!(s(&mut p, &["PEXPIRE", "lock", "30000"]), ":1\r\n");
    assert_eq!(s(&mut r2, &["HGET", "lock", "owner"]), "$1\r\n1\r\n");
    assert_eq!(s(&mut r1, &["EXISTS", "lock"]), ":0\r\n");
    let t0 = Instant::now();
    assert_eq!(s(&mut p, &["WAIT", "2", "100"]), ":1\r\n");
    assert!(t0.elapsed() >= Duration::from_millis(90));
    let line = s(&mut p, &["TUMBLER.REPL", "LIST"]);
    assert!(
        line.contains("node=1") && line.contains("pending=2") && line.contains("lag=5000"),
        "{line}"
    );
    t.time().advance(Duration::from_millis(4999));
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(s(&mut r1, &["EXISTS", "lock"]), ":0\r\n");
    t.time().advance(Duration::from_millis(1));
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(s(&mut r1, &["HGET", "lock", "owner"]), "$1\r\n1\r\n");
    assert_eq!(s(&mut r1, &["PTTL", "lock"]), s(&mut p, &["PTTL", "lock"]));
    assert!(sub.read_reply().ends_with(b"lock\r\n"));
    // BEHIND 2: the last two writes stay unapplied.
    s(&mut p, &["TUMBLER.REPL", "RESUME", "1"]);
    s(&mut p, &["TUMBLER.REPL", "BEHIND", "2", "2"]);
    for i in 0..5 {
        s(&mut p, &["SET", &format!("b{i}"), "x"]);
    }
    assert_eq!(
        s(&mut r2, &["EXISTS", "b0", "b1", "b2", "b3", "b4"]),
        ":3\r\n"
    );
    s(&mut p, &["FLUSHALL"]);
    // lock, b0..b3: b4 and the flush are the two held back.
    assert_eq!(s(&mut r2, &["DBSIZE"]), ":5\r\n");
    assert_eq!(s(&mut r1, &["DBSIZE"]), ":0\r\n");
    // PAUSE: nothing until RESUME, then everything.
    s(&mut p, &["TUMBLER.REPL", "PAUSE", "1"]);
    s(&mut p, &["SET", "c", "1"]);
    assert_eq!(s(&mut r1, &["EXISTS", "c"]), ":0\r\n");
    assert_eq!(s(&mut p, &["WAIT", "1", "50"]), ":0\r\n");
    s(&mut p, &["TUMBLER.REPL", "RESUME", "1"]);
    s(&mut p, &["TUMBLER.REPL", "RESUME", "2"]);
    assert_eq!(s(&mut p, &["WAIT", "2", "1000"]), ":2\r\n");
    assert_eq!(s(&mut r1, &["EXISTS", "c"]), ":1\r\n");
    assert_eq!(s(&mut r2, &["DBSIZE"]), ":1\r\n");
    assert_eq!(
        s(&mut p, &["TUMBLER.REPL", "LAG", "0", "10"]),
        "-ERR node 0 is not a replica\r\n"
    );
}

/// The lost lock (Kleppmann's case against Redlock on asynchronous replication): a client
/// takes a lock on the primary, the replicas have not received it, the primary dies and a
/// replica is promoted, and a second client takes the same lock. Then the same code with the
/// two protections: WAIT (the first client counts the lock as taken only once a replica
/// has it) and fencing tokens (the storage refuses the older holder's token).
#[test]
fn a_failover_loses_a_lock_unless_wait_or_fencing_protects_it() {
    const LOCK: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
    // Node 0 primary; nodes 1 and 2 replicas. `lagging`: both replicas have not received
    // the lock when the primary dies. Returns whether A believes it holds the lock and
    // whether B got it too.
    let run = |use_wait: bool| -> (bool, bool, String) {
        let (_t, a) = tumbler_set(None, 2);
        let mut ctl = Raw::connect(a[0]);
        let mut client_a = Raw::connect(a[0]);
        // A fencing token comes with the lock from the same primary.
        let token_a = s(&mut client_a, &["INCR", "lock:token"]);
        assert_eq!(s(&mut client_a, &["WAIT", "2", "1000"]), ":2\r\n");
        s(&mut ctl, &["TUMBLER.REPL", "PAUSE", "1"]);
        s(&mut ctl, &["TUMBLER.REPL", "PAUSE", "2"]);
        let got = s(&mut client_a, &["SET", "lock", "A", "NX", "PX", "30000"]) == "+OK\r\n";
        let token_a = token_a.trim_start_matches(':').trim().to_string();
        let a_holds = if use_wait {
            // The lock counts only once a replica acknowledged it; else give it back.
            let acked = s(&mut client_a, &["WAIT", "1", "100"]) != ":0\r\n";
            if !acked {
                s(&mut client_a, &["EVAL", LOCK, "1", "lock", "A"]);
            }
            got && acked
        } else {
            got
        };
        // The primary dies; replica 1 is promoted, replica 2 follows it (a sentinel's
        // failover, done by hand).
        s(&mut ctl, &["TUMBLER.NODE", "DOWN", "0"]);
        let mut n1 = Raw::connect(a[1]);
        assert_eq!(s(&mut n1, &["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
        let mut n2 = Raw::connect(a[2]);
        assert_eq!(
            s(
                &mut n2,
                &["REPLICAOF", "127.0.0.1", &a[1].port().to_string()]
            ),
            "+OK\r\n"
        );
        assert!(s(&mut n1, &["ROLE"]).starts_with("*3\r\n$6\r\nmaster"));
        let mut client_b = Raw::connect(a[1]);
        let b_got = s(&mut client_b, &["SET", "lock", "B", "NX", "PX", "30000"]) == "+OK\r\n";
        let token_b = s(&mut client_b, &["INCR", "lock:token"]);
        let token_b = token_b.trim_start_matches(':').trim().to_string();
        // The old primary comes back and is made a replica: its write is gone for good.
        s(&mut n1, &["TUMBLER.NODE", "UP", "0"]);
        let mut n0 = Raw::connect(a[0]);
        assert_eq!(
            s(
                &mut n0,
                &["REPLICAOF", "127.0.0.1", &a[1].port().to_string()]
            ),
            "+OK\r\n"
        );
        assert_eq!(
            s(&mut n0, &["GET", "lock"]),
            if b_got { "$1\r\nB\r\n" } else { "$-1\r\n" }
        );
        (a_holds, b_got, format!("{token_a} {token_b}"))
    };
    // Unprotected: both clients hold the lock.
    let (a_holds, b_got, tokens) = run(false);
    assert!(
        a_holds && b_got,
        "the lock was expected lost to the failover"
    );
    // Fencing tokens: A took its token before the lock and it reached the replicas (A
    // waited for it), so B's token from the promoted replica is the next one, and a storage
    // that remembers the highest token it has seen refuses A's late writes.
    let (ta, tb) = tokens.split_once(' ').unwrap();
    assert_eq!((ta, tb), ("1", "2"), "B's token must come after A's");
    // With WAIT, A knows its lock is not safe and does not use it: one holder.
    let (a_holds, b_got, _) = run(true);
    assert!(!a_holds && b_got);
}

/// A cluster of one primary (node 0) and its replica (node 1), with test control.
fn one_shard_cluster() -> (Tumbler, Vec<SocketAddr>) {
    let t = Tumbler::start_with(&[
        ("cluster-enabled", "yes"),
        ("nodes", "2"),
        ("cluster-replicas", "1"),
        ("enable-test-control", "yes"),
    ]);
    let a = t.addrs();
    (t, a)
}

/// In cluster mode each replica keeps its own copy too: after READONLY it serves what it
/// has applied (stale under LAG), and TUMBLER.CLUSTER FAILOVER of a replica that had not
/// received a lock loses it, as a real cluster's failover does.
#[test]
fn a_cluster_replica_lags_and_its_failover_loses_writes() {
    let (_t, a) = one_shard_cluster();
    let (mut p, mut r) = (Raw::connect(a[0]), Raw::connect(a[1]));
    assert_eq!(s(&mut p, &["SET", "k", "1"]), "+OK\r\n");
    assert_eq!(s(&mut r, &["READONLY"]), "+OK\r\n");
    assert_eq!(s(&mut r, &["GET", "k"]), "$1\r\n1\r\n");
    assert!(s(&mut r, &["SET", "k", "2"]).starts_with("-MOVED "));
    assert_eq!(s(&mut p, &["WAIT", "1", "1000"]), ":1\r\n");
    assert!(s(&mut r, &["INFO", "replication"]).contains("role:slave\r\n"));
    // The replica's link stalls; the lock reaches only the primary.
    assert_eq!(s(&mut p, &["TUMBLER.REPL", "PAUSE", "1"]), "+OK\r\n");
    assert_eq!(
        s(&mut p, &["SET", "lock", "A", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    assert_eq!(s(&mut r, &["GET", "lock"]), "$-1\r\n");
    assert_eq!(s(&mut p, &["WAIT", "1", "50"]), ":0\r\n");
    // The primary dies; the replica is promoted with what it had.
    assert_eq!(s(&mut p, &["TUMBLER.NODE", "DOWN", "0"]), "+OK\r\n");
    let mut ctl = Raw::connect(a[1]);
    assert_eq!(
        s(&mut ctl, &["TUMBLER.CLUSTER", "FAILOVER", "1"]),
        "+OK\r\n"
    );
    let mut b = Raw::connect(a[1]);
    assert_eq!(
        s(&mut b, &["SET", "lock", "B", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    // The old primary returns as a replica of the new one, without A's lock.
    assert_eq!(s(&mut ctl, &["TUMBLER.NODE", "UP", "0"]), "+OK\r\n");
    let mut old = Raw::connect(a[0]);
    assert_eq!(s(&mut old, &["READONLY"]), "+OK\r\n");
    assert_eq!(s(&mut old, &["GET", "lock"]), "$1\r\nB\r\n");
    assert!(s(&mut old, &["ROLE"]).starts_with("*5\r\n$5\r\nslave\r\n"));
}

/// CLUSTER FAILOVER sent to a replica, as Redis 7.0 takes it: the default one lets the
/// replica catch up first (nothing is lost, even from a stalled link) and refuses while the
/// primary is down; TAKEOVER promotes it with what it has.
#[test]
fn cluster_failover_catches_up_unless_forced() {
    let (_t, a) = one_shard_cluster();
    let (mut n0, mut n1) = (Raw::connect(a[0]), Raw::connect(a[1]));
    assert_eq!(
        s(&mut n0, &["CLUSTER", "FAILOVER"]),
        "-ERR You should send CLUSTER FAILOVER to a replica\r\n"
    );
    s(&mut n0, &["TUMBLER.REPL", "PAUSE", "1"]);
    s(&mut n0, &["SET", "k", "1"]);
    assert_eq!(s(&mut n1, &["CLUSTER", "FAILOVER"]), "+OK\r\n");
    assert_eq!(s(&mut n1, &["GET", "k"]), "$1\r\n1\r\n");
    assert!(s(&mut n1, &["ROLE"]).starts_with("*3\r\n$6\r\nmaster"));
    // Now node 0 replicates node 1; stall it, write, and take over with TAKEOVER.
    let mut n0 = Raw::connect(a[0]);
    s(&mut n1, &["TUMBLER.REPL", "PAUSE", "0"]);
    s(&mut n1, &["SET", "k", "2"]);
    assert_eq!(
        s(&mut n0, &["CLUSTER", "FAILOVER", "BOGUS"]),
        "-ERR syntax error\r\n"
    );
    s(&mut n1, &["TUMBLER.NODE", "DOWN", "1"]);
    assert_eq!(
        s(&mut n0, &["CLUSTER", "FAILOVER"]),
        "-ERR Master is down or failed, please use CLUSTER FAILOVER FORCE\r\n"
    );
    assert_eq!(s(&mut n0, &["CLUSTER", "FAILOVER", "TAKEOVER"]), "+OK\r\n");
    assert_eq!(s(&mut n0, &["GET", "k"]), "$1\r\n1\r\n");
}

/// A replica that falls more than 100,000 entries behind is dropped and, once its link is
/// resumed, given a full copy (as Redis drops a replica past its output buffer limit).
#[test]
fn a_replica_far_behind_gets_a_full_copy() {
    let (_t, a) = tumbler_set(None, 1);
    let (mut p, mut r) = (Raw::connect(a[0]), Raw::connect(a[1]));
    s(&mut p, &["TUMBLER.REPL", "PAUSE", "1"]);
    let n = 100_500;
    let mut batch = Vec::new();
    for i in 0..n {
        let k = format!("k{i}");
        batch.extend_from_slice(
            format!("*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n$1\r\nv\r\n", k.len()).as_bytes(),
        );
    }
    p.send_bytes(&batch);
    for _ in 0..n {
        p.read_reply();
    }
    assert_eq!(s(&mut r, &["DBSIZE"]), ":0\r\n");
    let list = s(&mut p, &["TUMBLER.REPL", "LIST"]);
    assert!(
        list.contains("pending=") && !list.contains(&format!("pending={n}")),
        "{list}"
    );
    s(&mut p, &["TUMBLER.REPL", "RESUME", "1"]);
    assert_eq!(s(&mut p, &["WAIT", "1", "5000"]), ":1\r\n");
    assert_eq!(s(&mut r, &["DBSIZE"]), format!(":{n}\r\n"));
}
