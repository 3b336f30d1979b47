//! Counters and latency histograms of the native locks, read by the server's `/metrics`.
//!
//! Everything here is plain integers mutated under the keyspace lock that the lock commands
//! already hold, so counting costs an add, not an atomic. The server copies a
//! [`LockStatsSnapshot`] out while it holds the lock for a scrape.
//!
//! Latencies are wall-clock ([`Instant`]), not the engine clock: `TUMBLER.TIME ADVANCE`
//! moves leases, but a hand-off that took 40 µs took 40 µs.

use bytes::Bytes;
use std::collections::HashMap;
use std::time::Instant;

use crate::storage::lock::{Kind, LockValue};
use crate::storage::ClientId;

/// Upper bounds of the latency histograms' buckets, in seconds (Prometheus `le`).
pub const BUCKETS: [f64; 20] = [
    0.000_01, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The lock kinds, as the `kind` label shows them; [`kind_index`] maps into it.
pub const KINDS: [&str; 3] = ["lock", "semaphore", "rwlock"];

pub fn kind_index(k: Kind) -> usize {
    match k {
        Kind::Mutex => 0,
        Kind::Semaphore { .. } => 1,
        Kind::RwLock => 2,
    }
}

/// A fixed-bucket histogram of durations.
#[derive(Debug, Clone, Default)]
pub struct Histogram {
    /// Observations per bucket (not cumulative); the last slot is `+Inf`.
    pub counts: [u64; BUCKETS.len() + 1],
    pub sum_secs: f64,
    pub count: u64,
}

impl Histogram {
    pub fn observe(&mut self, secs: f64) {
        let i = BUCKETS.partition_point(|&b| b < secs);
        self.counts[i] += 1;
        self.sum_secs += secs;
        self.count += 1;
    }

    /// `(upper bound, count in that bucket)` per bucket, ending with the `+Inf` bucket
    /// (bound `f64::MAX`): the shape `prometheus-client`'s `encode_histogram` takes (it
    /// accumulates the counts itself).
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        BUCKETS
            .iter()
            .chain(std::iter::once(&f64::MAX))
            .zip(self.counts.iter())
            .map(|(b, c)| (*b, *c))
            .collect()
    }
}

/// Lock counters, indexed by [`kind_index`] where they have a kind.
#[derive(Debug, Default)]
pub struct LockStats {
    pub grants: [u64; 3],
    pub releases: [u64; 3],
    /// Holders dropped because their lease ran out (pruned, or the key expired).
    pub expiries: [u64; 3],
    /// FENCE.SET refused a token that no longer holds the lock.
    pub fence_rejections: u64,
    /// LOCK.CHECK answered 0.
    pub check_rejections: u64,
    /// From a release or expiry that left waiters to the grant to the next of them.
    pub handoff: Histogram,
    /// How long a lock waiter was parked: until its grant, timeout or departure.
    pub wait: Histogram,
    waiting_since: HashMap<ClientId, Instant>,
    freed_at: HashMap<(usize, Bytes), Instant>,
}

/// What a scrape reads: the counters without the bookkeeping maps.
#[derive(Debug, Clone, Default)]
pub struct LockStatsSnapshot {
    pub grants: [u64; 3],
    pub releases: [u64; 3],
    pub expiries: [u64; 3],
    pub fence_rejections: u64,
    pub check_rejections: u64,
    pub handoff: Histogram,
    pub wait: Histogram,
    /// Clients parked in LOCK.ACQUIRE / SEM.ACQUIRE / RW.RLOCK / RW.WLOCK now.
    pub waiters: u64,
    /// Keys with at least one live holder, per kind.
    pub held: [u64; 3],
}

/// Bounds the hand-off bookkeeping: a freed key whose waiters never got it (they gave
/// up, or wait for another kind) must not be remembered forever.
const MAX_FREED: usize = 10_000;

impl LockStats {
    pub(crate) fn granted(&mut self, kind: Kind, db: usize, key: &Bytes, to_waiter: bool) {
        self.grants[kind_index(kind)] += 1;
        if self.freed_at.is_empty() {
            return;
        }
        if let Some(t) = self.freed_at.remove(&(db, key.clone())) {
            if to_waiter {
                self.handoff.observe(t.elapsed().as_secs_f64());
            }
        }
    }

    pub(crate) fn released(&mut self, kind: Kind, n: u64) {
        self.releases[kind_index(kind)] += n;
    }

    pub(crate) fn expired(&mut self, kind: Kind, n: u64) {
        self.expiries[kind_index(kind)] += n;
    }

    /// A holder left `key` while clients wait on it: start the hand-off clock.
    pub(crate) fn freed(&mut self, db: usize, key: &Bytes) {
        if self.freed_at.len() >= MAX_FREED {
            self.freed_at.clear();
        }
        self.freed_at
            .entry((db, key.clone()))
            .or_insert_with(Instant::now);
    }

    /// A key holding a lock expired as a whole (its last lease passed): every holder left.
    pub(crate) fn key_expired(&mut self, db: usize, key: &Bytes, l: &LockValue, waiters: bool) {
        self.expired(l.kind, l.holders.len() as u64);
        if waiters {
            self.freed(db, key);
        }
    }

    pub(crate) fn wait_started(&mut self, id: ClientId) {
        self.waiting_since.insert(id, Instant::now());
    }

    pub(crate) fn wait_ended(&mut self, id: ClientId) {
        if self.waiting_since.is_empty() {
            return;
        }
        if let Some(t) = self.waiting_since.remove(&id) {
            self.wait.observe(t.elapsed().as_secs_f64());
        }
    }

    pub fn snapshot(&self, held: [u64; 3]) -> LockStatsSnapshot {
        LockStatsSnapshot {
            grants: self.grants,
            releases: self.releases,
            expiries: self.expiries,
            fence_rejections: self.fence_rejections,
            check_rejections: self.check_rejections,
            handoff: self.handoff.clone(),
            wait: self.wait.clone(),
            waiters: self.waiting_since.len() as u64,
            held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_inclusive_and_end_with_inf() {
        let mut h = Histogram::default();
        h.observe(0.000_01); // on a bound: counted in that bucket (le)
        h.observe(0.003);
        h.observe(100.0); // +Inf only
        let b = h.buckets();
        assert_eq!(b.len(), BUCKETS.len() + 1);
        assert_eq!(b[0], (0.000_01, 1));
        assert_eq!(b[6], (0.002_5, 0));
        assert_eq!(b[7], (0.005, 1));
        assert_eq!(b.last().unwrap(), &(f64::MAX, 1));
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), h.count);
    }
}
