//! Differential tests for SORT and SORT_RO against a real redis-server: numeric and ALPHA
//! order, BY and GET patterns (strings, hash fields, `#`, missing keys), LIMIT edge cases,
//! STORE, constant BY (no sorting) on lists, sorted sets and sets, and the errors.

use tumbler_tests::diff_against_redis as run;
use tumbler_tests::diff_against_redis_resp3 as run_resp3;

const SORT: &str = r#"
    RPUSH l 3 1 2 10 -5 2.5
    SORT l
    SORT l DESC
    SORT l ALPHA
    SORT l ALPHA DESC
    SORT l LIMIT 1 2
    SORT l LIMIT -1 2
    SORT l LIMIT 2 -1
    SORT l LIMIT 10 2
    SORT l LIMIT 0 0
    SORT l LIMIT 5 10
    SORT l LIMIT x 1
    SORT l LIMIT 1
    SORT l BY nosort
    SORT l BY nosort DESC
    SORT l BY nosort LIMIT 1 3
    SORT l BY nosort DESC LIMIT 1 3
    SORT l BY nosort LIMIT 9 3
    MSET w_3 30 w_1 10 w_2 20 w_10 5 w_-5 0
    HSET h_3 f c
    HSET h_1 f a
    HSET h_2 f b
    SORT l BY w_*
    SORT l BY w_* DESC
    SORT l BY w_* GET #
    SORT l BY w_* GET # GET w_* GET h_*->f GET nosuch_*
    SORT l BY h_*->f ALPHA
    SORT l BY h_*->f
    SORT l BY h_*-> ALPHA
    SORT l GET h_*->
    SORT l GET nostar
    SORT l BY w_* LIMIT 1 2 GET #
    SORT l BY w_* STORE dst
    LRANGE dst 0 -1
    SORT l GET w_* STORE dst
    LRANGE dst 0 -1
    SORT l LIMIT 0 0 STORE dst
    EXISTS dst
    SORT nosuch
    SORT nosuch STORE dst
    SORT_RO l
    SORT_RO l STORE dst
    SORT_RO l BY w_* DESC GET #
    RPUSH bad 1 x 2
    SORT bad
    SORT bad ALPHA
    RPUSH sp " 7" "" 3
    SORT sp
    RPUSH big 1e400 1
    SORT big
    ZADD z 3 c 1 a 2 b 0 d
    SORT z ALPHA
    SORT z BY nosort
    SORT z BY nosort DESC
    SORT z BY nosort LIMIT 1 2
    SORT z BY nosort DESC LIMIT 1 2
    SORT z
    SADD s 5 3 9 1
    SORT s
    SORT s DESC
    SORT s BY nosort
    SORT s BY nosort STORE dst
    LRANGE dst 0 -1
    SADD t b a c
    SORT t ALPHA
    SORT t BY nosort STORE dst
    LRANGE dst 0 -1
    EVAL "return redis.call('sort', KEYS[1], 'by', 'nosort')" 1 t
    SET str v
    SORT str
    SORT str STORE dst
    SORT l FOO
    SORT l STORE
    SORT l BY
    SORT l GET
    SORT
    COMMAND GETKEYS SORT l STORE a BY x STORE b GET c LIMIT 1 2
    COMMAND GETKEYS SORT l LIMIT store store
    COMMAND GETKEYS SORT_RO l
"#;

#[test]
fn sort() {
    run(SORT);
}

#[test]
fn sort_resp3() {
    run_resp3(SORT);
}
