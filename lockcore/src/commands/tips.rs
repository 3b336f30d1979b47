//! COMMAND INFO's tips (request/response policies, nondeterministic output) as Redis 8.0,
//! Valkey 9.1 and Redis 7.0 give them. The rows of the command table carry no tips, so
//! COMMAND INFO reads them from here.

use crate::personality::Personality;

/// (full name, Redis 8's tips, Valkey's ("=": the same), Redis 7.0's ("=": the same)), tips
/// separated by spaces, sorted by name; commands without tips anywhere are absent.
static TIPS: &[(&str, &str, &str, &str)] = &[
    (
        "acl|deluser",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "",
    ),
    (
        "acl|save",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "",
    ),
    (
        "acl|setuser",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "",
    ),
    ("client|info", "nondeterministic_output", "=", "="),
    ("client|list", "nondeterministic_output", "=", "="),
    (
        "client|setinfo",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "client|setname",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "",
    ),
    (
        "clusterscan",
        "",
        "nondeterministic_output request_policy:special response_policy:special",
        "=",
    ),
    ("cluster|bumpepoch", "nondeterministic_output", "=", "="),
    (
        "cluster|count-failure-reports",
        "nondeterministic_output",
        "=",
        "=",
    ),
    ("cluster|getkeysinslot", "nondeterministic_output", "=", "="),
    ("cluster|info", "nondeterministic_output", "=", "="),
    ("cluster|links", "nondeterministic_output", "=", "="),
    ("cluster|myshardid", "nondeterministic_output", "=", "="),
    ("cluster|nodes", "nondeterministic_output", "=", "="),
    ("cluster|replicas", "nondeterministic_output", "=", "="),
    ("cluster|shards", "nondeterministic_output", "=", "="),
    ("cluster|slaves", "nondeterministic_output", "=", "="),
    (
        "cluster|slot-stats",
        "",
        "nondeterministic_output request_policy:all_shards",
        "=",
    ),
    ("cluster|slots", "nondeterministic_output", "=", "="),
    ("command", "nondeterministic_output_order", "=", "="),
    (
        "commandlog|get",
        "",
        "request_policy:all_nodes nondeterministic_output",
        "=",
    ),
    (
        "commandlog|len",
        "",
        "request_policy:all_nodes response_policy:agg_sum nondeterministic_output",
        "=",
    ),
    (
        "commandlog|reset",
        "",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
    ),
    ("command|docs", "nondeterministic_output_order", "=", "="),
    ("command|info", "nondeterministic_output_order", "=", "="),
    ("command|list", "nondeterministic_output_order", "=", "="),
    (
        "config|resetstat",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "",
    ),
    (
        "config|rewrite",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "",
    ),
    (
        "config|set",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "dbsize",
        "request_policy:all_shards response_policy:agg_sum",
        "=",
        "=",
    ),
    (
        "del",
        "request_policy:multi_shard response_policy:agg_sum",
        "=",
        "=",
    ),
    ("dump", "nondeterministic_output", "=", "="),
    (
        "exists",
        "request_policy:multi_shard response_policy:agg_sum",
        "=",
        "=",
    ),
    (
        "flushall",
        "request_policy:all_shards response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "flushdb",
        "request_policy:all_shards response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "function|delete",
        "request_policy:all_shards response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "function|flush",
        "request_policy:all_shards response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "function|kill",
        "request_policy:all_shards response_policy:one_succeeded",
        "=",
        "=",
    ),
    ("function|list", "nondeterministic_output_order", "=", "="),
    (
        "function|load",
        "request_policy:all_shards response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "function|restore",
        "request_policy:all_shards response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "function|stats",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        "=",
        "=",
    ),
    ("hgetall", "nondeterministic_output_order", "=", "="),
    ("hkeys", "nondeterministic_output_order", "=", "="),
    ("hpttl", "nondeterministic_output", "", "="),
    ("hrandfield", "nondeterministic_output", "=", "="),
    ("hscan", "nondeterministic_output", "=", "="),
    ("httl", "nondeterministic_output", "", "="),
    ("hvals", "nondeterministic_output_order", "=", "="),
    (
        "info",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        "=",
        "=",
    ),
    (
        "keys",
        "request_policy:all_shards nondeterministic_output_order",
        "=",
        "=",
    ),
    ("lastsave", "nondeterministic_output", "=", "="),
    (
        "latency|doctor",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        "=",
        "=",
    ),
    (
        "latency|graph",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        "=",
        "=",
    ),
    (
        "latency|histogram",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        "=",
        "=",
    ),
    (
        "latency|history",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        "=",
        "=",
    ),
    (
        "latency|latest",
        "nondeterministic_output request_policy:all_nodes response_policy:special",
        "=",
        "=",
    ),
    (
        "latency|reset",
        "request_policy:all_nodes response_policy:agg_sum",
        "=",
        "request_policy:all_nodes response_policy:all_succeeded",
    ),
    (
        "memory|doctor",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        "=",
        "=",
    ),
    (
        "memory|malloc-stats",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        "=",
        "=",
    ),
    (
        "memory|purge",
        "request_policy:all_shards response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "memory|stats",
        "nondeterministic_output request_policy:all_shards response_policy:special",
        "=",
        "=",
    ),
    ("mget", "request_policy:multi_shard", "=", "="),
    ("migrate", "nondeterministic_output", "=", "="),
    ("module|list", "nondeterministic_output_order", "=", "="),
    (
        "mset",
        "request_policy:multi_shard response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "msetex",
        "",
        "request_policy:multi_shard response_policy:all_succeeded",
        "=",
    ),
    (
        "msetnx",
        "",
        "=",
        "request_policy:multi_shard response_policy:agg_min",
    ),
    ("object|encoding", "nondeterministic_output", "=", "="),
    ("object|freq", "nondeterministic_output", "=", "="),
    ("object|idletime", "nondeterministic_output", "=", "="),
    ("object|refcount", "nondeterministic_output", "=", "="),
    (
        "ping",
        "request_policy:all_shards response_policy:all_succeeded",
        "=",
        "=",
    ),
    ("pttl", "nondeterministic_output", "=", "="),
    (
        "randomkey",
        "request_policy:all_shards response_policy:special nondeterministic_output",
        "=",
        "request_policy:all_shards nondeterministic_output",
    ),
    (
        "scan",
        "nondeterministic_output request_policy:special response_policy:special",
        "=",
        "nondeterministic_output request_policy:special",
    ),
    (
        "script|exists",
        "request_policy:all_shards response_policy:agg_logical_and",
        "=",
        "=",
    ),
    (
        "script|flush",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "=",
    ),
    (
        "script|kill",
        "request_policy:all_shards response_policy:one_succeeded",
        "=",
        "=",
    ),
    (
        "script|load",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "=",
    ),
    ("sdiff", "nondeterministic_output_order", "=", "="),
    ("sinter", "nondeterministic_output_order", "=", "="),
    (
        "slowlog|get",
        "request_policy:all_nodes nondeterministic_output",
        "=",
        "=",
    ),
    (
        "slowlog|len",
        "request_policy:all_nodes response_policy:agg_sum nondeterministic_output",
        "=",
        "=",
    ),
    (
        "slowlog|reset",
        "request_policy:all_nodes response_policy:all_succeeded",
        "=",
        "=",
    ),
    ("smembers", "nondeterministic_output_order", "=", "="),
    ("spop", "nondeterministic_output", "=", "="),
    ("srandmember", "nondeterministic_output", "=", "="),
    ("sscan", "nondeterministic_output", "=", "="),
    ("sunion", "nondeterministic_output_order", "=", "="),
    ("time", "nondeterministic_output", "=", "="),
    (
        "touch",
        "request_policy:multi_shard response_policy:agg_sum",
        "=",
        "=",
    ),
    ("ttl", "nondeterministic_output", "=", "="),
    (
        "unlink",
        "request_policy:multi_shard response_policy:agg_sum",
        "=",
        "=",
    ),
    (
        "wait",
        "request_policy:all_shards response_policy:agg_min",
        "=",
        "=",
    ),
    (
        "waitaof",
        "request_policy:all_shards response_policy:agg_min",
        "=",
        "=",
    ),
    ("xadd", "nondeterministic_output", "=", "="),
    ("xautoclaim", "nondeterministic_output", "=", "="),
    ("xclaim", "nondeterministic_output", "=", "="),
    ("xinfo|consumers", "nondeterministic_output", "=", "="),
    ("xpending", "nondeterministic_output", "=", "="),
    ("xtrim", "nondeterministic_output", "=", "="),
    ("zrandmember", "nondeterministic_output", "=", "="),
    ("zscan", "nondeterministic_output", "=", "="),
];

/// The tips COMMAND INFO shows for `full_name` in personality `p`.
pub fn tips_in(p: &Personality, full_name: &str) -> impl Iterator<Item = &'static str> {
    let row = TIPS
        .binary_search_by(|r| r.0.cmp(full_name))
        .ok()
        .map(|i| TIPS[i]);
    let tips = row.map_or("", |(_, redis, valkey, redis70)| {
        p.pick(redis, valkey, redis70)
    });
    tips.split_whitespace()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_answers_per_release() {
        assert!(TIPS.windows(2).all(|w| w[0].0 < w[1].0));
        let r70 = Personality::parse("redis-7.0").unwrap();
        let r80 = Personality::parse("redis-8.0").unwrap();
        let v91 = Personality::parse("valkey-9.1").unwrap();
        let tips = |p, n| tips_in(p, n).collect::<Vec<_>>().join(" ");
        assert_eq!(tips(&r70, "get"), "");
        assert_eq!(
            tips(&r80, "scan"),
            "nondeterministic_output request_policy:special response_policy:special"
        );
        assert_eq!(
            tips(&r70, "scan"),
            "nondeterministic_output request_policy:special"
        );
        assert_eq!(tips(&v91, "hpttl"), "");
        assert_eq!(tips(&r80, "hpttl"), "nondeterministic_output");
    }
}
