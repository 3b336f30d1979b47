//! MONITOR: the line format and the redaction of secrets.
//!
//! A line is `+<sec>.<usec> [<db> <addr>] "arg" ...`, fed after the command ran (so EXEC
//! follows the commands it executed and SELECT shows the new db), or `[<db> lua]` for a
//! `redis.call` from a script. See `Shared::feed_monitors` and `Conn::feed_monitors_for`.

/// MONITOR: from now on this connection receives every command as a line.
pub fn command(c: &mut crate::conn::Conn) -> lockcore::Reply {
    if c.cl.deny_blocking {
        // Inside EXEC a client expects one reply per command.
        return lockcore::Reply::err("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    c.monitor = true;
    c.shared.monitors.insert(c.cl.id, c.handle.clone());
    lockcore::Reply::ok()
}

crate::server_command!(["monitor"], |c, _, _, _| command(c));
