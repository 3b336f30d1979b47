//! Constants every layer uses: the version clients see, shared error texts, thread sizes.

/// Version reported to clients (HELLO, INFO). Clients parse it to pick features; we speak
/// Redis 7's protocol and commands.
pub const REDIS_VERSION: &str = "7.2.4";

/// Redis' `shared.oomerr`.
pub const OOM_ERR: &str = "OOM command not allowed when used memory > 'maxmemory'.";

pub const BUSY_ERR: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// Stack size of the runtime threads that run commands and scripts. Every nested
/// conversion (cjson, cmsgpack, script replies, reply encoding) is bounded by Lua's stack
/// limit at under 8000 levels (docs/scripting.md, "Nesting limits"); this leaves room for
/// them many times over, also in debug builds. Untouched stack pages cost no memory.
pub const THREAD_STACK: usize = 16 << 20;

/// The error for commands other than FUNCTION KILL while a function runs.
pub const BUSY_FN_ERR: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// [`BUSY_ERR`] (or with `function`, [`BUSY_FN_ERR`]) as personality `p` words it.
pub fn busy_err(p: &lockcore::personality::Personality, function: bool) -> &'static str {
    match (p.is_valkey(), function) {
        (false, false) => BUSY_ERR,
        (false, true) => BUSY_FN_ERR,
        (true, false) => {
            "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
        }
        (true, true) => {
            "BUSY Valkey is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
        }
    }
}
