//! TUMBLER.TIME: moving the server's clock from tests.
//!
//! The keyspace reads time only through `Shared::clock` (a [`ControlledClock`]): TTLs, lazy
//! and active expiry, blocking-command timeouts, lock leases, TIME and OBJECT IDLETIME. So
//! moving that clock is indistinguishable, for clients, from that much real time passing,
//! except that it takes microseconds.
//!
//! The feature is off unless the server starts with `--enable-time-control yes` (the
//! parameter is immutable at runtime, so a client cannot switch it on). While off, the
//! command does not exist: the reply is Redis' unknown-command error and COMMAND does not
//! list it, so nothing about a production server changes.
//!
//! [`ControlledClock`]: lockcore::storage::clock::ControlledClock

use bytes::Bytes;

use lockcore::engine::spec::CommandSpec;
use lockcore::num::parse_i64;
use lockcore::storage::clock::Clock;
use lockcore::{error, Reply};

use crate::conn::Conn;
use crate::state::timectl::enabled;
use crate::state::CoreGuard;

/// The largest single ADVANCE, in ms (about 31 years): keeps `now + ttl` far from overflow.
pub const MAX_ADVANCE_MS: i64 = 1_000_000_000_000;

/// Runs a TUMBLER.TIME subcommand. The caller holds the keyspace lock (each subcommand has the
/// CORE flag in its row), so the clock moves between two commands, never inside one.
pub fn command(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    let shared = c.shared.clone();
    // Defence in depth: process_command already answers "unknown command" when disabled.
    if !enabled(&shared) {
        return error::unknown_command(a);
    }
    let clock = &shared.clock;
    match spec.name {
        "advance" => {
            let Some(ms) = parse_i64(&a[2]) else {
                return error::not_integer();
            };
            if !(0..=MAX_ADVANCE_MS).contains(&ms) {
                return Reply::err(format!(
                    "ERR milliseconds must be between 0 and {MAX_ADVANCE_MS} (time only moves forward)"
                ));
            }
            clock.advance_ms(ms);
            // Fire what is now due before the next command, exactly as the timer would:
            // expired keys are deleted (with their keyspace events), blocked clients whose
            // timeout passed get their timeout reply, waiters on freed keys are served.
            if let Some(core) = guard.as_mut() {
                core.engine.tick();
            }
            shared.timer.notify_one();
            Reply::Int(clock.now_ms())
        }
        "freeze" => {
            clock.freeze();
            shared.timer.notify_one();
            Reply::ok()
        }
        "resume" => {
            clock.resume();
            shared.timer.notify_one();
            Reply::ok()
        }
        "now" => Reply::Int(clock.now_ms()),
        "help" => Reply::Array(
            [
                "TUMBLER.TIME <subcommand> [<arg> ...]. Subcommands are:",
                "ADVANCE <milliseconds>",
                "    Move the server clock forward; expired keys, block timeouts and lock",
                "    leases fire at once. Returns the new time in Unix milliseconds.",
                "FREEZE",
                "    Stop the server clock (TTLs and timeouts stop counting down).",
                "RESUME",
                "    Let a frozen clock run again from where it stopped.",
                "NOW",
                "    Return the server clock in Unix milliseconds.",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => error::unknown_subcommand("tumbler.time", spec.name.as_bytes()),
    }
}

crate::server_command!(["tumbler.time"], |c, g, spec, a| command(c, g, spec, a));
