//! INFO scriptstats and the script profiler (`lua-profiler`, TUMBLER.PROFILE), over TCP with
//! the `redis` crate and raw RESP: exact counts on both script paths (Lua VM and native
//! plans), CONFIG RESETSTAT and SCRIPT FLUSH, `/metrics`, the profiler's per-line table, and
//! SCRIPT KILL of a hostile script while profiling. docs/profiling.md.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use redis::{Connection, Value};
use tumbler::embed::TestServer;
use tumbler_tests::{Raw, Tumbler};

fn connect(t: &Tumbler) -> Connection {
    let c = redis::Client::open(t.url()).unwrap();
    let con = c.get_connection().unwrap();
    con.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    con
}

fn q(con: &mut Connection, args: &[&str]) -> redis::RedisResult<Value> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con)
}

fn info(con: &mut Connection, section: &str) -> String {
    redis::cmd("INFO").arg(section).query(con).unwrap()
}

/// `INFO scriptstats` as sha -> field -> value.
fn scriptstats(con: &mut Connection) -> HashMap<String, HashMap<String, String>> {
    let text = info(con, "scriptstats");
    assert!(text.starts_with("# Scriptstats\r\n"), "{text}");
    text.lines()
        .filter_map(|l| l.strip_prefix("scriptstat_"))
        .map(|l| {
            let (sha, fields) = l.split_once(':').unwrap();
            let f = fields
                .split(',')
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap();
                    (k.to_string(), v.to_string())
                })
                .collect();
            (sha.to_string(), f)
        })
        .collect()
}

fn int(f: &HashMap<String, String>, k: &str) -> u64 {
    f[k].parse().unwrap_or_else(|_| panic!("{k}={}", f[k]))
}

fn load(con: &mut Connection, body: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(body)
        .query(con)
        .unwrap()
}

/// Two redis.call and a redis.pcall whose error the script catches: never a failed run.
const THREE_CALLS: &str = "redis.call('set', KEYS[1], ARGV[1])\n\
    local e = redis.pcall('hget', KEYS[1], 'f')\n\
    return redis.call('get', KEYS[1])";
/// A redis.call that raises: a failed run.
const CALL_FAILS: &str = "redis.call('set', KEYS[1], 'x')\nreturn redis.call('incr', KEYS[1])";
/// A runtime error after one call.
const RUNTIME_ERROR: &str = "local v = redis.call('get', KEYS[1])\nreturn v + {}";

#[test]
fn counts_exactly_the_runs_and_redis_calls_on_both_paths() {
    for plans in ["yes", "no"] {
        let t = Tumbler::start_with(&[("lua-native-plans", plans)]);
        let mut con = connect(&t);
        let sha = load(&mut con, THREE_CALLS);
        let native: String = redis::cmd("SCRIPT")
            .arg("PLAN")
            .arg(&sha)
            .query(&mut con)
            .unwrap();
        assert_eq!(native, "native", "the script compiles to a plan");
        for i in 0..3 {
            let v: String = redis::cmd("EVALSHA")
                .arg(&sha)
                .arg(1)
                .arg("k")
                .arg(i)
                .query(&mut con)
                .unwrap();
            assert_eq!(v, i.to_string());
        }
        // EVAL of the same body counts under the same SHA1; so do the _RO forms.
        let _: String = redis::cmd("EVAL")
            .arg(THREE_CALLS)
            .arg(1)
            .arg("k")
            .arg("v")
            .query(&mut con)
            .unwrap();
        let ro = "return redis.call('get', KEYS[1])";
        let ro_sha = load(&mut con, ro);
        let _: String = redis::cmd("EVALSHA_RO")
            .arg(&ro_sha)
            .arg(1)
            .arg("k")
            .query(&mut con)
            .unwrap();
        let _: String = redis::cmd("EVAL_RO")
            .arg(ro)
            .arg(1)
            .arg("k")
            .query(&mut con)
            .unwrap();
        for _ in 0..2 {
            let e = q(&mut con, &["EVAL", CALL_FAILS, "1", "n"]).unwrap_err();
            assert!(e.to_string().contains("not an integer"), "{e}");
            let e = q(&mut con, &["EVAL", RUNTIME_ERROR, "1", "k"]).unwrap_err();
            assert!(
                e.to_string().contains("attempt to perform arithmetic"),
                "{e}"
            );
        }
        // Refused before running: not a run of any script.
        assert!(q(&mut con, &["EVALSHA", &"f".repeat(40), "0"]).is_err());
        assert!(q(&mut con, &["EVALSHA", &sha, "-1"]).is_err());

        let stats = scriptstats(&mut con);
        assert_eq!(stats.len(), 4, "{stats:?}");
        let s = &stats[&sha];
        assert_eq!(int(s, "calls"), 4, "plans {plans}: {s:?}");
        assert_eq!(int(s, "redis_calls"), 12);
        assert_eq!(int(s, "failed_calls"), 0);
        let r = &stats[&ro_sha];
        assert_eq!((int(r, "calls"), int(r, "redis_calls")), (2, 2));
        let fails = &stats[&sha1(CALL_FAILS)];
        assert_eq!(int(fails, "calls"), 2);
        assert_eq!(int(fails, "redis_calls"), 4);
        assert_eq!(int(fails, "failed_calls"), 2);
        let rt = &stats[&sha1(RUNTIME_ERROR)];
        assert_eq!(
            (
                int(rt, "calls"),
                int(rt, "redis_calls"),
                int(rt, "failed_calls")
            ),
            (2, 2, 2)
        );
        // Times: usec_per_call is usec / calls (to the rounding of whole microseconds),
        // and the percentiles are ordered.
        let per: f64 = s["usec_per_call"].parse().unwrap();
        let usec = int(s, "usec") as f64;
        assert!((per * 4.0 - usec).abs() <= 4.0, "{s:?}");
        let (p50, p99): (f64, f64) = (s["p50"].parse().unwrap(), s["p99"].parse().unwrap());
        assert!(p50 > 0.0 && p50 <= p99, "{s:?}");
        // Which path ran: all runs on plans when they are on (every script here has one).
        for body in [CALL_FAILS, RUNTIME_ERROR, ro] {
            let p: String = redis::cmd("SCRIPT")
                .arg("PLAN")
                .arg(sha1(body))
                .query(&mut con)
                .unwrap();
            assert_eq!(p, "native", "{body}");
        }
        let native_runs = info(&mut con, "memory")
            .lines()
            .find_map(|l| l.strip_prefix("native_plan_runs:").map(str::to_string))
            .unwrap();
        let expect = if plans == "yes" { "10" } else { "0" };
        assert_eq!(native_runs.trim(), expect, "which path ran");
    }
}

fn sha1(body: &str) -> String {
    String::from_utf8(tumbler::scripting::sha1_hex(body.as_bytes()).to_vec()).unwrap()
}

#[test]
fn shown_only_when_asked_reset_by_resetstat_dropped_by_flush() {
    let t = Tumbler::start();
    let mut con = connect(&t);
    let sha = load(&mut con, "return redis.call('ping')");
    for _ in 0..5 {
        let _: String = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(0)
            .query(&mut con)
            .unwrap();
    }
    // Redis' own INFO outputs stay Redis': the section is Tumbler's.
    for plain in ["default", "all", "server"] {
        let text = info(&mut con, plain);
        assert!(
            !text.contains("# Scriptstats") && !text.contains("scriptstat_"),
            "INFO {plain}"
        );
    }
    let everything = info(&mut con, "everything");
    assert!(everything.contains("\r\n# Scriptstats\r\n"), "{everything}");
    assert!(everything.contains(&format!("scriptstat_{sha}:calls=5,")));
    let mut raw = t.raw();
    let exact = raw.cmd_str(&["INFO", "SCRIPTSTATS"]);
    assert!(
        exact.contains(&format!(
            "\r\n# Scriptstats\r\nscriptstat_{sha}:calls=5,usec="
        )),
        "{exact}"
    );
    assert!(
        exact.contains(",redis_calls=5,failed_calls=0\r\n"),
        "{exact}"
    );

    assert_eq!(raw.cmd_str(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
    let s = &scriptstats(&mut con)[&sha];
    let fields: Vec<&str> = ["calls", "usec", "redis_calls", "failed_calls", "p50", "p99"]
        .iter()
        .map(|k| s[*k].as_str())
        .collect();
    assert_eq!(fields, ["0", "0", "0", "0", "0.000", "0.000"]);
    let _: String = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(int(&scriptstats(&mut con)[&sha], "calls"), 1);

    assert_eq!(raw.cmd_str(&["SCRIPT", "FLUSH"]), "+OK\r\n");
    assert!(scriptstats(&mut con).is_empty());
    assert_eq!(info(&mut con, "scriptstats"), "# Scriptstats\r\n");
}

#[test]
fn metrics_endpoint_exports_the_same_figures() {
    let srv = TestServer::builder()
        .config("metrics-port", "0")
        .spawn()
        .expect("start tumbler");
    let c = redis::Client::open(srv.url()).unwrap();
    let mut con = c.get_connection().unwrap();
    let sha = load(&mut con, CALL_FAILS);
    for _ in 0..3 {
        assert!(q(&mut con, &["EVALSHA", &sha, "1", "k"]).is_err());
    }
    let mut s = std::net::TcpStream::connect(srv.metrics_addr().unwrap()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    for line in [
        format!("tumbler_script_calls_total{{sha=\"{sha}\"}} 3\n"),
        format!("tumbler_script_redis_calls_total{{sha=\"{sha}\"}} 6\n"),
        format!("tumbler_script_failed_calls_total{{sha=\"{sha}\"}} 3\n"),
        format!("tumbler_script_latency_seconds{{sha=\"{sha}\",quantile=\"0.99\"}} "),
        format!("tumbler_script_duration_seconds_total{{sha=\"{sha}\"}} "),
    ] {
        assert!(body.contains(&line), "{line} in\n{body}");
    }
}

/// A RESP2 map (flat name, value array) as name -> value.
fn map(v: &Value) -> HashMap<String, Value> {
    let Value::Array(items) = v else {
        panic!("not a map: {v:?}")
    };
    items
        .chunks(2)
        .map(|kv| match &kv[0] {
            Value::BulkString(k) => (String::from_utf8(k.clone()).unwrap(), kv[1].clone()),
            k => panic!("key {k:?}"),
        })
        .collect()
}

fn vint(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        v => panic!("not an integer: {v:?}"),
    }
}

fn vstr(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
        v => panic!("not a bulk string: {v:?}"),
    }
}

/// `TUMBLER.PROFILE GET [sha]` as a list of entries.
fn profile(con: &mut Connection, sha: Option<&str>) -> Vec<HashMap<String, Value>> {
    let mut c = redis::cmd("TUMBLER.PROFILE");
    c.arg("GET");
    if let Some(s) = sha {
        c.arg(s);
    }
    match c.query::<Value>(con).unwrap() {
        Value::Array(v) => v.iter().map(map).collect(),
        v => panic!("{v:?}"),
    }
}

fn lines(entry: &HashMap<String, Value>) -> Vec<HashMap<String, Value>> {
    match &entry["lines"] {
        Value::Array(v) => v.iter().map(map).collect(),
        v => panic!("{v:?}"),
    }
}

/// Line 3 is a busy loop; line 4 calls a command on a long list.
const SLOW_LINE: &str = "local n = 0\n\
    redis.call('set', 'small', '1')\n\
    for i = 1, 30000 do n = n + i end\n\
    local l = redis.call('lrange', KEYS[1], 0, -1)\n\
    return n + #l";

#[test]
fn profiler_puts_the_slow_line_on_top_and_times_commands() {
    let t = Tumbler::start();
    let mut con = connect(&t);
    let sha = load(&mut con, SLOW_LINE);
    // Off by default: runs leave no profile.
    let cfg: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("lua-profiler")
        .query(&mut con)
        .unwrap();
    assert_eq!(cfg, ["lua-profiler", "no"]);
    let _: i64 = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(1)
        .arg("list")
        .query(&mut con)
        .unwrap();
    assert!(profile(&mut con, None).is_empty());

    let items: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    let _: i64 = redis::cmd("RPUSH")
        .arg("list")
        .arg(&items)
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("lua-profiler")
        .arg("yes")
        .query(&mut con)
        .unwrap();
    const RUNS: i64 = 5;
    for _ in 0..RUNS {
        let v: i64 = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg("list")
            .query(&mut con)
            .unwrap();
        assert_eq!(v, 30000 * 30001 / 2 + 2000);
    }
    let all = profile(&mut con, None);
    assert_eq!(all.len(), 1, "one script profiled");
    let e = &all[0];
    assert_eq!(vstr(&e["sha"]), sha);
    assert_eq!(vstr(&e["path"]), "lua");
    assert_eq!(vint(&e["calls"]), RUNS);
    let (usec, interp, cmd) = (
        vint(&e["usec"]),
        vint(&e["interpreter_usec"]),
        vint(&e["command_usec"]),
    );
    assert_eq!(usec, interp + cmd);
    assert!(cmd > 0 && interp > cmd, "the loop dominates: {e:?}");
    let ls = lines(e);
    // The busy loop's line is on top; every line ran, each once per run except the loop.
    assert_eq!(vint(&ls[0]["line"]), 3, "{ls:?}");
    assert_eq!(vstr(&ls[0]["source"]), "for i = 1, 30000 do n = n + i end");
    assert_eq!(vint(&ls[0]["command_usec"]), 0);
    let by_line: HashMap<i64, &HashMap<String, Value>> =
        ls.iter().map(|l| (vint(&l["line"]), l)).collect();
    assert_eq!(by_line.len(), 5);
    for n in [1, 2, 4, 5] {
        assert_eq!(vint(&by_line[&n]["hits"]), RUNS, "line {n}");
    }
    assert!(vint(&by_line[&3]["hits"]) > 30000 * RUNS);
    // Command time is on the lines that call commands, and is part of their time.
    let lrange = by_line[&4];
    assert_eq!(
        vstr(&lrange["source"]),
        "local l = redis.call('lrange', KEYS[1], 0, -1)"
    );
    assert!(vint(&lrange["command_usec"]) > 0, "{lrange:?}");
    assert!(vint(&lrange["usec"]) >= vint(&lrange["command_usec"]));
    assert_eq!(vint(&by_line[&1]["command_usec"]), 0);
    assert_eq!(vint(&by_line[&5]["command_usec"]), 0);
    let sum_cmd: i64 = ls.iter().map(|l| vint(&l["command_usec"])).sum();
    assert!(
        (sum_cmd - cmd).abs() <= 5,
        "lines add up to the script: {sum_cmd} vs {cmd}"
    );

    // By SHA, the same entry; an unknown SHA is NOSCRIPT.
    assert_eq!(profile(&mut con, Some(&sha.to_uppercase())).len(), 1);
    let e = q(&mut con, &["TUMBLER.PROFILE", "GET", &"0".repeat(40)]).unwrap_err();
    assert_eq!(e.kind(), redis::ErrorKind::NoScriptError, "{e}");

    // A slow command: its line is on top, almost all of it command time.
    let slow_cmd = "local x = 1\nlocal l = redis.call('lrange', KEYS[1], 0, -1)\nreturn #l + x";
    let slow_sha = load(&mut con, slow_cmd);
    for _ in 0..RUNS {
        let _: i64 = redis::cmd("EVALSHA")
            .arg(&slow_sha)
            .arg(1)
            .arg("list")
            .query(&mut con)
            .unwrap();
    }
    let e = &profile(&mut con, Some(&slow_sha))[0];
    let top = &lines(e)[0];
    assert_eq!(vint(&top["line"]), 2, "{e:?}");
    assert!(vint(&top["command_usec"]) > 0);

    // Switched off, runs no longer add; the profiles stay until RESET.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("lua-profiler")
        .arg("no")
        .query(&mut con)
        .unwrap();
    let _: i64 = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(1)
        .arg("list")
        .query(&mut con)
        .unwrap();
    assert_eq!(vint(&profile(&mut con, Some(&sha))[0]["calls"]), RUNS);
    let mut raw = t.raw();
    assert_eq!(raw.cmd_str(&["TUMBLER.PROFILE", "RESET"]), "+OK\r\n");
    assert!(profile(&mut con, None).is_empty());
    assert!(raw
        .cmd_str(&["TUMBLER.PROFILE", "NOPE"])
        .starts_with("-ERR unknown subcommand 'NOPE'. Try TUMBLER.PROFILE HELP."));
    assert!(raw
        .cmd_str(&["TUMBLER.PROFILE", "HELP"])
        .starts_with("*8\r\n+TUMBLER.PROFILE <subcommand>"));
    // SCRIPT FLUSH makes a new Lua state: it gets the line hook too.
    assert_eq!(
        raw.cmd_str(&["CONFIG", "SET", "lua-profiler", "yes"]),
        "+OK\r\n"
    );
    assert_eq!(raw.cmd_str(&["SCRIPT", "FLUSH"]), "+OK\r\n");
    assert!(
        profile(&mut con, None).is_empty(),
        "dropped with the scripts"
    );
    let looped = "local n = 0\nfor i = 1, 10 do n = n + i end\nreturn n";
    assert_eq!(raw.cmd_str(&["EVAL", looped, "0"]), ":55\r\n");
    let e = &profile(&mut con, Some(&sha1(looped)))[0];
    assert_eq!(vstr(&e["path"]), "lua");
    let hits: Vec<(i64, i64)> = lines(e)
        .iter()
        .map(|l| (vint(&l["line"]), vint(&l["hits"])))
        .collect();
    assert!(hits.contains(&(1, 1)) && hits.contains(&(3, 1)), "{hits:?}");
    assert!(hits.iter().any(|&(l, h)| l == 2 && h >= 10), "{hits:?}");
    // Not from scripts.
    assert!(raw
        .cmd_str(&["EVAL", "return redis.call('tumbler.profile', 'get')", "0"])
        .starts_with("-ERR This Redis command is not allowed from script"));
}

/// RESP3: entries and lines are maps.
#[test]
fn profile_reply_is_a_map_in_resp3() {
    let t = Tumbler::start_with(&[("lua-profiler", "yes"), ("lua-native-plans", "no")]);
    let mut raw = t.raw();
    assert_eq!(raw.cmd_str(&["EVAL", "return 1", "0"]), ":1\r\n");
    raw.cmd(&["HELLO", "3"]);
    let r = raw.cmd_str(&["TUMBLER.PROFILE", "GET"]);
    assert!(
        r.starts_with(
            "*1\r\n%7\r\n$3\r\nsha\r\n$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n$4\r\npath\r\n$3\r\nlua\r\n$5\r\ncalls\r\n:1\r\n"
        ),
        "{r}"
    );
    assert!(
        r.contains("$5\r\nlines\r\n*1\r\n%5\r\n$4\r\nline\r\n:1\r\n$4\r\nhits\r\n:1\r\n"),
        "{r}"
    );
    assert!(r.ends_with("$6\r\nsource\r\n$8\r\nreturn 1\r\n"), "{r}");
}

/// Native plans report themselves as such, with a line per redis.call.
#[test]
fn native_plan_runs_are_profiled_as_native() {
    let t = Tumbler::start_with(&[("lua-profiler", "yes")]);
    let mut con = connect(&t);
    let body = "local v = redis.call('get', KEYS[1])\n\
        if v then\n  return redis.call('incr', KEYS[1])\nend\n\
        return redis.call('set', KEYS[1], '1')";
    let sha = load(&mut con, body);
    let plan: String = redis::cmd("SCRIPT")
        .arg("PLAN")
        .arg(&sha)
        .query(&mut con)
        .unwrap();
    assert_eq!(plan, "native");
    for _ in 0..4 {
        let _: Value = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg("c")
            .query(&mut con)
            .unwrap();
    }
    let all = profile(&mut con, Some(&sha));
    assert_eq!(all.len(), 1);
    let e = &all[0];
    assert_eq!(vstr(&e["path"]), "native");
    assert_eq!(vint(&e["calls"]), 4);
    assert_eq!(
        vint(&e["usec"]),
        vint(&e["interpreter_usec"]) + vint(&e["command_usec"])
    );
    let by_line: HashMap<i64, (i64, String)> = lines(e)
        .iter()
        .map(|l| (vint(&l["line"]), (vint(&l["hits"]), vstr(&l["source"]))))
        .collect();
    assert_eq!(by_line[&1].0, 4, "get every run");
    assert_eq!(
        by_line[&3],
        (3, "  return redis.call('incr', KEYS[1])".into())
    );
    assert_eq!(by_line[&5].0, 1, "set on the first run");
    assert_eq!(by_line.len(), 3, "only lines with a call: {by_line:?}");

    // The same script on the Lua path gets its own entry.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("lua-native-plans")
        .arg("no")
        .query(&mut con)
        .unwrap();
    let _: i64 = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(1)
        .arg("c")
        .query(&mut con)
        .unwrap();
    let paths: Vec<String> = profile(&mut con, Some(&sha))
        .iter()
        .map(|e| vstr(&e["path"]))
        .collect();
    assert_eq!(paths.len(), 2);
    assert!(paths.contains(&"lua".to_string()) && paths.contains(&"native".to_string()));
    let s = &scriptstats(&mut con)[&sha];
    assert_eq!((int(s, "calls"), int(s, "redis_calls")), (5, 10));
}

fn poll_until(mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "condition not reached in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Hostile scripts with the profiler on: an endless loop still gets BUSY for others and
/// dies by SCRIPT KILL (the instruction-count hook shares the slot with the line hook).
#[test]
fn script_kill_works_while_profiling() {
    let t = Tumbler::start_with(&[("busy-reply-threshold", "100"), ("lua-profiler", "yes")]);
    let mut c = t.raw();
    let addr = t.addr;
    for script in [
        "while true do end",
        "local n = 0\nwhile true do\n  n = n + 1\nend",
        "while true do pcall(function() while true do end end) end",
    ] {
        let body = script.to_string();
        let runner = std::thread::spawn(move || {
            let mut r = Raw::connect(addr);
            r.cmd_str(&["EVAL", &body, "0"])
        });
        poll_until(|| c.cmd_str(&["GET", "x"]).starts_with("-BUSY"));
        assert_eq!(c.cmd_str(&["SCRIPT", "KILL"]), "+OK\r\n");
        let reply = runner.join().unwrap();
        assert!(
            reply.starts_with("-ERR Script killed by user with SCRIPT KILL..."),
            "{reply}"
        );
        assert_eq!(c.cmd_str(&["SET", "x", "1"]), "+OK\r\n");
    }
    let mut con = redis::Client::open(t.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let sha = sha1("local n = 0\nwhile true do\n  n = n + 1\nend");
    let s = &scriptstats(&mut con)[&sha];
    assert_eq!((int(s, "calls"), int(s, "failed_calls")), (1, 1));
    let e = &profile(&mut con, Some(&sha))[0];
    let ls = lines(e);
    let top = vint(&ls[0]["line"]);
    assert!(top == 2 || top == 3, "the loop's lines are on top: {ls:?}");
    assert!(vint(&ls[0]["hits"]) > 1000);
}

/// Runs inside MULTI/EXEC count like any other; FCALL (functions have no SHA1 and are not
/// in the script cache) adds no line.
#[test]
fn transactions_count_and_functions_do_not() {
    let t = Tumbler::start();
    let mut con = connect(&t);
    let sha = load(&mut con, "return redis.call('incr', KEYS[1])");
    let (a, b): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("EVALSHA")
        .arg(&sha)
        .arg(1)
        .arg("n")
        .cmd("EVALSHA")
        .arg(&sha)
        .arg(1)
        .arg("n")
        .query(&mut con)
        .unwrap();
    assert_eq!((a, b), (1, 2));
    let lib = "#!lua name=lib\nredis.register_function('f', function(keys) return redis.call('incr', keys[1]) end)";
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib)
        .query(&mut con)
        .unwrap();
    let v: i64 = redis::cmd("FCALL")
        .arg("f")
        .arg(1)
        .arg("n")
        .query(&mut con)
        .unwrap();
    assert_eq!(v, 3);
    let stats = scriptstats(&mut con);
    assert_eq!(stats.len(), 1, "{stats:?}");
    assert_eq!(
        (int(&stats[&sha], "calls"), int(&stats[&sha], "redis_calls")),
        (2, 2)
    );
}
