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

/// INCRBYFLOAT and HINCRBYFLOAT add in long double (x87 80-bit) and print with `%.17Lf`, as
/// redis-server on x86-64 does: decimal steps come out as typed, the range reaches 1e4932,
/// and the errors for overflow, underflow, NaN and infinity match.
#[test]
fn incrbyfloat_is_long_double() {
    run(r#"
        INCRBYFLOAT f 0.1
        INCRBYFLOAT f 0.1
        INCRBYFLOAT f 0.1
        INCRBYFLOAT f -0.3
        INCRBYFLOAT f 1e-20
        INCRBYFLOAT f 1.1e300
        INCRBYFLOAT f 1.1e300
        INCRBYFLOAT f -2.2e300
        INCRBYFLOAT g 1e308
        INCRBYFLOAT g 1e308
        INCRBYFLOAT g 1e4000
        INCRBYFLOAT g 1e4932
        INCRBYFLOAT g 1e5000
        INCRBYFLOAT g 1e-5000
        INCRBYFLOAT g 0e-5000
        INCRBYFLOAT g inf
        INCRBYFLOAT g -inf
        INCRBYFLOAT g nan
        INCRBYFLOAT g 1e
        INCRBYFLOAT g 5.0e3
        INCRBYFLOAT g +1.5
        INCRBYFLOAT g .5
        INCRBYFLOAT g 1.
        INCRBYFLOAT h 3.0e-4940
        INCRBYFLOAT h -3.0e-4940
        SET s 1e400
        INCRBYFLOAT s 1
        SET s 1e5000
        INCRBYFLOAT s 1
        SET s 0.1
        INCRBYFLOAT s 0.2
        INCRBYFLOAT s 1.23456789012345678901234567890
        INCRBYFLOAT s -1.23456789012345678901234567890
        SET t 12345678901234567890
        INCRBYFLOAT t 1
        INCRBYFLOAT t 0.5
        HINCRBYFLOAT hh a 0.1
        HINCRBYFLOAT hh a 0.1
        HINCRBYFLOAT hh a 0.1
        HINCRBYFLOAT hh a 1e4000
        HINCRBYFLOAT hh a 1e5000
        HINCRBYFLOAT hh a inf
        HINCRBYFLOAT hh b 1e-20
        HSET hh c 1e400
        HINCRBYFLOAT hh c -1e400
        HMGET hh a b c
        DEL f g h s t hh
    "#);
}
