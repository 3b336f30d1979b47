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

/// Encodings after each step (OBJECT ENCODING), for scripts whose replies do not depend on
/// a hashtable's order: run against redis-server 7.0.15 (intset and hashtable only) and,
/// with the listpack encoding, redis8-server and valkey9-server.
const ENCODINGS: &str = r#"
    # Redis 7.0 has no set-max-listpack-* parameters.
    CONFIG GET set-max-listpack-entries
    CONFIG GET set-max-listpack-value
    CONFIG SET set-max-listpack-value 64
    CONFIG SET set-max-listpack-entries 128
    CONFIG GET set-max-intset-entries
    SADD i 3 1 2
    OBJECT ENCODING i
    SADD i b
    OBJECT ENCODING i
    SCARD i
    SADD s a 1 2
    OBJECT ENCODING s
    SREM s a
    OBJECT ENCODING s
    SADD n 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
    OBJECT ENCODING n
    CONFIG SET set-max-intset-entries 4
    SADD n2 1 2 3 4 5
    OBJECT ENCODING n2
    SADD n3 1 2 3 4
    OBJECT ENCODING n3
    SADD n3 5
    OBJECT ENCODING n3
    SADD n4 1 2 3 4
    SADD n4 x
    OBJECT ENCODING n4
    # More arguments than set-max-intset-entries: Redis 7.2+ sizes the set for them.
    SADD n5 1 1 1 1 1
    OBJECT ENCODING n5
    SADD n5 1 2 3 4 5
    OBJECT ENCODING n5
    CONFIG SET set-max-intset-entries 512
    SADD w 1 -123456789012345678
    SADD w x
    OBJECT ENCODING w
    SADD long aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    OBJECT ENCODING long
    SADD long2 a
    SADD long2 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    OBJECT ENCODING long2
    SADD long3 1
    SADD long3 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    OBJECT ENCODING long3
    SMOVE s m1 1
    OBJECT ENCODING m1
    SMOVE i m2 b
    OBJECT ENCODING m2
    SADD x 5 4 3
    SADD y 4 3 z
    SINTERSTORE d x y
    OBJECT ENCODING d
    SINTERSTORE d y x
    OBJECT ENCODING d
    SINTERSTORE d y y
    OBJECT ENCODING d
    SCARD d
    SUNIONSTORE d x
    OBJECT ENCODING d
    SUNIONSTORE d x y
    OBJECT ENCODING d
    SDIFFSTORE d y x
    OBJECT ENCODING d
    SMEMBERS d
    SDIFFSTORE d x y
    OBJECT ENCODING d
    SDIFFSTORE d y y
    EXISTS d
    SPOP n
    EXISTS n
    SADD p1 a
    SPOP p1
    EXISTS p1
    SRANDMEMBER m1
    SRANDMEMBER m1 5
    SRANDMEMBER m1 -3
    # SPOP of most of a set keeps the rest in a new set: from Redis 7.2 a listpack. (Which
    # members it pops is random: a script counts them.)
    SADD big member:0 member:1 member:2 member:3 member:4 member:5 member:6 member:7 member:8 member:9 member:10 member:11 member:12 member:13 member:14 member:15 member:16 member:17 member:18 member:19 member:20 member:21 member:22 member:23 member:24 member:25 member:26 member:27 member:28 member:29 member:30 member:31 member:32 member:33 member:34 member:35 member:36 member:37 member:38 member:39 member:40 member:41 member:42 member:43 member:44 member:45 member:46 member:47 member:48 member:49 member:50 member:51 member:52 member:53 member:54 member:55 member:56 member:57 member:58 member:59 member:60 member:61 member:62 member:63 member:64 member:65 member:66 member:67 member:68 member:69 member:70 member:71 member:72 member:73 member:74 member:75 member:76 member:77 member:78 member:79 member:80 member:81 member:82 member:83 member:84 member:85 member:86 member:87 member:88 member:89 member:90 member:91 member:92 member:93 member:94 member:95 member:96 member:97 member:98 member:99 member:100 member:101 member:102 member:103 member:104 member:105 member:106 member:107 member:108 member:109 member:110 member:111 member:112 member:113 member:114 member:115 member:116 member:117 member:118 member:119 member:120 member:121 member:122 member:123 member:124 member:125 member:126 member:127 member:128 member:129 member:130 member:131 member:132 member:133 member:134 member:135 member:136 member:137 member:138 member:139 member:140 member:141 member:142 member:143 member:144 member:145 member:146 member:147 member:148 member:149 member:150 member:151 member:152 member:153 member:154 member:155 member:156 member:157 member:158 member:159 member:160 member:161 member:162 member:163 member:164 member:165 member:166 member:167 member:168 member:169 member:170 member:171 member:172 member:173 member:174 member:175 member:176 member:177 member:178 member:179 member:180 member:181 member:182 member:183 member:184 member:185 member:186 member:187 member:188 member:189 member:190 member:191 member:192 member:193 member:194 member:195 member:196 member:197 member:198 member:199
    OBJECT ENCODING big
    EVAL "return #redis.call('spop', KEYS[1], 190)" 1 big
    SCARD big
    OBJECT ENCODING big
    SADD lp a b c d e f g h i j
    EVAL "return #redis.call('spop', KEYS[1], 9)" 1 lp
    OBJECT ENCODING lp
    SCARD lp
"#;

#[test]
fn encodings_against_redis_7_0() {
    run(ENCODINGS);
}

#[test]
fn encodings_against_redis_8_0() {
    tumbler_tests::diff_against("redis8-server", ENCODINGS);
}

#[test]
fn encodings_against_valkey_9() {
    tumbler_tests::diff_against("valkey9-server", ENCODINGS);
}

/// A listpack set's members come out in insertion order (SMEMBERS, SSCAN, SRANDMEMBER with
/// a count past the size, the STORE commands' results) and its DUMP payload is Redis'
/// RDB_TYPE_SET_LISTPACK byte for byte; the conversions to and from it as Redis 7.2+ makes
/// them, limits set by CONFIG.
const LISTPACK: &str = r#"
    CONFIG GET set-max-listpack-entries
    CONFIG GET set-max-listpack-value
    SADD l c a b 7 -3 100000 01
    OBJECT ENCODING l
    SMEMBERS l
    SSCAN l 0
    SSCAN l 0 MATCH ?
    SRANDMEMBER l 100
    SISMEMBER l 01
    SISMEMBER l 1
    SMISMEMBER l a 7 x
    DUMP l
    SREM l a 7
    SMEMBERS l
    DUMP l
    SADD i 30 -7 5
    SADD i b
    OBJECT ENCODING i
    SMEMBERS i
    DUMP i
    SADD l2 x y z b c
    SINTER l l2
    SINTERSTORE d l l2
    OBJECT ENCODING d
    SMEMBERS d
    SINTERSTORE d l2 l
    SMEMBERS d
    SUNIONSTORE d l l2
    OBJECT ENCODING d
    SMEMBERS d
    SUNIONSTORE d i l
    SMEMBERS d
    SDIFFSTORE d l l2
    SMEMBERS d
    SDIFFSTORE d l2 l
    SMEMBERS d
    SDIFFSTORE d l2 l i x nosuch
    SMEMBERS d
    SINTERSTORE d i i
    SMEMBERS d
    OBJECT ENCODING d
    SMOVE l2 l3 y
    SMOVE l2 l3 z
    SMEMBERS l3
    SMEMBERS l2
    COPY l l4
    SMEMBERS l4
    OBJECT ENCODING l4
    CONFIG SET set-max-listpack-entries 3
    SADD c1 a b c
    OBJECT ENCODING c1
    SADD c1 d
    OBJECT ENCODING c1
    SADD c2 a b c d
    OBJECT ENCODING c2
    SADD c3 1 2 3
    SADD c3 x
    OBJECT ENCODING c3
    SADD c4 1 2
    SADD c4 x
    OBJECT ENCODING c4
    SMEMBERS c4
    # A listpack payload (RDB 11) of four members: a hashtable past the entries limit.
    RESTORE r1 0 "\x14\x13\x13\x00\x00\x00\x04\x00\x81\x61\x02\x81\x62\x02\x81\x63\x02\x81\x64\x02\xff\x0b\x00\x5a\x27\xfc\x63\x7c\x32\x4e\x4e"
    OBJECT ENCODING r1
    CONFIG SET set-max-listpack-entries 128
    CONFIG SET set-max-listpack-value 3
    SADD v1 abc
    OBJECT ENCODING v1
    SADD v1 abcd
    OBJECT ENCODING v1
    SADD v2 1000
    SADD v2 a
    OBJECT ENCODING v2
    SADD v3 100
    SADD v3 a
    OBJECT ENCODING v3
    SMEMBERS v3
    # set-max-listpack-value does not apply to a loaded listpack.
    RESTORE r2 0 "\x14\x13\x13\x00\x00\x00\x04\x00\x81\x61\x02\x81\x62\x02\x81\x63\x02\x81\x64\x02\xff\x0b\x00\x5a\x27\xfc\x63\x7c\x32\x4e\x4e"
    OBJECT ENCODING r2
    SMEMBERS r2
    CONFIG SET set-max-listpack-value 64
    # RDB_TYPE_SET payloads (RDB 11): 5 3 a 1 loads as an intset that the string turns into
    # a listpack, so 3 5 a 1; a duplicate is refused; a member past set-max-listpack-value
    # makes a hashtable.
    RESTORE r3 0 "\x02\x04\x01\x35\x01\x33\x01\x61\x01\x31\x0b\x00\xfe\xfb\x6d\x7e\x9a\xfd\xec\xfb"
    OBJECT ENCODING r3
    SMEMBERS r3
    DUMP r3
    RESTORE r4 0 "\x02\x04\x01\x35\x01\x33\x01\x61\x01\x61\x0b\x00\x89\xda\x22\xab\x35\xb5\xd6\xe6"
    EXISTS r4
    RESTORE r5 0 "\x02\x03\x01\x35\x40\x41xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\x01\x61\x0b\x00\x74\x9b\x50\x7c\xa5\x34\x61\x52"
    OBJECT ENCODING r5
    SCARD r5
"#;

#[test]
fn listpack_against_redis_8_0() {
    tumbler_tests::diff_against("redis8-server", LISTPACK);
}

#[test]
fn listpack_against_valkey_9() {
    tumbler_tests::diff_against("valkey9-server", LISTPACK);
}
