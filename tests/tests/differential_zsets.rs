//! Differential tests for sorted sets: the same commands to tumbler and to a real
//! redis-server, replies compared byte for byte (RESP2 and RESP3).

use tumbler_tests::diff_against_redis as run;
use tumbler_tests::diff_against_redis_resp3 as run_resp3;

#[test]
fn zadd_options_and_errors() {
    run(r#"
        ZADD z 1 a 2 b 3 c
        ZADD z NX 10 a 4 d
        ZADD z XX 10 a 5 e
        ZADD z XX CH 11 a 5 e
        ZADD z GT CH 1 a 20 b
        ZADD z LT CH 100 a 0 c
        ZADD z INCR 1.5 a
        ZADD z INCR NX 1 a
        ZADD z INCR XX 1 nosuch
        ZADD z INCR GT -100 a
        ZADD z NX XX 1 a
        ZADD z GT LT 1 a
        ZADD z GT NX 1 a
        ZADD z INCR 1 a 2 b
        ZADD z 1
        ZADD z 1 a 2
        ZADD z x a
        ZADD z nan a
        ZADD z inf i -inf j +inf k
        ZADD z INCR -inf i
        ZADD nosuch XX 1 a
        EXISTS nosuch
        ZADD nosuch XX INCR 1 a
        ZSCORE z a
        ZSCORE z nosuch
        ZSCORE nosuch a
        ZMSCORE z a b nosuch
        ZMSCORE nosuch a b
        ZINCRBY z 0.1 a
        ZINCRBY z x a
        ZINCRBY n 1.1 m
        ZSCORE n m
        ZADD f 0.1 a 1e100 b -1.5e-10 c 3.0 d 123456789012345678 e
        ZRANGE f 0 -1 WITHSCORES
        ZCARD z
        ZCARD nosuch
        SET s v
        ZADD s 1 a
        ZSCORE s a
        ZCARD s
        ZRANGE s 0 -1
        ZREM z a b nosuch
        ZREM z nosuch
        ZREM nosuch a
        ZRANGE z 0 -1 WITHSCORES
        ZREM z c d e i j k
        EXISTS z
    "#);
}

#[test]
fn ranges_by_rank_score_and_lex() {
    run(r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e 5 f 6 g
        ZRANGE z 0 -1
        ZRANGE z 1 3 WITHSCORES
        ZRANGE z -2 -1
        ZRANGE z 5 1
        ZRANGE z 0 100 REV
        ZRANGE z 0 1 REV WITHSCORES
        ZREVRANGE z 0 2 WITHSCORES
        ZRANGE z (1 5 BYSCORE
        ZRANGE z 1 (5 BYSCORE WITHSCORES
        ZRANGE z -inf +inf BYSCORE LIMIT 1 2
        ZRANGE z +inf -inf BYSCORE REV LIMIT 0 3 WITHSCORES
        ZRANGE z 5 (2 BYSCORE REV
        ZRANGE z 1 5 BYSCORE LIMIT -1 2
        ZRANGE z 1 5 BYSCORE LIMIT 2 -1
        ZRANGE z 1 5 BYSCORE LIMIT 100 1
        ZRANGE z 0 -1 LIMIT 0 1
        ZRANGE z 1 x BYSCORE
        ZRANGE z ( (5 BYSCORE
        ZRANGEBYSCORE z 2 4
        ZRANGEBYSCORE z (2 +inf WITHSCORES LIMIT 1 2
        ZRANGEBYSCORE z 2 4 REV
        ZRANGEBYSCORE z a b
        ZREVRANGEBYSCORE z 4 2 WITHSCORES
        ZREVRANGEBYSCORE z +inf -inf LIMIT 2 2
        ZCOUNT z 2 5
        ZCOUNT z (2 (5
        ZCOUNT z 5 2
        ZCOUNT z -inf +inf
        ZCOUNT z x 1
        ZCOUNT nosuch 0 1
        ZRANK z c
        ZREVRANK z c
        ZRANK z nosuch
        ZRANK nosuch a
        DEL z
        ZADD l 0 a 0 b 0 c 0 d 0 e 0 foo 0 bar
        ZRANGEBYLEX l - +
        ZRANGEBYLEX l [b (d
        ZRANGEBYLEX l (b [d LIMIT 1 1
        ZREVRANGEBYLEX l + -
        ZREVRANGEBYLEX l [e (b
        ZRANGE l [b [e BYLEX
        ZRANGE l [e [b BYLEX REV LIMIT 0 2
        ZRANGE l - + BYLEX WITHSCORES
        ZRANGEBYLEX l a b
        ZRANGEBYLEX l [a
        ZLEXCOUNT l - +
        ZLEXCOUNT l [b (foo
        ZLEXCOUNT l x y
        ZLEXCOUNT nosuch - +
        ZRANGE nosuch 0 -1
        ZRANGE z 0 -1 BOGUS
        ZRANGE z 0 -1 BYSCORE BYLEX
    "#);
}

#[test]
fn removals_pops_and_store() {
    run(r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e 6 f 7 g 8 h
        ZREMRANGEBYRANK z 0 1
        ZREMRANGEBYRANK z -1 -1
        ZREMRANGEBYSCORE z (3 4
        ZREMRANGEBYSCORE z x 4
        ZREMRANGEBYRANK z x 1
        ZRANGE z 0 -1 WITHSCORES
        ZADD lx 0 a 0 b 0 c 0 d
        ZREMRANGEBYLEX lx [b (d
        ZREMRANGEBYLEX lx x y
        ZREMRANGEBYLEX lx - +
        EXISTS lx
        ZREMRANGEBYSCORE nosuch 0 1
        ZADD p 1 a 2 b 3 c 4 d 5 e
        ZPOPMIN p
        ZPOPMAX p
        ZPOPMIN p 0
        ZPOPMIN p 2
        ZPOPMIN p -1
        ZPOPMIN p x
        ZPOPMIN p 1 2
        ZPOPMAX p 10
        EXISTS p
        ZPOPMIN nosuch
        ZPOPMIN nosuch 2
        ZADD src 1 a 2 b 3 c 4 d
        ZRANGESTORE dst src 1 2
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst src (1 +inf BYSCORE LIMIT 0 2 REV
        ZRANGESTORE dst src +inf (1 BYSCORE REV LIMIT 0 2
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst src 0 -1 WITHSCORES
        ZRANGESTORE dst nosuch 0 -1
        EXISTS dst
        ZADD m1 1 a 2 b 3 c
        ZADD m2 10 b 20 c 30 d
        ZMPOP 2 nosuch m1 MIN
        ZMPOP 1 m2 MAX COUNT 2
        ZMPOP 1 nosuch MIN
        ZMPOP 0 m1 MIN
        ZMPOP 1 m1 UP
        ZMPOP 1 m1 MIN COUNT 0
        BZPOPMIN nosuch m1 0
        BZPOPMAX m1 0
        BZMPOP 0 1 m2 MIN
        BZPOPMIN nosuch 0.01
        BZMPOP 0.01 1 nosuch MAX
        BZPOPMIN nosuch x
        BZPOPMIN nosuch -1
    "#);
}

#[test]
fn set_operations() {
    run(r#"
        ZADD a 1 x 2 y 3 z
        ZADD b 10 y 20 z 30 w
        ZUNIONSTORE u 2 a b
        ZRANGE u 0 -1 WITHSCORES
        ZUNIONSTORE u 2 a b WEIGHTS 2 0.5 AGGREGATE MAX
        ZRANGE u 0 -1 WITHSCORES
        ZINTERSTORE i 2 a b
        ZRANGE i 0 -1 WITHSCORES
        ZINTERSTORE i 2 a b AGGREGATE MIN
        ZRANGE i 0 -1 WITHSCORES
        ZINTERSTORE i 2 a nosuch
        EXISTS i
        ZUNIONSTORE u 0 a
        ZUNIONSTORE u 3 a b
        ZUNIONSTORE u x a
        ZUNIONSTORE u 2 a b WEIGHTS 1
        ZUNIONSTORE u 2 a b WEIGHTS 1 x
        ZUNIONSTORE u 2 a b AGGREGATE avg
        ZUNIONSTORE u 2 a b WITHSCORES
        ZUNION 2 a b WITHSCORES
        ZUNION 2 a b
        ZINTER 2 a b WITHSCORES
        ZINTER 2 a b WEIGHTS 1 -1 AGGREGATE SUM WITHSCORES
        ZDIFF 2 a b
        ZDIFF 2 a b WITHSCORES
        ZDIFF 2 a b WEIGHTS 1 1
        ZDIFFSTORE d 2 a b
        ZRANGE d 0 -1 WITHSCORES
        ZDIFFSTORE d 2 nosuch b
        EXISTS d
        ZADD inf1 inf a
        ZADD inf2 -inf a
        ZUNIONSTORE u 2 inf1 inf2
        ZRANGE u 0 -1 WITHSCORES
        ZINTERCARD 2 a b
        SET dst x EX 100
        ZUNIONSTORE dst 1 a
        TTL dst
        EXPIRE dst 100
        ZADD dst 5 new
        TTL dst
        ZRANGESTORE dst a 0 0
        TTL dst
        EXPIRE dst 100
        ZINTERSTORE dst 2 a nosuch
        EXISTS dst
        SADD plain x w 7
        ZUNIONSTORE u 2 a plain WEIGHTS 2 3
        ZRANGE u 0 -1 WITHSCORES
        ZINTER 2 plain a WITHSCORES
        ZDIFF 2 plain a WITHSCORES
        ZINTERCARD 2 plain a
        ZINTERCARD 2 a b LIMIT 1
        ZINTERCARD 0 a
        ZINTERCARD x a
        ZINTERCARD 3 a b
        SET s v
        ZUNION 2 a s
        ZUNIONSTORE a 1 s
    "#);
}

#[test]
fn resp3_shapes() {
    run_resp3(
        r#"
        ZADD z 1.5 a 2 b inf c
        ZSCORE z a
        ZSCORE z c
        ZMSCORE z a nosuch
        ZINCRBY z 1 a
        ZADD z INCR 1 b
        ZRANGE z 0 -1 WITHSCORES
        ZRANGE z 0 -1
        ZRANGEBYSCORE z -inf +inf WITHSCORES
        ZUNION 1 z WITHSCORES
        ZPOPMIN z
        ZPOPMIN z 1
        ZADD z 1 a 2 b
        ZPOPMAX z 2
        ZADD z 1 a 2 b
        ZMPOP 1 z MIN COUNT 2
        ZADD z 1 a
        BZPOPMIN z 0
        ZPOPMIN nosuch
        ZMPOP 1 nosuch MIN
        ZRANDMEMBER nosuch
        ZRANDMEMBER nosuch 2
        ZADD one 2.5 only
        ZRANDMEMBER one 1 WITHSCORES
        ZRANDMEMBER one -2 WITHSCORES
        ZRANDMEMBER one 5
        ZSCAN nosuch 0
    "#,
    );
}

#[test]
fn encodings_and_scan() {
    run(r#"
        CONFIG SET zset-max-listpack-entries 4
        ZADD z 1 a 2 b 3 c 4 d
        ZADD z 5 e
        ZREM z a b c d
        ZADD y 1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
        ZADD s 1.1 a 2 b 3.5 c
        ZSCAN s 0
        ZSCAN s 0 MATCH a*
        ZSCAN s 0 COUNT 0
        ZSCAN s x
        ZUNIONSTORE u 1 s
        ZADD big 1 a 2 b 3 c 4 d 5 e
        ZUNIONSTORE u 1 big
        ZRANGESTORE u big 0 1
        ZRANDMEMBER s 0
        ZRANDMEMBER s 1 2
        ZRANDMEMBER s 1 WITHSCORES x
        ZRANDMEMBER s x
        ZADD one 2.5 only
        ZRANDMEMBER one 1 WITHSCORES
        ZRANDMEMBER one -2 WITHSCORES
        ZRANDMEMBER one
        ZADD hex 0x10 a
        ZADD sp " 1" a
        ZADD e 1e3 a 1E-2 b -0 c +5 d .5 f 5. g
        ZRANGE e 0 -1 WITHSCORES
        ZRANGEBYSCORE e (-0 +inf
        ZRANGEBYSCORE e "( 1" 5
    "#);
}
