//! SLOWLOG against a real redis-server: the same commands to both, then the logs compared
//! entry by entry. Ids, timestamps, durations and client ports differ between two servers
//! by nature, so those are checked for shape (consecutive ids, a recent timestamp, a
//! non-negative duration, this connection's `ip:port`); the logged arguments (with Redis'
//! trimming and redaction) and client names must be identical.

use redis::Value;
use tumbler_tests::diff_against_redis as run;
use tumbler_tests::{RedisServer, Tumbler};

fn connect(url: String) -> redis::Connection {
    redis::Client::open(url)
        .unwrap()
        .get_connection()
        .expect("connect")
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// The entries of SLOWLOG GET -1, checked for shape and reduced to (argv, whether this
/// connection logged it, client name).
fn entries(con: &mut redis::Connection) -> Vec<(Vec<String>, bool, String)> {
    let port: String = redis::cmd("CLIENT")
        .arg("INFO")
        .query::<String>(con)
        .unwrap();
    let addr = port
        .split(' ')
        .find_map(|f| f.strip_prefix("addr="))
        .unwrap()
        .to_string();
    let Value::Array(log) = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query::<Value>(con)
        .unwrap()
    else {
        panic!("SLOWLOG GET is not an array")
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut prev_id = None;
    let mut out = Vec::new();
    for e in &log {
        let Value::Array(f) = e else {
            panic!("entry {e:?}")
        };
        assert_eq!(f.len(), 6, "entry {f:?}");
        let (Value::Int(id), Value::Int(ts), Value::Int(us)) = (&f[0], &f[1], &f[2]) else {
            panic!("entry {f:?}")
        };
        if let Some(p) = prev_id {
            assert_eq!(*id, p - 1, "ids count down, newest first");
        }
        prev_id = Some(*id);
        assert!(
            (now - 60..=now + 1).contains(ts),
            "timestamp {ts} vs now {now}"
        );
        assert!(*us >= 0);
        // This connection's ip:port, or Redis' Lua client for commands a script ran.
        let peer = text(&f[4]);
        assert!(
            peer == addr || peer == "?:0",
            "peer {peer} (this client: {addr})"
        );
        let Value::Array(argv) = &f[3] else {
            panic!("argv {f:?}")
        };
        out.push((argv.iter().map(text).collect(), peer == addr, text(&f[5])));
    }
    out
}

/// Runs `setup` on a connection to each server, then compares the two slow logs; returns
/// tumbler's entries.
fn diff_logs(setup: impl Fn(&mut redis::Connection)) -> Vec<(Vec<String>, bool, String)> {
    let Some(redis) = RedisServer::start() else {
        return Vec::new();
    };
    let t = Tumbler::like(&redis, &[]);
    let mut logs = Vec::new();
    for url in [t.url(), format!("redis://{}/", redis.addr)] {
        let mut con = connect(url);
        setup(&mut con);
        logs.push(entries(&mut con));
    }
    assert_eq!(logs[0], logs[1], "tumbler (left) and redis-server (right)");
    logs.swap_remove(0)
}

fn set_threshold(con: &mut redis::Connection, usec: i64) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(usec)
        .query(con)
        .unwrap();
}

/// Runs `cmds` (one command line each) on both servers with every command logged, then
/// compares the logs.
fn diff_log(cmds: &[Vec<String>]) {
    diff_logs(|con| {
        set_threshold(con, 0);
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(con).unwrap();
        for c in cmds {
            let mut cmd = redis::cmd(&c[0]);
            for a in &c[1..] {
                cmd.arg(a);
            }
            let _ = cmd.query::<Value>(con);
        }
    });
}

fn line(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_string).collect()
}

#[test]
fn entries_record_commands_names_and_resets() {
    diff_log(&[
        line("SET k v"),
        line("CLIENT SETNAME logger"),
        line("GET k"),
        line("LPUSH l a b c"),
        line("GETSET k w"),
        line("INCRBYFLOAT f 1.5"),
        line("SPOP nosuch 3"),
        line("NOSUCHCOMMAND x"),
        line("SET onlykey"),
        line("GET k"),
    ]);
}

#[test]
fn long_argument_lists_and_long_strings_are_trimmed() {
    let mut many = line("SADD s");
    many.extend((0..40).map(|i| i.to_string()));
    let mut exact = line("RPUSH l");
    exact.extend((0..30).map(|i| i.to_string()));
    diff_log(&[
        many,
        exact,
        vec!["SET".into(), "big".into(), "x".repeat(129)],
        vec!["SET".into(), "edge".into(), "y".repeat(128)],
        vec!["SET".into(), "z".repeat(300), "v".into()],
    ]);
}

#[test]
fn secrets_are_redacted() {
    diff_log(&[
        line("ACL SETUSER someone on >secret +get"),
        line("CONFIG SET masterauth hidden"),
        line("CONFIG SET masteruser hidden hz 11"),
        line("AUTH nosuchuser wrong"),
        line("AUTH justapassword"),
        line("CONFIG SET hz 10"),
        line("MIGRATE 127.0.0.1 1 nosuchkey 9 5000 AUTH pw"),
        line("MIGRATE 127.0.0.1 1 nosuchkey 9 5000 COPY AUTH2 user pw"),
        line("MIGRATE 127.0.0.1 1 nosuchkey 9 5000 AUTH"),
    ]);
}

#[test]
fn exec_is_not_logged_but_what_it_ran_is() {
    diff_log(&[
        line("MULTI"),
        line("SET a 1"),
        line("INCR a"),
        line("EXEC"),
        line("EVAL return 1 0"),
        line("EVAL redis.call('set','x','y') 0"),
    ]);
}

#[test]
fn max_len_keeps_the_newest_and_is_applied_on_the_next_entry() {
    let mut cmds = vec![line("CONFIG SET slowlog-max-len 3")];
    cmds.extend((0..10).map(|i| line(&format!("SET k{i} v"))));
    diff_log(&cmds);
    run(r#"
        CONFIG SET slowlog-log-slower-than 0
        CONFIG SET slowlog-max-len 2
        SLOWLOG RESET
        PING
        PING
        PING
        SLOWLOG LEN
        CONFIG SET slowlog-max-len 10
        SLOWLOG LEN
        CONFIG SET slowlog-log-slower-than -1
        PING
        SLOWLOG LEN
        SLOWLOG RESET
        SLOWLOG LEN
        CONFIG SET slowlog-log-slower-than 100000000
        PING
        SLOWLOG LEN
    "#);
}

#[test]
fn subcommands_arity_and_errors() {
    run(r#"
        CONFIG SET slowlog-log-slower-than -1
        SLOWLOG RESET
        SLOWLOG GET
        SLOWLOG GET 0
        SLOWLOG GET -1
        SLOWLOG GET -2
        SLOWLOG GET abc
        SLOWLOG GET 1.5
        SLOWLOG GET 99999999999999999999
        SLOWLOG GET 1 2
        SLOWLOG LEN
        SLOWLOG LEN x
        SLOWLOG RESET x
        SLOWLOG HELP
        SLOWLOG help
        SLOWLOG NOSUCH
        SLOWLOG
        CONFIG GET slowlog-log-slower-than
        CONFIG GET slowlog-max-len
        CONFIG SET slowlog-max-len -1
        CONFIG SET slowlog-log-slower-than -2
    "#);
}

#[test]
fn blocked_command_is_logged_when_served() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let mut logs = Vec::new();
    for url in [t.url(), format!("redis://{}/", redis.addr)] {
        let mut con = connect(url.clone());
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(0)
            .query(&mut con)
            .unwrap();
        let waiter = std::thread::spawn(move || {
            let mut c = connect(url);
            let v: Value = redis::cmd("BLPOP").arg("q").arg(10).query(&mut c).unwrap();
            v
        });
        // Until the waiter is blocked (bounded: 10 s).
        for _ in 0..1000 {
            let info: String = redis::cmd("INFO").arg("clients").query(&mut con).unwrap();
            if info.contains("blocked_clients:1") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut con).unwrap();
        let _: i64 = redis::cmd("LPUSH")
            .arg("q")
            .arg("x")
            .query(&mut con)
            .unwrap();
        waiter.join().unwrap();
        let Value::Array(log) = redis::cmd("SLOWLOG").arg("GET").query(&mut con).unwrap() else {
            panic!()
        };
        let argvs: Vec<String> = log
            .iter()
            .map(|e| match e {
                Value::Array(f) => match &f[3] {
                    Value::Array(a) => a.iter().map(text).collect::<Vec<_>>().join(" "),
                    _ => panic!(),
                },
                _ => panic!(),
            })
            .collect();
        logs.push(argvs);
    }
    assert_eq!(logs[0], vec!["BLPOP q 10", "LPUSH q x", "SLOWLOG RESET"]);
    assert_eq!(logs[0], logs[1]);
}

/// With a positive threshold, a command a script runs is logged (as the Lua client `?:0`)
/// when it alone takes longer than the threshold, as Redis' scriptCall runs it with
/// CMD_CALL_SLOWLOG; the script's fast commands are not.
#[test]
fn a_slow_command_inside_a_script_is_logged_under_a_positive_threshold() {
    let log = diff_logs(|con| {
        set_threshold(con, -1);
        let _: () = redis::cmd("EVAL")
            .arg("for i = 1, 200000 do redis.call('sadd', 's', i) end")
            .arg(0)
            .query(con)
            .unwrap();
        // A 200,000-member SUNIONSTORE takes tens of ms on either server; SET a few µs.
        set_threshold(con, 2000);
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(con).unwrap();
        let _: Value = redis::cmd("EVAL")
            .arg("redis.call('set', 'x', 'y'); return redis.call('sunionstore', 'd', 's')")
            .arg(0)
            .query(con)
            .unwrap();
    });
    assert!(
        log.is_empty() // no reference server outside CI
            || log
                .iter()
                .any(|(argv, mine, _)| !mine && argv == &["sunionstore", "d", "s"]),
        "{log:?}"
    );
}
