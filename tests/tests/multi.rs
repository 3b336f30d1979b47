//! MULTI/EXEC/DISCARD/WATCH against redis-server byte for byte, and the WATCH cases that
//! need another client or time: writes from other clients, expiry, FLUSHALL, SWAPDB.

mod support;

use std::time::Duration;
use support::diff;
use tumbler_tests::Tumbler;

#[test]
fn transaction_basics_and_errors() {
    diff(
        r#"
        a: EXEC
        a: DISCARD
        a: MULTI
        a: MULTI
        a: SET k 1
        a: INCR k
        a: GET k
        a: WATCH x
        a: EXEC
        a: MULTI
        a: SET k 1
        a: NOSUCHCMD
        a: GET k extra
        a: EXEC
        a: GET k
        a: MULTI
        a: SET s abc
        a: INCR s
        a: HSET s f v
        a: GET s
        a: EXEC
        a: MULTI
        a: EXEC
        a: MULTI
        a: SET d 1
        a: DISCARD
        a: GET d
        a: MULTI
        a: EXEC x
        a: EXEC
        a: EXEC x
        a: UNWATCH
        a: WATCH
        "#,
    );
}

#[test]
fn no_multi_commands_and_watch_in_multi() {
    diff(
        r#"
        a: MULTI
        a: WATCH k
        a: SAVE
        a: SHUTDOWN
        a: SET k 1
        a: EXEC
        a: GET k
        a: MULTI
        a: PING
        a: ECHO hi
        a: SELECT 1
        a: SET k in1
        a: SELECT 0
        a: EXEC
        a: GET k
        a: SELECT 1
        a: GET k
        "#,
    );
}

#[test]
fn watch_broken_by_other_clients_and_flush_and_swapdb() {
    diff(
        r#"
        a: SET k 1
        a: WATCH k
        b: SET k 2
        a: MULTI
        a: GET k
        a: EXEC
        a: WATCH k
        b: GET k
        a: MULTI
        a: GET k
        a: EXEC
        a: WATCH nokey
        b: FLUSHALL
        a: MULTI
        a: PING
        a: EXEC
        a: SET x 1
        a: WATCH x
        b: FLUSHDB
        a: MULTI
        a: PING
        a: EXEC
        a: WATCH nokey2
        b: FLUSHDB
        a: MULTI
        a: PING
        a: EXEC
        a: SELECT 1
        a: SET y 1
        a: WATCH y
        b: SWAPDB 0 1
        a: MULTI
        a: PING
        a: EXEC
        a: WATCH neither
        b: SWAPDB 0 1
        a: MULTI
        a: PING
        a: EXEC
        a: WATCH k
        b: DEL nothere
        a: MULTI
        a: PING
        a: EXEC
        a: SET r2 1
        a: WATCH r2
        b: SELECT 1
        b: EXPIRE r2 100
        a: MULTI
        a: PING
        a: EXEC
        a: WATCH r2
        b: HSET h f v
        a: UNWATCH
        a: MULTI
        a: PING
        a: EXEC
        a: SET w 1
        a: WATCH w
        a: DISCARD
        a: MULTI
        a: SET w 2
        a: EXEC
        "#,
    );
}

/// A watched key that expires between WATCH and EXEC breaks the transaction, whether
/// the expiry was noticed (lazy/active) or not yet.
#[test]
fn watch_broken_by_expiry() {
    let t = Tumbler::start();
    let mut a = t.raw();
    assert_eq!(a.cmd_str(&["SET", "k", "v", "PX", "50"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["WATCH", "k"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(a.cmd_str(&["MULTI"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["SET", "k", "new"]), "+QUEUED\r\n");
    assert_eq!(a.cmd_str(&["EXEC"]), "*-1\r\n");
    assert_eq!(a.cmd_str(&["EXISTS", "k"]), ":0\r\n");
    // A key that had already expired when WATCHed does not break EXEC.
    assert_eq!(a.cmd_str(&["WATCH", "k"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["MULTI"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["SET", "k", "new"]), "+QUEUED\r\n");
    assert_eq!(a.cmd_str(&["EXEC"]), "*1\r\n+OK\r\n");
    // Same when the expired key was still in memory at WATCH time (active expiry off).
    assert_eq!(a.cmd_str(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["SET", "s", "v", "PX", "10"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(a.cmd_str(&["WATCH", "s"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["MULTI"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["GET", "s"]), "+QUEUED\r\n");
    assert_eq!(a.cmd_str(&["EXEC"]), "*1\r\n$-1\r\n");
    // And a key that expires after WATCH, never touched by anyone, still breaks it.
    assert_eq!(a.cmd_str(&["SET", "s", "v", "PX", "30"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["WATCH", "s"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(a.cmd_str(&["MULTI"]), "+OK\r\n");
    assert_eq!(a.cmd_str(&["PING"]), "+QUEUED\r\n");
    assert_eq!(a.cmd_str(&["EXEC"]), "*-1\r\n");
}

/// EXEC runs atomically: a concurrent client never sees half a transaction.
#[test]
fn exec_is_atomic_under_concurrency() {
    let t = Tumbler::start();
    let addr = t.addr;
    let writer = std::thread::spawn(move || {
        let mut c = tumbler_tests::Raw::connect(addr);
        for _ in 0..300 {
            c.send(&["MULTI"]);
            c.send(&["INCR", "a"]);
            c.send(&["INCR", "b"]);
            c.send(&["EXEC"]);
            for _ in 0..4 {
                c.read_reply();
            }
        }
    });
    let mut r = t.raw();
    for _ in 0..300 {
        let v = r.cmd_str(&["MGET", "a", "b"]);
        let parts: Vec<&str> = v.split("\r\n").skip(1).filter(|p| !p.is_empty()).collect();
        // [$n, a, $n, b] or [$-1, $-1] before the first EXEC: both halves equal.
        let (x, y) = parts.split_at(parts.len() / 2);
        assert_eq!(x, y, "saw a half-applied transaction: {v:?}");
    }
    writer.join().unwrap();
}

/// Under maxmemory, queueing is refused with OOM (flagging the transaction), EXEC of
/// read-only commands still runs, EXEC with a DENYOOM command aborts with the reason.
#[test]
fn maxmemory_oom_rejects_queueing_and_exec() {
    diff(
        r#"
        a: SET x value
        a: MULTI
        a: GET x
        a: PING
        b: CONFIG SET maxmemory 1
        a: EXEC
        a: MULTI
        a: SET x 1
        b: CONFIG SET maxmemory 0
        a: GET x
        a: EXEC
        a: MULTI
        a: SET x 1
        a: GET x
        b: CONFIG SET maxmemory 1
        a: EXEC
        a: MULTI
        a: SET y 1
        a: DISCARD
        b: CONFIG SET maxmemory 0
        "#,
    );
}

/// Blocking commands inside MULTI return at once (their timeout reply); a client blocked
/// on a key the transaction fills is served after EXEC, seeing the transaction's end
/// state, never a state in the middle of it.
#[test]
fn blocking_inside_multi_and_wakeups_after_exec() {
    diff(
        r#"
        a: MULTI
        a: BLPOP nolist 0
        a: BRPOPLPUSH nolist other 0
        a: EXEC
        "#,
    );
    let t = Tumbler::start();
    let mut waiter = t.raw();
    waiter.send(&["BLPOP", "l", "0"]);
    // Let the BLPOP park before the transaction runs.
    let mut c = t.raw();
    for _ in 0..100 {
        if c.cmd_str(&["CLIENT", "LIST"]).contains("cmd=blpop") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(c.cmd_str(&["MULTI"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["RPUSH", "l", "a", "b"]), "+QUEUED\r\n");
    assert_eq!(c.cmd_str(&["LPOP", "l"]), "+QUEUED\r\n");
    assert_eq!(c.cmd_str(&["EXEC"]), "*2\r\n:2\r\n$1\r\na\r\n");
    // Served after EXEC: the transaction popped "a" first, so the waiter gets "b".
    assert_eq!(
        String::from_utf8_lossy(&waiter.read_reply()),
        "*2\r\n$1\r\nl\r\n$1\r\nb\r\n"
    );
}
