//! Differential tests for the packed (listpack) encoding of small hashes: field order after
//! replacements and deletions, in-place HINCRBY, the conversion to "hashtable" at
//! hash-max-listpack-entries / -value (OBJECT ENCODING), long strings in a pack, and the
//! Redisson lock flow, against a real redis-server, replies compared byte for byte.

use tumbler_tests::diff_against_redis as run;

#[test]
fn packed_hash_keeps_insertion_order_through_updates_and_deletes() {
    run(r#"
        HSET h a 1 b 22 c 333 d 4444
        HGETALL h
        HSET h b x c yyyyyyyyyyyyyyyyyy a ""
        HGETALL h
        HDEL h a
        HGETALL h
        HSET h a again
        HGETALL h
        HKEYS h
        HVALS h
        HMGET h d nosuch a
        HSTRLEN h c
        HLEN h
        HEXISTS h b
        HINCRBY h n 9
        HINCRBY h n 1
        HINCRBY h n -100
        HINCRBYFLOAT h f 1.5
        HINCRBYFLOAT h f 10
        HGETALL h
        HRANDFIELD h 100 WITHVALUES
        HSCAN h 0
        HSETNX h a no
        HSETNX h z yes
        HGETALL h
        HDEL h a b c d n f z
        EXISTS h
        OBJECT ENCODING h
    "#);
}

#[test]
fn packed_hash_converts_at_the_listpack_limits() {
    run(r#"
        CONFIG SET hash-max-listpack-entries 3
        CONFIG SET hash-max-listpack-value 8
        HSET e f1 1 f2 2 f3 3
        OBJECT ENCODING e
        HSET e f4 4
        OBJECT ENCODING e
        HLEN e
        HDEL e f1 f2 f3
        OBJECT ENCODING e
        HSET v f 12345678
        OBJECT ENCODING v
        HSET v f 123456789
        OBJECT ENCODING v
        HGET v f
        HSET w longfield1 x
        OBJECT ENCODING w
        HINCRBY i a 1
        HINCRBY i b 1
        HINCRBY i c 1
        OBJECT ENCODING i
        HINCRBY i d 1
        OBJECT ENCODING i
        HINCRBYFLOAT j a 1
        HINCRBYFLOAT j b 1
        HINCRBYFLOAT j c 1
        HINCRBYFLOAT j d 1
        OBJECT ENCODING j
        HSETNX k a 1
        HSETNX k b 1
        HSETNX k c 1
        HSETNX k d 1
        OBJECT ENCODING k
        HSETNX m x 123456789
        OBJECT ENCODING m
    "#);
}

#[test]
fn long_strings_in_a_packed_hash() {
    // Over 127 bytes a string's length takes more than one byte in the pack.
    let a = "a".repeat(200);
    let b = "b".repeat(130);
    let c = "c".repeat(20000);
    run(&format!(
        r#"
        CONFIG SET hash-max-listpack-value 100000
        HSET h {a} {b} short 1 {b} {a}
        OBJECT ENCODING h
        HGETALL h
        HSET h {a} 1 short {c}
        HGETALL h
        HSTRLEN h short
        HDEL h {a}
        HGETALL h
        HSET h {a} {c}
        HGET h {a}
        HLEN h
        OBJECT ENCODING h
        "#
    ));
}

#[test]
fn redisson_lock_flow_on_a_packed_hash() {
    run(r#"
        HSET lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1 1
        PEXPIRE lock 30000
        OBJECT ENCODING lock
        HEXISTS lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1
        HINCRBY lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1 1
        HINCRBY lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1 9
        HGETALL lock
        HINCRBY lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1 -11
        HGET lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1
        HDEL lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1
        EXISTS lock
        HSET lock other:2 1
        COPY lock lock2
        HGETALL lock2
        OBJECT ENCODING lock2
    "#);
}

/// One-digit strings are packed as a single byte, and lengths 48..=57 (whose one-byte
/// length would read as a digit) take two: every change between those forms, as field and
/// as value, through HSET, HINCRBY, HDEL and DUMP (the RDB listpack, byte for byte).
#[test]
fn packed_hash_digit_strings_and_lengths_that_look_like_digits() {
    run(r#"
        HSET d 1 1 2 "" 3 x 0 9
        HGETALL d
        HSET d 1 2 2 5 3 7 0 ""
        HGETALL d
        HINCRBY d 1 8
        HINCRBY d 1 1
        HINCRBY d 1 -10
        HINCRBY d 1 -1
        HGETALL d
        HSET d aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 4 5 bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
        HGETALL d
        HSET d 5 6 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ccccccccccccccccccccccccccccccccccccccccccccccccc
        HGETALL d
        HDEL d 2 0
        HGETALL d
        OBJECT ENCODING d
        DUMP d
        HSET lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1 1
        HINCRBY lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1 1
        HINCRBY lock 6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1 -1
        HGETALL lock
        DUMP lock
    "#);
}

/// Each server RESTOREs the other's DUMP of such a hash: the same fields and values come
/// back (Redis' payload read into the packed form, ours read by Redis).
#[test]
fn packed_hash_digit_strings_restore_across_servers() {
    let Some(redis) = tumbler_tests::RedisServer::start() else {
        return;
    };
    let t = tumbler_tests::Tumbler::like(&redis, &[]);
    let (mut a, mut b) = (t.raw(), redis.raw());
    let fill: &[&[u8]] = &[
        b"HSET",
        b"d",
        b"1",
        b"1",
        b"2",
        b"",
        b"0",
        b"9",
        &[b'a'; 48],
        b"4",
        b"5",
        &[b'b'; 57],
    ];
    for c in [&mut a, &mut b] {
        assert_eq!(&c.cmd(fill)[..], b":5\r\n");
    }
    let dump = |c: &mut tumbler_tests::Raw| {
        let r = c.cmd(&["DUMP", "d"]);
        let at = r.iter().position(|&x| x == b'\n').unwrap() + 1;
        r[at..r.len() - 2].to_vec()
    };
    let (da, db) = (dump(&mut a), dump(&mut b));
    assert_eq!(da, db);
    for (c, payload) in [(&mut a, &db), (&mut b, &da)] {
        assert_eq!(
            &c.cmd(&[&b"RESTORE"[..], b"d2", b"0", payload])[..],
            b"+OK\r\n"
        );
    }
    assert_eq!(a.cmd(&["HGETALL", "d2"]), b.cmd(&["HGETALL", "d2"]));
    assert_eq!(a.cmd(&["HGETALL", "d2"]), a.cmd(&["HGETALL", "d"]));
    assert_eq!(
        a.cmd_str(&["OBJECT", "ENCODING", "d2"]),
        "$8\r\nlistpack\r\n"
    );
}
