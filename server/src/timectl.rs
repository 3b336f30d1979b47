//! TUMBLER.TIME: moving the server's clock from tests. (Being built: issue 7.)

use bytes::Bytes;

use lockcore::commands::CommandSpec;
use lockcore::Reply;

use crate::conn::Conn;
use crate::shared::CoreGuard;

pub fn command(
    _c: &mut Conn,
    _guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    _a: &[Bytes],
) -> Reply {
    Reply::err(format!("ERR '{}' is not available yet", spec.full_name()))
}
