//! The keyspace's hash table: open addressing over 8-byte slots, each a key's position in
//! db.rs' `Dense` and 32 bits of its hash, kept in Robin Hood order.
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
//! Robin Hood: a key's distance is how far its slot lies past its home slot (`h & mask`).
//! An insert walking from its home takes the first slot whose resident is closer to its
//! own home than the new key is to its, and carries the resident on. So within a run the
//! keys lie in order of their homes, and a slot's distance is at most the previous slot's
//! plus one. That lets a lookup stop at a resident closer to home than the probe has come
//! (the key it looks for cannot lie further), so a miss ends about where a hit would,
//! instead of at the end of the run as with plain linear probing. Deletion shifts the
//! following slots of the run back by one until an empty slot or a slot at its home (no
//! tombstones), which keeps that order.
//!
//! The table grows at 7/8 full (so it is between 7/16 and 7/8 full; 100,000 keys fit in
//! 131,072 slots, 10.5 bytes a key, as Redis' dict's buckets; issue 40). Slots read per
//! lookup at 7/8 (114,688 random hashes in 131,072 slots, `probe_lengths_at_seven_eighths`
//! below): a hit reads 4.4 on average, a miss 4.9 with the Robin Hood stop, where plain
//! linear probing reads 32 on a miss (the end of the run); the longest probe was 34. At
//! 3/4, where the table used to grow, plain linear probing read 2.5 on a hit and 8.5 on a
//! miss. Eight slots share a cache line, so most probes still read one line or two.

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

/// Where a key a lookup did not find belongs: the slot its probe stopped at and how far
/// that is from its home. From [`SlotTable::find_or_vacant`], for
/// [`SlotTable::insert_vacant`] while the table is unchanged.
#[derive(Debug, Clone, Copy)]
pub struct Vacant {
    i: usize,
    d: usize,
}

#[derive(Debug, Default)]
pub struct SlotTable {
    /// A power of two long, or empty before the first insert.
    slots: Box<[Slot]>,
    len: usize,
}

/// Slots the table may fill before it grows: 7/8 of them.
#[inline]
fn fill_limit(buckets: usize) -> usize {
    buckets - buckets / 8
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

    /// How far the slot at `i`, holding hash `h`, lies past its home slot.
    #[inline]
    fn dist(&self, i: usize, h: u32) -> usize {
        i.wrapping_sub(h as usize) & self.mask()
    }

    /// The probe behind every lookup: the index of the slot with hash `h` that `eq`
    /// accepts, and how many slots it read. It stops at an empty slot or at a resident
    /// closer to its home than the probe has come from `h`'s home: the key would have
    /// taken that slot (Robin Hood order), so it is not further on.
    #[inline(always)]
    fn search(&self, h: u32, eq: impl Fn(&Slot) -> bool) -> (Option<usize>, usize) {
        if self.len == 0 {
            return (None, 0);
        }
        let mask = self.mask();
        let mut i = self.home(h);
        let mut d = 0;
        loop {
            let s = &self.slots[i];
            if s.is_empty() {
                return (None, d + 1);
            }
            if s.h == h && eq(s) {
                return (Some(i), d + 1);
            }
            if self.dist(i, s.h) < d {
                return (None, d + 1);
            }
            i = (i + 1) & mask;
            d += 1;
        }
    }

    /// The index of the slot with hash `h` that `eq` accepts, or where a slot with hash `h`
    /// would go: an insert after a miss starts there instead of walking the probe again.
    #[inline]
    pub fn find_or_vacant(&self, h: u32, eq: impl Fn(&Slot) -> bool) -> Result<usize, Vacant> {
        match self.search(h, eq) {
            (Some(i), _) => Ok(i),
            // An empty table read nothing (`insert_vacant` grows it first).
            (None, read) => Err(Vacant {
                i: (self.home(h) + read.saturating_sub(1)) & self.mask(),
                d: read.saturating_sub(1),
            }),
        }
    }

    /// The index of the slot with hash `h` that `eq` accepts.
    #[inline]
    pub fn find_index(&self, h: u32, eq: impl Fn(&Slot) -> bool) -> Option<usize> {
        self.search(h, eq).0
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

    /// The slots with hash `h`, in probe order. They lie together (Robin Hood order keeps
    /// the keys of one home together), so this stops where [`Self::find_index`] would.
    pub fn iter_hash(&self, h: u32) -> impl Iterator<Item = &Slot> + '_ {
        let mask = self.mask();
        let mut i = self.home(h);
        let mut d = 0;
        let mut done = self.len == 0;
        std::iter::from_fn(move || {
            while !done {
                let s = &self.slots[i];
                if s.is_empty() || self.dist(i, s.h) < d {
                    done = true;
                    break;
                }
                i = (i + 1) & mask;
                d += 1;
                // A full table never happens (it grows at 7/8), but a probe never goes
                // round onto its own start either way.
                done = d > mask;
                if s.h == h {
                    return Some(s);
                }
            }
            None
        })
    }

    /// The slot at `i`, if one is there (eviction samples keys in table order).
    pub fn get_bucket(&self, i: usize) -> Option<&Slot> {
        self.slots.get(i).filter(|s| !s.is_empty())
    }

    /// Adds `s` where [`Self::find_or_vacant`] found its hash's key missing, the table
    /// unchanged since (as [`Self::insert`], without walking the probe again).
    #[inline]
    pub fn insert_vacant(&mut self, v: Vacant, s: Slot) {
        if self.len >= self.capacity() {
            return self.insert(s);
        }
        debug_assert_eq!(v.i, (self.home(s.h) + v.d) & self.mask());
        self.place_from(v.i, v.d, s);
        self.len += 1;
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

    /// Puts `s` in its place in Robin Hood order: from its home on, it takes the first
    /// slot that is empty or whose resident lies closer to its own home than `s` would,
    /// and the resident moves on in its stead, likewise.
    #[inline]
    fn place(&mut self, s: Slot) {
        self.place_from(self.home(s.h), 0, s)
    }

    /// [`Self::place`] from slot `i`, `d` past the home of `s`, every slot before which
    /// `s` would pass over.
    #[inline]
    fn place_from(&mut self, mut i: usize, mut d: usize, mut s: Slot) {
        let mask = self.mask();
        loop {
            let r = self.slots[i];
            if r.is_empty() {
                self.slots[i] = s;
                return;
            }
            let rd = self.dist(i, r.h);
            if rd < d {
                self.slots[i] = s;
                s = r;
                d = rd;
            }
            i = (i + 1) & mask;
            d += 1;
        }
    }

    /// Removes the slot at `i` (from [`Self::find_index`]) and returns it. The slots after
    /// it move back by one, up to an empty slot or a slot at its home, so every run stays
    /// unbroken and in Robin Hood order.
    pub fn remove_at(&mut self, i: usize) -> Slot {
        let mask = self.mask();
        let gone = self.slots[i];
        let mut hole = i;
        loop {
            let j = (hole + 1) & mask;
            let s = self.slots[j];
            if s.is_empty() || self.dist(j, s.h) == 0 {
                break;
            }
            self.slots[hole] = s;
            hole = j;
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

    /// The Robin Hood invariant, which lookups rely on to stop early: a slot after an
    /// empty one is at its home, and a slot after a full one lies at most one further
    /// from its home than that one. And every key is found where it is.
    fn check_runs(t: &SlotTable) {
        let mask = t.mask();
        let mut n = 0;
        for (i, s) in t.slots.iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            n += 1;
            let d = t.dist(i, s.h);
            let p = (i + mask) & mask;
            let prev = t.slots[p];
            if prev.is_empty() {
                assert_eq!(d, 0, "slot {i} after an empty slot is off its home");
            } else {
                assert!(
                    d <= t.dist(p, prev.h) + 1,
                    "slot {i} at distance {d} after one at {}",
                    t.dist(p, prev.h)
                );
            }
            assert_eq!(t.find_index(s.h, |x| x.at == s.at), Some(i));
        }
        assert_eq!(n, t.len);
        assert!(t.len <= t.capacity());
    }

    proptest! {
        /// Inserts and removals, with hashes from a small range so runs collide and wrap,
        /// agree with a map from position to hash, and the table stays in Robin Hood order.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec((any::<bool>(), 0u32..40, 0u32..64), 1..400)) {
            let mut t = SlotTable::default();
            let mut model: HashMap<u32, u32> = HashMap::new();
            for (add, at, h) in ops {
                // Hashes near the top of the range too, so probes wrap past the end.
                let h = h.wrapping_sub(8);
                if add && !model.contains_key(&at) {
                    // Half the inserts where a lookup's miss left off.
                    if at % 2 == 0 {
                        let v = t.find_or_vacant(h, |s| s.at == at);
                        prop_assert!(v.is_err());
                        t.insert_vacant(v.unwrap_err(), Slot { at, h });
                    } else {
                        t.insert(Slot { at, h });
                    }
                    model.insert(at, h);
                } else if !add {
                    let want = model.remove(&at);
                    let got = want.and_then(|h| t.remove(h, |s| s.at == at));
                    prop_assert_eq!(got.map(|s| s.h), want);
                    // Gone: a lookup of it stops without finding it.
                    if let Some(h) = want {
                        prop_assert_eq!(t.find(h, |s| s.at == at), None);
                    }
                }
                check_runs(&t);
            }
            for (&at, &h) in &model {
                prop_assert_eq!(t.find(h, |s| s.at == at), Some(&Slot { at, h }));
                prop_assert_eq!(t.iter_hash(h).filter(|s| s.at == at).count(), 1);
            }
            // iter_hash(h) yields exactly the slots with hash h, for present and absent h.
            for h in (0u32..64).map(|h| h.wrapping_sub(8)) {
                let mut want: Vec<u32> = model.iter().filter(|(_, &mh)| mh == h).map(|(&at, _)| at).collect();
                let mut got: Vec<u32> = t.iter_hash(h).map(|s| { assert_eq!(s.h, h); s.at }).collect();
                want.sort_unstable();
                got.sort_unstable();
                prop_assert_eq!(got, want);
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
    fn grows_at_seven_eighths_and_shrinks_back() {
        let mut t = SlotTable::default();
        assert_eq!(t.find(1, |_| true), None);
        assert_eq!(t.iter_hash(1).count(), 0);
        assert!(t.home_addr(1).is_none());
        for at in 0..7 {
            t.insert(Slot { at, h: at * 7 });
        }
        assert_eq!(t.num_buckets(), 8);
        assert_eq!(t.capacity(), 7);
        check_runs(&t);
        t.insert(Slot { at: 7, h: 42 });
        assert_eq!(t.num_buckets(), 16);
        check_runs(&t);
        for at in 0..8 {
            assert!(t
                .remove(if at == 7 { 42 } else { at * 7 }, |s| s.at == at)
                .is_some());
        }
        assert!(t.is_empty());
        t.shrink_to(0);
        assert_eq!(t.num_buckets(), 8);
        // 100,000 keys (issue 40's measure) fit in 131,072 slots.
        for (at, h) in hashes(3).take(100_000).enumerate() {
            t.insert(Slot { at: at as u32, h });
        }
        assert_eq!(t.num_buckets(), 131_072);
    }

    /// splitmix64: well-mixed 32-bit hashes, as the keyed aHash gives db.rs.
    fn hashes(seed: u64) -> impl Iterator<Item = u32> {
        let mut x = seed;
        std::iter::from_fn(move || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            Some((z ^ (z >> 31)) as u32)
        })
    }

    /// Slots a plain linear probe for `h` would read on a miss: up to the end of the run.
    fn linear_miss(t: &SlotTable, h: u32) -> usize {
        let mut i = t.home(h);
        let mut n = 1;
        while !t.slots[i].is_empty() {
            i = (i + 1) & t.mask();
            n += 1;
        }
        n
    }

    /// A table filled to 7/8 (the most it holds before it grows): lookups of absent keys
    /// stop early by the Robin Hood rule, reading about as many slots as hits do and far
    /// fewer than a linear probe to the end of the run, and none reads more than one slot
    /// past the longest distance in the table. Prints the figures the module doc quotes.
    #[test]
    fn probe_lengths_at_seven_eighths() {
        let buckets = 1 << 17;
        let n = fill_limit(buckets);
        let mut t = SlotTable::default();
        let present: Vec<u32> = hashes(1).take(n).collect();
        for (at, &h) in present.iter().enumerate() {
            t.insert(Slot { at: at as u32, h });
        }
        assert_eq!(t.num_buckets(), buckets, "7/8 full without growing");
        assert_eq!(t.len(), n);
        check_runs(&t);
        let longest = (0..buckets)
            .filter(|&i| !t.slots[i].is_empty())
            .map(|i| t.dist(i, t.slots[i].h))
            .max()
            .unwrap();

        let mut hit = 0;
        for (at, &h) in present.iter().enumerate() {
            let (i, read) = t.search(h, |s| s.at == at as u32);
            assert_eq!(i.map(|i| t.slots[i].at), Some(at as u32));
            hit += read;
        }
        let (mut miss, mut linear, mut longest_miss, mut shorter) = (0, 0, 0, 0);
        let absent = 100_000;
        for h in hashes(2).take(absent) {
            let (i, read) = t.search(h, |_| false);
            assert_eq!(i, None);
            let lin = linear_miss(&t, h);
            assert!(
                read <= lin,
                "a Robin Hood miss read {read} slots, the run ends at {lin}"
            );
            shorter += usize::from(read < lin);
            miss += read;
            linear += lin;
            longest_miss = longest_miss.max(read);
        }
        let hit = hit as f64 / n as f64;
        let miss = miss as f64 / absent as f64;
        let linear = linear as f64 / absent as f64;
        println!(
            "{n} keys in {buckets} slots: a hit reads {hit:.2} slots, a miss {miss:.2} \
             (longest {longest_miss}; a linear probe to the end of the run {linear:.2}); \
             longest distance {longest}"
        );
        assert!(longest_miss <= longest + 2);
        assert!(
            shorter > absent / 2,
            "only {shorter} of {absent} misses stopped early"
        );
        assert!(miss < 8.0, "a miss reads {miss:.2} slots on average");
        assert!(hit < 6.0, "a hit reads {hit:.2} slots on average");
        assert!(linear > 3.0 * miss);
    }
}
