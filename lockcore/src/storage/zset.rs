//! The sorted-set type: small sets packed in one buffer (Redis' listpack), big ones a
//! member → node index plus an order-statistic treap ordered by (score, member bytes), the
//! order Redis' skiplist keeps.
//!
//! The treap stores subtree sizes, so rank lookups (ZRANK), element-by-rank (ZRANGE) and
//! "how many elements sort before this bound" (ZCOUNT, BYSCORE, BYLEX) are all O(log n).
//! Nodes live in an arena (`Vec`) addressed by `u32` indices with a free list, which keeps
//! the structure compact and avoids a pointer per child.

use bytes::Bytes;
use hashbrown::HashTable;
use std::cmp::Ordering;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Node {
    score: f64,
    /// Exactly sized: 16 bytes here and one small allocation, where a `Bytes` took 32
    /// and, from an argument, a shared header besides.
    member: Box<[u8]>,
    pri: u32,
    left: u32,
    right: u32,
    size: u32,
}

/// The order of a sorted set: score first, then member bytes (memcmp), as in Redis.
pub fn cmp_entry(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    match s1.partial_cmp(&s2) {
        Some(Ordering::Equal) | None => m1.cmp(m2),
        Some(o) => o,
    }
}

#[derive(Debug, Clone)]
struct Treap {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    seed: u64,
}

impl Treap {
    fn new() -> Treap {
        Treap {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            // A per-set random seed: priorities an attacker cannot predict keep the
            // expected depth logarithmic whatever the insertion order.
            seed: rand::random::<u64>() | 1,
        }
    }

    fn rand(&mut self) -> u32 {
        // xorshift64*: priorities only need to be well spread, not secure.
        let mut x = self.seed;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.seed = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    fn size(&self, n: u32) -> u32 {
        if n == NIL {
            0
        } else {
            self.nodes[n as usize].size
        }
    }

    fn fix(&mut self, n: u32) {
        let (l, r) = (self.nodes[n as usize].left, self.nodes[n as usize].right);
        self.nodes[n as usize].size = 1 + self.size(l) + self.size(r);
    }

    /// Splits `t` into (nodes for which `before` holds, the rest); `before` must hold for a
    /// prefix of the order.
    fn split(&mut self, t: u32, before: &dyn Fn(f64, &[u8]) -> bool) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let n = &self.nodes[t as usize];
        if before(n.score, &n.member) {
            let r = n.right;
            let (a, b) = self.split(r, before);
            self.nodes[t as usize].right = a;
            self.fix(t);
            (t, b)
        } else {
            let l = n.left;
            let (a, b) = self.split(l, before);
            self.nodes[t as usize].left = b;
            self.fix(t);
            (a, t)
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].pri > self.nodes[b as usize].pri {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.nodes[a as usize].right = m;
            self.fix(a);
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.nodes[b as usize].left = m;
            self.fix(b);
            b
        }
    }

    /// Inserts an element known to be absent; returns its node.
    fn insert(&mut self, score: f64, member: Box<[u8]>) -> u32 {
        let pri = self.rand();
        let node = Node {
            score,
            member,
            pri,
            left: NIL,
            right: NIL,
            size: 1,
        };
        let idx = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        // One walk down: the nodes above the new one (priority at least its own) each gain
        // one element below; where its priority puts it, the subtree there is split by its
        // key into its two children. A split + two merges over the whole path walked it
        // three times (callgrind: ~5,000 instructions of an 11,500-instruction ZADD into a
        // 260k-member set).
        // The member is taken out while walking (a clone would promote its buffer).
        let m = std::mem::take(&mut self.nodes[idx as usize].member);
        let mut parent = NIL;
        let mut went_left = false;
        let mut t = self.root;
        while t != NIL && self.nodes[t as usize].pri >= pri {
            let n = &mut self.nodes[t as usize];
            n.size += 1;
            parent = t;
            went_left = cmp_entry(n.score, &n.member, score, &m) != Ordering::Less;
            t = if went_left { n.left } else { n.right };
        }
        let (a, b) = self.split(t, &|sc, mb| cmp_entry(sc, mb, score, &m) == Ordering::Less);
        let x = &mut self.nodes[idx as usize];
        x.member = m;
        x.left = a;
        x.right = b;
        self.fix(idx);
        self.link(parent, went_left, idx);
        idx
    }

    /// Points `parent`'s left or right child (the root when `parent` is NIL) at `n`.
    fn link(&mut self, parent: u32, left: bool, n: u32) {
        if parent == NIL {
            self.root = n;
        } else if left {
            self.nodes[parent as usize].left = n;
        } else {
            self.nodes[parent as usize].right = n;
        }
    }

    /// The node holding (`score`, `member`), found by one walk down.
    fn find(&self, score: f64, member: &[u8]) -> Option<u32> {
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            t = match cmp_entry(score, member, n.score, &n.member) {
                Ordering::Less => n.left,
                Ordering::Greater => n.right,
                Ordering::Equal => return Some(t),
            };
        }
        None
    }

    fn remove(&mut self, score: f64, member: &[u8]) {
        let Some(target) = self.find(score, member) else {
            return;
        };
        // Walk down again, now that the node is known to be there: every node above it
        // loses one element below, and it is replaced by the merge of its two children.
        let (mut parent, mut left, mut t) = (NIL, false, self.root);
        while t != target {
            let n = &mut self.nodes[t as usize];
            n.size -= 1;
            parent = t;
            left = cmp_entry(score, member, n.score, &n.member) == Ordering::Less;
            t = if left { n.left } else { n.right };
        }
        let (l, r) = (self.nodes[t as usize].left, self.nodes[t as usize].right);
        let m = self.merge(l, r);
        self.link(parent, left, m);
        self.nodes[t as usize].member = Box::default();
        self.free.push(t);
    }

    /// How many elements satisfy `before` (a predicate true for a prefix of the order).
    fn count_before(&self, before: &dyn Fn(f64, &[u8]) -> bool) -> usize {
        let mut n = self.root;
        let mut count = 0;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if before(node.score, &node.member) {
                count += self.size(node.left) as usize + 1;
                n = node.right;
            } else {
                n = node.left;
            }
        }
        count
    }

    fn nth(&self, mut i: usize) -> Option<(f64, &[u8])> {
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            let ls = self.size(node.left) as usize;
            match i.cmp(&ls) {
                Ordering::Less => n = node.left,
                Ordering::Equal => return Some((node.score, &node.member)),
                Ordering::Greater => {
                    i -= ls + 1;
                    n = node.right;
                }
            }
        }
        None
    }
}

/// The big encoding ("skiplist" in Redis): the treap, and a hash index of its nodes by
/// member (4 bytes and a control byte a bucket; the member and score are the node's).
#[derive(Clone)]
pub struct Big {
    index: HashTable<u32>,
    hasher: crate::storage::key::KeyHasher,
    order: Treap,
}

impl std::fmt::Debug for Big {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries((0..self.len()).filter_map(|i| self.order.nth(i)))
            .finish()
    }
}

/// A sorted set, in one of Redis' two encodings.
///
/// Small sets ("listpack") are one exactly-sized buffer, [`Pack`]: the elements in
/// (score, member) order, each a score and a length-prefixed member, as Redis' listpack
/// keeps them. A five-member set of short members is one allocation of a few dozen bytes
/// where the map and treap took over a kilobyte (issue 40). Lookups scan, which for the
/// `zset-max-listpack-entries` elements a pack may hold is as fast as hashing.
/// Past the listpack limits the set becomes a [`Big`] ("skiplist"), and never goes back
/// (callers decide when, with [`ZSet::to_big`], at Redis' thresholds).
#[derive(Debug, Clone)]
pub enum ZSet {
    Pack(Pack),
    Big(Box<Big>),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::Pack(Pack::default())
    }
}

/// Appends `n` as LEB128.
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn varint_size(mut n: u64) -> usize {
    let mut s = 1;
    while n >= 0x80 {
        n >>= 7;
        s += 1;
    }
    s
}

#[inline]
fn get_varint(buf: &[u8], at: &mut usize) -> u64 {
    let (mut n, mut shift) = (0u64, 0);
    loop {
        let b = buf[*at];
        *at += 1;
        n |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return n;
        }
        shift += 7;
    }
}

/// A score as the pack stores it: an integral score below 2^53 in magnitude as a
/// zigzag varint shifted left by one (one byte for -31..=31), any other as the tag 1 and
/// its eight bytes.
fn score_code(s: f64) -> Option<u64> {
    if s == s.trunc() && s.abs() < (1u64 << 53) as f64 && !(s == 0.0 && s.is_sign_negative()) {
        let i = s as i64;
        Some((((i << 1) ^ (i >> 63)) as u64) << 1)
    } else {
        None
    }
}

fn put_score(out: &mut Vec<u8>, s: f64) {
    match score_code(s) {
        Some(c) => put_varint(out, c),
        None => {
            out.push(1);
            out.extend_from_slice(&s.to_le_bytes());
        }
    }
}

fn entry_size(s: f64, m: &[u8]) -> usize {
    score_code(s).map_or(9, varint_size) + varint_size(m.len() as u64) + m.len()
}

/// A small sorted set: its element count (LEB128), then each element's score and
/// length-prefixed member, in (score, member) order. Empty: no buffer at all.
#[derive(Clone, Default, PartialEq)]
pub struct Pack {
    buf: crate::storage::inline::PackBuf,
}

impl std::fmt::Debug for Pack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|(s, m)| (s, String::from_utf8_lossy(m))))
            .finish()
    }
}

/// The elements of a [`Pack`] in order; `pos()` is where the next one starts.
pub struct PackIter<'a> {
    buf: &'a [u8],
    at: usize,
    left: usize,
}

impl<'a> PackIter<'a> {
    fn pos(&self) -> usize {
        self.at
    }
}

impl<'a> Iterator for PackIter<'a> {
    type Item = (f64, &'a [u8]);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let c = get_varint(self.buf, &mut self.at);
        let score = if c == 1 {
            let b: [u8; 8] = self.buf[self.at..self.at + 8].try_into().unwrap();
            self.at += 8;
            f64::from_le_bytes(b)
        } else {
            let z = c >> 1;
            ((z >> 1) as i64 ^ -((z & 1) as i64)) as f64
        };
        let n = get_varint(self.buf, &mut self.at) as usize;
        let m = &self.buf[self.at..self.at + n];
        self.at += n;
        Some((score, m))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl Pack {
    /// The buffer's address, for a prefetch.
    pub fn as_ptr(&self) -> *const u8 {
        self.buf.as_ptr()
    }

    /// Bytes the buffer takes.
    pub fn buf_len(&self) -> usize {
        self.buf.len()
    }

    pub fn len(&self) -> usize {
        if self.buf.is_empty() {
            0
        } else {
            get_varint(&self.buf, &mut 0) as usize
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn iter(&self) -> PackIter<'_> {
        let mut at = 0;
        let left = if self.buf.is_empty() {
            0
        } else {
            get_varint(&self.buf, &mut at) as usize
        };
        PackIter {
            buf: &self.buf,
            at,
            left,
        }
    }

    /// Where `member` is: (its index, its element's byte range, its score).
    fn find(&self, member: &[u8]) -> Option<(usize, usize, usize, f64)> {
        let mut it = self.iter();
        let mut i = 0;
        loop {
            let start = it.pos();
            let (s, m) = it.next()?;
            if m == member {
                return Some((i, start, it.pos(), s));
            }
            i += 1;
        }
    }

    /// Rebuilds the buffer without the element at `old` (a byte range) and with (`score`,
    /// `member`) at its place in the order, if given.
    fn rebuild(&mut self, old: Option<(usize, usize)>, new: Option<(f64, &[u8])>) {
        let n = self.len() - old.is_some() as usize + new.is_some() as usize;
        if n == 0 {
            self.buf = Default::default();
            return;
        }
        let body_at = if self.buf.is_empty() {
            0
        } else {
            varint_size(self.len() as u64)
        };
        // Where the new element goes: before the first other element that sorts after it.
        let ins = new.map(|(s, m)| {
            let mut it = self.iter();
            loop {
                let p = it.pos();
                match it.next() {
                    None => break p,
                    Some((es, em)) => {
                        if old.is_some_and(|(os, _)| os == p) {
                            continue;
                        }
                        if cmp_entry(es, em, s, m) == Ordering::Greater {
                            break p;
                        }
                    }
                }
            }
        });
        let old_len = old.map_or(0, |(a, b)| b - a);
        let add = new.map_or(0, |(s, m)| entry_size(s, m));
        let body_end = self.buf.len();
        let mut out =
            Vec::with_capacity(varint_size(n as u64) + body_end - body_at - old_len + add);
        put_varint(&mut out, n as u64);
        // Cut points of the old body, in order: the old element's range is skipped and
        // the new element written at `ins`.
        let mut from = body_at;
        let write_new = |out: &mut Vec<u8>| {
            if let Some((s, m)) = new {
                put_score(out, s);
                put_varint(out, m.len() as u64);
                out.extend_from_slice(m);
            }
        };
        match (old, ins) {
            (Some((os, oe)), Some(ins)) if ins > os => {
                out.extend_from_slice(&self.buf[from..os]);
                out.extend_from_slice(&self.buf[oe..ins]);
                write_new(&mut out);
                from = ins;
            }
            (old, ins) => {
                if let Some(ins) = ins {
                    out.extend_from_slice(&self.buf[from..ins]);
                    write_new(&mut out);
                    from = ins;
                }
                if let Some((os, oe)) = old {
                    out.extend_from_slice(&self.buf[from..os]);
                    from = oe;
                }
            }
        }
        out.extend_from_slice(&self.buf[from..body_end]);
        debug_assert_eq!(out.len(), out.capacity());
        self.buf = out.into();
    }
}

impl Big {
    fn new() -> Big {
        Big {
            index: HashTable::new(),
            hasher: Default::default(),
            order: Treap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    fn node(&self, member: &[u8]) -> Option<u32> {
        let h = self.hasher.hash_one(member);
        let nodes = &self.order.nodes;
        self.index
            .find(h, |&i| &*nodes[i as usize].member == member)
            .copied()
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        self.node(member)
            .map(|i| self.order.nodes[i as usize].score)
    }

    fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        if let Some(o) = self.score(member).filter(|&o| o == score) {
            return Some(o);
        }
        let old = self.remove(member);
        let idx = self.order.insert(score, member.into());
        let h = self.hasher.hash_one(member);
        let (nodes, hasher) = (&self.order.nodes, &self.hasher);
        self.index
            .insert_unique(h, idx, |&i| hasher.hash_one(&*nodes[i as usize].member));
        old
    }

    fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let h = self.hasher.hash_one(member);
        let nodes = &self.order.nodes;
        let e = self
            .index
            .find_entry(h, |&i| &*nodes[i as usize].member == member)
            .ok()?;
        let (i, _) = e.remove();
        let s = self.order.nodes[i as usize].score;
        self.order.remove(s, member);
        Some(s)
    }

    /// The members, in the index's order.
    pub fn members(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.index
            .iter()
            .map(|&i| &*self.order.nodes[i as usize].member)
    }
}

pub use crate::storage::inline::malloc_size;

impl ZSet {
    /// An empty set in the big ("skiplist") encoding.
    pub fn new_big() -> ZSet {
        ZSet::Big(Box::new(Big::new()))
    }

    /// True in the "skiplist" encoding.
    pub fn is_big(&self) -> bool {
        matches!(self, ZSet::Big(_))
    }

    /// Converts to the "skiplist" encoding (a no-op if there already).
    pub fn to_big(&mut self) {
        if let ZSet::Pack(p) = self {
            let mut b = Big::new();
            let n = p.len();
            // The index is empty: reserving rehashes nothing.
            b.index.reserve(n, |_| 0);
            b.order.nodes.reserve_exact(n);
            for (s, m) in p.iter() {
                b.insert(m, s);
            }
            *self = ZSet::Big(Box::new(b));
        }
    }

    /// The big encoding's map, for a SCAN by hash.
    pub fn big(&self) -> Option<&Big> {
        match self {
            ZSet::Big(b) => Some(b),
            ZSet::Pack(_) => None,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ZSet::Pack(p) => p.len(),
            ZSet::Big(b) => b.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        match self {
            ZSet::Pack(p) => p.is_empty(),
            ZSet::Big(b) => b.len() == 0,
        }
    }
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Pack(p) => p.find(member).map(|f| f.3),
            ZSet::Big(b) => b.score(member),
        }
    }

    /// Sets `member`'s score; returns the previous score if it existed.
    pub fn insert(&mut self, member: Bytes, score: f64) -> Option<f64> {
        match self {
            ZSet::Pack(p) => {
                // A listpack stores the score as text that reads back as +0, so -0 does
                // not survive in a small set; the skiplist keeps the double as is.
                let score = if score == 0.0 { 0.0 } else { score };
                let found = p.find(&member);
                if let Some((_, _, _, o)) = found {
                    if o == score {
                        return Some(o);
                    }
                }
                p.rebuild(found.map(|f| (f.1, f.2)), Some((score, &member)));
                found.map(|f| f.3)
            }
            ZSet::Big(b) => b.insert(&member, score),
        }
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Pack(p) => {
                let (_, a, b, s) = p.find(member)?;
                p.rebuild(Some((a, b)), None);
                Some(s)
            }
            ZSet::Big(b) => b.remove(member),
        }
    }

    /// 0-based rank in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match self {
            ZSet::Pack(p) => p.find(member).map(|f| f.0),
            ZSet::Big(b) => {
                let s = b.score(member)?;
                Some(
                    b.order
                        .count_before(&|sc, mb| cmp_entry(sc, mb, s, member) == Ordering::Less),
                )
            }
        }
    }

    /// The element at ascending rank `i`.
    pub fn nth(&self, i: usize) -> Option<(f64, &[u8])> {
        match self {
            ZSet::Pack(p) => p.iter().nth(i),
            ZSet::Big(b) => b.order.nth(i),
        }
    }

    /// The element at ascending rank `i`, its member as a reply string (shared with a big
    /// set, copied out of a pack).
    pub fn nth_owned(&self, i: usize) -> Option<(f64, Bytes)> {
        match self {
            ZSet::Pack(p) => p.iter().nth(i).map(|(s, m)| (s, Bytes::copy_from_slice(m))),
            ZSet::Big(b) => b.order.nth(i).map(|(s, m)| (s, Bytes::copy_from_slice(m))),
        }
    }

    /// The number of elements for which `before(score, member)` holds; it must hold for a
    /// prefix of the order (e.g. "score < 5").
    pub fn count_before(&self, before: &dyn Fn(f64, &[u8]) -> bool) -> usize {
        match self {
            ZSet::Pack(p) => p.iter().take_while(|&(s, m)| before(s, m)).count(),
            ZSet::Big(b) => b.order.count_before(before),
        }
    }

    /// Elements with ascending ranks `start..end`, cloned.
    pub fn range(&self, start: usize, end: usize) -> Vec<(Bytes, f64)> {
        match self {
            ZSet::Pack(p) => p
                .iter()
                .skip(start)
                .take(end.saturating_sub(start))
                .map(|(s, m)| (Bytes::copy_from_slice(m), s))
                .collect(),
            ZSet::Big(b) => (start..end.min(b.len()))
                .filter_map(|i| b.order.nth(i).map(|(s, m)| (Bytes::copy_from_slice(m), s)))
                .collect(),
        }
    }

    /// Every member, in no particular order.
    pub fn members(&self) -> Vec<Bytes> {
        match self {
            ZSet::Pack(p) => p.iter().map(|(_, m)| Bytes::copy_from_slice(m)).collect(),
            ZSet::Big(b) => b.members().map(Bytes::copy_from_slice).collect(),
        }
    }

    /// The bytes the value takes from the allocator (MEMORY USAGE), its own header aside.
    pub fn heap_bytes(&self) -> usize {
        match self {
            ZSet::Pack(p) => p.buf.heap_bytes(),
            ZSet::Big(b) => {
                malloc_size(std::mem::size_of::<Big>())
                    + malloc_size(b.index.allocation_size())
                    + malloc_size(b.order.nodes.capacity() * std::mem::size_of::<Node>())
                    + malloc_size(b.order.free.capacity() * 4)
                    + b.order
                        .nodes
                        .iter()
                        .map(|n| malloc_size(n.member.len()))
                        .sum::<usize>()
            }
        }
    }

    /// The address of the value's own bytes, for a prefetch.
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            ZSet::Pack(p) => p.as_ptr(),
            ZSet::Big(b) => &**b as *const Big as *const u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_rank_and_nth_agree_with_a_sorted_vec() {
        let mut z = ZSet::new_big();
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        let mut x: u64 = 7;
        for i in 0..3000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = format!("m{}", (x >> 40) % 500).into_bytes();
            let s = ((x >> 20) % 50) as f64;
            if i % 3 == 0 {
                z.remove(&m);
                model.retain(|(_, mm)| *mm != m);
            } else {
                z.insert(Bytes::from(m.clone()), s);
                model.retain(|(_, mm)| *mm != m);
                model.push((s, m));
            }
        }
        model.sort_by(|a, b| cmp_entry(a.0, &a.1, b.0, &b.1));
        assert_eq!(z.len(), model.len());
        for (i, (s, m)) in model.iter().enumerate() {
            assert_eq!(z.rank(m), Some(i));
            let (ns, nm) = z.nth(i).unwrap();
            assert_eq!((ns, &nm[..]), (*s, &m[..]));
        }
        assert_eq!(
            z.count_before(&|s, _| s < 10.0),
            model.iter().filter(|(s, _)| *s < 10.0).count()
        );
    }

    /// Checks a subtree's sizes, order and heap priorities; returns its size.
    fn check(t: &Treap, n: u32, lo: Option<(f64, &[u8])>, hi: Option<(f64, &[u8])>) -> u32 {
        if n == NIL {
            return 0;
        }
        let node = &t.nodes[n as usize];
        let k = (node.score, &node.member[..]);
        if let Some((s, m)) = lo {
            assert_eq!(cmp_entry(s, m, k.0, k.1), Ordering::Less);
        }
        if let Some((s, m)) = hi {
            assert_eq!(cmp_entry(k.0, k.1, s, m), Ordering::Less);
        }
        for c in [node.left, node.right] {
            if c != NIL {
                assert!(t.nodes[c as usize].pri <= node.pri, "heap order");
            }
        }
        let size = 1 + check(t, node.left, lo, Some(k)) + check(t, node.right, Some(k), hi);
        assert_eq!(node.size, size, "subtree size");
        size
    }

    #[test]
    fn one_walk_insert_and_remove_keep_sizes_order_and_priorities() {
        let mut z = ZSet::new_big();
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        let mut x: u64 = 99;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = format!("m{}", (x >> 33) % 2_000).into_bytes();
            // Few distinct scores: ties are broken by the member bytes.
            let s = ((x >> 17) % 7) as f64 - 3.0;
            if (x >> 60) % 3 == 0 {
                assert_eq!(z.remove(&m).is_some(), model.iter().any(|(_, mm)| *mm == m));
                model.retain(|(_, mm)| *mm != m);
            } else {
                z.insert(Bytes::from(m.clone()), s);
                model.retain(|(_, mm)| *mm != m);
                model.push((s, m));
            }
            if i % 997 == 0 {
                assert_eq!(
                    {
                        let o = &z.big().unwrap().order;
                        check(o, o.root, None, None)
                    } as usize,
                    model.len()
                );
            }
        }
        assert_eq!(
            {
                let o = &z.big().unwrap().order;
                check(o, o.root, None, None)
            } as usize,
            model.len()
        );
        model.sort_by(|a, b| cmp_entry(a.0, &a.1, b.0, &b.1));
        for (i, (s, m)) in model.iter().enumerate() {
            assert_eq!(z.rank(m), Some(i));
            assert_eq!(
                z.nth(i).map(|(ns, nm)| (ns, nm.to_vec())),
                Some((*s, m.clone()))
            );
        }
    }

    /// The pack keeps the same order, ranks and scores as the big encoding, through
    /// inserts, score changes and removals, and converts to an equal big set.
    #[test]
    fn pack_agrees_with_big() {
        assert_eq!(std::mem::size_of::<ZSet>(), 24);
        let mut p = ZSet::default();
        let mut b = ZSet::new_big();
        let mut x: u64 = 5;
        let scores = [
            0.0,
            1.0,
            -1.0,
            2.5,
            -31.0,
            32.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            9007199254740993.0,
            -4096.0,
            12345678.0,
        ];
        for i in 0..4000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = format!("m{}", (x >> 40) % 40).into_bytes();
            let m = if (x >> 20) % 7 == 0 {
                vec![b'x'; 200]
            } else {
                m
            };
            let s = scores[((x >> 30) % scores.len() as u64) as usize];
            if i % 4 == 0 {
                assert_eq!(p.remove(&m), b.remove(&m));
            } else {
                assert_eq!(
                    p.insert(Bytes::from(m.clone()), s),
                    b.insert(Bytes::from(m.clone()), s)
                );
            }
            assert_eq!(p.len(), b.len());
            assert_eq!(p.score(&m), b.score(&m));
            assert_eq!(p.rank(&m), b.rank(&m));
            if i % 50 == 0 {
                assert_eq!(p.range(0, p.len()), b.range(0, b.len()));
                assert_eq!(p.range(2, 5), b.range(2, 5));
                assert_eq!(
                    p.count_before(&|s, _| s < 2.0),
                    b.count_before(&|s, _| s < 2.0)
                );
                for k in 0..p.len() {
                    assert_eq!(p.nth(k), b.nth(k));
                    assert_eq!(p.nth_owned(k), b.nth_owned(k));
                }
            }
        }
        let mut c = p.clone();
        c.to_big();
        assert!(c.is_big() && !p.is_big());
        assert_eq!(c.range(0, c.len()), b.range(0, b.len()));
        while let Some((_, m)) = p.nth_owned(0) {
            p.remove(&m);
        }
        assert!(p.is_empty());
        // -0 reads back as +0 from a pack, as from Redis' listpack.
        p.insert(Bytes::from_static(b"z"), -0.0);
        assert!(p.score(b"z").unwrap().is_sign_positive());
    }

    #[test]
    fn sorted_insertion_order_stays_shallow() {
        // 200k ascending inserts: a degenerate tree would overflow the stack in split/merge.
        let mut z = ZSet::new_big();
        for i in 0..200_000u32 {
            z.insert(Bytes::from(format!("{i:08}")), i as f64);
        }
        assert_eq!(z.rank(b"00150000"), Some(150_000));
        assert_eq!(z.nth(199_999).map(|(s, _)| s), Some(199_999.0));
        for i in (0..200_000u32).step_by(2) {
            z.remove(format!("{i:08}").as_bytes());
        }
        assert_eq!(z.len(), 100_000);
        assert_eq!(z.nth(0).map(|(s, _)| s), Some(1.0));
    }
}
