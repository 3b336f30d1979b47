//! The engine and the storage it owns: databases, value encodings, expiry on an injectable
//! clock, keyspace notifications, the RDB encoding (DUMP/RESTORE) and LFU counters.

pub mod clock;
pub mod config;
pub mod db;
pub mod engine;
pub mod evict;
pub mod expiry;
pub mod key;
pub mod lfu;
pub mod listpack;
pub mod lock;
pub mod notify;
pub mod rdb;
pub mod stream;
pub mod table;
pub mod tracking;
pub mod value;
pub mod zset;

/// A client connection's id. The engine names clients by it (blocked clients, WATCH,
/// tracking), and a lock's SESSION grant records the connection it belongs to.
pub type ClientId = u64;
