//! Value types stored under a key.

use bytes::Bytes;

use crate::storage::inline::PackBuf;
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
/// Redis 7.4 / Valkey 9). Reads go through its methods; every change goes through
/// [`HashValue`], which keeps the TTLs and, for a listpackex hash, Redis' order (fields
/// with a TTL first, earliest deadline first, then those without, in the order they were
/// added) in step.
///
/// The pairs sit in a vector, in insertion order (a removal moves the last pair into the
/// gap, as `IndexMap::swap_remove` did, or, in a listpackex hash, shifts the rest), each
/// field up to 22 bytes in place and longer ones in an exactly-sized allocation
/// ([`PackBuf`]), each value a [`StrVal`]: 48 bytes a pair. A hash index of their positions
/// (4 bytes and a control byte a bucket) finds a field, hashed with one per-process key
/// ([`member_hasher`](crate::storage::key::member_hasher)). An `IndexMap<Bytes, Bytes>` took 72 bytes a pair in its entries and
/// index, plus a malloc chunk and a shared header for every field and value: a hash of
/// 1000 short fields took 243 KB where Redis takes 72 KB (issue 40).
#[derive(Clone, Default)]
pub struct HashTable {
    index: hashbrown::HashTable<u32>,
    items: Vec<(PackBuf, StrVal)>,
    /// The deadline (Unix ms) of each field that has one.
    ttls: hashbrown::HashMap<Box<[u8]>, i64, crate::storage::key::KeyHasher>,
    /// Redis' "listpackex" encoding: a small hash that got field TTLs. It becomes a
    /// "hashtable" past the listpack limits, and never goes back.
    pub listpackex: bool,
    /// The earliest field TTL as Redis last registered the hash for active expiry (0:
    /// not registered). Redis updates it lazily (not on HPERSIST, nor for a change under
    /// 4 s), and a listpackex DUMP payload carries it, so it is kept as Redis keeps it.
    pub meta_min: i64,
}

#[inline]
fn field_hash(f: &[u8]) -> u64 {
    crate::storage::key::member_hasher().hash_one(f)
}

impl std::fmt::Debug for HashTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashTable")
            .field(
                "items",
                &self
                    .iter()
                    .map(|(k, v)| (String::from_utf8_lossy(k), String::from_utf8_lossy(v)))
                    .collect::<Vec<_>>(),
            )
            .field("ttls", &self.ttls.len())
            .field("listpackex", &self.listpackex)
            .field("meta_min", &self.meta_min)
            .finish()
    }
}

/// The pairs of a hash table, in order.
pub type TableIter<'a> = std::iter::Map<
    std::slice::Iter<'a, (PackBuf, StrVal)>,
    fn(&'a (PackBuf, StrVal)) -> (&'a [u8], &'a [u8]),
>;

impl HashTable {
    fn with_capacity(n: usize) -> HashTable {
        HashTable {
            index: hashbrown::HashTable::with_capacity(n),
            items: Vec::with_capacity(n),
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    #[inline]
    fn position(&self, f: &[u8]) -> Option<usize> {
        let items = &self.items;
        self.index
            .find(field_hash(f), |&i| &*items[i as usize].0 == f)
            .map(|&i| i as usize)
    }

    /// The value of `f`.
    pub fn get(&self, f: &[u8]) -> Option<&[u8]> {
        self.position(f).map(|i| &*self.items[i].1)
    }

    pub fn contains(&self, f: &[u8]) -> bool {
        self.position(f).is_some()
    }

    /// The `i`-th pair.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.items.get(i).map(|(k, v)| (&**k, &**v))
    }

    /// The pairs in order.
    pub fn iter(&self) -> TableIter<'_> {
        fn pair(p: &(PackBuf, StrVal)) -> (&[u8], &[u8]) {
            (&p.0, &p.1)
        }
        self.items.iter().map(pair)
    }

    /// The fields in order.
    pub fn fields(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.items.iter().map(|(k, _)| &**k)
    }

    /// The TTL of `f`.
    fn ttl(&self, f: &[u8]) -> Option<i64> {
        if self.ttls.is_empty() {
            None
        } else {
            self.ttls.get(f).copied()
        }
    }

    fn set_ttl_entry(&mut self, f: &[u8], ttl: Option<i64>) {
        match ttl {
            Some(t) => match self.ttls.get_mut(f) {
                Some(x) => *x = t,
                None => {
                    self.ttls.insert(f.into(), t);
                }
            },
            None => {
                if !self.ttls.is_empty() {
                    self.ttls.remove(f);
                }
            }
        }
    }

    /// Sets `f` to `v`, in place if it is there, else at the end; true if it is new.
    fn insert(&mut self, f: &[u8], v: StrVal) -> bool {
        let h = field_hash(f);
        let items = &self.items;
        let found = self.index.find(h, |&i| &*items[i as usize].0 == f).copied();
        match found {
            Some(i) => {
                self.items[i as usize].1 = v;
                false
            }
            None => {
                let n = self.items.len();
                let at = u32::try_from(n).expect("more than 2^32 hash fields");
                if n == self.items.capacity() {
                    // A quarter more, not twice: at 48 bytes a pair, a doubled vector
                    // would hold up to 48 spare bytes a field, where Redis' doubling
                    // costs it 8 (a bucket pointer).
                    self.items.reserve_exact((n / 4).max(4));
                }
                self.items.push((PackBuf::from_slice(f), v));
                let items = &self.items;
                self.index
                    .insert_unique(h, at, |&i| field_hash(&items[i as usize].0));
                true
            }
        }
    }

    /// Drops the index entry of the pair at `i`.
    fn unindex(&mut self, i: usize) {
        let h = field_hash(&self.items[i].0);
        if let Ok(e) = self.index.find_entry(h, |&j| j as usize == i) {
            e.remove();
        }
    }

    /// Removes the pair at `i`, the last pair taking its place.
    fn swap_remove_index(&mut self, i: usize) -> (PackBuf, StrVal) {
        self.unindex(i);
        let last = self.items.len() - 1;
        if i != last {
            let h = field_hash(&self.items[last].0);
            if let Some(j) = self.index.find_mut(h, |&j| j as usize == last) {
                *j = i as u32;
            }
        }
        self.items.swap_remove(i)
    }

    /// Removes the pair at `i`, the later ones moving up one place.
    fn shift_remove_index(&mut self, i: usize) -> (PackBuf, StrVal) {
        self.unindex(i);
        if i + 1 != self.items.len() {
            for j in self.index.iter_mut() {
                if *j as usize > i {
                    *j -= 1;
                }
            }
        }
        self.items.remove(i)
    }

    /// Puts a field that is not there at position `at`, the later ones moving down one.
    fn shift_insert(&mut self, at: usize, f: PackBuf, v: StrVal) {
        if at != self.items.len() {
            for j in self.index.iter_mut() {
                if *j as usize >= at {
                    *j += 1;
                }
            }
        }
        let h = field_hash(&f);
        self.items.insert(at, (f, v));
        let items = &self.items;
        self.index
            .insert_unique(h, at as u32, |&i| field_hash(&items[i as usize].0));
    }

    /// Puts a field that is not there (its TTL already recorded) where Redis' listpackex
    /// would: with no TTL at the end, with one before the first field whose TTL is later
    /// or equal, or that has none.
    fn place(&mut self, f: PackBuf, v: StrVal, ttl: Option<i64>) {
        let at = match ttl {
            None => self.items.len(),
            Some(t) => self
                .items
                .iter()
                .position(|(k, _)| self.ttls.get(&**k).is_none_or(|&u| u >= t))
                .unwrap_or(self.items.len()),
        };
        self.shift_insert(at, f, v);
    }

    /// Inserts or replaces a field; `ttl` is what it gets (`None`: none). A listpackex
    /// hash puts it where Redis' listpackex would ([`Self::place`]).
    fn put(&mut self, field: &[u8], value: StrVal, ttl: Option<i64>) -> bool {
        self.set_ttl_entry(field, ttl);
        if !self.listpackex {
            return self.insert(field, value);
        }
        let (f, new) = match self.position(field) {
            Some(i) => (self.shift_remove_index(i).0, false),
            None => (PackBuf::from_slice(field), true),
        };
        self.place(f, value, ttl);
        new
    }

    /// The allocator's bytes for the table (MEMORY USAGE).
    fn heap_bytes(&self) -> usize {
        use crate::storage::inline::malloc_size;
        malloc_size(std::mem::size_of::<HashTable>())
            + malloc_size(self.index.allocation_size())
            + malloc_size(self.items.capacity() * std::mem::size_of::<(PackBuf, StrVal)>())
            + self
                .items
                .iter()
                .map(|(k, v)| k.heap_bytes() + v.heap_bytes())
                .sum::<usize>()
            + malloc_size(self.ttls.allocation_size())
            + self
                .ttls
                .keys()
                .map(|k| malloc_size(k.len()))
                .sum::<usize>()
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
    Table(TableIter<'a>),
}

impl<'a> Iterator for HashIter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            HashIter::Pack(i) => i.next(),
            HashIter::Table(i) => i.next(),
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
            HashValue::Table(m) => m.get(field),
        }
    }

    /// The value of `field` as a reply string (a copy, or a long value's own buffer).
    pub fn get_bytes(&self, field: &[u8]) -> Option<Bytes> {
        match self {
            HashValue::Pack(p) => p.get(field).map(Bytes::copy_from_slice),
            HashValue::Table(m) => m.position(field).map(|i| m.items[i].1.to_bytes()),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        match self {
            HashValue::Pack(p) => p.contains(field),
            HashValue::Table(m) => m.contains(field),
        }
    }

    /// The TTL (Unix ms) of `field`, if it has one.
    pub fn ttl(&self, field: &[u8]) -> Option<i64> {
        match self {
            HashValue::Pack(_) => None,
            HashValue::Table(m) => m.ttl(field),
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
                m.fields()
                    .filter(|k| m.ttls.get(*k).is_some_and(|&t| t <= now))
                    .map(Bytes::copy_from_slice)
                    .collect()
            }
        }
    }

    /// The number of fields not expired at `now`.
    pub fn live_len(&self, now: i64) -> usize {
        match self {
            HashValue::Pack(p) => p.len(),
            HashValue::Table(m) => m.len() - m.ttls.values().filter(|&&t| t < now).count(),
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
        let Some(i) = m.position(field) else {
            return false;
        };
        m.set_ttl_entry(field, ttl);
        if m.listpackex {
            let (f, v) = m.shift_remove_index(i);
            m.place(f, v, ttl);
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
                let new = if m.listpackex {
                    let keep = keep_ttl || m.ttl(field).is_none();
                    match m.position(field) {
                        Some(i) if keep => {
                            m.items[i].1 = StrVal::new(value);
                            false
                        }
                        _ => m.put(field, StrVal::new(value), None),
                    }
                } else {
                    if !keep_ttl && !m.ttls.is_empty() {
                        m.ttls.remove(field.as_ref());
                    }
                    m.insert(field, StrVal::new(value))
                };
                if m.listpackex && m.len() > max_entries {
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
                let mut t = HashTable::with_capacity(p.len());
                for (k, v) in p.iter() {
                    t.insert(k, StrVal::from_slice(v));
                }
                *self = HashValue::Table(Box::new(t));
            }
            HashValue::Table(t) => t.listpackex = false,
        }
    }

    /// Removes `field`, keeping the order of the rest while the hash is packed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Pack(p) => p.remove(field),
            HashValue::Table(m) => {
                let Some(i) = m.position(field) else {
                    return false;
                };
                m.set_ttl_entry(field, None);
                if m.listpackex {
                    m.shift_remove_index(i);
                } else {
                    m.swap_remove_index(i);
                }
                true
            }
        }
    }

    pub fn iter(&self) -> HashIter<'_> {
        match self {
            HashValue::Pack(p) => HashIter::Pack(p.iter()),
            HashValue::Table(m) => HashIter::Table(m.iter()),
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
            HashValue::Table(m) => m.get_index(i),
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
        let mut t = HashTable::with_capacity(items.len());
        t.listpackex = listpackex;
        t.meta_min = items
            .iter()
            .map(|x| x.2)
            .filter(|&x| x != NO_TTL)
            .min()
            .unwrap_or(0);
        for (f, v, ttl) in items {
            if t.contains(&f) {
                return None;
            }
            let ttl = (ttl != NO_TTL).then_some(ttl);
            if listpackex && sorted {
                t.put(&f, StrVal::from(v), ttl);
            } else {
                if let Some(x) = ttl {
                    t.ttls.insert(f.as_ref().into(), x);
                }
                t.insert(&f, StrVal::from(v));
            }
        }
        Some(HashValue::Table(Box::new(t)))
    }

    /// Drops spare capacity (COPY builds its copy afresh, as Redis does).
    pub fn shrink_to_fit(&mut self) {
        match self {
            HashValue::Pack(p) => p.shrink_to_fit(),
            HashValue::Table(m) => {
                m.items.shrink_to_fit();
                let items = &m.items;
                m.index.shrink_to_fit(|&i| field_hash(&items[i as usize].0));
                m.ttls.shrink_to_fit();
            }
        }
    }

    /// The bytes the value takes from the allocator (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        match self {
            HashValue::Pack(p) => p.heap_bytes(),
            HashValue::Table(t) => t.heap_bytes(),
        }
    }
}

#[cfg(test)]
mod hash_table_tests {
    use super::*;
    use proptest::prelude::*;

    /// What a table hash must do, kept the plain way: pairs with their TTLs in order.
    #[derive(Default)]
    struct Model {
        pairs: Vec<(Vec<u8>, Vec<u8>, Option<i64>)>,
        listpackex: bool,
    }

    impl Model {
        fn pos(&self, f: &[u8]) -> Option<usize> {
            self.pairs.iter().position(|p| p.0 == f)
        }
        fn place(&mut self, p: (Vec<u8>, Vec<u8>, Option<i64>)) {
            let at = match p.2 {
                None => self.pairs.len(),
                Some(t) => self
                    .pairs
                    .iter()
                    .position(|q| q.2.is_none_or(|u| u >= t))
                    .unwrap_or(self.pairs.len()),
            };
            self.pairs.insert(at, p);
        }
        fn set(&mut self, f: &[u8], v: &[u8], keep_ttl: bool) -> bool {
            match self.pos(f) {
                Some(i) if !self.listpackex => {
                    self.pairs[i].1 = v.to_vec();
                    if !keep_ttl {
                        self.pairs[i].2 = None;
                    }
                    false
                }
                Some(i) if keep_ttl || self.pairs[i].2.is_none() => {
                    self.pairs[i].1 = v.to_vec();
                    false
                }
                Some(i) => {
                    self.pairs.remove(i);
                    self.pairs.push((f.to_vec(), v.to_vec(), None));
                    false
                }
                None => {
                    self.pairs.push((f.to_vec(), v.to_vec(), None));
                    true
                }
            }
        }
        fn remove(&mut self, f: &[u8]) -> bool {
            match self.pos(f) {
                Some(i) if self.listpackex => {
                    self.pairs.remove(i);
                    true
                }
                Some(i) => {
                    self.pairs.swap_remove(i);
                    true
                }
                None => false,
            }
        }
        fn set_ttl(&mut self, f: &[u8], ttl: Option<i64>) -> bool {
            let Some(i) = self.pos(f) else {
                return false;
            };
            if self.listpackex {
                let mut p = self.pairs.remove(i);
                p.2 = ttl;
                self.place(p);
            } else {
                self.pairs[i].2 = ttl;
            }
            true
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u16, u8, bool),
        Remove(u16),
        Ttl(u16, Option<u8>),
        Shrink,
    }

    /// Fields and values of every storage class: in place (up to 22 bytes), an exact
    /// allocation, and a value long enough to keep its `Bytes`.
    fn field(k: u16) -> Vec<u8> {
        match k % 5 {
            0 => format!("f{k}").into_bytes(),
            1 => format!("a-field-longer-than-22-bytes-{k}").into_bytes(),
            _ => format!("field-{k}").into_bytes(),
        }
    }

    fn value(v: u8) -> Vec<u8> {
        match v % 4 {
            0 => vec![b'x'; 600 + v as usize],
            1 => format!("a-value-longer-than-22-bytes-{v}").into_bytes(),
            _ => format!("v{v}").into_bytes(),
        }
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (0..60u16, any::<u8>(), any::<bool>()).prop_map(|(f, v, k)| Op::Set(f, v, k)),
            2 => (0..60u16).prop_map(Op::Remove),
            2 => (0..60u16, proptest::option::of(0..20u8)).prop_map(|(f, t)| Op::Ttl(f, t)),
            1 => Just(Op::Shrink),
        ]
    }

    fn check(h: &HashValue, m: &Model) {
        assert_eq!(h.len(), m.pairs.len());
        assert_eq!(h.is_listpackex(), m.listpackex);
        let got: Vec<_> = h
            .iter_ttl()
            .map(|(k, v, t)| (k.to_vec(), v.to_vec(), t))
            .collect();
        let want: Vec<_> = m
            .pairs
            .iter()
            .map(|(k, v, t)| (k.clone(), v.clone(), t.unwrap_or(NO_TTL)))
            .collect();
        assert_eq!(got, want);
        for (i, (k, v, t)) in m.pairs.iter().enumerate() {
            assert_eq!(h.get(k), Some(&v[..]));
            assert_eq!(h.get_bytes(k).as_deref(), Some(&v[..]));
            assert_eq!(h.ttl(k), *t);
            assert_eq!(h.get_index(i), Some((&k[..], &v[..])));
        }
        assert!(h.get(b"absent").is_none() && !h.contains(b"absent"));
        let due: Vec<_> = m
            .pairs
            .iter()
            .filter(|p| p.2.is_some_and(|t| t <= 10))
            .map(|p| Bytes::from(p.0.clone()))
            .collect();
        assert_eq!(h.due_fields(10), due);
        assert_eq!(h.min_ttl(), m.pairs.iter().filter_map(|p| p.2).min());
    }

    proptest! {
        /// A table hash keeps IndexMap's order (insertion, a removal moving the last pair
        /// into the gap) and, as a listpackex, Redis' (TTLs first by deadline, shifts).
        #[test]
        fn table_agrees_with_a_model(listpackex in any::<bool>(), ops in proptest::collection::vec(op(), 1..300)) {
            let mut h = HashValue::default();
            h.set(&Bytes::from_static(b"seed"), &Bytes::from_static(b"1"), 1 << 20, 1 << 20);
            if listpackex {
                h.prepare_ttls();
            } else {
                h.convert();
            }
            let mut m = Model { listpackex, ..Default::default() };
            m.set(b"seed", b"1", false);
            for op in ops {
                match op {
                    Op::Set(f, v, keep) => {
                        let (f, v) = (field(f), value(v));
                        let new = h.set_with(&Bytes::from(f.clone()), &Bytes::from(v.clone()), 1 << 20, 1 << 20, keep);
                        prop_assert_eq!(new, m.set(&f, &v, keep));
                    }
                    Op::Remove(f) => {
                        let f = field(f);
                        prop_assert_eq!(h.remove(&f), m.remove(&f));
                    }
                    Op::Ttl(f, t) => {
                        let f = field(f);
                        let t = t.map(|t| t as i64 + 1);
                        prop_assert_eq!(h.set_ttl(&f, t), m.set_ttl(&f, t));
                    }
                    Op::Shrink => h.shrink_to_fit(),
                }
                check(&h, &m);
            }
            // A load in the same order gives the same hash.
            let items: Vec<_> = h
                .iter_ttl()
                .map(|(k, v, t)| (Bytes::copy_from_slice(k), Bytes::copy_from_slice(v), t))
                .collect();
            let loaded = HashValue::with_ttls(items, listpackex, false).unwrap();
            check(&loaded, &m);
        }
    }

    /// MEMORY USAGE counts the allocations: the box, the index, the pairs' vector and the
    /// fields and values that do not fit in place.
    #[test]
    fn heap_bytes_counts_the_allocations() {
        use crate::storage::inline::malloc_size;
        let mut h = HashValue::default();
        for j in 0..1000 {
            let (f, v) = (format!("field-{j}"), format!("value-{j}"));
            h.set(&Bytes::from(f), &Bytes::from(v), 128, 64);
        }
        let HashValue::Table(t) = &h else { panic!() };
        let pairs = malloc_size(t.items.capacity() * 48);
        assert_eq!(std::mem::size_of::<(PackBuf, StrVal)>(), 48);
        assert!(t.index.allocation_size() >= 1000 * 5);
        assert_eq!(
            h.heap_bytes(),
            malloc_size(std::mem::size_of::<HashTable>())
                + malloc_size(t.index.allocation_size())
                + pairs
        );
        h.set(
            &Bytes::from("a-field-longer-than-22-bytes"),
            &Bytes::from("1"),
            128,
            64,
        );
        h.set_ttl(b"field-1", Some(5));
        let HashValue::Table(t) = &h else { panic!() };
        assert_eq!(
            h.heap_bytes(),
            malloc_size(std::mem::size_of::<HashTable>())
                + malloc_size(t.index.allocation_size())
                + malloc_size(t.items.capacity() * 48)
                + malloc_size(28)
                + malloc_size(t.ttls.allocation_size())
                + malloc_size(7)
        );
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
