//! The expiry index of one database: a min-heap of `(deadline, key hash)`.
//!
//! Why not a sorted set of `(deadline, key)`: that holds a second handle to every key with
//! a TTL, in B-tree nodes, which cost about 100 bytes per key (the node share plus the
//! refcount header a `Bytes` clone creates), a quarter of a held Redisson lock
//! (docs/architecture.md, "Bytes per key"). The heap holds 16 bytes per entry and no key.
//!
//! The heap is never updated in place. Changing or removing a key's TTL leaves its old
//! entry behind; [`crate::storage::db::Db`] checks every entry it pops against the key's own
//! `expire_at` (a key is due only if some key with that hash has exactly that deadline),
//! so a stale entry is dropped when it comes up, never acted on. `Db` also drops stale
//! entries from the top whenever the TTL that goes stale is the earliest one, so the top
//! is always live and the next deadline the timer sleeps to is exact.
//!
//! Stale entries are bounded: once they outnumber the keys with a TTL (plus a slack), the
//! heap is cleaned one of two ways.
//! - **Rebuilt, a few keys at a time.** A new heap is filled from the keys' own TTLs by a
//!   walk over the pairs in their order, a few pairs per later TTL change, while the old
//!   heap goes on serving; once the walk is done the new heap takes its place. A key that
//!   gets a TTL, or moves, behind the walk goes into both heaps ([`ExpiryHeap::placed`],
//!   [`ExpiryHeap::moved`]). The walk takes enough pairs per change to end within half as
//!   many changes as there are keys with a TTL, so the old heap grows by at most half
//!   meanwhile; if TTLs are dropped so fast that it passes twice the bound anyway, the rest
//!   is walked at once. Rebuilding the whole heap in one go paused a renewal for 60-90 ms
//!   with 1M keys with a TTL (the walk, then the heapify), once per million renewals:
//!   Redisson's watchdog renews every held lock every 10 s (docs/architecture.md, eighth
//!   round).
//! - **Compacted**, when the heap is small and the keys without a TTL far outnumber its
//!   entries: its own entries sorted and each distinct one checked against the keys it
//!   names (O(m log m) for m entries, a hash probe per entry, about 3-4x a walk's cost per
//!   item, but independent of the keys without a TTL). With one lock renewed among 630,000
//!   plain keys the walk was about 950 of the 14,000 instructions of a reentrant lock
//!   script (docs/architecture.md, seventh round).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Compact once the heap holds more than `2 * live + SLACK` entries (small under test,
/// so the unit and property tests go through many compactions).
pub(crate) const SLACK: usize = if cfg!(test) { 8 } else { 1024 };

/// Compact rather than rebuild only heaps of up to this many entries: compacting sorts and
/// checks them all at once (measured: about 20 ms for 200,000 entries of 100,000 keys).
pub(crate) const COMPACT_MAX: usize = 1 << 15;

type Heap = BinaryHeap<Reverse<(i64, u32)>>;

#[derive(Debug, Default)]
pub struct ExpiryHeap {
    heap: Heap,
    /// Keys that have a TTL now (each has at least one entry in the heap).
    live: usize,
    /// A rebuild under way: the heap that takes `heap`'s place once every pair has been
    /// walked, and the position of the next pair to walk.
    next: Option<(Heap, u32)>,
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

    /// The key at position `pos`, with hash `hash`, got the TTL `at` (it had none, or
    /// another one: call [`Self::lost`] for the old one too).
    pub fn gained(&mut self, at: i64, hash: u32, pos: u32) {
        self.live += 1;
        self.heap.push(Reverse((at, hash)));
        self.placed(at, hash, pos);
    }

    /// The key at `pos` has the TTL `at`: if a rebuild walked past `pos` already, its heap
    /// takes the entry too.
    pub fn placed(&mut self, at: i64, hash: u32, pos: u32) {
        if let Some((next, walk)) = &mut self.next {
            if pos < *walk {
                next.push(Reverse((at, hash)));
            }
        }
    }

    /// A key with the TTL `at` moved from position `from` to `to` (a removal filled its
    /// gap): if it moved from ahead of a rebuild's walk to behind it, the walk would miss
    /// it, so the rebuild's heap takes it now.
    pub fn moved(&mut self, at: i64, hash: u32, from: u32, to: u32) {
        if self.next.as_ref().is_some_and(|(_, walk)| from >= *walk) {
            self.placed(at, hash, to);
        }
    }

    /// A key lost its TTL (removed, persisted or given another one). Its entry goes stale.
    pub fn lost(&mut self) {
        self.live -= 1;
    }

    /// True when no rebuild is under way and stale entries passed the bound: the owner
    /// should [`Self::compact`] or [`Self::start_rebuild`].
    pub fn needs_compaction(&self) -> bool {
        self.next.is_none() && self.heap.len() > 2 * self.live + SLACK
    }

    /// True when stale entries passed twice the bound during a rebuild (TTLs dropped
    /// faster than the walk went): the owner should walk the rest at once.
    pub fn overdue(&self) -> bool {
        self.heap.len() > 4 * self.live + SLACK
    }

    /// Starts a rebuild: a new heap, filled by [`Self::walk`] from position 0 on.
    pub fn start_rebuild(&mut self) {
        self.next = Some((Heap::with_capacity(self.live), 0));
    }

    /// The position of the next pair a rebuild under way walks.
    pub fn walk_at(&self) -> Option<u32> {
        self.next.as_ref().map(|(_, walk)| *walk)
    }

    /// The rebuild walked the pairs up to position `to`: `found` are the TTLs and hashes
    /// of those that have a TTL.
    pub fn walk(&mut self, to: u32, found: impl Iterator<Item = (i64, u32)>) {
        if let Some((next, walk)) = &mut self.next {
            for e in found {
                next.push(Reverse(e));
            }
            *walk = to;
        }
    }

    /// Every pair was walked: the rebuild's heap, which has an entry for every key with a
    /// TTL, takes the old one's place.
    pub fn finish_rebuild(&mut self) {
        if let Some((next, _)) = self.next.take() {
            self.heap = next;
        }
    }

    /// Drops the stale entries: keeps each distinct entry `(t, h)` as many times as
    /// `owners(t, h)` says keys with hash `h` have the TTL `t` now (usually once or not at
    /// all; two keys whose hashes collide can share a deadline). Every key with a TTL has
    /// an entry (the owner's invariant), so afterwards there is exactly one per key.
    pub fn compact(&mut self, mut owners: impl FnMut(i64, u32) -> usize) {
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
    pub fn peek(&self) -> Option<(i64, u32)> {
        self.heap.peek().map(|Reverse(e)| *e)
    }

    /// Drops the earliest entry (the owner found it stale).
    pub fn pop(&mut self) {
        self.heap.pop();
    }

    /// Pops the earliest entry if its deadline is `<= now`.
    pub fn pop_due(&mut self, now: i64) -> Option<(i64, u32)> {
        match self.heap.peek() {
            Some(Reverse((t, _))) if *t <= now => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }

    pub fn clear(&mut self) {
        self.heap = BinaryHeap::new();
        self.live = 0;
        self.next = None;
    }
}
