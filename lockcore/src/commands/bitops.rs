//! Bitmap commands on strings (SETBIT and GETBIT live with the strings): BITCOUNT, BITPOS
//! with BYTE/BIT ranges, BITOP, BITFIELD and BITFIELD_RO with Redis' overflow modes, all
//! following Redis 7.0's bitops.c (argument order of checks, error texts, events).

use bytes::Bytes;

use crate::commands::strings::{get_string, put_string, take_string};
use crate::engine::spec::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error;
use crate::num::parse_i64;
use crate::reply::Reply;
use crate::storage::notify;
use crate::storage::value::Value;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: crate::engine::spec::Handler,
) -> CommandSpec {
    crate::engine::spec::engine("bitmap", &["bitmap"], name, arity, flags, keys, h)
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("bitcount", -2, READONLY, KEY1, bitcount),
    cmd("bitpos", -3, READONLY, KEY1, bitpos),
    cmd(
        "bitop",
        -4,
        WRITE | DENYOOM,
        Keys::Range {
            first: 2,
            last: -1,
            step: 1,
        },
        bitop,
    ),
    cmd("bitfield", -2, WRITE | DENYOOM, KEY1, bitfield),
    cmd("bitfield_ro", -2, READONLY | FAST, KEY1, bitfield_ro),
];

/// The bits of `s` from bit `from` to bit `to` (inclusive, MSB first in each byte).
fn bit(s: &[u8], i: u64) -> bool {
    s[(i >> 3) as usize] & (0x80 >> (i & 7)) != 0
}

/// Resolves `start end [BYTE|BIT]` as BITCOUNT/BITPOS do, to an inclusive bit range
/// within `len` bytes, or `None` when the range is empty.
fn bit_range(len: usize, start: i64, end: i64, isbit: bool) -> Option<(u64, u64)> {
    let total = if isbit { (len as i64) << 3 } else { len as i64 };
    let fix = |v: i64| if v < 0 { (total + v).max(0) } else { v };
    let (start, end) = (fix(start), fix(end).min(total - 1));
    if start > end {
        return None;
    }
    Some(if isbit {
        (start as u64, end as u64)
    } else {
        ((start as u64) << 3, ((end as u64) << 3) + 7)
    })
}

fn parse_unit(v: &[u8]) -> Result<bool, Reply> {
    if v.eq_ignore_ascii_case(b"bit") {
        Ok(true)
    } else if v.eq_ignore_ascii_case(b"byte") {
        Ok(false)
    } else {
        Err(error::syntax())
    }
}

fn bitcount(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let s = match get_string(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    let range = match a.len() {
        2 => bit_range(s.len(), 0, -1, false),
        4 | 5 => {
            let (Some(start), Some(end)) = (parse_i64(&a[2]), parse_i64(&a[3])) else {
                return error::not_integer();
            };
            if start < 0 && end < 0 && start > end {
                return Reply::Int(0);
            }
            let isbit = match a.get(4).map(|u| parse_unit(u)).transpose() {
                Ok(b) => b.unwrap_or(false),
                Err(e) => return e,
            };
            bit_range(s.len(), start, end, isbit)
        }
        _ => return error::syntax(),
    };
    let Some((from, to)) = range else {
        return Reply::Int(0);
    };
    // Whole bytes by popcount, the partial edge bytes bit by bit.
    let (fb, lb) = ((from >> 3) as usize, (to >> 3) as usize);
    let mut n: u64 = s[fb..=lb].iter().map(|b| b.count_ones() as u64).sum();
    n -= (fb as u64 * 8..from).filter(|&i| bit(&s, i)).count() as u64;
    n -= (to + 1..(lb as u64 + 1) * 8)
        .filter(|&i| bit(&s, i))
        .count() as u64;
    Reply::Int(n as i64)
}

fn bitpos(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let want = match parse_i64(&a[2]) {
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return Reply::err("ERR The bit argument must be 1 or 0."),
        None => return error::not_integer(),
    };
    let s = match get_string(ctx, &a[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::Int(if want { -1 } else { 0 }),
        Err(e) => return e,
    };
    let mut end_given = false;
    let range = match a.len() {
        3 => bit_range(s.len(), 0, -1, false),
        4..=6 => {
            let Some(start) = parse_i64(&a[3]) else {
                return error::not_integer();
            };
            let isbit = match a.get(5).map(|u| parse_unit(u)).transpose() {
                Ok(b) => b.unwrap_or(false),
                Err(e) => return e,
            };
            let end = match a.get(4) {
                Some(e) => match parse_i64(e) {
                    Some(e) => {
                        end_given = true;
                        e
                    }
                    None => return error::not_integer(),
                },
                None => -1,
            };
            bit_range(s.len(), start, end, isbit)
        }
        _ => return error::syntax(),
    };
    let Some((from, to)) = range else {
        return Reply::Int(-1);
    };
    match (from..=to).find(|&i| bit(&s, i) == want) {
        Some(i) => Reply::Int(i as i64),
        // Looking for a clear bit past the end of the string finds the padding, unless the
        // caller gave an explicit end.
        None if !want && !end_given => Reply::Int((((to >> 3) + 1) << 3) as i64),
        None => Reply::Int(-1),
    }
}

fn bitop(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    #[derive(PartialEq)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
    }
    let op = match a[1].to_ascii_lowercase().as_slice() {
        b"and" => Op::And,
        b"or" => Op::Or,
        b"xor" => Op::Xor,
        b"not" => Op::Not,
        _ => return error::syntax(),
    };
    if op == Op::Not && a.len() != 4 {
        return Reply::err("ERR BITOP NOT must be called with a single source key.");
    }
    let mut srcs = Vec::with_capacity(a.len() - 3);
    for k in &a[3..] {
        match get_string(ctx, k) {
            Ok(s) => srcs.push(s.unwrap_or_default()),
            Err(e) => return e,
        }
    }
    let maxlen = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
    let dst = &a[2];
    let db = ctx.dbi();
    if maxlen == 0 {
        if ctx.write(dst).is_some() {
            crate::engine::delete_key(ctx.eng, db, dst);
        }
        return Reply::Int(0);
    }
    let byte = |s: &Bytes, j: usize| s.get(j).copied().unwrap_or(0);
    let res: Vec<u8> = (0..maxlen)
        .map(|j| {
            let first = byte(&srcs[0], j);
            srcs[1..].iter().fold(
                if op == Op::Not { !first } else { first },
                |acc, s| match op {
                    Op::And => acc & byte(s, j),
                    Op::Or => acc | byte(s, j),
                    Op::Xor => acc ^ byte(s, j),
                    Op::Not => acc,
                },
            )
        })
        .collect();
    ctx.write(dst);
    crate::engine::store(
        ctx.eng,
        db,
        dst.clone(),
        Value::Str(crate::storage::value::StrVal::from(res)),
        None,
    );
    ctx.db().set_raw(dst);
    ctx.modified(dst, notify::STRING, "set");
    Reply::Int(maxlen as i64)
}

// ---------------------------------------------------------------- BITFIELD

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq)]
enum FieldOp {
    Get,
    Set,
    IncrBy,
}

struct Field {
    op: FieldOp,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

const TYPE_ERR: &str = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// `i1`..`i64` or `u1`..`u63` (lowercase only, as in Redis).
fn parse_type(v: &[u8]) -> Result<(bool, u32), Reply> {
    let signed = match v.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(Reply::err(TYPE_ERR)),
    };
    match parse_i64(&v[1..]) {
        Some(b) if b >= 1 && b <= if signed { 64 } else { 63 } => Ok((signed, b as u32)),
        _ => Err(Reply::err(TYPE_ERR)),
    }
}

/// A bitfield offset: a bit number, or `#n` for the n-th field of the type's width.
fn parse_offset(ctx: &Ctx, v: &[u8], bits: u32) -> Result<u64, Reply> {
    let err = || Reply::err("ERR bit offset is not an integer or out of range");
    let (hash, digits) = match v.first() {
        Some(b'#') => (true, &v[1..]),
        _ => (false, v),
    };
    let mut n = parse_i64(digits).ok_or_else(err)?;
    if hash {
        n = n.wrapping_mul(bits as i64);
    }
    if n < 0 || ((n as u64) >> 3) >= ctx.eng.config.proto_max_bulk_len as u64 {
        return Err(err());
    }
    Ok(n as u64)
}

fn get_field(s: &[u8], offset: u64, bits: u32) -> u64 {
    (0..bits as u64).fold(0u64, |v, j| {
        let i = offset + j;
        let b = s
            .get((i >> 3) as usize)
            .is_some_and(|b| b & (0x80 >> (i & 7)) != 0);
        (v << 1) | b as u64
    })
}

fn get_signed_field(s: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_field(s, offset, bits);
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        (v | (u64::MAX << bits)) as i64
    } else {
        v as i64
    }
}

fn set_field(s: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..bits as u64 {
        let i = offset + j;
        let mask = 0x80u8 >> (i & 7);
        let byte = &mut s[(i >> 3) as usize];
        if value >> (bits as u64 - 1 - j) & 1 != 0 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// Redis' checkUnsignedBitfieldOverflow: whether `value + incr` leaves `bits` bits, and the
/// wrapped or saturated result.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = value.wrapping_neg() as i64;
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX << bits);
    if value > max || (incr > 0 && incr > maxincr) {
        Some(if ow == Overflow::Wrap { wrap() } else { max })
    } else if incr < 0 && incr < minincr {
        Some(if ow == Overflow::Wrap { wrap() } else { 0 })
    } else {
        None
    }
}

/// Redis' checkSignedBitfieldOverflow.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        Some(if ow == Overflow::Wrap { wrap() } else { max })
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        Some(if ow == Overflow::Wrap { wrap() } else { min })
    } else {
        None
    }
}

fn parse_fields(ctx: &Ctx, a: &[Bytes]) -> Result<Vec<Field>, Reply> {
    let mut fields = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < a.len() {
        let rem = a.len() - j - 1;
        let sub = &a[j];
        let op = if sub.eq_ignore_ascii_case(b"get") && rem >= 2 {
            FieldOp::Get
        } else if sub.eq_ignore_ascii_case(b"set") && rem >= 3 {
            FieldOp::Set
        } else if sub.eq_ignore_ascii_case(b"incrby") && rem >= 3 {
            FieldOp::IncrBy
        } else if sub.eq_ignore_ascii_case(b"overflow") && rem >= 1 {
            let t = &a[j + 1];
            overflow = if t.eq_ignore_ascii_case(b"wrap") {
                Overflow::Wrap
            } else if t.eq_ignore_ascii_case(b"sat") {
                Overflow::Sat
            } else if t.eq_ignore_ascii_case(b"fail") {
                Overflow::Fail
            } else {
                return Err(Reply::err("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(error::syntax());
        };
        let (signed, bits) = parse_type(&a[j + 1])?;
        let offset = parse_offset(ctx, &a[j + 2], bits)?;
        let value = if op == FieldOp::Get {
            0
        } else {
            parse_i64(&a[j + 3]).ok_or_else(error::not_integer)?
        };
        fields.push(Field {
            op,
            signed,
            bits,
            offset,
            value,
            overflow,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    Ok(fields)
}

fn bitfield(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    bitfield_generic(ctx, a, false)
}

fn bitfield_ro(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    bitfield_generic(ctx, a, true)
}

fn bitfield_generic(ctx: &mut Ctx, a: &[Bytes], ro: bool) -> Reply {
    let fields = match parse_fields(ctx, a) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let writes: Vec<&Field> = fields.iter().filter(|f| f.op != FieldOp::Get).collect();
    if writes.is_empty() {
        let s = match get_string(ctx, &a[1]) {
            Ok(s) => s.unwrap_or_default(),
            Err(e) => return e,
        };
        return Reply::Array(fields.iter().map(|f| get_reply(&s, f)).collect());
    }
    if ro {
        return Reply::err("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let highest = writes
        .iter()
        .map(|f| f.offset + f.bits as u64 - 1)
        .max()
        .unwrap_or(0);
    let (mut s, grown) = match take_string(ctx, &a[1], (highest >> 3) as usize + 1) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let mut out = Vec::with_capacity(fields.len());
    // Writes that change the string (or any write, when it was created or grown) count
    // towards the dirty counter; none of them means no event either.
    let mut changes = 0u64;
    for f in &fields {
        if f.op == FieldOp::Get {
            out.push(get_reply(&s, f));
            continue;
        }
        let (reply, (new, ovf), old) = if f.signed {
            let old = get_signed_field(&s, f.offset, f.bits);
            let (new, ovf) = if f.op == FieldOp::IncrBy {
                match signed_overflow(old, f.value, f.bits, f.overflow) {
                    Some(w) => (w, true),
                    None => (old.wrapping_add(f.value), false),
                }
            } else {
                match signed_overflow(f.value, 0, f.bits, f.overflow) {
                    Some(w) => (w, true),
                    None => (f.value, false),
                }
            };
            let ret = if f.op == FieldOp::IncrBy { new } else { old };
            (ret, (new as u64, ovf), old as u64)
        } else {
            let old = get_field(&s, f.offset, f.bits);
            let (new, ovf) = if f.op == FieldOp::IncrBy {
                match unsigned_overflow(old, f.value, f.bits, f.overflow) {
                    Some(w) => (w, true),
                    None => (old.wrapping_add(f.value as u64), false),
                }
            } else {
                match unsigned_overflow(f.value as u64, 0, f.bits, f.overflow) {
                    Some(w) => (w, true),
                    None => (f.value as u64, false),
                }
            };
            let ret = if f.op == FieldOp::IncrBy { new } else { old };
            (ret as i64, (new, ovf), old)
        };
        if ovf && f.overflow == Overflow::Fail {
            out.push(Reply::Null);
        } else {
            out.push(Reply::Int(reply));
            set_field(&mut s, f.offset, f.bits, new);
            if grown || old != new {
                changes += 1;
            }
        }
    }
    put_string(ctx, &a[1], s);
    if changes > 0 {
        ctx.modified(&a[1], notify::STRING, "setbit");
        ctx.eng.stats.dirty += changes - 1;
    }
    Reply::Array(out)
}

fn get_reply(s: &[u8], f: &Field) -> Reply {
    Reply::Int(if f.signed {
        get_signed_field(s, f.offset, f.bits)
    } else {
        get_field(s, f.offset, f.bits) as i64
    })
}
