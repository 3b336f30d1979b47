//! Raw protocol differential tests: the same bytes to tumbler and redis-server, including
//! inline commands and malformed requests; replies (and protocol errors) compared byte
//! for byte.

use tumbler_tests::{encode_cmd, RedisServer, Tumbler};

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
    let t = Tumbler::like(&r, &[]);
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
    let t = Tumbler::like(&r, &[]);
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

/// A long pipeline over a keyspace large enough for the server to prefetch the next
/// commands' keys (lockcore's `PREFETCH_MIN_KEYS`): reads, writes, deletes, TTLs, hashes,
/// a Redisson lock script by EVAL, a SELECT in the middle, keyless commands, empty and
/// absent keys and an inline command, sent as one write. Every reply is Redis'.
#[test]
fn a_pipeline_over_a_large_keyspace() {
    use rand::{Rng, SeedableRng};
    let Some(r) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&r, &[]);
    let fill = encode_cmd::<&[u8]>(&[
        b"EVAL",
        b"for i = 1, 10000 do redis.call('set', 'k:' .. i, i * 7) end return redis.call('dbsize')",
        b"0",
    ]);
    same(&t, &r, &fill, 1);
    let lock = b"if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut wire = Vec::new();
    let n = 3000;
    for i in 0..n {
        let k = format!("k:{}", rng.gen_range(1..12_000)).into_bytes();
        let h = format!("h:{}", rng.gen_range(1..50)).into_bytes();
        let v = format!("v{i}").into_bytes();
        let cmd = match rng.gen_range(0..16) {
            0 | 1 | 2 => encode_cmd::<&[u8]>(&[b"GET", &k]),
            3 | 4 => encode_cmd::<&[u8]>(&[b"SET", &k, &v]),
            5 => encode_cmd::<&[u8]>(&[b"DEL", &k]),
            6 => encode_cmd::<&[u8]>(&[b"INCR", &k]),
            7 => encode_cmd::<&[u8]>(&[b"HSET", &h, &v, &k]),
            8 => encode_cmd::<&[u8]>(&[b"HGET", &h, &v]),
            9 => encode_cmd::<&[u8]>(&[b"EXPIRE", &k, b"100"]),
            10 => encode_cmd::<&[u8]>(&[b"TTL", &k]),
            11 => encode_cmd::<&[u8]>(&[b"EVAL", lock, b"1", &h, b"30000", b"owner:1"]),
            12 => encode_cmd::<&[u8]>(&[b"MGET", &k, b"k:1", b"nosuch"]),
            13 => encode_cmd::<&[u8]>(&[b"SELECT", if i % 2 == 0 { b"1" } else { b"0" }]),
            14 => encode_cmd::<&[u8]>(&[b"GET", b""]),
            _ => b"PING\r\n".to_vec(),
        };
        wire.extend_from_slice(&cmd);
    }
    wire.extend_from_slice(&encode_cmd::<&[u8]>(&[b"SELECT", b"0"]));
    wire.extend_from_slice(&encode_cmd::<&[u8]>(&[b"DBSIZE"]));
    same(&t, &r, &wire, n + 2);
}
