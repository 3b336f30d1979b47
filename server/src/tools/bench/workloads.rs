//! The built-in workloads of `tumbler bench --workload NAME`, and the lock scripts they send.
//!
//! A workload is a cycle of commands each client sends in turn (one `{rand}` is drawn per
//! cycle, so an acquire and the unlock after it name the same key), the scripts to SCRIPT
//! LOAD first, and commands to run once per round before the clock starts (a lock held by
//! somebody else, for the contended case). Keys carry `{round}`, so a round never finds
//! the locks an earlier round left behind (their 30 s leases outlive the round).

use super::template::{CmdTemplate, TemplateError};

/// Redisson's `RLock` acquire (RedissonLock.tryLockInnerAsync), the text bench/scripts.sh
/// and bench/ab.sh send. KEYS: lock. ARGV: lease ms, `<uuid>:<thread>`.
/// Replies nil when acquired (or re-entered), else the holder's PTTL.
pub const REDISSON_LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";

/// Redisson's `RLock` unlock (RedissonLock.unlockInnerAsync), as bench/scripts.sh sends it.
/// KEYS: lock, channel. ARGV: unlock message, lease ms, `<uuid>:<thread>`.
pub const REDISSON_UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1) if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 else redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], ARGV[1]) return 1 end";

/// Redisson's fair lock acquire (RedissonFairLock.tryLockInnerAsync), the text
/// tests/tests/scripting_fairlock.rs checks against redis-server.
/// KEYS: lock, queue, timeout zset. ARGV: lease ms, thread id, thread wait ms, now ms.
pub const REDISSON_FAIR_LOCK: &str = r#"
while true do
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0);
    if firstThreadId2 == false then
        break;
    end;
    local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));
    if timeout <= tonumber(ARGV[4]) then
        redis.call('zrem', KEYS[3], firstThreadId2);
        redis.call('lpop', KEYS[2]);
    else
        break;
    end;
end;

if (redis.call('exists', KEYS[1]) == 0)
    and ((redis.call('exists', KEYS[2]) == 0)
        or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
    redis.call('lpop', KEYS[2]);
    redis.call('zrem', KEYS[3], ARGV[2]);
    local keys = redis.call('zrange', KEYS[3], 0, -1);
    for i = 1, #keys, 1 do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);
    end;
    redis.call('hset', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2],1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;

local timeout = redis.call('zscore', KEYS[3], ARGV[2]);
if timeout ~= false then
    return timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]);
end;

local lastThreadId = redis.call('lindex', KEYS[2], -1);
local ttl;
if lastThreadId ~= false and lastThreadId ~= ARGV[2] then
    ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);
else
    ttl = redis.call('pttl', KEYS[1]);
end;
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;
"#;

/// Redisson's fair lock unlock (RedissonFairLock.unlockInnerAsync).
/// KEYS: lock, queue, timeout zset, channel prefix. ARGV: message, lease ms, thread id, now ms.
pub const REDISSON_FAIR_UNLOCK: &str = r#"
while true do
    local firstThreadId2 = redis.call('lindex', KEYS[2], 0);
    if firstThreadId2 == false then
        break;
    end;
    local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));
    if timeout <= tonumber(ARGV[4]) then
        redis.call('zrem', KEYS[3], firstThreadId2);
        redis.call('lpop', KEYS[2]);
    else
        break;
    end;
end;

if (redis.call('exists', KEYS[1]) == 0) then
    local nextThreadId = redis.call('lindex', KEYS[2], 0);
    if nextThreadId ~= false then
        redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]);
    end;
    return 1;
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    return 0;
end;

redis.call('del', KEYS[1]);
local nextThreadId = redis.call('lindex', KEYS[2], 0);
if nextThreadId ~= false then
    redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]);
end;
return 1;
"#;

/// RSemaphore's try-acquire: take ARGV[1] permits if that many are there.
/// KEYS: semaphore. Replies 1 (taken) or 0.
pub const SEMAPHORE_ACQUIRE: &str = "local value = redis.call('get', KEYS[1]); if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then redis.call('decrby', KEYS[1], ARGV[1]); return 1; end; return 0;";

/// RSemaphore's release: give ARGV[1] permits back and tell the waiters.
/// KEYS: semaphore, channel.
pub const SEMAPHORE_RELEASE: &str = "local value = redis.call('incrby', KEYS[1], ARGV[1]); redis.call('publish', KEYS[2], value); return value;";

/// The compare-and-delete that goes with `SET key token NX PX ms` (redis-py `Lock`,
/// node-redlock, the Redis docs' single-instance lock).
pub const COMPARE_AND_DELETE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// An argument: a template, or the SHA of the workload's n-th script (known once loaded).
#[derive(Debug, Clone)]
pub enum Arg {
    T(String),
    Sha(usize),
}

/// A built-in workload, before the scripts are loaded on a server.
pub struct Workload {
    pub name: &'static str,
    pub about: &'static str,
    pub scripts: Vec<&'static str>,
    /// Sent once per round by one connection, before the clock starts.
    pub setup: Vec<Vec<Arg>>,
    /// Each client sends these in turn.
    pub cycle: Vec<Vec<Arg>>,
}

fn t(s: &str) -> Arg {
    Arg::T(s.to_string())
}

/// `EVALSHA <sha n> <keys.len()> keys... args...`.
fn evalsha(n: usize, keys: &[&str], args: &[&str]) -> Vec<Arg> {
    let mut v = vec![t("EVALSHA"), Arg::Sha(n), Arg::T(keys.len().to_string())];
    v.extend(keys.iter().map(|k| t(k)));
    v.extend(args.iter().map(|a| t(a)));
    v
}

/// Names and one-line descriptions, for `--workload list` and the error on an unknown name.
pub const NAMES: &[&str] = &[
    "redisson-lock",
    "redisson-reentry",
    "redisson-unlock",
    "redisson-contended",
    "redisson-fairlock",
    "redisson-semaphore",
    "set-nx-px",
    "native-lock",
];

/// The built-in workload `name`; `now_ms` is the "current time" the fair lock scripts take.
pub fn builtin(name: &str, now_ms: u64) -> Option<Workload> {
    let now = now_ms.to_string();
    let w = match name {
        "redisson-lock" => Workload {
            name: "redisson-lock",
            about: "RLock acquire on fresh keys (lock:{rand}): EXISTS, HSET, PEXPIRE",
            scripts: vec![REDISSON_LOCK],
            setup: vec![],
            cycle: vec![evalsha(
                0,
                &["bench:{round}:lock:{rand}"],
                &["30000", "bench-uuid:{client}"],
            )],
        },
        "redisson-reentry" => Workload {
            name: "redisson-reentry",
            about: "RLock re-entry: each client re-acquires its own held lock (HINCRBY, PEXPIRE)",
            scripts: vec![REDISSON_LOCK],
            setup: vec![],
            cycle: vec![evalsha(
                0,
                &["bench:{round}:mine:{client}"],
                &["30000", "bench-uuid:{client}"],
            )],
        },
        "redisson-unlock" => Workload {
            name: "redisson-unlock",
            about: "RLock acquire then unlock of the same fresh key (HINCRBY -1, DEL, PUBLISH); both calls count",
            scripts: vec![REDISSON_LOCK, REDISSON_UNLOCK],
            setup: vec![],
            cycle: vec![
                evalsha(
                    0,
                    &["bench:{round}:lock:{rand}"],
                    &["30000", "bench-uuid:{client}"],
                ),
                evalsha(
                    1,
                    &[
                        "bench:{round}:lock:{rand}",
                        "redisson_lock__channel:{{bench:{round}:lock:{rand}}}",
                    ],
                    &["0", "30000", "bench-uuid:{client}"],
                ),
            ],
        },
        "redisson-contended" => Workload {
            name: "redisson-contended",
            about: "RLock acquire of one lock another owner holds: every call replies the PTTL",
            scripts: vec![REDISSON_LOCK],
            setup: vec![evalsha(
                0,
                &["bench:{round}:held"],
                &["3600000", "bench-holder:1"],
            )],
            cycle: vec![evalsha(
                0,
                &["bench:{round}:held"],
                &["30000", "bench-uuid:{client}"],
            )],
        },
        "redisson-fairlock" => Workload {
            name: "redisson-fairlock",
            about: "RFairLock acquire then unlock of the same fresh key (queue and timeout zset checked)",
            scripts: vec![REDISSON_FAIR_LOCK, REDISSON_FAIR_UNLOCK],
            setup: vec![],
            cycle: vec![
                evalsha(
                    0,
                    &[
                        "bench:{round}:fair:{rand}",
                        "redisson_lock_queue:{{bench:{round}:fair:{rand}}}",
                        "redisson_lock_timeout:{{bench:{round}:fair:{rand}}}",
                    ],
                    &["30000", "bench-uuid:{client}", "300000", &now],
                ),
                evalsha(
                    1,
                    &[
                        "bench:{round}:fair:{rand}",
                        "redisson_lock_queue:{{bench:{round}:fair:{rand}}}",
                        "redisson_lock_timeout:{{bench:{round}:fair:{rand}}}",
                        "redisson_lock__channel:{{bench:{round}:fair:{rand}}}",
                    ],
                    &["0", "30000", "bench-uuid:{client}", &now],
                ),
            ],
        },
        "redisson-semaphore" => Workload {
            name: "redisson-semaphore",
            about: "RSemaphore release then try-acquire of one permit on a fresh key (INCRBY, PUBLISH; GET, DECRBY)",
            scripts: vec![SEMAPHORE_RELEASE, SEMAPHORE_ACQUIRE],
            setup: vec![],
            cycle: vec![
                evalsha(
                    0,
                    &[
                        "bench:{round}:sem:{rand}",
                        "redisson_sc:{{bench:{round}:sem:{rand}}}",
                    ],
                    &["1"],
                ),
                evalsha(1, &["bench:{round}:sem:{rand}"], &["1"]),
            ],
        },
        "set-nx-px" => Workload {
            name: "set-nx-px",
            about: "SET key token NX PX 30000 on a fresh key, then the Lua compare-and-delete",
            scripts: vec![COMPARE_AND_DELETE],
            setup: vec![],
            cycle: vec![
                vec![
                    t("SET"),
                    t("bench:{round}:nx:{rand}"),
                    t("token-{client}-{seq}"),
                    t("NX"),
                    t("PX"),
                    t("30000"),
                ],
                evalsha(0, &["bench:{round}:nx:{rand}"], &["token-{client}-{seq}"]),
            ],
        },
        "native-lock" => Workload {
            name: "native-lock",
            about: "Tumbler's LOCK.ACQUIRE then LOCK.RELEASE of a fresh key (redis-server has no such commands: its calls count as errors)",
            scripts: vec![],
            setup: vec![],
            cycle: vec![
                vec![
                    t("LOCK.ACQUIRE"),
                    t("bench:{round}:native:{rand}"),
                    t("bench-{client}"),
                    t("30000"),
                ],
                vec![
                    t("LOCK.RELEASE"),
                    t("bench:{round}:native:{rand}"),
                    t("bench-{client}"),
                ],
            ],
        },
        _ => return None,
    };
    Some(w)
}

/// Resolves `Arg::Sha` against the SHAs a server returned and parses the templates.
pub fn resolve(cmd: &[Arg], shas: &[String]) -> Result<CmdTemplate, TemplateError> {
    let args: Vec<String> = cmd
        .iter()
        .map(|a| match a {
            Arg::T(s) => s.clone(),
            Arg::Sha(n) => shas[*n].clone(),
        })
        .collect();
    CmdTemplate::parse(&args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_and_its_scripts_compile() {
        let lua = mlua::Lua::new();
        for name in NAMES {
            let w = builtin(name, 1).unwrap();
            assert_eq!(w.name, *name);
            let shas: Vec<String> = w.scripts.iter().map(|_| "0".repeat(40)).collect();
            for c in w.setup.iter().chain(&w.cycle) {
                resolve(c, &shas).unwrap();
            }
            for s in &w.scripts {
                lua.load(*s).into_function().unwrap();
            }
        }
        assert!(builtin("nope", 1).is_none());
    }
}
