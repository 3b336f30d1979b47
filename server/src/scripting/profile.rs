//! The script profiler: `CONFIG SET lua-profiler yes` and `TUMBLER.PROFILE GET|RESET|HELP`
//! (docs/profiling.md).
//!
//! While the profiler is on, the Lua VM's one hook slot carries both triggers: the
//! instruction count the busy-script hook needs (SCRIPT KILL, moving a long script off its
//! worker) and a line event, so the same `bridge::hook` sees both and dispatches on the
//! event. While it is off the hook is the instruction count alone, exactly as before. The
//! native-plan path has no lines to hook: each `redis.call` of a plan reports its own
//! line and command time (bridge.rs `plan_call_profiled`).

use bytes::Bytes;
use mlua::{HookTriggers, Lua};

use lockcore::CommandSpec;
use lockcore::{error, Reply};

use super::bridge;
use super::stats::Profile;
use crate::state::Core;

/// Sets the VM's hook: the instruction count always, line events while profiling.
pub fn install_hook(lua: &Lua, profiling: bool) {
    let mut t = HookTriggers::new().every_nth_instruction(bridge::HOOK_EVERY);
    if profiling {
        t = t.every_line();
    }
    if let Err(e) = lua.set_global_hook(t, bridge::hook) {
        tracing::warn!("setting the Lua hook: {e}");
    }
}

/// `TUMBLER.PROFILE <subcommand>`.
pub fn command(core: &mut Core, spec: &CommandSpec, a: &[Bytes]) -> Reply {
    match spec.name {
        "get" => get(core, a),
        "reset" => {
            if let Some(vm) = &mut crate::scripting::Scripts::of(&mut *core.scripts).vm {
                for c in vm.cache.values_mut() {
                    c.stats.profile = Default::default();
                }
            }
            Reply::ok()
        }
        "help" => Reply::Array(
            [
                "TUMBLER.PROFILE <subcommand> [<arg> ...]. Subcommands are:",
                "GET [<sha1>]",
                "    Return the profile of one script, or of every profiled script, busiest",
                "    first (CONFIG SET lua-profiler yes starts profiling).",
                "RESET",
                "    Forget every script profile.",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => error::unknown_subcommand("tumbler.profile", spec.name.as_bytes()),
    }
}

fn get(core: &mut Core, a: &[Bytes]) -> Reply {
    if a.len() > 3 {
        return error::wrong_arity("tumbler.profile|get");
    }
    let want = match a.get(2) {
        None => None,
        Some(s) if s.len() == 40 => {
            let mut k = [0u8; 40];
            k.copy_from_slice(s);
            k.make_ascii_lowercase();
            Some(k)
        }
        Some(_) => return Reply::err(super::error_noscript()),
    };
    let Some(vm) = &crate::scripting::Scripts::of(&mut *core.scripts).vm else {
        return match want {
            Some(_) => Reply::err(super::error_noscript()),
            None => Reply::Array(vec![]),
        };
    };
    if let Some(k) = &want {
        if !vm.cache.contains_key(k) {
            return Reply::err(super::error_noscript());
        }
    }
    let mut entries: Vec<(u64, Reply)> = Vec::new();
    for (sha, c) in &vm.cache {
        if want.as_ref().is_some_and(|w| w != sha) {
            continue;
        }
        for (i, p) in c.stats.profile.iter().enumerate() {
            if let Some(p) = p {
                let path = if i == 1 { "native" } else { "lua" };
                entries.push((p.ns, entry(sha, path, p, &c.source)));
            }
        }
    }
    entries.sort_by(|a, b| b.0.cmp(&a.0));
    Reply::Array(entries.into_iter().map(|(_, r)| r).collect())
}

fn field(name: &str, v: Reply) -> (Reply, Reply) {
    (Reply::bulk_str(name), v)
}

fn us(ns: u64) -> Reply {
    Reply::Int((ns / 1000) as i64)
}

/// One script's profile on one path: totals, then its lines busiest first.
fn entry(sha: &[u8; 40], path: &str, p: &Profile, source: &[u8]) -> Reply {
    let text: Vec<&[u8]> = source.split(|&b| b == b'\n').collect();
    let mut lines: Vec<(usize, _)> = p
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.hits > 0)
        .collect();
    lines.sort_by(|a, b| b.1.ns.cmp(&a.1.ns).then(a.0.cmp(&b.0)));
    let lines = lines
        .into_iter()
        .map(|(n, l)| {
            let src = text.get(n.wrapping_sub(1)).copied().unwrap_or_default();
            let src = src.strip_suffix(b"\r").unwrap_or(src);
            Reply::Map(vec![
                field("line", Reply::Int(n as i64)),
                field("hits", Reply::Int(l.hits as i64)),
                field("usec", us(l.ns)),
                field("command_usec", us(l.cmd_ns)),
                field("source", Reply::Bulk(Bytes::copy_from_slice(src))),
            ])
        })
        .collect();
    Reply::Map(vec![
        field("sha", Reply::Bulk(Bytes::copy_from_slice(sha))),
        field("path", Reply::bulk_str(path)),
        field("calls", Reply::Int(p.calls as i64)),
        field("usec", us(p.ns)),
        // In whole microseconds, so that the two parts add up to `usec` exactly.
        field(
            "interpreter_usec",
            Reply::Int(((p.ns / 1000).saturating_sub(p.cmd_ns / 1000)) as i64),
        ),
        field("command_usec", us(p.cmd_ns)),
        field("lines", Reply::Array(lines)),
    ])
}

crate::server_command!(["tumbler.profile"], |_, g, spec, a| {
    command(crate::state::core(g), spec, a)
});
