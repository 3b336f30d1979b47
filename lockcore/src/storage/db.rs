//! One numbered database: a map from binary-safe keys to entries, plus an index of expiry
//! times so active expiry finds due keys in O(log n) instead of sampling.
//!
//! `Db` knows nothing of the clock or of notifications: it is raw storage. Expiry rules
//! (lazy on access, active in the background) live in [`crate::engine::Engine`], which owns
//! the clock and the write epilogue.
//!
//! Layout: the `(Key, Entry)` pairs sit densely in fixed-size chunks ([`Dense`]), and the
//! hash table (table.rs) holds only an 8-byte [`Slot`] per key (the pair's position and 32
//! bits of the key's hash). A table of whole pairs paid their 72 bytes for every empty
//! bucket too, and a table between growths is 37-75 % full (hashbrown's was 44-87 %: 118
//! bytes per key at 10,000 keys, docs/architecture.md, "Bytes per key").

use bytes::Bytes;
use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::hash::BuildHasher;

use crate::storage::expiry::{self, ExpiryHeap};
use crate::storage::key::{Key, KeyHasher};
use crate::storage::table::{prefetch, Slot, SlotTable};
use crate::storage::value::{Entry, Value};

/// What [`Db::probe`] found: a live entry, an expired one it just removed, or nothing.
pub enum Probe<'a> {
    Live(&'a mut Entry),
    /// The key's TTL had passed: the entry, already out of the map and the indexes.
    Expired(Entry),
    Absent,
}

/// The most keys one [`Db::prefetch`] looks at: a pipeline of 16, redis-benchmark's -P 16
/// and about what a client's batch holds, without the first keys' lines being evicted
/// before their commands run.
pub const PREFETCH_MAX: usize = 16;

/// Below this many keys a db is not worth prefetching: its slots, pairs and values (about
/// 120 bytes a key) fit in the 512 KiB-1 MiB of a core's L2, and finding the next
/// commands' keys costs instructions for nothing (callgrind, Redisson's reentry script at
/// -P 16 in a db of two keys: 10,338 instructions per request without a prefetch, 10,999
/// with one). GET at -P 16 on 20,000 keys already gains from it (0.71-0.92 us per request
/// against 1.01-1.14).
pub const PREFETCH_MIN_KEYS: usize = 4096;

/// Pairs per chunk of [`Dense`]: 32, so a chunk is 2,304 bytes.
///
/// Small because used memory moves by a chunk at a time, and `maxmemory` has to see it
/// move about as finely as Redis' per-key frees: with 512-pair (36 KiB) chunks, eviction
/// under allkeys-* policies swung used memory between the limit and 36 KiB below it, and
/// Redis' unit/maxmemory test "only allkeys-* should remove non-volatile keys", which adds
/// keys until used memory is within 4 KiB of the limit, never got there.
const CHUNK_BITS: u32 = 5;
const CHUNK: usize = 1 << CHUNK_BITS;

/// The pairs, without gaps, in chunks of `CHUNK`: every chunk but the last is full, and
/// the last may be empty (kept so that a key count going to and fro across a chunk
/// boundary does not allocate each time). A removal moves the last pair into the gap.
/// Chunks rather than one `Vec` because a doubling `Vec` would again hold up to twice the
/// pairs in place; here the slack is at most one chunk, and only the first chunk grows by
/// doubling.
#[derive(Debug, Default)]
struct Dense {
    chunks: Vec<Vec<(Key, Entry)>>,
    len: usize,
}

impl Dense {
    #[inline]
    fn get(&self, at: u32) -> &(Key, Entry) {
        let at = at as usize;
        &self.chunks[at >> CHUNK_BITS][at & (CHUNK - 1)]
    }

    #[inline]
    fn get_mut(&mut self, at: u32) -> &mut (Key, Entry) {
        let at = at as usize;
        &mut self.chunks[at >> CHUNK_BITS][at & (CHUNK - 1)]
    }

    #[inline]
    fn key(&self, at: u32) -> &[u8] {
        &self.get(at).0
    }

    /// Appends a pair; returns its position.
    fn push(&mut self, kv: (Key, Entry)) -> u32 {
        // u32::MAX is the table's empty slot.
        let at = u32::try_from(self.len)
            .ok()
            .filter(|&at| at != u32::MAX)
            .expect("more than 2^32 - 1 keys in one db");
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(kv),
            _ => {
                let mut c = Vec::with_capacity(if self.chunks.is_empty() { 4 } else { CHUNK });
                c.push(kv);
                self.chunks.push(c);
            }
        }
        self.len += 1;
        at
    }

    /// Removes the pair at `at`, moving the last pair into its place. Returns the pair and,
    /// if one moved, the position it came from (its slot must now say `at`).
    fn swap_remove(&mut self, at: u32) -> ((Key, Entry), Option<u32>) {
        if self.chunks.last().is_some_and(|c| c.is_empty()) {
            self.chunks.pop();
        }
        let last = self.chunks.last_mut().and_then(|c| c.pop()).expect("empty");
        self.len -= 1;
        let from = self.len as u32;
        if at == from {
            return (last, None);
        }
        (std::mem::replace(self.get_mut(at), last), Some(from))
    }

    fn iter(&self) -> impl Iterator<Item = &(Key, Entry)> {
        self.chunks.iter().flatten()
    }
}

#[derive(Debug, Default)]
pub struct Db {
    /// A table of positions rather than a map: a lookup that may turn into an insert or a
    /// removal hashes once, without cloning the key first, and the expiry index can find a
    /// key by its hash alone (it stores no copy of the key).
    map: SlotTable,
    dense: Dense,
    hasher: KeyHasher,
    /// `(deadline, key hash)` of the keys with a TTL; stale entries are checked against
    /// the entry's own `expire_at` when they come up (see expiry.rs).
    expires: ExpiryHeap,
    /// Keys ordered by their SCAN hash: built by the first SCAN, then kept in step with
    /// the map, so each SCAN step costs O(log n + COUNT) rather than a pass over the db.
    scan_index: Option<BTreeSet<(u64, Bytes)>>,
    scan_hasher: RandomState,
    /// The position and 32-bit hash of the key found last, `at << 32 | h`. A lock script
    /// names one key in each of its calls (EXISTS, HEXISTS, HINCRBY, PEXPIRE), so its
    /// lookups after the first compare the key at that position instead of probing the
    /// table. A hint, checked on every use: positions move when keys are removed, and the
    /// key found there must be the one looked for (keys are unique, so that is its place).
    last: Cell<u64>,
    /// The keys changed since the db last matched a snapshot (engine/snapshot.rs); `None`
    /// when no snapshot is the db's baseline, which costs the lookups one branch.
    changes: Option<Box<Changes>>,
    /// `(deadline, key)` of the hashes with field TTLs (HEXPIRE...): each such hash has an
    /// entry at or before its earliest field TTL; stale entries (the hash gone, or its TTLs
    /// changed) are checked against the hash when they come up, as the key heap's are.
    hfe: BTreeSet<(i64, Bytes)>,
}

/// What a db has changed since its content was that of snapshot `base`: every key looked
/// up for writing, inserted, removed or given a new TTL since (a superset of the keys whose
/// value differs: lookups that only read through `&mut` count too). Restoring `base` then
/// puts back these keys alone.
#[derive(Debug)]
pub struct Changes {
    pub base: u64,
    /// The db was emptied, or more keys changed than `limit`: a restore copies it all.
    pub all: bool,
    pub keys: hashbrown::HashSet<Bytes, rustc_hash::FxBuildHasher>,
    limit: usize,
}

impl Changes {
    #[cold]
    fn note(&mut self, key: &[u8]) {
        if self.all || self.keys.contains(key) {
            return;
        }
        if self.keys.len() >= self.limit {
            self.all = true;
            self.keys = Default::default();
        } else {
            self.keys.insert(Bytes::copy_from_slice(key));
        }
    }
}

/// The key hash, folded to the 32 bits a [`Slot`] and the expiry heap keep.
#[inline]
fn key_hash(hasher: &KeyHasher, key: &[u8]) -> u32 {
    let h = hasher.hash_one(key);
    (h ^ (h >> 32)) as u32
}

/// [`Db::last`]'s packing of a position and a key hash.
#[inline]
fn pack(at: u32, h: u32) -> u64 {
    (at as u64) << 32 | h as u64
}

/// Accepts the slot of `key` (the table has matched the hash).
#[inline]
fn eq<'a>(dense: &'a Dense, key: &'a [u8]) -> impl Fn(&Slot) -> bool + 'a {
    move |s| dense.key(s.at) == key
}

/// Takes the pair at `at` out of `dense` (its slot already left the table) and points the
/// slot of the pair that moved into its place at it.
fn take(
    map: &mut SlotTable,
    dense: &mut Dense,
    hasher: &KeyHasher,
    expires: &mut ExpiryHeap,
    at: u32,
) -> (Key, Entry) {
    let (kv, moved) = dense.swap_remove(at);
    if let Some(from) = moved {
        let (k, e) = dense.get(at);
        let h = key_hash(hasher, k);
        let s = map
            .find_mut(h, |s| s.at == from)
            .expect("a moved key has its slot");
        s.at = at;
        if let Some(t) = e.expire_at() {
            expires.moved(t, h, from, at);
        }
    }
    kv
}

impl Db {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The slot table's bytes per key (MEMORY USAGE): 8-byte slots, the table between
    /// 7/16 and 7/8 full (9 to 18 bytes a key; 9 for an empty table).
    pub fn slot_bytes_per_key(&self) -> usize {
        match self.map.len() {
            0 => 9,
            n => self.map.num_buckets() * std::mem::size_of::<Slot>() / n,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn expires_count(&self) -> usize {
        self.expires.live()
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u32 {
        key_hash(&self.hasher, key)
    }

    #[inline]
    fn find(&self, key: &[u8]) -> Option<u32> {
        self.find_hashed(key, self.hash(key))
    }

    #[inline]
    fn find_hashed(&self, key: &[u8], h: u32) -> Option<u32> {
        if let Some(at) = self.recall(key, h) {
            return Some(at);
        }
        let at = self.map.find(h, eq(&self.dense, key))?.at;
        self.remember(at, h);
        Some(at)
    }

    /// The position of `key` (hash `h`) if it is the key found last.
    #[inline]
    fn recall(&self, key: &[u8], h: u32) -> Option<u32> {
        let l = self.last.get();
        let at = (l >> 32) as u32;
        (l as u32 == h && (at as usize) < self.dense.len && self.dense.key(at) == key).then_some(at)
    }

    #[inline]
    fn remember(&self, at: u32, h: u32) {
        self.last.set(pack(at, h));
    }

    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.find(key).map(|at| &self.dense.get(at).1)
    }
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.note(key);
        self.find(key).map(|at| &mut self.dense.get_mut(at).1)
    }
    pub fn contains(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// Whether `key` is the key found or inserted last (the one-entry memory that spares a
    /// script's calls on one key their probes). A pipeline that names it again is on a
    /// hot key, whose lines are in cache: prefetching gains nothing there.
    pub fn is_last_found(&self, key: &[u8]) -> bool {
        self.recall(key, self.hash(key)).is_some()
    }

    /// Brings in the cache lines that looking up `keys` (up to [`PREFETCH_MAX`]) will read,
    /// without waiting for any of them: each key's first slot; then the pair of the first
    /// slot with the key's hash bits; then that pair's value. Every round's misses overlap,
    /// where the commands' own lookups would wait for each in turn (three or four memory
    /// reads each on a keyspace that does not fit in cache). A hint that changes nothing:
    /// a key absent, or behind a slot of another key with the same 32 hash bits, only
    /// wastes its prefetches.
    pub fn prefetch(&self, keys: &[&[u8]]) {
        let keys = &keys[..keys.len().min(PREFETCH_MAX)];
        let mut hs = [0u32; PREFETCH_MAX];
        for (k, h) in keys.iter().zip(&mut hs) {
            *h = self.hash(k);
            if let Some(p) = self.map.home_addr(*h) {
                prefetch(p);
            }
        }
        let mut ats = [None; PREFETCH_MAX];
        for (h, at) in hs.iter().zip(&mut ats).take(keys.len()) {
            *at = self.map.find(*h, |_| true).map(|s| s.at);
            if let Some(at) = *at {
                // A pair is 72 bytes: it may end on the line after the one it starts on.
                let p = self.dense.get(at) as *const (Key, Entry) as *const u8;
                prefetch(p);
                prefetch(p.wrapping_add(std::mem::size_of::<(Key, Entry)>() - 1));
            }
        }
        for at in ats.iter().take(keys.len()).flatten() {
            prefetch(self.dense.get(*at).1.value.heap_addr());
        }
    }

    /// One probe for a key: the live entry, or, if its TTL is `<= now`, removes it (map,
    /// expiry index, SCAN index) and says so; the caller runs the expiry epilogue.
    pub fn probe(&mut self, key: &[u8], now: i64) -> Probe<'_> {
        self.note(key);
        let h = self.hash(key);
        if let Some(at) = self.recall(key, h) {
            if self.dense.get(at).1.expire_at().is_none_or(|t| t > now) {
                return Probe::Live(&mut self.dense.get_mut(at).1);
            }
        }
        let Db {
            map,
            dense,
            hasher,
            expires,
            scan_index,
            scan_hasher,
            last,
            ..
        } = self;
        let Some(i) = map.find_index(h, eq(dense, key)) else {
            return Probe::Absent;
        };
        let at = map.slot(i).at;
        match dense.get(at).1.expire_at() {
            Some(t) if t <= now => {
                map.remove_at(i);
                let (k, gone) = take(map, dense, hasher, expires, at);
                lost_ttl(map, dense, expires, t, None);
                if let Some(ix) = scan_index {
                    let h = scan_hasher.hash_one(&k[..]) | 1;
                    ix.remove(&(h, Bytes::copy_from_slice(&k)));
                }
                Probe::Expired(gone)
            }
            _ => {
                last.set(pack(at, h));
                Probe::Live(&mut dense.get_mut(at).1)
            }
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
        self.note(&key);
        if let Value::Hash(h) = &entry.value {
            if let Some(t) = h.min_ttl() {
                self.hfe.insert((t, key.clone()));
            }
        }
        self.maybe_compact_expires();
        let h = self.hash(&key);
        let Db {
            map,
            dense,
            expires,
            scan_index,
            scan_hasher,
            last,
            ..
        } = self;
        let new_ttl = entry.expire_at();
        match map.find_or_vacant(h, eq(dense, &key)) {
            Ok(i) => {
                let at = map.slot(i).at;
                let e = &mut dense.get_mut(at).1;
                let old_ttl = e.expire_at();
                *e = entry;
                match old_ttl {
                    Some(t) if old_ttl != new_ttl => {
                        if let Some(t) = new_ttl {
                            expires.gained(t, h, at);
                        }
                        // Drops the old TTL's entry if it was the earliest (settles).
                        lost_ttl(map, dense, expires, t, new_ttl.map(|t| (t, h)));
                    }
                    None if new_ttl.is_some() => expires.gained(new_ttl.unwrap(), h, at),
                    _ => {}
                }
                last.set(pack(at, h));
                &mut dense.get_mut(at).1
            }
            Err(vacant) => {
                if let Some(t) = new_ttl {
                    expires.gained(t, h, dense.len as u32);
                }
                if let Some(ix) = scan_index {
                    ix.insert((scan_hasher.hash_one(key.as_ref()) | 1, key.clone()));
                }
                let at = dense.push((Key::new(&key), entry));
                // The map is as the lookup left it: the slot goes where the probe stopped.
                map.insert_vacant(vacant, Slot { at, h });
                last.set(pack(at, h));
                &mut dense.get_mut(at).1
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
        self.note(key);
        let h = self.hash(key);
        let Db {
            map,
            dense,
            hasher,
            expires,
            ..
        } = self;
        let s = map.remove(h, eq(dense, key))?;
        let (_, e) = take(map, dense, hasher, expires, s.at);
        if let Some(t) = e.expire_at() {
            lost_ttl(map, dense, expires, t, None);
            self.maybe_compact_expires();
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
        self.note(key);
        self.maybe_compact_expires();
        let h = self.hash(key);
        let Some(pos) = self.find_hashed(key, h) else {
            return false;
        };
        let e = &mut self.dense.get_mut(pos).1;
        // As the entry keeps it (a deadline <= 0 as 1 ms), so that the heap entry matches.
        let at = at.map(|t| t.max(1));
        let old = e.expire_at();
        if old == at {
            return true;
        }
        e.set_expire_at(at);
        if let Some(t) = at {
            self.expires.gained(t, h, pos);
        }
        if let Some(t) = old {
            let live = at.map(|a| (a, h));
            lost_ttl(&self.map, &self.dense, &mut self.expires, t, live);
        }
        true
    }

    /// Bounds the stale entries of the expiry heap (see expiry.rs): past the bound, the
    /// heap is compacted from its own entries when it is small and the keys outnumber its
    /// entries 4 to 1 (measured, checking an entry, a hash probe after a sort, costs 3-4
    /// walk steps), and otherwise rebuilt by a walk of the keys, a few at a time.
    fn maybe_compact_expires(&mut self) {
        if self.expires.walk_at().is_some() {
            self.rebuild_step(self.expires.overdue());
        }
        // Also right after a rebuild ended: TTLs dropped meanwhile may leave its heap over
        // the bound already.
        if self.expires.needs_compaction() {
            let entries = self.expires.entries();
            // Under test, both ways in turn, so the unit and property tests check both.
            let compact = if cfg!(test) {
                entries % 2 == 0
            } else {
                entries <= expiry::COMPACT_MAX && self.dense.len > 4 * entries
            };
            if compact {
                let Db {
                    map,
                    dense,
                    expires,
                    ..
                } = self;
                expires.compact(|t, h| owners(map, dense, t, h).count());
            } else {
                self.expires.start_rebuild();
                self.rebuild_step(self.expires.overdue());
            }
        }
    }

    /// Walks the next pairs for the expiry heap's rebuild (every pair left if `all`), and
    /// puts the rebuilt heap in place once every pair has been walked. The pairs are
    /// walked in their order and the keys with a TTL hashed again: the table's order would
    /// reach the pairs at random, a cache miss each.
    fn rebuild_step(&mut self, all: bool) {
        let Db {
            map,
            dense,
            expires,
            hasher,
            ..
        } = self;
        let Some(from) = expires.walk_at() else {
            return;
        };
        let len = dense.len as u32;
        // Enough pairs per TTL change that the walk ends within half as many changes as
        // there are keys with a TTL: the old heap grows by at most half meanwhile.
        let step = if all {
            len
        } else {
            (2 * dense.len / expires.live().max(1)).max(2) as u32
        };
        let to = from.saturating_add(step).min(len);
        expires.walk(
            to,
            (from..to).filter_map(|at| {
                let (k, e) = dense.get(at);
                Some((e.expire_at()?, key_hash(hasher, k)))
            }),
        );
        if to >= len {
            expires.finish_rebuild();
            settle(map, dense, expires, None);
        }
    }

    /// The hash at `key` has a field whose TTL is `at`: active expiry looks at it then.
    pub fn hfe_note(&mut self, key: &[u8], at: i64) {
        self.hfe.insert((at, Bytes::copy_from_slice(key)));
    }

    /// The earliest instant a hash may have a field to expire.
    pub fn hfe_next(&self) -> Option<i64> {
        self.hfe.first().map(|(t, _)| *t)
    }

    /// The number of hashes Redis would count as registered for field expiry (INFO
    /// keyspace `subexpiry`): those whose registered earliest TTL is set.
    pub fn hfe_hashes(&self) -> usize {
        let mut keys: Vec<&Bytes> = self.hfe.iter().map(|(_, k)| k).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .filter(|k| {
                matches!(self.get(k).map(|e| &e.value),
                    Some(Value::Hash(h)) if h.meta_min().is_some())
            })
            .count()
    }

    /// Hashes that may have fields whose TTL is `<= now`, at most `limit`. Their entries
    /// leave the index: the caller expires their fields and notes the hash again with
    /// [`Self::hfe_note`] if it keeps TTLs.
    pub fn hfe_due(&mut self, now: i64, limit: usize) -> Vec<Bytes> {
        let mut out: Vec<Bytes> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        while out.len() < limit {
            match self.hfe.first() {
                Some((t, _)) if *t <= now => {
                    let (_, k) = self.hfe.pop_first().unwrap();
                    if seen.insert(k.clone()) {
                        out.push(k);
                    }
                }
                _ => break,
            }
        }
        out
    }

    /// The earliest expiry time in this db.
    pub fn next_expiry(&self) -> Option<i64> {
        self.expires.peek().map(|(t, _)| t)
    }

    /// Keys whose expiry is `<= now`, earliest first, at most `limit`. They leave the
    /// expiry index: the caller removes each of them (active expiry, eviction), after this
    /// returns.
    pub fn due_keys(&mut self, now: i64, limit: usize) -> Vec<Bytes> {
        let mut out = Vec::new();
        // Equal entries come out one after another. The n-th copy of `(t, h)` in a row
        // stands for the n-th key with that hash and TTL: two keys whose hashes collide and
        // that share a deadline are both returned, and a key whose TTL was set back to an
        // earlier value (an entry twice) once.
        let mut run: ((i64, u32), usize) = ((0, 0), 0);
        while out.len() < limit {
            let Some(e) = self.expires.pop_due(now) else {
                break;
            };
            run = if run.0 == e { (e, run.1 + 1) } else { (e, 0) };
            if let Some(at) = owners(&self.map, &self.dense, e.0, e.1).nth(run.1) {
                out.push(Bytes::copy_from_slice(self.dense.key(at)));
            }
        }
        settle(&self.map, &self.dense, &mut self.expires, None);
        out
    }

    /// Names `key` in the changes since the baseline snapshot, if there is one.
    #[inline]
    fn note(&mut self, key: &[u8]) {
        if let Some(c) = &mut self.changes {
            c.note(key);
        }
    }

    /// Makes snapshot `base` the db's baseline: from now on the db names the keys it
    /// changes, up to `limit` of them (past that, a restore copies everything).
    pub fn track_changes(&mut self, base: u64, limit: usize) {
        self.changes = Some(Box::new(Changes {
            base,
            all: false,
            keys: Default::default(),
            limit,
        }));
    }

    /// The changes since the baseline snapshot, which stops being the baseline.
    pub fn take_changes(&mut self) -> Option<Box<Changes>> {
        self.changes.take()
    }

    /// The baseline snapshot, if any.
    pub fn baseline(&self) -> Option<u64> {
        self.changes.as_ref().map(|c| c.base)
    }

    /// A copy of every entry (values, TTLs, access times), without the indexes' history:
    /// what a snapshot keeps.
    pub fn copy(&self) -> Db {
        let mut d = Db::default();
        for (k, e) in self.iter() {
            d.insert_entry(Bytes::copy_from_slice(k), e.clone());
        }
        d
    }

    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.dense.iter().map(|(k, _)| &k[..])
    }
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.dense.iter().map(|(k, e)| (&k[..], e))
    }

    pub fn clear(&mut self) {
        if let Some(c) = &mut self.changes {
            c.all = true;
            c.keys = Default::default();
        }
        self.map.clear();
        self.dense = Dense::default();
        self.expires.clear();
        self.scan_index = None;
        self.hfe.clear();
    }

    /// Gives back table memory when the db has become sparse (under a tenth full), as
    /// Redis' cron resizes its dicts. Eviction calls it when it has run out of keys to
    /// evict. The table of slots keeps its size as keys go; the pairs' chunks are freed as
    /// they empty, except a lone first chunk, which grew by doubling and is trimmed here.
    /// Returns true if the table shrank.
    pub fn shrink_if_sparse(&mut self) -> bool {
        let cap = self.map.capacity();
        if cap <= 64 || self.map.len() * 10 >= cap {
            return false;
        }
        self.map.shrink_to(self.map.len() * 2);
        if let [c] = &mut self.dense.chunks[..] {
            c.shrink_to_fit();
        }
        self.map.capacity() < cap
    }

    /// The SCAN order of a key; never 0, which is the cursor that starts and ends a scan.
    fn scan_hash(&self, key: &[u8]) -> u64 {
        self.scan_hasher.hash_one(key) | 1
    }

    /// A uniformly random key (including ones that may be logically expired).
    pub fn random_key(&self) -> Option<Bytes> {
        use rand::Rng;
        if self.dense.len == 0 {
            return None;
        }
        let at = rand::thread_rng().gen_range(0..self.dense.len) as u32;
        Some(Bytes::copy_from_slice(self.dense.key(at)))
    }

    /// Up to `n` keys for maxmemory eviction to weigh (engine/evict.rs): all keys, or
    /// with `volatile` only keys with a TTL, read in table order from a random position
    /// (wrapping). Table order is hash order, so the keys are a uniform random pick, also
    /// among keys with a TTL (the expiry index is in deadline order, and the pairs' own
    /// order is about insertion order, neither of which would be).
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
            if let Some(s) = self.map.get_bucket((start + i) % buckets) {
                let (k, e) = self.dense.get(s.at);
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

/// The position of the key an expiry entry `(t, h)` stands for: a key with hash `h` whose
/// own TTL is exactly `t`. None means the entry is stale (the TTL changed, or the key is
/// gone).
fn owner(map: &SlotTable, dense: &Dense, t: i64, h: u32) -> Option<u32> {
    owners(map, dense, t, h).next()
}

/// The positions of every key with hash `h` whose TTL is `t`.
fn owners<'a>(
    map: &'a SlotTable,
    dense: &'a Dense,
    t: i64,
    h: u32,
) -> impl Iterator<Item = u32> + 'a {
    map.iter_hash(h)
        .filter(move |s| dense.get(s.at).1.expire_at() == Some(t))
        .map(|s| s.at)
}

/// Drops stale entries from the top of the expiry heap, so its top is the earliest TTL.
/// `live` is an entry the caller knows to be live (the TTL it just set), checked for free.
fn settle(map: &SlotTable, dense: &Dense, ex: &mut ExpiryHeap, live: Option<(i64, u32)>) {
    while let Some((t, h)) = ex.peek() {
        if live == Some((t, h)) || owner(map, dense, t, h).is_some() {
            break;
        }
        ex.pop();
    }
}

/// A key lost its TTL `t` (the map already shows the change). If that was the earliest
/// entry, it and any stale entries under it leave the top.
fn lost_ttl(map: &SlotTable, dense: &Dense, ex: &mut ExpiryHeap, t: i64, live: Option<(i64, u32)>) {
    ex.lost();
    if ex.peek().is_some_and(|(top, _)| top == t) {
        settle(map, dense, ex, live);
    }
}

/// Cursor iteration over any collection of byte-string items, by a process-wide hash order.
/// Used by SCAN, HSCAN and ZSCAN.
pub fn scan_by_hash<'a, I, T, S>(
    items: I,
    hasher: &S,
    cursor: u64,
    count: usize,
) -> (Vec<Bytes>, u64)
where
    I: Iterator<Item = &'a T>,
    T: ScanItem + ?Sized + 'a,
    S: BuildHasher,
{
    // Cursor 0 starts; internally hashes are shifted to be >= 1 so 0 can mean "done".
    let count = count.max(1);
    let mut batch: Vec<(u64, &T)> = items
        .map(|k| (hasher.hash_one(k.bytes()) | 1, k))
        .filter(|(h, _)| *h >= cursor)
        .collect();
    if batch.len() <= count {
        return (batch.into_iter().map(|(_, k)| k.to_bytes()).collect(), 0);
    }
    batch.select_nth_unstable_by_key(count, |(h, _)| *h);
    let boundary = batch[count].0;
    let keys = batch
        .iter()
        .filter(|(h, _)| *h < boundary)
        .map(|(_, k)| k.to_bytes())
        .collect();
    (keys, boundary)
}

/// An item [`scan_by_hash`] walks: a shared string (cloned into the reply) or plain bytes
/// (copied).
pub trait ScanItem {
    fn bytes(&self) -> &[u8];
    fn to_bytes(&self) -> Bytes;
}

impl ScanItem for Bytes {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn to_bytes(&self) -> Bytes {
        self.clone()
    }
}

impl ScanItem for [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::value::StrVal;
    use std::collections::HashSet;

    /// Prefetching takes any keys, present or not, more than it looks at, in an empty db
    /// and a full one, of every value type's layout.
    #[test]
    fn prefetch_takes_any_keys() {
        let mut db = Db::default();
        db.prefetch(&[b"a", b""]);
        let keys: Vec<Vec<u8>> = (0..40).map(|i| format!("key:{i}").into_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            let v = match i % 3 {
                0 => Value::Str(StrVal::from(vec![b'v'; i])),
                1 => Value::Hash(Default::default()),
                _ => Value::List(Default::default()),
            };
            db.insert(Bytes::from(k.clone()), v, None, 0);
        }
        let mut all: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        all.push(b"absent");
        db.prefetch(&all);
        db.prefetch(&all[30..]);
        assert_eq!(db.len(), 40);
        assert!(all[..40].iter().all(|k| db.contains(k)));
    }

    #[test]
    fn scan_returns_every_stable_key_once() {
        let mut db = Db::default();
        for i in 0..1000 {
            db.insert(
                Bytes::from(format!("k{i}")),
                Value::Str(Default::default()),
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
            db.insert(k(i), Value::Str(Default::default()), None, 0);
        }
        let (mut seen, mut cursor, mut step) = (HashSet::new(), 0, 0);
        loop {
            let (keys, next) = db.scan(cursor, 7);
            seen.extend(keys);
            // Churn: keys >= 1000 come and go; keys < 1000 stay for the whole scan.
            step += 1;
            db.remove(&k(1000 + step % 1000));
            db.insert(k(3000 + step), Value::Str(Default::default()), None, 0);
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
    fn the_recalled_position_is_checked_against_the_key() {
        let mut db = Db::default();
        let s = |v: &'static [u8]| Value::Str(StrVal::from_slice(v));
        for k in [&b"a"[..], b"b", b"c"] {
            db.insert(Bytes::from_static(k), s(k), None, 0);
        }
        let val = |db: &Db, k: &[u8]| match db.get(k).map(|e| &e.value) {
            Some(Value::Str(v)) => Some(v.clone()),
            _ => None,
        };
        // c is remembered at the last position; removing a moves c into a's place.
        assert_eq!(val(&db, b"c").as_deref(), Some(&b"c"[..]));
        db.remove(b"a");
        assert_eq!(val(&db, b"c").as_deref(), Some(&b"c"[..]));
        // b is remembered; removing it moves c into its place, and b is gone.
        assert_eq!(val(&db, b"b").as_deref(), Some(&b"b"[..]));
        db.remove(b"b");
        assert_eq!(val(&db, b"b"), None);
        assert!(db.set_expire(b"c", Some(10)));
        assert!(!db.set_expire(b"b", Some(10)));
        // A remembered key whose TTL passed is removed by the probe, not handed out.
        assert!(matches!(db.probe(b"c", 5), Probe::Live(_)));
        assert!(matches!(db.probe(b"c", 10), Probe::Expired(_)));
        assert!(matches!(db.probe(b"c", 10), Probe::Absent));
        assert_eq!(db.len(), 0);
        db.insert(Bytes::from_static(b"d"), s(b"d"), None, 0);
        assert_eq!(val(&db, b"d").as_deref(), Some(&b"d"[..]));
        assert_eq!(val(&db, b"c"), None);
    }

    #[test]
    fn the_last_found_key_is_known_until_another_is_found_or_it_moves_away() {
        let mut db = Db::default();
        let s = |v: &'static [u8]| Value::Str(StrVal::from_slice(v));
        assert!(!db.is_last_found(b"a"));
        for k in [&b"a"[..], b"b", b"c"] {
            db.insert(Bytes::from_static(k), s(k), None, 0);
        }
        assert!(db.is_last_found(b"c"));
        assert!(!db.is_last_found(b"a"));
        assert!(db.get(b"a").is_some());
        assert!(db.is_last_found(b"a") && !db.is_last_found(b"c"));
        // A key that is absent is never the last found, whatever the memory holds.
        assert!(db.get(b"zz").is_none());
        assert!(!db.is_last_found(b"zz"));
        // Removing a moves c into its place: the memory no longer names a live a.
        db.remove(b"a");
        assert!(!db.is_last_found(b"a"));
    }

    #[test]
    fn expiry_index_follows_inserts_and_removes() {
        let mut db = Db::default();
        let s = || Value::Str(Default::default());
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
        db.insert(k.clone(), Value::Str(Default::default()), Some(100), 0);
        db.set_expire(b"lock", Some(300)); // a watchdog renewal
        assert_eq!(db.due_keys(299, 10), Vec::<Bytes>::new());
        assert_eq!(db.due_keys(300, 10), vec![k.clone()]);
        // Shortened: due at the earlier deadline, and the later entry is stale.
        db.set_expire(b"lock", Some(50));
        assert_eq!(db.due_keys(50, 10), vec![k.clone()]);
        db.remove(b"lock");
        assert_eq!(db.due_keys(i64::MAX, 10), Vec::<Bytes>::new());
        // Replaced by SET with another TTL (insert over an existing key).
        db.insert(k.clone(), Value::Str(Default::default()), Some(70), 0);
        db.insert(k.clone(), Value::Str(Default::default()), Some(80), 0);
        assert_eq!(db.due_keys(79, 10), Vec::<Bytes>::new());
        assert_eq!(db.due_keys(80, 10), vec![k.clone()]);
        // Set back to a deadline it had before, under an earlier one (so the old entry
        // stays): two entries, one key, returned once.
        let z = Bytes::from_static(b"z");
        db.insert(k.clone(), Value::Str(Default::default()), Some(90), 0);
        db.insert(z.clone(), Value::Str(Default::default()), Some(20), 0);
        db.set_expire(b"lock", Some(95));
        db.set_expire(b"lock", Some(90));
        assert_eq!(db.expires.entries(), 4);
        assert_eq!(db.due_keys(100, 10), vec![z, k]);
    }

    #[test]
    fn a_rebuild_under_way_misses_no_key() {
        let mut db = Db::default();
        let k = |i: usize| Bytes::from(format!("k{i}"));
        for i in 0..21 {
            let ttl = (i < 10 || i == 20).then_some(100 + i as i64);
            db.insert(k(i), Value::Str(Default::default()), ttl, 0);
        }
        db.expires.start_rebuild();
        db.rebuild_step(false);
        assert_eq!(db.expires.walk_at(), Some(3));
        // Removing k0 fills its gap, behind the walk, with k20 from ahead of it.
        db.remove(b"k0");
        assert!(db.expires.walk_at().is_some_and(|w| w > 2));
        // A TTL changed behind the walk.
        db.set_expire(b"k2", Some(60));
        // A key added ahead of the walk, with a TTL.
        db.insert(k(21), Value::Str(Default::default()), Some(130), 0);
        db.rebuild_step(true);
        assert_eq!(db.expires.walk_at(), None);
        // Eleven keys with a TTL, and the two the walk took before they changed (k0, k2).
        assert_eq!(db.expires.entries(), 13);
        let mut due: Vec<Bytes> = (1..10).chain([20, 21]).map(k).collect();
        due.swap(0, 1); // k2 (60) comes first, then k1 (101)
        assert_eq!(db.due_keys(i64::MAX, 100), due);
    }

    #[test]
    fn stale_expiry_entries_stay_bounded() {
        let mut db = Db::default();
        // Keys without a TTL take no part in compacting the heap.
        for i in 0..1000 {
            db.insert(
                Bytes::from(format!("p{i}")),
                Value::Str(Default::default()),
                None,
                0,
            );
        }
        for i in 0..100 {
            db.insert(
                Bytes::from(format!("k{i}")),
                Value::Str(Default::default()),
                Some(1),
                0,
            );
        }
        // One million renewals of 100 keys: the heap is compacted as stale entries pile up.
        for r in 0..10_000i64 {
            for i in 0..100 {
                db.set_expire(format!("k{i}").as_bytes(), Some(1_000_000 - r));
            }
            // Twice the keys with a TTL and a slack, and half as many again while a
            // rebuild walks the keys.
            assert!(db.expires.entries() <= 2 * 100 + 100 / 2 + crate::storage::expiry::SLACK + 1);
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
                db.insert(key(i), Value::Str(Default::default()), None, 0);
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
                        db.insert(key(*i), Value::Str(Default::default()), None, 0);
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
                // A prefetch is only a hint, in any state of the table.
                db.prefetch(&[&k[..], b"absent", &key(i + 1)[..]]);
                match op {
                    0 => {
                        let ttl = if t % 3 == 0 { None } else { Some(now + t) };
                        db.insert(k.clone(), Value::Str(Default::default()), ttl, now);
                        model.insert(k, ttl);
                    }
                    1 => {
                        let present = model.contains_key(&k);
                        prop_assert_eq!(db.set_expire(&k, Some(now + t)), present);
                        if present {
                            // A deadline at or before the epoch is kept as 1 ms (Entry).
                            model.insert(k, Some((now + t).max(1)));
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
                // call that drops a TTL may leave up to two entries over it; while a
                // rebuild walks the keys, the heap may reach twice the bound.
                prop_assert!(db.expires.entries() <= 4 * live.len() + crate::storage::expiry::SLACK + 2);
            }
        }
    }
}

#[cfg(test)]
mod rebuild_props {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// A rebuild of the expiry heap started at any point ends with an entry for every
        /// key with a TTL, whatever the inserts, TTL changes and removals (each of which
        /// may move the last pair into a gap, across the walk) did while it ran.
        #[test]
        fn a_rebuilt_expiry_heap_has_every_key(
            initial in proptest::collection::vec((0u16..60, 0i64..1000), 0..80),
            ops in proptest::collection::vec((0u8..4, 0u16..60, 0i64..1000), 0..120),
        ) {
            let mut db = Db::default();
            let mut model: HashMap<Bytes, Option<i64>> = HashMap::new();
            let key = |i: u16| Bytes::from(format!("k{i}"));
            let ttl = |t: i64| (t % 3 != 0).then_some(t + 1);
            for (i, t) in initial {
                db.insert(key(i), Value::Str(Default::default()), ttl(t), 0);
                model.insert(key(i), ttl(t));
            }
            if db.expires.walk_at().is_none() {
                db.expires.start_rebuild();
            }
            for (op, i, t) in ops {
                let k = key(i);
                match op {
                    0 => {
                        db.insert(k.clone(), Value::Str(Default::default()), ttl(t), 0);
                        model.insert(k, ttl(t));
                    }
                    1 => {
                        if db.set_expire(&k, Some(t + 1)) {
                            model.insert(k, Some(t + 1));
                        }
                    }
                    2 => {
                        if db.set_expire(&k, None) {
                            model.insert(k, None);
                        }
                    }
                    _ => {
                        db.remove(&k);
                        model.remove(&k);
                    }
                }
            }
            db.rebuild_step(true);
            prop_assert_eq!(db.expires.walk_at(), None);
            let mut due = db.due_keys(i64::MAX, usize::MAX);
            due.sort();
            let mut want: Vec<Bytes> =
                model.into_iter().filter(|(_, t)| t.is_some()).map(|(k, _)| k).collect();
            want.sort();
            prop_assert_eq!(due, want);
        }
    }
}

#[cfg(test)]
mod dense_props {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The slot table and the dense pairs against a model, across chunk boundaries:
        /// after any sequence of inserts, replacements, removals and expiries (each of
        /// which may move the last pair into a gap), every key finds its own value, the
        /// pairs hold exactly the model's keys, and a random key is one of them.
        #[test]
        fn dense_pairs_match_a_model(
            ops in proptest::collection::vec((0u8..4, 0u16..1600), 0..4000),
        ) {
            let mut db = Db::default();
            let mut model: HashMap<Bytes, Bytes> = HashMap::new();
            let key = |i: u16| Bytes::from(format!("key:{i}"));
            for (n, (op, i)) in ops.into_iter().enumerate() {
                let k = key(i);
                match op {
                    0 | 1 => {
                        let v = Bytes::from(n.to_string());
                        db.insert(k.clone(), Value::Str(v.clone().into()), None, 0);
                        model.insert(k, v);
                    }
                    2 => {
                        prop_assert_eq!(db.remove(&k).is_some(), model.remove(&k).is_some());
                    }
                    _ => {
                        // A key that expired: probe removes it, moving a pair as remove does.
                        if db.set_expire(&k, Some(5)) {
                            prop_assert!(matches!(db.probe(&k, 10), Probe::Expired(_)));
                            model.remove(&k);
                        }
                    }
                }
            }
            prop_assert_eq!(db.len(), model.len());
            for (k, v) in &model {
                match db.get(k).map(|e| &e.value) {
                    Some(Value::Str(got)) => prop_assert_eq!(got, v),
                    other => prop_assert!(false, "{:?}: {:?}", k, other),
                }
            }
            let mut keys: Vec<&[u8]> = db.keys().collect();
            keys.sort();
            let mut want: Vec<&[u8]> = model.keys().map(|k| &k[..]).collect();
            want.sort();
            prop_assert_eq!(keys, want);
            if let Some(k) = db.random_key() {
                prop_assert!(model.contains_key(&k));
            }
            db.clear();
            prop_assert!(db.is_empty() && db.keys().next().is_none());
        }
    }
}
