//! Regression tests for bugs the fuzzers found (docs/fuzzing.md), each differential
//! against redis-server and each failing before its fix.

use tumbler_tests::diff_against_redis as run;

/// fuzz_differential seed 127: GETEX checks the key before the expire value, so a missing
/// key is nil (and a wrong type WRONGTYPE) whatever the EX/PX argument.
#[test]
fn getex_checks_the_key_before_the_expire_value() {
    run(r#"
        GETEX nokey EX 0
        GETEX nokey PX x
        GETEX nokey EXAT -1
        GETEX nokey EX
        HSET h f v
        GETEX h EX x
        GETEX h EX 0
        SET s v
        GETEX s EX 0
        GETEX s PX x
        GETEX s EX 100
        TTL s
        GETEX s PERSIST EX 1
        GETEX s EX 0 PX 1
    "#);
}

/// fuzz_differential seed 62: ZRANGE by rank refuses LIMIT only when its count is not the
/// default -1 (Redis' `opt_limit != -1`); with count -1 the offset is ignored.
#[test]
fn zrange_by_rank_accepts_limit_with_count_minus_one() {
    run(r#"
        ZRANGE nokey 0 -1 LIMIT 0 -1
        ZADD z 1 a 2 b 3 c
        ZRANGE z 0 -1 LIMIT 0 -1
        ZRANGE z 0 -1 LIMIT 5 -1 WITHSCORES
        ZRANGE z 0 -1 REV LIMIT 2 -1
        ZRANGE z 0 -1 LIMIT 0 -5
        ZRANGE z 0 -1 LIMIT 0 2
        ZRANGE z 0 -1 LIMIT x -1
        ZRANGESTORE dst z 0 -1 LIMIT 1 -1
        ZRANGESTORE dst z 0 -1 LIMIT 1 1
        ZRANGE z (1 3 BYSCORE LIMIT 1 -1
    "#);
}

/// fuzz_differential seed 60: INCRBYFLOAT checks the key's type and value before parsing
/// the increment (INCRBY and HINCRBYFLOAT parse the increment first).
#[test]
fn incrbyfloat_checks_the_type_before_the_increment() {
    run(r#"
        HSET h f v
        INCRBYFLOAT h abc
        INCRBY h abc
        HINCRBYFLOAT h f abc
        SET s notanumber
        INCRBYFLOAT s abc
        INCRBYFLOAT s 1
        INCRBYFLOAT missing abc
        SET n 1.5
        INCRBYFLOAT n abc
        INCRBYFLOAT n 0.25
    "#);
}

/// fuzz_differential seed 301: APPEND to a missing key stores the value encoded by its
/// content, as SET does; appending to an existing string makes it raw.
#[test]
fn append_to_a_missing_key_encodes_like_set() {
    run(r#"
        APPEND a "hello world"
        OBJECT ENCODING a
        APPEND i 12
        OBJECT ENCODING i
        APPEND i 3
        OBJECT ENCODING i
        APPEND l xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
        OBJECT ENCODING l
        SET s abc
        APPEND s d
        OBJECT ENCODING s
    "#);
}

/// fuzz_differential seed 776: ZINTERCARD checks the keys' types before its options.
#[test]
fn zintercard_checks_types_before_options() {
    run(r#"
        SET s 1
        ZADD z 1 a
        ZINTERCARD 2 z s extra
        ZINTERCARD 2 z s LIMIT -1
        ZINTERCARD 2 z nokey extra
        ZINTERCARD 1 z LIMIT -1
        ZINTERCARD 1 z LIMIT 1
    "#);
}

/// Sends `bytes` on a fresh connection, closes the write side and returns everything the
/// server sends until it closes. A reader thread takes replies as they come, so a server
/// that closes with input left unread (a reset) loses none of what it wrote before.
fn exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut r = s.try_clone().unwrap();
    r.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            match r.read(&mut buf) {
                Ok(0) => return out,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return out,
                Err(e) => panic!("the server did not close after EOF: {e}"),
            }
        }
    });
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    reader.join().unwrap()
}

fn same_bytes(t: &tumbler_tests::Tumbler, r: &tumbler_tests::RedisServer, bytes: &[u8]) {
    assert_eq!(
        tumbler_tests::fuzz::cli_quote(&exchange(t.addr, bytes)),
        tumbler_tests::fuzz::cli_quote(&exchange(r.addr, bytes)),
        "tumbler (left) and redis-server (right) differ for {}",
        tumbler_tests::fuzz::cli_quote(bytes)
    );
}

/// fuzz_protocol seeds 34, 46, 48: Redis finds the end of an inline request with
/// `strchr`, so a NUL before the LF hides it: the request waits for more data (and the
/// commands after it are never run). Seeds 15, 55: a `*`/`$` header ends at the first CR,
/// and Redis skips the byte after it without checking it is an LF.
#[test]
fn request_lines_end_where_redis_finds_them() {
    let Some(r) = tumbler_tests::RedisServer::start() else {
        return;
    };
    let t = tumbler_tests::Tumbler::start_with(&[("personality", "redis-7.0")]);
    same_bytes(&t, &r, b"PING\r\n\0junk\r\nPING\r\n");
    same_bytes(&t, &r, b"PING\r\nECHO a\0b\r\nPING\r\n");
    same_bytes(&t, &r, b"SET k v\n\0\r\n*1\r\n$4\r\nPING\r\n");
    same_bytes(&t, &r, b"*2\r\x02$4\r\nECHO\r\n$1\r\nx\r\nPING\r\n");
    same_bytes(&t, &r, b"*2\r\n$4\rxECHO\r\n$1\r\nx\r\nPING\r\n");
    same_bytes(&t, &r, b"*1\r\n$4\r\nPINGxyPING\r\n");
    same_bytes(&t, &r, b"*1\0\r\n$4\r\nPING\r\n");
    same_bytes(&t, &r, b"*1\r\n$4\0\r\nPING\r\n");
    same_bytes(&t, &r, b"*1\r\n$4\r");
    same_bytes(&t, &r, b"*1\r");
}

/// Found by fuzz_protocol (seeds 9, 17, 37): Redis echoes the raw bytes of an unknown
/// command's name and arguments (cut at a NUL, as "%s" does) and of the byte in "expected
/// '$', got 'X'"; tumbler's error replies are UTF-8 text, so it sends U+FFFD instead.
/// Ignored until error replies can carry bytes (issue 10's reply sanitising work).
#[test]
#[ignore = "error replies are UTF-8 text in tumbler; Redis echoes raw bytes"]
fn error_replies_echo_raw_bytes() {
    let Some(r) = tumbler_tests::RedisServer::start() else {
        return;
    };
    let t = tumbler_tests::Tumbler::start_with(&[("personality", "redis-7.0")]);
    same_bytes(&t, &r, b"NO\xffSUCH a\r\n");
    same_bytes(&t, &r, b"*2\r\n$4\r\nnosu\r\n$3\r\na\0b\r\n");
    same_bytes(&t, &r, b"*1\r\n\xa4\r\n");
}

/// fuzz_protocol seeds 103, 210: in an inline request, vertical tab and form feed
/// separate words only before a word (sdssplitargs skips `isspace` there), not inside one.
#[test]
fn inline_words_end_only_at_space_tab_cr_lf() {
    let Some(r) = tumbler_tests::RedisServer::start() else {
        return;
    };
    let t = tumbler_tests::Tumbler::start_with(&[("personality", "redis-7.0")]);
    same_bytes(&t, &r, b"ECHO a\x0cb\r\n");
    same_bytes(&t, &r, b"ECHO \x0b\x0cab\x0b\r\n");
    same_bytes(&t, &r, b"MU\x0cLTI\r\nPING\r\n");
    same_bytes(&t, &r, b"ECHO \"a\"\x0c\r\n");
    same_bytes(&t, &r, b"ECHO 'a'\x0bb\r\n");
}

/// fuzz_protocol seed 536: an inline line longer than 64 KiB is "too big inline request"
/// even when its LF arrives in the same read (Redis reads 16 KiB at a time and gives up
/// before it sees the LF).
#[test]
fn inline_line_over_64k_is_refused_whole() {
    let Some(r) = tumbler_tests::RedisServer::start() else {
        return;
    };
    let t = tumbler_tests::Tumbler::start_with(&[("personality", "redis-7.0")]);
    let mut line = vec![b'['; 100_000];
    line.extend_from_slice(b"\r\nPING\r\n");
    same_bytes(&t, &r, &line);
    let mut ok = b"ECHO ".to_vec();
    ok.extend(vec![b'a'; 60_000]);
    ok.extend_from_slice(b"\r\nPING\r\n");
    same_bytes(&t, &r, &ok);
}

/// fuzz_protocol seed 730: "with args beginning with" lists arguments while the list
/// (not the whole message) is under 128 bytes, each cut to what is left of them.
#[test]
fn unknown_command_lists_args_like_redis() {
    let long = "x".repeat(100);
    run(&format!(
        r#"
        NOSUCH a b c
        {long} a b c
        NOSUCH {long} abcdefghijklmnopqrstuvwxyz1234567890 b
        NOSUCH {long}{long} b
        NOSUCH "a\x00b" c
        "#
    ));
}

/// fuzz_differential seeds 5373, 5444, 6751: SET checks its whole syntax before the
/// expire value.
#[test]
fn set_checks_syntax_before_the_expire_value() {
    run(r#"
        SET k b EX -1 extra
        SET k b EX 0 GET extra
        SET k b PX x GET extra
        SET k b PX x GET
        SET k b EX 0
        HSET h f v
        SET h b EX 0 GET
        SET h b EX 10 GET
        SET k b EX 10 NX XX
    "#);
}

/// fuzz_differential seed 1017301: an INCRBYFLOAT operand whose text overflows is "not a
/// valid float" (Redis' strtold reports ERANGE), not an increment to infinity.
#[test]
fn incrbyfloat_refuses_overflowing_operands() {
    run(r#"
        SET k 91e33372036854775807
        INCRBYFLOAT k inf
        INCRBYFLOAT k 1
        SET n 1
        INCRBYFLOAT n 1e99999
        INCRBYFLOAT n inf
        INCRBYFLOAT n -inf
        HSET h f 91e33372036854775807
        HINCRBYFLOAT h f 1
        HINCRBYFLOAT h g 1e99999
        HINCRBYFLOAT h g inf
    "#);
}

/// fuzz_protocol seeds 1000898, 1001252, 1005403: SELECT with a non-integer is Redis'
/// integer error, and one outside a C int its range error.
#[test]
fn select_argument_errors_match_redis() {
    run(r#"
        SELECT x
        SELECT ""
        SELECT 1.5
        SELECT 4294967296
        SELECT -2147483649
        SELECT 99
        SELECT -1
        SELECT 1
    "#);
}
