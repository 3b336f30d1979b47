//! The keyspace's hash table: open addressing with linear probing over 8-byte slots, each a
//! key's position in db.rs' `Dense` and 32 bits of its hash.
//!
//! Why not hashbrown's `HashTable`, which db.rs used before: a hashbrown probe reads a
//! control byte and then the slot, and in a table of a million keys those are two cache
//! misses in two places (the control bytes and the slots are separate arrays). Here the
//! hash bits a probe compares sit in the slot itself, so a probe reads one cache line,
//! and the line a key's probe starts on is known from its hash alone, so a pipeline's keys
//! can be prefetched before their commands run ([`SlotTable::home_addr`], [`prefetch`]).
//! perf on GET over 950,000 keys had hashbrown's `find` at 44 % of the server's time,
//! nearly all of it waiting on memory (docs/architecture.md, "The request path, eleventh
//! round").
//!
//! Deletion shifts the following slots of the run back (no tombstones), so a probe for an
//! absent key stops at the first empty slot however many keys came and went. The table
//! grows at 3/4 full: a linear probe's expected length for an absent key climbs steeply
//! past that (8.5 slots at 3/4, 32 at 7/8).

/// A key's place: its pair's position in `Dense` and 32 bits of its hash, from which the
/// table's index is taken, so growing never reads the pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub at: u32,
    pub h: u32,
}

/// An empty slot. `Dense` never hands out position `u32::MAX`.
const EMPTY: Slot = Slot { at: u32::MAX, h: 0 };

impl Slot {
    #[inline]
    fn is_empty(&self) -> bool {
        self.at == u32::MAX
    }
}

#[derive(Debug, Default)]
pub struct SlotTable {
    /// A power of two long, or empty before the first insert.
    slots: Box<[Slot]>,
    len: usize,
}

/// Slots the table may fill before it grows: 3/4 of them.
#[inline]
fn fill_limit(buckets: usize) -> usize {
    buckets - buckets / 4
}

impl SlotTable {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many keys fit before the table grows.
    pub fn capacity(&self) -> usize {
        fill_limit(self.slots.len())
    }

    pub fn num_buckets(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    #[inline]
    fn home(&self, h: u32) -> usize {
        h as usize & self.mask()
    }

    /// The index of the slot with hash `h` that `eq` accepts.
    #[inline]
    pub fn find_index(&self, h: u32, eq: impl Fn(&Slot) -> bool) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = self.home(h);
        loop {
            let s = &self.slots[i];
            if s.is_empty() {
                return None;
            }
            if s.h == h && eq(s) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    pub fn find(&self, h: u32, eq: impl Fn(&Slot) -> bool) -> Option<&Slot> {
        self.find_index(h, eq).map(|i| &self.slots[i])
    }

    #[inline]
    pub fn find_mut(&mut self, h: u32, eq: impl Fn(&Slot) -> bool) -> Option<&mut Slot> {
        self.find_index(h, eq).map(|i| &mut self.slots[i])
    }

    #[inline]
    pub fn slot(&self, i: usize) -> &Slot {
        &self.slots[i]
    }

    /// The slots with hash `h`, in probe order.
    pub fn iter_hash(&self, h: u32) -> impl Iterator<Item = &Slot> + '_ {
        let mask = self.mask();
        let start = if self.len == 0 {
            None
        } else {
            Some(self.home(h))
        };
        let mut next = start;
        std::iter::from_fn(move || loop {
            let i = next?;
            let s = &self.slots[i];
            if s.is_empty() {
                next = None;
                return None;
            }
            let j = (i + 1) & mask;
            // A full table never happens (it grows at 3/4), but a run never wraps onto
            // its own start either way.
            next = (Some(j) != start).then_some(j);
            if s.h == h {
                return Some(s);
            }
        })
    }

    /// The slot at `i`, if one is there (eviction samples keys in table order).
    pub fn get_bucket(&self, i: usize) -> Option<&Slot> {
        self.slots.get(i).filter(|s| !s.is_empty())
    }

    /// Adds a slot for a key that is not in the table (the caller has looked).
    pub fn insert(&mut self, s: Slot) {
        debug_assert!(!s.is_empty());
        if self.len >= self.capacity() {
            self.resize((self.slots.len() * 2).max(8));
        }
        self.place(s);
        self.len += 1;
    }

    /// Puts `s` in the first empty slot of its run.
    #[inline]
    fn place(&mut self, s: Slot) {
        let mask = self.mask();
        let mut i = self.home(s.h);
        while !self.slots[i].is_empty() {
            i = (i + 1) & mask;
        }
        self.slots[i] = s;
    }

    /// Removes the slot at `i` (from [`Self::find_index`]) and returns it. The slots after
    /// it in its run move back into the gap where their own probes pass over it, so every
    /// run stays unbroken.
    pub fn remove_at(&mut self, i: usize) -> Slot {
        let mask = self.mask();
        let gone = self.slots[i];
        let mut hole = i;
        let mut j = (i + 1) & mask;
        loop {
            let s = self.slots[j];
            if s.is_empty() {
                break;
            }
            // `s` may fill the hole if the hole lies on its probe path: from its home to
            // `j`, at least as far back from `j` as its home is.
            let home = self.home(s.h);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = s;
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
        gone
    }

    /// Removes the slot with hash `h` that `eq` accepts.
    pub fn remove(&mut self, h: u32, eq: impl Fn(&Slot) -> bool) -> Option<Slot> {
        let i = self.find_index(h, eq)?;
        Some(self.remove_at(i))
    }

    /// Shrinks the table to the smallest size that holds `n` keys (and its own).
    pub fn shrink_to(&mut self, n: usize) {
        let mut buckets = 8;
        while fill_limit(buckets) < n.max(self.len) {
            buckets *= 2;
        }
        if buckets < self.slots.len() {
            self.resize(buckets);
        }
    }

    pub fn clear(&mut self) {
        *self = SlotTable::default();
    }

    fn resize(&mut self, buckets: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; buckets].into_boxed_slice());
        for s in old.iter().filter(|s| !s.is_empty()) {
            self.place(*s);
        }
    }

    /// The address of the slot where a probe for hash `h` starts, for a prefetch; None
    /// while the table is empty.
    #[inline]
    pub fn home_addr(&self, h: u32) -> Option<*const u8> {
        (self.len != 0).then(|| &self.slots[self.home(h)] as *const Slot as *const u8)
    }
}

/// Asks the CPU to bring the cache line at `p` in, without waiting for it. Only a hint:
/// it never faults, whatever `p` is, and it changes nothing a program can observe.
#[inline]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 performs no access a program can observe and cannot fault,
        // for any address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const i8) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Every slot is where a probe from its home finds it: no empty slot between its home
    /// and it.
    fn check_runs(t: &SlotTable) {
        let mask = t.mask();
        let mut n = 0;
        for (i, s) in t.slots.iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            n += 1;
            let mut j = t.home(s.h);
            while j != i {
                assert!(!t.slots[j].is_empty(), "gap before slot {i}");
                j = (j + 1) & mask;
            }
        }
        assert_eq!(n, t.len);
        assert!(t.len <= t.capacity());
    }

    proptest! {
        /// Inserts and removals, with hashes from a small range so runs collide and wrap,
        /// agree with a map from position to hash, and every run stays unbroken.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec((any::<bool>(), 0u32..40, 0u32..64), 1..400)) {
            let mut t = SlotTable::default();
            let mut model: HashMap<u32, u32> = HashMap::new();
            for (add, at, h) in ops {
                // Hashes near the top of the range too, so probes wrap past the end.
                let h = h.wrapping_sub(8);
                if add && !model.contains_key(&at) {
                    t.insert(Slot { at, h });
                    model.insert(at, h);
                } else if !add {
                    let want = model.remove(&at);
                    let got = want.and_then(|h| t.remove(h, |s| s.at == at));
                    prop_assert_eq!(got.map(|s| s.h), want);
                }
                check_runs(&t);
            }
            for (&at, &h) in &model {
                prop_assert_eq!(t.find(h, |s| s.at == at), Some(&Slot { at, h }));
                prop_assert_eq!(t.iter_hash(h).filter(|s| s.at == at).count(), 1);
            }
            let size = t.num_buckets();
            t.shrink_to(0);
            prop_assert!(t.num_buckets() <= size);
            check_runs(&t);
            for (&at, &h) in &model {
                prop_assert!(t.find(h, |s| s.at == at).is_some());
            }
        }
    }

    #[test]
    fn grows_at_three_quarters_and_shrinks_back() {
        let mut t = SlotTable::default();
        assert_eq!(t.find(1, |_| true), None);
        assert_eq!(t.iter_hash(1).count(), 0);
        assert!(t.home_addr(1).is_none());
        for at in 0..6 {
            t.insert(Slot { at, h: at * 7 });
        }
        assert_eq!(t.num_buckets(), 8);
        t.insert(Slot { at: 6, h: 42 });
        assert_eq!(t.num_buckets(), 16);
        for at in 0..7 {
            assert!(t
                .remove(if at == 6 { 42 } else { at * 7 }, |s| s.at == at)
                .is_some());
        }
        assert!(t.is_empty());
        t.shrink_to(0);
        assert_eq!(t.num_buckets(), 8);
    }
}
