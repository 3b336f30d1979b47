//! Whole RDB files (SAVE, BGSAVE, TUMBLER.RDB, start-up loading), as redis-server lays
//! them out: `REDIS` and a 4-digit version, aux fields, function libraries, then per
//! non-empty db SELECTDB, RESIZEDB and its keys (each with an optional EXPIRETIME_MS, then
//! the value as in a DUMP payload minus the footer), EOF and a CRC-64 of all before it.
//!
//! Tumbler writes version 10 (redis-server 7.0), which 7.0 and every later Redis loads.
//! It reads versions up to 12 (Redis 7.2, 7.4, 8.0) and valkey's 80. Native lock values
//! (LOCK.*, SEM.*, RW.*) have no Redis encoding: they are live connection state, and are
//! left out and counted. docs/rdb.md describes what is accepted and refused.

use bytes::Bytes;
use std::collections::HashSet;

use super::{put_len, put_string, write_value, Reader};
use crate::storage::config::EngineConfig;
use crate::storage::db::Db;
use crate::storage::value::Value;

/// The newest Redis version read (Redis 7.4 and 8.0 write 12).
pub const MAX_REDIS_VERSION: u32 = 12;

const OP_SLOT_INFO: u8 = 244;
const OP_FUNCTION2: u8 = 245;
const OP_FUNCTION_PRE_GA: u8 = 246;
const OP_MODULE_AUX: u8 = 247;
const OP_IDLE: u8 = 248;
const OP_FREQ: u8 = 249;
const OP_AUX: u8 = 250;
const OP_RESIZEDB: u8 = 251;
const OP_EXPIRETIME_MS: u8 = 252;
const OP_EXPIRETIME: u8 = 253;
const OP_SELECTDB: u8 = 254;
const OP_EOF: u8 = 255;

/// What the writer needs besides the keyspace.
pub struct SaveOptions<'a> {
    /// `list-max-listpack-size`, to split lists into quicklist nodes as Redis does.
    pub list_fill: i64,
    /// `rdbcompression`: LZF for strings over 20 bytes.
    pub compress: bool,
    /// `rdbchecksum`: without it the trailer is 8 zero bytes, as Redis writes it.
    pub checksum: bool,
    /// The `redis-ver` aux field.
    pub redis_ver: &'a str,
    /// `ctime` (Unix seconds) and `used-mem`.
    pub ctime: i64,
    pub used_mem: u64,
    /// Under an LRU `maxmemory-policy`, each key's idle time is written (RDB_OPCODE_IDLE);
    /// under an LFU one, its counter (RDB_OPCODE_FREQ), as Redis writes them. `now` (ms)
    /// measures the idle time and decays the counter; `lfu_decay_time` is the setting.
    pub lru: bool,
    pub lfu: bool,
    pub now: i64,
    pub lfu_decay_time: i64,
    /// The personality's RDB version (`Personality::rdb_version`): the header's, and the
    /// layout of hashes with field TTLs. Valkey 9's files start `VALKEY080`.
    pub rdb_version: u16,
}

/// A written file and what went into it.
pub struct Saved {
    pub bytes: Vec<u8>,
    pub keys: usize,
    /// Native lock keys left out.
    pub skipped_locks: usize,
}

fn put_aux(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    out.push(OP_AUX);
    put_string(out, key.as_bytes(), false);
    put_string(out, value, false);
}

/// Serializes every db and the function libraries (`functions`: each library's code).
pub fn write(dbs: &[Db], functions: &[Bytes], o: &SaveOptions) -> Saved {
    let mut out = Vec::with_capacity(4096);
    if o.rdb_version >= super::VALKEY_RDB_VERSION {
        out.extend_from_slice(format!("VALKEY{:03}", o.rdb_version).as_bytes());
    } else {
        out.extend_from_slice(format!("REDIS{:04}", o.rdb_version).as_bytes());
    }
    put_aux(&mut out, "redis-ver", o.redis_ver.as_bytes());
    put_aux(&mut out, "redis-bits", b"64");
    put_aux(&mut out, "ctime", o.ctime.to_string().as_bytes());
    put_aux(&mut out, "used-mem", o.used_mem.to_string().as_bytes());
    put_aux(&mut out, "aof-base", b"0");
    for code in functions {
        out.push(OP_FUNCTION2);
        put_string(&mut out, code, o.compress);
    }
    let (mut keys, mut skipped_locks) = (0, 0);
    for (i, db) in dbs.iter().enumerate() {
        let mut size = 0;
        let mut expires = 0;
        for (_, e) in db.iter() {
            if matches!(e.value, Value::Lock(_)) {
                skipped_locks += 1;
            } else {
                size += 1;
                expires += e.expire_at().is_some() as usize;
            }
        }
        if size == 0 {
            continue;
        }
        out.push(OP_SELECTDB);
        put_len(&mut out, i);
        out.push(OP_RESIZEDB);
        put_len(&mut out, size);
        put_len(&mut out, expires);
        for (k, e) in db.iter() {
            if matches!(e.value, Value::Lock(_)) {
                continue;
            }
            if let Some(t) = e.expire_at() {
                out.push(OP_EXPIRETIME_MS);
                out.extend_from_slice(&t.to_le_bytes());
            }
            if o.lfu {
                out.push(OP_FREQ);
                out.push(crate::storage::lfu::decayed(
                    e.lru_ms,
                    o.now,
                    o.lfu_decay_time,
                ));
            } else if o.lru {
                out.push(OP_IDLE);
                put_len(&mut out, ((o.now - e.lru_ms).max(0) / 1000) as usize);
            }
            // The type byte comes before the key, so the value is written to a side
            // buffer first.
            let mut v = Vec::new();
            if write_value(&mut v, &e.value, o.list_fill, o.compress, o.rdb_version) {
                out.push(v[0]);
                put_string(&mut out, k, o.compress);
                out.extend_from_slice(&v[1..]);
                keys += 1;
            }
        }
    }
    out.push(OP_EOF);
    let crc = if o.checksum { super::crc64(&out) } else { 0 };
    out.extend_from_slice(&crc.to_le_bytes());
    Saved {
        bytes: out,
        keys,
        skipped_locks,
    }
}

/// One key read from a file.
pub struct FileKey {
    pub db: usize,
    pub key: Bytes,
    pub value: Value,
    pub expire_at: Option<i64>,
    /// OBJECT IDLETIME seconds (RDB_OPCODE_IDLE) or LFU counter (RDB_OPCODE_FREQ).
    pub idle: Option<u64>,
    pub freq: Option<u8>,
}

/// A whole file, checked and parsed; nothing is applied until all of it is.
#[derive(Default)]
pub struct FileContents {
    pub version: u32,
    pub keys: Vec<FileKey>,
    /// The libraries' code, in file order.
    pub functions: Vec<Bytes>,
    pub aux: Vec<(Bytes, Bytes)>,
    /// Keys whose TTL had passed (not loaded, as a Redis master does).
    pub expired: usize,
    /// Empty collections (Redis skips them too).
    pub empty: usize,
}

/// Parses a whole RDB file. `now` decides which keys have expired; `databases` is the
/// number of dbs (a file naming a higher one is refused, as Redis refuses it).
pub fn read(
    p: &[u8],
    now: i64,
    cfg: &EngineConfig,
    databases: usize,
) -> Result<FileContents, String> {
    let (version, body_at) = header(p)?;
    let mut r = Reader { p: &p[body_at..] };
    let at = |r: &Reader| p.len() - r.p.len();
    let short = |r: &Reader| {
        format!(
            "Short read or unexpected data at offset {} while loading the RDB file",
            p.len() - r.p.len()
        )
    };
    let mut c = FileContents {
        version,
        ..Default::default()
    };
    let mut db = 0usize;
    let mut seen: HashSet<(usize, Bytes)> = HashSet::new();
    let (mut expire_at, mut idle, mut freq) = (None, None, None);
    loop {
        let Some(t) = r.byte() else {
            return Err(short(&r));
        };
        match t {
            OP_EOF => break,
            OP_SELECTDB => {
                db = r.len().ok_or_else(|| short(&r))?;
                if db >= databases {
                    return Err(format!(
                        "Data file was created with a Redis server configured to handle more than {databases} databases"
                    ));
                }
            }
            OP_RESIZEDB => {
                r.len().ok_or_else(|| short(&r))?;
                r.len().ok_or_else(|| short(&r))?;
            }
            OP_SLOT_INFO => {
                for _ in 0..3 {
                    r.len().ok_or_else(|| short(&r))?;
                }
            }
            OP_AUX => {
                let k = r.string().ok_or_else(|| short(&r))?;
                let v = r.string().ok_or_else(|| short(&r))?;
                c.aux.push((k, v));
            }
            OP_EXPIRETIME_MS => {
                let b = r.take(8).ok_or_else(|| short(&r))?;
                expire_at = Some(i64::from_le_bytes(b.try_into().unwrap()));
            }
            OP_EXPIRETIME => {
                let b = r.take(4).ok_or_else(|| short(&r))?;
                expire_at = Some(i32::from_le_bytes(b.try_into().unwrap()) as i64 * 1000);
            }
            OP_IDLE => idle = Some(r.len().ok_or_else(|| short(&r))? as u64),
            OP_FREQ => freq = Some(r.byte().ok_or_else(|| short(&r))?),
            OP_FUNCTION2 => {
                let code = r.string().ok_or_else(|| short(&r))?;
                c.functions.push(code);
            }
            OP_FUNCTION_PRE_GA => {
                return Err(
                    "Pre-release function format (Redis 7.0 release candidates) not supported"
                        .into(),
                );
            }
            OP_MODULE_AUX => {
                return Err(
                    "The RDB file contains module AUX data, but Tumbler loads no modules".into(),
                );
            }
            6 | 7 if !super::own_module_value(t, r.p) => {
                let key = r.string().ok_or_else(|| short(&r))?;
                return Err(format!(
                    "The RDB file contains a module value (key '{}'), but Tumbler loads no modules",
                    String::from_utf8_lossy(&key)
                ));
            }
            t => {
                let off = at(&r) - 1;
                let key = r.string().ok_or_else(|| short(&r))?;
                let loaded = super::load_value_in(&mut r, t, version >= 80).ok_or_else(|| {
                    format!(
                        "Bad data format for key '{}' (RDB type {t} at offset {off})",
                        String::from_utf8_lossy(&key)
                    )
                })?;
                let value = super::to_value(loaded, cfg).ok_or_else(|| {
                    format!(
                        "Bad data format for key '{}' (duplicate field or member)",
                        String::from_utf8_lossy(&key)
                    )
                })?;
                if !seen.insert((db, key.clone())) {
                    return Err(format!(
                        "RDB has duplicated key '{}' in DB {db}",
                        String::from_utf8_lossy(&key)
                    ));
                }
                let (e, i, f) = (expire_at.take(), idle.take(), freq.take());
                if is_empty(&value) {
                    c.empty += 1;
                } else if e.is_some_and(|e| e < now) {
                    c.expired += 1;
                } else {
                    c.keys.push(FileKey {
                        db,
                        key,
                        value,
                        expire_at: e,
                        idle: i,
                        freq: f,
                    });
                }
            }
        }
    }
    if version >= 5 {
        let at_eof = p.len() - r.p.len();
        let Some(b) = r.take(8) else {
            return Err(short(&r));
        };
        let stored = u64::from_le_bytes(b.try_into().unwrap());
        if stored != 0 {
            let want = super::crc64(&p[..at_eof]);
            if stored != want {
                return Err(format!(
                    "Wrong RDB checksum expected: ({want:x}) got ({stored:x})"
                ));
            }
        }
    }
    Ok(c)
}

/// Checks the signature and version; returns the version and where the body starts.
fn header(p: &[u8]) -> Result<(u32, usize), String> {
    let digits = |s: &[u8]| -> Option<u32> {
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(s).ok()?.parse().ok())?
    };
    if p.len() >= 9 && &p[..5] == b"REDIS" {
        let v = digits(&p[5..9]).ok_or("Wrong signature trying to load DB from file")?;
        if !(1..=MAX_REDIS_VERSION).contains(&v) {
            return Err(format!("Can't handle RDB format version {v}"));
        }
        return Ok((v, 9));
    }
    if p.len() >= 9 && &p[..6] == b"VALKEY" {
        let v = digits(&p[6..9]).ok_or("Wrong signature trying to load DB from file")?;
        if v != 80 {
            return Err(format!("Can't handle RDB format version {v}"));
        }
        return Ok((v, 9));
    }
    Err("Wrong signature trying to load DB from file".into())
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Str(_) => false,
        Value::List(l) => l.is_empty(),
        Value::Set(s) => s.is_empty(),
        Value::Hash(h) => h.len() == 0,
        Value::ZSet(z) => z.len() == 0,
        Value::VSet(v) => v.is_empty(),
        Value::Stream(_) | Value::Lock(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::value::StrVal;

    #[test]
    fn writes_and_reads_back() {
        let mut dbs = vec![Db::default(), Db::default()];
        dbs[1].insert(
            Bytes::from("s"),
            Value::Str(StrVal::from_slice(b"v")),
            None,
            0,
        );
        dbs[1].insert(
            Bytes::from("t"),
            Value::Str(StrVal::from("x".repeat(100).into_bytes())),
            Some(i64::MAX / 2),
            0,
        );
        let o = SaveOptions {
            list_fill: -2,
            compress: true,
            checksum: true,
            redis_ver: "7.0.15",
            ctime: 1,
            used_mem: 2,
            lru: true,
            lfu: false,
            now: 5000,
            lfu_decay_time: 1,
            rdb_version: 10,
        };
        let s = write(&dbs, &[Bytes::from("#!lua name=x\n")], &o);
        assert_eq!(&s.bytes[..9], b"REDIS0010");
        assert_eq!(s.keys, 2);
        let c = read(&s.bytes, 0, &EngineConfig::default(), 16).unwrap();
        assert_eq!(c.keys.len(), 2);
        assert!(c.keys.iter().all(|k| k.db == 1 && k.idle == Some(5)));
        assert_eq!(c.functions.len(), 1);
        let mut bad = s.bytes.clone();
        let n = bad.len();
        bad[n - 12] ^= 1;
        assert!(read(&bad, 0, &EngineConfig::default(), 16).is_err());
        assert!(read(&s.bytes[..n - 5], 0, &EngineConfig::default(), 16).is_err());
        // Expired keys are dropped.
        let c = read(&s.bytes, i64::MAX, &EngineConfig::default(), 16).unwrap();
        assert_eq!((c.keys.len(), c.expired), (1, 1));
        // A db beyond `databases` is refused.
        assert!(read(&s.bytes, 0, &EngineConfig::default(), 1).is_err());
    }

    /// The pre-7.0 encodings, built by hand from their layout: a ziplist (header, entries
    /// with their previous-entry length, 0xff) and a zipmap.
    #[test]
    fn reads_ziplists_and_zipmaps() {
        let entries: &[&[u8]] = &[
            &[0x00, 0x01, b'a'],       // "a"
            &[0x03, 0xf6],             // 5, immediate
            &[0x02, 0xc0, 0x2c, 0x01], // 300, int16
            &[0x04, 0xfe, 0xf6],       // -10, int8
        ];
        let mut zl = vec![0u8; 10];
        zl[8] = entries.len() as u8;
        for e in entries {
            zl.extend_from_slice(e);
        }
        zl.push(0xff);
        let got = super::super::ziplist_entries(&zl).unwrap();
        assert_eq!(got, vec!["a", "5", "300", "-10"]);
        let zm = [
            0x02, 0x01, b'f', 0x02, 0x00, b'v', b'1', 0x01, b'g', 0x01, 0x01, b'w', 0x00, 0xff,
        ];
        let got = super::super::zipmap_entries(&zm).unwrap();
        assert_eq!(
            got,
            vec![
                (Bytes::from("f"), Bytes::from("v1")),
                (Bytes::from("g"), Bytes::from("w"))
            ]
        );
    }
}
