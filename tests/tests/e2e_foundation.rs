//! End-to-end tests of the foundation commands over TCP: raw RESP bytes, the `redis` crate
//! and `redis-cli`. These cover what a byte-for-byte differential test cannot: cursors
//! over many keys, random replies, RESP3 shapes and connection state.

use std::collections::HashSet;
use std::process::Command;

use tumbler_tests::{tools, Tumbler};

fn redis_conn(t: &Tumbler) -> redis::Connection {
    redis::Client::open(t.url())
        .unwrap()
        .get_connection()
        .unwrap()
}

/// Follows a SCAN-like cursor to the end; returns every item seen (with duplicates).
fn scan_all(c: &mut redis::Connection, cmd: &[&str], count: usize) -> Vec<String> {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    loop {
        let mut r = redis::cmd(cmd[0]);
        for a in &cmd[1..] {
            r.arg(*a);
        }
        let (next, items): (String, Vec<String>) =
            r.arg(&cursor).arg("COUNT").arg(count).query(c).unwrap();
        out.extend(items);
        if next == "0" {
            return out;
        }
        cursor = next;
    }
}

#[test]
fn scan_visits_every_key_of_a_large_db() {
    let t = Tumbler::start();
    let mut c = redis_conn(&t);
    for i in 0..1000 {
        redis::cmd("SET")
            .arg(format!("key:{i}"))
            .arg(i)
            .query::<()>(&mut c)
            .unwrap();
    }
    redis::cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .query::<()>(&mut c)
        .unwrap();
    let keys = scan_all(&mut c, &["SCAN"], 7);
    let uniq: HashSet<_> = keys.iter().cloned().collect();
    assert_eq!(uniq.len(), 1001);
    // MATCH and TYPE filter without losing keys.
    let (mut cursor, mut n) = ("0".to_string(), 0);
    loop {
        let (next, items): (String, Vec<String>) = redis::cmd("SCAN")
            .arg(&cursor)
            .arg("MATCH")
            .arg("key:1??")
            .arg("TYPE")
            .arg("string")
            .query(&mut c)
            .unwrap();
        n += items.len();
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(n, 100);
    let keys: Vec<String> = redis::cmd("KEYS").arg("key:99?").query(&mut c).unwrap();
    assert_eq!(keys.len(), 10);
}

#[test]
fn hscan_and_sscan_iterate_hashtable_encodings() {
    let t = Tumbler::start();
    let mut c = redis_conn(&t);
    for i in 0..600 {
        redis::cmd("HSET")
            .arg("h")
            .arg(format!("f{i}"))
            .arg(i)
            .query::<()>(&mut c)
            .unwrap();
        redis::cmd("SADD")
            .arg("s")
            .arg(format!("m{i}"))
            .query::<()>(&mut c)
            .unwrap();
    }
    let enc: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg("h")
        .query(&mut c)
        .unwrap();
    assert_eq!(enc, "hashtable");
    let pairs = scan_all(&mut c, &["HSCAN", "h"], 10);
    assert_eq!(pairs.len() % 2, 0);
    let fields: HashSet<_> = pairs.chunks(2).map(|p| p[0].clone()).collect();
    assert_eq!(fields.len(), 600);
    let members: HashSet<_> = scan_all(&mut c, &["SSCAN", "s"], 10).into_iter().collect();
    assert_eq!(members.len(), 600);
}

#[test]
fn hrandfield_and_srandmember_counts() {
    let t = Tumbler::start();
    let mut c = redis_conn(&t);
    redis::cmd("HSET")
        .arg("h")
        .arg(&["a", "1", "b", "2", "c", "3", "d", "4"])
        .query::<()>(&mut c)
        .unwrap();
    let pick: Vec<String> = redis::cmd("HRANDFIELD")
        .arg("h")
        .arg(3)
        .query(&mut c)
        .unwrap();
    assert_eq!(pick.len(), 3);
    assert_eq!(pick.iter().collect::<HashSet<_>>().len(), 3, "distinct");
    let rep: Vec<String> = redis::cmd("HRANDFIELD")
        .arg("h")
        .arg(-20)
        .query(&mut c)
        .unwrap();
    assert_eq!(rep.len(), 20);
    assert!(rep
        .iter()
        .all(|f| ["a", "b", "c", "d"].contains(&f.as_str())));
    let wv: Vec<String> = redis::cmd("HRANDFIELD")
        .arg("h")
        .arg(-5)
        .arg("WITHVALUES")
        .query(&mut c)
        .unwrap();
    assert_eq!(wv.len(), 10);
    for p in wv.chunks(2) {
        assert_eq!(
            p[1],
            ((p[0].as_bytes()[0] - b'a' + b'1') as char).to_string()
        );
    }
    redis::cmd("SADD")
        .arg("s")
        .arg(&["x", "y", "z"])
        .query::<()>(&mut c)
        .unwrap();
    let m: Vec<String> = redis::cmd("SRANDMEMBER")
        .arg("s")
        .arg(-7)
        .query(&mut c)
        .unwrap();
    assert_eq!(m.len(), 7);
}

#[test]
fn resp3_hrandfield_withvalues_is_pairs() {
    let t = Tumbler::start();
    let mut c = t.raw();
    c.cmd(&["HELLO", "3"]);
    c.cmd(&["HSET", "h", "a", "1"]);
    assert_eq!(
        c.cmd_str(&["HRANDFIELD", "h", "1", "WITHVALUES"]),
        "*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"
    );
    assert_eq!(c.cmd_str(&["SMEMBERS", "nosuch"]), "~0\r\n");
    c.cmd(&["SADD", "s", "2", "1"]);
    assert_eq!(
        c.cmd_str(&["SMEMBERS", "s"]),
        "~2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
    assert_eq!(
        c.cmd_str(&["LCS", "nosuch", "nosuch2", "IDX"]),
        "%2\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:0\r\n"
    );
}

#[test]
fn client_reply_skip_silences_only_the_next_reply() {
    let t = Tumbler::start();
    let mut c = t.raw();
    c.send(&["CLIENT", "REPLY", "SKIP"]);
    c.send(&["PING", "first"]);
    c.send(&["PING", "second"]);
    assert_eq!(&c.read_reply()[..], b"$6\r\nsecond\r\n");
}

#[test]
fn client_kill_skipme_no_counts_itself_then_closes() {
    let t = Tumbler::start();
    let mut me = t.raw();
    let mut other = t.raw();
    assert_eq!(other.cmd_str(&["PING"]), "+PONG\r\n");
    assert_eq!(me.cmd_str(&["CLIENT", "KILL", "SKIPME", "NO"]), ":2\r\n");
    assert!(me.is_closed());
    assert!(other.is_closed());
    let mut fresh = t.raw();
    assert_eq!(fresh.cmd_str(&["PING"]), "+PONG\r\n");
}

#[test]
fn client_list_shows_the_running_command_in_qbuf() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let line = c.cmd_str(&["CLIENT", "INFO"]);
    assert!(line.contains(" qbuf=26 "), "{line}");
    assert!(line.contains(" cmd=client|info "), "{line}");
    // Redis 7.2 (the default personality) ends the line with lib-name and lib-ver.
    assert!(
        line.trim_end().ends_with("resp=2 lib-name= lib-ver="),
        "{line}"
    );
}

#[test]
fn pathological_patterns_do_not_crash_the_server() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let key = "a".repeat(50_000);
    c.cmd(&["SET", &key, "1"]);
    let pat = "*?".repeat(50_000);
    assert_eq!(c.cmd_str(&["KEYS", &pat]), "*0\r\n");
    let pat = format!("{}b", "a*".repeat(2000));
    assert_eq!(c.cmd_str(&["KEYS", &pat]), "*0\r\n");
    assert_eq!(c.cmd_str(&["PING"]), "+PONG\r\n");
}

#[test]
fn rename_keeps_ttl_and_object_encoding_follows_writes() {
    let t = Tumbler::start();
    let mut c = t.raw();
    c.cmd(&["SET", "a", "1234", "EX", "100"]);
    assert_eq!(c.cmd_str(&["OBJECT", "ENCODING", "a"]), "$3\r\nint\r\n");
    assert_eq!(c.cmd_str(&["RENAME", "a", "b"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["TTL", "b"]), ":100\r\n");
    assert_eq!(c.cmd_str(&["SETRANGE", "b", "0", "9"]), ":4\r\n");
    assert_eq!(c.cmd_str(&["OBJECT", "ENCODING", "b"]), "$3\r\nraw\r\n");
    assert_eq!(c.cmd_str(&["SET", "b", "1234"]), "+OK\r\n");
    assert_eq!(c.cmd_str(&["OBJECT", "ENCODING", "b"]), "$3\r\nint\r\n");
}

/// Runs redis-cli one-shot; `None` if it is not installed and `TUMBLER_SKIP_MISSING=1`
/// (otherwise that fails the test).
fn redis_cli(port: u16, args: &[&str]) -> Option<String> {
    match Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
    {
        Ok(o) => {
            assert!(o.status.success(), "redis-cli {args:?} failed: {o:?}");
            Some(String::from_utf8(o.stdout).unwrap())
        }
        Err(e) => {
            tools::missing(&format!("redis-cli ({e})"));
            None
        }
    }
}

#[test]
fn redis_cli_one_shot_commands() {
    let t = Tumbler::start();
    let port = t.addr.port();
    let Some(out) = redis_cli(port, &["PING"]) else {
        return;
    };
    assert_eq!(out, "PONG\n");
    assert_eq!(redis_cli(port, &["SET", "k", "v"]).unwrap(), "OK\n");
    assert_eq!(redis_cli(port, &["GET", "k"]).unwrap(), "v\n");
    assert_eq!(
        redis_cli(port, &["HSET", "h", "a", "1", "b", "2"]).unwrap(),
        "2\n"
    );
    assert_eq!(redis_cli(port, &["HGETALL", "h"]).unwrap(), "a\n1\nb\n2\n");
    assert_eq!(
        redis_cli(port, &["SCAN", "0", "MATCH", "k"]).unwrap(),
        "0\nk\n"
    );
    assert_eq!(
        redis_cli(port, &["GET"]).unwrap(),
        "ERR wrong number of arguments for 'get' command\n\n"
    );
    // redis-cli's own startup probe (COMMAND DOCS) and --scan work too.
    assert_eq!(
        redis_cli(port, &["--scan", "--pattern", "h"]).unwrap(),
        "h\n"
    );
    let info = redis_cli(port, &["INFO", "server"]).unwrap();
    assert!(info.contains("redis_version:"), "{info}");
}

#[test]
fn redis_cli_reads_commands_from_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let t = Tumbler::start();
    let child = Command::new("redis-cli")
        .arg("-p")
        .arg(t.addr.port().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            tools::missing(&format!("redis-cli ({e})"));
            return;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"SET a 1\nINCR a\nOBJECT ENCODING a\nSELECT 1\nGET a\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "OK\n2\nint\nOK\n\n");
}

#[test]
fn debug_set_active_expire_pauses_background_expiry() {
    let t = Tumbler::start();
    let mut c = t.raw();
    assert_eq!(c.cmd_str(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    c.cmd(&["SET", "k", "v", "PX", "20"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Nobody touched the key and active expiry is off: it is still stored.
    assert_eq!(c.cmd_str(&["DBSIZE"]), ":1\r\n");
    assert_eq!(c.cmd_str(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), "+OK\r\n");
    let mut gone = false;
    for _ in 0..500 {
        if c.cmd_str(&["DBSIZE"]) == ":0\r\n" {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(gone, "active expiry resumed");
    let s = c.cmd_str(&["INFO", "stats"]);
    assert!(s.contains("expired_keys:1"), "{s}");
}
