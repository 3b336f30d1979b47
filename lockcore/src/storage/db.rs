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
    /// hashbrown rather than std's map for `entry_ref`: a lookup that may turn into an
    /// insert or a removal hashes and probes once, without cloning the key first.
    map: hashbrown::HashMap<Bytes, Entry, KeyHasher>,
    expires: BTreeSet<(i64, Bytes)>,
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
        self.expires.len()
    }

    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(key)
    }
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.map.get_mut(key)
    }
    pub fn contains(&self, key: &[u8]) -> bool {
        self.map.contains_key(key)
    }

    /// One probe for a key: the live entry, or, if its TTL is `<= now`, removes it (map,
    /// expiry index, SCAN index) and says so; the caller runs the expiry epilogue.
    pub fn probe(&mut self, key: &[u8], now: i64) -> Probe<'_> {
        let Db {
            map,
            expires,
            scan_index,
            scan_hasher,
        } = self;
        match map.entry_ref(key) {
            hashbrown::hash_map::EntryRef::Vacant(_) => Probe::Absent,
            hashbrown::hash_map::EntryRef::Occupied(o) => match o.get().expire_at {
                Some(t) if t <= now => {
                    let (k, gone) = o.remove_entry();
                    expires.remove(&(t, k.clone()));
                    if let Some(ix) = scan_index {
                        ix.remove(&(scan_hasher.hash_one(k.as_ref()) | 1, k));
                    }
                    Probe::Expired(gone)
                }
                _ => Probe::Live(o.into_mut()),
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
        self.insert_entry(
            key,
            Entry {
                value,
                expire_at,
                lru_ms: now,
                raw: false,
            },
        )
    }

    /// Inserts a whole entry (value, TTL, encoding flag), replacing any previous one.
    /// Used by RENAME, MOVE and COPY, which carry the TTL along. Returns the stored entry.
    pub fn insert_entry(&mut self, key: Bytes, entry: Entry) -> &mut Entry {
        if let Some(t) = entry.expire_at {
            self.expires.insert((t, key.clone()));
        }
        match self.map.entry(key) {
            hashbrown::hash_map::Entry::Occupied(mut o) => {
                if let Some(t) = o.get().expire_at {
                    if Some(t) != entry.expire_at {
                        self.expires.remove(&(t, o.key().clone()));
                    }
                }
                *o.get_mut() = entry;
                o.into_mut()
            }
            hashbrown::hash_map::Entry::Vacant(v) => {
                if let Some(ix) = &mut self.scan_index {
                    let h = self.scan_hasher.hash_one(v.key().as_ref()) | 1;
                    ix.insert((h, v.key().clone()));
                }
                v.insert(entry)
            }
        }
    }

    /// Replaces the value of an existing key, keeping its TTL. Inserts without TTL if absent.
    pub fn replace_value(&mut self, key: &Bytes, value: Value, now: i64) {
        match self.map.get_mut(key.as_ref()) {
            Some(e) => {
                e.value = value;
                e.lru_ms = now;
                e.raw = false;
            }
            None => {
                self.insert(key.clone(), value, None, now);
            }
        }
    }

    /// Marks a string as "raw" encoded: APPEND, SETRANGE and SETBIT leave a string Redis
    /// never re-encodes as int/embstr until it is SET again.
    pub fn set_raw(&mut self, key: &[u8]) {
        if let Some(e) = self.map.get_mut(key) {
            e.raw = true;
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let (k, e) = self.map.remove_entry(key)?;
        if let Some(t) = e.expire_at {
            self.expires.remove(&(t, k.clone()));
        }
        self.index_remove(k);
        Some(e)
    }

    fn index_remove(&mut self, k: Bytes) {
        if self.scan_index.is_some() {
            let h = self.scan_hash(&k);
            if let Some(ix) = &mut self.scan_index {
                ix.remove(&(h, k));
            }
        }
    }

    /// Sets or clears the expiry of an existing key. Returns false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], at: Option<i64>) -> bool {
        let Some((k, e)) = self.map.get_key_value_mut(key) else {
            return false;
        };
        let old = e.expire_at;
        if old == at {
            return true;
        }
        e.expire_at = at;
        if let Some(t) = old {
            self.expires.remove(&(t, k.clone()));
        }
        if let Some(t) = at {
            self.expires.insert((t, k.clone()));
        }
        true
    }

    /// The earliest expiry time in this db.
    pub fn next_expiry(&self) -> Option<i64> {
        self.expires.first().map(|(t, _)| *t)
    }

    /// Keys whose expiry is `<= now`, earliest first, at most `limit`.
    pub fn due_keys(&self, now: i64, limit: usize) -> Vec<Bytes> {
        self.expires
            .iter()
            .take_while(|(t, _)| *t <= now)
            .take(limit)
            .map(|(_, k)| k.clone())
            .collect()
    }

    pub fn keys(&self) -> impl Iterator<Item = &Bytes> {
        self.map.keys()
    }
    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &Entry)> {
        self.map.iter()
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.expires.clear();
        self.scan_index = None;
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
        self.map.keys().nth(n).cloned()
    }

    /// Up to `n` keys for maxmemory eviction to weigh (storage/evict.rs): all keys, or
    /// with `volatile` only keys with a TTL, read in table order from a random position
    /// (wrapping). Table order is hash order, so the keys are a uniform random pick, also
    /// among keys with a TTL (the expiry index is in deadline order, which would not be).
    /// Reaching the position walks the table, O(keys); evict.rs asks for many keys at a
    /// time to spread that cost. Keys may be logically expired.
    pub fn sample_keys(&self, n: usize, volatile: bool) -> Vec<Bytes> {
        use rand::Rng;
        let len = self.map.len();
        if len == 0 || n == 0 || (volatile && self.expires.is_empty()) {
            return Vec::new();
        }
        let start = rand::thread_rng().gen_range(0..len);
        let mut it = self.map.iter();
        if start > 0 {
            it.nth(start - 1);
        }
        it.chain(self.map.iter().take(start))
            .filter(|(_, e)| !volatile || e.expire_at.is_some())
            .take(n)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// One step of SCAN. Keys are visited in the order of a hash that is fixed for the
    /// life of the db, and the cursor is the next hash to visit, so a key present for the
    /// whole iteration is returned at least once however the map changes in between, as
    /// SCAN guarantees. Returns about `count` keys (all keys sharing the last hash) and the
    /// next cursor (0 at the end).
    pub fn scan(&mut self, cursor: u64, count: usize) -> (Vec<Bytes>, u64) {
        if self.scan_index.is_none() {
            let ix = self
                .map
                .keys()
                .map(|k| (self.scan_hash(k), k.clone()))
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
        db.insert(
            Bytes::from_static(b"a"),
            Value::Str(Bytes::new()),
            Some(10),
            0,
        );
        db.insert(
            Bytes::from_static(b"b"),
            Value::Str(Bytes::new()),
            Some(5),
            0,
        );
        assert_eq!(db.next_expiry(), Some(5));
        db.remove(b"b");
        assert_eq!(db.next_expiry(), Some(10));
        db.set_expire(b"a", None);
        assert_eq!(db.next_expiry(), None);
        assert_eq!(db.expires_count(), 0);
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
}
