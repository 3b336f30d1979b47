//! The DUMP/RESTORE payload: one value in Redis' RDB encoding, then the RDB version
//! (2 bytes, little endian) and a CRC-64 (Jones polynomial, as Redis' `crc64`) of all that
//! precedes it.
//!
//! Tumbler writes the plain RDB object types (string, list, set, hash), which redis-server
//! 7.0 loads, and reads those plus the compact forms redis-server 7.0 writes for small
//! values (int-encoded and LZF strings, intset, listpack hash, quicklist of listpacks), so
//! a payload DUMPed by redis-server RESTOREs here. Sorted sets are not serialized.

use bytes::Bytes;
use std::collections::VecDeque;

use crate::value::{HashValue, SetValue, Value};

/// Redis 7.0's RDB version.
pub const RDB_VERSION: u16 = 10;

const T_STRING: u8 = 0;
const T_LIST: u8 = 1;
const T_SET: u8 = 2;
const T_HASH: u8 = 4;
const T_SET_INTSET: u8 = 11;
const T_HASH_LISTPACK: u8 = 16;
const T_LIST_QUICKLIST_2: u8 = 18;

/// CRC-64/Jones as Redis computes it (reflected, init 0, no final xor).
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
        }
    }
    crc
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

/// A string, int-encoded when Redis would (short decimal integers that round-trip).
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(n) = crate::num::parse_i64(s) {
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
    put_len(out, s.len());
    out.extend_from_slice(s);
}

/// The DUMP payload of `v`, or `None` for a type Tumbler does not serialize.
pub fn dump(v: &Value) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match v {
        Value::Str(s) => {
            out.push(T_STRING);
            put_string(&mut out, s);
        }
        Value::List(l) => {
            out.push(T_LIST);
            put_len(&mut out, l.len());
            for e in l.iter() {
                put_string(&mut out, e);
            }
        }
        Value::Set(s) => {
            out.push(T_SET);
            put_len(&mut out, s.members.len());
            for m in s.ordered() {
                put_string(&mut out, &m);
            }
        }
        Value::Hash(h) => {
            out.push(T_HASH);
            put_len(&mut out, h.len());
            for (f, v) in h.iter() {
                put_string(&mut out, f);
                put_string(&mut out, v);
            }
        }
        // Sorted sets, streams and Tumbler's own types (locks) are not serialized.
        Value::ZSet(_) | Value::Stream(_) | Value::Lock(_) => return None,
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    Some(out)
}

/// Checks the footer: a known RDB version and a matching CRC (0 means "not computed").
pub fn verify(p: &[u8]) -> bool {
    if p.len() < 10 {
        return false;
    }
    let n = p.len();
    let ver = u16::from_le_bytes([p[n - 10], p[n - 9]]);
    if ver > RDB_VERSION {
        return false;
    }
    let crc = u64::from_le_bytes(p[n - 8..].try_into().unwrap());
    crc == 0 || crc == crc64(0, &p[..n - 8])
}

/// What RESTORE builds from a payload, before encodings are chosen.
pub enum Loaded {
    Str(Bytes),
    List(VecDeque<Bytes>),
    Set(Vec<Bytes>),
    Hash(Vec<(Bytes, Bytes)>),
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
pub fn load(p: &[u8]) -> Option<Loaded> {
    let mut r = Reader {
        p: &p[..p.len() - 10],
    };
    let t = r.byte()?;
    let v = match t {
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
            Loaded::Set((0..n).map(|_| r.string()).collect::<Option<_>>()?)
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
            Loaded::Set(v)
        }
        T_HASH_LISTPACK => {
            let e = listpack_entries(&r.string()?)?;
            if e.len() % 2 != 0 {
                return None;
            }
            Loaded::Hash(e.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect())
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
        _ => return None,
    };
    r.p.is_empty().then_some(v)
}

/// Builds the stored value, choosing encodings with the current limits as Redis does.
pub fn to_value(l: Loaded, hash_max_entries: usize, hash_max_value: usize) -> Option<Value> {
    Some(match l {
        Loaded::Str(s) => Value::Str(s),
        Loaded::List(l) => Value::List(Box::new(l)),
        Loaded::Set(v) => {
            let mut s = SetValue::default();
            for m in v {
                if crate::num::parse_i64(&m).is_none() {
                    s.intset = false;
                }
                s.members.insert(m);
            }
            if s.members.len() > 512 {
                s.intset = false;
            }
            Value::Set(Box::new(s))
        }
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
    })
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

    #[test]
    fn crc64_matches_redis_test_vector() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6d914c4b8d9ca);
    }

    #[test]
    fn round_trips_every_type_it_writes() {
        let mut h = HashValue::default();
        h.set(&Bytes::from("f"), &Bytes::from("x".repeat(20000)), 512, 64);
        h.set(&Bytes::from("n"), &Bytes::from("-70000"), 512, 64);
        let p = dump(&Value::Hash(h)).unwrap();
        assert!(verify(&p));
        let Some(Loaded::Hash(v)) = load(&p) else {
            panic!("not a hash")
        };
        assert_eq!(v[1].1, Bytes::from("-70000"));
        assert_eq!(v[0].1.len(), 20000);
        let mut bad = p.clone();
        bad[3] ^= 1;
        assert!(!verify(&bad));
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
