//! Differential tests: the same commands to tumbler and to a real redis-server, replies
//! compared byte for byte.

use tumbler_tests::diff_against_redis as run;

#[test]
fn strings_and_errors() {
    run(r#"
        SET k v
        GET k
        SET k v NX
        SET k w XX GET
        SET k v EX 0
        SET k v PX -1
        SET k v EX notanumber
        SET k v NX XX
        SET k v KEEPTTL EX 10
        INCR k
        SET n 10
        INCR n
        INCRBY n -20
        DECRBY n 5
        INCRBYFLOAT n 1.5
        INCRBYFLOAT n 0.1
        SET big 9223372036854775807
        INCR big
        APPEND s hello
        APPEND s " world"
        STRLEN s
        GETRANGE s 0 4
        GETRANGE s -5 -1
        GETRANGE s 5 1
        SETRANGE s 6 there
        GET s
        SETRANGE s -1 x
        MSET a 1 b 2
        MGET a b nosuch
        MSETNX a 1 c 3
        GETDEL a
        GETDEL a
        GETSET b 3
        SETNX b 4
        SETNX nb 4
        GETEX b PERSIST
        GETEX b EX 100 PX 100
        DEL a b c n s k nb
    "#);
}

#[test]
fn keys_and_expiry() {
    run(r#"
        SET k v
        EXPIRE k 100
        TTL k
        EXPIRE k 50 GT
        EXPIRE k 200 GT
        TTL k
        EXPIRE k 300 NX
        EXPIRE k 10 XX LT
        TTL k
        EXPIRE k 10 NX XX
        EXPIRE k 10 GT LT
        EXPIRE k 10 FOO
        PERSIST k
        PERSIST k
        TTL k
        PTTL nosuch
        TTL nosuch
        EXPIRE nosuch 10
        PEXPIRE k 0
        EXISTS k
        SET a 1
        EXPIREAT a 1
        EXISTS a
        SET a 1
        PEXPIREAT a 99999999999999
        PEXPIRETIME a
        EXPIRETIME a
        EXPIRETIME nosuch
        TYPE a
        TYPE nosuch
        HSET h f v
        TYPE h
        DEL a h nosuch
        EXISTS a a h
    "#);
}

#[test]
fn hashes_like_a_redisson_lock() {
    run(r#"
        HSET lock 58c62432:1 1
        PEXPIRE lock 30000
        HEXISTS lock 58c62432:1
        HINCRBY lock 58c62432:1 1
        HINCRBY lock 58c62432:1 -1
        HGET lock 58c62432:1
        HGETALL lock
        HLEN lock
        HDEL lock 58c62432:1
        EXISTS lock
        HSET h a 1 b 2 c 3
        HDEL h b
        HGETALL h
        HSET h d 4 a 9
        HGETALL h
        HINCRBY h a x
        HSET h s str
        HINCRBY h s 1
        HMSET h x 1
        HSET h odd
        SET str v
        HGET str f
        HSET str f v
    "#);
}
