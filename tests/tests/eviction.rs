//! maxmemory eviction end to end over TCP: each policy evicts the keys Redis' policy would
//! prefer (statistically), volatile policies never touch keys without a TTL, noeviction
//! answers -OOM, used memory stays near the limit, an evicted key looks like a deleted one
//! (WATCH, native-lock waiters), and the deterministic parts (config values and errors,
//! OBJECT FREQ, the OOM text) match redis-server byte for byte.
//!
//! This test binary installs Tumbler's counting allocator, as the `tumbler` binary does, so
//! `used_memory` is the allocated bytes of this process. Tests that fill memory take
//! [`SERIAL`] so that one test's keys do not count against another's limit, and set
//! `maxmemory` relative to the current `used_memory`.

use std::sync::Mutex;
use std::time::Duration;

use tumbler_tests::{diff_against_redis, Raw, Tumbler};

#[global_allocator]
static ALLOC: tumbler::state::memory::CountingAlloc = tumbler::state::memory::CountingAlloc;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn info_field(c: &mut Raw, section: &str, field: &str) -> String {
    let info = c.cmd_str(&["INFO", section]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}: {info}"))
        .trim()
        .to_string()
}

fn used(c: &mut Raw) -> i64 {
    info_field(c, "memory", "used_memory").parse().unwrap()
}

fn ok(c: &mut Raw, args: &[&str]) {
    assert_eq!(c.cmd_str(args), "+OK\r\n", "{args:?}");
}

const VALUE: &str = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv";

/// Writes `n` keys `{prefix}{i}` (pipelined), with `EX ttl(i)` where that gives one.
fn fill(c: &mut Raw, prefix: &str, n: usize, ttl: impl Fn(usize) -> Option<u64>) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        for &i in chunk {
            let k = format!("{prefix}{i}");
            match ttl(i) {
                Some(t) => c.send(&["SET", &k, VALUE, "EX", &t.to_string()]),
                None => c.send(&["SET", &k, VALUE]),
            }
        }
        for _ in chunk {
            assert_eq!(&c.read_reply()[..], b"+OK\r\n");
        }
    }
}

/// Which of `{prefix}0..n` still exist.
fn alive(c: &mut Raw, prefix: &str, n: usize) -> Vec<bool> {
    let mut out = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        for &i in chunk {
            c.send(&["EXISTS", &format!("{prefix}{i}")]);
        }
        for _ in chunk {
            out.push(&c.read_reply()[..] == b":1\r\n");
        }
    }
    out
}

/// How many of `{prefix}0..n` still exist.
fn surviving(c: &mut Raw, prefix: &str, n: usize) -> usize {
    alive(c, prefix, n).into_iter().filter(|a| *a).count()
}

/// How many keys were lost among the even and the odd indices of `{prefix}0..n`.
fn lost_even_odd(c: &mut Raw, prefix: &str, n: usize) -> (usize, usize) {
    let a = alive(c, prefix, n);
    let lost = |parity| (0..n).filter(|i| i % 2 == parity && !a[*i]).count();
    (lost(0), lost(1))
}

fn evicted(c: &mut Raw) -> i64 {
    info_field(c, "stats", "evicted_keys").parse().unwrap()
}

/// Lowers maxmemory step by step (CONFIG SET evicts at once, as in Redis) until at least
/// `keys` keys were evicted; returns the limit reached. Stepping rather than computing the
/// limit from a per-key size keeps the tests independent of how many bytes a key takes.
fn squeeze(c: &mut Raw, keys: usize) -> i64 {
    let start = evicted(c);
    let mut max = used(c);
    loop {
        max -= 4096;
        assert!(max > 0, "nothing evicted");
        ok(c, &["CONFIG", "SET", "maxmemory", &max.to_string()]);
        if evicted(c) - start >= keys as i64 {
            return max;
        }
    }
}

/// Touches `{prefix}i` for the `i` in `which` with GET, `times` times each.
fn touch(c: &mut Raw, prefix: &str, which: impl Iterator<Item = usize>, times: usize) {
    let keys: Vec<String> = which.map(|i| format!("{prefix}{i}")).collect();
    for _ in 0..times {
        for k in &keys {
            c.send(&["GET", k]);
        }
        for _ in &keys {
            c.read_reply();
        }
    }
}

const N: usize = 2000;

/// allkeys-lru: keys read after the others were written survive; the untouched half pays.
#[test]
fn allkeys_lru_evicts_the_least_recently_used() {
    let _s = serial();
    let t = Tumbler::start();
    let mut c = t.raw();
    fill(&mut c, "k", N, |_| None);
    std::thread::sleep(Duration::from_millis(20));
    touch(&mut c, "k", (0..N).filter(|i| i % 2 == 0), 1);
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    squeeze(&mut c, N / 4);
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    let (lost_hot, lost_cold) = lost_even_odd(&mut c, "k", N);
    eprintln!("allkeys-lru evicted {lost_hot} touched and {lost_cold} untouched keys");
    assert!(lost_cold > 0, "nothing was evicted");
    // Redis' sampling with a pool of 16 picks an untouched key nearly always.
    assert!(
        lost_hot * 10 <= lost_cold,
        "recently used keys evicted too often: {lost_hot} touched vs {lost_cold} untouched"
    );
    let evicted: usize = info_field(&mut c, "stats", "evicted_keys").parse().unwrap();
    assert_eq!(evicted, lost_hot + lost_cold);
}

/// allkeys-lfu: keys read often survive keys read once, with lfu-log-factor 0 (every
/// access counts).
#[test]
fn allkeys_lfu_evicts_the_least_frequently_used() {
    let _s = serial();
    let t = Tumbler::start();
    let mut c = t.raw();
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    ok(&mut c, &["CONFIG", "SET", "lfu-log-factor", "0"]);
    fill(&mut c, "k", N, |_| None);
    // The frequent half first, so that recency alone would favour the other half.
    touch(&mut c, "k", (0..N).filter(|i| i % 2 == 0), 8);
    touch(&mut c, "k", (0..N).filter(|i| i % 2 == 1), 1);
    assert_eq!(c.cmd_str(&["OBJECT", "FREQ", "k0"]), ":13\r\n");
    assert_eq!(c.cmd_str(&["OBJECT", "FREQ", "k1"]), ":6\r\n");
    squeeze(&mut c, N / 4);
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    let (lost_freq, lost_rare) = lost_even_odd(&mut c, "k", N);
    eprintln!("allkeys-lfu evicted {lost_freq} frequent and {lost_rare} rare keys");
    assert!(lost_rare > 0, "nothing was evicted");
    assert!(
        lost_freq * 10 <= lost_rare,
        "frequent keys evicted too often: {lost_freq} vs {lost_rare}"
    );
}

/// allkeys-random: both halves lose keys, in about equal numbers.
#[test]
fn allkeys_random_evicts_any_key() {
    let _s = serial();
    let t = Tumbler::start();
    let mut c = t.raw();
    fill(&mut c, "k", N, |_| None);
    touch(&mut c, "k", (0..N).filter(|i| i % 2 == 0), 3);
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    );
    squeeze(&mut c, N / 4);
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    let (lost_even, lost_odd) = lost_even_odd(&mut c, "k", N);
    eprintln!("allkeys-random evicted {lost_even} touched and {lost_odd} untouched keys");
    assert!(
        lost_even * 3 >= lost_odd && lost_odd * 3 >= lost_even && lost_even > 10,
        "not uniform: {lost_even} even vs {lost_odd} odd lost"
    );
}

/// The volatile policies evict only keys with a TTL; when those are gone, writes get OOM.
/// volatile-ttl takes the soonest-expiring first.
#[test]
fn volatile_policies_spare_keys_without_ttl() {
    let _s = serial();
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let t = Tumbler::start();
        let mut c = t.raw();
        ok(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        // Odd keys have no TTL; even keys expire in 10,000 + i seconds.
        fill(&mut c, "k", N, |i| {
            (i % 2 == 0).then_some(10_000 + i as u64)
        });
        let max = squeeze(&mut c, N / 4);
        ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
        let a = alive(&mut c, "k", N);
        let lost_odd = (0..N).filter(|i| i % 2 == 1 && !a[*i]).count();
        assert_eq!(lost_odd, 0, "{policy} evicted a key without a TTL");
        let gone: Vec<usize> = (0..N).filter(|i| i % 2 == 0 && !a[*i]).collect();
        assert!(
            gone.len() > 10,
            "{policy}: too little evicted: {}",
            gone.len()
        );
        if policy == "volatile-ttl" {
            // Each eviction takes the smallest TTL among 16+ sampled candidates: nearly all
            // evicted keys are from the soonest-expiring part.
            let early = gone.iter().filter(|&&i| i < N / 2).count();
            eprintln!(
                "volatile-ttl evicted {early} of {} from the earlier half",
                gone.len()
            );
            assert!(
                early * 10 >= gone.len() * 8,
                "volatile-ttl evicted late keys: {early} of {} early",
                gone.len()
            );
        }
        // Squeeze below what the keys without TTL need: every volatile key goes, then OOM.
        let _ = max;
        ok(&mut c, &["CONFIG", "SET", "maxmemory", "1"]);
        assert_eq!(
            c.cmd_str(&["SET", "x", "y"]),
            "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
            "{policy}"
        );
        assert_eq!(surviving(&mut c, "k", N), N / 2, "{policy}");
        assert_eq!(
            c.cmd_str(&["GET", "k1"]),
            format!("${}\r\n{VALUE}\r\n", VALUE.len())
        );
        assert_eq!(c.cmd_str(&["DEL", "k1"]), ":1\r\n", "DEL is not deny-oom");
    }
}

/// noeviction refuses deny-oom commands and keeps every key; reads and DEL still work.
#[test]
fn noeviction_answers_oom() {
    let _s = serial();
    let t = Tumbler::start();
    let mut c = t.raw();
    fill(&mut c, "k", 100, |_| None);
    let max = used(&mut c) - 10_000;
    ok(&mut c, &["CONFIG", "SET", "maxmemory", &max.to_string()]);
    let oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    assert_eq!(c.cmd_str(&["SET", "x", "y"]), oom);
    assert_eq!(c.cmd_str(&["LPUSH", "l", "y"]), oom);
    assert_eq!(c.cmd_str(&["DBSIZE"]), ":100\r\n");
    assert_eq!(c.cmd_str(&["DEL", "k1"]), ":1\r\n");
    assert_eq!(info_field(&mut c, "stats", "evicted_keys"), "0");
    assert_eq!(
        info_field(&mut c, "memory", "maxmemory_policy"),
        "noeviction"
    );
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    ok(&mut c, &["SET", "x", "y"]);
}

/// Writing far past the limit under allkeys-lru keeps used_memory near maxmemory, and
/// INFO reports the limit, the policy and the evictions.
#[test]
fn used_memory_stays_near_maxmemory() {
    let _s = serial();
    let t = Tumbler::start();
    let mut c = t.raw();
    let base = used(&mut c);
    let max = base + 1_000_000;
    ok(&mut c, &["CONFIG", "SET", "maxmemory", &max.to_string()]);
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    let mut peak = 0;
    for round in 0..6 {
        fill(&mut c, &format!("r{round}:"), 1500, |_| None);
        let u = used(&mut c);
        peak = peak.max(u);
        assert!(
            u <= max + max / 50,
            "round {round}: used {u} > maxmemory {max}"
        );
    }
    assert!(
        peak >= max - max / 5,
        "used {peak} never came near maxmemory {max}"
    );
    let evicted: u64 = info_field(&mut c, "stats", "evicted_keys").parse().unwrap();
    let keys: u64 = c.cmd_str(&["DBSIZE"]).trim()[1..].parse().unwrap();
    assert_eq!(evicted + keys, 9000);
    assert_eq!(info_field(&mut c, "memory", "maxmemory"), max.to_string());
    assert_eq!(
        info_field(&mut c, "memory", "maxmemory_policy"),
        "allkeys-lru"
    );
    assert_eq!(
        info_field(&mut c, "memory", "mem_not_counted_for_evict"),
        "0"
    );
    assert!(info_field(&mut c, "memory", "maxmemory_human").ends_with('M'));
}

/// An evicted key is deleted for everyone: a WATCH on it fails the EXEC, and a waiter for
/// a native lock whose key is evicted gets the lock.
#[test]
fn eviction_is_a_deletion() {
    let _s = serial();
    let t = Tumbler::start();
    let mut a = t.raw();
    let mut b = t.raw();
    let mut w = t.raw();
    ok(&mut a, &["SET", "watched", "v"]);
    ok(&mut a, &["WATCH", "watched"]);
    ok(&mut a, &["MULTI"]);
    assert_eq!(a.cmd_str(&["GET", "watched"]), "+QUEUED\r\n");
    assert!(b
        .cmd_str(&["LOCK.ACQUIRE", "lk", "owner1", "60000"])
        .starts_with(':'));
    w.send(&["LOCK.ACQUIRE", "lk", "owner2", "60000", "WAIT", "20000"]);
    // The waiter must be queued before the lock key is evicted.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while info_field(&mut b, "clients", "blocked_clients") != "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the waiter never blocked"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    ok(
        &mut b,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    );
    // Far under the server's footprint: everything is evicted at once.
    ok(&mut b, &["CONFIG", "SET", "maxmemory", "1"]);
    let granted = String::from_utf8_lossy(&w.read_reply()).to_string();
    assert!(granted.starts_with(':'), "waiter not granted: {granted}");
    assert_eq!(a.cmd_str(&["EXEC"]), "*-1\r\n");
    ok(&mut b, &["CONFIG", "SET", "maxmemory", "0"]);
}

/// Config values and errors, OBJECT FREQ/IDLETIME under each policy, which reads leave the
/// LFU counter alone, OBJECT REFCOUNT of small integers under maxmemory, and -OOM, against
/// redis-server.
#[test]
fn config_object_freq_and_oom_match_redis() {
    let _s = serial();
    diff_against_redis(
        r#"
        SET i 1
        OBJECT REFCOUNT i
        CONFIG SET maxmemory 1073741824
        CONFIG SET maxmemory-policy allkeys-lru
        SET i 1
        OBJECT REFCOUNT i
        CONFIG SET maxmemory-policy allkeys-random
        SET j 2
        OBJECT REFCOUNT j
        CONFIG SET maxmemory 0
        CONFIG SET maxmemory-policy noeviction
        CONFIG GET maxmemory-samples
        CONFIG SET maxmemory-samples 0
        CONFIG SET maxmemory-samples 2147483648
        CONFIG SET maxmemory-samples 10
        CONFIG GET maxmemory-samples
        CONFIG GET maxmemory-eviction-tenacity
        CONFIG SET maxmemory-eviction-tenacity 101
        CONFIG SET maxmemory-eviction-tenacity 100
        CONFIG GET maxmemory-eviction-tenacity
        CONFIG SET lfu-log-factor -1
        CONFIG SET lfu-decay-time 2147483648
        CONFIG SET lfu-log-factor 0
        CONFIG GET lfu-log-factor
        CONFIG SET maxmemory-policy bogus
        CONFIG SET maxmemory-policy VOLATILE-TTL
        CONFIG GET maxmemory-policy
        CONFIG SET maxmemory 1gb
        CONFIG GET maxmemory
        SET k v
        OBJECT FREQ k
        OBJECT FREQ missing
        CONFIG SET maxmemory-policy allkeys-lfu
        SET f v
        OBJECT FREQ f
        GET f
        OBJECT FREQ f
        OBJECT IDLETIME f
        OBJECT FREQ missing
        EXISTS f
        TYPE f
        TTL f
        PTTL f
        EXPIRETIME f
        PEXPIRETIME f
        OBJECT FREQ f
        TOUCH f
        OBJECT FREQ f
        CONFIG SET maxmemory-policy volatile-lfu
        OBJECT FREQ f
        CONFIG SET maxmemory-policy noeviction
        OBJECT FREQ f
        CONFIG SET maxmemory 1
        SET k2 v
        INCR n
        RPUSH l a
        GET k
        EXISTS k
        DEL k
        MULTI
        SET k v
        EXEC
        CONFIG SET maxmemory 0
        SET k2 v
        CONFIG SET maxmemory-policy allkeys-lru
        CONFIG SET maxmemory 1
        DBSIZE
        EVAL "return redis.call('set','x','y')" 0
        EVAL "return redis.call('get','k2')" 0
        EVAL_RO "return redis.call('get','k2')" 0
        MULTI
        SET x y
        EXEC
        SET x y
        GET x
        CONFIG SET maxmemory 0
        SET x y
        "#,
    );
}
