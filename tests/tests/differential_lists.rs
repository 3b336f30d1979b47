//! Differential tests for lists: the same commands to tumbler and to a real redis-server,
//! replies compared byte for byte (RESP2 and RESP3).

use tumbler_tests::diff_against_redis as run;
use tumbler_tests::diff_against_redis_resp3 as run_resp3;
use tumbler_tests::{RedisServer, Tumbler};

#[test]
fn push_pop_and_reads() {
    run(r#"
        LPUSH l a b c
        RPUSH l d e
        LPUSHX nosuch x
        RPUSHX nosuch x
        LPUSHX l z
        RPUSHX l y
        LLEN l
        LLEN nosuch
        LRANGE l 0 -1
        LRANGE l 1 2
        LRANGE l -3 -1
        LRANGE l 5 1
        LRANGE l -100 100
        LRANGE l 0 x
        LRANGE nosuch 0 -1
        LINDEX l 0
        LINDEX l -1
        LINDEX l 100
        LINDEX l x
        LINDEX nosuch 0
        LPOP l
        RPOP l
        LPOP l 2
        RPOP l 0
        LPOP l -1
        LPOP l x
        LPOP l 1 2
        LPOP nosuch
        LPOP nosuch 2
        RPOP l 100
        EXISTS l
        SET s v
        LPUSH s a
        LPOP s
        LLEN s
        LRANGE s 0 1
        LPUSH
        LPUSH l
    "#);
}

#[test]
fn in_place_edits() {
    run(r#"
        RPUSH l a b c b a b
        LSET l 0 A
        LSET l -1 B
        LSET l 100 x
        LSET nosuch 0 x
        LSET l x y
        LINSERT l BEFORE c C
        LINSERT l AFTER c D
        LINSERT l AFTER nosuch D
        LINSERT l MIDDLE c D
        LINSERT nosuch BEFORE a b
        LRANGE l 0 -1
        LREM l 1 b
        LREM l -1 b
        LREM l 0 a
        LREM l 0 zz
        LREM l x b
        LREM nosuch 0 a
        LRANGE l 0 -1
        LTRIM l 1 -2
        LRANGE l 0 -1
        LTRIM l 5 1
        EXISTS l
        LTRIM nosuch 0 1
        RPUSH n 1 2 3 4 5 6 7 8
        LTRIM n -3 100
        LRANGE n 0 -1
    "#);
}

#[test]
fn lpos_options() {
    run(r#"
        RPUSH l a b c 1 2 3 c c
        LPOS l c
        LPOS l c RANK 2
        LPOS l c RANK -1
        LPOS l c RANK -2
        LPOS l c COUNT 0
        LPOS l c COUNT 2
        LPOS l c RANK -1 COUNT 0
        LPOS l c MAXLEN 2
        LPOS l c COUNT 0 MAXLEN 7
        LPOS l c RANK 0
        LPOS l c COUNT -1
        LPOS l c MAXLEN -1
        LPOS l c RANK -9223372036854775808
        LPOS l c RANK x
        LPOS l c BOGUS
        LPOS l c RANK
        LPOS l zz
        LPOS l zz COUNT 0
        LPOS nosuch a
        LPOS nosuch a COUNT 1
    "#);
}

#[test]
fn moves_and_multi_pops() {
    run(r#"
        RPUSH src a b c
        RPUSH dst z
        EXPIRE dst 100
        LMOVE src dst LEFT RIGHT
        TTL dst
        DEL dst
        LMOVE src dst RIGHT LEFT
        LRANGE dst 0 -1
        LMOVE src src LEFT RIGHT
        LMOVE src dst UP DOWN
        LMOVE nosuch dst LEFT LEFT
        RPOPLPUSH src dst
        EXISTS src
        LRANGE dst 0 -1
        SET str x
        RPOPLPUSH dst str
        RPOPLPUSH str dst
        RPUSH l1 a b c d
        LMPOP 2 nosuch l1 LEFT
        LMPOP 2 nosuch l1 RIGHT COUNT 2
        LMPOP 1 l1 LEFT COUNT 10
        LMPOP 1 l1 LEFT
        LMPOP 0 l1 LEFT
        LMPOP -1 l1 LEFT
        LMPOP x l1 LEFT
        LMPOP 1 l1 UP
        LMPOP 5 l1 LEFT
        LMPOP 1 l1 LEFT COUNT 0
        LMPOP 1 l1 LEFT COUNT 1 COUNT 2
        LMPOP 1 str LEFT
    "#);
}

#[test]
fn blocking_commands_that_need_not_block() {
    run(r#"
        RPUSH l a b c
        BLPOP l 0
        BRPOP nosuch l 0
        BLMOVE l dst LEFT LEFT 0
        BRPOPLPUSH dst l 0
        BLMPOP 0 2 nosuch l RIGHT COUNT 5
        BLPOP l x
        BLPOP l -1
        BLPOP nosuch inf
        BLPOP nosuch 1e30
        BLPOP nosuch 0.0001
        BLPOP nosuch 0x10p-10
        BLPOP nosuch " 1"
        BLPOP nosuch -inf
        BLPOP l ""
        BLMOVE l dst LEFT UP 0
        SET s v
        BLPOP s 0
        BLMPOP 0.01 1 nosuch LEFT
        BLPOP nosuch 0.01
        BRPOPLPUSH nosuch d 0.01
        MULTI
        BLPOP nosuch 0
        BLMOVE nosuch d LEFT LEFT 0
        BLMPOP 0 1 nosuch LEFT
        EXEC
    "#);
}

#[test]
fn resp3_shapes() {
    run_resp3(
        r#"
        RPUSH l a b
        LPOP nosuch
        LPOP nosuch 2
        LPOS nosuch a
        LMPOP 1 nosuch LEFT
        BLPOP nosuch 0.01
        BRPOPLPUSH nosuch d 0.01
        LPOP l 5
    "#,
    );
}

/// The Redisson fair lock's queue operations on a hash-tagged list and sorted set.
#[test]
fn redisson_fair_lock_shapes() {
    run(r#"
        RPUSH redisson_lock_queue:{lock} c1:1
        ZADD redisson_lock_timeout:{lock} 1700000005000 c1:1
        RPUSH redisson_lock_queue:{lock} c2:1
        ZADD redisson_lock_timeout:{lock} 1700000010000 c2:1
        LINDEX redisson_lock_queue:{lock} 0
        ZSCORE redisson_lock_timeout:{lock} c1:1
        LRANGE redisson_lock_queue:{lock} 0 -1
        ZRANGE redisson_lock_timeout:{lock} 0 -1 WITHSCORES
        ZINCRBY redisson_lock_timeout:{lock} -5000 c2:1
        LPOP redisson_lock_queue:{lock}
        ZREM redisson_lock_timeout:{lock} c1:1
        LREM redisson_lock_queue:{lock} 0 c2:1
        ZREM redisson_lock_timeout:{lock} c2:1
        LINDEX redisson_lock_queue:{lock} 0
        EXISTS redisson_lock_queue:{lock} redisson_lock_timeout:{lock}
        ZSCORE redisson_lock_timeout:{lock} c2:1
    "#);
}

/// COMMAND INFO of every list and sorted-set command agrees with redis-server on arity,
/// flags, legacy key range and ACL categories (key-spec details are the table's business).
#[test]
fn command_info_matches() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    let cmds = "lpush rpush lpushx rpushx lpop rpop llen lindex lrange lset linsert lrem ltrim \
        lpos lmove rpoplpush lmpop blpop brpop blmove brpoplpush blmpop zadd zincrby zrem zcard \
        zscore zmscore zcount zlexcount zrank zrevrank zrange zrangestore zrevrange \
        zrangebyscore zrevrangebyscore zrangebylex zrevrangebylex zremrangebyscore \
        zremrangebyrank zremrangebylex zpopmin zpopmax bzpopmin bzpopmax zmpop bzmpop \
        zrandmember zscan zunionstore zinterstore zdiffstore zunion zinter zdiff zintercard";
    let mut rc = redis::Client::open(format!("redis://{}/", redis.addr))
        .unwrap()
        .get_connection()
        .unwrap();
    let mut tc = redis::Client::open(t.url())
        .unwrap()
        .get_connection()
        .unwrap();
    for c in cmds.split_whitespace() {
        let get = |con: &mut redis::Connection| -> Vec<String> {
            let v: redis::Value = redis::cmd("COMMAND").arg("INFO").arg(c).query(con).unwrap();
            let redis::Value::Array(outer) = v else {
                panic!("{c}: not an array")
            };
            let redis::Value::Array(info) = &outer[0] else {
                panic!("{c}: no info")
            };
            info[1..=6]
                .iter()
                .map(|x| {
                    let mut s = match x {
                        redis::Value::Array(items) => {
                            let mut v: Vec<String> =
                                items.iter().map(|i| format!("{i:?}")).collect();
                            v.sort();
                            v.join(",")
                        }
                        other => format!("{other:?}"),
                    };
                    s.retain(|ch| ch != '"');
                    s
                })
                .collect()
        };
        assert_eq!(get(&mut tc), get(&mut rc), "COMMAND INFO {c}");
    }
}

/// OBJECT ENCODING through every conversion Redis 7.2 makes (listpack to quicklist before
/// a push, LINSERT, LSET or LMOVE would pass `list-max-listpack-size`, back when one node
/// shrinks to half the limit, AUTO after SORT STORE and RESTORE), by count and by bytes,
/// against redis8-server (listpack/quicklist) and redis-server 7.0.15 (always quicklist),
/// with the DUMP payloads.
#[test]
fn encodings_and_conversions() {
    let big = "x".repeat(3000);
    let script = format!(
        r#"
        RPUSH l a b c
        OBJECT ENCODING l
        CONFIG SET list-max-listpack-size 4
        RPUSH l d
        OBJECT ENCODING l
        RPUSH l e
        OBJECT ENCODING l
        RPOP l
        OBJECT ENCODING l
        LPOP l
        OBJECT ENCODING l
        LPOP l
        OBJECT ENCODING l
        LRANGE l 0 -1
        RPUSH m 1 2 3 4
        LINSERT m BEFORE 3 x
        OBJECT ENCODING m
        LRANGE m 0 -1
        LREM m 0 x
        LREM m 0 4
        OBJECT ENCODING m
        LREM m 0 3
        OBJECT ENCODING m
        DEL m
        RPUSH m 1 2 3 4
        LSET m 0 yy
        OBJECT ENCODING m
        RPUSH n 1 2 3 4 5 6 7 8 9
        LTRIM n 1 2
        OBJECT ENCODING n
        RPUSH s 3 1 2 5 4
        SORT s STORE d
        OBJECT ENCODING d
        SORT s LIMIT 0 2 STORE d2
        OBJECT ENCODING d2
        RPUSH src p q r s
        LMOVE d2 src LEFT RIGHT
        OBJECT ENCODING src
        OBJECT ENCODING d2
        CONFIG SET list-max-listpack-size -1
        RPUSH k {big}
        OBJECT ENCODING k
        RPUSH k {big}
        OBJECT ENCODING k
        LPOP k
        OBJECT ENCODING k
        RPUSH r a b c
        DUMP r
        RPUSH big 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20
        LSET big 5 {big}
        OBJECT ENCODING big
        LINDEX big 5
        LRANGE big 0 3
    "#
    );
    run(&script);
    tumbler_tests::diff_against("redis8-server", &script);
}
