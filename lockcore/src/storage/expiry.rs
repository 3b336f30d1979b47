//! The expiry index of one database: a min-heap of `(deadline, key hash)`.
//!
//! Why not a sorted set of `(deadline, key)`: that holds a second handle to every key with
//! a TTL, in B-tree nodes, which cost about 100 bytes per key (the node share plus the
//! refcount header a `Bytes` clone creates), a quarter of a held Redisson lock
//! (docs/architecture.md, "Bytes per key"). The heap holds 16 bytes per entry and no key.
//!
//! The heap is never updated in place. Changing or removing a key's TTL leaves its old
//! entry behind; [`crate::db::Db`] checks every entry it pops against the key's own
//! `expire_at` (a key is due only if some key with that hash has exactly that deadline),
//! so a stale entry is dropped when it comes up, never acted on. `Db` also drops stale
//! entries from the top whenever the TTL that goes stale is the earliest one, so the top
//! is always live and the next deadline the timer sleeps to is exact. Stale entries are bounded:
//! once they outnumber the keys with a TTL (plus a slack), the heap is cleaned after at
//! least m/2 TTL changes (m entries), one of two ways, whichever costs less: rebuilt from
//! the keys' own TTLs (a walk of every key, O(n) for n keys, sequential and cheap per key),
//! or, when the keys without a TTL far outnumber the heap's entries, compacted: its own
//! entries sorted and each distinct one checked against the keys it names (O(m log m), a
//! hash probe per entry, about 3-4x a walk's cost per item, but independent of the keys
//! without a TTL). With one lock renewed among 630,000 plain keys the walk was about 950 of
//! the 14,000 instructions of a reentrant lock script; with 1M locks renewed and nothing
//! else, compacting paused a renewal for 300-520 ms where the walk takes 60-80 ms
//! (docs/architecture.md, seventh round).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Compact once the heap holds more than `2 * live + SLACK` entries (small under test,
/// so the unit and property tests go through many compactions).
pub(crate) const SLACK: usize = if cfg!(test) { 8 } else { 1024 };

#[derive(Debug, Default)]
pub struct ExpiryHeap {
    heap: BinaryHeap<Reverse<(i64, u64)>>,
    /// Keys that have a TTL now (each has at least one entry in the heap).
    live: usize,
}

impl ExpiryHeap {
    /// Number of keys with a TTL.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Number of heap entries, stale ones included.
    pub fn entries(&self) -> usize {
        self.heap.len()
    }

    /// A key with hash `hash` got the TTL `at` (it had none, or another one: call
    /// [`Self::lost`] for the old one first).
    pub fn gained(&mut self, at: i64, hash: u64) {
        self.live += 1;
        self.heap.push(Reverse((at, hash)));
    }

    /// A key lost its TTL (removed, persisted or given another one). Its entry goes stale.
    pub fn lost(&mut self) {
        self.live -= 1;
    }

    /// True when stale entries passed the bound and the owner should [`Self::compact`].
    pub fn needs_compaction(&self) -> bool {
        self.heap.len() > 2 * self.live + SLACK
    }

    /// Replaces the heap with exactly one entry per key with a TTL, from the keys' own TTLs.
    pub fn rebuild(&mut self, keys: impl Iterator<Item = (i64, u64)>) {
        let v: Vec<Reverse<(i64, u64)>> = keys.map(Reverse).collect();
        self.live = v.len();
        self.heap = BinaryHeap::from(v);
    }

    /// Drops the stale entries: keeps each distinct entry `(t, h)` as many times as
    /// `owners(t, h)` says keys with hash `h` have the TTL `t` now (usually once or not at
    /// all; two keys whose hashes collide can share a deadline). Every key with a TTL has
    /// an entry (the owner's invariant), so afterwards there is exactly one per key.
    pub fn compact(&mut self, mut owners: impl FnMut(i64, u64) -> usize) {
        let mut v = std::mem::take(&mut self.heap).into_vec();
        v.sort_unstable();
        v.dedup();
        let mut kept = Vec::with_capacity(self.live);
        for Reverse(e) in v {
            for _ in 0..owners(e.0, e.1) {
                kept.push(Reverse(e));
            }
        }
        debug_assert_eq!(kept.len(), self.live);
        self.live = kept.len();
        self.heap = BinaryHeap::from(kept);
    }

    /// The earliest entry. The owner keeps it live (see `Db::settle`), so this is the
    /// earliest TTL.
    pub fn peek(&self) -> Option<(i64, u64)> {
        self.heap.peek().map(|Reverse(e)| *e)
    }

    /// Drops the earliest entry (the owner found it stale).
    pub fn pop(&mut self) {
        self.heap.pop();
    }

    /// Pops the earliest entry if its deadline is `<= now`.
    pub fn pop_due(&mut self, now: i64) -> Option<(i64, u64)> {
        match self.heap.peek() {
            Some(Reverse((t, _))) if *t <= now => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }

    pub fn clear(&mut self) {
        self.heap = BinaryHeap::new();
        self.live = 0;
    }
}
