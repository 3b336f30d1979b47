//! Differential tests for the set algebra and SMOVE: the same commands to tumbler and to a
//! real redis-server, replies compared byte for byte (RESP2 and RESP3). Multi-member
//! replies use integer members (intset order is numeric in both servers); string members
//! are checked through cardinalities, membership and one-member results, since a
//! hashtable's iteration order is Redis' dict order.

use tumbler_tests::diff_against_redis as run;
use tumbler_tests::diff_against_redis_resp3 as run_resp3;

const ALGEBRA: &str = r#"
    SADD a 1 2 3 4 5
    SADD b 4 5 6 7
    SADD c 5 7 9
    SADD s x y z 5
    SINTER a b
    SINTER a b c
    SINTER a nosuch
    SINTER nosuch a
    SINTER a
    SUNION a b c
    SUNION a nosuch
    SUNION nosuch1 nosuch2
    SDIFF a b
    SDIFF a b c
    SDIFF nosuch a
    SDIFF a nosuch
    SDIFF a a
    SINTER s a
    SDIFFSTORE t s x
    SCARD t
    SISMEMBER t y
    SCARD s
    SINTERSTORE d a b
    SMEMBERS d
    OBJECT ENCODING d
    SINTERSTORE d a nosuch
    EXISTS d
    SUNIONSTORE d a b c
    SMEMBERS d
    SCARD d
    SUNIONSTORE e a s
    SCARD e
    OBJECT ENCODING e
    SISMEMBER e x
    SDIFFSTORE d a b
    SMEMBERS d
    SDIFFSTORE d a a
    EXISTS d
    SET str v
    SINTER a str
    SINTER nosuch str
    SUNION a str
    SDIFF nosuch str
    SDIFF a str
    SINTERSTORE str a b
    TYPE str
    SINTERSTORE a2 str a
    SUNIONSTORE a2 a str
    SINTERCARD 2 a b
    SINTERCARD 3 a b c
    SINTERCARD 2 a nosuch
    SINTERCARD 1 a LIMIT 2
    SINTERCARD 2 a b LIMIT 0
    SINTERCARD 2 a b LIMIT 1
    SINTERCARD 2 a b LIMIT -1
    SINTERCARD 2 a b LIMIT x
    SINTERCARD 2 a b LIMIT
    SINTERCARD 2 a b FOO 1
    SINTERCARD 0 a
    SINTERCARD -1 a
    SINTERCARD x a
    SINTERCARD 3 a b
    SINTERCARD 2 a str
    SINTERCARD 2 nosuch str
    PEXPIRE d2 10000
    SADD d2 1
    EXPIRE d2 100
    SUNIONSTORE d2 a
    TTL d2
"#;

#[test]
fn set_algebra() {
    run(ALGEBRA);
}

#[test]
fn set_algebra_resp3() {
    run_resp3(ALGEBRA);
}

#[test]
fn smove() {
    run(r#"
        SADD src 1 2 3
        SADD dst 3 4
        SMOVE src dst 1
        SMEMBERS src
        SMEMBERS dst
        SMOVE src dst 3
        SMEMBERS src
        SMEMBERS dst
        SMOVE src dst nosuch
        SMOVE nosuch dst 1
        SMOVE src src 2
        SMOVE src src 9
        SMOVE src newdst 2
        EXISTS src
        SMEMBERS newdst
        OBJECT ENCODING newdst
        SADD src2 a
        SMOVE src2 newdst a
        OBJECT ENCODING newdst
        EXISTS src2
        SET str v
        SMOVE str dst 1
        SMOVE dst str 3
        SMOVE nosuch str 3
        SMOVE dst dst
        SMEMBERS dst
    "#);
}

#[test]
fn intset_conversion_by_size() {
    // Past set-max-intset-entries (512) the result of an algebra command is a hashtable.
    let adds: String = (0..600).map(|i| format!(" {i}")).collect();
    run(&format!(
        "SADD big{adds}\nOBJECT ENCODING big\nSADD small 1 2\nSUNIONSTORE u small big\n\
         OBJECT ENCODING u\nSCARD u\nSINTERSTORE i small big\nOBJECT ENCODING i\nSMEMBERS i\n\
         SDIFFSTORE df big small\nSCARD df\nOBJECT ENCODING df\nSINTERCARD 2 big small\n"
    ));
}
