//! What the engine stores, as plain data: databases, every value type and its encodings,
//! expiry on an injectable clock, keyspace notification flags, the RDB encoding
//! (DUMP/RESTORE), LFU counters and the engine's settings. Nothing here runs a command.

pub mod clock;
pub mod config;
pub mod db;
pub mod expiry;
pub mod inline;
pub mod key;
pub mod lfu;
pub mod listpack;
pub mod lock;
pub mod notify;
pub mod qlist;
pub mod rdb;
pub mod set;
pub mod stream;
pub mod table;
pub mod value;
pub mod vexpr;
pub mod vset;
pub mod zset;

/// A client connection's id. The engine names clients by it (blocked clients, WATCH,
/// tracking), and a lock's SESSION grant records the connection it belongs to.
pub type ClientId = u64;
