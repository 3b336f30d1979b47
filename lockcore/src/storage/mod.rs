//! The engine and the storage it owns: databases, value encodings, expiry on an injectable
//! clock, keyspace notifications, the RDB encoding (DUMP/RESTORE) and LFU counters.

pub mod clock;
pub mod db;
pub mod engine;
pub mod evict;
pub mod expiry;
pub mod key;
pub mod lfu;
pub mod listpack;
pub mod notify;
pub mod rdb;
pub mod table;
pub mod tracking;
pub mod value;
pub mod zset;
