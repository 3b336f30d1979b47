//! TUMBLER.SNAPSHOT and TUMBLER.STATE (docs/snapshots.md): a restore makes the selected
//! database exactly what was saved, whatever ran in between, through both of its paths
//! (the keys changed since the baseline, or the whole snapshot copied in); it leaves the
//! other databases alone; WATCH, blocked clients, native-lock leases and fencing tokens
//! behave as documented; and it is atomic for concurrent clients.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tumbler_tests::bulk_payload as bulk_bytes;
use tumbler_tests::{Raw, Tumbler};

fn ok(r: &mut Raw, args: &[&str]) {
    assert_eq!(r.cmd_str(args), "+OK\r\n", "{args:?}");
}

/// The bulk strings of a flat array reply (nil elements as empty).
fn strings(reply: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(reply);
    let mut lines = s.split("\r\n");
    let head = lines.next().unwrap();
    assert!(head.starts_with('*'), "not an array: {s}");
    let mut out = Vec::new();
    while let Some(l) = lines.next() {
        if l == "$-1" {
            out.push(String::new());
        } else if l.starts_with('$') {
            out.push(lines.next().unwrap().to_string());
        }
    }
    out
}

fn bulk(reply: &[u8]) -> String {
    String::from_utf8_lossy(&bulk_bytes(reply)).into_owned()
}

/// What the selected db holds, as text that is equal for equal dbs: each key with its
/// type, value digest and absolute expiry.
fn fingerprint(r: &mut Raw) -> Vec<String> {
    let mut keys = strings(&r.cmd(&["KEYS", "*"]));
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let t = r.cmd_str(&["TYPE", &k]);
            let d = r.cmd_str(&["DEBUG", "DIGEST-VALUE", &k]);
            let x = r.cmd_str(&["PEXPIRETIME", &k]);
            format!("{k} {} {} {}", t.trim(), d.trim(), x.trim())
        })
        .collect()
}

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One random write on a small set of keys, of every type, including the commands that
/// move keys between dbs and the ones that create, rename or drop TTLs.
fn random_write(r: &mut Raw, rng: &mut Rng) {
    let k = format!("k{}", rng.below(40));
    let k2 = format!("k{}", rng.below(40));
    let n = rng.below(1000).to_string();
    let args: Vec<String> = match rng.below(22) {
        0 => vec!["SET".into(), k, n],
        1 => vec!["DEL".into(), k],
        2 => vec!["INCR".into(), k],
        3 => vec!["APPEND".into(), k, "xyz".into()],
        4 => vec!["RPUSH".into(), k, n.clone(), n],
        5 => vec!["LPOP".into(), k],
        6 => vec!["HSET".into(), k, format!("f{n}"), n],
        7 => vec!["HDEL".into(), k, format!("f{n}")],
        8 => vec!["SADD".into(), k, n, "m".into()],
        9 => vec!["SREM".into(), k, "m".into()],
        10 => vec!["ZADD".into(), k, n.clone(), format!("m{n}")],
        11 => vec!["ZPOPMIN".into(), k],
        12 => vec!["PEXPIRE".into(), k, "500000".into()],
        13 => vec!["PERSIST".into(), k],
        14 => vec!["RENAME".into(), k, k2],
        15 => vec!["COPY".into(), k, k2, "REPLACE".into()],
        16 => vec!["MOVE".into(), k, "1".into()],
        17 => vec!["XADD".into(), k, "*".into(), "f".into(), n],
        18 => vec!["PFADD".into(), k, n],
        19 => vec!["SETRANGE".into(), k, "2".into(), "ab".into()],
        20 => vec![
            "LOCK.ACQUIRE".into(),
            format!("lk{}", rng.below(3)),
            n,
            "400000".into(),
        ],
        _ => vec![
            "SET".into(),
            k,
            "big".repeat(40),
            "PX".into(),
            "600000".into(),
        ],
    };
    // Wrong types and missing keys answer errors: part of the mix, not a failure.
    r.cmd(&args);
}

fn seed(r: &mut Raw, rng: &mut Rng) {
    for _ in 0..300 {
        random_write(r, rng);
    }
}

#[test]
fn restore_puts_back_exactly_what_was_saved() {
    let t = Tumbler::start();
    let mut r = t.raw();
    let mut rng = Rng(0x5eed_1234_abcd);
    seed(&mut r, &mut rng);
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "base"]);
    let saved = fingerprint(&mut r);
    assert!(saved.len() > 20, "{saved:?}");
    for round in 0..40 {
        let writes = 1 + rng.below(if round % 5 == 0 { 400 } else { 30 });
        for _ in 0..writes {
            random_write(&mut r, &mut rng);
        }
        match round % 10 {
            // The whole-copy paths: after FLUSHDB, and after SWAPDB there and back.
            3 => ok(&mut r, &["FLUSHDB"]),
            7 => {
                ok(&mut r, &["SWAPDB", "0", "1"]);
                ok(&mut r, &["SWAPDB", "1", "0"]);
            }
            _ => {}
        }
        ok(&mut r, &["TUMBLER.SNAPSHOT", "RESTORE", "base"]);
        assert_eq!(fingerprint(&mut r), saved, "round {round}");
    }
}

#[test]
fn other_databases_are_left_alone_and_a_snapshot_restores_into_any_db() {
    let t = Tumbler::start();
    let mut r = t.raw();
    ok(&mut r, &["SELECT", "1"]);
    ok(&mut r, &["SET", "other", "db1"]);
    ok(&mut r, &["SELECT", "0"]);
    ok(&mut r, &["SET", "a", "1"]);
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "s"]);
    ok(&mut r, &["SET", "a", "2"]);
    ok(&mut r, &["SELECT", "1"]);
    ok(&mut r, &["SET", "other", "changed"]);
    ok(&mut r, &["SELECT", "0"]);
    ok(&mut r, &["TUMBLER.SNAPSHOT", "RESTORE", "s"]);
    assert_eq!(r.cmd_str(&["GET", "a"]), "$1\r\n1\r\n");
    ok(&mut r, &["SELECT", "1"]);
    assert_eq!(r.cmd_str(&["GET", "other"]), "$7\r\nchanged\r\n");
    // Restoring into db 1 replaces db 1 with what db 0 held.
    ok(&mut r, &["TUMBLER.SNAPSHOT", "RESTORE", "s"]);
    assert_eq!(r.cmd_str(&["KEYS", "*"]), "*1\r\n$1\r\na\r\n");
    ok(&mut r, &["SELECT", "0"]);
    assert_eq!(r.cmd_str(&["GET", "a"]), "$1\r\n1\r\n");
}

#[test]
fn list_drop_replace_and_errors() {
    let t = Tumbler::start();
    let mut r = t.raw();
    assert_eq!(r.cmd_str(&["TUMBLER.SNAPSHOT", "LIST"]), "*0\r\n");
    ok(&mut r, &["SET", "a", "1"]);
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "b"]);
    ok(&mut r, &["SET", "a", "2"]);
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "a"]);
    // Saving a name again replaces it.
    ok(&mut r, &["SET", "a", "3"]);
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "b"]);
    assert_eq!(
        r.cmd_str(&["TUMBLER.SNAPSHOT", "LIST"]),
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    ok(&mut r, &["TUMBLER.SNAPSHOT", "RESTORE", "a"]);
    assert_eq!(r.cmd_str(&["GET", "a"]), "$1\r\n2\r\n");
    ok(&mut r, &["TUMBLER.SNAPSHOT", "RESTORE", "b"]);
    assert_eq!(r.cmd_str(&["GET", "a"]), "$1\r\n3\r\n");
    assert_eq!(r.cmd_str(&["TUMBLER.SNAPSHOT", "DROP", "a"]), ":1\r\n");
    assert_eq!(r.cmd_str(&["TUMBLER.SNAPSHOT", "DROP", "a"]), ":0\r\n");
    assert_eq!(
        r.cmd_str(&["TUMBLER.SNAPSHOT", "RESTORE", "a"]),
        "-ERR no such snapshot 'a'\r\n"
    );
    assert_eq!(
        r.cmd_str(&["TUMBLER.SNAPSHOT", "SAVE"]),
        "-ERR wrong number of arguments for 'tumbler.snapshot|save' command\r\n"
    );
    assert!(r
        .cmd_str(&["TUMBLER.SNAPSHOT", "NOPE"])
        .starts_with("-ERR unknown subcommand 'NOPE'"));
    // Not from a script: it would change keys the script did not declare.
    let e = r.cmd_str(&[
        "EVAL",
        "return redis.call('tumbler.snapshot', 'restore', 'b')",
        "0",
    ]);
    assert!(
        e.starts_with("-ERR This Redis command is not allowed from script"),
        "{e}"
    );
    // In a transaction it runs in its place.
    ok(&mut r, &["MULTI"]);
    assert_eq!(r.cmd_str(&["SET", "a", "9"]), "+QUEUED\r\n");
    assert_eq!(
        r.cmd_str(&["TUMBLER.SNAPSHOT", "RESTORE", "b"]),
        "+QUEUED\r\n"
    );
    assert_eq!(r.cmd_str(&["EXEC"]), "*2\r\n+OK\r\n+OK\r\n");
    assert_eq!(r.cmd_str(&["GET", "a"]), "$1\r\n3\r\n");
}

#[test]
fn restore_touches_watch_and_serves_blocked_clients_of_the_keys_it_changes() {
    let t = Tumbler::start();
    let mut r = t.raw();
    ok(&mut r, &["SET", "w", "1"]);
    ok(&mut r, &["SET", "calm", "1"]);
    assert_eq!(r.cmd_str(&["RPUSH", "q", "job"]), ":1\r\n");
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "s"]);
    ok(&mut r, &["SET", "w", "2"]);
    assert_eq!(r.cmd_str(&["DEL", "q"]), ":1\r\n");

    let mut watcher = t.raw();
    ok(&mut watcher, &["WATCH", "w"]);
    let mut calm = t.raw();
    ok(&mut calm, &["WATCH", "calm"]);
    let mut blocked = t.raw();
    blocked.send(&["BLPOP", "q", "10"]);
    std::thread::sleep(Duration::from_millis(100));

    ok(&mut r, &["TUMBLER.SNAPSHOT", "RESTORE", "s"]);
    assert_eq!(
        blocked.read_reply().as_ref(),
        b"*2\r\n$1\r\nq\r\n$3\r\njob\r\n"
    );
    ok(&mut watcher, &["MULTI"]);
    watcher.cmd(&["GET", "w"]);
    assert_eq!(
        watcher.cmd_str(&["EXEC"]),
        "*-1\r\n",
        "w changed: EXEC fails"
    );
    // A watched key the restore did not change keeps the transaction valid.
    ok(&mut calm, &["MULTI"]);
    calm.cmd(&["GET", "calm"]);
    assert_eq!(calm.cmd_str(&["EXEC"]), "*1\r\n$1\r\n1\r\n");
}

#[test]
fn locks_keep_leases_lose_session_grants_and_tokens_only_go_up() {
    let t = Tumbler::start_with(&[("enable-time-control", "yes")]);
    let mut r = t.raw();
    let leased: i64 = r.cmd_str(&["LOCK.ACQUIRE", "leased", "a", "1000"])[1..]
        .trim()
        .parse()
        .unwrap();
    let mut holder = t.raw();
    assert!(holder
        .cmd_str(&["LOCK.ACQUIRE", "mine", "b", "0", "SESSION"])
        .starts_with(':'));
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "s"]);
    assert_eq!(r.cmd_str(&["LOCK.RELEASE", "leased", "a"]), ":0\r\n");
    ok(&mut r, &["FLUSHDB"]);
    ok(&mut r, &["TUMBLER.SNAPSHOT", "RESTORE", "s"]);

    // The leased grant is back, with its token, and its lease timer runs again.
    let info = r.cmd_str(&["LOCK.INFO", "leased"]);
    assert!(info.contains(&leased.to_string()), "{info}");
    // The SESSION grant belonged to a connection, not to the data: it is not back.
    assert_eq!(r.cmd_str(&["LOCK.INFO", "mine"]), "$-1\r\n");
    let state = bulk(&r.cmd(&["TUMBLER.STATE"]));
    assert!(state.contains("\"leased\" lock"), "{state}");
    assert!(state.contains("holder \"a\""), "{state}");
    t.time().advance(Duration::from_millis(1100));
    assert_eq!(r.cmd_str(&["LOCK.INFO", "leased"]), "$-1\r\n");

    // A later grant's token is above every token granted before the restore.
    let next: i64 = r.cmd_str(&["LOCK.ACQUIRE", "leased", "c", "1000"])[1..]
        .trim()
        .parse()
        .unwrap();
    assert!(next > leased + 1, "{next} after {leased}");
}

#[test]
fn state_shows_keys_ttls_holders_waiters_and_lockdep() {
    let t = Tumbler::start_with(&[("lockdep", "yes")]);
    let mut r = t.raw();
    ok(&mut r, &["SET", "greeting", "hi\n\"there\""]);
    ok(&mut r, &["SET", "ttl", "1", "PX", "60000"]);
    assert_eq!(r.cmd_str(&["HSET", "h", "f", "v"]), ":1\r\n");
    assert_eq!(r.cmd_str(&["ZADD", "z", "1.5", "m"]), ":1\r\n");
    assert!(r
        .cmd_str(&["LOCK.ACQUIRE", "l", "owner-1", "30000"])
        .starts_with(':'));
    let mut waiter = t.raw();
    waiter.send(&["LOCK.ACQUIRE", "l", "owner-2", "30000", "WAIT", "0"]);
    std::thread::sleep(Duration::from_millis(100));
    ok(&mut r, &["SELECT", "3"]);
    assert_eq!(r.cmd_str(&["RPUSH", "list", "a", "b"]), ":2\r\n");

    let s = bulk(&r.cmd(&["TUMBLER.STATE"]));
    for want in [
        "# db0: 5 keys, 2 with a TTL",
        "\"greeting\" string encoding=embstr ttl=none value=\"hi\\n\\\"there\\\"\"",
        "\"h\" hash encoding=listpack ttl=none fields=1\n    \"f\" => \"v\"",
        "\"z\" zset encoding=listpack ttl=none members=1\n    \"m\" score=1.5",
        "\"l\" lock encoding=lock ttl=",
        "holder \"owner-1\" holds=1 reads=0 token=",
        "blocked in lock.acquire",
        "# db3: 1 keys, 0 with a TTL",
        "\"list\" list encoding=listpack ttl=none len=2\n    \"a\"\n    \"b\"",
        "# blocked clients: 1",
        "\"mode\":\"yes\"",
    ] {
        assert!(s.contains(want), "missing {want:?} in:\n{s}");
    }
    assert!(s.contains("\"ttl\" string encoding=int ttl="), "{s}");
}

/// A restore is one command under the keyspace lock: a client never sees half of it.
#[test]
fn restore_is_atomic_for_concurrent_clients() {
    let t = Tumbler::start();
    let mut r = t.raw();
    for i in 0..200 {
        ok(&mut r, &["SET", &format!("a{i}"), "0"]);
    }
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "zero"]);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (mut w, stop) = (t.raw(), stop.clone());
        std::thread::spawn(move || {
            let keys: Vec<String> = (0..200).map(|i| format!("a{i}")).collect();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let mut args = vec!["MSET".to_string()];
                for k in &keys {
                    args.push(k.clone());
                    args.push(n.to_string());
                }
                assert_eq!(w.cmd_str(&args), "+OK\r\n");
            }
        })
    };
    let restorer = {
        let (mut w, stop) = (t.raw(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                assert_eq!(
                    w.cmd_str(&["TUMBLER.SNAPSHOT", "RESTORE", "zero"]),
                    "+OK\r\n"
                );
            }
        })
    };
    let keys: Vec<String> = (0..200).map(|i| format!("a{i}")).collect();
    let mut args = vec!["MGET".to_string()];
    args.extend(keys);
    let start = Instant::now();
    let mut reads = 0;
    while start.elapsed() < Duration::from_millis(1500) && reads < 5000 {
        let vals = strings(&r.cmd(&args));
        assert_eq!(vals.len(), 200);
        assert!(vals.iter().all(|v| *v == vals[0]), "a torn read: {vals:?}");
        reads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    restorer.join().unwrap();
    assert!(reads > 10);
}

/// The Rust embedding API: one guard around a test restores the seed when the test ends,
/// and a test that fails leaves the keyspace it failed on in `TUMBLER_ARTIFACTS`.
#[test]
fn embedded_restore_after_and_the_failed_tests_keyspace() {
    // As redis-7.0, whose RDB version (10) the redis-check-rdb of redis-tools 7.0 reads.
    let server = tumbler::embed::TestServer::builder()
        .config("personality", "redis-7.0")
        .spawn()
        .unwrap();
    let mut r = Raw::connect(server.addr());
    ok(&mut r, &["SET", "fixture", "seeded"]);
    server.snapshot(0, "seed");
    {
        let _restore = server.restore_after(0, "seed");
        ok(&mut r, &["SET", "fixture", "dirty"]);
        ok(&mut r, &["SET", "stray", "1"]);
    }
    assert_eq!(r.cmd_str(&["GET", "fixture"]), "$6\r\nseeded\r\n");
    assert_eq!(r.cmd_str(&["EXISTS", "stray"]), ":0\r\n");

    let dir = std::env::temp_dir().join(format!("tumbler-artifacts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Only this test reads the variable; it is set before the failing test starts.
    std::env::set_var("TUMBLER_ARTIFACTS", &dir);
    let failed = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("orders::charges_once".into())
            .spawn_scoped(s, || {
                let _restore = server.restore_after(0, "seed");
                let mut c = Raw::connect(server.addr());
                ok(&mut c, &["SET", "order:42", "charged twice"]);
                panic!("expected failure: the example test fails on purpose");
            })
            .unwrap()
            .join()
    });
    std::env::remove_var("TUMBLER_ARTIFACTS");
    assert!(failed.is_err(), "the example test must fail");
    let rdb = std::fs::read(dir.join("orders__charges_once.rdb")).unwrap();
    assert!(
        rdb.starts_with(b"REDIS0010"),
        "{:?}",
        &rdb[..rdb.len().min(16)]
    );
    let check = std::process::Command::new("redis-check-rdb")
        .arg(dir.join("orders__charges_once.rdb"))
        .output()
        .expect("redis-check-rdb (redis-tools)");
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && said.contains("RDB looks OK!"),
        "{said}"
    );
    let txt = std::fs::read_to_string(dir.join("orders__charges_once.txt")).unwrap();
    assert!(
        txt.contains("\"order:42\" string encoding=embstr ttl=none value=\"charged twice\""),
        "{txt}"
    );
    // The guard restored after writing.
    assert_eq!(r.cmd_str(&["EXISTS", "order:42"]), ":0\r\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// TUMBLER.RDB LOAD replaces the keyspace behind the snapshot's back: the next restore
/// copies the snapshot whole and is exact.
#[test]
fn a_snapshot_restores_exactly_after_an_rdb_load() {
    let t = Tumbler::start();
    let mut r = t.raw();
    let mut rng = Rng(99);
    seed(&mut r, &mut rng);
    let file = std::env::temp_dir().join(format!("tumbler-snap-{}.rdb", std::process::id()));
    std::fs::write(&file, bulk_bytes(&r.cmd(&["TUMBLER.RDB", "SAVE"]))).unwrap();
    ok(&mut r, &["TUMBLER.SNAPSHOT", "SAVE", "s"]);
    let saved = fingerprint(&mut r);
    for _ in 0..200 {
        random_write(&mut r, &mut rng);
    }
    ok(&mut r, &["TUMBLER.RDB", "LOAD", file.to_str().unwrap()]);
    random_write(&mut r, &mut rng);
    ok(&mut r, &["TUMBLER.SNAPSHOT", "RESTORE", "s"]);
    assert_eq!(fingerprint(&mut r), saved);
    std::fs::remove_file(&file).unwrap();
}
