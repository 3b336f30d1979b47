//! Differential tests for the bitmap commands against a real redis-server: BITCOUNT and
//! BITPOS with BYTE/BIT ranges, BITOP, BITFIELD/BITFIELD_RO with every overflow mode and
//! signed/unsigned edge widths, SETBIT/GETBIT, and the errors in Redis' check order.

use tumbler_tests::diff_against_redis as run;

#[test]
fn bitcount_and_bitpos() {
    run(r#"
        SET s "\xff\xf0\x00\x0f"
        BITCOUNT s
        BITCOUNT s 0 0
        BITCOUNT s 1 -1
        BITCOUNT s -2 -1
        BITCOUNT s -1 -2
        BITCOUNT s 5 10
        BITCOUNT s 0 -1 BIT
        BITCOUNT s 3 12 BIT
        BITCOUNT s -5 -1 BIT
        BITCOUNT s 0 0 BYTE
        BITCOUNT s 0 0 FOO
        BITCOUNT s 0
        BITCOUNT s x 1
        BITCOUNT nosuch
        BITCOUNT nosuch 0
        BITPOS s 1
        BITPOS s 0
        BITPOS s 0 2
        BITPOS s 1 2
        BITPOS s 0 0 0
        BITPOS s 1 2 2
        BITPOS s 0 3 3
        BITPOS s 0 3
        BITPOS s 1 4 30 BIT
        BITPOS s 0 0 7 BIT
        BITPOS s 0 0 -1 BIT
        BITPOS s 0 20 BIT
        BITPOS s 1 -3 -1 BIT
        BITPOS s 0 5 2
        BITPOS s 2
        BITPOS s x
        BITPOS s 1 0 0 FOO
        BITPOS s 1 x
        BITPOS nosuch 1
        BITPOS nosuch 0
        SET ones "\xff\xff"
        BITPOS ones 0
        BITPOS ones 0 0 -1
        BITPOS ones 0 0 1 BIT
        SET empty ""
        BITPOS empty 0
        BITPOS empty 1
        BITCOUNT empty
        HSET h f v
        BITCOUNT h
        BITPOS h 1
    "#);
}

#[test]
fn bitop_and_setbit() {
    run(r#"
        SET a "\x0f\xf0\xaa"
        SET b "\xff"
        BITOP AND d a b
        GET d
        BITOP OR d a b
        GET d
        BITOP XOR d a b nosuch
        GET d
        BITOP NOT d a
        GET d
        BITOP NOT d a b
        BITOP FOO d a
        BITOP AND d nosuch1 nosuch2
        EXISTS d
        HSET h f v
        BITOP AND d a h
        OBJECT ENCODING d
        SETBIT n 7 1
        GET n
        SETBIT n 7 1
        SETBIT n 100 0
        STRLEN n
        GETBIT n 7
        GETBIT n 1000
        SETBIT n 1 2
        SETBIT n -1 1
        SETBIT n 4294967296 1
        SETBIT n x 1
        GETBIT n -1
        GETBIT nosuch 3
        SETBIT h 1 1
        GETBIT h 1
    "#);
}

#[test]
fn bitfield() {
    run(r#"
        BITFIELD bf SET u8 0 255 GET u8 0 GET i8 0
        BITFIELD bf INCRBY u8 0 10 INCRBY i8 0 -200 GET u4 #1
        BITFIELD bf OVERFLOW SAT INCRBY u8 0 1000 INCRBY i8 8 -1000 INCRBY i8 8 1000
        BITFIELD bf OVERFLOW FAIL INCRBY u8 0 1 GET u8 0 SET i4 #3 100
        BITFIELD bf OVERFLOW WRAP SET i64 0 -1 GET i64 0 INCRBY i64 0 1 GET u63 1
        BITFIELD bf SET i64 0 9223372036854775807 INCRBY i64 0 1
        BITFIELD bf OVERFLOW SAT INCRBY i64 0 9223372036854775807 INCRBY i64 0 -9223372036854775807
        BITFIELD bf SET u1 100 1 GET u1 100 GET u2 99
        STRLEN bf
        BITFIELD bf SET u8 0 -1 GET u8 0
        BITFIELD bf OVERFLOW SAT SET u8 0 -1 SET i8 0 300 GET i8 0
        BITFIELD bf GET u64 0
        BITFIELD bf GET i65 0
        BITFIELD bf GET x8 0
        BITFIELD bf GET U8 0
        BITFIELD bf GET u0 0
        BITFIELD bf GET u8 -1
        BITFIELD bf GET u8 #x
        BITFIELD bf SET u8 0 x
        BITFIELD bf OVERFLOW FOO
        BITFIELD bf FOO u8 0
        BITFIELD bf GET u8
        BITFIELD bf
        BITFIELD_RO bf GET u8 0 GET i16 4
        BITFIELD_RO bf SET u8 0 1
        BITFIELD_RO nosuch GET u8 0
        BITFIELD nosuch GET u8 0
        EXISTS nosuch
        HSET h f v
        BITFIELD h GET u8 0
        BITFIELD h SET u8 0 1
        BITFIELD_RO h GET u8 0
    "#);
}
