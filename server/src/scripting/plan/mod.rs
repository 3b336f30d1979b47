//! Native plans: scripts in a small subset of Lua run without the interpreter.
//!
//! When a script is compiled (EVAL, SCRIPT LOAD), [`compile`] reads its source again with
//! a parser for a subset of Lua 5.1: locals, `if`/`elseif`/`else`, `do` blocks,
//! comparisons, arithmetic, `..`, `not`/`and`/`or`, `tonumber`/`tostring`, `redis.call`/
//! `redis.pcall`/`redis.status_reply`/`redis.error_reply`, `KEYS[i]`/`ARGV[i]`/`#KEYS`/
//! `#ARGV`, table constructors and `return`. A script entirely inside the subset becomes
//! a [`Plan`], a tree the server walks directly against the engine, under the same
//! keyspace lock and with the same run context (`bridge::RunCtx`) as the Lua path: the
//! same `redis.call` checks, MONITOR lines, notifications, time snapshot, read-only and
//! maxmemory rules and `busy` bookkeeping. Anything else, and any construct whose error
//! text the plan could not reproduce byte for byte, stays on Lua.
//!
//! docs/scripting.md explains why each construct behaves as the VM does. `CONFIG SET
//! lua-native-plans no` or `SCRIPT PLANS NO` sends every script to Lua; `SCRIPT PLAN
//! <sha1>` says which path a cached script takes.

mod lex;
mod luanum;
mod parse;
mod run;
pub(crate) use run::counted_error;

pub use luanum::{c_long_long, lua_number_bytes};
pub use run::Failure;

/// A script compiled to a native plan.
#[derive(Debug)]
pub struct Plan {
    chunk: parse::Chunk,
}

/// Compiles the body the VM compiled (shebang line already turned into a comment), or
/// says why the script stays on Lua.
pub fn compile(code: &[u8]) -> Result<Plan, String> {
    Ok(Plan {
        chunk: parse::parse(code)?,
    })
}

impl Plan {
    /// Runs the plan; `call` is `redis.call`'s checks and command (an error as its text).
    pub fn run(
        &self,
        fmt: lockcore::num::DoubleFmt,
        call: &mut run::CallFn,
        argv: &mut Vec<bytes::Bytes>,
        keys: &[bytes::Bytes],
        args: &[bytes::Bytes],
    ) -> Result<lockcore::Reply, Failure> {
        run::run(&self.chunk, fmt, call, argv, keys, args)
    }
}
