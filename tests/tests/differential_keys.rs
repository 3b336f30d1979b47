//! Differential tests for the foundation's key, hash, set, bit and introspection commands:
//! the same commands to tumbler and to a real redis-server, replies compared byte for byte.
//! Scripts only use replies whose order Redis defines (one key per db for SCAN/KEYS/
//! RANDOMKEY, small listpack hashes and intsets, whole-collection random picks).

use tumbler_tests::bulk_payload;
use tumbler_tests::diff_against_redis as run;
use tumbler_tests::{diff_script, RedisServer, Tumbler};

#[test]
fn rename_and_renamenx() {
    run(r#"
        RENAME nosuch x
        RENAMENX nosuch x
        SET a 1
        RENAME a a
        RENAMENX a a
        PEXPIRE a 100000
        RENAME a b
        EXISTS a
        GET b
        TTL b
        SET c 3
        EXPIRE c 500
        SET d 4
        RENAME d c
        TTL c
        GET c
        RENAMENX b c
        RENAMENX b e
        GET e
        HSET h f v
        RENAME h h2
        HGETALL h2
        TYPE h
        RENAME
        RENAME a b c
    "#);
}

#[test]
fn copy_with_db_and_replace() {
    run(r#"
        COPY nosuch x
        SET s hello
        COPY s s
        COPY s t
        GET t
        COPY s t
        SET s world
        COPY s t REPLACE
        GET t
        COPY s s DB 1
        SELECT 1
        GET s
        SELECT 0
        COPY s t DB x
        COPY s t DB 99
        COPY s t DB -1
        COPY s t FOO
        COPY s t REPLACE DB
        PEXPIRE s 100000
        COPY s u
        TTL u
        TTL t
        HSET h a 1 b 2
        COPY h h2
        HGETALL h2
        OBJECT ENCODING h2
        HSET h c 3
        HGETALL h2
        SADD st 1 2 3
        COPY st st2
        SMEMBERS st2
        OBJECT ENCODING st2
        COPY s t REPLACE REPLACE
    "#);
}

#[test]
fn move_between_dbs() {
    run(r#"
        SET k v
        MOVE k 0
        MOVE k x
        MOVE k 99
        MOVE k -1
        MOVE nosuch 1
        PEXPIRE k 100000
        MOVE k 1
        EXISTS k
        SELECT 1
        GET k
        TTL k
        SET k other
        SELECT 0
        SET k again
        MOVE k 1
        GET k
        SELECT 1
        GET k
    "#);
}

#[test]
fn keys_scan_randomkey_touch_with_one_key_per_db() {
    run(r#"
        KEYS *
        RANDOMKEY
        SCAN 0
        SET key:1 v
        KEYS *
        KEYS key:?
        KEYS key:[0-9]
        KEYS key:[^1]
        KEYS nomatch*
        RANDOMKEY
        SCAN 0
        SCAN 0 MATCH key:*
        SCAN 0 MATCH nomatch
        SCAN 0 COUNT 100
        SCAN 0 TYPE string
        SCAN 0 TYPE hash
        SCAN 0 TYPE nosuchtype
        SCAN 0 COUNT 0
        SCAN 0 COUNT -1
        SCAN 0 COUNT x
        SCAN 0 MATCH
        SCAN 0 FOO bar
        SCAN x
        SCAN 18446744073709551616
        SCAN " 1"
        TOUCH key:1 nosuch key:1
        TOUCH
    "#);
}

#[test]
fn object_subcommands() {
    run(r#"
        SET i 1234
        SET e hello
        SET r aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
        SET big 12345678901234567890123
        OBJECT ENCODING i
        OBJECT ENCODING e
        OBJECT ENCODING r
        OBJECT ENCODING big
        OBJECT ENCODING nosuch
        APPEND e x
        OBJECT ENCODING e
        SET e2 12
        SETRANGE e2 0 ""
        OBJECT ENCODING e2
        SETRANGE e2 0 3
        OBJECT ENCODING e2
        INCR e2
        OBJECT ENCODING e2
        SETBIT bits 1 1
        OBJECT ENCODING bits
        OBJECT REFCOUNT i
        OBJECT REFCOUNT big
        OBJECT REFCOUNT nosuch
        OBJECT IDLETIME i
        OBJECT IDLETIME nosuch
        OBJECT FREQ i
        OBJECT FREQ nosuch
        OBJECT HELP
        OBJECT
        OBJECT FOO i
        OBJECT ENCODING
        OBJECT ENCODING i j
        HSET h f v
        OBJECT ENCODING h
        SADD s1 1 2 3
        OBJECT ENCODING s1
        SADD s1 x
        OBJECT ENCODING s1
    "#);
}

#[test]
fn hash_commands() {
    run(r#"
        HSETNX h a 1
        HSETNX h a 2
        HSETNX h b 2
        HGETALL h
        HMGET h a nosuch b
        HMGET nosuch a b
        HSTRLEN h a
        HSTRLEN h nosuch
        HSTRLEN nosuch a
        HKEYS h
        HVALS h
        HKEYS nosuch
        HVALS nosuch
        HINCRBYFLOAT h a 1.5
        HINCRBYFLOAT h a -0.5
        HINCRBYFLOAT h n 10.5e2
        HINCRBYFLOAT h a x
        HINCRBYFLOAT h a inf
        HSET h s str
        HINCRBYFLOAT h s 1
        HGETALL h
        HSCAN h 0
        HSCAN h 0 MATCH a*
        HSCAN h 0 COUNT 1
        HSCAN h x
        HSCAN h 0 COUNT 0
        HSCAN h 0 TYPE string
        HSCAN nosuch 0
        HSCAN nosuch 0 FOO
        HRANDFIELD nosuch
        HRANDFIELD nosuch 5
        HRANDFIELD nosuch 5 WITHVALUES
        HRANDFIELD h 100
        HRANDFIELD h 100 WITHVALUES
        HRANDFIELD h 0
        HRANDFIELD h 1 FOO
        HRANDFIELD h 1 WITHVALUES x
        HRANDFIELD h x
        HRANDFIELD h -9223372036854775808
        HRANDFIELD h -9223372036854770000 WITHVALUES
        HRANDFIELD h 9223372036854770000 WITHVALUES
        HSET one only 1
        HRANDFIELD one
        HRANDFIELD one -3
        HRANDFIELD one -2 WITHVALUES
        HRANDFIELD one 1 WITHVALUES
        SET str v
        HSETNX str a 1
        HMGET str a
        HSTRLEN str a
        HKEYS str
        HVALS str
        HSCAN str 0
        HRANDFIELD str
        HINCRBYFLOAT str a 1
    "#);
}

#[test]
fn hash_encoding_follows_listpack_limits() {
    run(r#"
        CONFIG SET hash-max-listpack-entries 4
        CONFIG SET hash-max-listpack-value 8
        HSET h a 1 b 2 c 3 d 4
        OBJECT ENCODING h
        HSET h e 5
        OBJECT ENCODING h
        HDEL h e
        OBJECT ENCODING h
        HSET v a 123456789
        OBJECT ENCODING v
        HSETNX w longfieldname 1
        OBJECT ENCODING w
        HINCRBYFLOAT x f 1.000000001
        OBJECT ENCODING x
        CONFIG SET hash-max-ziplist-entries 128
        CONFIG SET hash-max-ziplist-value 64
    "#);
}

#[test]
fn set_commands() {
    run(r#"
        SADD s 3 1 2 -5 10
        SADD s 1
        SMEMBERS s
        SCARD s
        SISMEMBER s 2
        SISMEMBER s 7
        SMISMEMBER s 1 7 3
        SSCAN s 0
        SSCAN s 0 MATCH 1*
        SRANDMEMBER s 100
        SRANDMEMBER s 0
        SRANDMEMBER s x
        SRANDMEMBER s 1 2
        SRANDMEMBER nosuch
        SRANDMEMBER nosuch 3
        SREM s 1 2 nosuch
        SMEMBERS s
        SREM s 3 -5 10
        EXISTS s
        SADD one x
        SRANDMEMBER one
        SRANDMEMBER one -3
        SPOP one
        EXISTS one
        SPOP nosuch
        SPOP nosuch 2
        SPOP s -1
        SPOP s x
        SADD p 1
        SPOP p 5
        SMEMBERS nosuch
        SCARD nosuch
        SET str v
        SADD str a
        SMEMBERS str
        SSCAN str 0
        SCARD str
    "#);
}

#[test]
fn bits_and_lcs() {
    run(r#"
        SETBIT b 7 1
        GET b
        SETBIT b 7 0
        SETBIT b 100 1
        STRLEN b
        GETBIT b 100
        GETBIT b 99
        GETBIT b 100000
        GETBIT nosuch 1
        SETBIT b -1 1
        SETBIT b x 1
        SETBIT b 1 2
        SETBIT b 1 x
        SETBIT b 4294967296 1
        GETBIT b -1
        SET n 1
        SETBIT n 6 1
        GET n
        HSET h f v
        SETBIT h 1 1
        GETBIT h 1
        SET a ohmytext
        SET c mynewtext
        LCS a c
        LCS a c LEN
        LCS a c IDX
        LCS a c IDX MINMATCHLEN 4
        LCS a c IDX MINMATCHLEN 4 WITHMATCHLEN
        LCS a c IDX WITHMATCHLEN
        LCS a c LEN IDX
        LCS a c MINMATCHLEN x
        LCS a c FOO
        LCS a nosuch
        LCS nosuch nosuch2 IDX
        LCS a h
    "#);
}

#[test]
fn wrongtype_and_errors_across_families() {
    run(r#"
        SADD s a
        GET s
        MGET s nosuch
        SET s v GET
        SETRANGE s 0 x
        APPEND s x
        INCR s
        INCRBYFLOAT s 1
        GETRANGE s 0 1
        STRLEN s
        HGET s f
        SETRANGE n 0 ""
        SETRANGE n -1 x
        SETRANGE n 536870912 x
    "#);
}

#[test]
fn introspection_errors_and_config() {
    run(r#"
        CLIENT KILL id str
        CLIENT KILL id -1
        CLIENT KILL id 0
        CLIENT KILL id 10 wrong_arg
        CLIENT KILL type wrong_type
        CLIENT KILL user wrong_user
        CLIENT KILL skipme yes_or_no
        CLIENT KILL 1.2.3.4:5
        CLIENT KILL id 999999
        CONFIG SET maxmemory 1 maxmemory 2
        CONFIG SET maxmemory-clients 200%
        CONFIG SET maxmemory-clients 10%
        CONFIG GET maxmemory-clients
        CONFIG GET slaveof
        CONFIG GET replicaof
        CONFIG GET hash-max-ziplist-entries
        CONFIG SET maxmemory-clients 0
        CONFIG SET daemonize yes
        CONFIG GET key-load-delay
        CONFIG SET repl-backlog-size 2mb
        CONFIG GET repl-backlog-size
        CONFIG SET repl-backlog-size 1mb
        MEMORY USAGE nosuch
        MEMORY HELP
        MEMORY USAGE nosuch SAMPLES x
    "#);
}

#[test]
fn dump_payloads_restore_across_tumbler_and_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let (mut tc, mut rc) = (t.raw(), redis.raw());
    let long = "x".repeat(100);
    let setup: &[&[&str]] = &[
        &[
            "HSET",
            "h",
            "a",
            "1",
            "b",
            "-2",
            "c",
            "hello",
            "d",
            "70000",
            "e",
            "5000000000",
        ],
        &["SADD", "si", "1", "2", "300", "70000", "-5"],
        &["SADD", "ss", "a", "b"],
        &["SET", "s", &long],
        &["SET", "n", "12345"],
        &["SET", "neg", "-70000"],
        &["SET", "e", ""],
    ];
    for c in setup {
        tc.cmd(c);
        rc.cmd(c);
    }
    for k in ["h", "si", "ss", "s", "n", "neg", "e"] {
        let from_redis = bulk_payload(&rc.cmd(&["DUMP", k]));
        let from_tumbler = bulk_payload(&tc.cmd(&["DUMP", k]));
        for (name, payload) in [("redis", &from_redis), ("tumbler", &from_tumbler)] {
            let key = format!("{k}_from_{name}");
            let c: [&[u8]; 4] = [b"RESTORE", key.as_bytes(), b"0", payload];
            assert_eq!(tc.cmd_str(&c), "+OK\r\n", "tumbler restores {name}'s {k}");
            assert_eq!(rc.cmd_str(&c), "+OK\r\n", "redis restores {name}'s {k}");
        }
    }
    // Same contents (and encodings) on both sides after the cross restore.
    diff_script(
        &mut tc,
        &mut rc,
        r#"
        HGETALL h_from_redis
        OBJECT ENCODING h_from_redis
        SMEMBERS si_from_redis
        OBJECT ENCODING si_from_redis
        SCARD ss_from_redis
        GET s_from_redis
        GET n_from_redis
        GET neg_from_redis
        GET e_from_redis
        HGETALL h_from_tumbler
        SMEMBERS si_from_tumbler
        OBJECT ENCODING si_from_tumbler
        SCARD ss_from_tumbler
        GET s_from_tumbler
        GET n_from_tumbler
        GET neg_from_tumbler
        GET e_from_tumbler
        DUMP nosuch
        RESTORE n 0 x
        RESTORE newkey -1 x
        RESTORE newkey x x
        RESTORE newkey 0 badpayload
        RESTORE newkey 0 x FOO
        RESTORE newkey 0 x IDLETIME -1
        RESTORE newkey 0 x FREQ 256
        RESTORE newkey 0 x IDLETIME 1 FREQ 1
        "#,
    );
    let p = bulk_payload(&rc.cmd(&["DUMP", "n"]));
    diff_script(&mut tc, &mut rc, "SET x 1");
    for c in [
        vec![
            b"RESTORE".to_vec(),
            b"x".to_vec(),
            b"0".to_vec(),
            p.clone(),
            b"REPLACE".to_vec(),
        ],
        vec![
            b"RESTORE".to_vec(),
            b"y".to_vec(),
            b"1".to_vec(),
            p.clone(),
            b"ABSTTL".to_vec(),
        ],
        vec![b"GET".to_vec(), b"x".to_vec()],
        vec![b"EXISTS".to_vec(), b"y".to_vec()],
    ] {
        assert_eq!(
            tc.cmd(&c),
            rc.cmd(&c),
            "{:?}",
            String::from_utf8_lossy(&c[0])
        );
    }
}

#[test]
fn stream_subset() {
    run(r#"
        XADD s 1-1 a 1
        XADD s 1-1 a 1
        XADD s 0-0 a 1
        XADD s 1-* b 2
        XADD s 2 c 3 d 4
        XADD s 1 x y
        XADD s x a 1
        XADD s 3-1 a
        XADD s
        XLEN s
        XLEN nosuch
        TYPE s
        OBJECT ENCODING s
        XRANGE s - +
        XRANGE s - + COUNT 2
        XRANGE s - + COUNT 0
        XRANGE s - + COUNT -1
        XRANGE s - + COUNT x
        XRANGE s - + FOO
        XRANGE s (1-1 +
        XRANGE s 1 1
        XRANGE s 2 1
        XRANGE s x +
        XRANGE s (18446744073709551615-18446744073709551615 +
        XRANGE s - (0-0
        XREVRANGE s + -
        XREVRANGE s + - COUNT 1
        XREVRANGE s (2-0 -
        XRANGE nosuch - +
        XDEL s 1-2 9-9
        XDEL s x
        XLEN s
        XADD s2 NOMKSTREAM 5-1 a 1
        EXISTS s2
        XADD s2 MAXLEN 2 5-1 a 1
        XADD s2 MAXLEN = 2 5-2 a 1
        XADD s2 MAXLEN 2 5-3 a 1
        XRANGE s2 - +
        XADD s2 MINID 5-3 5-4 a 1
        XRANGE s2 - +
        XADD s2 MAXLEN ~ 1 5-5 a 1
        XLEN s2
        XADD s2 MAXLEN 1 LIMIT 10 5-6 a 1
        XADD s2 LIMIT 10 5-6 a 1
        XADD s2 MAXLEN -1 5-6 a 1
        XADD s2 MAXLEN x 5-6 a 1
        XADD s2 MINID x 5-6 a 1
        SET str v
        XADD str 1-1 a 1
        XLEN str
        XRANGE str - +
        COPY s s3
        XRANGE s3 - +
        RENAME s3 s4
        XLEN s4
        TYPE s4
        DEL s s2 s4
    "#);
}

#[test]
fn hash_encoding_converts_on_the_field_that_crosses_the_limit() {
    run(r#"
        CONFIG SET hash-max-listpack-entries 2
        HSET h1 a 1 b 2
        HINCRBY h1 c 1
        OBJECT ENCODING h1
        HSET h2 a 1 b 2
        HINCRBYFLOAT h2 c 1.5
        OBJECT ENCODING h2
        HSET h3 a 1 b 2
        HSETNX h3 c 1
        OBJECT ENCODING h3
        HSETNX h3 c 2
        CONFIG SET hash-max-listpack-entries 512
    "#);
}

/// DEBUG POPULATE, as Redis' test suites and benchmarks use it to fill a keyspace: keys
/// `prefix:N` with `value:N`, padded with zero bytes or cut to a size, existing keys left
/// alone, and Redis' errors.
#[test]
fn debug_populate_matches_redis() {
    let Some(redis) = tumbler_tests::RedisServer::start_with(&["--enable-debug-command", "yes"])
    else {
        return;
    };
    let t = tumbler_tests::Tumbler::start_with(&[("personality", "redis-7.0")]);
    let script = r#"
        SET key:3 mine
        DEBUG POPULATE 5
        DBSIZE
        GET key:0
        GET key:3
        GET key:4
        DEBUG POPULATE 3 p 12
        GET p:2
        DEBUG POPULATE 2 q 3
        GET q:1
        DEBUG POPULATE 0
        DEBUG POPULATE -1
        DEBUG POPULATE x
        DEBUG POPULATE 1 r -5
        DEBUG POPULATE 1 r 2 extra
        DBSIZE
        FLUSHALL
    "#;
    tumbler_tests::diff_script(&mut t.raw(), &mut redis.raw(), script);
}

/// An entry keeps its TTL and its "raw" string flag in one word (value.rs): the largest
/// deadline Redis accepts, deadlines in the past, TTL changes on a raw string and PERSIST
/// all read back as in Redis.
#[test]
fn extreme_deadlines_and_the_raw_flag_share_a_word() {
    tumbler_tests::diff_against_redis(
        r#"
        SET k v
        PEXPIREAT k 9223372036854775807
        PEXPIRETIME k
        EXPIRETIME k
        TTL k
        OBJECT ENCODING k
        APPEND k w
        OBJECT ENCODING k
        PEXPIRETIME k
        PEXPIREAT k 9223372036854775806
        PEXPIRETIME k
        OBJECT ENCODING k
        PERSIST k
        PEXPIRETIME k
        OBJECT ENCODING k
        EXPIRE k 100
        OBJECT ENCODING k
        GET k
        SET k 12
        OBJECT ENCODING k
        PEXPIREAT k 1
        EXISTS k
        SET n 1
        EXPIREAT n -5
        EXISTS n
        SET m 1 PXAT 9223372036854775807
        PEXPIRETIME m
        HSET h f 1
        PEXPIREAT h 9223372036854775807 NX
        PEXPIREAT h 9223372036854775807 GT
        PEXPIRETIME h
        EXPIRE h 9223372036854775807
        PEXPIRETIME h
    "#,
    );
}
