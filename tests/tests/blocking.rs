//! Blocking list and sorted-set pops over real TCP connections: wake-ups by other clients,
//! FIFO fairness, timeouts, MULTI/EXEC wake-ups, disconnects and CLIENT UNBLOCK.
//!
//! Nothing here asserts a timing: waits are bounded (the harness' 10 s read timeout, and
//! `wait_blocked` gives up after 10 s), so a broken server fails instead of hanging.

use std::time::{Duration, Instant};
use tumbler_tests::{Raw, Tumbler};

/// Waits until `n` clients are blocked, as INFO reports it.
fn wait_blocked(c: &mut Raw, n: usize) {
    let want = format!("blocked_clients:{n}\r\n");
    let start = Instant::now();
    loop {
        if c.cmd_str(&["INFO", "clients"]).contains(&want) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "never saw {n} blocked clients"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn client_id(c: &mut Raw) -> String {
    let r = c.cmd_str(&["CLIENT", "ID"]);
    r.trim_start_matches(':').trim().to_string()
}

#[test]
fn blpop_is_woken_by_lpush_from_another_client() {
    let t = Tumbler::start();
    let (mut waiter, mut pusher) = (t.raw(), t.raw());
    waiter.send(&["BLPOP", "q", "0"]);
    wait_blocked(&mut pusher, 1);
    assert_eq!(pusher.cmd_str(&["LPUSH", "q", "job"]), ":1\r\n");
    assert_eq!(waiter.read_reply(), &b"*2\r\n$1\r\nq\r\n$3\r\njob\r\n"[..]);
    // The element went to the waiter: the list is gone.
    assert_eq!(pusher.cmd_str(&["EXISTS", "q"]), ":0\r\n");
    assert_eq!(waiter.cmd_str(&["PING"]), "+PONG\r\n");
}

#[test]
fn waiters_are_served_in_arrival_order() {
    let t = Tumbler::start();
    let mut first = t.raw();
    let mut second = t.raw();
    let mut ctl = t.raw();
    first.send(&["BRPOP", "q", "0"]);
    wait_blocked(&mut ctl, 1);
    second.send(&["BRPOP", "q", "0"]);
    wait_blocked(&mut ctl, 2);
    assert_eq!(ctl.cmd_str(&["RPUSH", "q", "a", "b"]), ":2\r\n");
    // BRPOP pops from the tail: the first waiter gets "b", the second "a".
    assert_eq!(first.read_reply(), &b"*2\r\n$1\r\nq\r\n$1\r\nb\r\n"[..]);
    assert_eq!(second.read_reply(), &b"*2\r\n$1\r\nq\r\n$1\r\na\r\n"[..]);
}

#[test]
fn timeouts_reply_null_arrays_in_both_protocols() {
    let t = Tumbler::start();
    let mut c = t.raw();
    assert_eq!(c.cmd_str(&["BLPOP", "q", "0.1"]), "*-1\r\n");
    assert_eq!(
        c.cmd_str(&["BLMOVE", "q", "d", "LEFT", "LEFT", "0.05"]),
        "*-1\r\n"
    );
    assert_eq!(c.cmd_str(&["BZPOPMIN", "z", "0.05"]), "*-1\r\n");
    assert_eq!(c.cmd_str(&["BLMPOP", "0.05", "1", "q", "LEFT"]), "*-1\r\n");
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd_str(&["BRPOP", "q", "0.05"]), "_\r\n");
    assert_eq!(c.cmd_str(&["BZMPOP", "0.05", "1", "z", "MIN"]), "_\r\n");
    assert_eq!(
        c.cmd_str(&["BLPOP", "q", "abc"]),
        "-ERR timeout is not a float or out of range\r\n"
    );
    assert_eq!(
        c.cmd_str(&["BLPOP", "q", "-1"]),
        "-ERR timeout is negative\r\n"
    );
}

#[test]
fn wrong_type_keeps_the_waiter_blocked() {
    let t = Tumbler::start();
    let (mut waiter, mut ctl) = (t.raw(), t.raw());
    waiter.send(&["BLPOP", "q", "0"]);
    wait_blocked(&mut ctl, 1);
    // A string under the key does not serve (or error) the waiter; it stays blocked.
    ctl.cmd(&["SET", "q", "str"]);
    ctl.cmd(&["DEL", "q"]);
    wait_blocked(&mut ctl, 1);
    ctl.cmd(&["RPUSH", "q", "x"]);
    assert_eq!(waiter.read_reply(), &b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n"[..]);
}

#[test]
fn exec_wakes_waiters_after_the_whole_transaction() {
    let t = Tumbler::start();
    let (mut waiter, mut ctl) = (t.raw(), t.raw());
    waiter.send(&["BLPOP", "q", "0"]);
    wait_blocked(&mut ctl, 1);
    ctl.cmd(&["MULTI"]);
    ctl.cmd(&["RPUSH", "q", "a", "b"]);
    ctl.cmd(&["LPOP", "q"]);
    // The waiter is not served between RPUSH and LPOP: the transaction's LPOP gets "a".
    assert_eq!(ctl.cmd_str(&["EXEC"]), "*2\r\n:2\r\n$1\r\na\r\n");
    // Served after EXEC, with what the transaction left.
    assert_eq!(waiter.read_reply(), &b"*2\r\n$1\r\nq\r\n$1\r\nb\r\n"[..]);
}

#[test]
fn blocking_commands_inside_multi_do_not_block() {
    let t = Tumbler::start();
    let mut c = t.raw();
    c.cmd(&["MULTI"]);
    c.cmd(&["BLPOP", "q", "0"]);
    c.cmd(&["BZPOPMAX", "z", "0"]);
    assert_eq!(c.cmd_str(&["EXEC"]), "*2\r\n*-1\r\n*-1\r\n");
}

#[test]
fn disconnecting_a_blocked_client_forgets_it() {
    let t = Tumbler::start();
    let mut ctl = t.raw();
    {
        let mut gone = t.raw();
        gone.send(&["BLPOP", "q", "0"]);
        wait_blocked(&mut ctl, 1);
    }
    wait_blocked(&mut ctl, 0);
    ctl.cmd(&["RPUSH", "q", "kept"]);
    assert_eq!(
        ctl.cmd_str(&["LRANGE", "q", "0", "-1"]),
        "*1\r\n$4\r\nkept\r\n"
    );
}

#[test]
fn client_unblock_with_timeout_and_error() {
    let t = Tumbler::start();
    let (mut waiter, mut ctl) = (t.raw(), t.raw());
    let id = client_id(&mut waiter);
    waiter.send(&["BLPOP", "q", "0"]);
    wait_blocked(&mut ctl, 1);
    assert_eq!(ctl.cmd_str(&["CLIENT", "UNBLOCK", &id]), ":1\r\n");
    assert_eq!(waiter.read_reply(), &b"*-1\r\n"[..]);
    waiter.send(&["BZPOPMIN", "z", "0"]);
    wait_blocked(&mut ctl, 1);
    assert_eq!(ctl.cmd_str(&["CLIENT", "UNBLOCK", &id, "ERROR"]), ":1\r\n");
    assert_eq!(
        waiter.read_reply(),
        &b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"[..]
    );
    assert_eq!(ctl.cmd_str(&["CLIENT", "UNBLOCK", &id]), ":0\r\n");
}

#[test]
fn blmove_chains_wake_the_next_waiter() {
    let t = Tumbler::start();
    let (mut mover, mut popper, mut ctl) = (t.raw(), t.raw(), t.raw());
    mover.send(&["BLMOVE", "a", "b", "LEFT", "RIGHT", "0"]);
    wait_blocked(&mut ctl, 1);
    popper.send(&["BLPOP", "b", "0"]);
    wait_blocked(&mut ctl, 2);
    ctl.cmd(&["RPUSH", "a", "x"]);
    assert_eq!(mover.read_reply(), &b"$1\r\nx\r\n"[..]);
    assert_eq!(popper.read_reply(), &b"*2\r\n$1\r\nb\r\n$1\r\nx\r\n"[..]);
    assert_eq!(ctl.cmd_str(&["EXISTS", "a", "b"]), ":0\r\n");
}

#[test]
fn bzpopmin_and_bzmpop_are_woken_by_zadd() {
    let t = Tumbler::start();
    let (mut w1, mut w2, mut ctl) = (t.raw(), t.raw(), t.raw());
    w1.send(&["BZPOPMIN", "z", "0"]);
    wait_blocked(&mut ctl, 1);
    w2.send(&["BZMPOP", "0", "1", "z", "MAX", "COUNT", "5"]);
    wait_blocked(&mut ctl, 2);
    assert_eq!(
        ctl.cmd_str(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]),
        ":3\r\n"
    );
    assert_eq!(
        w1.read_reply(),
        &b"*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n"[..]
    );
    assert_eq!(
        w2.read_reply(),
        &b"*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n"[..]
    );
}

#[test]
fn blpop_with_the_redis_crate() {
    let t = Tumbler::start();
    let client = redis::Client::open(t.url()).unwrap();
    let mut waiter = client.get_connection().unwrap();
    let handle = std::thread::spawn(move || -> Option<(String, String)> {
        redis::cmd("BLPOP")
            .arg("jobs")
            .arg(5)
            .query(&mut waiter)
            .unwrap()
    });
    let mut ctl = t.raw();
    wait_blocked(&mut ctl, 1);
    ctl.cmd(&["RPUSH", "jobs", "j1"]);
    assert_eq!(
        handle.join().unwrap(),
        Some(("jobs".to_string(), "j1".to_string()))
    );
}

#[test]
fn swapdb_wakes_a_client_blocked_in_the_swapped_db() {
    let t = Tumbler::start();
    let (mut waiter, mut ctl) = (t.raw(), t.raw());
    ctl.cmd(&["SELECT", "1"]);
    ctl.cmd(&["RPUSH", "k", "hello"]);
    waiter.cmd(&["SELECT", "9"]);
    waiter.send(&["BRPOP", "k", "5"]);
    wait_blocked(&mut ctl, 1);
    assert_eq!(ctl.cmd_str(&["SWAPDB", "1", "9"]), "+OK\r\n");
    assert_eq!(
        waiter.read_reply(),
        &b"*2\r\n$1\r\nk\r\n$5\r\nhello\r\n"[..]
    );
}

/// Runs one wake-up scenario on tumbler and on redis-server and compares the bytes the
/// waiter receives: `waiter` blocks, then `pushes` run on another connection.
fn diff_wakeup(resp3: bool, waiter_cmd: &[&str], pushes: &[&[&str]]) {
    let Some(redis) = tumbler_tests::RedisServer::start() else {
        return;
    };
    let t = Tumbler::start_with(&[("personality", "redis-7.0")]);
    let mut got = Vec::new();
    for (mut w, mut ctl) in [(t.raw(), t.raw()), (redis.raw(), redis.raw())] {
        if resp3 {
            w.cmd(&["HELLO", "3"]);
        }
        w.send(waiter_cmd);
        wait_blocked(&mut ctl, 1);
        for p in pushes {
            ctl.cmd(p);
        }
        got.push(String::from_utf8_lossy(&w.read_reply()).into_owned());
    }
    assert_eq!(
        got[0], got[1],
        "{waiter_cmd:?} (resp3={resp3}): tumbler (left) vs redis-server (right)"
    );
}

#[test]
fn served_reply_shapes_match_redis() {
    for resp3 in [false, true] {
        diff_wakeup(
            resp3,
            &["BLPOP", "a", "b", "0"],
            &[&["RPUSH", "b", "x", "y"]],
        );
        diff_wakeup(resp3, &["BRPOP", "a", "5"], &[&["RPUSH", "a", "x", "y"]]);
        diff_wakeup(
            resp3,
            &["BLMOVE", "a", "d", "RIGHT", "LEFT", "0"],
            &[&["RPUSH", "a", "x", "y"]],
        );
        diff_wakeup(
            resp3,
            &["BRPOPLPUSH", "a", "d", "0"],
            &[&["LPUSH", "a", "x"]],
        );
        diff_wakeup(
            resp3,
            &["BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "3"],
            &[&["RPUSH", "b", "1", "2"]],
        );
        diff_wakeup(
            resp3,
            &["BZPOPMAX", "z", "0"],
            &[&["ZADD", "z", "1.5", "a", "2", "b"]],
        );
        diff_wakeup(
            resp3,
            &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "2"],
            &[&["ZADD", "z", "1.1", "a", "2", "b", "3", "c"]],
        );
        // A wrong-type write first keeps the waiter blocked; the later push serves it.
        diff_wakeup(
            resp3,
            &["BLPOP", "k", "0"],
            &[&["SET", "k", "s"], &["DEL", "k"], &["RPUSH", "k", "v"]],
        );
        // A transaction that pushes and pops leaves nothing: the waiter gets the second push.
        diff_wakeup(
            resp3,
            &["BLPOP", "k", "0"],
            &[
                &["MULTI"],
                &["RPUSH", "k", "t"],
                &["LPOP", "k"],
                &["EXEC"],
                &["RPUSH", "k", "after"],
            ],
        );
    }
}
