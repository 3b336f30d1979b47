//! The DUMP/RESTORE payload: one value in Redis' RDB encoding, then the RDB version
//! (2 bytes, little endian) and a CRC-64 (Jones polynomial, as Redis' `crc64`) of all that
//! precedes it.
//!
//! Tumbler writes what redis-server 7.0 writes for the same encoding: strings (integer and
//! LZF forms), lists as quicklists of listpacks split as Redis splits a tail-pushed list,
//! intsets, listpack hashes and sorted sets, skiplist sorted sets; so those payloads are
//! byte for byte redis-server's (tests/tests/differential_dump.rs). Hashtable sets and
//! hashes are written in Tumbler's order. It reads all of those plus the plain list type.
//! Streams are read as types 15 and 19 and written as 19 (see `stream`); Tumbler's lock
//! types are not serialized.

use bytes::Bytes;
use std::collections::VecDeque;

use crate::storage::value::{HashValue, SetEncoding, SetLimits, SetValue, Value, NO_TTL};

pub mod file;
mod stream;

/// Redis 7.0's RDB version (redis-server 7.0.15 loads up to 10). What a server writes is
/// its personality's (`Personality::rdb_version`).
pub const RDB_VERSION: u16 = 10;

const T_STRING: u8 = 0;
const T_LIST: u8 = 1;
const T_SET: u8 = 2;
const T_HASH: u8 = 4;
const T_ZSET_2: u8 = 5;
const T_SET_INTSET: u8 = 11;
const T_HASH_LISTPACK: u8 = 16;
const T_ZSET_LISTPACK: u8 = 17;
const T_LIST_QUICKLIST_2: u8 = 18;
const T_ZSET: u8 = 3;
const T_HASH_ZIPMAP: u8 = 9;
const T_LIST_ZIPLIST: u8 = 10;
const T_ZSET_ZIPLIST: u8 = 12;
const T_HASH_ZIPLIST: u8 = 13;
const T_LIST_QUICKLIST: u8 = 14;
/// Redis 7.2+ (RDB 11).
const T_SET_LISTPACK: u8 = 20;
/// A module type's value (RDB_TYPE_MODULE_2): Tumbler writes vector sets as one.
const T_MODULE_2: u8 = 7;

/// The module type id Tumbler's vector sets are written under: the name "TumblerVS"
/// (encoding version 0) in Redis' 64-symbol packing. It is not Redis' "vectorset": the
/// body is Tumbler's own layout, which Redis could not read, so a Redis loading the payload
/// fails cleanly on an unknown module type instead.
fn vset_module_id() -> u64 {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut id: u64 = 0;
    for c in b"TumblerVS" {
        let i = CHARSET.iter().position(|x| x == c).unwrap_or(0) as u64;
        id = (id << 6) | i;
    }
    id << 10
}

/// Redis 7.4+ (RDB 12): hashes with field TTLs. The "pre-GA" ones (7.4 release
/// candidates) keep absolute TTLs and no minimum; Valkey 9 uses 22 for its own layout.
const T_HASH_METADATA_PRE_GA: u8 = 22;
const T_HASH_LISTPACK_EX_PRE_GA: u8 = 23;
const T_HASH_METADATA: u8 = 24;
const T_HASH_LISTPACK_EX: u8 = 25;
/// Valkey 9's hash with field TTLs: each field, its value, and its deadline as 8 bytes
/// (-1 for none).
const T_VALKEY_HASH_2: u8 = 22;

/// The RDB version of Valkey 9 (its own numbering, from 80).
pub const VALKEY_RDB_VERSION: u16 = 80;

/// CRC-64/Jones as Redis' `crc64` computes it (reflected, init 0, no final xor), with 16
/// lookup tables (32 KiB, built at compile time): 16 bytes per step, as DUMP payloads can be
/// megabytes.
const CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// The CRC-64 of a DUMP payload's body (everything before the 8 checksum bytes).
pub fn crc64(data: &[u8]) -> u64 {
    CRC64.checksum(data)
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u32::MAX as usize {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// `s` as an integer if it is one in canonical form (what `string2ll` accepts and
/// `ll2string` prints back the same: no sign on zero, no leading zeros or '+').
fn canonical_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let n = crate::num::parse_i64(s)?;
    (itoa::Buffer::new().format(n).as_bytes() == s).then_some(n)
}

/// A string as Redis' `rdbSaveRawString` writes it: a short integer that round-trips as
/// an 8/16/32-bit integer, more than 20 bytes LZF-compressed when that saves at least 4
/// bytes (Redis' default `rdbcompression yes`), otherwise length and bytes.
fn put_string(out: &mut Vec<u8>, s: &[u8], lzf: bool) {
    if s.len() <= 11 {
        if let Some(n) = canonical_int(s) {
            if let Ok(v) = i8::try_from(n) {
                out.push(0xc0);
                out.push(v as u8);
                return;
            } else if let Ok(v) = i16::try_from(n) {
                out.push(0xc1);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            } else if let Ok(v) = i32::try_from(n) {
                out.push(0xc2);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    if lzf && s.len() > 20 {
        if let Some(c) = lzf_compress(s, s.len() - 4) {
            out.push(0xc3);
            put_len(out, c.len());
            put_len(out, s.len());
            out.extend_from_slice(&c);
            return;
        }
    }
    put_len(out, s.len());
    out.extend_from_slice(s);
}

/// LZF as Redis' bundled liblzf compresses (HLOG 16, VERY_FAST), so compressed strings
/// come out byte for byte as redis-server writes them; `None` if the result would not fit
/// in `out_len` bytes. (Redis leaves the hash table uninitialised, so in theory a stale
/// slot can add a match this version, which starts from an empty table, does not find.)
pub fn lzf_compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    const HSIZE: usize = 1 << 16;
    if input.is_empty() || out_len == 0 {
        return None;
    }
    // The table is the thread's, kept between calls: allocating and zeroing 512 KiB per
    // string made saving 100,000 100-byte values take 0.5 s. A slot holds the call's
    // generation above the position + 1, so a slot another call wrote reads as empty.
    thread_local! {
        static TABLE: std::cell::RefCell<(u64, Vec<u64>)> = const { std::cell::RefCell::new((0, Vec::new())) };
    }
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        let (generation, slots) = &mut *t;
        if slots.is_empty() || *generation >= u32::MAX as u64 {
            *slots = vec![0; HSIZE];
            *generation = 0;
        }
        *generation += 1;
        let mut htab = Htab {
            slots,
            gen: *generation << 32,
        };
        lzf_compress_with(input, out_len, &mut htab)
    })
}

/// LZF's hash table of positions + 1 (0 = empty), valid for one call ([`lzf_compress`]).
struct Htab<'a> {
    slots: &'a mut [u64],
    gen: u64,
}

impl Htab<'_> {
    #[inline]
    fn get(&self, slot: usize) -> usize {
        let v = self.slots[slot];
        if v & !0xffff_ffff == self.gen {
            (v & 0xffff_ffff) as usize
        } else {
            0
        }
    }
    #[inline]
    fn set(&mut self, slot: usize, pos1: usize) {
        self.slots[slot] = self.gen | pos1 as u64;
    }
}

fn lzf_compress_with(input: &[u8], out_len: usize, htab: &mut Htab) -> Option<Vec<u8>> {
    const HLOG: u32 = 16;
    const MAX_LIT: usize = 1 << 5;
    const MAX_OFF: usize = 1 << 13;
    const MAX_REF: usize = (1 << 8) + (1 << 3);
    const HSIZE: usize = 1 << HLOG;
    let in_len = input.len();
    if in_len >= u32::MAX as usize {
        return None;
    }
    let frst = |p: usize| ((input[p] as u32) << 8) | input[p + 1] as u32;
    let next = |v: u32, p: usize| (v << 8) | input[p + 2] as u32;
    let idx = |h: u32| ((h >> (24 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1);
    let mut out = vec![0u8; out_len];
    let mut ip = 0usize;
    let mut op = 1usize; // start run
    let mut lit = 0usize;
    let mut hval = if in_len >= 2 { frst(0) } else { 0 };
    while in_len >= 3 && ip < in_len - 2 {
        hval = next(hval, ip);
        let slot = idx(hval);
        let r = htab.get(slot);
        htab.set(slot, ip + 1);
        let matched = r != 0 && {
            let rf = r - 1;
            rf < ip
                && ip - rf - 1 < MAX_OFF
                && rf > 0
                && input[rf + 2] == input[ip + 2]
                && input[rf] == input[ip]
                && input[rf + 1] == input[ip + 1]
        };
        if matched {
            let rf = r - 1;
            let off = ip - rf - 1;
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(MAX_REF);
            if op + 3 + 1 >= out_len && op - (lit == 0) as usize + 3 + 1 >= out_len {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1);
            op -= (lit == 0) as usize;
            let mut broke = false;
            if maxlen > 16 {
                for _ in 0..16 {
                    len += 1;
                    if input[rf + len] != input[ip + len] {
                        broke = true;
                        break;
                    }
                }
            }
            if !broke {
                loop {
                    len += 1;
                    if !(len < maxlen && input[rf + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2;
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1; // start run
            ip += len + 1;
            if ip >= in_len - 2 {
                break;
            }
            ip -= 2;
            hval = frst(ip);
            hval = next(hval, ip);
            htab.set(idx(hval), ip + 1);
            ip += 1;
            hval = next(hval, ip);
            htab.set(idx(hval), ip + 1);
            ip += 1;
        } else {
            if op >= out_len {
                return None;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    if op + 3 > out_len {
        return None;
    }
    while ip < in_len {
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1);
    op -= (lit == 0) as usize;
    out.truncate(op);
    Some(out)
}

/// Redis' listpack: total bytes (u32 LE), entry count (u16 LE, saturating), the entries
/// (integers in the smallest of Redis' integer encodings, strings with a 6/12/32-bit
/// length), each followed by its back-length, and 0xFF.
struct Listpack {
    buf: Vec<u8>,
    count: usize,
}

impl Listpack {
    fn new() -> Listpack {
        Listpack {
            buf: vec![0; 6],
            count: 0,
        }
    }

    fn push(&mut self, s: &[u8]) {
        match canonical_int(s) {
            Some(n) => self.push_int(n),
            None => self.push_str(s),
        }
    }

    fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        let b = &mut self.buf;
        if (0..=127).contains(&v) {
            b.push(v as u8);
        } else if (-4096..=4095).contains(&v) {
            let u = if v < 0 { (1 << 13) + v } else { v } as u16;
            b.push(((u >> 8) as u8) | 0xc0);
            b.push(u as u8);
        } else if (-32768..=32767).contains(&v) {
            b.push(0xf1);
            b.extend_from_slice(&(v as i16).to_le_bytes());
        } else if (-8_388_608..=8_388_607).contains(&v) {
            b.push(0xf2);
            b.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        } else if let Ok(x) = i32::try_from(v) {
            b.push(0xf3);
            b.extend_from_slice(&x.to_le_bytes());
        } else {
            b.push(0xf4);
            b.extend_from_slice(&v.to_le_bytes());
        }
        self.end_entry(start);
    }

    fn push_str(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let b = &mut self.buf;
        let n = s.len();
        if n < 64 {
            b.push(0x80 | n as u8);
        } else if n < 4096 {
            b.push(0xe0 | (n >> 8) as u8);
            b.push(n as u8);
        } else {
            b.push(0xf0);
            b.extend_from_slice(&(n as u32).to_le_bytes());
        }
        b.extend_from_slice(s);
        self.end_entry(start);
    }

    /// Appends the back-length of the entry that started at `start`.
    fn end_entry(&mut self, start: usize) {
        let l = (self.buf.len() - start) as u64;
        let b = &mut self.buf;
        if l <= 127 {
            b.push(l as u8);
        } else if l < 16383 {
            b.extend_from_slice(&[(l >> 7) as u8, (l & 127) as u8 | 128]);
        } else if l < 2_097_151 {
            b.extend_from_slice(&[
                (l >> 14) as u8,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        } else if l < 268_435_455 {
            b.extend_from_slice(&[
                (l >> 21) as u8,
                ((l >> 14) & 127) as u8 | 128,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        } else {
            b.extend_from_slice(&[
                (l >> 28) as u8,
                ((l >> 21) & 127) as u8 | 128,
                ((l >> 14) & 127) as u8 | 128,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        }
        self.count += 1;
    }

    fn finish(mut self) -> Vec<u8> {
        self.buf.push(0xff);
        let total = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&total.to_le_bytes());
        let count = self.count.min(65535) as u16;
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

/// A zset score as Redis puts it in a listpack: an integer when the double is one
/// (`double2ll`), otherwise `d2string`'s text.
/// A score in a zset listpack, as Redis' `d2string` writes it: an integer within
/// +-LLONG_MAX/2 as an integer, else `%.17g` (RDB 10, Redis 7.0) or the shortest text
/// (RDB 11 on, Redis 7.2+ and Valkey).
fn push_score(lp: &mut Listpack, score: f64, ver: u16) {
    const HALF: f64 = (i64::MAX / 2) as f64;
    if (-HALF..=HALF).contains(&score) && score == (score as i64) as f64 {
        lp.push_int(score as i64);
    } else if score.is_nan() {
        lp.push_str(b"nan");
    } else if ver >= 11 {
        lp.push(crate::num::DoubleFmt::Shortest.d2string(score).as_bytes());
    } else {
        lp.push(crate::num::fmt_double_17g(score).as_bytes());
    }
}

/// Redis' quicklist node split for a list built by pushing at the tail: a node takes
/// another element while its listpack plus the element plus 8 stays within the
/// `list-max-listpack-size` limit (a byte size when negative, else a count with an 8 KiB
/// safety limit).
fn quicklist_nodes<'a>(items: impl Iterator<Item = &'a [u8]>, fill: i64) -> Vec<Vec<u8>> {
    const LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
    let mut nodes = Vec::new();
    let mut cur: Option<Listpack> = None;
    for it in items {
        let fits = cur.as_ref().is_some_and(|lp| {
            let new_sz = lp.buf.len() + 1 + it.len() + 8;
            if fill < 0 {
                let level = ((-fill) - 1) as usize;
                level < LEVELS.len() && new_sz <= LEVELS[level]
                    || new_sz <= 8192 && (lp.count as i64) < fill
            } else {
                new_sz <= 8192 && (lp.count as i64) < fill
            }
        });
        if !fits {
            if let Some(lp) = cur.take() {
                nodes.push(lp.finish());
            }
            cur = Some(Listpack::new());
        }
        cur.as_mut().unwrap().push(it);
    }
    if let Some(lp) = cur {
        nodes.push(lp.finish());
    }
    nodes
}

/// An intset: encoding width (2, 4 or 8, the smallest that holds every member), count,
/// and the members in ascending order, little endian.
fn intset(members: &[i64]) -> Vec<u8> {
    let mut v = members.to_vec();
    v.sort_unstable();
    let width = if v.iter().all(|&x| i16::try_from(x).is_ok()) {
        2
    } else if v.iter().all(|&x| i32::try_from(x).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * v.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes()[..width]);
    }
    out
}

/// The DUMP payload of `v`, or `None` for a type Tumbler does not serialize. Each type is
/// written in the RDB type redis-server 7.0 uses for the encoding OBJECT ENCODING reports
/// (listpack hashes and sorted sets, intsets, quicklists of listpacks), so for those the
/// payload is byte for byte what redis-server writes; hashtable sets and hashes come out
/// in Tumbler's order, which Redis' loader accepts. `list_fill` is `list-max-listpack-size`.
/// `ver` is the personality's RDB version (`Personality::rdb_version`): the footer's, and
/// which layout a hash with field TTLs gets.
pub fn dump(v: &Value, list_fill: i64, ver: u16) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    if !write_value(&mut out, v, list_fill, true, ver) {
        return None;
    }
    out.extend_from_slice(&ver.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Some(out)
}

/// Appends `v`'s RDB type byte and encoding (what an RDB file holds after the key, and a
/// DUMP payload before its footer); `false`, writing nothing, for a type Tumbler does not
/// serialize (locks). `lzf` is `rdbcompression`.
pub fn write_value(out: &mut Vec<u8>, v: &Value, list_fill: i64, lzf: bool, ver: u16) -> bool {
    match v {
        Value::Hash(h) if ver >= VALKEY_RDB_VERSION && h.has_ttls() => {
            out.push(T_VALKEY_HASH_2);
            put_len(out, h.len());
            for (f, v, t) in h.iter_ttl() {
                put_string(out, f, lzf);
                put_string(out, v, lzf);
                let t = if t == NO_TTL { -1 } else { t };
                out.extend_from_slice(&t.to_le_bytes());
            }
        }
        Value::Hash(h) if ver >= 12 && ver < VALKEY_RDB_VERSION && h.is_listpackex() => {
            out.push(T_HASH_LISTPACK_EX);
            // Redis writes the earliest TTL it registered, which may be stale.
            out.extend_from_slice(&h.meta_min().unwrap_or(0).to_le_bytes());
            let mut lp = Listpack::new();
            for (f, v, t) in h.iter_ttl() {
                lp.push(f);
                lp.push(v);
                lp.push_int(t);
            }
            put_string(out, &lp.finish(), lzf);
        }
        Value::Hash(h) if ver >= 12 && ver < VALKEY_RDB_VERSION && h.has_ttls() => {
            out.push(T_HASH_METADATA);
            let min = h.min_ttl().unwrap_or(0);
            out.extend_from_slice(&min.to_le_bytes());
            put_len(out, h.len());
            for (f, v, t) in h.iter_ttl() {
                put_len(
                    out,
                    if t == NO_TTL {
                        0
                    } else {
                        (t - min + 1) as usize
                    },
                );
                put_string(out, f, lzf);
                put_string(out, v, lzf);
            }
        }
        Value::Str(s) => {
            out.push(T_STRING);
            put_string(out, s, lzf);
        }
        Value::List(l) => {
            out.push(T_LIST_QUICKLIST_2);
            let nodes = quicklist_nodes(l.iter(), list_fill);
            put_len(out, nodes.len());
            for n in nodes {
                put_len(out, 2); // QUICKLIST_NODE_CONTAINER_PACKED
                put_string(out, &n, lzf);
            }
        }
        Value::Set(s) if s.is_intset() => {
            let ints: Vec<i64> = s.ints().into_iter().flatten().collect();
            out.push(T_SET_INTSET);
            put_string(out, &intset(&ints), lzf);
        }
        Value::Set(s) if s.is_listpack() => {
            out.push(T_SET_LISTPACK);
            let mut lp = Listpack::new();
            for m in s.ordered() {
                lp.push(&m);
            }
            put_string(out, &lp.finish(), lzf);
        }
        Value::Set(s) => {
            out.push(T_SET);
            put_len(out, s.len());
            for m in s.ordered() {
                put_string(out, &m, lzf);
            }
        }
        Value::Hash(h) if !h.is_table() => {
            out.push(T_HASH_LISTPACK);
            let mut lp = Listpack::new();
            for (f, v) in h.iter() {
                lp.push(f);
                lp.push(v);
            }
            put_string(out, &lp.finish(), lzf);
        }
        Value::Hash(h) => {
            out.push(T_HASH);
            put_len(out, h.len());
            for (f, v) in h.iter() {
                put_string(out, f, lzf);
                put_string(out, v, lzf);
            }
        }
        Value::ZSet(z) if !z.is_big() => {
            out.push(T_ZSET_LISTPACK);
            let mut lp = Listpack::new();
            for (m, score) in z.range(0, z.len()) {
                lp.push(&m);
                push_score(&mut lp, score, ver);
            }
            put_string(out, &lp.finish(), lzf);
        }
        Value::ZSet(z) => {
            // Redis writes a skiplist from its tail, so that loading inserts at the head.
            out.push(T_ZSET_2);
            put_len(out, z.len());
            for (m, score) in z.range(0, z.len()).into_iter().rev() {
                put_string(out, &m, lzf);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        // Tumbler's own types (locks) are not serialized.
        Value::Stream(s) => stream::dump(s, out, lzf, ver >= 11),
        Value::Lock(_) => return false,
        Value::VSet(v) => {
            out.push(T_MODULE_2);
            put_len(out, vset_module_id() as usize);
            put_string(out, &v.serialize(), lzf);
            put_len(out, 0); // RDB_MODULE_OPCODE_EOF
        }
    }
    true
}

/// Checks the footer as Redis' `verifyDumpPayload`: a known RDB version and a matching CRC.
/// `max` is the personality's RDB version: Redis takes payloads up to its own; Valkey 9
/// takes its own (80) and Redis' up to 11, refusing the "foreign" 12..=79.
pub fn verify(p: &[u8], max: u16) -> bool {
    if p.len() < 10 {
        return false;
    }
    let n = p.len();
    let ver = u16::from_le_bytes([p[n - 10], p[n - 9]]);
    let ok = if max >= VALKEY_RDB_VERSION {
        ver <= 11 || (VALKEY_RDB_VERSION..=max).contains(&ver)
    } else {
        ver <= max
    };
    if !ok {
        return false;
    }
    let crc = u64::from_le_bytes(p[n - 8..].try_into().unwrap());
    crc == crc64(&p[..n - 8])
}

/// What RESTORE builds from a payload, before encodings are chosen.
pub enum Loaded {
    Str(Bytes),
    List(VecDeque<Bytes>),
    /// A set's members, and the encoding of its RDB type (a "hashtable" for RDB_TYPE_SET).
    Set(Vec<Bytes>, SetEncoding),
    Hash(Vec<(Bytes, Bytes)>),
    /// A hash with field TTLs (`NO_TTL` for none); `listpack` if it came as a listpackex
    /// (kept in its order), else from a table layout.
    HashTtl(Vec<(Bytes, Bytes, i64)>, bool),
    ZSet(Vec<(Bytes, f64)>),
    Stream(Box<crate::storage::stream::StreamValue>),
    VSet(Box<crate::storage::vset::VectorSet>),
}

struct Reader<'a> {
    p: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.p.len() < n {
            return None;
        }
        let (a, b) = self.p.split_at(n);
        self.p = b;
        Some(a)
    }
    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    /// A length, or `Err(enc)` for a special string encoding.
    fn len_or_enc(&mut self) -> Option<Result<usize, u8>> {
        let b = self.byte()?;
        Some(match b >> 6 {
            0 => Ok((b & 0x3f) as usize),
            1 => Ok((((b & 0x3f) as usize) << 8) | self.byte()? as usize),
            2 => match b {
                0x80 => Ok(u32::from_be_bytes(self.take(4)?.try_into().ok()?) as usize),
                0x81 => Ok(u64::from_be_bytes(self.take(8)?.try_into().ok()?) as usize),
                _ => return None,
            },
            _ => Err(b & 0x3f),
        })
    }
    fn len(&mut self) -> Option<usize> {
        self.len_or_enc()?.ok()
    }
    fn string(&mut self) -> Option<Bytes> {
        match self.len_or_enc()? {
            Ok(n) => Some(Bytes::copy_from_slice(self.take(n)?)),
            Err(0) => Some(int_bytes(self.byte()? as i8 as i64)),
            Err(1) => Some(int_bytes(
                i16::from_le_bytes(self.take(2)?.try_into().ok()?) as i64,
            )),
            Err(2) => Some(int_bytes(
                i32::from_le_bytes(self.take(4)?.try_into().ok()?) as i64,
            )),
            Err(3) => {
                let clen = self.len()?;
                let len = self.len()?;
                let data = self.take(clen)?;
                lzf_decompress(data, len).map(Bytes::from)
            }
            Err(_) => None,
        }
    }
}

fn int_bytes(n: i64) -> Bytes {
    Bytes::from(n.to_string())
}

/// LZF decompression (the format Redis uses for compressed RDB strings).
fn lzf_decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    // Each 2 or 3 input bytes make at most 264 output bytes: a larger length is a corrupt
    // header, refused before it becomes an allocation (an RDB file's lengths are 64-bit).
    if out_len > input.len().saturating_mul(132) {
        return None;
    }
    let mut out = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            out.extend_from_slice(input.get(i..i + n)?);
            i += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i)? as usize;
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(back)?;
            for k in 0..len + 2 {
                let b = out[start + k];
                out.push(b);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

/// The entries of a listpack blob, as strings.
fn listpack_entries(lp: &[u8]) -> Option<Vec<Bytes>> {
    let mut p = lp.get(6..)?;
    let mut out = Vec::new();
    loop {
        let b = *p.first()?;
        if b == 0xff {
            return Some(out);
        }
        let (val, used): (Bytes, usize) = if b & 0x80 == 0 {
            (int_bytes((b & 0x7f) as i64), 1)
        } else if b & 0xc0 == 0x80 {
            let n = (b & 0x3f) as usize;
            (Bytes::copy_from_slice(p.get(1..1 + n)?), 1 + n)
        } else if b & 0xe0 == 0xc0 {
            let raw = (((b & 0x1f) as u16) << 8) | *p.get(1)? as u16;
            // 13-bit two's complement.
            let v = if raw >= 1 << 12 {
                raw as i64 - (1 << 13)
            } else {
                raw as i64
            };
            (int_bytes(v), 2)
        } else if b & 0xf0 == 0xe0 {
            let n = (((b & 0x0f) as usize) << 8) | *p.get(1)? as usize;
            (Bytes::copy_from_slice(p.get(2..2 + n)?), 2 + n)
        } else {
            match b {
                0xf0 => {
                    let n = u32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as usize;
                    (Bytes::copy_from_slice(p.get(5..5 + n)?), 5 + n)
                }
                0xf1 => (
                    int_bytes(i16::from_le_bytes(p.get(1..3)?.try_into().ok()?) as i64),
                    3,
                ),
                0xf2 => {
                    let s = p.get(1..4)?;
                    let v =
                        ((s[0] as i32) | ((s[1] as i32) << 8) | ((s[2] as i32) << 16)) << 8 >> 8;
                    (int_bytes(v as i64), 4)
                }
                0xf3 => (
                    int_bytes(i32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as i64),
                    5,
                ),
                0xf4 => (
                    int_bytes(i64::from_le_bytes(p.get(1..9)?.try_into().ok()?)),
                    9,
                ),
                _ => return None,
            }
        };
        let backlen = match used {
            0..=127 => 1,
            128..=16383 => 2,
            16384..=2097151 => 3,
            2097152..=268435455 => 4,
            _ => 5,
        };
        p = p.get(used + backlen..)?;
        out.push(val);
    }
}

/// Parses a payload whose footer [`verify`] accepted. `None` means "Bad data format".
/// `ver` is the personality's RDB version: RESTORE takes the types that version knows.
pub fn load(p: &[u8], ver: u16) -> Option<Loaded> {
    let mut r = Reader {
        p: &p[..p.len() - 10],
    };
    let t = r.byte()?;
    let newest = match ver {
        ..=10 => stream::T_STREAM_LISTPACKS_2,
        11 => stream::T_STREAM_LISTPACKS_3,
        VALKEY_RDB_VERSION.. => T_VALKEY_HASH_2,
        _ => T_HASH_LISTPACK_EX,
    };
    if t > newest {
        return None;
    }
    let v = if ver >= VALKEY_RDB_VERSION && t == T_VALKEY_HASH_2 {
        load_valkey_hash(&mut r)?
    } else {
        load_value(&mut r, t)?
    };
    r.p.is_empty().then_some(v)
}

/// Whether `rest` (what follows RDB type byte `t` in a file: the key, then the value) is
/// a module value Tumbler wrote itself (a vector set), which it loads.
pub(super) fn own_module_value(t: u8, rest: &[u8]) -> bool {
    let mut r = Reader { p: rest };
    t == T_MODULE_2 && r.string().is_some() && r.len().map(|id| id as u64) == Some(vset_module_id())
}

/// Valkey 9's hash with field TTLs (RDB type 22 in a Valkey file or payload).
fn load_valkey_hash(r: &mut Reader) -> Option<Loaded> {
    let n = r.len()?;
    let mut v = Vec::new();
    for _ in 0..n {
        let (f, x) = (r.string()?, r.string()?);
        let t = i64::from_le_bytes(r.take(8)?.try_into().ok()?);
        v.push((f, x, if t < 0 { NO_TTL } else { t }));
    }
    Some(Loaded::HashTtl(v, false))
}

/// The largest field deadline Redis loads (`EB_EXPIRE_TIME_MAX`).
const HFE_MAX: i64 = (1 << 48) - 1;

/// Reads one value of RDB type `t` (the type byte already taken). `valkey_file`: a type
/// 22 is Valkey's hash layout.
fn load_value_in(r: &mut Reader, t: u8, valkey_file: bool) -> Option<Loaded> {
    if valkey_file && t == T_VALKEY_HASH_2 {
        return load_valkey_hash(r);
    }
    load_value(r, t)
}

/// Reads one value of RDB type `t` (the type byte already taken).
fn load_value(r: &mut Reader, t: u8) -> Option<Loaded> {
    Some(match t {
        T_HASH_METADATA | T_HASH_METADATA_PRE_GA => {
            let min = if t == T_HASH_METADATA {
                i64::from_le_bytes(r.take(8)?.try_into().ok()?)
            } else {
                0
            };
            let n = r.len()?;
            let mut v = Vec::new();
            for _ in 0..n {
                let ttl = r.len()? as i64;
                let at = match (t, ttl) {
                    (_, 0) => NO_TTL,
                    (T_HASH_METADATA, x) => x.checked_add(min)?.checked_sub(1)?,
                    (_, x) => x,
                };
                if !(0..=HFE_MAX).contains(&at) {
                    return None;
                }
                v.push((r.string()?, r.string()?, at));
            }
            Loaded::HashTtl(v, false)
        }
        T_HASH_LISTPACK_EX | T_HASH_LISTPACK_EX_PRE_GA => {
            if t == T_HASH_LISTPACK_EX {
                r.take(8)?;
            }
            let e = listpack_entries(&r.string()?)?;
            if e.len() % 3 != 0 {
                return None;
            }
            let mut v = Vec::new();
            for c in e.chunks(3) {
                let at = crate::num::parse_i64(&c[2])?;
                if !(0..=HFE_MAX).contains(&at) {
                    return None;
                }
                v.push((c[0].clone(), c[1].clone(), at));
            }
            Loaded::HashTtl(v, true)
        }
        T_STRING => Loaded::Str(r.string()?),
        T_LIST => {
            let n = r.len()?;
            let mut l = VecDeque::new();
            for _ in 0..n {
                l.push_back(r.string()?);
            }
            Loaded::List(l)
        }
        T_SET => {
            let n = r.len()?;
            Loaded::Set(
                (0..n).map(|_| r.string()).collect::<Option<_>>()?,
                SetEncoding::Hashtable,
            )
        }
        T_HASH => {
            let n = r.len()?;
            let mut v = Vec::new();
            for _ in 0..n {
                v.push((r.string()?, r.string()?));
            }
            Loaded::Hash(v)
        }
        T_SET_INTSET => {
            let blob = r.string()?;
            let enc = u32::from_le_bytes(blob.get(0..4)?.try_into().ok()?) as usize;
            let n = u32::from_le_bytes(blob.get(4..8)?.try_into().ok()?) as usize;
            let mut v = Vec::new();
            for i in 0..n {
                let s = blob.get(8 + i * enc..8 + (i + 1) * enc)?;
                let x = match enc {
                    2 => i16::from_le_bytes(s.try_into().ok()?) as i64,
                    4 => i32::from_le_bytes(s.try_into().ok()?) as i64,
                    8 => i64::from_le_bytes(s.try_into().ok()?),
                    _ => return None,
                };
                v.push(int_bytes(x));
            }
            Loaded::Set(v, SetEncoding::Intset)
        }
        T_HASH_LISTPACK => {
            let e = listpack_entries(&r.string()?)?;
            if e.len() % 2 != 0 {
                return None;
            }
            Loaded::Hash(e.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect())
        }
        T_ZSET_2 => {
            let n = r.len()?;
            let mut v = Vec::new();
            for _ in 0..n {
                let m = r.string()?;
                let d = f64::from_le_bytes(r.take(8)?.try_into().ok()?);
                if d.is_nan() {
                    return None;
                }
                v.push((m, d));
            }
            Loaded::ZSet(v)
        }
        T_ZSET_LISTPACK => {
            let e = listpack_entries(&r.string()?)?;
            if e.len() % 2 != 0 {
                return None;
            }
            let mut v = Vec::new();
            for c in e.chunks(2) {
                let d = crate::num::parse_f64(&c[1])?;
                v.push((c[0].clone(), d));
            }
            Loaded::ZSet(v)
        }
        T_LIST_QUICKLIST_2 => {
            let nodes = r.len()?;
            let mut l = VecDeque::new();
            for _ in 0..nodes {
                let container = r.len()?;
                let blob = r.string()?;
                match container {
                    1 => l.push_back(blob),
                    2 => l.extend(listpack_entries(&blob)?),
                    _ => return None,
                }
            }
            Loaded::List(l)
        }
        stream::T_STREAM_LISTPACKS
        | stream::T_STREAM_LISTPACKS_2
        | stream::T_STREAM_LISTPACKS_3 => Loaded::Stream(Box::new(stream::load(r, t)?)),
        T_SET_LISTPACK => Loaded::Set(listpack_entries(&r.string()?)?, SetEncoding::Listpack),
        T_ZSET => {
            let n = r.len()?;
            let mut v = Vec::new();
            for _ in 0..n {
                let m = r.string()?;
                let d = old_double(r)?;
                v.push((m, d));
            }
            Loaded::ZSet(v)
        }
        T_LIST_QUICKLIST => {
            let nodes = r.len()?;
            let mut l = VecDeque::new();
            for _ in 0..nodes {
                l.extend(ziplist_entries(&r.string()?)?);
            }
            Loaded::List(l)
        }
        T_LIST_ZIPLIST => Loaded::List(ziplist_entries(&r.string()?)?.into()),
        T_ZSET_ZIPLIST => {
            let e = ziplist_entries(&r.string()?)?;
            if e.len() % 2 != 0 {
                return None;
            }
            let mut v = Vec::new();
            for c in e.chunks(2) {
                v.push((c[0].clone(), crate::num::parse_f64(&c[1])?));
            }
            Loaded::ZSet(v)
        }
        T_HASH_ZIPLIST => {
            let e = ziplist_entries(&r.string()?)?;
            if e.len() % 2 != 0 {
                return None;
            }
            Loaded::Hash(e.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect())
        }
        T_HASH_ZIPMAP => Loaded::Hash(zipmap_entries(&r.string()?)?),
        T_MODULE_2 => {
            if r.len()? as u64 != vset_module_id() {
                return None;
            }
            let body = r.string()?;
            if r.len()? != 0 {
                return None;
            }
            Loaded::VSet(Box::new(crate::storage::vset::VectorSet::deserialize(
                &body,
            )?))
        }
        _ => return None,
    })
}

/// A score of the old ZSET type: a length byte then the number as text (253 NaN, 254 +inf,
/// 255 -inf).
fn old_double(r: &mut Reader) -> Option<f64> {
    match r.byte()? {
        253 => None,
        254 => Some(f64::INFINITY),
        255 => Some(f64::NEG_INFINITY),
        n => {
            let s = r.take(n as usize)?;
            std::str::from_utf8(s).ok()?.parse().ok()
        }
    }
}

/// The entries of a ziplist blob (Redis before 7.0), as strings.
fn ziplist_entries(z: &[u8]) -> Option<Vec<Bytes>> {
    let mut p = z.get(10..)?;
    let mut out = Vec::new();
    loop {
        let prev = *p.first()?;
        if prev == 0xff {
            return Some(out);
        }
        p = p.get(if prev == 0xfe { 5 } else { 1 }..)?;
        let b = *p.first()?;
        let (val, used): (Bytes, usize) = match b >> 6 {
            0 => {
                let n = (b & 0x3f) as usize;
                (Bytes::copy_from_slice(p.get(1..1 + n)?), 1 + n)
            }
            1 => {
                let n = (((b & 0x3f) as usize) << 8) | *p.get(1)? as usize;
                (Bytes::copy_from_slice(p.get(2..2 + n)?), 2 + n)
            }
            2 => {
                let n = u32::from_be_bytes(p.get(1..5)?.try_into().ok()?) as usize;
                (Bytes::copy_from_slice(p.get(5..5 + n)?), 5 + n)
            }
            _ => match b {
                0xc0 => (
                    int_bytes(i16::from_le_bytes(p.get(1..3)?.try_into().ok()?) as i64),
                    3,
                ),
                0xd0 => (
                    int_bytes(i32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as i64),
                    5,
                ),
                0xe0 => (
                    int_bytes(i64::from_le_bytes(p.get(1..9)?.try_into().ok()?)),
                    9,
                ),
                0xf0 => {
                    let s = p.get(1..4)?;
                    let v =
                        ((s[0] as i32) | ((s[1] as i32) << 8) | ((s[2] as i32) << 16)) << 8 >> 8;
                    (int_bytes(v as i64), 4)
                }
                0xfe => (int_bytes(*p.get(1)? as i8 as i64), 2),
                0xf1..=0xfd => (int_bytes((b & 0x0f) as i64 - 1), 1),
                _ => return None,
            },
        };
        p = p.get(used..)?;
        out.push(val);
    }
}

/// The field-value pairs of a zipmap blob (Redis before 2.6).
fn zipmap_entries(z: &[u8]) -> Option<Vec<(Bytes, Bytes)>> {
    let mut p = z.get(1..)?;
    let mut out = Vec::new();
    let len = |p: &mut &[u8]| -> Option<usize> {
        let b = *p.first()?;
        if b < 254 {
            *p = &p[1..];
            Some(b as usize)
        } else if b == 254 {
            let n = u32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as usize;
            *p = &p[5..];
            Some(n)
        } else {
            None
        }
    };
    loop {
        if *p.first()? == 0xff {
            return Some(out);
        }
        let n = len(&mut p)?;
        let f = Bytes::copy_from_slice(p.get(..n)?);
        p = &p[n..];
        let n = len(&mut p)?;
        let free = *p.first()? as usize;
        p = &p[1..];
        let v = Bytes::copy_from_slice(p.get(..n)?);
        p = p.get(n + free..)?;
        out.push((f, v));
    }
}

/// Builds the stored value, choosing encodings with the current limits as Redis does.
pub fn to_value(l: Loaded, cfg: &crate::storage::config::EngineConfig) -> Option<Value> {
    let (hash_max_entries, hash_max_value) =
        (cfg.hash_max_listpack_entries, cfg.hash_max_listpack_value);
    Some(match l {
        Loaded::Str(s) => Value::Str(crate::storage::value::StrVal::from(s)),
        Loaded::List(l) => Value::List(crate::storage::qlist::ListValue::from_items(
            cfg.list_max_listpack_size,
            l,
        )),
        Loaded::Set(v, enc) => Value::Set(load_set(v, enc, &SetLimits::of(cfg))?),
        Loaded::Hash(pairs) => {
            let mut h = HashValue::default();
            if pairs.len() > hash_max_entries
                || pairs
                    .iter()
                    .any(|(f, v)| f.len() > hash_max_value || v.len() > hash_max_value)
            {
                h.convert();
            }
            for (f, v) in pairs {
                // A duplicate field means a corrupt payload, as Redis' loader decides.
                if !h.set(&f, &v, usize::MAX, usize::MAX) {
                    return None;
                }
            }
            Value::Hash(h)
        }
        Loaded::HashTtl(items, lp) => {
            if items.is_empty() {
                return Some(Value::Hash(HashValue::default()));
            }
            let valkey = cfg.personality.is_valkey();
            let listpackex = !valkey
                && items.len() <= hash_max_entries
                && (lp
                    || !items
                        .iter()
                        .any(|(f, v, _)| f.len() > hash_max_value || v.len() > hash_max_value));
            let h = HashValue::with_ttls(items, listpackex, !lp)?;
            Value::Hash(h)
        }
        Loaded::ZSet(v) => {
            let big = v.len() > cfg.zset_max_listpack_entries
                || v.iter().any(|(m, _)| m.len() > cfg.zset_max_listpack_value);
            let mut z = if big {
                crate::storage::zset::ZSet::new_big()
            } else {
                crate::storage::zset::ZSet::default()
            };
            for (m, d) in v {
                // A duplicate member means a corrupt payload.
                if z.insert(m, d).is_some() {
                    return None;
                }
            }
            Value::ZSet(z)
        }
        Loaded::Stream(s) => Value::Stream(s),
        Loaded::VSet(v) => Value::VSet(v),
    })
}

/// A loaded set in the encoding Redis' `rdbLoadObject` gives it. From an intset payload:
/// an intset, a hashtable past `set-max-intset-entries`. From a listpack payload: a
/// listpack in its order, a hashtable past `set-max-listpack-entries`. From the table
/// layout: an intset while the members are integers (a hashtable straight away if there are
/// more than `set-max-intset-entries`); at the first other member a listpack (the integers
/// so far in numeric order, then the rest in the payload's order) while it has fewer than
/// `set-max-listpack-entries` members and none so far is longer than
/// `set-max-listpack-value`; else a hashtable. `None` for a duplicate member (a corrupt
/// payload, as Redis' loader decides).
fn load_set(v: Vec<Bytes>, enc: SetEncoding, lim: &SetLimits) -> Option<SetValue> {
    let n = v.len();
    let unlimited = SetLimits {
        max_intset: usize::MAX,
        max_listpack_entries: usize::MAX,
        max_listpack_value: usize::MAX,
        listpack: true,
    };
    let mut s = match enc {
        SetEncoding::Intset => SetValue::default(),
        SetEncoding::Listpack => SetValue::new_listpack(),
        SetEncoding::Hashtable if n > lim.max_intset => {
            let mut s = SetValue::new_listpack();
            s.to_table(n);
            s
        }
        SetEncoding::Hashtable => SetValue::default(),
    };
    if enc != SetEncoding::Hashtable {
        for m in &v {
            if !s.add(m, &unlimited) {
                return None;
            }
        }
        let over = match enc {
            SetEncoding::Intset => n > lim.max_intset,
            _ => n > lim.max_listpack_entries,
        };
        if over {
            s.to_table(n);
        }
        return Some(s);
    }
    let mut widest = 0;
    for m in &v {
        widest = widest.max(m.len());
        if s.is_intset() && crate::num::parse_i64(m).is_none() {
            if s.len() < lim.max_listpack_entries && widest <= lim.max_listpack_value {
                s.add(m, &unlimited);
                continue;
            }
            s.to_table(n);
        }
        if s.is_listpack()
            && (s.len() >= lim.max_listpack_entries || m.len() > lim.max_listpack_value)
        {
            s.to_table(n);
        }
        if !s.add(m, &unlimited) {
            return None;
        }
    }
    Some(s)
}

/// Appends `s` as a plain RDB string (length, then the bytes); FUNCTION DUMP's records.
pub fn put_raw_string(out: &mut Vec<u8>, s: &[u8]) {
    put_len(out, s.len());
    out.extend_from_slice(s);
}

/// Reads one RDB string (plain, int-encoded or LZF) from the front of `p` and advances
/// it; FUNCTION RESTORE's records.
pub fn take_string(p: &mut &[u8]) -> Option<Bytes> {
    let mut r = Reader { p };
    let s = r.string()?;
    *p = r.p;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::value::StrVal;

    /// A compressed string's header names its length; one no input could produce is refused
    /// instead of becoming an allocation that aborts the server (RESTORE and RDB files).
    #[test]
    fn lzf_refuses_a_length_its_input_cannot_produce() {
        assert_eq!(lzf_decompress(&[0, b'a'], usize::MAX), None);
        assert_eq!(lzf_decompress(&[0, b'a'], 1 << 40), None);
        assert_eq!(lzf_decompress(&[0, b'a'], 1), Some(b"a".to_vec()));
    }

    #[test]
    fn crc64_matches_redis_test_vector() {
        // Redis' own check value (src/crc64.c, `crc64Test`).
        assert_eq!(crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
        assert_eq!(crc64(b""), 0);
    }

    /// Payloads redis-server 7.0.15 wrote (`DUMP`): Tumbler writes the same bytes, footer
    /// and CRC included, and accepts them. The list is longer than one 16-byte table step.
    #[test]
    fn dump_matches_payloads_redis_wrote() {
        let hex = |s: &str| -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let string = hex("000568656c6c6f0a006372df766534200a");
        let list =
            hex("1201021717000000060081610281620281630201010201c12c02ff0a00565035a576f978fe");
        for p in [&string, &list] {
            assert!(verify(p, 10));
            let n = p.len();
            assert_eq!(crc64(&p[..n - 8]).to_le_bytes(), p[n - 8..]);
        }
        assert_eq!(
            dump(&Value::Str(StrVal::from_slice(b"hello")), -2, 10).unwrap(),
            string
        );
    }

    #[test]
    fn round_trips_every_type_it_writes() {
        let mut h = HashValue::default();
        h.set(&Bytes::from("f"), &Bytes::from("x".repeat(20000)), 512, 64);
        h.set(&Bytes::from("n"), &Bytes::from("-70000"), 512, 64);
        let p = dump(&Value::Hash(h), -2, 10).unwrap();
        assert!(verify(&p, 10));
        let Some(Loaded::Hash(v)) = load(&p, 10) else {
            panic!("not a hash")
        };
        assert_eq!(v[1].1, Bytes::from("-70000"));
        assert_eq!(v[0].1.len(), 20000);
        let mut bad = p.clone();
        bad[3] ^= 1;
        assert!(!verify(&bad, 10));
    }

    /// A listpack set is written as RDB_TYPE_SET_LISTPACK in its order and loads back as
    /// one; the loader's limits decide the encoding as Redis' rdbLoadObject does.
    #[test]
    fn sets_round_trip_in_their_encodings() {
        let lim = SetLimits::REDIS_7_2;
        let mut s = SetValue::default();
        for m in ["7", "-3", "b", "100000", "a"] {
            s.add(m.as_bytes(), &lim);
        }
        assert!(s.is_listpack());
        let p = dump(&Value::Set(s.clone()), -2, 11).unwrap();
        assert_eq!(p[0], T_SET_LISTPACK);
        let cfg = crate::storage::config::EngineConfig::default();
        let Some(Value::Set(back)) = load(&p, 11).and_then(|l| to_value(l, &cfg)) else {
            panic!("not a set")
        };
        assert!(back.is_listpack());
        assert_eq!(back.ordered(), s.ordered());
        assert_eq!(back.ordered(), vec!["-3", "7", "b", "100000", "a"]);

        let table = |v: &[&str]| {
            Loaded::Set(
                v.iter().map(|m| Bytes::from(m.to_string())).collect(),
                SetEncoding::Hashtable,
            )
        };
        let enc = |l: Loaded, cfg: &crate::storage::config::EngineConfig| match to_value(l, cfg) {
            Some(Value::Set(s)) => Some((s.encoding_name(), s.ordered())),
            _ => None,
        };
        // From the table layout: integers first while it is an intset, then in order.
        assert_eq!(
            enc(table(&["5", "3", "a", "1"]), &cfg),
            Some((
                "listpack",
                vec!["3".into(), "5".into(), "a".into(), "1".into()]
            ))
        );
        assert_eq!(enc(table(&["5", "3"]), &cfg).unwrap().0, "intset");
        assert_eq!(enc(table(&["a", "a"]), &cfg), None);
        assert_eq!(
            enc(table(&["1", "x", &"y".repeat(65)]), &cfg).unwrap().0,
            "hashtable"
        );
        // Redis 7.0 has no listpack sets.
        let r70 = crate::storage::config::EngineConfig {
            personality: crate::personality::Personality::parse("redis-7.0").unwrap(),
            ..Default::default()
        };
        assert_eq!(enc(table(&["5", "3", "a"]), &r70).unwrap().0, "hashtable");
        let lp = Loaded::Set(vec![Bytes::from("a")], SetEncoding::Listpack);
        assert_eq!(enc(lp, &r70).unwrap().0, "hashtable");
    }

    #[test]
    fn lzf_compress_round_trips() {
        let mut x = 1u64;
        for len in [21usize, 64, 1000, 70_000] {
            let data: Vec<u8> = (0..len)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    if i % 7 < 4 {
                        b'a' + (i % 3) as u8
                    } else {
                        (x >> 60) as u8
                    }
                })
                .collect();
            match lzf_compress(&data, data.len() - 4) {
                Some(c) => assert_eq!(lzf_decompress(&c, data.len()).unwrap(), data),
                None => assert!(len < 1000, "{len} bytes with long runs did not compress"),
            }
        }
        // Incompressible input does not fit in len - 4.
        let noise: Vec<u8> = (0..100u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        assert!(lzf_compress(&noise, 96).is_none());
    }

    #[test]
    fn lzf_back_references() {
        // "aaaaaaaaaa": literal 'a', then a back reference of length 9 at distance 1.
        assert_eq!(
            lzf_decompress(&[0x00, b'a', 0xe0, 0x00, 0x00], 10).unwrap(),
            b"aaaaaaaaaa"
        );
    }
}
