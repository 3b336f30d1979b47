//! Sets, in Redis' three encodings (OBJECT ENCODING): "intset", sorted packed integers;
//! "listpack" (Redis 7.2 on, and every Valkey), small sets of strings in insertion order;
//! "hashtable". [`SetValue`] chooses between them as Redis' t_set.c does ([`SetLimits`]:
//! `set-max-intset-entries`, `set-max-listpack-entries`, `set-max-listpack-value`), so
//! replies come in Redis' order, OBJECT ENCODING says what Redis says, and DUMP writes the
//! RDB type Redis writes.
//!
//! The two small encodings share one buffer, [`SmallSet`] (inline up to 22 bytes,
//! inline.rs), told apart by its first byte, so that `SetValue` stays 24 bytes and `Value`
//! 32 (value.rs): two variants of a `PackBuf` each would leave no spare tag value.

use bytes::Bytes;

use crate::storage::inline::PackBuf;
use crate::storage::listpack::{find_str, push_str, stored_size, str_range, strs, StrIter};

/// The limits that decide a set's encoding, from the engine's config and personality.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetLimits {
    /// `set-max-intset-entries` (at most 2^30, as Redis' `intsetMaxEntries`).
    pub max_intset: usize,
    /// `set-max-listpack-entries`; 0 where sets have no listpack (Redis 7.0).
    pub max_listpack_entries: usize,
    /// `set-max-listpack-value`.
    pub max_listpack_value: usize,
    /// Sets have the listpack encoding (Redis 7.2 and later, Valkey): SADD also sizes the
    /// set for its arguments up front (`setTypeCreate`, `setTypeMaybeConvert`).
    pub listpack: bool,
}

impl SetLimits {
    /// Redis 7.0's defaults: intsets up to 512, no listpack.
    pub const REDIS_7_0: SetLimits = SetLimits {
        max_intset: 512,
        max_listpack_entries: 0,
        max_listpack_value: 0,
        listpack: false,
    };

    /// Redis 7.2's defaults.
    pub const REDIS_7_2: SetLimits = SetLimits {
        max_intset: 512,
        max_listpack_entries: 128,
        max_listpack_value: 64,
        listpack: true,
    };

    pub fn of(cfg: &crate::storage::config::EngineConfig) -> SetLimits {
        let listpack = cfg.personality.has(crate::personality::Since::redis(702));
        SetLimits {
            max_intset: cfg.set_max_intset_entries.min(1 << 30),
            max_listpack_entries: if listpack {
                cfg.set_max_listpack_entries
            } else {
                0
            },
            max_listpack_value: cfg.set_max_listpack_value,
            listpack,
        }
    }
}

/// A set's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetEncoding {
    Intset,
    Listpack,
    Hashtable,
}

/// A set, in one of Redis' encodings (see the module doc). A "hashtable" never goes back
/// to a small encoding, except where Redis rebuilds the set (SPOP of most of it, the
/// STORE commands' results). 24 bytes, inline in `Value`.
#[derive(Debug, Clone)]
pub enum SetValue {
    /// "intset" or "listpack".
    Small(SmallSet),
    Table(Box<StrSet>),
}

impl Default for SetValue {
    /// An empty intset (Redis' `createIntsetObject`).
    fn default() -> Self {
        SetValue::Small(SmallSet::default())
    }
}

/// A set's "hashtable" encoding: the members in a vector, each up to 22 bytes in place and
/// longer ones in an exactly-sized allocation ([`PackBuf`]), in insertion order (a removal
/// moving the last member into the gap, as `IndexSet::swap_remove` does, so SRANDMEMBER and
/// SPOP pick by position), and a hash index of their positions (4 bytes and a control byte
/// a bucket), hashed with one per-process key ([`member_hasher`](crate::storage::key::member_hasher)). An `IndexSet<Bytes>` took 40
/// bytes an entry, 9 a bucket and a shared header with each member; a `Box<[u8]>` per
/// member took 16 bytes and a 32-byte malloc chunk for each short one (issue 40).
#[derive(Clone, Default)]
pub struct StrSet {
    index: hashbrown::HashTable<u32>,
    items: Vec<PackBuf>,
}

impl std::fmt::Debug for StrSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(self.items.iter().map(|m| String::from_utf8_lossy(m)))
            .finish()
    }
}

impl StrSet {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    fn position(&self, m: &[u8]) -> Option<usize> {
        self.position_hashed(m, crate::storage::key::member_hasher().hash_one(m))
    }

    fn position_hashed(&self, m: &[u8], h: u64) -> Option<usize> {
        let items = &self.items;
        self.index
            .find(h, |&i| &*items[i as usize] == m)
            .map(|&i| i as usize)
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        self.position(m).is_some()
    }

    /// Adds `m`; false if it was there. `m` is hashed once, for the lookup and the index.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        let h = crate::storage::key::member_hasher().hash_one(m);
        if self.position_hashed(m, h).is_some() {
            return false;
        }
        let at = u32::try_from(self.items.len()).expect("more than 2^32 set members");
        self.items.push(PackBuf::from_slice(m));
        let items = &self.items;
        self.index.insert_unique(h, at, |&i| {
            crate::storage::key::member_hasher().hash_one(&*items[i as usize])
        });
        true
    }

    /// Removes the member at `i`, the last member taking its place.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<PackBuf> {
        if i >= self.items.len() {
            return None;
        }
        let h = crate::storage::key::member_hasher().hash_one(&*self.items[i]);
        if let Ok(e) = self.index.find_entry(h, |&j| j as usize == i) {
            e.remove();
        }
        let last = self.items.len() - 1;
        if i != last {
            // The last member moves to `i`: its index entry follows.
            let h = crate::storage::key::member_hasher().hash_one(&*self.items[last]);
            if let Some(j) = self.index.find_mut(h, |&j| j as usize == last) {
                *j = i as u32;
            }
        }
        Some(self.items.swap_remove(i))
    }

    pub fn swap_remove(&mut self, m: &[u8]) -> bool {
        match self.position(m) {
            Some(i) => self.swap_remove_index(i).is_some(),
            None => false,
        }
    }

    pub fn get_index(&self, i: usize) -> Option<&[u8]> {
        self.items.get(i).map(|m| &**m)
    }

    /// The members in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.items.iter().map(|m| &**m)
    }

    /// The allocator's bytes for the set (MEMORY USAGE).
    fn heap_bytes(&self) -> usize {
        use crate::storage::inline::malloc_size;
        malloc_size(std::mem::size_of::<StrSet>())
            + malloc_size(self.index.allocation_size())
            + malloc_size(self.items.capacity() * std::mem::size_of::<PackBuf>())
            + self.items.iter().map(|m| m.heap_bytes()).sum::<usize>()
    }

    /// Room for `n` members in all.
    fn reserve(&mut self, n: usize) {
        self.items.reserve_exact(n.saturating_sub(self.items.len()));
    }
}

/// A listpack set's first byte: never an intset's (its width, 2, 4 or 8).
const LISTPACK: u8 = 0;

/// A set's small encodings in one exactly-sized buffer (inline up to 22 bytes):
/// - "intset": sorted distinct integers, a width byte (2, 4 or 8, the narrowest that holds
///   every member, as Redis' intset widens) then the integers in little-endian order; the
///   empty intset is an empty buffer;
/// - "listpack": the byte [`LISTPACK`], then the members in insertion order as listpack.rs
///   lays out strings (a length and the bytes, a digit alone). Like Redis' listpack it
///   keeps no index: lookups scan, which for the `set-max-listpack-entries` (128) members
///   it may hold is as fast as hashing.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SmallSet {
    buf: PackBuf,
}

impl std::fmt::Debug for SmallSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_listpack() {
            f.debug_list()
                .entries(self.lp_iter().map(String::from_utf8_lossy))
                .finish()
        } else {
            f.debug_list().entries(self.int_iter()).finish()
        }
    }
}

fn int_width(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

/// Characters of `v` in decimal (Redis' `sdigits10`).
fn digits(v: i64) -> usize {
    itoa::Buffer::new().format(v).len()
}

/// An integer member as its reply string.
fn int_bytes(v: i64) -> Bytes {
    Bytes::copy_from_slice(itoa::Buffer::new().format(v).as_bytes())
}

impl SmallSet {
    /// An empty listpack.
    pub fn listpack() -> SmallSet {
        SmallSet {
            buf: PackBuf::from_slice(&[LISTPACK]),
        }
    }

    pub fn is_listpack(&self) -> bool {
        self.buf.first() == Some(&LISTPACK)
    }

    pub fn len(&self) -> usize {
        if self.is_listpack() {
            self.lp_iter().count()
        } else {
            self.int_len()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.len() <= 1
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        if self.is_listpack() {
            self.lp_find(m).is_ok()
        } else {
            crate::num::parse_i64(m).is_some_and(|v| self.int_contains(v))
        }
    }

    /// The members in the encoding's order (numeric for an intset).
    pub fn members(&self) -> Vec<Bytes> {
        if self.is_listpack() {
            // Counted first: the vector is allocated once (the iterator cannot tell).
            let mut v = Vec::with_capacity(self.lp_iter().count());
            v.extend(self.lp_iter().map(Bytes::copy_from_slice));
            v
        } else {
            self.int_iter().map(int_bytes).collect()
        }
    }

    // ------------------------------------------------------------------------ intset

    fn width(&self) -> usize {
        self.buf.first().map_or(2, |&w| w as usize)
    }

    fn int_len(&self) -> usize {
        self.buf.len().saturating_sub(1) / self.width()
    }

    /// The `i`-th smallest member of an intset.
    pub fn int_get(&self, i: usize) -> i64 {
        let w = self.width();
        let b = &self.buf[1 + i * w..1 + (i + 1) * w];
        match w {
            2 => i16::from_le_bytes([b[0], b[1]]) as i64,
            4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            _ => i64::from_le_bytes(b.try_into().unwrap()),
        }
    }

    fn int_find(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.int_len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.int_get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub fn int_contains(&self, v: i64) -> bool {
        self.int_find(v).is_ok()
    }

    pub fn int_iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.int_len()).map(|i| self.int_get(i))
    }

    /// Rebuilds the buffer from `vals` (sorted) at the width they need.
    fn rebuild(&mut self, vals: impl Iterator<Item = i64> + Clone, n: usize) {
        if n == 0 {
            self.buf = Default::default();
            return;
        }
        let w = vals.clone().map(int_width).max().unwrap_or(2);
        let mut out = Vec::with_capacity(1 + n * w);
        out.push(w as u8);
        for v in vals {
            out.extend_from_slice(&v.to_le_bytes()[..w]);
        }
        self.buf = out.into();
    }

    /// Adds `v` to an intset; false if it was there.
    pub fn int_insert(&mut self, v: i64) -> bool {
        let Err(at) = self.int_find(v) else {
            return false;
        };
        let n = self.int_len();
        let old = std::mem::take(self);
        let vals = (0..=n).map(move |i| match i.cmp(&at) {
            std::cmp::Ordering::Less => old.int_get(i),
            std::cmp::Ordering::Equal => v,
            std::cmp::Ordering::Greater => old.int_get(i - 1),
        });
        self.rebuild(vals, n + 1);
        true
    }

    /// Removes the `i`-th smallest member of an intset, returning it.
    pub fn int_remove_at(&mut self, i: usize) -> i64 {
        let v = self.int_get(i);
        let n = self.int_len();
        let old = std::mem::take(self);
        // The width stays (Redis' intset never narrows).
        let w = old.width();
        let mut out = Vec::with_capacity(old.buf.len() - w);
        if n > 1 {
            out.extend_from_slice(&old.buf[..1 + i * w]);
            out.extend_from_slice(&old.buf[1 + (i + 1) * w..]);
        }
        self.buf = out.into();
        v
    }

    // ---------------------------------------------------------------------- listpack

    fn lp_iter(&self) -> StrIter<'_> {
        strs(&self.buf[1..])
    }

    /// Where `m` is: (index, start, end) in the buffer, or the number of members.
    fn lp_find(&self, m: &[u8]) -> Result<(usize, usize, usize), usize> {
        find_str(&self.buf[1..], m).map(|(i, s, e)| (i, s + 1, e + 1))
    }

    /// Appends `m` (not a member) to a listpack.
    fn lp_push(&mut self, m: &[u8]) {
        let mut v = std::mem::take(&mut self.buf).to_vec();
        v.reserve_exact(stored_size(m));
        push_str(&mut v, m);
        self.buf = v.into();
    }

    /// Removes the listpack entries at these byte ranges (sorted, disjoint).
    fn lp_cut(&mut self, ranges: &[(usize, usize)]) {
        let old = std::mem::take(&mut self.buf);
        let mut v = Vec::with_capacity(old.len() - ranges.iter().map(|r| r.1 - r.0).sum::<usize>());
        let mut at = 0;
        for &(s, e) in ranges {
            v.extend_from_slice(&old[at..s]);
            at = e;
        }
        v.extend_from_slice(&old[at..]);
        self.buf = v.into();
    }

    /// The byte range of the `i`-th listpack member.
    fn lp_range(&self, i: usize) -> Option<(usize, usize)> {
        str_range(&self.buf[1..], i).map(|(s, e)| (s + 1, e + 1))
    }
}

impl SetValue {
    /// An empty set for a first member `first` and about `hint` members (Redis 7.2's
    /// `setTypeCreate`; Redis 7.0: an intset for an integer, else a hashtable).
    pub fn new_for(first: &[u8], hint: usize, lim: &SetLimits) -> SetValue {
        let int = crate::num::parse_i64(first).is_some();
        if !lim.listpack {
            return if int {
                SetValue::default()
            } else {
                SetValue::Table(Box::default())
            };
        }
        if int && hint <= lim.max_intset {
            SetValue::default()
        } else if hint <= lim.max_listpack_entries {
            SetValue::Small(SmallSet::listpack())
        } else {
            let mut t = StrSet::default();
            t.reserve(hint);
            SetValue::Table(Box::new(t))
        }
    }

    /// An empty listpack (Redis' `createSetListpackObject`); with no listpack (Redis 7.0)
    /// it turns into a hashtable at its first member, as Redis 7.0's code made one.
    pub fn new_listpack() -> SetValue {
        SetValue::Small(SmallSet::listpack())
    }

    /// Converts a small set that `hint` more members would outgrow (Redis 7.2's
    /// `setTypeMaybeConvert`, before SADD adds its arguments).
    pub fn maybe_convert(&mut self, hint: usize, lim: &SetLimits) {
        if !lim.listpack {
            return;
        }
        let over = match self.encoding() {
            SetEncoding::Listpack => hint > lim.max_listpack_entries,
            SetEncoding::Intset => hint > lim.max_intset,
            SetEncoding::Hashtable => false,
        };
        if over {
            self.to_table(hint);
        }
    }

    pub fn encoding(&self) -> SetEncoding {
        match self {
            SetValue::Small(s) if s.is_listpack() => SetEncoding::Listpack,
            SetValue::Small(_) => SetEncoding::Intset,
            SetValue::Table(_) => SetEncoding::Hashtable,
        }
    }

    /// The name OBJECT ENCODING prints.
    pub fn encoding_name(&self) -> &'static str {
        match self.encoding() {
            SetEncoding::Intset => "intset",
            SetEncoding::Listpack => "listpack",
            SetEncoding::Hashtable => "hashtable",
        }
    }

    pub fn is_intset(&self) -> bool {
        self.encoding() == SetEncoding::Intset
    }

    pub fn is_listpack(&self) -> bool {
        self.encoding() == SetEncoding::Listpack
    }

    /// The hashtable encoding's members, in their order (None for the small encodings).
    pub fn table(&self) -> Option<&StrSet> {
        match self {
            SetValue::Table(t) => Some(t),
            SetValue::Small(_) => None,
        }
    }

    /// The intset's members (None for the other encodings).
    pub fn ints(&self) -> Option<impl Iterator<Item = i64> + '_> {
        match self {
            SetValue::Small(s) if !s.is_listpack() => Some(s.int_iter()),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SetValue::Small(s) => s.len(),
            SetValue::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            SetValue::Small(s) => s.is_empty(),
            SetValue::Table(t) => t.is_empty(),
        }
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            SetValue::Small(s) => s.contains(m),
            SetValue::Table(t) => t.contains(m),
        }
    }

    /// Converts to the "hashtable" encoding with room for `cap` members, keeping the
    /// order of the members (Redis' `setTypeConvertAndExpand`).
    pub fn to_table(&mut self, cap: usize) {
        if let SetValue::Small(s) = self {
            let mut t = StrSet::default();
            t.reserve(cap.max(s.len()));
            if s.is_listpack() {
                for m in s.lp_iter() {
                    t.insert(m);
                }
            } else {
                for v in s.int_iter() {
                    t.insert(itoa::Buffer::new().format(v).as_bytes());
                }
            }
            *self = SetValue::Table(Box::new(t));
        }
    }

    /// Converts an intset to a listpack, its members in numeric order.
    fn convert_to_listpack(&mut self) {
        if let SetValue::Small(s) = self {
            if !s.is_listpack() {
                let mut v = vec![LISTPACK];
                let mut b = itoa::Buffer::new();
                for x in s.int_iter() {
                    push_str(&mut v, b.format(x).as_bytes());
                }
                s.buf = v.into();
            }
        }
    }

    /// Makes a set whose members are all integers an intset, if it may hold them (Redis'
    /// `maybeConvertToIntset`, for SINTERSTORE's result).
    pub fn maybe_to_intset(&mut self, lim: &SetLimits) {
        if self.is_intset() || self.len() > lim.max_intset {
            return;
        }
        let mut s = SmallSet::default();
        for m in self.ordered() {
            let v = crate::num::parse_i64(&m).expect("only integers");
            s.int_insert(v);
        }
        *self = SetValue::Small(s);
    }

    /// Adds `m` as Redis' `setTypeAddAux` does, changing encoding past the limits: an
    /// intset grows past `set-max-intset-entries` into a hashtable; a non-integer turns it
    /// into a listpack if it has fewer members than `set-max-listpack-entries` and neither
    /// `m` nor its widest integer is longer than `set-max-listpack-value`, else into a
    /// hashtable; a listpack that would break the limits becomes a hashtable. Returns
    /// whether `m` was new.
    pub fn add(&mut self, m: &[u8], lim: &SetLimits) -> bool {
        match self {
            SetValue::Table(t) => t.insert(m),
            SetValue::Small(s) if s.is_listpack() => {
                let n = match s.lp_find(m) {
                    Ok(_) => return false,
                    Err(n) => n,
                };
                if n < lim.max_listpack_entries && m.len() <= lim.max_listpack_value {
                    s.lp_push(m);
                } else {
                    self.to_table(n + 1);
                    self.add(m, lim);
                }
                true
            }
            SetValue::Small(s) => {
                if let Some(v) = crate::num::parse_i64(m) {
                    if !s.int_insert(v) {
                        return false;
                    }
                    if s.int_len() > lim.max_intset {
                        self.to_table(0);
                    }
                    return true;
                }
                let n = s.int_len();
                let widest = if n == 0 {
                    0
                } else {
                    digits(s.int_get(0)).max(digits(s.int_get(n - 1)))
                };
                if n < lim.max_listpack_entries
                    && m.len() <= lim.max_listpack_value
                    && widest <= lim.max_listpack_value
                {
                    self.convert_to_listpack();
                } else {
                    self.to_table(n + 1);
                }
                self.add(m, lim)
            }
        }
    }

    /// Removes `m`; a listpack keeps the order of the rest, a hashtable moves its last
    /// member into the gap.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self {
            SetValue::Small(s) if s.is_listpack() => match s.lp_find(m) {
                Ok((_, a, b)) => {
                    s.lp_cut(&[(a, b)]);
                    true
                }
                Err(_) => false,
            },
            SetValue::Small(s) => match crate::num::parse_i64(m).map(|v| s.int_find(v)) {
                Some(Ok(at)) => {
                    s.int_remove_at(at);
                    true
                }
                _ => false,
            },
            SetValue::Table(t) => t.swap_remove(m),
        }
    }

    /// The `i`-th member in the encoding's order (numeric for an intset).
    pub fn get_index(&self, i: usize) -> Option<Bytes> {
        match self {
            SetValue::Small(s) if s.is_listpack() => s.lp_iter().nth(i).map(Bytes::copy_from_slice),
            SetValue::Small(s) => (i < s.int_len()).then(|| int_bytes(s.int_get(i))),
            SetValue::Table(t) => t.get_index(i).map(Bytes::copy_from_slice),
        }
    }

    /// Removes the `i`-th member (a hashtable moves its last member into the gap).
    pub fn swap_remove_index(&mut self, i: usize) -> Option<Bytes> {
        match self {
            SetValue::Small(s) if s.is_listpack() => {
                let (a, b) = s.lp_range(i)?;
                let m = s.lp_iter_at(a);
                s.lp_cut(&[(a, b)]);
                Some(m)
            }
            SetValue::Small(s) => (i < s.int_len()).then(|| int_bytes(s.int_remove_at(i))),
            SetValue::Table(t) => t.swap_remove_index(i).map(Bytes::from),
        }
    }

    /// Removes the members at positions `at` (ascending) of a listpack, returning them in
    /// order (Redis' `lpBatchDelete`); for the other encodings, one by one.
    pub fn remove_positions(&mut self, at: &[usize]) -> Vec<Bytes> {
        match self {
            SetValue::Small(s) if s.is_listpack() => {
                let ranges: Vec<(usize, usize)> =
                    at.iter().filter_map(|&i| s.lp_range(i)).collect();
                let out = ranges.iter().map(|r| s.lp_iter_at(r.0)).collect();
                s.lp_cut(&ranges);
                out
            }
            _ => at
                .iter()
                .rev()
                .filter_map(|&i| self.swap_remove_index(i))
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect(),
        }
    }

    /// The members in Redis' iteration order for the encoding: numeric for an intset,
    /// insertion order for a listpack.
    pub fn ordered(&self) -> Vec<Bytes> {
        match self {
            SetValue::Small(s) => s.members(),
            SetValue::Table(t) => t.iter().map(Bytes::copy_from_slice).collect(),
        }
    }

    /// The address of the value's own bytes, for a prefetch.
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            SetValue::Small(s) => s.buf.as_ptr(),
            SetValue::Table(t) => &**t as *const _ as *const u8,
        }
    }

    /// The bytes the value takes from the allocator (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        match self {
            SetValue::Small(s) => s.buf.heap_bytes(),
            SetValue::Table(t) => t.heap_bytes(),
        }
    }
}

impl SmallSet {
    /// The listpack member that starts at byte `at`.
    fn lp_iter_at(&self, at: usize) -> Bytes {
        let m = strs(&self.buf[at..]).next().unwrap_or_default();
        Bytes::copy_from_slice(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intset_agrees_with_a_btreeset_and_converts() {
        assert_eq!(std::mem::size_of::<SetValue>(), 24);
        let mut s = SmallSet::default();
        let mut model = std::collections::BTreeSet::new();
        let mut x: u64 = 11;
        for i in 0..5000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = match (x >> 60) % 4 {
                0 => ((x >> 20) % 100) as i64 - 50,
                1 => ((x >> 20) % 100_000) as i64 - 50_000,
                2 => (x >> 8) as i64,
                _ => i64::MIN + ((x >> 40) % 3) as i64,
            };
            if i % 3 == 0 && !model.is_empty() {
                let k = (x >> 33) as usize % model.len();
                let want = *model.iter().nth(k).unwrap();
                assert_eq!(s.int_remove_at(k), want);
                model.remove(&want);
            } else {
                assert_eq!(s.int_insert(v), model.insert(v));
            }
            assert_eq!(s.len(), model.len());
            if i % 100 == 0 {
                assert!(s.int_iter().eq(model.iter().copied()));
                assert!(model.iter().all(|&v| s.int_contains(v)));
            }
        }
        // Redis 7.0: intset, then hashtable.
        let lim = SetLimits {
            max_intset: 4,
            ..SetLimits::REDIS_7_0
        };
        let mut t = SetValue::default();
        for m in ["3", "-1", "2", "3"] {
            t.add(m.as_bytes(), &lim);
        }
        assert!(t.is_intset() && t.len() == 3);
        assert_eq!(t.ordered(), vec!["-1", "2", "3"]);
        // Not canonical integers: not intset members.
        assert!(!t.contains(b"02") && !t.contains(b"+2") && t.contains(b"2"));
        t.add(b"4", &lim);
        assert!(t.is_intset());
        t.add(b"5", &lim);
        assert!(t.table().is_some() && t.len() == 5 && t.contains(b"5"));
        let mut u = SetValue::default();
        u.add(b"1", &SetLimits::REDIS_7_0);
        u.add(b"a", &SetLimits::REDIS_7_0);
        assert_eq!(u.encoding_name(), "hashtable");
        assert_eq!(u.ordered(), vec!["1", "a"]);
        assert_eq!(u.swap_remove_index(0).as_deref(), Some(&b"1"[..]));
        assert!(u.remove(b"a") && u.is_empty());
    }

    /// Redis 7.2's conversions (t_set.c's setTypeAddAux): an intset meeting a string becomes
    /// a listpack (numbers first, in order) while it fits the listpack limits, a hashtable
    /// otherwise; a listpack past a limit becomes a hashtable; an intset past
    /// set-max-intset-entries a hashtable.
    #[test]
    fn listpack_conversions_follow_redis_7_2() {
        let lim = SetLimits {
            max_intset: 6,
            max_listpack_entries: 4,
            max_listpack_value: 5,
            listpack: true,
        };
        let mut s = SetValue::default();
        for m in ["30", "-7", "5"] {
            assert!(s.add(m.as_bytes(), &lim));
        }
        assert!(s.is_intset());
        assert!(s.add(b"b", &lim) && !s.add(b"b", &lim));
        assert_eq!(s.encoding_name(), "listpack");
        assert_eq!(s.ordered(), vec!["-7", "5", "30", "b"]);
        assert!(s.contains(b"5") && s.contains(b"b") && !s.contains(b"05"));
        assert!(s.remove(b"5") && !s.remove(b"5"));
        assert_eq!(s.ordered(), vec!["-7", "30", "b"]);
        // Integers stay strings in a listpack; a digit is stored as one byte.
        assert!(s.add(b"9", &lim));
        assert_eq!(s.ordered(), vec!["-7", "30", "b", "9"]);
        assert_eq!(s.get_index(3).as_deref(), Some(&b"9"[..]));
        assert_eq!(s.len(), 4);
        // A fifth member: past max_listpack_entries.
        assert!(s.add(b"x", &lim));
        assert_eq!(s.encoding_name(), "hashtable");
        assert_eq!(s.ordered(), vec!["-7", "30", "b", "9", "x"]);

        // A member longer than max_listpack_value.
        let mut s = SetValue::new_for(b"a", 1, &lim);
        assert!(s.is_listpack());
        s.add(b"a", &lim);
        s.add(b"abcdef", &lim);
        assert_eq!(s.encoding_name(), "hashtable");

        // An intset whose widest integer is longer than max_listpack_value.
        let mut s = SetValue::default();
        s.add(b"-10000", &lim);
        s.add(b"a", &lim);
        assert_eq!(s.encoding_name(), "hashtable");
        // An intset with max_listpack_entries members already.
        let mut s = SetValue::default();
        for m in ["1", "2", "3", "4"] {
            s.add(m.as_bytes(), &lim);
        }
        s.add(b"a", &lim);
        assert_eq!(s.encoding_name(), "hashtable");
        // An intset past max_intset: a hashtable, not a listpack.
        let mut s = SetValue::default();
        for m in 1..=7 {
            s.add(m.to_string().as_bytes(), &lim);
        }
        assert_eq!(s.encoding_name(), "hashtable");

        // setTypeCreate: the first member and the number of arguments.
        assert!(SetValue::new_for(b"1", 6, &lim).is_intset());
        assert!(SetValue::new_for(b"1", 7, &lim).table().is_some());
        assert!(SetValue::new_for(b"a", 4, &lim).is_listpack());
        assert!(SetValue::new_for(b"a", 5, &lim).table().is_some());
        assert!(SetValue::new_for(b"a", 1, &SetLimits::REDIS_7_0)
            .table()
            .is_some());
        let mut s = SetValue::new_for(b"a", 2, &lim);
        s.add(b"a", &lim);
        s.maybe_convert(4, &lim);
        assert!(s.is_listpack());
        s.maybe_convert(5, &lim);
        assert!(s.table().is_some());

        // maybeConvertToIntset.
        let mut s = SetValue::new_listpack();
        for m in ["3", "1", "2"] {
            s.add(m.as_bytes(), &lim);
        }
        assert!(s.is_listpack());
        s.maybe_to_intset(&lim);
        assert!(s.is_intset());
        assert_eq!(s.ordered(), vec!["1", "2", "3"]);
    }

    /// The listpack encoding against a model: order kept by removals, positions, lengths
    /// of every size (one-byte digits, the two-byte lengths 48..=57).
    #[test]
    fn listpack_agrees_with_a_vec() {
        let lim = SetLimits {
            max_intset: 512,
            max_listpack_entries: usize::MAX,
            max_listpack_value: usize::MAX,
            listpack: true,
        };
        let mut s = SetValue::new_listpack();
        let mut model: Vec<Vec<u8>> = Vec::new();
        let mut x: u64 = 5;
        for i in 0..6000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m: Vec<u8> = match (x >> 50) % 3 {
                0 => vec![b'0' + ((x >> 20) % 10) as u8],
                1 => vec![b'k'; ((x >> 20) % 70) as usize],
                _ => format!("m{}", (x >> 30) % 50).into_bytes(),
            };
            match (x >> 40) % 5 {
                0 => {
                    let had = model.iter().position(|e| *e == m);
                    assert_eq!(s.remove(&m), had.is_some());
                    if let Some(p) = had {
                        model.remove(p);
                    }
                }
                1 if !model.is_empty() => {
                    let k = (x >> 8) as usize % model.len();
                    assert_eq!(s.swap_remove_index(k).unwrap(), model.remove(k));
                }
                2 if model.len() > 3 => {
                    let at = [0, 2, model.len() - 1];
                    let got = s.remove_positions(&at);
                    let want: Vec<Vec<u8>> = at.iter().map(|&i| model[i].clone()).collect();
                    for &i in at.iter().rev() {
                        model.remove(i);
                    }
                    assert_eq!(got, want);
                }
                _ => assert_eq!(s.add(&m, &lim), {
                    let new = !model.contains(&m);
                    if new {
                        model.push(m.clone());
                    }
                    new
                }),
            }
            assert!(s.is_listpack());
            if i % 50 == 0 {
                assert_eq!(s.len(), model.len());
                assert_eq!(s.ordered(), model);
                assert!(model.iter().all(|m| s.contains(m)));
            }
        }
        let n = s.len();
        s.to_table(0);
        assert_eq!(s.ordered(), model);
        assert_eq!(n, s.len());
    }

    /// The hashtable encoding keeps IndexSet's semantics: insertion order, a removal
    /// moving the last member into the gap, lookups after every move.
    #[test]
    fn strset_agrees_with_an_indexset() {
        let mut t = StrSet::default();
        let mut model: indexmap::IndexSet<Vec<u8>> = Default::default();
        let mut x: u64 = 3;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = format!("m{}", (x >> 40) % 700).into_bytes();
            match (x >> 20) % 4 {
                0 => assert_eq!(t.swap_remove(&m), model.swap_remove(&m)),
                1 if !model.is_empty() => {
                    let k = (x >> 30) as usize % model.len();
                    assert_eq!(
                        t.swap_remove_index(k).map(|b| b.to_vec()),
                        model.swap_remove_index(k)
                    );
                }
                _ => assert_eq!(t.insert(&m), model.insert(m.clone())),
            }
            assert_eq!(t.len(), model.len());
            if i % 500 == 0 {
                assert!(t.iter().eq(model.iter().map(|m| &m[..])));
                assert!(model.iter().all(|m| t.contains(m)));
                assert!(!t.contains(b"absent"));
            }
        }
    }
}
