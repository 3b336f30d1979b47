//! A flat encoding for small collections, after Redis' listpack: every string is stored in
//! one contiguous buffer as a length (LEB128: one byte up to 127) followed by its bytes, in
//! insertion order. A small hash is its field/value pairs in a row; a small set of strings
//! (value.rs' `SmallSet`, Redis 7.2's "listpack" set) its members one after another.
//!
//! A string that is one ASCII digit ("0".."9") is stored as that byte alone, with no
//! length: a byte 0x30..=0x39 where a length would start is the string itself, so lookups
//! still return a slice of the buffer. (Redis' listpack likewise keeps small integers in
//! one byte.) Lengths 48..=57, whose one-byte LEB128 would read as a digit, take the
//! two-byte form instead. Why: a Redisson lock's value is its hold count, "1", and its
//! field `<uuid>:<thread>` is 38+ bytes; for `:N` that makes the hash 40 bytes, which
//! malloc serves from a 48-byte chunk where 41 bytes took 64.
//!
//! Why: a Redisson lock is a hash with one field, and thousands of them are held at once.
//! As an `IndexMap` each one cost a table, an entries vector and two refcounted strings,
//! about 0.75 KiB; packed, the whole hash is one allocation of a few dozen bytes, as in
//! Redis. Lookups scan linearly, which for the few entries a listpack may hold (the
//! `*-max-listpack-entries` limits) is as fast as hashing.

/// Pairs of byte strings (field, value) in insertion order, in one exactly-sized buffer.
///
/// Only the buffer (24 bytes, up to 22 of them in place: inline.rs): the number of pairs is
/// counted by a scan, like every lookup (a pack holds at most `hash-max-listpack-entries`
/// pairs). A length or capacity beside it would make `HashValue` 32 bytes and `Value` 40
/// instead of 32 (value.rs).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PairPack {
    buf: crate::storage::inline::PackBuf,
}

impl std::fmt::Debug for PairPack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.iter()
                    .map(|(k, v)| (String::from_utf8_lossy(k), String::from_utf8_lossy(v))),
            )
            .finish()
    }
}

/// True for the strings stored as their own single byte.
#[inline]
fn is_digit_literal(s: &[u8]) -> bool {
    matches!(s, [b'0'..=b'9'])
}

/// Appends `s` as the buffer stores it: a digit literal, or its length and bytes.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    if !is_digit_literal(s) {
        put_len(out, s.len());
    }
    out.extend_from_slice(s);
}

/// Bytes `s` takes in the buffer.
fn str_size(s: &[u8]) -> usize {
    if is_digit_literal(s) {
        1
    } else {
        len_size(s.len()) + s.len()
    }
}

fn put_len(out: &mut Vec<u8>, mut n: usize) {
    if (0x30..=0x39).contains(&n) {
        // The one-byte form would read as a digit literal: the two-byte LEB128 form.
        out.extend_from_slice(&[n as u8 | 0x80, 0]);
        return;
    }
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn len_size(mut n: usize) -> usize {
    if (0x30..=0x39).contains(&n) {
        return 2;
    }
    let mut s = 1;
    while n >= 0x80 {
        n >>= 7;
        s += 1;
    }
    s
}

/// Reads the string that starts at `at`: (its bytes' range, the position after it).
#[inline]
fn read_str(buf: &[u8], at: usize) -> (usize, usize, usize) {
    if (0x30..=0x39).contains(&buf[at]) {
        return (at, at + 1, at + 1);
    }
    let (mut n, mut shift, mut i) = (0usize, 0, at);
    loop {
        let b = buf[i];
        i += 1;
        n |= ((b & 0x7f) as usize) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    (i, i + n, i + n)
}

/// Where one pair sits in the buffer.
struct Slot {
    /// Pairs before this one.
    index: usize,
    /// Start of the field's length prefix.
    start: usize,
    /// Start of the value's length prefix.
    value_at: usize,
    /// End of the pair.
    end: usize,
}

impl PairPack {
    /// The buffer's address, for a prefetch.
    pub fn as_ptr(&self) -> *const u8 {
        self.buf.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Bytes the buffer takes.
    pub fn buf_len(&self) -> usize {
        self.buf.len()
    }

    /// The bytes the pack takes from the allocator (MEMORY USAGE): none when inline.
    pub fn heap_bytes(&self) -> usize {
        self.buf.heap_bytes()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The pairs in insertion order.
    pub fn iter(&self) -> PairIter<'_> {
        PairIter {
            strs: strs(&self.buf),
        }
    }

    fn find(&self, field: &[u8]) -> Option<Slot> {
        self.find_counting(field).ok()
    }

    /// The slot of `field`, or the number of pairs (all were scanned).
    fn find_counting(&self, field: &[u8]) -> Result<Slot, usize> {
        let buf = &self.buf;
        let (mut at, mut n) = (0, 0);
        while at < buf.len() {
            let (fs, fe, next) = read_str(buf, at);
            let (_, _, end) = read_str(buf, next);
            if &buf[fs..fe] == field {
                return Ok(Slot {
                    index: n,
                    start: at,
                    value_at: next,
                    end,
                });
            }
            at = end;
            n += 1;
        }
        Err(n)
    }

    /// Pairs from byte `at` to the end.
    fn count_from(&self, mut at: usize) -> usize {
        let mut n = 0;
        while at < self.buf.len() {
            let (_, _, next) = read_str(&self.buf, at);
            at = read_str(&self.buf, next).2;
            n += 1;
        }
        n
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        let s = self.find(field)?;
        let (vs, ve, _) = read_str(&self.buf, s.value_at);
        Some(&self.buf[vs..ve])
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.find(field).is_some()
    }

    /// The `i`-th pair in insertion order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.iter().nth(i)
    }

    /// Sets `field` to `value`: replaced in place if present (the pair keeps its position,
    /// as in Redis), else appended. Returns true if the field is new. The buffer grows to
    /// exactly what it holds, as a listpack's reallocation does.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        self.insert_counted(field, value).0
    }

    /// `insert`, also returning the number of pairs after it, counted on the way (the
    /// pack keeps no count: see the type).
    pub fn insert_counted(&mut self, field: &[u8], value: &[u8]) -> (bool, usize) {
        let s = self.find_counting(field);
        let count = match &s {
            Ok(s) => s.index + 1 + self.count_from(s.end),
            Err(n) => n + 1,
        };
        if let Ok(s) = &s {
            let (vs, ve, _) = read_str(&self.buf, s.value_at);
            // Same size and same length means the same form (a digit literal is the only
            // 1-byte form of a 1-byte string), so the bytes can be overwritten in place.
            if str_size(value) == s.end - s.value_at && ve - vs == value.len() {
                self.buf[vs..ve].copy_from_slice(value);
                return (false, count);
            }
        }
        let mut buf = std::mem::take(&mut self.buf).into_vec();
        let new = match s.ok() {
            Some(s) => {
                let (new_size, old_size) = (str_size(value), s.end - s.value_at);
                let mut enc = Vec::with_capacity(new_size);
                put_str(&mut enc, value);
                if new_size > old_size {
                    buf.reserve_exact(new_size - old_size);
                }
                buf.splice(s.value_at..s.end, enc);
                false
            }
            None => {
                buf.reserve_exact(str_size(field) + str_size(value));
                put_str(&mut buf, field);
                put_str(&mut buf, value);
                true
            }
        };
        self.buf = buf.into();
        (new, count)
    }

    /// Removes `field`, keeping the order of the rest. Returns true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self.find(field) {
            Some(s) => {
                let mut buf = std::mem::take(&mut self.buf).into_vec();
                buf.drain(s.start..s.end);
                self.buf = buf.into();
                true
            }
            None => false,
        }
    }

    /// Bytes allocated for the pairs.
    pub fn allocated(&self) -> usize {
        self.buf.len()
    }

    /// The buffer is always exactly sized.
    pub fn shrink_to_fit(&mut self) {}
}

pub struct PairIter<'a> {
    strs: StrIter<'a>,
}

impl<'a> Iterator for PairIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        Some((self.strs.next()?, self.strs.next()?))
    }
}

// ------------------------------------------------- single strings (a listpack set's members)

/// The strings of a buffer laid out as above, one after another, in order.
pub struct StrIter<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for StrIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.at >= self.buf.len() {
            return None;
        }
        let (s, e, next) = read_str(self.buf, self.at);
        self.at = next;
        Some(&self.buf[s..e])
    }
}

/// The strings stored in `buf` (single strings, not pairs), in order.
pub fn strs(buf: &[u8]) -> StrIter<'_> {
    StrIter { buf, at: 0 }
}

/// Where the string `s` is in `buf` (single strings): `Ok((index, start, end))`, its position
/// and the byte range it takes, or `Err(count)`, the number of strings scanned (all).
pub fn find_str(buf: &[u8], s: &[u8]) -> Result<(usize, usize, usize), usize> {
    let (mut at, mut n) = (0, 0);
    while at < buf.len() {
        let (fs, fe, next) = read_str(buf, at);
        if &buf[fs..fe] == s {
            return Ok((n, at, next));
        }
        at = next;
        n += 1;
    }
    Err(n)
}

/// The byte range the `i`-th string of `buf` takes (single strings).
pub fn str_range(buf: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut at = 0;
    for _ in 0..i {
        if at >= buf.len() {
            return None;
        }
        at = read_str(buf, at).2;
    }
    (at < buf.len()).then(|| (at, read_str(buf, at).2))
}

/// Appends `s` to a buffer of single strings.
pub fn push_str(out: &mut Vec<u8>, s: &[u8]) {
    put_str(out, s)
}

/// The bytes `s` takes in a buffer.
pub fn stored_size(s: &[u8]) -> usize {
    str_size(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_insertion_order_and_replaces_in_place() {
        let mut p = PairPack::default();
        assert!(p.insert(b"a", b"1"));
        assert!(p.insert(b"b", b"2"));
        assert!(p.insert(b"c", b"3"));
        assert!(!p.insert(b"a", b"100"));
        assert!(!p.insert(b"b", b""));
        let v: Vec<_> = p.iter().collect();
        assert_eq!(
            v,
            vec![
                (&b"a"[..], &b"100"[..]),
                (&b"b"[..], &b""[..]),
                (&b"c"[..], &b"3"[..])
            ]
        );
        assert!(p.remove(b"b"));
        assert!(!p.remove(b"b"));
        assert_eq!(p.len(), 2);
        assert_eq!(p.get(b"c"), Some(&b"3"[..]));
        assert_eq!(p.get_index(1), Some((&b"c"[..], &b"3"[..])));
        assert_eq!(p.get(b"zz"), None);
    }

    #[test]
    fn long_strings_take_multi_byte_lengths() {
        let mut p = PairPack::default();
        let big = vec![b'x'; 20_000];
        p.insert(&big, b"v");
        p.insert(b"k", &big);
        p.insert(&big, &big[..300]);
        assert_eq!(p.get(&big), Some(&big[..300]));
        assert_eq!(p.get(b"k"), Some(&big[..]));
        assert!(p.remove(&big));
        assert_eq!(p.iter().count(), 1);
    }

    #[test]
    fn a_lock_hash_is_one_small_allocation() {
        let mut p = PairPack::default();
        p.insert(b"6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1", b"1");
        assert_eq!(p.allocated(), 40);
        p.insert(b"6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1", b"2");
        assert_eq!(p.allocated(), 40);
        assert_eq!(
            p.get(b"6b6e3a0c-5f7e-4a6f-9a55-7d1c2e9b0001:1"),
            Some(&b"2"[..])
        );
    }

    /// Every way a value can change form (digit literal, empty, one other byte, lengths
    /// 48..=57 whose one-byte length would read as a digit, longer) against a model.
    #[test]
    fn digit_literals_and_every_length_round_trip() {
        let mut vals: Vec<Vec<u8>> = vec![b"".to_vec(), b"x".to_vec(), b"10".to_vec()];
        vals.extend((b'0'..=b'9').map(|d| vec![d]));
        vals.extend((0..300).map(|n| vec![b'7'; n]));
        let mut p = PairPack::default();
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            // Fields cycle through the same shapes, so they are digits and odd lengths too.
            let f = vals[(i * 7) % vals.len()].clone();
            let (new, len) = p.insert_counted(&f, v);
            assert_eq!(len, model.len() + new as usize);
            match model.iter_mut().find(|(k, _)| *k == f) {
                Some(e) => {
                    assert!(!new);
                    e.1 = v.clone();
                }
                None => {
                    assert!(new);
                    model.push((f.clone(), v.clone()));
                }
            }
            assert_eq!(p.len(), model.len());
            let got: Vec<(Vec<u8>, Vec<u8>)> =
                p.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            assert_eq!(got, model);
            assert_eq!(
                p.allocated(),
                model
                    .iter()
                    .map(|(k, v)| str_size(k) + str_size(v))
                    .sum::<usize>()
            );
        }
        for (k, v) in &model {
            assert_eq!(p.get(k), Some(&v[..]));
        }
        assert_eq!(str_size(b"5"), 1);
        assert_eq!(str_size(&[b'a'; 48]), 50);
        assert_eq!(str_size(&[b'a'; 58]), 59);
    }
}
