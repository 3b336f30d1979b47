//! `lockcore`: Tumbler's keyspace, value types, expiry on an injectable clock, command
//! semantics and native lock primitives. It does no I/O: no sockets, no threads, no tokio.
//! The `server` crate adds the network, the Lua VM, pub/sub fan-out and config.

pub mod bitops;
pub mod clock;
pub mod cluster_cmds;
pub mod commands;
pub mod db;
pub mod engine;
pub mod error;
pub mod geo;
pub mod glob;
pub mod hashes;
pub mod hyperloglog;
pub mod key_access;
pub mod keys;
pub mod listpack;
pub mod lists;
pub mod lock_stats;
pub mod locks;
pub mod notify;
pub mod num;
pub mod pubsub;
pub mod rdb;
pub mod reply;
pub mod scripting_cmds;
pub mod server_cmds;
pub mod sets;
pub mod slots;
pub mod sort;
pub mod stream_groups;
pub mod streams;
pub mod strings;
pub mod tumbler_cmds;
pub mod value;
pub mod zset;
pub mod zsets;

pub use bytes::Bytes;
pub use commands::{CommandSpec, Ctx};
pub use engine::{ClientCtx, ClientId, Engine};
pub use reply::Reply;
