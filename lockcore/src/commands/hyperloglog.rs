//! HyperLogLog (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST) in Redis' exact string
//! representation, so an HLL written here reads in redis-server and the reverse:
//!
//! * a 16-byte header: `HYLL`, the encoding (0 dense, 1 sparse), three zero bytes and the
//!   cached cardinality (8 bytes little endian; the top bit of the last byte set means
//!   "stale");
//! * dense: 16384 registers of 6 bits, packed LSB first;
//! * sparse: run-length opcodes ZERO `00xxxxxx` (1-64 zero registers), XZERO
//!   `01xxxxxx yyyyyyyy` (1-16384 zero registers) and VAL `1vvvvvxx` (1-4 registers of value
//!   1-32), promoted to dense when a value above 32 is needed or the string would grow past
//!   `hll-sparse-max-bytes`.
//!
//! Elements hash with MurmurHash64A (seed 0xadc83b19): the low 14 bits pick the register,
//! the run of zeros above them (plus one) is the value. Cardinality uses Ertl's improved
//! estimator, as Redis 5+ does. Every step (the in-place sparse split and merge included)
//! follows Redis' hyperloglog.c so the bytes match, not only the counts.

use bytes::Bytes;

use crate::engine::spec::{flag::*, CommandSpec, Ctx, Keys, KEY1};
use crate::error;
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
    crate::engine::spec::engine("hyperloglog", &["hyperloglog"], name, arity, flags, keys, h)
}

const ALL_KEYS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("pfadd", -2, WRITE | DENYOOM | FAST, KEY1, pfadd),
    cmd("pfcount", -2, READONLY | MAY_REPLICATE, ALL_KEYS, pfcount),
    cmd("pfmerge", -2, WRITE | DENYOOM, ALL_KEYS, pfmerge),
    cmd(
        "pfdebug",
        3,
        WRITE | DENYOOM | ADMIN,
        Keys::Range {
            first: 2,
            last: 2,
            step: 1,
        },
        pfdebug,
    ),
    cmd("pfselftest", 1, ADMIN, Keys::None, pfselftest),
];

const P: u32 = 14;
const Q: u32 = 64 - P;
const REGISTERS: usize = 1 << P;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
const HDR: usize = 16;
const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;
const ALPHA_INF: f64 = 0.721347520444481703680;

const INVALID_HLL: &str = "INVALIDOBJ Corrupted HLL object detected";
const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";

/// MurmurHash64A, as Redis uses it for HyperLogLog (little-endian word reads).
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4a7935bd1e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().unwrap());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element goes to and the length of its "000..1" pattern.
fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, 0xadc83b19);
    let index = (hash as usize) & (REGISTERS - 1);
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ---------------------------------------------------------------- dense registers

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = regs[byte] as u32;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX as u32) as u8
}

fn dense_set(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = val as u32;
    regs[byte] &= !((REGISTER_MAX as u32) << fb) as u8;
    regs[byte] |= (v << fb) as u8;
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((REGISTER_MAX as u32) >> (8 - fb)) as u8;
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// Sets register `i` to `count` if that is larger. Returns whether it changed.
fn dense_update(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_set(regs, i, count);
        true
    } else {
        false
    }
}

// ---------------------------------------------------------------- sparse opcodes

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Zero(usize),
    XZero(usize),
    Val(u8, usize),
}

fn op_at(s: &[u8], p: usize) -> Op {
    let b = s[p];
    if b & 0xc0 == 0 {
        Op::Zero((b & 0x3f) as usize + 1)
    } else if b & 0xc0 == 0x40 {
        let lo = s.get(p + 1).copied().unwrap_or(0) as usize;
        Op::XZero((((b & 0x3f) as usize) << 8 | lo) + 1)
    } else {
        Op::Val(((b >> 2) & 0x1f) + 1, (b & 0x3) as usize + 1)
    }
}

impl Op {
    fn span(self) -> usize {
        match self {
            Op::Zero(n) | Op::XZero(n) | Op::Val(_, n) => n,
        }
    }
    fn bytes(self) -> usize {
        if matches!(self, Op::XZero(_)) {
            2
        } else {
            1
        }
    }
}

fn val_op(val: u8, len: usize) -> u8 {
    ((val - 1) << 2 | (len as u8 - 1)) | 0x80
}

/// The opcodes for a run of `len` zero registers (ZERO up to 64, else XZERO).
fn push_zeros(out: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        out.push((l >> 8) as u8 | 0x40);
        out.push((l & 0xff) as u8);
    } else {
        out.push(len as u8 - 1);
    }
}

/// Walks the sparse opcodes of `s` (header included) as (first register, opcode).
fn sparse_ops(s: &[u8]) -> impl Iterator<Item = (usize, Op)> + '_ {
    let mut p = HDR;
    let mut first = 0;
    std::iter::from_fn(move || {
        if p >= s.len() {
            return None;
        }
        let op = op_at(s, p);
        let at = first;
        p += op.bytes();
        first += op.span();
        Some((at, op))
    })
}

/// The 16384 registers of a sparse HLL, or `None` if the opcodes do not cover exactly
/// that many (a corrupted value).
fn sparse_registers(s: &[u8]) -> Option<Vec<u8>> {
    let mut regs = vec![0u8; REGISTERS];
    let mut idx = 0;
    for (_, op) in sparse_ops(s) {
        match op {
            Op::Zero(n) | Op::XZero(n) => idx += n,
            Op::Val(v, n) => {
                if idx + n > REGISTERS {
                    return None;
                }
                regs[idx..idx + n].fill(v);
                idx += n;
            }
        }
    }
    (idx == REGISTERS).then_some(regs)
}

/// A new, empty HLL: sparse, all registers in XZERO runs.
fn new_hll() -> Vec<u8> {
    let mut s = Vec::with_capacity(HDR + 2);
    s.extend_from_slice(b"HYLL");
    s.push(SPARSE);
    s.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(XZERO_MAX_LEN);
        push_zeros(&mut s, n);
        left -= n;
    }
    s
}

fn invalidate_cache(s: &mut [u8]) {
    s[15] |= 0x80;
}

/// Converts a sparse HLL to dense in place (keeping the header's cache bytes). Err on a
/// corrupted value.
fn to_dense(s: &mut Vec<u8>) -> Result<(), ()> {
    if s[4] == DENSE {
        return Ok(());
    }
    let regs = sparse_registers(s).ok_or(())?;
    let mut d = vec![0u8; DENSE_SIZE];
    d[..HDR].copy_from_slice(&s[..HDR]);
    d[4] = DENSE;
    for (i, &v) in regs.iter().enumerate() {
        if v != 0 {
            dense_set(&mut d[HDR..], i, v);
        }
    }
    *s = d;
    Ok(())
}

/// Redis' hllSparseSet: sets register `index` to `count` if larger, splitting the opcode
/// that covers it and merging equal neighbours, promoting to dense when needed.
/// Ok(true) if the register changed.
fn sparse_set(s: &mut Vec<u8>, index: usize, count: u8, max_bytes: usize) -> Result<bool, ()> {
    if count > VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    // Step 1: the opcode covering `index`.
    let mut p = HDR;
    let mut first = 0;
    let mut prev = None;
    let mut found = None;
    while p < s.len() {
        let op = op_at(s, p);
        if index < first + op.span() {
            found = Some(op);
            break;
        }
        prev = Some(p);
        p += op.bytes();
        first += op.span();
    }
    let Some(op) = found else {
        return Err(());
    };
    let span = op.span();
    // Step 2: the trivial cases, then the general split.
    match op {
        Op::Val(old, _) if old >= count => return Ok(false),
        Op::Val(_, 1) | Op::Zero(1) => s[p] = val_op(count, 1),
        _ => {
            let last = first + span - 1;
            let mut seq = Vec::with_capacity(5);
            match op {
                Op::Val(cur, _) => {
                    if index != first {
                        seq.push(val_op(cur, index - first));
                    }
                    seq.push(val_op(count, 1));
                    if index != last {
                        seq.push(val_op(cur, last - index));
                    }
                }
                _ => {
                    if index != first {
                        push_zeros(&mut seq, index - first);
                    }
                    seq.push(val_op(count, 1));
                    if index != last {
                        push_zeros(&mut seq, last - index);
                    }
                }
            }
            // Step 3: replace the old opcode by the sequence.
            let old_len = op.bytes();
            if seq.len() > old_len && s.len() + seq.len() - old_len > max_bytes {
                return promote(s, index, count);
            }
            s.splice(p..p + old_len, seq);
        }
    }
    // Step 4: merge adjacent VALs of the same value, scanning up to five opcodes from the
    // one before the change.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < s.len() && scan > 0 {
        scan -= 1;
        match op_at(s, p) {
            Op::XZero(_) => p += 2,
            Op::Zero(_) => p += 1,
            Op::Val(v1, l1) => {
                if p + 1 < s.len() {
                    if let Op::Val(v2, l2) = op_at(s, p + 1) {
                        if v1 == v2 && l1 + l2 <= VAL_MAX_LEN {
                            s[p + 1] = val_op(v1, l1 + l2);
                            s.remove(p);
                            continue;
                        }
                    }
                }
                p += 1;
            }
        }
    }
    invalidate_cache(s);
    Ok(true)
}

fn promote(s: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, ()> {
    to_dense(s)?;
    Ok(dense_update(&mut s[HDR..], index, count))
}

/// Adds one element. Ok(true) if a register changed; Err on a corrupted value.
fn add(s: &mut Vec<u8>, ele: &[u8], max_bytes: usize) -> Result<bool, ()> {
    let (index, count) = pat_len(ele);
    match s[4] {
        DENSE => Ok(dense_update(&mut s[HDR..], index, count)),
        SPARSE => sparse_set(s, index, count, max_bytes),
        _ => Err(()),
    }
}

/// Folds the registers of `s` into `max` (register-wise maximum).
fn merge_into(max: &mut [u8], s: &[u8]) -> Result<(), ()> {
    if s[4] == DENSE {
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(&s[HDR..], i));
        }
        return Ok(());
    }
    let regs = sparse_registers(s).ok_or(())?;
    for (m, r) in max.iter_mut().zip(regs) {
        *m = (*m).max(r);
    }
    Ok(())
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// Ertl's estimator over a register histogram.
fn estimate(histo: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histo[Q as usize + 1] as f64) / m);
    for j in (1..=Q as usize).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn histogram(regs: impl Iterator<Item = u8>) -> [u32; 64] {
    let mut h = [0u32; 64];
    for r in regs {
        h[r as usize & 63] += 1;
    }
    h
}

/// The cardinality of an HLL string; Err if it is corrupted.
fn count(s: &[u8]) -> Result<u64, ()> {
    if s[4] == DENSE {
        return Ok(estimate(&histogram(
            (0..REGISTERS).map(|i| dense_get(&s[HDR..], i)),
        )));
    }
    // Redis counts what the opcodes say even if they run past 16384 registers, and only
    // calls it corrupted if they do not cover exactly 16384.
    let mut h = [0u32; 64];
    let mut idx = 0;
    for (_, op) in sparse_ops(s) {
        match op {
            Op::Zero(n) | Op::XZero(n) => h[0] += n as u32,
            Op::Val(v, n) => h[v as usize] += n as u32,
        }
        idx += op.span();
    }
    if idx != REGISTERS {
        return Err(());
    }
    Ok(estimate(&h))
}

// ---------------------------------------------------------------- commands

/// Whether `v` is an HLL string (Redis' isHLLObjectOrReply).
fn is_hll(v: &Value) -> Result<&crate::storage::value::StrVal, Reply> {
    let Value::Str(s) = v else {
        return Err(error::wrongtype());
    };
    let ok = s.len() >= HDR
        && &s[..4] == b"HYLL"
        && s[4] <= SPARSE
        && (s[4] != DENSE || s.len() == DENSE_SIZE);
    if ok {
        Ok(s)
    } else {
        Err(Reply::err(NOT_HLL))
    }
}

/// The HLL bytes at `key` (read lookup), `None` if missing.
fn read_hll(ctx: &mut Ctx, key: &[u8], write: bool) -> Result<Option<Bytes>, Reply> {
    let e = if write { ctx.write(key) } else { ctx.read(key) };
    match e {
        None => Ok(None),
        Some(e) => is_hll(&e.value).map(|s| Some(s.to_bytes())),
    }
}

fn store_hll(ctx: &mut Ctx, key: &Bytes, s: Vec<u8>) {
    let now = ctx.now();
    ctx.note_new_key(key);
    ctx.db()
        .replace_value(key, Value::Str(crate::storage::value::StrVal::from(s)), now);
    ctx.db().set_raw(key);
}

fn pfadd(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let (mut s, mut updated) = match read_hll(ctx, &a[1], true) {
        Ok(Some(s)) => (s.to_vec(), false),
        Ok(None) => (new_hll(), true),
        Err(e) => return e,
    };
    let max_bytes = ctx.eng.config.hll_sparse_max_bytes;
    for ele in &a[2..] {
        match add(&mut s, ele, max_bytes) {
            Ok(changed) => updated |= changed,
            Err(()) => return Reply::err(INVALID_HLL),
        }
    }
    if updated {
        invalidate_cache(&mut s);
        store_hll(ctx, &a[1], s);
        ctx.modified(&a[1], notify::STRING, "pfadd");
    }
    Reply::Int(updated as i64)
}

fn pfcount(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    if a.len() > 2 {
        let mut max = vec![0u8; REGISTERS];
        for k in &a[1..] {
            match read_hll(ctx, k, false) {
                Ok(Some(s)) => {
                    if merge_into(&mut max, &s).is_err() {
                        return Reply::err(INVALID_HLL);
                    }
                }
                Ok(None) => {}
                Err(e) => return e,
            }
        }
        return Reply::Int(estimate(&histogram(max.into_iter())) as i64);
    }
    let s = match read_hll(ctx, &a[1], false) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::Int(0),
        Err(e) => return e,
    };
    if s[15] & 0x80 == 0 {
        return Reply::Int(u64::from_le_bytes(s[8..16].try_into().unwrap()) as i64);
    }
    let Ok(card) = count(&s) else {
        return Reply::err(INVALID_HLL);
    };
    // Refresh the cached cardinality: the value changes (WATCH sees it, the dirty counter
    // moves) but no keyspace event is sent, as in Redis.
    let mut s = s.to_vec();
    s[8..16].copy_from_slice(&card.to_le_bytes());
    let db = ctx.dbi();
    if let Some(e) = ctx.eng.dbs[db].get_mut(&a[1]) {
        e.value = Value::Str(crate::storage::value::StrVal::from(s));
    }
    ctx.eng.touch_watched(db, &a[1]);
    ctx.eng.stats.dirty += 1;
    Reply::Int(card as i64)
}

fn pfmerge(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let mut max = vec![0u8; REGISTERS];
    let mut use_dense = false;
    for k in &a[1..] {
        match read_hll(ctx, k, false) {
            Ok(Some(s)) => {
                use_dense |= s[4] == DENSE;
                if merge_into(&mut max, &s).is_err() {
                    return Reply::err(INVALID_HLL);
                }
            }
            Ok(None) => {}
            Err(e) => return e,
        }
    }
    let mut s = match read_hll(ctx, &a[1], true) {
        Ok(Some(s)) => s.to_vec(),
        _ => new_hll(),
    };
    if use_dense && to_dense(&mut s).is_err() {
        return Reply::err(INVALID_HLL);
    }
    let max_bytes = ctx.eng.config.hll_sparse_max_bytes;
    for (i, &v) in max.iter().enumerate() {
        if v == 0 {
            continue;
        }
        let r = if s[4] == DENSE {
            Ok(dense_update(&mut s[HDR..], i, v))
        } else {
            sparse_set(&mut s, i, v, max_bytes)
        };
        if r.is_err() {
            return Reply::err(INVALID_HLL);
        }
    }
    invalidate_cache(&mut s);
    store_hll(ctx, &a[1], s);
    ctx.modified(&a[1], notify::STRING, "pfadd");
    Reply::ok()
}

fn pfdebug(ctx: &mut Ctx, a: &[Bytes]) -> Reply {
    let sub = String::from_utf8_lossy(&a[1]).into_owned();
    let mut s = match read_hll(ctx, &a[2], true) {
        Ok(Some(s)) => s.to_vec(),
        Ok(None) => return Reply::err("ERR The specified key does not exist"),
        Err(e) => return e,
    };
    match sub.to_ascii_lowercase().as_str() {
        "getreg" => {
            if s[4] == SPARSE {
                if to_dense(&mut s).is_err() {
                    return Reply::err(INVALID_HLL);
                }
                store_hll(ctx, &a[2], s.clone());
                ctx.eng.stats.dirty += 1;
            }
            Reply::Array(
                (0..REGISTERS)
                    .map(|i| Reply::Int(dense_get(&s[HDR..], i) as i64))
                    .collect(),
            )
        }
        "decode" => {
            if s[4] != SPARSE {
                return Reply::err("ERR HLL encoding is not sparse");
            }
            let parts: Vec<String> = sparse_ops(&s)
                .map(|(_, op)| match op {
                    Op::Zero(n) => format!("z:{n}"),
                    Op::XZero(n) => format!("Z:{n}"),
                    Op::Val(v, n) => format!("v:{v},{n}"),
                })
                .collect();
            Reply::Bulk(Bytes::from(parts.join(" ")))
        }
        "encoding" => Reply::simple(if s[4] == DENSE { "dense" } else { "sparse" }),
        "todense" => {
            if s[4] != SPARSE {
                return Reply::Int(0);
            }
            if to_dense(&mut s).is_err() {
                return Reply::err(INVALID_HLL);
            }
            store_hll(ctx, &a[2], s);
            ctx.eng.stats.dirty += 1;
            Reply::Int(1)
        }
        _ => Reply::err(format!("ERR Unknown PFDEBUG subcommand '{sub}'")),
    }
}

/// PFSELFTEST: the dense register packing round-trips every value at every position, and
/// sparse and dense encodings of the same additions agree register for register and
/// estimate within the expected error.
fn pfselftest(_ctx: &mut Ctx, _a: &[Bytes]) -> Reply {
    let mut regs = vec![0u8; DENSE_SIZE - HDR];
    for round in 0..4u32 {
        let val = |i: usize| ((i as u32 * 7 + round * 13) % (REGISTER_MAX as u32 + 1)) as u8;
        for i in 0..REGISTERS {
            dense_set(&mut regs, i, val(i));
        }
        if (0..REGISTERS).any(|i| dense_get(&regs, i) != val(i)) {
            return Reply::err("ERR TESTFAILED Register error");
        }
    }
    let mut sparse = new_hll();
    let mut dense = new_hll();
    if to_dense(&mut dense).is_err() {
        return Reply::err("ERR TESTFAILED dense conversion");
    }
    for i in 0..20_000u32 {
        let ele = i.to_le_bytes();
        let (_, _) = (
            add(&mut sparse, &ele, usize::MAX),
            add(&mut dense, &ele, usize::MAX),
        );
        if i % 1000 == 999 {
            let (Ok(c1), Ok(c2)) = (count(&sparse), count(&dense)) else {
                return Reply::err("ERR TESTFAILED corrupted");
            };
            let exact = (i + 1) as f64;
            if c1 != c2 || (c1 as f64 - exact).abs() / exact > 0.05 {
                return Reply::err(format!(
                    "ERR TESTFAILED Too big error. card:{exact} est:{c1}/{c2}"
                ));
            }
        }
    }
    Reply::ok()
}
