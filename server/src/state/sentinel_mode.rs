//! Whether a dataset is a sentinel's (server/src/sentinel/), and which commands a sentinel
//! has: redis 7.0's `redis-server --sentinel` knows only the commands flagged for Sentinel;
//! every other name is an unknown command there and COMMAND does not list it.

use lockcore::engine::spec::CommandSpec;

use super::Shared;

/// The commands of redis 7.0's Sentinel that run as on a data node (SENTINEL, INFO, ROLE
/// and PUBLISH have a sentinel's own handler, server/src/sentinel/).
pub const COMMANDS: &[&str] = &[
    "ping",
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "publish",
    "info",
    "role",
    "client",
    "shutdown",
    "auth",
    "hello",
    "acl",
    "command",
];

/// True if `shared` is a sentinel's.
#[inline]
pub fn active(shared: &Shared) -> bool {
    shared.sentinel.get().is_some()
}

/// True if COMMAND and friends must leave `spec` out on this server (a sentinel).
pub fn hidden_spec(shared: &Shared, spec: &CommandSpec) -> bool {
    let top = if spec.parent.is_empty() {
        spec.name
    } else {
        spec.parent
    };
    active(shared) && !COMMANDS.contains(&top)
}
