//! A script's first write is refused when the server is over maxmemory, with Redis' exact
//! error; reads still work, and the server recovers once the limit is lifted.

use tumbler_tests::{diff_script, RedisServer, Tumbler};

#[test]
fn scripts_refuse_writes_over_maxmemory_like_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let t = Tumbler::like(&redis, &[]);
    diff_script(
        &mut t.raw(),
        &mut redis.raw(),
        r#"
        SET x 0
        CONFIG SET maxmemory 1
        EVAL "redis.call('set', 'x', 1)" 0
        EVAL "return redis.pcall('set', 'x', 1)" 0
        EVAL "return redis.call('get', 'x')" 0
        EVAL "return redis.call('incr', 'x')" 0
        CONFIG SET maxmemory 0
        EVAL "return redis.call('incr', 'x')" 0
        GET x
    "#,
    );
}
