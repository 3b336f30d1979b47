//! Multi-connection differential scripts for pub/sub, transactions and notifications,
//! where one command can produce several replies and other connections receive pushes.
//!
//! A script line is `<conn>: <command>` with `<conn>` a letter naming a connection (each
//! letter gets its own connection to each server, opened on first use). After each command
//! the runner sends `PING __sentinel__` on the same connection and collects every reply up
//! to the sentinel's, on both servers, and compares the bytes. That framing is
//! deterministic: both servers queue a delivery to a subscriber before the publisher gets
//! its reply, and the subscriber sees that delivery before the reply to its later PING.
//! Inside MULTI (a PING would be queued) exactly one reply is read instead.
//! `<conn>: ~<command>` runs without comparing (HELLO shows versions and client ids).
//! `@sleep <ms>` pauses (expiry).
//! `<conn>: @read` collects what arrived on that connection without sending a command.

#![allow(dead_code)]

use std::collections::HashMap;
use tumbler_tests::{split_line, Raw, RedisServer, Tumbler};

const SENTINEL: &[u8] = b"__sentinel__";

struct Pair {
    t: Raw,
    r: Raw,
    in_multi: bool,
}

fn collect(c: &mut Raw, send_sentinel: bool) -> String {
    if !send_sentinel {
        return String::from_utf8_lossy(&c.read_reply()).into_owned();
    }
    c.send(&["PING", "__sentinel__"]);
    let mut out = Vec::new();
    loop {
        let r = c.read_reply();
        if r.windows(SENTINEL.len()).any(|w| w == SENTINEL) {
            break;
        }
        out.extend_from_slice(&r);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs `script` against a fresh tumbler and redis-server and asserts identical bytes.
/// Without redis-server the test fails, or returns without running under
/// `TUMBLER_SKIP_MISSING=1` (tumbler_tests::tools).
pub fn diff(script: &str) {
    diff_with(&[], script)
}

/// [`diff`] with tumbler started with config directives (also sent to redis via
/// CONFIG SET).
pub fn diff_with(config: &[(&str, &str)], script: &str) {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::start_with(config);
    {
        let mut rc = redis.raw();
        for (k, v) in config {
            assert_eq!(rc.cmd_str(&["CONFIG", "SET", k, v]), "+OK\r\n");
        }
    }
    let mut conns: HashMap<String, Pair> = HashMap::new();
    for (i, line) in script.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        eprintln!("script line {}: {line}", i + 1);
        if let Some(ms) = line.strip_prefix("@sleep ") {
            std::thread::sleep(std::time::Duration::from_millis(ms.trim().parse().unwrap()));
            continue;
        }
        let (name, cmd) = line.split_once(':').expect("`<conn>: <command>`");
        let p = conns
            .entry(name.trim().to_string())
            .or_insert_with(|| Pair {
                t: t.raw(),
                r: redis.raw(),
                in_multi: false,
            });
        let mut cmd = cmd.trim();
        // `~` runs the command on both but does not compare (HELLO: version and ids differ).
        let compare = !cmd.starts_with('~');
        cmd = cmd.trim_start_matches('~');
        let (a, b) = if cmd == "@read" {
            (collect(&mut p.t, true), collect(&mut p.r, true))
        } else {
            let args = split_line(cmd);
            p.t.send(&args);
            p.r.send(&args);
            let upper = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
            let sentinel =
                (!p.in_multi && upper != "MULTI") || upper == "EXEC" || upper == "DISCARD";
            let res = (collect(&mut p.t, sentinel), collect(&mut p.r, sentinel));
            if upper == "MULTI" && res.1.starts_with("+OK") {
                p.in_multi = true;
            } else if upper == "EXEC" || upper == "DISCARD" || upper == "RESET" {
                p.in_multi = false;
            }
            res
        };
        if !compare {
            continue;
        }
        assert_eq!(
            a,
            b,
            "line {}: `{}`: tumbler (left) and redis-server (right) disagree",
            i + 1,
            line
        );
    }
}
