//! Value types stored under a key.

use bytes::Bytes;
use indexmap::IndexMap;

pub use crate::storage::inline::StrVal;
use crate::storage::listpack::PairPack;
use crate::storage::lock::LockValue;
use crate::storage::zset::ZSet;

pub use crate::storage::set::{SetEncoding, SetLimits, SetValue, SmallSet, StrSet};

/// A hash, in one of Redis' encodings. Small hashes are a flat [`PairPack`] in
/// insertion order, as Redis' listpack is, so HGETALL replies match Redis byte for byte and
/// a one-field lock hash is one small allocation. Past `hash-max-listpack-entries` or
/// `-value` the hash becomes a table ("hashtable" encoding), which, as in Redis, never
/// switches back. A hash whose fields were given a TTL (HEXPIRE, HSETEX...) is a table
/// too: [`HashTable::listpackex`] marks the small ones Redis 7.4+ keeps as "listpackex".
#[derive(Debug, Clone)]
pub enum HashValue {
    Pack(PairPack),
    Table(Box<HashTable>),
}

/// Field TTL: none.
pub const NO_TTL: i64 = 0;

/// A hash as a table: its fields and values, and the fields' TTLs (hash field expiration,
/// Redis 7.4 / Valkey 9). Read-only access to the map goes through `Deref`; every change
/// goes through [`HashValue`], which keeps the TTLs and, for a listpackex hash, Redis'
/// order (fields with a TTL first, earliest deadline first, then those without, in the
/// order they were added) in step.
#[derive(Debug, Clone, Default)]
pub struct HashTable {
    map: IndexMap<Bytes, Bytes, crate::storage::key::KeyHasher>,
    /// The deadline (Unix ms) of each field that has one.
    ttls: std::collections::HashMap<Bytes, i64, crate::storage::key::KeyHasher>,
    /// Redis' "listpackex" encoding: a small hash that got field TTLs. It becomes a
    /// "hashtable" past the listpack limits, and never goes back.
    pub listpackex: bool,
    /// The earliest field TTL as Redis last registered the hash for active expiry (0:
    /// not registered). Redis updates it lazily (not on HPERSIST, nor for a change under
    /// 4 s), and a listpackex DUMP payload carries it, so it is kept as Redis keeps it.
    pub meta_min: i64,
}

impl std::ops::Deref for HashTable {
    type Target = IndexMap<Bytes, Bytes, crate::storage::key::KeyHasher>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl HashTable {
    fn from_map(map: IndexMap<Bytes, Bytes, crate::storage::key::KeyHasher>) -> HashTable {
        HashTable {
            map,
            ttls: Default::default(),
            listpackex: false,
            meta_min: 0,
        }
    }

    /// Inserts or replaces a field; `ttl` is what it gets (`None`: none). A listpackex
    /// hash puts it where Redis' listpackex would: a field with no TTL at the end, one
    /// with a TTL before the first field whose TTL is later or equal, or that has none.
    fn put(&mut self, field: &Bytes, value: Bytes, ttl: Option<i64>) -> bool {
        let new = !self.map.contains_key(field.as_ref());
        match ttl {
            Some(t) => {
                self.ttls.insert(field.clone(), t);
            }
            None => {
                self.ttls.remove(field.as_ref());
            }
        }
        if !self.listpackex {
            self.map.insert(field.clone(), value);
            return new;
        }
        self.map.shift_remove(field.as_ref());
        let at = match ttl {
            None => self.map.len(),
            Some(t) => self
                .map
                .keys()
                .position(|k| self.ttls.get(k.as_ref()).is_none_or(|&u| u >= t))
                .unwrap_or(self.map.len()),
        };
        self.map.shift_insert(at, field.clone(), value);
        new
    }
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Pack(PairPack::default())
    }
}

/// The pairs of a hash, in its encoding's order.
pub enum HashIter<'a> {
    Pack(crate::storage::listpack::PairIter<'a>),
    Table(indexmap::map::Iter<'a, Bytes, Bytes>),
}

impl<'a> Iterator for HashIter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            HashIter::Pack(i) => i.next(),
            HashIter::Table(i) => i.next().map(|(k, v)| (k.as_ref(), v.as_ref())),
        }
    }
}

impl HashValue {
    /// The number of fields, expired ones not yet reclaimed included (Redis' HLEN).
    pub fn len(&self) -> usize {
        match self {
            HashValue::Pack(p) => p.len(),
            HashValue::Table(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True once the hash has the "hashtable" or "listpackex" encoding.
    pub fn is_table(&self) -> bool {
        matches!(self, HashValue::Table(_))
    }

    /// True for Redis' "listpackex" encoding.
    pub fn is_listpackex(&self) -> bool {
        matches!(self, HashValue::Table(t) if t.listpackex)
    }

    /// The name OBJECT ENCODING prints.
    pub fn encoding(&self) -> &'static str {
        match self {
            HashValue::Pack(_) => "listpack",
            HashValue::Table(t) if t.listpackex => "listpackex",
            HashValue::Table(_) => "hashtable",
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Pack(p) => p.get(field),
            HashValue::Table(m) => m.map.get(field).map(|v| v.as_ref()),
        }
    }

    /// The value of `field` as a reply string (a copy out of a packed hash).
    pub fn get_bytes(&self, field: &[u8]) -> Option<Bytes> {
        match self {
            HashValue::Pack(p) => p.get(field).map(Bytes::copy_from_slice),
            HashValue::Table(m) => m.map.get(field).cloned(),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        match self {
            HashValue::Pack(p) => p.contains(field),
            HashValue::Table(m) => m.map.contains_key(field),
        }
    }

    /// The TTL (Unix ms) of `field`, if it has one.
    pub fn ttl(&self, field: &[u8]) -> Option<i64> {
        match self {
            HashValue::Pack(_) => None,
            HashValue::Table(m) => m.ttls.get(field).copied(),
        }
    }

    /// True if some field has a TTL.
    pub fn has_ttls(&self) -> bool {
        matches!(self, HashValue::Table(m) if !m.ttls.is_empty())
    }

    /// The earliest field TTL.
    pub fn min_ttl(&self) -> Option<i64> {
        match self {
            HashValue::Pack(_) => None,
            HashValue::Table(m) => m.ttls.values().min().copied(),
        }
    }

    /// The registered earliest TTL (see `HashTable::meta_min`).
    pub fn meta_min(&self) -> Option<i64> {
        match self {
            HashValue::Table(t) if t.meta_min != 0 => Some(t.meta_min),
            _ => None,
        }
    }

    pub fn set_meta_min(&mut self, at: Option<i64>) {
        if let HashValue::Table(t) = self {
            t.meta_min = at.unwrap_or(0);
        }
    }

    /// True if `field` has a TTL before `now` (Redis' lazy check: a field is still
    /// readable at its deadline's millisecond).
    pub fn is_expired(&self, field: &[u8], now: i64) -> bool {
        self.ttl(field).is_some_and(|t| t < now)
    }

    /// The fields whose TTL is `<= now` (active expiry's test), in the hash's order.
    pub fn due_fields(&self, now: i64) -> Vec<Bytes> {
        match self {
            HashValue::Pack(_) => vec![],
            HashValue::Table(m) => {
                if !m.ttls.values().any(|&t| t <= now) {
                    return vec![];
                }
                m.map
                    .keys()
                    .filter(|k| m.ttls.get(k.as_ref()).is_some_and(|&t| t <= now))
                    .cloned()
                    .collect()
            }
        }
    }

    /// The number of fields not expired at `now`.
    pub fn live_len(&self, now: i64) -> usize {
        match self {
            HashValue::Pack(p) => p.len(),
            HashValue::Table(m) => m.map.len() - m.ttls.values().filter(|&&t| t < now).count(),
        }
    }

    /// Gets the hash ready for field TTLs, as Redis' `hashTypeSetExInit`: a listpack
    /// becomes a listpackex.
    pub fn prepare_ttls(&mut self) {
        if let HashValue::Pack(_) = self {
            self.convert();
            if let HashValue::Table(t) = self {
                t.listpackex = true;
            }
        }
    }

    /// Sets (`Some`) or removes (`None`) the TTL of an existing field; false if the field
    /// is absent. The hash must have been [`Self::prepare_ttls`]'d.
    pub fn set_ttl(&mut self, field: &[u8], ttl: Option<i64>) -> bool {
        let HashValue::Table(m) = self else {
            return false;
        };
        let Some((k, v)) = m.map.get_key_value(field) else {
            return false;
        };
        let (k, v) = (k.clone(), v.clone());
        if m.listpackex {
            m.put(&k, v, ttl);
        } else {
            match ttl {
                Some(t) => {
                    m.ttls.insert(k, t);
                }
                None => {
                    m.ttls.remove(field);
                }
            }
        }
        true
    }

    /// Sets `field` to `value`; returns true if the field is new. An existing field loses
    /// its TTL (HSET). Switches to the table encoding when the hash outgrows the listpack
    /// limits (more than `max_entries` fields, or a field or value longer than
    /// `max_value`), checked after the insert, as Redis' `hashTypeSet` does.
    pub fn set(
        &mut self,
        field: &Bytes,
        value: &Bytes,
        max_entries: usize,
        max_value: usize,
    ) -> bool {
        self.set_with(field, value, max_entries, max_value, false)
    }

    /// [`Self::set`], keeping an existing field's TTL if `keep_ttl` (HINCRBY, HSETEX).
    pub fn set_with(
        &mut self,
        field: &Bytes,
        value: &Bytes,
        max_entries: usize,
        max_value: usize,
        keep_ttl: bool,
    ) -> bool {
        match self {
            HashValue::Table(m) => {
                if m.listpackex && (field.len() > max_value || value.len() > max_value) {
                    m.listpackex = false;
                }
                let old = m.ttls.get(field.as_ref()).copied();
                let new = if m.listpackex {
                    if let (Some(v), true) =
                        (m.map.get_mut(field.as_ref()), keep_ttl || old.is_none())
                    {
                        *v = value.clone();
                        false
                    } else {
                        m.put(field, value.clone(), None)
                    }
                } else {
                    if !keep_ttl {
                        m.ttls.remove(field.as_ref());
                    }
                    m.map.insert(field.clone(), value.clone()).is_none()
                };
                if m.listpackex && m.map.len() > max_entries {
                    m.listpackex = false;
                }
                new
            }
            HashValue::Pack(p) => {
                if field.len() > max_value || value.len() > max_value {
                    self.convert();
                    return self.set_with(field, value, max_entries, max_value, keep_ttl);
                }
                let (new, len) = p.insert_counted(field, value);
                if len > max_entries {
                    self.convert();
                }
                new
            }
        }
    }

    /// Moves a packed hash to the table encoding, keeping the order of its fields; a
    /// listpackex hash becomes a "hashtable".
    pub fn convert(&mut self) {
        match self {
            HashValue::Pack(p) => {
                let m: IndexMap<Bytes, Bytes, crate::storage::key::KeyHasher> = p
                    .iter()
                    .map(|(k, v)| (Bytes::copy_from_slice(k), Bytes::copy_from_slice(v)))
                    .collect();
                *self = HashValue::Table(Box::new(HashTable::from_map(m)));
            }
            HashValue::Table(t) => t.listpackex = false,
        }
    }

    /// Removes `field`, keeping the order of the rest while the hash is packed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Pack(p) => p.remove(field),
            HashValue::Table(m) => {
                m.ttls.remove(field);
                if m.listpackex {
                    m.map.shift_remove(field).is_some()
                } else {
                    m.map.swap_remove(field).is_some()
                }
            }
        }
    }

    pub fn iter(&self) -> HashIter<'_> {
        match self {
            HashValue::Pack(p) => HashIter::Pack(p.iter()),
            HashValue::Table(m) => HashIter::Table(m.map.iter()),
        }
    }

    /// The pairs with their TTLs (`NO_TTL` for none), in the encoding's order.
    pub fn iter_ttl(&self) -> impl Iterator<Item = (&[u8], &[u8], i64)> + '_ {
        self.iter()
            .map(move |(k, v)| (k, v, self.ttl(k).unwrap_or(NO_TTL)))
    }

    /// The `i`-th pair in the encoding's order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Pack(p) => p.get_index(i),
            HashValue::Table(m) => m.map.get_index(i).map(|(k, v)| (k.as_ref(), v.as_ref())),
        }
    }

    /// A hash loaded with field TTLs (`NO_TTL` for none), in the given order: a
    /// "listpackex" if `listpackex`, where `sorted` places each field as Redis' listpackex
    /// insertion does (otherwise the order is the payload's own), else a "hashtable".
    /// `None` for a duplicate field (a corrupt payload).
    pub fn with_ttls(
        items: Vec<(Bytes, Bytes, i64)>,
        listpackex: bool,
        sorted: bool,
    ) -> Option<HashValue> {
        let mut t = HashTable {
            listpackex,
            ..Default::default()
        };
        t.meta_min = items
            .iter()
            .map(|x| x.2)
            .filter(|&x| x != NO_TTL)
            .min()
            .unwrap_or(0);
        for (f, v, ttl) in items {
            if t.map.contains_key(f.as_ref()) {
                return None;
            }
            let ttl = (ttl != NO_TTL).then_some(ttl);
            if listpackex && sorted {
                t.put(&f, v, ttl);
            } else {
                if let Some(x) = ttl {
                    t.ttls.insert(f.clone(), x);
                }
                t.map.insert(f, v);
            }
        }
        Some(HashValue::Table(Box::new(t)))
    }

    /// Drops spare capacity (COPY builds its copy afresh, as Redis does).
    pub fn shrink_to_fit(&mut self) {
        match self {
            HashValue::Pack(p) => p.shrink_to_fit(),
            HashValue::Table(m) => {
                m.map.shrink_to_fit();
                m.ttls.shrink_to_fit();
            }
        }
    }
}

/// A key's value: 32 bytes, a tag and 24 bytes of payload, every type side by side.
///
/// Each type's payload is at most 24 bytes: a box, or a small encoding whose packed bytes
/// sit in place up to 22 bytes (inline.rs), so a short string or a small hash, set, sorted
/// set or list takes no allocation beyond its keyspace pair (docs/architecture.md, "Bytes
/// per key").
#[derive(Debug, Clone)]
pub enum Value {
    Str(StrVal),
    /// A stream (streams.rs: XADD/XRANGE subset).
    Stream(Box<crate::storage::stream::StreamValue>),
    Hash(HashValue),
    /// A list: one packed node inline, or a quicklist of them (qlist.rs).
    List(crate::storage::qlist::ListValue),
    /// A sorted set, its small encoding inline (zset.rs).
    ZSet(ZSet),
    Set(SetValue),
    /// A native lock, semaphore or read-write lock (locks.rs).
    Lock(Box<LockValue>),
    /// A vector set (Redis 8.0, vsets.rs).
    VSet(Box<crate::storage::vset::VectorSet>),
}

impl Value {
    /// Where the value's own bytes start, for a prefetch (db.rs' `Db::prefetch`): a
    /// string's bytes, a small hash's buffer, or the boxed structure of the other types.
    pub fn heap_addr(&self) -> *const u8 {
        match self {
            Value::Str(b) => b.as_ptr(),
            Value::Hash(HashValue::Pack(p)) => p.as_ptr(),
            Value::Hash(HashValue::Table(t)) => &**t as *const _ as *const u8,
            Value::Stream(b) => &**b as *const _ as *const u8,
            Value::List(l) => l.as_ptr(),
            Value::ZSet(z) => z.as_ptr(),
            Value::Set(s) => s.as_ptr(),
            Value::Lock(b) => &**b as *const _ as *const u8,
            Value::VSet(b) => &**b as *const _ as *const u8,
        }
    }

    /// The name TYPE prints.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Stream(_) => "stream",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::ZSet(_) => "zset",
            Value::Set(_) => "set",
            Value::Lock(l) => l.type_name(),
            Value::VSet(_) => "vectorset",
        }
    }

    /// The name OBJECT ENCODING prints, following Redis' rules for the small encodings.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Stream(_) => "stream",
            Value::Str(s) => {
                if s.len() <= 20 && crate::num::parse_i64(s).is_some() {
                    "int"
                } else if s.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Value::Hash(h) => h.encoding(),
            Value::List(l) => {
                if l.is_pack() {
                    "listpack"
                } else {
                    "quicklist"
                }
            }
            Value::Set(s) => s.encoding_name(),
            Value::Lock(_) => "lock",
            // Redis reports a module type's object as "raw".
            Value::VSet(_) => "raw",
            Value::ZSet(z) => {
                if z.is_big() {
                    "skiplist"
                } else {
                    "listpack"
                }
            }
        }
    }
}

/// One key's value and metadata: 48 bytes (docs/architecture.md, "Bytes per key").
///
/// The expiry and the "raw" flag share one word (`expire`): bit 63 is the flag, the low
/// 63 bits the deadline in Unix ms, 0 for none. Every deadline Redis can hold, up to
/// PEXPIREAT 9223372036854775807 (i64::MAX), fits in 63 bits; a deadline at or before the
/// epoch is kept as 1 ms, as much in the past as the original for a Unix-ms clock.
/// An `Option<i64>` and a `bool` beside it took 24 bytes of the 72 an entry was.
#[derive(Debug, Clone)]
pub struct Entry {
    pub value: Value,
    expire: u64,
    /// Last access in Unix ms, for OBJECT IDLETIME (or, under an LFU policy, the counter
    /// encoded as in lfu.rs).
    pub lru_ms: i64,
}

const RAW_BIT: u64 = 1 << 63;

impl Entry {
    pub fn new(value: Value, expire_at: Option<i64>, lru_ms: i64) -> Entry {
        let mut e = Entry {
            value,
            expire: 0,
            lru_ms,
        };
        e.set_expire_at(expire_at);
        e
    }

    /// Absolute expiry in Unix ms, if any.
    #[inline]
    pub fn expire_at(&self) -> Option<i64> {
        match self.expire & !RAW_BIT {
            0 => None,
            t => Some(t as i64),
        }
    }

    /// Sets or clears the expiry (see the type's comment for deadlines <= 0).
    #[inline]
    pub fn set_expire_at(&mut self, at: Option<i64>) {
        let t = at.map_or(0, |t| t.max(1) as u64);
        self.expire = (self.expire & RAW_BIT) | t;
    }

    /// A string modified in place (APPEND, SETRANGE, SETBIT): OBJECT ENCODING says "raw".
    #[inline]
    pub fn raw(&self) -> bool {
        self.expire & RAW_BIT != 0
    }

    #[inline]
    pub fn set_raw(&mut self, raw: bool) {
        self.expire = (self.expire & !RAW_BIT) | if raw { RAW_BIT } else { 0 };
    }

    /// The name OBJECT ENCODING prints for this entry.
    pub fn encoding(&self) -> &'static str {
        match self.value {
            Value::Str(_) if self.raw() => "raw",
            _ => self.value.encoding(),
        }
    }
}

#[cfg(test)]
mod entry_tests {
    use super::*;

    #[test]
    fn expiry_and_raw_flag_share_a_word() {
        assert_eq!(std::mem::size_of::<Value>(), 32);
        assert_eq!(std::mem::size_of::<Entry>(), 48);
        assert_eq!(std::mem::size_of::<HashValue>(), 24);
        assert_eq!(std::mem::size_of::<SetValue>(), 24);
        assert_eq!(std::mem::size_of::<ZSet>(), 24);
        assert_eq!(std::mem::size_of::<crate::storage::qlist::ListValue>(), 24);
        let mut e = Entry::new(Value::Str(StrVal::from_slice(b"x")), None, 7);
        assert_eq!((e.expire_at(), e.raw()), (None, false));
        for at in [
            Some(1),
            Some(3_600_000),
            Some(i64::MAX),
            None,
            Some(i64::MAX - 1),
        ] {
            for raw in [true, false] {
                e.set_raw(raw);
                e.set_expire_at(at);
                assert_eq!((e.expire_at(), e.raw()), (at, raw));
                e.set_raw(!raw);
                assert_eq!((e.expire_at(), e.raw()), (at, !raw));
            }
        }
        // A deadline at or before the epoch is kept as 1 ms: still in the past.
        for at in [0, -1, i64::MIN] {
            e.set_expire_at(Some(at));
            assert_eq!(e.expire_at(), Some(1));
        }
        assert_eq!(e.lru_ms, 7);
    }
}
