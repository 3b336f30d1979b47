//! One numbered database: a map from binary-safe keys to entries, plus an index of expiry
//! times so active expiry finds due keys in O(log n) instead of sampling.
//!
//! `Db` knows nothing of the clock or of notifications: it is raw storage. Expiry rules
//! (lazy on access, active in the background) live in [`crate::engine::Engine`], which owns
//! the clock and the write epilogue.

use bytes::Bytes;
use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::hash::BuildHasher;

use crate::storage::expiry::ExpiryHeap;
use crate::storage::key::Key;
use crate::value::{Entry, Value};

/// The keyspace hasher: aHash keyed with per-process random keys. Redis hashes keys with
/// SipHash-1-2 under a random key so that clients cannot flood one bucket; aHash keeps that
/// property (its keys are random per process and it is designed to resist collision
/// attacks) at a fraction of std's SipHash-1-3 cost, which showed up in profiles of SET/GET
/// over a 1M keyspace (docs/architecture.md).
pub type KeyHasher = ahash::RandomState;

/// What [`Db::probe`] found: a live entry, an expired one it just removed, or nothing.
pub enum Probe<'a> {
    Live(&'a mut Entry),
    /// The key's TTL had passed: the entry, already out of the map and the indexes.
    Expired(Entry),
    Absent,
}

#[derive(Debug, Default)]
pub struct Db {
    /// hashbrown's raw `HashTable` rather than a map: a lookup that may turn into an insert
    /// or a removal hashes and probes once, without cloning the key first, and the expiry
    /// index can find a key by its hash alone (it stores no copy of the key).
    map: hashbrown::HashTable<(Key, Entry)>,
    hasher: KeyHasher,
    /// `(deadline, key hash)` of the keys with a TTL; stale entries are checked against
    /// the entry's own `expire_at` when they come up (see expiry.rs).
    expires: ExpiryHeap,
    /// Keys ordered by their SCAN hash: built by the first SCAN, then kept in step with
    /// the map, so each SCAN step costs O(log n + COUNT) rather than a pass over the db.
    scan_index: Option<BTreeSet<(u64, Bytes)>>,
    scan_hasher: RandomState,
}

impl Db {
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn expires_count(&self) -> usize {
        self.expires.live()
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        let h = self.hash(key);
        self.map.find(h, |(k, _)| k[..] == *key).map(|(_, e)| e)
    }
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let h = self.hash(key);
        self.map.find_mut(h, |(k, _)| k[..] == *key).map(|(_, e)| e)
    }
    pub fn contains(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// One probe for a key: the live entry, or, if its TTL is `<= now`, removes it (map,
    /// expiry index, SCAN index) and says so; the caller runs the expiry epilogue.
    pub fn probe(&mut self, key: &[u8], now: i64) -> Probe<'_> {
        let h = self.hash(key);
        let Db {
            map,
            hasher,
            expires,
            scan_index,
            scan_hasher,
        } = self;
        match map.find_entry(h, |(k, _)| k[..] == *key) {
            Err(_) => Probe::Absent,
            Ok(o) => match o.get().1.expire_at() {
                Some(t) if t <= now => {
                    let ((k, gone), map) = o.remove();
                    lost_ttl(map.into_table(), hasher, expires, t, None);
                    if let Some(ix) = scan_index {
                        let h = scan_hasher.hash_one(&k[..]) | 1;
                        ix.remove(&(h, Bytes::copy_from_slice(&k)));
                    }
                    Probe::Expired(gone)
                }
                _ => Probe::Live(&mut o.into_mut().1),
            },
        }
    }

    /// Inserts or replaces `key`. `expire_at` replaces any previous expiry. Returns the
    /// stored entry.
    pub fn insert(
        &mut self,
        key: Bytes,
        value: Value,
        expire_at: Option<i64>,
        now: i64,
    ) -> &mut Entry {
        self.insert_entry(key, Entry::new(value, expire_at, now))
    }

    /// Inserts a whole entry (value, TTL, encoding flag), replacing any previous one.
    /// Used by RENAME, MOVE and COPY, which carry the TTL along. Returns the stored entry.
    pub fn insert_entry(&mut self, key: Bytes, entry: Entry) -> &mut Entry {
        self.maybe_rebuild_expires();
        let h = self.hash(&key);
        let Db {
            map,
            hasher,
            expires,
            scan_index,
            scan_hasher,
        } = self;
        let new_ttl = entry.expire_at();
        match map.entry(
            h,
            |(k, _)| k[..] == key[..],
            |(k, _)| hasher.hash_one(&k[..]),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut o) => {
                let old_ttl = o.get().1.expire_at();
                o.get_mut().1 = entry;
                match old_ttl {
                    Some(t) if old_ttl != new_ttl => {
                        if let Some(t) = new_ttl {
                            expires.gained(t, h);
                        }
                        expires.lost();
                        if expires.peek().is_some_and(|(top, _)| top == t) {
                            // Rare: the old TTL was the earliest. Settle, then find the
                            // entry again.
                            let map = o.into_table();
                            settle(map, hasher, expires, new_ttl.map(|t| (t, h)));
                            let (_, e) = map.find_mut(h, |(k, _)| k[..] == key[..]).unwrap();
                            return e;
                        }
                    }
                    None if new_ttl.is_some() => expires.gained(new_ttl.unwrap(), h),
                    _ => {}
                }
                &mut o.into_mut().1
            }
            hashbrown::hash_table::Entry::Vacant(v) => {
                if let Some(t) = new_ttl {
                    expires.gained(t, h);
                }
                if let Some(ix) = scan_index {
                    ix.insert((scan_hasher.hash_one(key.as_ref()) | 1, key.clone()));
                }
                &mut v.insert((Key::new(&key), entry)).into_mut().1
            }
        }
    }

    /// Replaces the value of an existing key, keeping its TTL. Inserts without TTL if absent.
    pub fn replace_value(&mut self, key: &Bytes, value: Value, now: i64) {
        match self.get_mut(key.as_ref()) {
            Some(e) => {
                e.value = value;
                e.lru_ms = now;
                e.set_raw(false);
            }
            None => {
                self.insert(key.clone(), value, None, now);
            }
        }
    }

    /// Marks a string as "raw" encoded: APPEND, SETRANGE and SETBIT leave a string Redis
    /// never re-encodes as int/embstr until it is SET again.
    pub fn set_raw(&mut self, key: &[u8]) {
        if let Some(e) = self.get_mut(key) {
            e.set_raw(true);
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let h = self.hash(key);
        let ((_, e), _) = self
            .map
            .find_entry(h, |(k, _)| k[..] == *key)
            .ok()?
            .remove();
        if let Some(t) = e.expire_at() {
            lost_ttl(&self.map, &self.hasher, &mut self.expires, t, None);
            self.maybe_rebuild_expires();
        }
        self.index_remove(key);
        Some(e)
    }

    fn index_remove(&mut self, k: &[u8]) {
        if self.scan_index.is_some() {
            let h = self.scan_hash(k);
            if let Some(ix) = &mut self.scan_index {
                ix.remove(&(h, Bytes::copy_from_slice(k)));
            }
        }
    }

    /// Sets or clears the expiry of an existing key. Returns false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], at: Option<i64>) -> bool {
        self.maybe_rebuild_expires();
        let h = self.hash(key);
        let Some((_, e)) = self.map.find_mut(h, |(k, _)| k[..] == *key) else {
            return false;
        };
        // As the entry keeps it (a deadline <= 0 as 1 ms), so that the heap entry matches.
        let at = at.map(|t| t.max(1));
        let old = e.expire_at();
        if old == at {
            return true;
        }
        e.set_expire_at(at);
        if let Some(t) = at {
            self.expires.gained(t, h);
        }
        if let Some(t) = old {
            let live = at.map(|a| (a, h));
            lost_ttl(&self.map, &self.hasher, &mut self.expires, t, live);
        }
        true
    }

    /// Bounds the stale entries of the expiry heap (see expiry.rs): past the bound, the
    /// heap is rebuilt from the keys' own TTLs.
    fn maybe_rebuild_expires(&mut self) {
        if self.expires.needs_rebuild() {
            let Db {
                map,
                hasher,
                expires,
                ..
            } = self;
            expires.rebuild(
                map.iter()
                    .filter_map(|(k, e)| e.expire_at().map(|t| (t, hasher.hash_one(&k[..])))),
            );
        }
    }

    /// The earliest expiry time in this db.
    pub fn next_expiry(&self) -> Option<i64> {
        self.expires.peek().map(|(t, _)| t)
    }

    /// Keys whose expiry is `<= now`, earliest first, at most `limit`. They leave the
    /// expiry index: the caller removes each of them (active expiry, eviction). A key whose
    /// TTL was set back to an earlier value may come twice (its removal then finds it gone).
    pub fn due_keys(&mut self, now: i64, limit: usize) -> Vec<Bytes> {
        let mut out = Vec::new();
        while out.len() < limit {
            let Some((t, h)) = self.expires.pop_due(now) else {
                break;
            };
            if let Some(k) = owner(&self.map, &self.hasher, t, h) {
                out.push(Bytes::copy_from_slice(k));
            }
        }
        settle(&self.map, &self.hasher, &mut self.expires, None);
        out
    }

    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.map.iter().map(|(k, _)| &k[..])
    }
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.map.iter().map(|(k, e)| (&k[..], e))
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.expires.clear();
        self.scan_index = None;
    }

    /// Gives back table memory when the db has become sparse (under a tenth full), as
    /// Redis' cron resizes its dicts. Eviction calls it when it has run out of keys to
    /// evict: Tumbler's table holds each entry inline, so an emptied table keeps far more
    /// memory than Redis' 8 bytes per bucket. Returns true if it freed anything.
    pub fn shrink_if_sparse(&mut self) -> bool {
        let cap = self.map.capacity();
        if cap <= 64 || self.map.len() * 10 >= cap {
            return false;
        }
        let hasher = &self.hasher;
        self.map
            .shrink_to(self.map.len() * 2, |(k, _)| hasher.hash_one(&k[..]));
        self.map.capacity() < cap
    }

    /// The SCAN order of a key; never 0, which is the cursor that starts and ends a scan.
    fn scan_hash(&self, key: &[u8]) -> u64 {
        self.scan_hasher.hash_one(key) | 1
    }

    /// A uniformly random key (including ones that may be logically expired).
    pub fn random_key(&self) -> Option<Bytes> {
        use rand::Rng;
        if self.map.is_empty() {
            return None;
        }
        let n = rand::thread_rng().gen_range(0..self.map.len());
        self.keys().nth(n).map(Bytes::copy_from_slice)
    }

    /// Up to `n` keys for maxmemory eviction to weigh (storage/evict.rs): all keys, or
    /// with `volatile` only keys with a TTL, read in table order from a random position
    /// (wrapping). Table order is hash order, so the keys are a uniform random pick, also
    /// among keys with a TTL (the expiry index is in deadline order, which would not be).
    /// Keys may be logically expired.
    pub fn sample_keys(&self, n: usize, volatile: bool) -> Vec<Bytes> {
        use rand::Rng;
        if self.map.is_empty() || n == 0 || (volatile && self.expires.live() == 0) {
            return Vec::new();
        }
        // From a random bucket on, in table order: the start costs O(1) (dictGetSomeKeys).
        let buckets = self.map.num_buckets();
        let start = rand::thread_rng().gen_range(0..buckets);
        let mut out = Vec::with_capacity(n.min(self.map.len()));
        for i in 0..buckets {
            if let Some((k, e)) = self.map.get_bucket((start + i) % buckets) {
                if !volatile || e.expire_at().is_some() {
                    out.push(Bytes::copy_from_slice(&k[..]));
                    if out.len() == n {
                        break;
                    }
                }
            }
        }
        out
    }

    /// One step of SCAN. Keys are visited in the order of a hash that is fixed for the
    /// life of the db, and the cursor is the next hash to visit, so a key present for the
    /// whole iteration is returned at least once however the map changes in between, as
    /// SCAN guarantees. Returns about `count` keys (all keys sharing the last hash) and the
    /// next cursor (0 at the end).
    pub fn scan(&mut self, cursor: u64, count: usize) -> (Vec<Bytes>, u64) {
        if self.scan_index.is_none() {
            let ix = self
                .keys()
                .map(|k| (self.scan_hash(k), Bytes::copy_from_slice(k)))
                .collect();
            self.scan_index = Some(ix);
        }
        let ix = self.scan_index.as_ref().unwrap();
        let count = count.max(1);
        let mut out = Vec::with_capacity(count);
        let mut last = None;
        for (h, k) in ix.range((cursor, Bytes::new())..) {
            if out.len() >= count && last != Some(*h) {
                return (out, *h);
            }
            out.push(k.clone());
            last = Some(*h);
        }
        (out, 0)
    }
}

/// The key an expiry entry `(t, h)` stands for: a key with hash `h` whose own TTL is
/// exactly `t`. None means the entry is stale (the TTL changed, or the key is gone).
fn owner<'a>(
    map: &'a hashbrown::HashTable<(Key, Entry)>,
    hasher: &KeyHasher,
    t: i64,
    h: u64,
) -> Option<&'a Key> {
    map.iter_hash(h)
        .find(|(k, e)| e.expire_at() == Some(t) && hasher.hash_one(&k[..]) == h)
        .map(|(k, _)| k)
}

/// Drops stale entries from the top of the expiry heap, so its top is the earliest TTL.
/// `live` is an entry the caller knows to be live (the TTL it just set), checked for free.
fn settle(
    map: &hashbrown::HashTable<(Key, Entry)>,
    hasher: &KeyHasher,
    ex: &mut ExpiryHeap,
    live: Option<(i64, u64)>,
) {
    while let Some((t, h)) = ex.peek() {
        if live == Some((t, h)) || owner(map, hasher, t, h).is_some() {
            break;
        }
        ex.pop();
    }
}

/// A key lost its TTL `t` (the map already shows the change). If that was the earliest
/// entry, it and any stale entries under it leave the top.
fn lost_ttl(
    map: &hashbrown::HashTable<(Key, Entry)>,
    hasher: &KeyHasher,
    ex: &mut ExpiryHeap,
    t: i64,
    live: Option<(i64, u64)>,
) {
    ex.lost();
    if ex.peek().is_some_and(|(top, _)| top == t) {
        settle(map, hasher, ex, live);
    }
}

/// Cursor iteration over any collection of byte-string items, by a process-wide hash order.
/// Used by SCAN, HSCAN and ZSCAN.
pub fn scan_by_hash<'a, I, S>(items: I, hasher: &S, cursor: u64, count: usize) -> (Vec<Bytes>, u64)
where
    I: Iterator<Item = &'a Bytes>,
    S: BuildHasher,
{
    // Cursor 0 starts; internally hashes are shifted to be >= 1 so 0 can mean "done".
    let count = count.max(1);
    let mut batch: Vec<(u64, &Bytes)> = items
        .map(|k| (hasher.hash_one(k.as_ref()) | 1, k))
        .filter(|(h, _)| *h >= cursor)
        .collect();
    if batch.len() <= count {
        return (batch.into_iter().map(|(_, k)| k.clone()).collect(), 0);
    }
    batch.select_nth_unstable_by_key(count, |(h, _)| *h);
    let boundary = batch[count].0;
    let keys = batch
        .iter()
        .filter(|(h, _)| *h < boundary)
        .map(|(_, k)| (*k).clone())
        .collect();
    (keys, boundary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn scan_returns_every_stable_key_once() {
        let mut db = Db::default();
        for i in 0..1000 {
            db.insert(
                Bytes::from(format!("k{i}")),
                Value::Str(Bytes::new()),
                None,
                0,
            );
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        loop {
            let (keys, next) = db.scan(cursor, 10);
            for k in keys {
                assert!(seen.insert(k), "duplicate");
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(seen.len(), 1000);
    }

    #[test]
    fn scan_keeps_its_guarantee_while_the_db_changes() {
        let mut db = Db::default();
        let k = |i: usize| Bytes::from(format!("k{i}"));
        for i in 0..2000 {
            db.insert(k(i), Value::Str(Bytes::new()), None, 0);
        }
        let (mut seen, mut cursor, mut step) = (HashSet::new(), 0, 0);
        loop {
            let (keys, next) = db.scan(cursor, 7);
            seen.extend(keys);
            // Churn: keys >= 1000 come and go; keys < 1000 stay for the whole scan.
            step += 1;
            db.remove(&k(1000 + step % 1000));
            db.insert(k(3000 + step), Value::Str(Bytes::new()), None, 0);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert!((0..1000).all(|i| seen.contains(&k(i))));
        db.clear();
        assert_eq!(db.scan(0, 10), (vec![], 0));
    }

    #[test]
    fn expiry_index_follows_inserts_and_removes() {
        let mut db = Db::default();
        let s = || Value::Str(Bytes::new());
        db.insert(Bytes::from_static(b"a"), s(), Some(10), 0);
        db.insert(Bytes::from_static(b"b"), s(), Some(5), 0);
        assert_eq!(db.next_expiry(), Some(5));
        assert_eq!(db.expires_count(), 2);
        db.remove(b"b");
        // b's entry went stale at the top of the heap and left it.
        assert_eq!(db.expires_count(), 1);
        assert_eq!(db.next_expiry(), Some(10));
        assert_eq!(db.due_keys(9, 10), Vec::<Bytes>::new());
        db.set_expire(b"a", None);
        assert_eq!(db.expires_count(), 0);
        assert_eq!(db.due_keys(i64::MAX, 10), Vec::<Bytes>::new());
        assert_eq!(db.next_expiry(), None);
    }

    #[test]
    fn a_changed_ttl_is_due_at_its_new_deadline_only() {
        let mut db = Db::default();
        let k = Bytes::from_static(b"lock");
        db.insert(k.clone(), Value::Str(Bytes::new()), Some(100), 0);
        db.set_expire(b"lock", Some(300)); // a watchdog renewal
        assert_eq!(db.due_keys(299, 10), Vec::<Bytes>::new());
        assert_eq!(db.due_keys(300, 10), vec![k.clone()]);
        // Shortened: due at the earlier deadline, and the later entry is stale.
        db.set_expire(b"lock", Some(50));
        assert_eq!(db.due_keys(50, 10), vec![k.clone()]);
        db.remove(b"lock");
        assert_eq!(db.due_keys(i64::MAX, 10), Vec::<Bytes>::new());
        // Replaced by SET with another TTL (insert over an existing key).
        db.insert(k.clone(), Value::Str(Bytes::new()), Some(70), 0);
        db.insert(k.clone(), Value::Str(Bytes::new()), Some(80), 0);
        assert_eq!(db.due_keys(79, 10), Vec::<Bytes>::new());
        assert_eq!(db.due_keys(80, 10), vec![k]);
    }

    #[test]
    fn stale_expiry_entries_stay_bounded() {
        let mut db = Db::default();
        for i in 0..100 {
            db.insert(
                Bytes::from(format!("k{i}")),
                Value::Str(Bytes::new()),
                Some(1),
                0,
            );
        }
        // One million renewals of 100 keys: the heap is rebuilt as stale entries pile up.
        for r in 0..10_000i64 {
            for i in 0..100 {
                db.set_expire(format!("k{i}").as_bytes(), Some(1_000_000 - r));
            }
            assert!(db.expires.entries() <= 2 * 100 + crate::storage::expiry::SLACK + 1);
        }
        assert_eq!(db.expires_count(), 100);
        assert_eq!(db.due_keys(1_000_000 - 9_999, 1000).len(), 100);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    proptest! {
        /// SCAN's guarantee: a key present from the first call to the last is returned at
        /// least once, whatever is inserted and deleted between the calls.
        #[test]
        fn scan_returns_every_key_present_throughout(
            initial in proptest::collection::hash_set(0u16..2000, 0..300),
            churn in proptest::collection::vec((any::<bool>(), 0u16..2000), 0..400),
            count in 1usize..50,
        ) {
            let mut db = Db::default();
            let key = |i: u16| Bytes::from(format!("k{i}"));
            for &i in &initial {
                db.insert(key(i), Value::Str(Bytes::new()), None, 0);
            }
            let mut stable: HashSet<Bytes> = initial.iter().map(|&i| key(i)).collect();
            let mut seen = HashSet::new();
            let mut cursor = 0;
            let mut ops = churn.iter();
            loop {
                let (keys, next) = db.scan(cursor, count);
                seen.extend(keys);
                for (insert, i) in ops.by_ref().take(5) {
                    if *insert {
                        db.insert(key(*i), Value::Str(Bytes::new()), None, 0);
                    } else {
                        db.remove(&key(*i));
                        stable.remove(&key(*i));
                    }
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            for k in &stable {
                prop_assert!(seen.contains(k), "missed {:?}", k);
            }
        }
    }

    proptest! {
        /// The expiry heap against a model: after any sequence of inserts (with or without
        /// TTL), TTL changes, persists and removals, the keys due at `now` come out exactly
        /// (none early, none missed, earliest first), the next deadline is exactly the
        /// earliest TTL, and stale entries stay bounded.
        #[test]
        fn expiry_heap_matches_a_model(
            ops in proptest::collection::vec((0u8..5, 0u16..40, 0i64..200), 0..400),
            limit in 1usize..20,
        ) {
            use std::collections::BTreeMap;
            let mut db = Db::default();
            let mut model: BTreeMap<Bytes, Option<i64>> = BTreeMap::new();
            let key = |i: u16| Bytes::from(format!("k{i}"));
            let mut now = 0i64;
            for (op, i, t) in ops {
                let k = key(i);
                match op {
                    0 => {
                        let ttl = if t % 3 == 0 { None } else { Some(now + t) };
                        db.insert(k.clone(), Value::Str(Bytes::new()), ttl, now);
                        model.insert(k, ttl);
                    }
                    1 => {
                        let present = model.contains_key(&k);
                        prop_assert_eq!(db.set_expire(&k, Some(now + t)), present);
                        if present {
                            model.insert(k, Some(now + t));
                        }
                    }
                    2 => {
                        if db.set_expire(&k, None) {
                            model.insert(k, None);
                        }
                    }
                    3 => {
                        prop_assert_eq!(db.remove(&k).is_some(), model.remove(&k).is_some());
                    }
                    _ => {
                        now += t / 4;
                        // Active expiry: batches of `limit` until nothing is due.
                        let mut got: Vec<Bytes> = Vec::new();
                        loop {
                            let batch = db.due_keys(now, limit);
                            if batch.is_empty() {
                                break;
                            }
                            for k in batch {
                                let ttl = model.get(&k).copied().flatten();
                                prop_assert!(ttl.is_some_and(|d| d <= now) || got.contains(&k),
                                    "{:?} not due", k);
                                if let Some(d) = ttl {
                                    // Earliest first: nothing due and earlier is left.
                                    prop_assert!(model.values().flatten().all(|&o| o >= d || o > now));
                                }
                                db.remove(&k);
                                model.remove(&k);
                                got.push(k);
                            }
                        }
                        prop_assert!(model.values().flatten().all(|&d| d > now), "missed a due key");
                    }
                }
                let live: Vec<i64> = model.values().flatten().copied().collect();
                prop_assert_eq!(db.expires_count(), live.len());
                prop_assert_eq!(db.len(), model.len());
                prop_assert_eq!(db.next_expiry(), live.iter().min().copied());
                // The bound is checked when a call starts (and after a removal), so one
                // call that drops a TTL may leave up to two entries over it.
                prop_assert!(db.expires.entries() <= 2 * live.len() + crate::storage::expiry::SLACK + 2);
            }
        }
    }
}
