//! Which keys a command reads and which it writes, as ACL key patterns (`%R~`, `%W~`) need.
//!
//! This is the access part of Redis 7.0's key specs (`src/commands/*.json`): a key spec
//! flagged ACCESS reads the key's value (R); INSERT, UPDATE or DELETE write it (W); a spec
//! with neither (EXISTS, TYPE, TTL-like metadata) needs no particular permission, so any
//! pattern that matches the key name allows it. Commands with several key specs list them
//! in order; the first key gets the first spec and every later key the last one (source and
//! destination of COPY, SMOVE, *STORE). Commands not listed (Tumbler's own) read if
//! readonly and read+write if write.

use bytes::Bytes;
use std::collections::HashMap;
use std::sync::OnceLock;

use crate::engine::spec::{flag, CommandSpec};

/// (command, access of each key spec: "R", "W", "RW" or "-").
static KEY_SPECS: &[(&str, &str)] = &[
    ("append", "W"),
    ("bitcount", "R"),
    ("bitfield", "RW"),
    ("bitfield_ro", "R"),
    ("bitop", "W R"),
    ("bitpos", "R"),
    ("blmove", "RW W"),
    ("blmpop", "RW"),
    ("blpop", "RW"),
    ("brpop", "RW"),
    ("brpoplpush", "RW W"),
    ("bzmpop", "RW"),
    ("bzpopmax", "RW"),
    ("bzpopmin", "RW"),
    ("copy", "R W"),
    ("decr", "RW"),
    ("decrby", "RW"),
    ("del", "W"),
    ("dump", "R"),
    ("eval", "RW"),
    ("eval_ro", "R"),
    ("evalsha", "RW"),
    ("evalsha_ro", "R"),
    ("exists", "-"),
    ("expire", "W"),
    ("expireat", "W"),
    ("expiretime", "R"),
    ("fcall", "RW"),
    ("fcall_ro", "R"),
    ("geoadd", "W"),
    ("geodist", "R"),
    ("geohash", "R"),
    ("geopos", "R"),
    ("georadius", "R W W"),
    ("georadius_ro", "R"),
    ("georadiusbymember", "R W W"),
    ("georadiusbymember_ro", "R"),
    ("geosearch", "R"),
    ("geosearchstore", "W R"),
    ("get", "R"),
    ("getbit", "R"),
    ("getdel", "RW"),
    ("getex", "RW"),
    ("getrange", "R"),
    ("getset", "RW"),
    ("hdel", "W"),
    ("hexists", "-"),
    ("hget", "R"),
    ("hgetall", "R"),
    ("hincrby", "RW"),
    ("hincrbyfloat", "RW"),
    ("hkeys", "R"),
    ("hlen", "-"),
    ("hmget", "R"),
    ("hmset", "W"),
    ("hrandfield", "R"),
    ("hscan", "R"),
    ("hset", "W"),
    ("hsetnx", "W"),
    ("hstrlen", "-"),
    ("hvals", "R"),
    ("incr", "RW"),
    ("incrby", "RW"),
    ("incrbyfloat", "RW"),
    ("lcs", "R"),
    ("lindex", "R"),
    ("linsert", "W"),
    ("llen", "-"),
    ("lmove", "RW W"),
    ("lmpop", "RW"),
    ("lpop", "RW"),
    ("lpos", "R"),
    ("lpush", "W"),
    ("lpushx", "W"),
    ("lrange", "R"),
    ("lrem", "W"),
    ("lset", "W"),
    ("ltrim", "W"),
    ("memory|usage", "-"),
    ("mget", "R"),
    ("migrate", "RW RW"),
    ("move", "RW"),
    ("mset", "W"),
    ("msetnx", "W"),
    ("object|encoding", "-"),
    ("object|freq", "-"),
    ("object|idletime", "-"),
    ("object|refcount", "-"),
    ("persist", "W"),
    ("pexpire", "W"),
    ("pexpireat", "W"),
    ("pexpiretime", "R"),
    ("pfadd", "W"),
    ("pfcount", "R"),
    ("pfdebug", "R"),
    ("pfmerge", "RW R"),
    ("psetex", "W"),
    ("pttl", "R"),
    ("rename", "RW W"),
    ("renamenx", "RW W"),
    ("restore-asking", "W"),
    ("restore", "W"),
    ("rpop", "RW"),
    ("rpoplpush", "RW W"),
    ("rpush", "W"),
    ("rpushx", "W"),
    ("sadd", "W"),
    ("scard", "-"),
    ("sdiff", "R"),
    ("sdiffstore", "W R"),
    ("set", "RW"),
    ("setbit", "RW"),
    ("setex", "W"),
    ("setnx", "W"),
    ("setrange", "W"),
    ("sinter", "R"),
    ("sintercard", "R"),
    ("sinterstore", "W R"),
    ("sismember", "-"),
    ("smembers", "R"),
    ("smismember", "R"),
    ("smove", "RW W"),
    // Redis' middle spec (BY/GET patterns) names no key Tumbler reports: the keys are the
    // sorted key and the STORE destination.
    ("sort", "R W"),
    ("sort_ro", "R R"),
    ("spop", "RW"),
    ("spublish", "-"),
    ("srandmember", "R"),
    ("srem", "W"),
    ("sscan", "R"),
    ("ssubscribe", "-"),
    ("strlen", "-"),
    ("substr", "R"),
    ("sunion", "R"),
    ("sunionstore", "W R"),
    ("sunsubscribe", "-"),
    ("touch", "-"),
    ("ttl", "R"),
    ("type", "-"),
    ("unlink", "W"),
    ("watch", "-"),
    ("xack", "W"),
    ("xadd", "W"),
    ("xautoclaim", "W"),
    ("xclaim", "W"),
    ("xdel", "W"),
    ("xgroup|create", "W"),
    ("xgroup|createconsumer", "W"),
    ("xgroup|delconsumer", "W"),
    ("xgroup|destroy", "W"),
    ("xgroup|setid", "W"),
    ("xinfo|consumers", "R"),
    ("xinfo|groups", "R"),
    ("xinfo|stream", "R"),
    ("xlen", "-"),
    ("xpending", "R"),
    ("xrange", "R"),
    ("xread", "R"),
    ("xreadgroup", "R"),
    ("xrevrange", "R"),
    ("xsetid", "W"),
    ("xtrim", "W"),
    ("zadd", "W"),
    ("zcard", "-"),
    ("zcount", "R"),
    ("zdiff", "R"),
    ("zdiffstore", "W R"),
    ("zincrby", "RW"),
    ("zinter", "R"),
    ("zintercard", "R"),
    ("zinterstore", "W R"),
    ("zlexcount", "R"),
    ("zmpop", "RW"),
    ("zmscore", "R"),
    ("zpopmax", "RW"),
    ("zpopmin", "RW"),
    ("zrandmember", "R"),
    ("zrange", "R"),
    ("zrangebylex", "R"),
    ("zrangebyscore", "R"),
    ("zrangestore", "W R"),
    ("zrank", "R"),
    ("zrem", "W"),
    ("zremrangebylex", "W"),
    ("zremrangebyrank", "W"),
    ("zremrangebyscore", "W"),
    ("zrevrange", "R"),
    ("zrevrangebylex", "R"),
    ("zrevrangebyscore", "R"),
    ("zrevrank", "R"),
    ("zscan", "R"),
    ("zscore", "R"),
    ("zunion", "R"),
    ("zunionstore", "W R"),
];

fn table() -> &'static HashMap<&'static str, Vec<&'static str>> {
    static T: OnceLock<HashMap<&'static str, Vec<&'static str>>> = OnceLock::new();
    T.get_or_init(|| {
        KEY_SPECS
            .iter()
            .map(|(n, f)| (*n, f.split(' ').collect()))
            .collect()
    })
}

/// True if the command's "keys" are shard channels (SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE):
/// their key specs are flagged NOT_KEY, so cluster routing uses them but ACL key
/// patterns do not apply (channel patterns do).
pub fn keys_are_channels(spec: &CommandSpec) -> bool {
    spec.parent.is_empty() && matches!(spec.name, "spublish" | "ssubscribe" | "sunsubscribe")
}

/// (reads, writes) for the `nth` key (0-based, in [`CommandSpec::key_positions`] order) of
/// `argv`.
pub fn key_access(spec: &CommandSpec, argv: &[Bytes], nth: usize) -> (bool, bool) {
    let name = spec.full_name();
    let Some(specs) = table().get(name.as_str()) else {
        return (
            !spec.has(flag::WRITE) || spec.has(flag::READONLY),
            spec.has(flag::WRITE),
        );
    };
    let f = specs[nth.min(specs.len() - 1)];
    let (mut r, w) = (f.contains('R'), f.contains('W'));
    // SET's key spec has VARIABLE_FLAGS: it reads the old value only with GET.
    if name == "set" {
        r = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
    }
    // BITFIELD only reads when every operation is a GET (Redis' bitfieldGetKeys); a
    // malformed one counts as a write, the safer guess.
    if name == "bitfield" {
        let mut i = 2;
        let mut readonly = true;
        while i < argv.len() {
            let left = argv.len() - i - 1;
            let op = &argv[i];
            if op.eq_ignore_ascii_case(b"get") && left >= 2 {
                i += 3;
            } else if op.eq_ignore_ascii_case(b"overflow") && left >= 1 {
                i += 2;
            } else {
                readonly = false;
                break;
            }
        }
        return (true, !readonly);
    }
    (r, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<Bytes> {
        v.iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    #[test]
    fn access_follows_redis_key_specs() {
        let spec = |n: &str| crate::commands::lookup(n.as_bytes()).unwrap();
        assert_eq!(
            key_access(spec("get"), &argv(&["get", "k"]), 0),
            (true, false)
        );
        assert_eq!(
            key_access(spec("lpush"), &argv(&["lpush", "k", "v"]), 0),
            (false, true)
        );
        assert_eq!(
            key_access(spec("incr"), &argv(&["incr", "k"]), 0),
            (true, true)
        );
        assert_eq!(
            key_access(spec("set"), &argv(&["set", "k", "v"]), 0),
            (false, true)
        );
        assert_eq!(
            key_access(spec("set"), &argv(&["set", "k", "v", "GET"]), 0),
            (true, true)
        );
        let copy = argv(&["copy", "a", "b"]);
        assert_eq!(key_access(spec("copy"), &copy, 0), (true, false));
        assert_eq!(key_access(spec("copy"), &copy, 1), (false, true));
        assert_eq!(
            key_access(spec("exists"), &argv(&["exists", "k"]), 0),
            (false, false)
        );
    }
}
