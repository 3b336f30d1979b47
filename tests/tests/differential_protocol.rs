//! Raw protocol differential tests: the same bytes to tumbler and redis-server, including
//! inline commands and malformed requests; replies (and protocol errors) compared byte
//! for byte.

use tumbler_tests::{RedisServer, Tumbler};

/// Sends `bytes` on a fresh connection to each server, reads `replies` replies from each
/// and asserts they are identical.
fn same(t: &Tumbler, r: &RedisServer, bytes: &[u8], replies: usize) {
    let (mut tc, mut rc) = (t.raw(), r.raw());
    tc.send_bytes(bytes);
    rc.send_bytes(bytes);
    for i in 0..replies {
        let (a, b) = (tc.read_reply(), rc.read_reply());
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "reply {i} to {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn inline_commands_and_quoting() {
    let Some(r) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::start();
    same(&t, &r, b"SET k \"a b\"\r\nGET k\r\n", 2);
    same(&t, &r, b"SET k 'it\\'s'\r\nGET k\r\n", 2);
    // Adjacent quoted strings are unbalanced: an error, then the connection closes.
    same(&t, &r, b"SET k 'it''s'\r\n", 1);
    same(&t, &r, b"SET k \"\\x41\\n\"\r\nGET k\r\n", 2);
    same(&t, &r, b"  PING   \r\n\r\nECHO x\n", 2);
    same(&t, &r, b"nosuch a b\r\n", 1);
    // Unbalanced quotes are a protocol error that closes the connection.
    same(&t, &r, b"SET k \"abc\r\n", 1);
    same(&t, &r, b"SET k \"abc\"def\r\n", 1);
}

#[test]
fn multibulk_edge_cases_and_errors() {
    let Some(r) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::start();
    same(&t, &r, b"*0\r\nPING\r\n", 1);
    same(&t, &r, b"*-1\r\nPING\r\n", 1);
    same(
        &t,
        &r,
        b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
        2,
    );
    same(&t, &r, b"*x\r\n", 1);
    same(&t, &r, b"*1\r\n$x\r\n", 1);
    same(&t, &r, b"*1\r\n+PING\r\n", 1);
    same(&t, &r, b"*1\r\n$-1\r\n", 1);
    same(&t, &r, b"*2147483648\r\n", 1);
    same(&t, &r, b"*1\r\n$2000000000\r\n", 1);
    // A big argument split over many packets.
    let big = "x".repeat(1 << 20);
    let mut req = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n", big.len()).into_bytes();
    req.extend_from_slice(big.as_bytes());
    req.extend_from_slice(b"\r\n*2\r\n$6\r\nSTRLEN\r\n$3\r\nbig\r\n");
    same(&t, &r, &req, 2);
}
