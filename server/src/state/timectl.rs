//! Whether time control (TUMBLER.TIME, `enable-time-control`) is on; when it is off its
//! commands look as if they did not exist. The commands are in commands/timectl.rs.

use lockcore::engine::spec::CommandSpec;

use super::Shared;

/// True if this server was started with `enable-time-control yes`.
pub fn enabled(shared: &Shared) -> bool {
    shared
        .config
        .read()
        .get_bool(crate::config::key::ENABLE_TIME_CONTROL)
}

/// True if `name` is a time-control command and the feature is off, i.e. the command must
/// look as if it did not exist. Cheap for every other name (a length check).
pub fn hidden_name(shared: &Shared, name: &[u8]) -> bool {
    name.len() == lockcore::commands::tumbler_cmds::TIME.len()
        && name.eq_ignore_ascii_case(lockcore::commands::tumbler_cmds::TIME.as_bytes())
        && !enabled(shared)
}

/// True if COMMAND and friends must leave `spec` out on this server.
pub fn hidden_spec(shared: &Shared, spec: &CommandSpec) -> bool {
    (spec.name == lockcore::commands::tumbler_cmds::TIME
        || spec.parent == lockcore::commands::tumbler_cmds::TIME)
        && !enabled(shared)
}
