//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT. (Being built: issue 4.)

use bytes::Bytes;

use lockcore::commands::CommandSpec;
use lockcore::Reply;

use crate::conn::Conn;
use crate::shared::CoreGuard;

/// The Lua VM and script cache, kept under the keyspace lock with the engine.
#[derive(Default)]
pub struct Scripts {}

/// True if a scripting command needs the keyspace lock.
pub fn needs_core(top: &str) -> bool {
    matches!(
        top,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "script" | "fcall" | "fcall_ro"
    )
}

pub fn command(
    _c: &mut Conn,
    _guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    _a: &[Bytes],
) -> Reply {
    Reply::err(format!("ERR '{}' is not available yet", spec.full_name()))
}
