//! `lockcore`: Tumbler's keyspace, value types, expiry on an injectable clock, command
//! semantics and native lock primitives. It does no I/O: no sockets, no threads, no tokio.
//! The `server` crate adds the network, the Lua VM, pub/sub fan-out and config.

// The crate in layers, lowest first; a module imports only from its own layer and the ones
// below it, with no cycles (scripts/ci/layers.py checks both):
// - `error`, `num`, `glob`, `reply`, `personality`: Redis' error texts, number rules, glob
//   matching, replies, and which Redis or Valkey release the server is;
// - `storage/`: what is stored, as plain data: databases, every value type and encoding
//   (strings, hashes, lists, sets, zsets, streams, lock values), expiry, the clock, LFU
//   counters, the RDB encoding (DUMP/RESTORE), notification flags, the engine's settings;
// - `engine/`: the executing engine (databases, write epilogue, blocked clients, WATCH,
//   eviction, client tracking), the command table's types and what a handler gets
//   (`engine/spec.rs`), and the native lock primitives the engine keeps state for
//   (`engine/locks/`: lock commands, their statistics, the Redisson lock view and the
//   lock-order checker);
// - `commands/`: one file per command family, each holding that family's table rows and
//   handlers (SET is in `commands/strings.rs`), and the registry that looks commands up;
// - `slots`, `key_access`: cluster slots and ACL key access, read from the command table.
// Each module has one path (`lockcore::commands::strings`); the root re-exports only the
// handful of types every user needs.
pub mod error;
pub mod glob;
pub mod num;
pub mod personality;
pub mod reply;

pub mod storage;

pub mod engine;

pub mod commands;

pub mod key_access;
pub mod slots;

pub use bytes::Bytes;
pub use engine::spec::{CommandSpec, Ctx};
pub use engine::{ClientCtx, Engine};
pub use reply::Reply;
pub use storage::ClientId;
