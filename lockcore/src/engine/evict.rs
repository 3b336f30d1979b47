//! maxmemory eviction as Redis 7.0's `evict.c` does it: an approximation of LRU, LFU and
//! soonest-TTL by sampling, with a pool of the best candidates seen so far.
//!
//! For each key to evict, every db gives `maxmemory-samples` keys (all keys, or with a
//! `volatile-*` policy only keys with a TTL). Each sampled key gets a score, higher meaning
//! "evict sooner": idle time in ms (LRU), `255 - counter` (LFU, after decay) or
//! `u64::MAX - expire time` (TTL). The pool keeps the [`POOL_SIZE`] highest scores across
//! samples *and across evictions*, so a good candidate seen once is not forgotten; the best
//! one still present is evicted. Random policies take one random key, visiting the dbs in
//! turn. With the default 5 samples this is as close to true LRU as Redis' own (Redis
//! measured it in `utils/lru/`); 10 samples come closer still.
//!
//! Evicting is a deletion to the rest of the system: [`Engine::modified`] runs with the
//! `evicted` keyspace event, so WATCH fails, blocked clients and native-lock waiters on the
//! key re-check it, and `evicted_keys` counts it.

use bytes::Bytes;

use crate::engine::Engine;
use crate::storage::notify;

/// Redis' EVPOOL_SIZE.
pub const POOL_SIZE: usize = 16;

/// `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    VolatileLru,
    AllKeysLfu,
    VolatileLfu,
    AllKeysRandom,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    /// Parses a `maxmemory-policy` value (case-insensitive, as CONFIG SET takes it).
    pub fn parse(s: &str) -> Option<Policy> {
        Some(match s.to_ascii_lowercase().as_str() {
            "noeviction" => Policy::NoEviction,
            "allkeys-lru" => Policy::AllKeysLru,
            "volatile-lru" => Policy::VolatileLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "volatile-lfu" => Policy::VolatileLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => return None,
        })
    }

    /// Only keys with a TTL may be evicted.
    pub fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }
}

/// One candidate in the pool.
#[derive(Debug, Clone)]
struct Candidate {
    score: u64,
    db: usize,
    key: Bytes,
}

/// Redis' eviction pool: the best candidates seen, lowest score first.
#[derive(Debug, Default)]
pub struct Pool {
    entries: Vec<Candidate>,
    /// Where the random policies start their round over the dbs.
    next_db: usize,
}

impl Pool {
    /// Offers a sampled key (Redis' `evictionPoolPopulate` insertion).
    fn offer(&mut self, score: u64, db: usize, key: &Bytes) {
        if self.entries.iter().any(|c| c.db == db && c.key == *key) {
            return;
        }
        let pos = self.entries.partition_point(|c| c.score < score);
        if self.entries.len() == POOL_SIZE {
            if pos == 0 {
                return; // worse than everything in a full pool
            }
            self.entries.remove(0);
            self.entries.insert(
                pos - 1,
                Candidate {
                    score,
                    db,
                    key: key.clone(),
                },
            );
        } else {
            self.entries.insert(
                pos,
                Candidate {
                    score,
                    db,
                    key: key.clone(),
                },
            );
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No candidates held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every candidate.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// `n` random keys of `db` (with a TTL if `volatile`), with their entries: Redis'
    /// sampling of `maxmemory-samples` keys. Taken fresh each time (a random bucket is
    /// O(1) to reach), so sampling holds no memory of its own between evictions: with
    /// `maxmemory` just above what is in use, a kept window of key copies would itself
    /// push memory over the limit.
    fn sample<'a>(
        &mut self,
        dbs: &'a [crate::storage::db::Db],
        db: usize,
        n: usize,
        volatile: bool,
    ) -> Vec<(Bytes, &'a crate::storage::value::Entry)> {
        let d = &dbs[db];
        d.sample_keys(n, volatile)
            .into_iter()
            .filter_map(|k| d.get(&k).map(|e| (k, e)))
            .collect()
    }
}

/// The score of an entry under `policy`: higher is evicted sooner.
fn score(eng: &Engine, policy: Policy, e: &crate::storage::value::Entry, now: i64) -> u64 {
    match policy {
        Policy::AllKeysLfu | Policy::VolatileLfu => {
            255 - crate::storage::lfu::decayed(e.lru_ms, now, eng.config.lfu_decay_time) as u64
        }
        Policy::VolatileTtl => u64::MAX - e.expire_at().unwrap_or(i64::MAX).max(0) as u64,
        // An LFU-encoded `lru_ms` (negative) reads as idle since the epoch, as in lfu.rs.
        _ => (now - e.lru_ms.max(0)).max(0) as u64,
    }
}

impl Engine {
    /// Evicts one key under `policy`, sampling `samples` keys per db for the LRU, LFU and
    /// TTL policies. Returns the key evicted, or None when nothing can be (noeviction, or
    /// no key the policy may evict).
    pub fn evict_by_policy(&mut self, policy: Policy, samples: usize) -> Option<(usize, Bytes)> {
        let mut pool = std::mem::take(&mut self.evict_pool);
        let victim = self.pick_victim(&mut pool, policy, samples);
        self.evict_pool = pool;
        let (db, key) = victim?;
        self.dbs[db].remove(&key);
        self.stats.evicted_keys += 1;
        self.modified(db, &key, notify::EVICTED, "evicted");
        Some((db, key))
    }

    fn pick_victim(
        &self,
        pool: &mut Pool,
        policy: Policy,
        samples: usize,
    ) -> Option<(usize, Bytes)> {
        let volatile = policy.volatile();
        Some(match policy {
            Policy::NoEviction => return None,
            Policy::AllKeysRandom | Policy::VolatileRandom => {
                let n = self.dbs.len();
                (0..n).find_map(|_| {
                    let db = pool.next_db % n;
                    pool.next_db = pool.next_db.wrapping_add(1);
                    let picked = pool.sample(&self.dbs, db, 1, volatile);
                    picked.into_iter().next().map(|(k, _)| (db, k))
                })?
            }
            _ => loop {
                let now = self.now_ms();
                let mut total = 0;
                for db in 0..self.dbs.len() {
                    let d = &self.dbs[db];
                    let size = if volatile { d.expires_count() } else { d.len() };
                    if size == 0 {
                        continue;
                    }
                    total += size;
                    for (k, e) in pool.sample(&self.dbs, db, samples, volatile) {
                        let sc = score(self, policy, e, now);
                        pool.offer(sc, db, &k);
                    }
                }
                if total == 0 {
                    return None;
                }
                // The best candidate still there (it may have been deleted, or lost its
                // TTL, since it entered the pool).
                let mut found = None;
                while let Some(c) = pool.entries.pop() {
                    let present = self.dbs[c.db]
                        .get(&c.key)
                        .is_some_and(|e| !volatile || e.expire_at().is_some());
                    if present {
                        found = Some((c.db, c.key));
                        break;
                    }
                }
                if let Some(v) = found {
                    break v;
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::clock::ManualClock;
    use crate::storage::value::{StrVal, Value};

    fn put(e: &mut Engine, db: usize, k: &str, ttl: Option<i64>) {
        let now = e.now_ms();
        e.dbs[db].insert(
            Bytes::from(k.to_string()),
            Value::Str(StrVal::from_slice(b"v")),
            ttl.map(|t| now + t),
            now,
        );
    }

    #[test]
    fn pool_keeps_the_highest_scores_in_order() {
        let mut p = Pool::default();
        for i in 0..40u64 {
            p.offer((i * 7) % 40, 0, &Bytes::from(format!("k{i}")));
        }
        assert_eq!(p.len(), POOL_SIZE);
        let scores: Vec<u64> = p.entries.iter().map(|c| c.score).collect();
        assert_eq!(scores, (24..40).collect::<Vec<_>>());
        p.offer(39, 0, &p.entries[15].key.clone());
        assert_eq!(
            p.len(),
            POOL_SIZE,
            "a key already pooled is not added twice"
        );
    }

    #[test]
    fn lru_evicts_the_idlest_and_volatile_spares_keys_without_ttl() {
        let clock = ManualClock::new(1_000_000);
        let mut e = Engine::with_clock(2, clock.clone());
        put(&mut e, 0, "old", Some(100_000));
        clock.advance_ms(5_000);
        put(&mut e, 1, "new", Some(100_000));
        put(&mut e, 0, "persistent", None);
        let v = e.evict_by_policy(Policy::VolatileLru, 5);
        assert_eq!(v, Some((0, Bytes::from_static(b"old"))));
        assert_eq!(e.stats.evicted_keys, 1);
        let v = e.evict_by_policy(Policy::VolatileLru, 5);
        assert_eq!(v, Some((1, Bytes::from_static(b"new"))));
        assert_eq!(e.evict_by_policy(Policy::VolatileLru, 5), None);
        assert!(e.dbs[0].contains(b"persistent"));
        assert_eq!(e.evict_by_policy(Policy::NoEviction, 5), None);
        let v = e.evict_by_policy(Policy::AllKeysRandom, 5);
        assert_eq!(v, Some((0, Bytes::from_static(b"persistent"))));
    }

    #[test]
    fn ttl_evicts_the_soonest_expiring() {
        let clock = ManualClock::new(1_000_000);
        let mut e = Engine::with_clock(2, clock.clone());
        put(&mut e, 0, "late", Some(50_000));
        put(&mut e, 0, "soon", Some(1_000));
        put(&mut e, 1, "mid", Some(9_000));
        let order: Vec<_> = (0..3)
            .filter_map(|_| e.evict_by_policy(Policy::VolatileTtl, 5))
            .map(|(_, k)| k)
            .collect();
        assert_eq!(order, vec!["soon", "mid", "late"]);
    }
}
