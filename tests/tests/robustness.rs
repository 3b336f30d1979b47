//! Hostile input that used to take the whole server down or desynchronise a connection:
//! nesting 100,000 and 1,000,000 levels deep through every recursive path (cjson, cmsgpack,
//! script replies, RESP requests, MULTI/EXEC), with the user-raisable limits at their
//! maximum, and reply forging with CR/LF in status and error replies. Each case gets
//! Redis' reply (compared byte for byte with redis-server where it runs), the server stays
//! up, and another connection and its keys are untouched.

use tumbler_tests::{diff_against_redis, diff_against_redis_resp3, Raw, RedisServer, Tumbler};

const LEVELS: [usize; 2] = [100_000, 1_000_000];

/// Sends `args` to tumbler (and to redis-server when there), returns tumbler's reply after
/// asserting both agree, then checks that another connection still works and its key
/// survived.
fn check(t: &Tumbler, redis: &Option<RedisServer>, other: &mut Raw, args: &[&str]) -> String {
    let got = t.raw().cmd_str(args);
    if let Some(r) = redis {
        let want = r.raw().cmd_str(args);
        assert_eq!(
            got, want,
            "tumbler (left) and redis-server (right) disagree"
        );
    }
    assert_eq!(other.cmd_str(&["PING"]), "+PONG\r\n");
    assert_eq!(other.cmd_str(&["GET", "survivor"]), "$5\r\nalive\r\n");
    got
}

fn setup() -> (Tumbler, Option<RedisServer>, Raw) {
    let t = Tumbler::start_with(&[("personality", "redis-7.0")]);
    let mut other = t.raw();
    assert_eq!(other.cmd_str(&["SET", "survivor", "alive"]), "+OK\r\n");
    (t, RedisServer::start(), other)
}

/// Writes what the server takes before it closes the connection (it may answer a protocol
/// error and close while the rest is still being sent).
fn send_lossy(c: &mut Raw, b: &[u8]) {
    use std::io::Write;
    // The server answers the first commands while the rest is still being sent, and this
    // client reads nothing until it is done. Tumbler reads on while its replies wait (up to
    // 256 MiB of them) and redis-server without bound, but a closed connection or a
    // stalled peer must not hang the test: stop sending then; the first reply is all the
    // test reads.
    c.stream
        .set_write_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    for chunk in b.chunks(64 * 1024) {
        if c.stream.write_all(chunk).is_err() {
            return;
        }
    }
}

fn tail(s: &str) -> &str {
    &s[s.len().saturating_sub(200)..]
}

/// The crash of the issue: cmsgpack.unpack of deeply nested arrays and maps built with
/// string.rep aborted the process with a stack overflow.
#[test]
fn deep_msgpack_unpack_is_an_error_not_a_crash() {
    let (t, redis, mut other) = setup();
    for n in LEVELS {
        let arrays =
            format!("local t = cmsgpack.unpack(string.rep('\\145', {n}) .. '\\1') return type(t)");
        let r = check(&t, &redis, &mut other, &["EVAL", &arrays, "0"]);
        assert!(
            r.contains("stack overflow (in function mp_decode_to_lua_array)"),
            "{r}"
        );
        let maps = format!(
            "local t = cmsgpack.unpack(string.rep('\\129\\1', {n}) .. '\\1') return type(t)"
        );
        let r = check(&t, &redis, &mut other, &["EVAL", &maps, "0"]);
        assert!(r.contains("stack overflow (too many return values"), "{r}");
        for f in ["unpack_one(s)", "unpack_limit(s, 1)"] {
            let s = format!("local s = string.rep('\\145', {n}) .. '\\1' return cmsgpack.{f}");
            let r = check(&t, &redis, &mut other, &["EVAL", &s, "0"]);
            assert!(r.contains("mp_decode_to_lua_array"), "{r}");
        }
    }
    // Many top-level values: the result count is bounded the same way.
    let many = "return #{cmsgpack.unpack(string.rep('\\1', 100000))}";
    let r = check(&t, &redis, &mut other, &["EVAL", many, "0"]);
    assert!(r.contains("too many return values at once"), "{r}");
    // Just under the limits still decodes.
    let ok = "local t = cmsgpack.unpack(string.rep('\\145', 3999) .. '\\1') \
              local d = 0 while type(t) == 'table' do d = d + 1 t = t[1] end return d";
    assert_eq!(
        check(&t, &redis, &mut other, &["EVAL", ok, "0"]),
        ":3999\r\n"
    );
}

/// cjson with decode_max_depth / encode_max_depth at their maximum (2^31-1): Lua's stack
/// limit ends the nesting with lua-cjson's errors, as in Redis.
#[test]
fn deep_cjson_at_the_maximum_depth_settings_is_an_error_not_a_crash() {
    let (t, redis, mut other) = setup();
    for max in [
        "",
        "cjson.decode_max_depth(2147483647) cjson.encode_max_depth(2147483647) ",
    ] {
        for n in LEVELS {
            let arr =
                format!("{max}return #cjson.decode(string.rep('[', {n}) .. string.rep(']', {n}))");
            let r = check(&t, &redis, &mut other, &["EVAL", &arr, "0"]);
            assert!(r.contains("Found too many nested data structures"), "{r}");
            let obj = format!(
                "{max}return #cjson.decode(string.rep('{{\"a\":', {n}) .. '1' .. string.rep('}}', {n}))"
            );
            let r = check(&t, &redis, &mut other, &["EVAL", &obj, "0"]);
            assert!(r.contains("Found too many nested data structures"), "{r}");
            for (field, name) in [("1", "arrays"), ("'a'", "objects")] {
                let enc = format!(
                    "{max}local t = {{}} local c = t for i = 1, {n} do local x = {{}} \
                     c[{field}] = x c = x end return #cjson.encode(t)"
                );
                let r = check(&t, &redis, &mut other, &["EVAL", &enc, "0"]);
                assert!(
                    r.contains("Cannot serialise, excessive nesting"),
                    "{name}: {r}"
                );
            }
        }
    }
    // The settings persist in the VM, reject values out of range, and shallow values
    // still round-trip.
    let r = check(
        &t,
        &redis,
        &mut other,
        &["EVAL", "return cjson.decode_max_depth(0)", "0"],
    );
    assert!(
        r.contains("expected integer between 1 and 2147483647"),
        "{r}"
    );
    let rt = "return cjson.encode(cjson.decode('{\"a\":[1,2,{\"b\":null}]}'))";
    let r = check(&t, &redis, &mut other, &["EVAL", rt, "0"]);
    assert_eq!(r, "$22\r\n{\"a\":[1,2,{\"b\":null}]}\r\n");
}

/// struct.unpack with a huge result count: Lua's stack limit ends it with Redis' error.
#[test]
fn struct_unpack_result_count_is_bounded() {
    let (t, redis, mut other) = setup();
    for n in LEVELS {
        let s = format!("return #{{struct.unpack(string.rep('b', {n}), string.rep('\\0', {n}))}}");
        let r = check(&t, &redis, &mut other, &["EVAL", &s, "0"]);
        assert!(r.contains("stack overflow (too many results)"), "{r}");
    }
    let s = "return #{struct.unpack(string.rep('b', 7000), string.rep('\\0', 7000))}";
    assert_eq!(
        check(&t, &redis, &mut other, &["EVAL", s, "0"]),
        ":7001\r\n"
    );
}

/// A script returning a deeply nested table: the conversion to a reply stops where Redis'
/// does ("reached lua stack limit" in place of the element), also inside MULTI/EXEC.
#[test]
fn deep_script_replies_are_bounded_like_redis() {
    let (t, redis, mut other) = setup();
    for n in LEVELS {
        for link in ["c[1] = x", "c.map = {a = x}"] {
            let script = format!(
                "local t = {{}} local c = t for i = 1, {n} do local x = {{}} {link} c = x end \
                 return t"
            );
            let r = check(&t, &redis, &mut other, &["EVAL", &script, "0"]);
            assert!(
                r.ends_with("-ERR reached lua stack limit\r\n"),
                "{}",
                tail(&r)
            );
        }
        // Inside MULTI/EXEC the nested reply is one element of EXEC's array.
        let script = format!(
            "local t = {{}} local c = t for i = 1, {n} do local x = {{}} c[1] = x c = x end \
             return t"
        );
        let mut c = t.raw();
        assert_eq!(c.cmd_str(&["MULTI"]), "+OK\r\n");
        assert_eq!(c.cmd_str(&["EVAL", &script, "0"]), "+QUEUED\r\n");
        assert_eq!(c.cmd_str(&["PING"]), "+QUEUED\r\n");
        let r = c.cmd_str(&["EXEC"]);
        assert!(r.starts_with("*2\r\n*1\r\n*1\r\n"), "{}", &r[..40]);
        assert_eq!(c.cmd_str(&["PING"]), "+PONG\r\n");
        assert_eq!(other.cmd_str(&["GET", "survivor"]), "$5\r\nalive\r\n");
    }
    // A self-referencing table ends the same way instead of looping.
    let r = check(
        &t,
        &redis,
        &mut other,
        &["EVAL", "local t = {} t[1] = t return t", "0"],
    );
    assert!(
        r.ends_with("-ERR reached lua stack limit\r\n"),
        "{}",
        tail(&r)
    );
}

/// Requests cannot nest: only bulk strings are accepted inside a multibulk, so a million
/// nested aggregate headers are one protocol error (multibulk) or a stream of inline
/// commands (other types), never recursion.
#[test]
fn deeply_nested_request_aggregates_are_protocol_errors() {
    let (t, redis, mut other) = setup();
    for n in LEVELS {
        let frame = "*1\r\n".repeat(n);
        let mut c = t.raw();
        send_lossy(&mut c, frame.as_bytes());
        let got = c.read_reply();
        assert_eq!(&got[..], b"-ERR Protocol error: expected '$', got '*'\r\n");
        assert!(c.is_closed());
        if let Some(r) = &redis {
            let mut rc = r.raw();
            send_lossy(&mut rc, frame.as_bytes());
            assert_eq!(rc.read_reply(), got);
        }
        for head in ["%1\r\n", "~1\r\n", ">1\r\n"] {
            let mut c = t.raw();
            send_lossy(&mut c, head.repeat(n).as_bytes());
            // Each line is an inline command; the first answer is enough.
            let got = String::from_utf8_lossy(&c.read_reply()).into_owned();
            assert!(got.starts_with("-ERR unknown command"), "{got}");
        }
        assert_eq!(other.cmd_str(&["PING"]), "+PONG\r\n");
        assert_eq!(other.cmd_str(&["GET", "survivor"]), "$5\r\nalive\r\n");
    }
}

/// The reply injection of the issue: a status with CR LF put a forged reply on the wire
/// and shifted every later reply of the connection by one.
#[test]
fn status_reply_with_crlf_cannot_forge_a_reply() {
    let t = Tumbler::start();
    let mut c = t.raw();
    let r = c.cmd_str(&["EVAL", "return redis.status_reply('OK\\r\\n:1\\r\\n')", "0"]);
    assert_eq!(r, "+OK  :1  \r\n");
    assert_eq!(c.cmd_str(&["PING"]), "+PONG\r\n");
    assert_eq!(c.cmd_str(&["ECHO", "next"]), "$4\r\nnext\r\n");
}

/// Every source of a status or error line that can carry user text, against redis-server:
/// CR and LF become spaces, and the connection stays in step (each line is followed by a
/// PING whose reply must be the next one read).
#[test]
fn status_and_error_text_is_sanitised_like_redis() {
    let script = r#"
        EVAL "return redis.status_reply(ARGV[1])" 0 "OK\r\n:1\r\n"
        PING
        EVAL "return redis.error_reply(ARGV[1])" 0 "MY\r\nerr\r"
        PING
        EVAL "return {ok = ARGV[1]}" 0 "a\rb\nc"
        PING
        EVAL "return {err = ARGV[1]}" 0 "a\rb\nc"
        PING
        EVAL "return {err = ARGV[1]}" 0 "-a\r\n:2\r\n"
        PING
        EVAL "error(ARGV[1])" 0 "raised\r\n:3\r\n"
        PING
        EVAL "error({err = ARGV[1]})" 0 "table\r\n:4\r\n"
        PING
        EVAL "return {1, {ok = ARGV[1]}, {err = ARGV[1]}}" 0 "x\r\ny"
        PING
        EVAL "return redis.pcall(ARGV[1])" 0 "nosuch\r\ncmd"
        PING
        EVAL "return redis.call(ARGV[1])" 0 "nosuch\r\n:5\r\n"
        PING
        "nosuch\r\n:6\r\n" x
        PING
        CONFIG SET "no\r\nparam" 1
        PING
        OBJECT "sub\r\n:7\r\n" x
        PING
        CLIENT "sub\r\n:8\r\n" x
        PING
        CLIENT SETNAME "a\r\nb"
        PING
        EVAL "return redis.status_reply('')" 0
        PING
    "#;
    diff_against_redis(script);
    diff_against_redis_resp3(
        r#"
        EVAL "redis.setresp(3) return {big_number = ARGV[1]}" 0 "12\r\n:9\r\n"
        PING
        EVAL "return {ok = ARGV[1]}" 0 "a\rb\nc"
        PING
        EVAL "return {map = {[ARGV[1]] = {ok = ARGV[1]}}}" 0 "k\r\n"
        PING
        "#,
    );
}

/// Lua 5.1's pattern matcher recurses once per quantifier with no limit (a pattern of
/// 300,000 `a?` overflowed the worker's stack and aborted the process; redis-server 7.0
/// crashes the same way). Past 10,000 quantifiers the pattern is refused with Lua 5.2's
/// "pattern too complex"; up to there, results are Redis'.
#[test]
fn pattern_matching_depth_is_bounded() {
    let (t, redis, mut other) = setup();
    for f in ["find", "match", "gmatch", "gsub"] {
        let call = match f {
            "gmatch" => "string.gmatch(s, p)()".to_string(),
            "gsub" => "string.gsub(s, p, 'x')".to_string(),
            _ => format!("string.{f}(s, p)"),
        };
        let ok = format!(
            "local s, p = string.rep('a', 10000), string.rep('a?', 10000) return #{{{call}}}"
        );
        let r = check(&t, &redis, &mut other, &["EVAL", &ok, "0"]);
        assert!(r.starts_with(':'), "{f}: {r}");
        for n in LEVELS {
            let deep = format!(
                "local s, p = string.rep('a', {n}), string.rep('a?', {n}) return #{{{call}}}"
            );
            let r = t.raw().cmd_str(&["EVAL", &deep, "0"]);
            assert!(
                r.starts_with("-ERR user_script:1: pattern too complex script: "),
                "{f}: {r}"
            );
            assert_eq!(other.cmd_str(&["PING"]), "+PONG\r\n");
            assert_eq!(other.cmd_str(&["GET", "survivor"]), "$5\r\nalive\r\n");
        }
    }
    // A plain find does no pattern matching and is not limited.
    let plain =
        "return string.find(string.rep('a', 100000) .. '?', string.rep('a?', 50000), 1, true)";
    assert_eq!(t.raw().cmd_str(&["EVAL", plain, "0"]), "$-1\r\n");
}

/// The guard around the pattern functions leaves their errors exactly as Redis reports
/// them: positions, names, method calls, errors from callbacks.
#[test]
fn pattern_function_errors_match_redis() {
    diff_against_redis(
        r#"
        EVAL "return ('x'):find('(', 1)" 0
        EVAL "return string.find()" 0
        EVAL "return ('x'):gsub()" 0
        EVAL "return string.gsub('abc', '(b)', {b = {}})" 0
        EVAL "return string.gsub('abc', 'b', function() error('cb') end)" 0
        EVAL "return string.gsub('abc', 'b', function() return redis.call('nosuch') end)" 0
        EVAL "local ok, e = pcall(string.match, 'x', '%') return e" 0
        EVAL "return string.match('x', '[a')" 0
        EVAL "return string.gsub('x', 'x', '%2')" 0
        EVAL "return string.gmatch('x')" 0
        EVAL "return {string.gsub('hello world', 'o', '0')}" 0
        EVAL "local n = 0 for w in ('a b c'):gmatch('%a') do n = n + 1 end return n" 0
        EVAL "return {string.find('key:{tag}:x', '{(.-)}')}" 0
        "#,
    );
}

/// unpack's result count is bounded by Lua's stack with Redis' error and position (Lua
/// 5.1.5's own count overflows for huge ranges, which Redis patches).
#[test]
fn unpack_ranges_match_redis() {
    diff_against_redis(
        r#"
        EVAL "return #{unpack({}, 1, 7997)}" 0
        EVAL "return #{unpack({}, 1, 7998)}" 0
        EVAL "return #{unpack({}, 1, 100000)}" 0
        EVAL "return #{unpack({}, 1, 1e8)}" 0
        EVAL "return #{unpack({}, 1, 3e9)}" 0
        EVAL "return {unpack({1, 2, 3}, -2147483648, 2147483647)}" 0
        EVAL "local t = {} for i = 1, 7999 do t[i] = i end return #{unpack(t)}" 0
        EVAL "local t = {} for i = 1, 8000 do t[i] = i end return #{unpack(t)}" 0
        EVAL "return unpack()" 0
        EVAL "return {unpack({1, 2, 3}, 2)}" 0
        EVAL "return {pcall(unpack, nil)}" 0
        EVAL "local a = {} for i = 1, 7999 do a[i] = 1 end return redis.call('lpush', 'l', unpack(a))" 0
        EVAL "local a = {} for i = 1, 7997 do a[i] = 1 end return redis.call('lrange', 'l', 0, 2, unpack(a))" 0
        "#,
    );
}
