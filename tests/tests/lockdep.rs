//! The lock-order checker (docs/lockdep.md) end to end over TCP: Redisson's lock scripts as
//! Redisson sends them (SCRIPT LOAD + EVALSHA), native locks, read-write locks and
//! `SET NX PX` locks; inversions without a deadlock, live deadlocks, strict mode, and the
//! config, INFO and RESET interfaces.

use serde_json::Value;
use std::time::{Duration, Instant};
use tumbler_tests::{Raw, Tumbler};

// Redisson's RLock acquire and release scripts (RedissonLock.tryLockInnerAsync and
// unlockInnerAsync), byte for byte: the copies `tumbler bench` sends (server/src/tools/bench/workloads.rs).
const LOCK: &str = tumbler::tools::bench::workloads::REDISSON_LOCK;
const UNLOCK: &str = tumbler::tools::bench::workloads::REDISSON_UNLOCK;
// Redisson's RReadWriteLock read and write acquire scripts (RedissonReadLock and
// RedissonWriteLock.tryLockInnerAsync).
const READ_LOCK: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('hset', KEYS[1], 'mode', 'read'); redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('set', KEYS[2] .. ':1', 1); redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); local key = KEYS[2] .. ':' .. ind;redis.call('set', key, 1); redis.call('pexpire', key, ARGV[1]); local remainTime = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); return nil; end;return redis.call('pttl', KEYS[1]);";
const WRITE_LOCK: &str = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('hset', KEYS[1], 'mode', 'write'); redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'write') then if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); local currentExpire = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); return nil; end; end;return redis.call('pttl', KEYS[1]);";

const U1: &str = "5f0c1a8e-7b7d-4f0e-9a39-3c2b8e1d0a11";
const U2: &str = "9b2e4c6d-1a3f-4e5b-8c7d-0e1f2a3b4c5d";

/// A Redisson client: its connection, its UUID and the loaded script SHAs.
struct Redisson {
    c: Raw,
    uuid: &'static str,
    lock: String,
    unlock: String,
}

fn bulk(reply: &[u8]) -> String {
    let s = String::from_utf8_lossy(reply);
    s.split("\r\n").nth(1).unwrap_or_default().to_string()
}

impl Redisson {
    fn new(t: &Tumbler, uuid: &'static str) -> Redisson {
        let mut c = t.raw();
        let lock = bulk(&c.cmd(&["SCRIPT", "LOAD", LOCK]));
        let unlock = bulk(&c.cmd(&["SCRIPT", "LOAD", UNLOCK]));
        Redisson {
            c,
            uuid,
            lock,
            unlock,
        }
    }
    fn owner(&self, thread: u32) -> String {
        format!("{}:{thread}", self.uuid)
    }
    /// `lock()`'s script: nil when acquired, the lock's PTTL when another owner holds it.
    fn lock(&mut self, thread: u32, name: &str) -> String {
        let owner = self.owner(thread);
        let sha = self.lock.clone();
        self.c
            .cmd_str(&["EVALSHA", &sha, "1", name, "30000", &owner])
    }
    fn unlock(&mut self, thread: u32, name: &str) -> String {
        let owner = self.owner(thread);
        let sha = self.unlock.clone();
        let channel = format!("redisson_lock__channel:{{{name}}}");
        self.c
            .cmd_str(&["EVALSHA", &sha, "2", name, &channel, "0", "30000", &owner])
    }
}

fn report(c: &mut Raw) -> Value {
    let r = c.cmd(&["TUMBLER.LOCKDEP", "REPORT"]);
    let s = String::from_utf8_lossy(&r);
    assert!(s.starts_with('$'), "{s}");
    serde_json::from_str(&bulk(&r)).unwrap_or_else(|e| panic!("{e}: {s}"))
}

fn cycle_set(entry: &Value) -> Vec<String> {
    let mut v: Vec<String> = entry["cycle"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

fn owners(entry: &Value) -> Vec<String> {
    let mut v: Vec<String> = entry["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["owner"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

fn on(mode: &str) -> Tumbler {
    Tumbler::start_with(&[("lockdep", mode)])
}

fn info_field(c: &mut Raw, name: &str) -> String {
    let s = c.cmd_str(&["INFO", "lockdep"]);
    s.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("{name} missing from {s}"))
        .to_string()
}

#[test]
fn redisson_locks_taken_in_opposite_orders_are_one_inversion_though_nothing_deadlocked() {
    let t = on("yes");
    let mut r1 = Redisson::new(&t, U1);
    let mut r2 = Redisson::new(&t, U2);
    // Owner 1 takes order:{1} then stock:{7}, and releases both.
    assert_eq!(r1.lock(1, "order:{1}"), "$-1\r\n");
    assert_eq!(r1.lock(1, "stock:{7}"), "$-1\r\n");
    assert_eq!(r1.unlock(1, "stock:{7}"), ":1\r\n");
    assert_eq!(r1.unlock(1, "order:{1}"), ":1\r\n");
    assert_eq!(report(&mut r1.c)["inversions"], serde_json::json!([]));
    // Later owner 2 takes other locks of the same classes, in the opposite order.
    assert_eq!(r2.lock(5, "stock:{8}"), "$-1\r\n");
    assert_eq!(r2.lock(5, "order:{2}"), "$-1\r\n");
    r2.unlock(5, "order:{2}");
    r2.unlock(5, "stock:{8}");

    let rep = report(&mut r1.c);
    let inv = rep["inversions"].as_array().unwrap();
    assert_eq!(inv.len(), 1, "{rep}");
    assert_eq!(cycle_set(&inv[0]), ["order:{*}", "stock:{*}"]);
    assert_eq!(owners(&inv[0]), [r1.owner(1), r2.owner(5)]);
    for e in inv[0]["edges"].as_array().unwrap() {
        assert_eq!(e["command"], format!("script {}", r1.lock), "{e}");
        assert!(e["time"].as_i64().unwrap() > 0);
    }
    let e0 = &inv[0]["edges"][0];
    assert_eq!(
        (e0["held"].as_str(), e0["lock"].as_str()),
        (Some("stock:{8}"), Some("order:{2}"))
    );
    assert_eq!(rep["deadlocks"], serde_json::json!([]));
    assert_eq!(info_field(&mut r1.c, "lockdep_inversions"), "1");
    assert_eq!(info_field(&mut r1.c, "lockdep_classes"), "2");
    // Taking them in the opposite order again adds nothing new.
    r2.lock(6, "stock:{9}");
    r2.lock(6, "order:{9}");
    assert_eq!(report(&mut r1.c)["inversions"].as_array().unwrap().len(), 1);
    // RESET forgets everything.
    assert_eq!(r1.c.cmd_str(&["TUMBLER.LOCKDEP", "RESET"]), "+OK\r\n");
    assert_eq!(report(&mut r1.c)["inversions"], serde_json::json!([]));
    assert_eq!(info_field(&mut r1.c, "lockdep_edges"), "0");
}

#[test]
fn reentry_and_sequential_use_report_nothing() {
    let t = on("yes");
    let mut r1 = Redisson::new(&t, U1);
    let mut r2 = Redisson::new(&t, U2);
    // Owner 1 nests A -> B, then re-enters A while holding B: reentry is not an acquisition.
    r1.lock(1, "acct:{1}");
    r1.lock(1, "ledger:{1}");
    assert_eq!(r1.lock(1, "acct:{1}"), "$-1\r\n");
    assert_eq!(r1.unlock(1, "acct:{1}"), ":0\r\n");
    r1.unlock(1, "acct:{1}");
    r1.unlock(1, "ledger:{1}");
    // Owner 2 takes ledger then acct, but releases one before taking the other.
    r2.lock(2, "ledger:{2}");
    r2.unlock(2, "ledger:{2}");
    r2.lock(2, "acct:{2}");
    r2.unlock(2, "acct:{2}");
    // The same owner, sequentially, in the other order.
    r1.lock(3, "ledger:{3}");
    r1.unlock(3, "ledger:{3}");
    r1.lock(3, "acct:{3}");
    r1.unlock(3, "acct:{3}");
    // SET NX locks released with a compare-and-delete before the next one.
    let mut c = t.raw();
    let cad = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    for k in ["ledger:9", "acct:9", "ledger:9"] {
        assert_eq!(
            c.cmd_str(&["SET", k, "tok", "NX", "PX", "30000"]),
            "+OK\r\n"
        );
        assert_eq!(c.cmd_str(&["EVAL", cad, "1", k, "tok"]), ":1\r\n");
    }
    let rep = report(&mut c);
    assert_eq!(rep["inversions"], serde_json::json!([]), "{rep}");
    assert_eq!(rep["deadlocks"], serde_json::json!([]), "{rep}");
    assert_eq!(info_field(&mut c, "lockdep_edges"), "1");
}

#[test]
fn native_locks_in_opposite_orders_are_an_inversion() {
    let t = on("yes");
    let mut c = t.raw();
    for (owner, first, second) in [("w1", "inv:{1}", "pay:{1}"), ("w2", "pay:{2}", "inv:{2}")] {
        assert!(c
            .cmd_str(&["LOCK.ACQUIRE", first, owner, "30000"])
            .starts_with(':'));
        assert!(c
            .cmd_str(&["LOCK.ACQUIRE", second, owner, "30000"])
            .starts_with(':'));
        // Reentry while holding the second: nothing.
        assert!(c
            .cmd_str(&["LOCK.ACQUIRE", first, owner, "30000"])
            .starts_with(':'));
        for k in [second, first, first] {
            c.cmd(&["LOCK.RELEASE", k, owner]);
        }
    }
    let rep = report(&mut c);
    let inv = rep["inversions"].as_array().unwrap();
    assert_eq!(inv.len(), 1, "{rep}");
    assert_eq!(cycle_set(&inv[0]), ["inv:{*}", "pay:{*}"]);
    assert_eq!(owners(&inv[0]), ["w1", "w2"]);
    assert_eq!(inv[0]["edges"][0]["command"], "lock.acquire");
}

#[test]
fn read_write_locks_read_then_write_in_opposite_orders_are_an_inversion() {
    let t = on("yes");
    let mut c = t.raw();
    // Native RW locks: w1 reads cfg then writes data; w2 reads data then writes cfg.
    for (owner, read, write) in [("w1", "cfg:1", "data:1"), ("w2", "data:2", "cfg:2")] {
        assert!(c
            .cmd_str(&["RW.RLOCK", read, owner, "30000"])
            .starts_with(':'));
        assert!(c
            .cmd_str(&["RW.WLOCK", write, owner, "30000"])
            .starts_with(':'));
        c.cmd(&["RW.WUNLOCK", write, owner]);
        c.cmd(&["RW.RUNLOCK", read, owner]);
    }
    // Redisson RReadWriteLock: the same with the read and write lock scripts.
    let rl = bulk(&c.cmd(&["SCRIPT", "LOAD", READ_LOCK]));
    let wl = bulk(&c.cmd(&["SCRIPT", "LOAD", WRITE_LOCK]));
    let mut rw = |sha: &str, name: &str, uuid: &str, write: bool| {
        let owner = format!("{uuid}:1");
        let timeout = format!("{{{name}}}:{owner}:rwlock_timeout");
        let r = if write {
            c.cmd_str(&[
                "EVALSHA",
                sha,
                "1",
                name,
                "30000",
                &format!("{owner}:write"),
            ])
        } else {
            c.cmd_str(&[
                "EVALSHA",
                sha,
                "2",
                name,
                &timeout,
                "30000",
                &owner,
                &format!("{owner}:write"),
            ])
        };
        assert_eq!(r, "$-1\r\n", "{name}");
    };
    rw(&rl, "users:{1}", U1, false);
    rw(&wl, "groups:{1}", U1, true);
    rw(&rl, "groups:{2}", U2, false);
    rw(&wl, "users:{2}", U2, true);
    let rep = report(&mut c);
    let inv = rep["inversions"].as_array().unwrap();
    assert_eq!(inv.len(), 2, "{rep}");
    assert_eq!(cycle_set(&inv[0]), ["cfg:*", "data:*"]);
    assert_eq!(owners(&inv[0]), ["w1", "w2"]);
    assert_eq!(cycle_set(&inv[1]), ["groups:{*}", "users:{*}"]);
    assert_eq!(owners(&inv[1]), [format!("{U1}:1"), format!("{U2}:1")]);
}

#[test]
fn set_nx_locks_on_two_connections_are_an_inversion() {
    let t = on("yes");
    let mut c1 = t.raw();
    let mut c2 = t.raw();
    let id1 = c1.cmd_str(&["CLIENT", "ID"]);
    let id1 = id1.trim_start_matches(':').trim();
    assert_eq!(c2.cmd_str(&["CLIENT", "SETNAME", "worker-2"]), "+OK\r\n");
    let cad = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    for (c, first, second) in [(&mut c1, "job:1", "queue:1"), (&mut c2, "queue:2", "job:2")] {
        assert_eq!(
            c.cmd_str(&["SET", first, "t", "NX", "PX", "30000"]),
            "+OK\r\n"
        );
        assert_eq!(
            c.cmd_str(&["SET", second, "t", "NX", "PX", "30000"]),
            "+OK\r\n"
        );
        c.cmd(&["EVAL", cad, "1", second, "t"]);
        c.cmd(&["EVAL", cad, "1", first, "t"]);
    }
    let rep = report(&mut c1);
    let inv = rep["inversions"].as_array().unwrap();
    assert_eq!(inv.len(), 1, "{rep}");
    assert_eq!(cycle_set(&inv[0]), ["job:*", "queue:*"]);
    assert_eq!(
        owners(&inv[0]),
        [format!("client:{id1}"), "worker-2".to_string()]
    );
    assert_eq!(inv[0]["edges"][0]["command"], "set");
}

/// Reads the next pub/sub message's payload, waiting at most `limit`.
fn next_message(sub: &mut Raw, limit: Duration) -> Value {
    sub_timeout(sub, limit);
    let r = String::from_utf8_lossy(&sub.read_reply()).into_owned();
    let payload = r.split("\r\n").nth(6).unwrap_or_default().to_string();
    serde_json::from_str(&payload).unwrap_or_else(|e| panic!("{e}: {r}"))
}

fn sub_timeout(sub: &mut Raw, limit: Duration) {
    sub.stream.set_read_timeout(Some(limit)).unwrap();
}

#[test]
fn a_true_deadlock_is_published_at_once() {
    let t = on("yes");
    let mut sub = t.raw();
    sub.cmd(&["SUBSCRIBE", "__tumbler__:lockdep"]);
    let mut r1 = Redisson::new(&t, U1);
    let mut r2 = Redisson::new(&t, U2);
    r1.lock(1, "a:{1}");
    r2.lock(1, "b:{1}");
    // Owner 1 waits for b:{1}: the acquire script answers the lock's TTL.
    assert!(r1.lock(1, "b:{1}").starts_with(':'));
    // Owner 2 now waits for a:{1}: that wait closes the cycle. Neither owner ever held both
    // locks, so there is no order edge and no inversion, only the deadlock.
    let started = Instant::now();
    assert!(r2.lock(1, "a:{1}").starts_with(':'));
    let limit = Duration::from_secs(10);
    let deadlock = next_message(&mut sub, limit);
    let waited = started.elapsed();
    assert_eq!(cycle_set(&deadlock), ["a:{1}", "b:{1}"], "{deadlock}");
    assert_eq!(owners(&deadlock), [r1.owner(1), r2.owner(1)]);
    let rep = report(&mut r1.c);
    assert_eq!(rep["deadlocks"].as_array().unwrap().len(), 1, "{rep}");
    // Retries of the same deadlock are not reported again.
    r1.lock(1, "b:{1}");
    assert_eq!(report(&mut r1.c)["deadlocks"].as_array().unwrap().len(), 1);
    println!("deadlock published {waited:?} after the closing attempt");

    // Native waiters queue: the same with LOCK.ACQUIRE ... WAIT.
    let mut n1 = t.raw();
    let mut n2 = t.raw();
    n1.cmd(&["LOCK.ACQUIRE", "x:1", "n1", "30000"]);
    n2.cmd(&["LOCK.ACQUIRE", "y:1", "n2", "30000"]);
    n1.send(&["LOCK.ACQUIRE", "y:1", "n1", "30000", "WAIT", "20000"]);
    n2.send(&["LOCK.ACQUIRE", "x:1", "n2", "30000", "WAIT", "20000"]);
    let mut found = None;
    for _ in 0..4 {
        let m = next_message(&mut sub, limit);
        if m["cycle"].as_array().unwrap().iter().any(|c| c == "x:1")
            && m["edges"][0].get("holds").is_some()
        {
            found = Some(m);
            break;
        }
    }
    let m = found.expect("native deadlock published");
    assert_eq!(cycle_set(&m), ["x:1", "y:1"]);
    assert_eq!(owners(&m), ["n1", "n2"]);
    // SET NX locks: each connection retries the key the other holds.
    let mut s1 = t.raw();
    let mut s2 = t.raw();
    s2.cmd(&["CLIENT", "SETNAME", "spin-2"]);
    assert_eq!(
        s1.cmd_str(&["SET", "p:1", "t1", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    assert_eq!(
        s2.cmd_str(&["SET", "q:1", "t2", "NX", "PX", "30000"]),
        "+OK\r\n"
    );
    assert_eq!(
        s1.cmd_str(&["SET", "q:1", "t1", "NX", "PX", "30000"]),
        "$-1\r\n"
    );
    assert_eq!(
        s2.cmd_str(&["SET", "p:1", "t2", "NX", "PX", "30000"]),
        "$-1\r\n"
    );
    let mut found = None;
    for _ in 0..4 {
        let m = next_message(&mut sub, limit);
        if m["cycle"].as_array().unwrap().iter().any(|c| c == "p:1") {
            found = Some(m);
            break;
        }
    }
    let m = found.expect("SET NX deadlock published");
    assert_eq!(cycle_set(&m), ["p:1", "q:1"]);
    assert!(owners(&m).contains(&"spin-2".to_string()), "{m}");

    // Break it: n1 gives up its lock, so n2 is granted.
    let mut c = t.raw();
    c.cmd(&["LOCK.RELEASE", "x:1", "n1"]);
    sub_timeout(&mut n2, limit);
    assert!(String::from_utf8_lossy(&n2.read_reply()).starts_with(':'));
}

#[test]
fn strict_mode_refuses_the_acquisition_that_closes_a_cycle() {
    let t = on("strict");
    let mut r1 = Redisson::new(&t, U1);
    let mut r2 = Redisson::new(&t, U2);
    r1.lock(1, "order:{1}");
    r1.lock(1, "stock:{1}");
    r1.unlock(1, "stock:{1}");
    r1.unlock(1, "order:{1}");
    r2.lock(1, "stock:{2}");
    let err = r2.lock(1, "order:{2}");
    assert!(
        err.starts_with("-LOCKDEP lock order inversion stock:{*} -> order:{*} -> stock:{*}"),
        "{err}"
    );
    assert!(err.contains(&r2.lock), "names the script: {err}");
    // Refused before it changed anything.
    assert_eq!(r2.c.cmd_str(&["EXISTS", "order:{2}"]), ":0\r\n");
    // Native and SET NX acquisitions are refused the same way.
    let mut c = t.raw();
    c.cmd(&["LOCK.ACQUIRE", "p:1", "w1", "30000"]);
    c.cmd(&["LOCK.ACQUIRE", "q:1", "w1", "30000"]);
    c.cmd(&["LOCK.ACQUIRE", "q:2", "w2", "30000"]);
    let e = c.cmd_str(&["LOCK.ACQUIRE", "p:2", "w2", "30000"]);
    assert!(
        e.starts_with("-LOCKDEP lock order inversion q:* -> p:* -> q:*"),
        "{e}"
    );
    assert_eq!(c.cmd_str(&["EXISTS", "p:2"]), ":0\r\n");
    c.cmd(&["SET", "s:1", "t", "NX", "PX", "30000"]);
    c.cmd(&["SET", "r:1", "t", "NX", "PX", "30000"]);
    let mut c2 = t.raw();
    c2.cmd(&["SET", "r:2", "t", "NX", "PX", "30000"]);
    let e = c2.cmd_str(&["SET", "s:2", "t", "NX", "PX", "30000"]);
    assert!(e.starts_with("-LOCKDEP lock order inversion"), "{e}");
    assert_eq!(c2.cmd_str(&["EXISTS", "s:2"]), ":0\r\n");
    // Redisson's read lock sets `mode` before the holder: nothing is left behind either.
    let rl = bulk(&c.cmd(&["SCRIPT", "LOAD", READ_LOCK]));
    let read = |c: &mut Raw, name: &str, uuid: &str| {
        let owner = format!("{uuid}:3");
        let timeout = format!("{{{name}}}:{owner}:rwlock_timeout");
        c.cmd_str(&[
            "EVALSHA",
            &rl,
            "2",
            name,
            &timeout,
            "30000",
            &owner,
            &format!("{owner}:write"),
        ])
    };
    assert_eq!(read(&mut c, "m:{1}", U1), "$-1\r\n");
    assert_eq!(read(&mut c, "n:{1}", U1), "$-1\r\n");
    assert_eq!(read(&mut c, "n:{2}", U2), "$-1\r\n");
    assert!(read(&mut c, "m:{2}", U2).starts_with("-LOCKDEP"));
    assert_eq!(c.cmd_str(&["EXISTS", "m:{2}"]), ":0\r\n");
    let rep = report(&mut c);
    assert_eq!(rep["mode"], "strict");
    assert_eq!(rep["inversions"].as_array().unwrap().len(), 4, "{rep}");
    assert_eq!(info_field(&mut c, "lockdep_refused"), "4");
}

#[test]
fn config_turns_it_on_and_off() {
    let t = Tumbler::start();
    let mut c = t.raw();
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "lockdep"]),
        "*2\r\n$7\r\nlockdep\r\n$2\r\nno\r\n"
    );
    assert_eq!(info_field(&mut c, "lockdep_mode"), "no");
    // Off: nothing is tracked and REPORT says so.
    c.cmd(&["LOCK.ACQUIRE", "a:1", "w", "30000"]);
    c.cmd(&["LOCK.ACQUIRE", "b:1", "w", "30000"]);
    assert_eq!(report(&mut c)["mode"], "no");
    assert_eq!(c.cmd_str(&["CONFIG", "SET", "lockdep", "yes"]), "+OK\r\n");
    assert_eq!(info_field(&mut c, "lockdep_mode"), "yes");
    assert!(c
        .cmd_str(&["CONFIG", "SET", "lockdep", "maybe"])
        .starts_with("-ERR"));
    // Classes: with no rules every name is its own class.
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "lockdep-classes", ""]),
        "+OK\r\n"
    );
    assert!(c
        .cmd_str(&["CONFIG", "SET", "lockdep-classes", "x"])
        .starts_with("-ERR"));
    c.cmd(&["LOCK.ACQUIRE", "c:1", "v", "30000"]);
    c.cmd(&["LOCK.ACQUIRE", "d:1", "v", "30000"]);
    c.cmd(&["LOCK.RELEASE", "d:1", "v"]);
    c.cmd(&["LOCK.RELEASE", "c:1", "v"]);
    c.cmd(&["LOCK.ACQUIRE", "d:2", "v", "30000"]);
    c.cmd(&["LOCK.ACQUIRE", "c:2", "v", "30000"]);
    assert_eq!(report(&mut c)["inversions"], serde_json::json!([]));
    c.cmd(&["LOCK.RELEASE", "c:2", "v"]);
    c.cmd(&["LOCK.ACQUIRE", "c:1", "v", "30000"]);
    // d:2 -> c:1 closes nothing (c:1 -> d:1 is another class); d:1 would.
    c.cmd(&["LOCK.RELEASE", "c:1", "v"]);
    c.cmd(&["LOCK.RELEASE", "d:2", "v"]);
    c.cmd(&["LOCK.ACQUIRE", "d:1", "v", "30000"]);
    c.cmd(&["LOCK.ACQUIRE", "c:1", "v", "30000"]);
    let rep = report(&mut c);
    assert_eq!(cycle_set(&rep["inversions"][0]), ["c:1", "d:1"], "{rep}");
    assert_eq!(c.cmd_str(&["CONFIG", "SET", "lockdep", "no"]), "+OK\r\n");
    assert_eq!(report(&mut c)["inversions"], serde_json::json!([]));
}
