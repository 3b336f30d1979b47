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
// Each module has one path (`lockcore::commands::strings`); the root re-exports only the
// handful of types every user needs.
pub mod commands;
pub mod locks;
pub mod storage;

pub mod error;
pub mod glob;
pub mod key_access;
pub mod num;
pub mod reply;
pub mod slots;

pub use bytes::Bytes;
pub use commands::{CommandSpec, Ctx};
pub use reply::Reply;
pub use storage::engine::{ClientCtx, Engine};
pub use storage::ClientId;
