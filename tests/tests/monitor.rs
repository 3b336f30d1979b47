//! MONITOR's line format and what it shows, checked against redis-server: the same
//! commands produce the same lines once the timestamp and client address are masked.

use tumbler_tests::{Raw, RedisServer, Tumbler};

/// Reads `n` monitor lines and masks `+<sec>.<usec> [<db> <addr>]` to `[<db> ADDR]`.
fn lines(m: &mut Raw, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let l = String::from_utf8_lossy(&m.read_reply()).into_owned();
            let (ts, rest) = l.split_once(' ').expect("timestamp");
            let (sec, usec) = ts
                .trim_start_matches('+')
                .split_once('.')
                .expect("sec.usec");
            assert!(
                sec.parse::<u64>().is_ok() && usec.len() == 6,
                "bad timestamp {ts}"
            );
            let (origin, args) = rest.split_once("] ").expect("origin");
            let (db, who) = origin.trim_start_matches('[').split_once(' ').unwrap();
            let who = if who == "lua" { "lua" } else { "ADDR" };
            format!("[{db} {who}] {}", args.trim_end())
        })
        .collect()
}

const SCRIPT: &[&[&str]] = &[
    &["SET", "k", "v"],
    &["GET", "k"],
    &["SET", "bin", "a\"b\\c\n\r\t\x07\x08\x01 \x7f"],
    &["MULTI"],
    &["SET", "a", "1"],
    &["INCR", "a"],
    &["EXEC"],
    &["MULTI"],
    &["NOSUCH"],
    &["EXEC"],
    &["SELECT", "2"],
    &["INCR", "k2"],
    &["AUTH", "secret"],
    &["AUTH", "user", "pass"],
    &["AUTH", "a", "b", "c"],
    &["HELLO", "2", "AUTH", "default", "pw"],
    &["CONFIG", "GET", "maxmemory"],
    &["GET"],
    &["SELECT", "0"],
    &["PING"],
];

fn run(client: &mut Raw, mon: &mut Raw) -> Vec<String> {
    assert_eq!(mon.cmd_str(&["MONITOR"]), "+OK\r\n");
    for c in SCRIPT {
        client.cmd(c);
    }
    // Shown: everything but unknown/arity errors (rejected before running), the queued
    // NOSUCH, and CONFIG (admin).
    lines(mon, 17)
}

#[test]
fn monitor_lines_match_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let ours = run(&mut t.raw(), &mut t.raw());
    let theirs = run(&mut redis.raw(), &mut redis.raw());
    assert_eq!(ours, theirs);
    // Spot checks of what that means.
    assert!(ours.contains(&"[0 ADDR] \"MULTI\"".to_string()));
    assert!(ours.contains(&"[2 ADDR] \"AUTH\" \"(redacted)\"".to_string()));
    assert!(ours.contains(&"[2 ADDR] \"SELECT\" \"2\"".to_string()));
}

#[test]
fn monitor_line_shape_and_lua_origin() {
    let t = Tumbler::start();
    let mut mon = t.raw();
    assert_eq!(mon.cmd_str(&["MONITOR"]), "+OK\r\n");
    let mut c = t.raw();
    c.cmd(&["SET", "k", "v"]);
    let l = String::from_utf8_lossy(&mon.read_reply()).into_owned();
    let port = c.stream.local_addr().unwrap().port();
    assert!(
        l.ends_with(&format!(" [0 127.0.0.1:{port}] \"SET\" \"k\" \"v\"\r\n")),
        "{l:?}"
    );
    assert!(l.starts_with('+'));
    // What the scripting engine feeds for redis.call renders as `[<db> lua]`.
    t.shared.feed_monitors(
        3,
        "lua",
        &[
            bytes::Bytes::from_static(b"get"),
            bytes::Bytes::from_static(b"x"),
        ],
    );
    let l = String::from_utf8_lossy(&mon.read_reply()).into_owned();
    assert!(l.ends_with(" [3 lua] \"get\" \"x\"\r\n"), "{l:?}");
}
