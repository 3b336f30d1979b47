//! `lockcore`: Tumbler's keyspace, value types, expiry on an injectable clock, command
//! semantics and native lock primitives. It does no I/O: no sockets, no threads, no tokio.
//! The `server` crate adds the network, the Lua VM, pub/sub fan-out and config.

// The crate in three folders, so a newcomer finds things by what they are:
// - `storage/`: the engine and what it stores (keyspace, value encodings, expiry clock,
//   notifications, RDB encoding, LFU counters);
// - `commands/`: the command table (`commands/mod.rs`) and one file per command family,
//   each holding that family's table rows and handlers (SET is in `commands/strings.rs`);
// - `locks/`: the native lock primitives, their statistics, the Redisson lock view and the
//   lock-order checker.
// The modules are also re-exported at the crate root (`lockcore::strings`,
// `lockcore::engine`), the paths the server and the tests use.
pub mod commands;
pub mod locks;
pub mod storage;

pub mod error;
pub mod glob;
pub mod key_access;
pub mod num;
pub mod reply;
pub mod slots;

pub use commands::{
    bitops, cluster_cmds, geo, hashes, hyperloglog, keys, lists, pubsub, scripting_cmds,
    server_cmds, sets, slowlog_cmds, sort, stream_groups, streams, strings, tumbler_cmds, zsets,
};
pub use locks::{lock_stats, lockdep, redisson};
pub use storage::{clock, db, engine, lfu, listpack, notify, rdb, value, zset};

pub use bytes::Bytes;
pub use commands::{CommandSpec, Ctx};
pub use engine::{ClientCtx, ClientId, Engine};
pub use reply::Reply;
