//! Native locks over TCP: grant/release, server-side FIFO waiting, leases, SESSION release on
//! disconnect, fencing, semaphores, read-write locks and keyspace integration.

use std::time::{Duration, Instant};
use tumbler_client::{Client, Error, Frame};
use tumbler_tests::Tumbler;

fn client(t: &Tumbler) -> Client {
    let mut c = Client::connect(t.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c
}

fn server_err<T: std::fmt::Debug>(r: tumbler_client::Result<T>) -> String {
    match r {
        Err(Error::Server(e)) => e,
        other => panic!("expected an error reply, got {other:?}"),
    }
}

#[test]
fn grant_reentrancy_release_over_raw_resp() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let t1 = c.cmd_str(&["LOCK.ACQUIRE", "l", "A", "10000"]);
    assert!(t1.starts_with(':'), "{t1}");
    assert_eq!(c.cmd_str(&["LOCK.ACQUIRE", "l", "A", "10000"]), t1);
    assert_eq!(c.cmd_str(&["LOCK.ACQUIRE", "l", "B", "10000"]), "$-1\r\n");
    assert_eq!(c.cmd_str(&["TYPE", "l"]), "+lock\r\n");
    assert_eq!(c.cmd_str(&["EXISTS", "l"]), ":1\r\n");
    assert_eq!(c.cmd_str(&["OBJECT", "ENCODING", "l"]), "$4\r\nlock\r\n");
    let pttl: i64 = c.cmd_str(&["PTTL", "l"])[1..].trim().parse().unwrap();
    assert!(pttl > 0 && pttl <= 10000, "{pttl}");
    let info = c.cmd_str(&["LOCK.INFO", "l"]);
    assert!(
        info.starts_with(&format!("*14\r\n$4\r\ntype\r\n$4\r\nlock\r\n$5\r\nowner\r\n$1\r\nA\r\n$5\r\ntoken\r\n{t1}$5\r\nholds\r\n:2\r\n")),
        "{info}"
    );
    assert!(
        info.ends_with("$7\r\nsession\r\n:0\r\n$7\r\nwaiters\r\n:0\r\n"),
        "{info}"
    );
    assert_eq!(
        c.cmd_str(&["LOCK.RELEASE", "l", "B"]),
        "-NOTHELD the lock is not held by this owner\r\n"
    );
    assert_eq!(c.cmd_str(&["LOCK.RELEASE", "l", "A"]), ":1\r\n");
    assert_eq!(c.cmd_str(&["LOCK.RELEASE", "l", "A"]), ":0\r\n");
    assert_eq!(c.cmd_str(&["EXISTS", "l"]), ":0\r\n");
    assert_eq!(c.cmd_str(&["LOCK.INFO", "l"]), "$-1\r\n");
    // A new holder gets a larger token.
    let tok = |r: &str| r[1..].trim().parse::<u64>().unwrap();
    let t2 = c.cmd_str(&["LOCK.ACQUIRE", "l", "B", "10000"]);
    assert_eq!(tok(&t2), tok(&t1) + 1);
}

#[test]
fn bad_input_gets_clear_errors_and_leaves_no_state() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let cases: &[(&[&str], &str)] = &[
        (
            &["LOCK.ACQUIRE", "l", "A"],
            "-ERR wrong number of arguments for 'lock.acquire' command\r\n",
        ),
        (
            &["LOCK.ACQUIRE", "l", "", "100"],
            "-ERR owner must not be empty\r\n",
        ),
        (
            &["LOCK.ACQUIRE", "l", "A", "-5"],
            "-ERR invalid expire time in 'lock.acquire' command\r\n",
        ),
        (
            &["LOCK.ACQUIRE", "l", "A", "0"],
            "-ERR invalid expire time in 'lock.acquire' command\r\n",
        ),
        (
            &["LOCK.ACQUIRE", "l", "A", "9223372036854775807"],
            "-ERR invalid expire time in 'lock.acquire' command\r\n",
        ),
        (
            &["LOCK.ACQUIRE", "l", "A", "1e3"],
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            &["LOCK.ACQUIRE", "l", "A", "100", "WAIT", "-1"],
            "-ERR timeout is negative\r\n",
        ),
        (
            &["LOCK.ACQUIRE", "l", "A", "100", "WAIT"],
            "-ERR syntax error\r\n",
        ),
        (
            &["LOCK.ACQUIRE", "l", "A", "100", "FOREVER"],
            "-ERR syntax error\r\n",
        ),
        (
            &["LOCK.EXTEND", "l", "A", "100"],
            "-NOTHELD the lock is not held by this owner\r\n",
        ),
        (
            &["LOCK.EXTEND", "l", "A", "0"],
            "-ERR invalid expire time in 'lock.extend' command\r\n",
        ),
        (
            &["LOCK.RELEASE", "l", "A"],
            "-NOTHELD the lock is not held by this owner\r\n",
        ),
        (
            &["LOCK.CHECK", "l", "x"],
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            &["SEM.ACQUIRE", "s", "A", "0", "100"],
            "-ERR permits must be a positive integer\r\n",
        ),
        (
            &["SEM.ACQUIRE", "s", "A", "2", "100", "COUNT", "3"],
            "-ERR COUNT must be between 1 and permits\r\n",
        ),
        (
            &["SEM.RELEASE", "s", "A", "COUNT", "0"],
            "-ERR COUNT must be between 1 and permits\r\n",
        ),
        (
            &["FENCE.SET", "l", "v", "l", "1"],
            "-ERR key and lockkey must be different keys\r\n",
        ),
        (
            &["FENCE.SET", "d", "v", "l", "1"],
            "-FENCED the token does not hold the lock\r\n",
        ),
    ];
    for (cmd, want) in cases {
        assert_eq!(c.cmd_str(cmd), *want, "{cmd:?}");
    }
    assert_eq!(c.cmd_str(&["DBSIZE"]), ":0\r\n");
    c.cmd(&["SET", "str", "v"]);
    let wt = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    assert_eq!(c.cmd_str(&["LOCK.ACQUIRE", "str", "A", "100"]), wt);
    assert_eq!(c.cmd_str(&["LOCK.INFO", "str"]), wt);
    assert_eq!(c.cmd_str(&["LOCK.RELEASE", "str", "A"]), wt);
    c.cmd(&["LOCK.ACQUIRE", "l", "A", "10000"]);
    assert_eq!(c.cmd_str(&["GET", "l"]), wt);
    assert_eq!(c.cmd_str(&["SEM.ACQUIRE", "l", "A", "2", "100"]), wt);
    assert_eq!(c.cmd_str(&["RW.RLOCK", "l", "A", "100"]), wt);
    assert_eq!(c.cmd_str(&["GET", "str"]), "$1\r\nv\r\n");
}

#[test]
fn waiter_is_granted_in_the_release_step_fifo() {
    let t = Tumbler::start();
    let mut a = client(&t);
    let mut b = client(&t);
    let mut c = client(&t);
    let mut d = client(&t);
    let t1 = a
        .lock_acquire("l", "A", 30_000, None, false)
        .unwrap()
        .unwrap();
    b.send(&["LOCK.ACQUIRE", "l", "B", "30000", "WAIT", "0"])
        .unwrap();
    wait_waiters(&mut a, "l", 1);
    c.send(&["LOCK.ACQUIRE", "l", "C", "30000", "WAIT", "0"])
        .unwrap();
    wait_waiters(&mut a, "l", 2);
    // No barging: a try-lock while others queue fails even though it only probes.
    assert_eq!(d.lock_acquire("l", "D", 30_000, None, false).unwrap(), None);
    assert_eq!(a.lock_release("l", "A").unwrap(), 0);
    assert_eq!(b.read().unwrap(), Frame::Integer(t1 as i64 + 1));
    assert_eq!(b.lock_release("l", "B").unwrap(), 0);
    assert_eq!(c.read().unwrap(), Frame::Integer(t1 as i64 + 2));
    // A waiter with a timeout gets nil when it passes.
    let t0 = Instant::now();
    assert_eq!(
        d.lock_acquire("l", "D", 1000, Some(100), false).unwrap(),
        None
    );
    assert!(t0.elapsed() >= Duration::from_millis(100));
    assert_eq!(c.lock_release("l", "C").unwrap(), 0);
    assert_eq!(
        d.lock_acquire("l", "D", 1000, Some(100), false).unwrap(),
        Some(t1 + 3)
    );
}

/// Polls LOCK.INFO until `n` waiters are queued (the order of sends on different sockets
/// is otherwise not defined).
fn wait_waiters(c: &mut Client, key: &str, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = c.lock_info(key).unwrap().unwrap_or_default();
        let w = info
            .iter()
            .find(|(k, _)| k == "waiters")
            .map(|(_, v)| v.clone());
        if w == Some(Frame::Integer(n)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "waiters never reached {n}: {info:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn killed_session_holder_hands_the_lock_to_the_next_waiter_at_once() {
    let t = Tumbler::start();
    let mut a = client(&t);
    let mut b = client(&t);
    let mut obs = client(&t);
    // ttl 0 + SESSION: only the connection keeps it; no lease could free it.
    let t1 = a.lock_acquire("s", "A", 0, None, true).unwrap().unwrap();
    b.send(&["LOCK.ACQUIRE", "s", "B", "0", "WAIT", "0", "SESSION"])
        .unwrap();
    wait_waiters(&mut obs, "s", 1);
    let t0 = Instant::now();
    a.close();
    assert_eq!(b.read().unwrap(), Frame::Integer(t1 as i64 + 1));
    println!("SESSION hand-off after disconnect: {:?}", t0.elapsed());
    let info = obs.lock_info("s").unwrap().unwrap();
    assert!(
        info.contains(&("owner".into(), Frame::BulkString(b"B".to_vec()))),
        "{info:?}"
    );
    // And when B goes too, the key is gone.
    b.close();
    let deadline = Instant::now() + Duration::from_secs(10);
    while obs.lock_info("s").unwrap().is_some() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn expired_lease_is_handed_to_the_waiter_by_the_timer() {
    let t = Tumbler::start();
    let mut a = client(&t);
    let mut b = client(&t);
    let t1 = a.lock_acquire("e", "A", 80, None, false).unwrap().unwrap();
    let t0 = Instant::now();
    assert_eq!(
        b.lock_acquire("e", "B", 10_000, Some(5_000), false)
            .unwrap(),
        Some(t1 + 1)
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(60),
        "{:?}",
        t0.elapsed()
    );
    println!("lease-expiry hand-off after {:?}", t0.elapsed());
    // A's late release is refused: it no longer holds the lock.
    assert!(server_err(a.lock_release("e", "A")).starts_with("NOTHELD"));
    // EXTEND keeps a lease alive.
    b.lock_extend("e", "B", 60_000).unwrap();
    let ttl = b.cmd(&["PTTL", "e"]).unwrap();
    assert!(matches!(ttl, Frame::Integer(n) if n > 10_000), "{ttl:?}");
}

#[test]
fn fencing_refuses_the_stale_holder() {
    let t = Tumbler::start();
    let mut a = client(&t);
    let mut b = client(&t);
    let t1 = a
        .lock_acquire("res", "A", 100, None, false)
        .unwrap()
        .unwrap();
    a.fence_set("data", "from-A-1", "res", t1).unwrap();
    // A pauses past its lease; B takes over.
    std::thread::sleep(Duration::from_millis(150));
    let t2 = b
        .lock_acquire("res", "B", 10_000, Some(1000), false)
        .unwrap()
        .unwrap();
    assert!(t2 > t1);
    let e = server_err(a.fence_set("data", "from-A-stale", "res", t1));
    assert_eq!(e, "FENCED the token does not hold the lock");
    assert!(!a.lock_check("res", t1).unwrap());
    b.fence_set("data", "from-B", "res", t2).unwrap();
    assert!(b.lock_check("res", t2).unwrap());
    assert_eq!(
        b.cmd(&["GET", "data"]).unwrap(),
        Frame::BulkString(b"from-B".to_vec())
    );
}

#[test]
fn wait_never_blocks_inside_multi() {
    let t = Tumbler::start();
    let mut a = t.raw();
    let mut b = t.raw();
    let t1: u64 = a.cmd_str(&["LOCK.ACQUIRE", "m", "A", "10000"])[1..]
        .trim()
        .parse()
        .unwrap();
    b.cmd(&["MULTI"]);
    assert_eq!(
        b.cmd_str(&["LOCK.ACQUIRE", "m", "B", "1000", "WAIT", "0"]),
        "+QUEUED\r\n"
    );
    assert_eq!(
        b.cmd_str(&["LOCK.CHECK", "m", &t1.to_string()]),
        "+QUEUED\r\n"
    );
    assert_eq!(b.cmd_str(&["EXEC"]), "*2\r\n$-1\r\n:1\r\n");
    // Release + acquire by another owner in one transaction: the lock is free inside it.
    b.cmd(&["MULTI"]);
    b.cmd(&["LOCK.RELEASE", "m", "A"]);
    b.cmd(&["LOCK.ACQUIRE", "m", "B", "1000"]);
    assert_eq!(b.cmd_str(&["EXEC"]), format!("*2\r\n:0\r\n:{}\r\n", t1 + 1));
}

#[test]
fn del_flushdb_rename_scan_and_list() {
    let t = Tumbler::start();
    let mut a = client(&t);
    let mut b = client(&t);
    let mut c = client(&t);
    a.lock_acquire("k1", "A", 30_000, None, false).unwrap();
    a.lock_acquire("k2", "A", 30_000, None, false).unwrap();
    a.sem_acquire("sem", "A", 3, 1, 30_000, None, false)
        .unwrap();
    a.cmd(&["SET", "plain", "v"]).unwrap();
    let list = a.cmd(&["LOCK.LIST"]).unwrap();
    let names = |f: Frame| match f {
        Frame::Array(v) => v.iter().map(tumbler_client::text).collect::<Vec<_>>(),
        f => panic!("{f:?}"),
    };
    assert_eq!(names(list), ["k1", "k2", "sem"]);
    assert_eq!(
        names(a.cmd(&["LOCK.LIST", "MATCH", "k*", "COUNT", "1"]).unwrap()),
        ["k1"]
    );
    let scan = a
        .cmd(&["SCAN", "0", "COUNT", "100", "TYPE", "lock"])
        .unwrap();
    let Frame::Array(parts) = scan else { panic!() };
    let mut keys = names(parts[1].clone());
    keys.sort();
    assert_eq!(keys, ["k1", "k2"]);
    // DEL of a held lock is a forced unlock: the waiter is granted at once.
    b.send(&["LOCK.ACQUIRE", "k1", "B", "30000", "WAIT", "0"])
        .unwrap();
    wait_waiters(&mut c, "k1", 1);
    assert_eq!(a.cmd(&["DEL", "k1"]).unwrap(), Frame::Integer(1));
    let Frame::Integer(tb) = b.read().unwrap() else {
        panic!()
    };
    assert!(tb > 3);
    // FLUSHDB frees every lock and grants the waiters.
    c.send(&["LOCK.ACQUIRE", "k2", "C", "30000", "WAIT", "0"])
        .unwrap();
    wait_waiters(&mut a, "k2", 1);
    a.cmd(&["FLUSHDB"]).unwrap();
    let Frame::Integer(tc) = c.read().unwrap() else {
        panic!()
    };
    assert!(tc > tb);
    // RENAME moves the lock; the holder releases it under the new name.
    assert_eq!(
        a.cmd(&["RENAME", "k2", "k3"]).unwrap(),
        Frame::SimpleString(b"OK".to_vec())
    );
    assert_eq!(
        a.cmd(&["TYPE", "k3"]).unwrap(),
        Frame::SimpleString(b"lock".to_vec())
    );
    assert!(server_err(c.lock_release("k2", "C")).starts_with("NOTHELD"));
    assert_eq!(c.lock_release("k3", "C").unwrap(), 0);
    assert_eq!(
        a.cmd(&["EXISTS", "k1", "k2", "sem", "plain"]).unwrap(),
        Frame::Integer(0)
    );
}

#[test]
fn semaphore_permits_fifo_and_session() {
    let t = Tumbler::start();
    let mut a = client(&t);
    let mut b = client(&t);
    let mut c = client(&t);
    let mut obs = client(&t);
    assert!(a
        .sem_acquire("s", "A", 3, 2, 30_000, None, true)
        .unwrap()
        .is_some());
    assert_eq!(
        a.cmd(&["TYPE", "s"]).unwrap(),
        Frame::SimpleString(b"semaphore".to_vec())
    );
    // B wants 2, only 1 free: it queues; C wants 1 (free) but must not pass B.
    b.send(&[
        "SEM.ACQUIRE",
        "s",
        "B",
        "3",
        "30000",
        "COUNT",
        "2",
        "WAIT",
        "0",
    ])
    .unwrap();
    wait_waiters(&mut obs, "s", 1);
    assert_eq!(
        c.sem_acquire("s", "C", 3, 1, 30_000, None, false).unwrap(),
        None
    );
    // A's connection drops: its 2 permits go back, B gets its 2 atomically.
    a.close();
    let Frame::Integer(tb) = b.read().unwrap() else {
        panic!()
    };
    assert!(tb > 1);
    assert!(c
        .sem_acquire("s", "C", 3, 1, 30_000, None, false)
        .unwrap()
        .is_some());
    assert_eq!(
        c.sem_acquire("s", "C2", 3, 1, 30_000, None, false).unwrap(),
        None
    );
    assert_eq!(b.sem_release("s", "B", 1).unwrap(), 1);
    assert!(server_err(b.sem_release("s", "B", 2)).starts_with("ERR COUNT is more"));
    let info = obs.lock_info("s").unwrap().unwrap();
    assert!(
        info.contains(&("available".into(), Frame::Integer(1))),
        "{info:?}"
    );
}

#[test]
fn rwlock_readers_share_writer_waits_and_is_preferred() {
    let t = Tumbler::start();
    let mut r1 = client(&t);
    let mut r2 = client(&t);
    let mut w = client(&t);
    let mut r3 = client(&t);
    assert!(r1
        .rw_lock(false, "rw", "R1", 30_000, None)
        .unwrap()
        .is_some());
    assert!(r2
        .rw_lock(false, "rw", "R2", 30_000, None)
        .unwrap()
        .is_some());
    w.send(&["RW.WLOCK", "rw", "W", "30000", "WAIT", "0"])
        .unwrap();
    wait_waiters(&mut r1, "rw", 1);
    // A new reader queues behind the waiting writer.
    r3.send(&["RW.RLOCK", "rw", "R3", "30000", "WAIT", "0"])
        .unwrap();
    wait_waiters(&mut r1, "rw", 2);
    assert_eq!(r1.rw_unlock(false, "rw", "R1").unwrap(), 0);
    assert_eq!(r2.rw_unlock(false, "rw", "R2").unwrap(), 0);
    let Frame::Integer(tw) = w.read().unwrap() else {
        panic!()
    };
    assert!(server_err(r1.rw_unlock(true, "rw", "R1")).starts_with("NOTHELD"));
    assert_eq!(w.rw_unlock(true, "rw", "W").unwrap(), 0);
    let Frame::Integer(tr) = r3.read().unwrap() else {
        panic!()
    };
    assert!(tr > tw);
}

#[test]
fn command_table_entries() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let info = c.cmd_str(&["COMMAND", "INFO", "lock.acquire", "fence.set"]);
    assert!(info.contains("blocking"), "{info}");
    assert!(info.contains("write"), "{info}");
    assert_eq!(
        c.cmd_str(&["COMMAND", "GETKEYS", "FENCE.SET", "data", "v", "lk", "1"]),
        "*2\r\n$4\r\ndata\r\n$2\r\nlk\r\n"
    );
}

#[test]
fn keyspace_events_use_class_l() {
    let t = Tumbler::start();
    let mut a = client(&t);
    let mut sub = client(&t);
    a.cmd(&["CONFIG", "SET", "notify-keyspace-events", "EgL"])
        .unwrap();
    sub.send(&["PSUBSCRIBE", "__keyevent@0__:*"]).unwrap();
    sub.read().unwrap();
    a.lock_acquire("ev", "A", 10_000, None, false).unwrap();
    a.lock_extend("ev", "A", 20_000).unwrap();
    a.lock_release("ev", "A").unwrap();
    let mut events = Vec::new();
    for _ in 0..4 {
        let Frame::Array(m) = sub.read().unwrap() else {
            panic!()
        };
        events.push((tumbler_client::text(&m[2]), tumbler_client::text(&m[3])));
    }
    let want = [
        ("__keyevent@0__:lock.acquire", "ev"),
        ("__keyevent@0__:lock.extend", "ev"),
        ("__keyevent@0__:lock.release", "ev"),
        ("__keyevent@0__:del", "ev"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(events, want);
}

#[test]
fn info_is_a_map_in_resp3_and_list_checks_its_arguments() {
    let t = Tumbler::start();
    let mut c = t.raw();
    c.cmd(&["HELLO", "3"]);
    let tok = c.cmd_str(&["SEM.ACQUIRE", "s", "A", "2", "0", "SESSION"]);
    let info = c.cmd_str(&["LOCK.INFO", "s"]);
    assert_eq!(
        info,
        format!(
            "%5\r\n$4\r\ntype\r\n$9\r\nsemaphore\r\n$7\r\npermits\r\n:2\r\n$9\r\navailable\r\n:1\r\n\
         $7\r\nholders\r\n*1\r\n%5\r\n$5\r\nowner\r\n$1\r\nA\r\n$5\r\ntoken\r\n{tok}\
         $7\r\npermits\r\n:1\r\n$3\r\nttl\r\n:-1\r\n$7\r\nsession\r\n:1\r\n$7\r\nwaiters\r\n:0\r\n"
        )
    );
    assert_eq!(c.cmd_str(&["LOCK.INFO", "nope"]), "_\r\n");
    assert_eq!(c.cmd_str(&["LOCK.LIST", "MATCH"]), "-ERR syntax error\r\n");
    assert_eq!(
        c.cmd_str(&["LOCK.LIST", "COUNT", "0"]),
        "-ERR syntax error\r\n"
    );
    assert_eq!(
        c.cmd_str(&["LOCK.LIST", "COUNT", "x"]),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        c.cmd_str(&["LOCK.LIST", "MATCH", "s*"]),
        "*1\r\n$1\r\ns\r\n"
    );
}

/// Fencing tokens stay monotonic across restarts without persistence: each start seeds the
/// counter from the wall clock (docs/locking.md, "Across restarts"), so the first token of
/// a new run is above the last token of the run before.
#[test]
fn fencing_tokens_increase_across_restarts() {
    let tok = |r: String| -> u64 {
        assert!(r.starts_with(':'), "{r}");
        r[1..].trim().parse().unwrap()
    };
    let mut last = 0u64;
    for run in 0..3 {
        let t = Tumbler::start();
        let mut c = t.raw();
        let first = tok(c.cmd_str(&["LOCK.ACQUIRE", "res", "A", "10000"]));
        assert!(
            first > last,
            "run {run}: first token {first} is not above {last} from before the restart"
        );
        assert!(
            first < 1 << 53,
            "tokens stay exact as IEEE doubles: {first}"
        );
        assert_eq!(c.cmd_str(&["LOCK.RELEASE", "res", "A"]), ":0\r\n");
        // Grants of every kind draw from the same counter.
        last = first;
        for i in 0..50 {
            let owner = format!("o{i}");
            for (acq, rel) in [
                (
                    vec!["LOCK.ACQUIRE", "res", &owner, "10000"],
                    vec!["LOCK.RELEASE", "res", &owner],
                ),
                (
                    vec!["SEM.ACQUIRE", "sem", &owner, "2", "10000"],
                    vec!["SEM.RELEASE", "sem", &owner],
                ),
                (
                    vec!["RW.WLOCK", "rw", &owner, "10000"],
                    vec!["RW.WUNLOCK", "rw", &owner],
                ),
            ] {
                let t = tok(c.cmd_str(&acq));
                assert!(t > last, "token {t} after {last}");
                last = t;
                c.cmd(&rel);
            }
        }
        drop(c);
        drop(t);
    }
}
