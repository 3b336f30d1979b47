//! Value types stored under a key.

use bytes::Bytes;
use indexmap::IndexMap;
use std::collections::VecDeque;

use crate::locks::LockValue;
use crate::zset::ZSet;

/// A hash. Small hashes keep insertion order, as Redis' listpack encoding does, so HGETALL
/// replies match Redis byte for byte; `big` records the switch to "hashtable" encoding,
/// which, as in Redis, never switches back.
#[derive(Debug, Clone, Default)]
pub struct HashValue {
    pub map: IndexMap<Bytes, Bytes>,
    pub big: bool,
}

impl HashValue {
    /// Removes `field`, keeping the order of the rest while the hash is small.
    pub fn remove(&mut self, field: &[u8]) -> Option<Bytes> {
        if self.big {
            self.map.swap_remove(field)
        } else {
            self.map.shift_remove(field)
        }
    }
}

/// A set: `intset` while every member is an integer and it is small (members then come
/// out in numeric order, as from Redis' sorted intset); a "hashtable" once that stops.
#[derive(Debug, Clone)]
pub struct SetValue {
    pub members: indexmap::IndexSet<Bytes>,
    pub intset: bool,
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue {
            members: Default::default(),
            intset: true,
        }
    }
}

impl SetValue {
    pub fn remove(&mut self, m: &[u8]) -> bool {
        self.members.swap_remove(m)
    }
    /// The members in Redis' iteration order for the encoding (numeric for an intset).
    pub fn ordered(&self) -> Vec<Bytes> {
        let mut v: Vec<Bytes> = self.members.iter().cloned().collect();
        if self.intset {
            v.sort_by_key(|m| crate::num::parse_i64(m).unwrap_or(0));
        }
        v
    }
}

#[derive(Debug, Clone)]
pub enum Value {
    Str(Bytes),
    /// A stream (streams.rs: XADD/XRANGE subset).
    Stream(Box<crate::streams::StreamValue>),
    Hash(Box<HashValue>),
    List(Box<VecDeque<Bytes>>),
    ZSet(Box<ZSet>),
    Set(Box<SetValue>),
    /// A native lock, semaphore or read-write lock (locks.rs).
    Lock(Box<LockValue>),
}

impl Value {
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
            Value::Hash(h) => {
                if h.big {
                    "hashtable"
                } else {
                    "listpack"
                }
            }
            Value::List(_) => "quicklist",
            Value::Set(s) => {
                if s.intset {
                    "intset"
                } else {
                    "hashtable"
                }
            }
            Value::Lock(_) => "lock",
            Value::ZSet(z) => {
                if z.big {
                    "skiplist"
                } else {
                    "listpack"
                }
            }
        }
    }
}

/// One key's value and metadata.
#[derive(Debug, Clone)]
pub struct Entry {
    pub value: Value,
    /// Absolute expiry in Unix ms, if any.
    pub expire_at: Option<i64>,
    /// Last access in Unix ms, for OBJECT IDLETIME.
    pub lru_ms: i64,
    /// A string modified in place (APPEND, SETRANGE, SETBIT): OBJECT ENCODING says "raw".
    pub raw: bool,
}

impl Entry {
    /// The name OBJECT ENCODING prints for this entry.
    pub fn encoding(&self) -> &'static str {
        match self.value {
            Value::Str(_) if self.raw => "raw",
            _ => self.value.encoding(),
        }
    }
}
