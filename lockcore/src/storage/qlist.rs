//! Lists, after Redis' quicklist of listpacks: the items packed in nodes of a few KiB.
//!
//! A small list is one node inline in the value (Redis 7.2's "listpack" encoding); a list
//! past `list-max-listpack-size` is a vector of nodes ("quicklist"). The conversions follow
//! Redis 7.2's `listTypeTryConversionRaw`: a listpack becomes a quicklist before a push that
//! would take it past the limit, and a quicklist of one node becomes a listpack again when
//! it shrinks to half the limit. Redis 7.0 always says "quicklist"; the representation is
//! the same, only the name differs (`encoding_name`).
//!
//! A node is one exactly-sized buffer: a header (item count, u16 LE, and the bytes the
//! same items take in Redis' listpack, u32 LE, which the limits are checked against), then
//! each item as its length (LEB128), its bytes and its length again written backwards, so
//! a node is walked from either end. Why: as a `VecDeque<Bytes>` every item cost a 32-byte
//! handle and its own allocation, 6.6 times Redis' bytes for a list of 200 short items.

use bytes::Bytes;

/// The node header: the item count (u16, [`COUNT_UNKNOWN`] past it) and the listpack bytes
/// (u32). Six bytes rather than eight so that a list of five one-letter items, 21 bytes,
/// sits in the value itself (inline.rs).
const HDR: usize = 6;
/// The header's count of a node of 65,535 items or more, which is then counted by a walk,
/// as Redis' listpack header says "unknown" past its u16 (`LP_HDR_NUMELE_UNKNOWN`). The
/// limits rarely allow it: one push of many empty strings into a listpack is checked by
/// their bytes alone, as in Redis.
const COUNT_UNKNOWN: u16 = u16::MAX;

/// The item count of a node's buffer.
#[inline]
fn count_of(buf: &[u8]) -> usize {
    match u16::from_le_bytes(buf[0..2].try_into().unwrap()) {
        COUNT_UNKNOWN => {
            let (mut n, mut off) = (0, HDR);
            while off < buf.len() {
                off = read_fwd(buf, off).2;
                n += 1;
            }
            n
        }
        c => c as usize,
    }
}
/// `lpBytes` of an empty listpack: 6 header bytes and the end marker.
const LP_EMPTY: u32 = 7;
const LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
const SIZE_SAFETY_LIMIT: usize = 8192;
const SIZE_ESTIMATE_OVERHEAD: usize = 8;

/// Redis' `quicklistNodeExceedsLimit` for `list-max-listpack-size` `fill`.
pub fn exceeds_limit(fill: i64, new_sz: usize, new_count: usize) -> bool {
    if fill < 0 {
        let level = ((-fill - 1) as usize).min(LEVELS.len() - 1);
        new_sz > LEVELS[level]
    } else {
        new_sz > SIZE_SAFETY_LIMIT || new_count > fill.max(1) as usize
    }
}

/// Redis' `quicklistNodeLimit`: (size limit, count limit).
fn node_limit(fill: i64) -> (usize, usize) {
    if fill < 0 {
        let level = ((-fill - 1) as usize).min(LEVELS.len() - 1);
        (LEVELS[level], usize::MAX)
    } else {
        (usize::MAX, fill.max(1) as usize)
    }
}

fn canonical_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let n = crate::num::parse_i64(s)?;
    (itoa::Buffer::new().format(n).as_bytes() == s).then_some(n)
}

/// The bytes `s` takes as one entry of Redis' listpack (encoding, data, back-length).
pub fn lp_entry_size(s: &[u8]) -> usize {
    let enc = match canonical_int(s) {
        Some(v) if (0..=127).contains(&v) => 1,
        Some(v) if (-4096..=4095).contains(&v) => 2,
        Some(v) if i16::try_from(v).is_ok() => 3,
        Some(v) if (-8_388_608..=8_388_607).contains(&v) => 4,
        Some(v) if i32::try_from(v).is_ok() => 5,
        Some(_) => 9,
        None if s.len() < 64 => 1 + s.len(),
        None if s.len() < 4096 => 2 + s.len(),
        None => 5 + s.len(),
    };
    enc + match enc {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

fn leb_size(mut n: usize) -> usize {
    let mut s = 1;
    while n >= 0x80 {
        n >>= 7;
        s += 1;
    }
    s
}

/// Bytes one item takes in a node.
fn item_size(s: &[u8]) -> usize {
    2 * leb_size(s.len()) + s.len()
}

fn put_item(out: &mut [u8], s: &[u8]) {
    let k = leb_size(s.len());
    let mut n = s.len();
    for b in out[..k].iter_mut() {
        *b = (n as u8 & 0x7f) | if n >= 0x80 { 0x80 } else { 0 };
        n >>= 7;
    }
    out[k..k + s.len()].copy_from_slice(s);
    // Backwards: the low group last, every group but the first flagged.
    let back = &mut out[k + s.len()..2 * k + s.len()];
    let mut n = s.len();
    for (i, b) in back.iter_mut().rev().enumerate() {
        *b = (n as u8 & 0x7f) | if i + 1 < k { 0x80 } else { 0 };
        n >>= 7;
    }
}

/// The item starting at `off`: (its bytes' range, the offset after it).
#[inline]
fn read_fwd(buf: &[u8], off: usize) -> (usize, usize, usize) {
    let (mut n, mut shift, mut i) = (0usize, 0, off);
    loop {
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let k = i - off;
    (i, i + n, i + n + k)
}

/// The item ending at `end`: (its start offset, its bytes' range).
#[inline]
fn read_back(buf: &[u8], end: usize) -> (usize, usize, usize) {
    let (mut n, mut shift, mut i) = (0usize, 0, end);
    loop {
        i -= 1;
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let k = end - i;
    let data_end = i;
    let data = data_end - n;
    (data - k, data, data_end)
}

/// One node: header and packed items in one exactly-sized buffer.
#[derive(Clone, PartialEq, Eq)]
pub struct Node {
    buf: crate::storage::inline::PackBuf,
}

impl Default for Node {
    fn default() -> Node {
        let mut b = vec![0u8; HDR];
        b[2..6].copy_from_slice(&LP_EMPTY.to_le_bytes());
        Node { buf: b.into() }
    }
}

impl Node {
    #[inline]
    pub fn count(&self) -> usize {
        count_of(&self.buf)
    }
    /// `lpBytes` of the same items in Redis.
    #[inline]
    pub fn lp_bytes(&self) -> usize {
        u32::from_le_bytes(self.buf[2..6].try_into().unwrap()) as usize
    }
    fn set_header(buf: &mut [u8], count: usize, lp: usize) {
        let count = u16::try_from(count).unwrap_or(COUNT_UNKNOWN);
        buf[0..2].copy_from_slice(&count.to_le_bytes());
        buf[2..6].copy_from_slice(&(lp as u32).to_le_bytes());
    }
    pub fn buf_len(&self) -> usize {
        self.buf.len()
    }
    pub fn iter(&self) -> NodeIter<'_> {
        NodeIter {
            buf: &self.buf,
            front: HDR,
            back: self.buf.len(),
        }
    }
    /// The offset of item `i` (or the end for `i == count`), walking from the nearer end.
    fn offset(&self, i: usize) -> usize {
        let c = self.count();
        if i <= c / 2 {
            let mut off = HDR;
            for _ in 0..i {
                off = read_fwd(&self.buf, off).2;
            }
            off
        } else {
            let mut off = self.buf.len();
            for _ in i..c {
                off = read_back(&self.buf, off).0;
            }
            off
        }
    }
    pub fn get(&self, i: usize) -> &[u8] {
        let (s, e, _) = read_fwd(&self.buf, self.offset(i));
        &self.buf[s..e]
    }
    /// Replaces the bytes `at..end` with `items`, adjusting the header.
    fn splice(&mut self, at: usize, end: usize, items: &[&[u8]], removed: usize, lp_delta: isize) {
        let add: usize = items.iter().map(|s| item_size(s)).sum();
        let count = count_of(&self.buf) + items.len() - removed;
        let mut v = std::mem::take(&mut self.buf).into_vec();
        let old = v.len();
        let new = old - (end - at) + add;
        if new > old {
            v.reserve_exact(new - old);
            v.resize(new, 0);
            v.copy_within(end..old, at + add);
        } else {
            v.copy_within(end..old, at + add);
            v.truncate(new);
        }
        let mut o = at;
        for s in items {
            put_item(&mut v[o..], s);
            o += item_size(s);
        }
        let lp = u32::from_le_bytes(v[2..6].try_into().unwrap()) as isize + lp_delta;
        Node::set_header(&mut v, count, lp as usize);
        self.buf = v.into();
    }
    pub fn insert(&mut self, i: usize, s: &[u8]) {
        let at = self.offset(i);
        self.splice(at, at, &[s], 0, lp_entry_size(s) as isize);
    }
    pub fn push_back(&mut self, s: &[u8]) {
        let at = self.buf.len();
        self.splice(at, at, &[s], 0, lp_entry_size(s) as isize);
    }
    pub fn push_front(&mut self, s: &[u8]) {
        self.splice(HDR, HDR, &[s], 0, lp_entry_size(s) as isize);
    }
    /// Pushes `items` at one end in order (each at the head for `front`) with one resize of
    /// the buffer: an RPUSH of 200 items reallocated it 200 times. `lp` is the items'
    /// listpack bytes, when the caller has them.
    fn push_many(&mut self, front: bool, items: &[&[u8]], lp: Option<usize>) {
        let lp = lp.unwrap_or_else(|| items.iter().map(|s| lp_entry_size(s)).sum()) as isize;
        if front && items.len() > 1 {
            let rev: Vec<&[u8]> = items.iter().rev().copied().collect();
            self.splice(HDR, HDR, &rev, 0, lp);
        } else if front {
            self.splice(HDR, HDR, items, 0, lp);
        } else {
            let at = self.buf.len();
            self.splice(at, at, items, 0, lp);
        }
    }
    pub fn set(&mut self, i: usize, s: &[u8]) {
        let at = self.offset(i);
        let (ds, de, end) = read_fwd(&self.buf, at);
        let delta = lp_entry_size(s) as isize - lp_entry_size(&self.buf[ds..de]) as isize;
        self.splice(at, end, &[s], 1, delta);
    }
    /// Removes items `i..j`.
    pub fn remove_range(&mut self, i: usize, j: usize) {
        if i >= j {
            return;
        }
        let at = self.offset(i);
        let (mut off, mut lp) = (at, 0usize);
        for _ in i..j {
            let (s, e, n) = read_fwd(&self.buf, off);
            lp += lp_entry_size(&self.buf[s..e]);
            off = n;
        }
        self.splice(at, off, &[], j - i, -(lp as isize));
    }
    pub fn pop_front(&mut self) -> Option<Bytes> {
        if self.count() == 0 {
            return None;
        }
        let (s, e, n) = read_fwd(&self.buf, HDR);
        let b = Bytes::copy_from_slice(&self.buf[s..e]);
        self.splice(HDR, n, &[], 1, -(lp_entry_size(&b) as isize));
        Some(b)
    }
    pub fn pop_back(&mut self) -> Option<Bytes> {
        if self.count() == 0 {
            return None;
        }
        let end = self.buf.len();
        let (st, s, e) = read_back(&self.buf, end);
        let b = Bytes::copy_from_slice(&self.buf[s..e]);
        self.splice(st, end, &[], 1, -(lp_entry_size(&b) as isize));
        Some(b)
    }
    /// Splits off the items from `i` on into a new node.
    fn split_off(&mut self, i: usize) -> Node {
        let mut tail = Node::default();
        let items: Vec<&[u8]> = self.iter().skip(i).collect();
        let lp: usize = items.iter().map(|s| lp_entry_size(s)).sum();
        let at = tail.buf.len();
        tail.splice(at, at, &items, 0, lp as isize);
        let c = self.count();
        self.remove_range(i, c);
        tail
    }
    fn heap_bytes(&self) -> usize {
        self.buf.heap_bytes()
    }
}

pub struct NodeIter<'a> {
    buf: &'a [u8],
    front: usize,
    back: usize,
}

impl<'a> Iterator for NodeIter<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.front >= self.back {
            return None;
        }
        let (s, e, n) = read_fwd(self.buf, self.front);
        self.front = n;
        Some(&self.buf[s..e])
    }
}

impl<'a> DoubleEndedIterator for NodeIter<'a> {
    #[inline]
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.front >= self.back {
            return None;
        }
        let (st, s, e) = read_back(self.buf, self.back);
        self.back = st;
        Some(&self.buf[s..e])
    }
}

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Quick {
    nodes: Vec<Node>,
    len: usize,
}

/// A list value: one inline node ("listpack") or a vector of nodes ("quicklist").
#[derive(Clone, PartialEq, Eq)]
pub enum ListValue {
    Pack(Node),
    Quick(Box<Quick>),
}

impl Default for ListValue {
    fn default() -> ListValue {
        ListValue::Pack(Node::default())
    }
}

impl std::fmt::Debug for ListValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

/// The name OBJECT ENCODING gives `enc` of a list: Redis before 7.2 has only quicklists.
pub fn encoding_name(enc: &'static str, has_listpack_lists: bool) -> &'static str {
    if enc == "listpack" && !has_listpack_lists {
        "quicklist"
    } else {
        enc
    }
}

impl ListValue {
    fn nodes(&self) -> &[Node] {
        match self {
            ListValue::Pack(n) => std::slice::from_ref(n),
            ListValue::Quick(q) => &q.nodes,
        }
    }

    pub fn is_pack(&self) -> bool {
        matches!(self, ListValue::Pack(_))
    }

    pub fn as_ptr(&self) -> *const u8 {
        match self {
            ListValue::Pack(n) => n.buf.as_ptr(),
            ListValue::Quick(q) => &**q as *const Quick as *const u8,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ListValue::Pack(n) => n.count(),
            ListValue::Quick(q) => q.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.nodes().iter().flat_map(|n| n.iter())
    }

    /// Items `s..=e` (in range), walking to the first node by counts. The items are copied
    /// into one buffer and handed out as pieces of it: one allocation for the reply's
    /// bytes, not one per item.
    pub fn range(&self, s: usize, e: usize) -> Vec<Bytes> {
        let want = e + 1 - s;
        let walk = |f: &mut dyn FnMut(&[u8])| {
            let (mut skip, mut left) = (s, want);
            for n in self.nodes() {
                let c = n.count();
                if skip >= c {
                    skip -= c;
                    continue;
                }
                for it in n.iter().skip(skip).take(left) {
                    f(it);
                    left -= 1;
                }
                skip = 0;
                if left == 0 {
                    break;
                }
            }
        };
        let mut total = 0;
        walk(&mut |it| total += it.len());
        let mut buf = bytes::BytesMut::with_capacity(total);
        let mut out = Vec::with_capacity(want);
        walk(&mut |it| {
            buf.extend_from_slice(it);
            out.push(buf.split().freeze());
        });
        out
    }

    /// (node, index in node) of item `i < len`, walking from the nearer end.
    fn locate(&self, i: usize) -> (usize, usize) {
        let nodes = self.nodes();
        if i <= self.len() / 2 {
            let mut i = i;
            for (k, n) in nodes.iter().enumerate() {
                if i < n.count() {
                    return (k, i);
                }
                i -= n.count();
            }
            unreachable!()
        } else {
            let mut from_end = self.len() - i;
            for (k, n) in nodes.iter().enumerate().rev() {
                if from_end <= n.count() {
                    return (k, n.count() - from_end);
                }
                from_end -= n.count();
            }
            unreachable!()
        }
    }

    pub fn get(&self, i: usize) -> Option<Bytes> {
        if i >= self.len() {
            return None;
        }
        let (k, j) = self.locate(i);
        Some(Bytes::copy_from_slice(self.nodes()[k].get(j)))
    }

    /// Converts to a quicklist before adding `items` if the listpack would pass the limit.
    fn grow(&mut self, fill: i64, items: &[&[u8]]) {
        if let ListValue::Pack(n) = self {
            let add: usize = items.iter().map(|s| s.len()).sum();
            if exceeds_limit(fill, n.lp_bytes() + add, n.count() + items.len()) {
                let n = std::mem::take(n);
                let len = n.count();
                let nodes = if len > 0 { vec![n] } else { Vec::new() };
                *self = ListValue::Quick(Box::new(Quick { nodes, len }));
            }
        }
    }

    /// A quicklist of one node back to a listpack when within the limit (halved when
    /// `shrinking`), as Redis' `listTypeTryConvertQuicklist`.
    pub fn try_shrink(&mut self, fill: i64, shrinking: bool) {
        if let ListValue::Quick(q) = self {
            if q.nodes.len() != 1 {
                return;
            }
            let (mut sz, mut cnt) = node_limit(fill);
            if shrinking {
                sz /= 2;
                cnt /= 2;
            }
            if q.nodes[0].lp_bytes() > sz || q.len > cnt {
                return;
            }
            let n = q.nodes.pop().unwrap();
            *self = ListValue::Pack(n);
        }
    }

    /// Redis' `_quicklistNodeAllowInsert`.
    fn allow_insert(n: &Node, fill: i64, s: &[u8]) -> bool {
        Self::allows(n.lp_bytes(), n.count(), fill, s)
    }

    /// [`Self::allow_insert`] for a node of `lp` listpack bytes and `count` items.
    fn allows(lp: usize, count: usize, fill: i64, s: &[u8]) -> bool {
        let sz = s.len();
        let large = if fill >= 0 {
            sz > SIZE_SAFETY_LIMIT
        } else {
            sz > node_limit(fill).0
        };
        !large && !exceeds_limit(fill, lp + sz + SIZE_ESTIMATE_OVERHEAD, count + 1)
    }

    /// Pushes `items` at one end, in order (each at the head for `front`).
    pub fn push(&mut self, fill: i64, front: bool, items: &[&[u8]]) {
        self.grow(fill, items);
        match self {
            ListValue::Pack(n) => n.push_many(front, items, None),
            ListValue::Quick(q) => {
                // The items go into the end node as Redis inserts them, one at a time
                // while the node allows it, then into a new node; each node's share is
                // spliced in at once.
                let mut i = 0;
                while i < items.len() {
                    let end = if front {
                        q.nodes.first()
                    } else {
                        q.nodes.last()
                    };
                    if !end.is_some_and(|n| Self::allow_insert(n, fill, items[i])) {
                        if front {
                            q.nodes.insert(0, Node::default());
                        } else {
                            q.nodes.push(Node::default());
                        }
                    }
                    let n = if front {
                        q.nodes.first_mut()
                    } else {
                        q.nodes.last_mut()
                    }
                    .expect("an end node");
                    let mut add = lp_entry_size(items[i]);
                    let (lp, mut cnt) = (n.lp_bytes(), n.count() + 1);
                    let mut j = i + 1;
                    while j < items.len() && Self::allows(lp + add, cnt, fill, items[j]) {
                        add += lp_entry_size(items[j]);
                        cnt += 1;
                        j += 1;
                    }
                    n.push_many(front, &items[i..j], Some(add));
                    q.len += j - i;
                    i = j;
                }
            }
        }
    }

    pub fn pop(&mut self, front: bool) -> Option<Bytes> {
        match self {
            ListValue::Pack(n) => {
                if front {
                    n.pop_front()
                } else {
                    n.pop_back()
                }
            }
            ListValue::Quick(q) => {
                let k = if front {
                    0
                } else {
                    q.nodes.len().checked_sub(1)?
                };
                let n = q.nodes.get_mut(k)?;
                let v = if front { n.pop_front() } else { n.pop_back() }?;
                if n.count() == 0 {
                    q.nodes.remove(k);
                }
                q.len -= 1;
                Some(v)
            }
        }
    }

    /// Replaces item `i < len` (LSET).
    pub fn set(&mut self, fill: i64, i: usize, s: &[u8]) {
        self.grow(fill, &[s]);
        let (k, j) = self.locate(i);
        match self {
            ListValue::Pack(n) => n.set(j, s),
            ListValue::Quick(q) => q.nodes[k].set(j, s),
        }
        self.split_if_big(fill, k);
        self.try_shrink(fill, true);
    }

    /// Inserts `s` so it becomes item `i <= len` (LINSERT).
    pub fn insert(&mut self, fill: i64, i: usize, s: &[u8]) {
        self.grow(fill, &[s]);
        let (k, j) = if i == self.len() {
            let k = self.nodes().len().saturating_sub(1);
            (k, self.nodes().get(k).map_or(0, |n| n.count()))
        } else {
            self.locate(i)
        };
        match self {
            ListValue::Pack(n) => n.insert(j, s),
            ListValue::Quick(q) => {
                if q.nodes.is_empty() {
                    q.nodes.push(Node::default());
                }
                q.nodes[k].insert(j, s);
                q.len += 1;
            }
        }
        self.split_if_big(fill, k);
    }

    /// Splits node `k` in two while it is past the limit.
    fn split_if_big(&mut self, fill: i64, k: usize) {
        let ListValue::Quick(q) = self else { return };
        let n = &mut q.nodes[k];
        if n.count() > 1 && exceeds_limit(fill, n.lp_bytes(), n.count()) {
            let tail = n.split_off(n.count() / 2);
            q.nodes.insert(k + 1, tail);
        }
    }

    /// Keeps the items `keep(i, item)` says to keep (LREM), node by node.
    pub fn retain(&mut self, fill: i64, mut keep: impl FnMut(usize, &[u8]) -> bool) {
        let mut i = 0;
        let mut edit = |n: &mut Node| {
            let items: Vec<bool> = n
                .iter()
                .map(|it| {
                    let k = keep(i, it);
                    i += 1;
                    k
                })
                .collect();
            // Remove runs from the back so earlier indexes stay valid.
            let mut j = items.len();
            while j > 0 {
                if items[j - 1] {
                    j -= 1;
                    continue;
                }
                let end = j;
                while j > 0 && !items[j - 1] {
                    j -= 1;
                }
                n.remove_range(j, end);
            }
        };
        match self {
            ListValue::Pack(n) => edit(n),
            ListValue::Quick(q) => {
                q.nodes.iter_mut().for_each(&mut edit);
                q.nodes.retain(|n| n.count() > 0);
                q.len = q.nodes.iter().map(|n| n.count()).sum();
            }
        }
        self.try_shrink(fill, true);
    }

    /// Keeps items `s..=e` (LTRIM), dropping whole nodes where it can.
    pub fn trim(&mut self, fill: i64, s: usize, e: usize) {
        let len = self.len();
        let (front, back) = (s, len - 1 - e);
        match self {
            ListValue::Pack(n) => {
                n.remove_range(e + 1, len);
                n.remove_range(0, front);
            }
            ListValue::Quick(q) => {
                let mut back = back;
                while back > 0 {
                    let last = q.nodes.last_mut().unwrap();
                    let c = last.count();
                    if c <= back {
                        q.nodes.pop();
                        back -= c;
                    } else {
                        last.remove_range(c - back, c);
                        back = 0;
                    }
                }
                let mut front = front;
                let mut drop = 0;
                while front > 0 {
                    let c = q.nodes[drop].count();
                    if c <= front {
                        drop += 1;
                        front -= c;
                    } else {
                        q.nodes[drop].remove_range(0, front);
                        front = 0;
                    }
                }
                q.nodes.drain(..drop);
                q.len = e + 1 - s;
            }
        }
        self.try_shrink(fill, true);
    }

    pub fn clear(&mut self) {
        *self = ListValue::default();
    }

    /// A list of `items` as Redis builds one and then converts it (`LIST_CONV_AUTO`): a
    /// listpack if they fit one, else a quicklist.
    pub fn from_items<I, T>(fill: i64, items: I) -> ListValue
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        let mut q = ListValue::Quick(Box::default());
        for it in items {
            q.push(fill, false, &[it.as_ref()]);
        }
        q.try_shrink(fill, false);
        q
    }

    /// The bytes the list takes from the allocator (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        use crate::storage::zset::malloc_size;
        match self {
            ListValue::Pack(n) => n.heap_bytes(),
            ListValue::Quick(q) => {
                malloc_size(std::mem::size_of::<Quick>())
                    + malloc_size(q.nodes.capacity() * std::mem::size_of::<Node>())
                    + q.nodes.iter().map(|n| n.heap_bytes()).sum::<usize>()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(l: &ListValue) -> Vec<Vec<u8>> {
        l.iter().map(|s| s.to_vec()).collect()
    }

    /// Nodes of more items than the header's u16 holds (one push of 100,000 empty strings
    /// into a listpack, checked by their bytes as Redis checks it) are counted by a walk,
    /// through pushes, an insert, LSET and pops, and small ones again by the header.
    #[test]
    fn nodes_past_the_header_count_are_walked() {
        for fill in [-5i64, -2, 100_000] {
            let mut l = ListValue::default();
            l.push(fill, false, &vec![&b""[..]; 100_000]);
            l.push(fill, true, &[&b"a"[..]]);
            l.insert(fill, 50_000, b"x");
            l.set(fill, 70_000, b"y");
            assert_eq!(l.len(), 100_002, "fill {fill}");
            assert_eq!(l.iter().filter(|s| !s.is_empty()).count(), 3);
            let counts: usize = l.nodes().iter().map(|n| n.count()).sum();
            assert_eq!(counts, 100_002);
            let mut popped = 0;
            while l.pop(true).is_some() {
                popped += 1;
                if popped % 7_919 == 0 {
                    assert_eq!(l.len(), 100_002 - popped);
                }
            }
            assert_eq!(popped, 100_002);
        }
    }

    /// A push of many items leaves the nodes exactly as pushing them one at a time does
    /// (Redis inserts them one at a time), at either end, under count and size limits.
    #[test]
    fn a_batch_push_splits_nodes_as_single_pushes_do() {
        let shape = |l: &ListValue| match l {
            ListValue::Pack(n) => vec![n.count()],
            ListValue::Quick(q) => q.nodes.iter().map(|n| n.count()).collect(),
        };
        let mut x: u64 = 7;
        for fill in [-2i64, -1, 1, 3, 5] {
            for front in [false, true] {
                let (mut batch, mut single) = (ListValue::default(), ListValue::default());
                for round in 0..40 {
                    let new: Vec<Vec<u8>> = (0..(round % 9) + 1)
                        .map(|_| {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            let len = [1, 5, 40, 300, 5000][(x >> 33) as usize % 5];
                            vec![b'a' + (x >> 40) as u8 % 26; len]
                        })
                        .collect();
                    let refs: Vec<&[u8]> = new.iter().map(|v| &v[..]).collect();
                    batch.push(fill, front, &refs);
                    for r in &refs {
                        single.push(fill, front, &[r]);
                    }
                    assert_eq!(shape(&batch), shape(&single), "fill {fill} front {front}");
                    assert_eq!(items(&batch), items(&single));
                }
            }
        }
    }

    #[test]
    fn pushes_pops_and_edits_match_a_vecdeque() {
        for fill in [-2i64, -1, 3, 1] {
            let mut l = ListValue::default();
            let mut m = std::collections::VecDeque::<Vec<u8>>::new();
            let mut seed = 7u64;
            for step in 0..4000 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let r = (seed >> 33) as usize;
                let len = [1, 5, 60, 200, 700][r % 5];
                let v: Vec<u8> = format!("{step}-")
                    .into_bytes()
                    .into_iter()
                    .cycle()
                    .take(len)
                    .collect();
                match (r >> 4) % 9 {
                    0 | 1 => {
                        l.push(fill, false, &[&v]);
                        m.push_back(v);
                    }
                    2 | 3 => {
                        l.push(fill, true, &[&v]);
                        m.push_front(v);
                    }
                    4 => assert_eq!(l.pop(true).map(|b| b.to_vec()), m.pop_front()),
                    5 => assert_eq!(l.pop(false).map(|b| b.to_vec()), m.pop_back()),
                    6 if !m.is_empty() => {
                        let i = r % m.len();
                        l.set(fill, i, &v);
                        m[i] = v;
                    }
                    7 => {
                        let i = r % (m.len() + 1);
                        l.insert(fill, i, &v);
                        m.insert(i, v);
                    }
                    8 if m.len() > 4 => {
                        let (s, e) = (r % 3, m.len() - 1 - (r >> 3) % 3);
                        l.trim(fill, s, e);
                        m.truncate(e + 1);
                        m.drain(..s);
                    }
                    _ => {}
                }
                assert_eq!(l.len(), m.len());
                if step % 97 == 0 {
                    assert_eq!(items(&l), m.iter().cloned().collect::<Vec<_>>());
                    let rev: Vec<Vec<u8>> = l.iter().rev().map(|s| s.to_vec()).collect();
                    assert_eq!(rev, m.iter().rev().cloned().collect::<Vec<_>>());
                    for i in 0..m.len() {
                        assert_eq!(l.get(i).unwrap().to_vec(), m[i]);
                    }
                    if m.len() > 3 {
                        let r = l.range(1, m.len() - 2);
                        assert_eq!(r.len(), m.len() - 2);
                        assert_eq!(r[0].to_vec(), m[1]);
                    }
                }
            }
            let mut i = 0;
            l.retain(fill, |_, it| {
                i += 1;
                it.len() != 5
            });
            m.retain(|v| v.len() != 5);
            assert_eq!(items(&l), m.iter().cloned().collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_small_list_is_a_listpack_and_converts_at_the_limit() {
        let mut l = ListValue::default();
        l.push(4, false, &[b"a", b"b", b"c", b"d"]);
        assert!(l.is_pack());
        l.push(4, false, &[b"e"]);
        assert!(!l.is_pack());
        // Two nodes, [a b c d] [e]: one node again, but 4 items are more than half of 4.
        l.pop(false);
        l.try_shrink(4, true);
        assert!(!l.is_pack());
        l.pop(true);
        l.try_shrink(4, true);
        assert!(!l.is_pack());
        l.pop(true);
        l.try_shrink(4, true);
        assert!(l.is_pack());
        assert_eq!(items(&l), vec![b"c".to_vec(), b"d".to_vec()]);
        assert_eq!(lp_entry_size(b"12"), 2);
        assert_eq!(lp_entry_size(b"abc"), 5);
    }
}
