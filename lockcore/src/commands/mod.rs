//! The command table: every command's name, arity, flags and key positions, as data (the
//! row types are in `engine/spec.rs`; the rows are here, one file per family).
//!
//! Unknown command and arity are checked once, here, before any handler runs; COMMAND,
//! COMMAND INFO/DOCS/COUNT/GETKEYS, the key checks of scripts and cluster-slot checks all
//! read the same table. Each command family (strings.rs, keys.rs, ...) contributes a
//! `COMMANDS` slice; commands the server itself implements (connection state, pub/sub,
//! scripting, transactions) are listed with [`Exec::Server`].

// One file per command family: its rows of the table and its handlers.
pub mod bitops;
pub mod cluster_cmds;
pub mod geo;
pub mod hash_ttl;
pub mod hashes;
pub mod hyperloglog;
pub mod key_specs;
pub mod keys;
pub mod lists;
pub mod pubsub;
pub mod scripting_cmds;
pub mod server_cmds;
pub mod sets;
pub mod since;
pub mod slowlog_cmds;
pub mod sort;
pub mod stream_groups;
pub mod streams;
pub mod strings;
pub mod tips;
pub mod tumbler_cmds;
pub mod vsets;
pub mod zsets;

use bytes::Bytes;
use std::collections::HashMap;
use std::sync::OnceLock;

use crate::engine::spec::{flag, CommandSpec, Exec, Keys};
use crate::engine::{ClientCtx, Engine};
use crate::error;
use crate::personality::Personality;
use crate::reply::Reply;

// ---------------------------------------------------------------- shared argument parsing

/// Parses `numkeys key... WHERE [COUNT n]` from `a[at..]` (LMPOP, BLMPOP, ZMPOP, BZMPOP),
/// with `which` reading the WHERE token (LEFT|RIGHT, MIN|MAX). Returns the keys, the
/// parsed WHERE and the count (1 by default), or Redis' error.
pub fn parse_mpop<W>(
    a: &[Bytes],
    at: usize,
    which: impl Fn(&[u8]) -> Option<W>,
) -> Result<(Vec<Bytes>, W, usize), Reply> {
    let numkeys = match crate::num::parse_i64(&a[at]) {
        Some(n) if n >= 1 => n as usize,
        _ => return Err(Reply::err("ERR numkeys should be greater than 0")),
    };
    let where_at = at.saturating_add(numkeys).saturating_add(1);
    if where_at >= a.len() {
        return Err(error::syntax());
    }
    let Some(w) = which(&a[where_at]) else {
        return Err(error::syntax());
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && a[j].eq_ignore_ascii_case(b"count") && j + 1 < a.len() {
            j += 1;
            match crate::num::parse_i64(&a[j]) {
                Some(c) if c >= 1 => count = Some(c as usize),
                _ => return Err(Reply::err("ERR count should be greater than 0")),
            }
        } else {
            return Err(error::syntax());
        }
        j += 1;
    }
    Ok((a[at + 1..where_at].to_vec(), w, count.unwrap_or(1)))
}

// ---------------------------------------------------------------- the registry

fn families() -> impl Iterator<Item = &'static CommandSpec> {
    [
        crate::commands::strings::COMMANDS,
        crate::commands::keys::COMMANDS,
        crate::commands::hashes::COMMANDS,
        crate::commands::hash_ttl::COMMANDS,
        crate::commands::sets::COMMANDS,
        crate::commands::sort::COMMANDS,
        crate::commands::bitops::COMMANDS,
        crate::commands::hyperloglog::COMMANDS,
        crate::commands::geo::COMMANDS,
        crate::commands::streams::COMMANDS,
        crate::commands::stream_groups::COMMANDS,
        crate::commands::server_cmds::COMMANDS,
        crate::commands::pubsub::COMMANDS,
        crate::commands::lists::COMMANDS,
        crate::commands::zsets::COMMANDS,
        crate::commands::vsets::COMMANDS,
        crate::engine::locks::COMMANDS,
        crate::commands::scripting_cmds::COMMANDS,
        crate::commands::tumbler_cmds::COMMANDS,
        crate::engine::locks::lockdep::COMMANDS,
        crate::engine::snapshot::COMMANDS,
        crate::engine::report::COMMANDS,
        crate::commands::cluster_cmds::COMMANDS,
        crate::commands::slowlog_cmds::COMMANDS,
    ]
    .into_iter()
    .flatten()
}

/// Name -> spec. FxHash, not SipHash: the table is fixed at startup and never takes
/// client-chosen keys, so there is nothing to flood, and the lookup runs once per command.
/// By lowercase name bytes (a lookup then needs no UTF-8 check of the client's bytes).
type Registry = HashMap<&'static [u8], &'static CommandSpec, rustc_hash::FxBuildHasher>;

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| {
        let mut m = Registry::default();
        for c in families() {
            let prev = m.insert(c.name.as_bytes(), c);
            assert!(prev.is_none(), "command {} registered twice", c.name);
        }
        m
    })
}

/// Every top-level command.
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    registry().values().copied()
}

/// A top-level command's name spelled exactly as the table spells it, in lowercase or in
/// uppercase (what clients send), as static bytes, with its command: a parser can hand the
/// name out without copying it. Other spellings give None (use [`lookup`]). The lowercase
/// spellings are the registry's own keys; the uppercase ones are made at first use (one
/// small leaked string per command), in a table beside the registry with its hasher.
pub fn static_spelling(name: &[u8]) -> Option<(&'static [u8], &'static CommandSpec)> {
    static UPPER: OnceLock<Registry> = OnceLock::new();
    if let Some((k, c)) = registry().get_key_value(name) {
        return Some((k, c));
    }
    let upper = UPPER.get_or_init(|| {
        registry()
            .values()
            .map(|&c| {
                let up: &'static str = Box::leak(c.name.to_ascii_uppercase().into_boxed_str());
                (up.as_bytes(), c)
            })
            .collect()
    });
    upper.get_key_value(name).map(|(k, c)| (*k, *c))
}

/// Case-insensitive lookup of a top-level command.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut buf = [0u8; 32];
    if name.len() > buf.len() {
        return None;
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    registry().get(&*lower).copied()
}

/// [`lookup`] of a command that exists in personality `p`.
pub fn lookup_in(p: &Personality, name: &[u8]) -> Option<&'static CommandSpec> {
    lookup(name).filter(|s| p.has(s.avail))
}

/// Subcommand `name` of container `top`, if it exists in personality `p`.
pub fn subcommand_in(
    p: &Personality,
    top: &'static CommandSpec,
    name: &[u8],
) -> Option<&'static CommandSpec> {
    top.subcommands
        .iter()
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name) && p.has(s.avail))
}

/// Looks up `argv[0]` (and, for containers, `argv[1]`) and checks arity, returning the spec
/// to run or Redis' exact error.
pub fn lookup_checked(p: &Personality, argv: &[Bytes]) -> Result<&'static CommandSpec, Reply> {
    let Some(name) = argv.first() else {
        return Err(Reply::err("ERR empty command"));
    };
    check_spec(p, lookup(name), argv)
}

/// [`lookup_checked`] for a caller that looked `argv[0]` up already: `top` is what
/// [`lookup`] returned for it.
pub fn check_spec(
    p: &Personality,
    top: Option<&'static CommandSpec>,
    argv: &[Bytes],
) -> Result<&'static CommandSpec, Reply> {
    let Some(spec) = top.filter(|s| p.has(s.avail)) else {
        return Err(error::unknown_command(argv));
    };
    if let Exec::Container = spec.exec {
        if argv.len() < 2 {
            return Err(error::wrong_arity(spec.name));
        }
        let sub = &argv[1];
        let Some(s) = subcommand_in(p, spec, sub) else {
            return Err(error::unknown_subcommand(spec.name, sub));
        };
        if !s.arity_ok_in(p, argv.len()) {
            return Err(error::wrong_arity(&s.full_name()));
        }
        return Ok(s);
    }
    if !spec.arity_ok_in(p, argv.len()) {
        return Err(error::wrong_arity(spec.name));
    }
    Ok(spec)
}

// ---------------------------------------------------------------- running a command by name

impl Engine {
    /// Runs a command by name, for tests and the embedding API. Checks lookup and arity.
    pub fn run(&mut self, cl: &mut ClientCtx, argv: &[&[u8]]) -> Reply {
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let p = self.config.personality;
        match lookup_checked(&p, &argv) {
            Ok(spec) => {
                let r = self.call(cl, spec, &argv);
                self.after_command();
                r
            }
            Err(e) => e,
        }
    }
}

// ---------------------------------------------------------------- COMMAND replies

/// One command's entry in COMMAND / COMMAND INFO (Redis 7 layout), as personality `p`
/// shows it.
pub fn info_reply(p: &Personality, c: &CommandSpec) -> Reply {
    if c.group == "module" {
        return module_info_reply(p, c);
    }
    let (first, last, step) = c.legacy_key_range();
    let flags = c
        .flag_names_in(p)
        .map(|n| Reply::Simple(n.into()))
        .chain(
            // Redis 7.0 gives SORT_RO a getkeys procedure, which makes it movablekeys.
            (matches!(
                c.keys,
                Keys::NumKeys { .. }
                    | Keys::DestNumKeys { .. }
                    | Keys::Movable
                    | Keys::Sort
                    | Keys::GeoRadius
                    | Keys::Migrate
            ) || c.name == "sort_ro")
                .then(|| Reply::simple("movablekeys")),
        )
        .collect();
    let acl = c
        .acl_categories_in(p)
        .map(|a| Reply::Simple(format!("@{a}").into()))
        .collect();
    Reply::Array(vec![
        Reply::bulk_str(&c.full_name()),
        Reply::Int(c.arity_in(p) as i64),
        Reply::Set(flags),
        Reply::Int(first),
        Reply::Int(last),
        Reply::Int(step),
        Reply::Set(acl),
        Reply::Array(
            tips::tips_in(p, &c.full_name())
                .map(Reply::bulk_str)
                .collect(),
        ),
        Reply::Array(key_specs_in(p, c)),
        Reply::Array(
            c.subcommands
                .iter()
                .filter(|s| p.has(s.avail))
                .map(|s| info_reply(p, s))
                .collect(),
        ),
    ])
}

/// [`key_specs`] with each spec's flags and notes as personality `p`'s release gives them
/// (`key_specs.rs`), when it has as many specs as Tumbler's.
fn key_specs_in(p: &Personality, c: &CommandSpec) -> Vec<Reply> {
    let specs = key_specs(c);
    let Some(exact) = key_specs::key_spec_flags_in(p, &c.full_name()) else {
        return specs;
    };
    if exact.len() != specs.len() {
        return specs;
    }
    specs
        .into_iter()
        .zip(exact)
        .map(|(spec, (flags, notes))| {
            let Reply::Map(fields) = spec else {
                return spec;
            };
            let mut out = Vec::with_capacity(fields.len() + 1);
            if !notes.is_empty() {
                out.push((Reply::bulk_str("notes"), Reply::bulk_str(notes)));
            }
            for (k, v) in fields {
                if k == Reply::bulk_str("flags") {
                    let f = flags.iter().map(|f| Reply::simple(f)).collect();
                    out.push((k, Reply::Set(f)));
                } else {
                    out.push((k, v));
                }
            }
            Reply::Map(out)
        })
        .collect()
}

fn key_specs(c: &CommandSpec) -> Vec<Reply> {
    let flags = if c.has(flag::WRITE) { "RW" } else { "RO" };
    let spec = |begin: Reply, find: Reply| {
        Reply::Map(vec![
            (
                Reply::bulk_str("flags"),
                Reply::Set(vec![Reply::simple(flags)]),
            ),
            (Reply::bulk_str("begin_search"), begin),
            (Reply::bulk_str("find_keys"), find),
        ])
    };
    let index = |i: i32| {
        Reply::Map(vec![
            (Reply::bulk_str("type"), Reply::bulk_str("index")),
            (
                Reply::bulk_str("spec"),
                Reply::Map(vec![(Reply::bulk_str("index"), Reply::Int(i as i64))]),
            ),
        ])
    };
    let range = |last: i32, step: i32| {
        Reply::Map(vec![
            (Reply::bulk_str("type"), Reply::bulk_str("range")),
            (
                Reply::bulk_str("spec"),
                Reply::Map(vec![
                    (Reply::bulk_str("lastkey"), Reply::Int(last as i64)),
                    (Reply::bulk_str("keystep"), Reply::Int(step as i64)),
                    (Reply::bulk_str("limit"), Reply::Int(0)),
                ]),
            ),
        ])
    };
    let keynum = |step: i32| {
        Reply::Map(vec![
            (Reply::bulk_str("type"), Reply::bulk_str("keynum")),
            (
                Reply::bulk_str("spec"),
                Reply::Map(vec![
                    (Reply::bulk_str("keynumidx"), Reply::Int(0)),
                    (Reply::bulk_str("firstkey"), Reply::Int(1)),
                    (Reply::bulk_str("keystep"), Reply::Int(step as i64)),
                ]),
            ),
        ])
    };
    match c.keys {
        Keys::None => vec![],
        Keys::Movable => {
            let keyword = Reply::Map(vec![
                (Reply::bulk_str("type"), Reply::bulk_str("keyword")),
                (
                    Reply::bulk_str("spec"),
                    Reply::Map(vec![
                        (Reply::bulk_str("keyword"), Reply::bulk_str("STREAMS")),
                        (
                            Reply::bulk_str("startfrom"),
                            Reply::Int(if c.name == "xreadgroup" { 4 } else { 1 }),
                        ),
                    ]),
                ),
            ]);
            let half = Reply::Map(vec![
                (Reply::bulk_str("type"), Reply::bulk_str("range")),
                (
                    Reply::bulk_str("spec"),
                    Reply::Map(vec![
                        (Reply::bulk_str("lastkey"), Reply::Int(-1)),
                        (Reply::bulk_str("keystep"), Reply::Int(1)),
                        (Reply::bulk_str("limit"), Reply::Int(2)),
                    ]),
                ),
            ]);
            // Both stream readers declare their keys "RO access" (XREADGROUP's group
            // state is not the key's value).
            vec![Reply::Map(vec![
                (
                    Reply::bulk_str("flags"),
                    Reply::Set(vec![Reply::simple("RO"), Reply::simple("access")]),
                ),
                (Reply::bulk_str("begin_search"), keyword),
                (Reply::bulk_str("find_keys"), half),
            ])]
        }
        Keys::Sort | Keys::GeoRadius => vec![spec(index(1), range(0, 1))],
        Keys::Migrate => vec![spec(index(3), range(0, 1))],
        Keys::Range { first, last, step } => {
            let rel_last = if last < 0 { last } else { last - first };
            vec![spec(index(first), range(rel_last, step))]
        }
        Keys::NumKeys { numkeys_at, step } => vec![spec(index(numkeys_at), keynum(step))],
        Keys::DestNumKeys { dest, numkeys_at } => vec![
            spec(index(dest), range(0, 1)),
            spec(index(numkeys_at), keynum(1)),
        ],
    }
}

/// COMMAND INFO of a command Redis implements in a module (8.0's vector sets): its name as
/// the module registered it (uppercase), the `module` flag, no ACL categories, and the
/// module's key spec (RW access update).
fn module_info_reply(p: &Personality, c: &CommandSpec) -> Reply {
    let Reply::Array(mut v) = info_reply(p, &CommandSpec { group: "", ..*c }) else {
        unreachable!()
    };
    v[0] = Reply::bulk_str(&c.full_name().to_ascii_uppercase());
    if let Reply::Set(flags) = &mut v[2] {
        // Redis lists "module" after write/readonly/denyoom and before the rest.
        let at = flags
            .iter()
            .take_while(|f| matches!(f, Reply::Simple(n) if ["write", "readonly", "denyoom"].contains(&n.as_ref())))
            .count();
        flags.insert(at, Reply::simple("module"));
    }
    v[6] = Reply::Set(vec![]);
    // Tips, key specs and subcommands come as sets (RESP3 `~`) for a module command.
    for item in &mut v[7..=9] {
        if let Reply::Array(x) = item {
            *item = Reply::Set(std::mem::take(x));
        }
    }
    if let Reply::Set(specs) = &mut v[8] {
        for spec in specs.iter_mut() {
            if let Reply::Map(fields) = spec {
                fields[0].1 = Reply::Set(
                    ["RW", "access", "update"]
                        .into_iter()
                        .map(Reply::simple)
                        .collect(),
                );
            }
        }
    }
    Reply::Array(v)
}

/// COMMAND DOCS for one command (summary, since, group), as personality `p` shows it.
pub fn docs_reply(p: &Personality, c: &CommandSpec) -> Reply {
    if c.group == "module" {
        // What Redis 8.0 gives for its vector-sets module's commands.
        return Reply::Map(vec![
            (Reply::bulk_str("group"), Reply::bulk_str("module")),
            (Reply::bulk_str("module"), Reply::bulk_str("vectorset")),
        ]);
    }
    let mut fields = vec![
        (Reply::bulk_str("summary"), Reply::bulk_str(c.summary)),
        (
            Reply::bulk_str("since"),
            Reply::bulk_str(since::since_in(p, &c.full_name(), c.since)),
        ),
        (Reply::bulk_str("group"), Reply::bulk_str(c.group)),
    ];
    if !c.subcommands.is_empty() {
        fields.push((
            Reply::bulk_str("subcommands"),
            Reply::Map(
                c.subcommands
                    .iter()
                    .filter(|s| p.has(s.avail))
                    .map(|s| (Reply::bulk_str(&s.full_name()), docs_reply(p, s)))
                    .collect(),
            ),
        ));
    }
    Reply::Map(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::clock::ManualClock;

    #[test]
    fn lookup_is_case_insensitive_and_checks_arity() {
        let argv = |v: &[&str]| {
            v.iter()
                .map(|s| Bytes::copy_from_slice(s.as_bytes()))
                .collect::<Vec<_>>()
        };
        let p = Personality::DEFAULT;
        assert_eq!(
            lookup_checked(&p, &argv(&["GeT", "k"])).unwrap().name,
            "get"
        );
        assert_eq!(
            lookup_checked(&p, &argv(&["get"])).unwrap_err(),
            Reply::err("ERR wrong number of arguments for 'get' command")
        );
        assert_eq!(
            lookup_checked(&p, &argv(&["nope", "a"])).unwrap_err(),
            Reply::err("ERR unknown command 'nope', with args beginning with: 'a' ")
        );
    }

    #[test]
    fn every_command_has_a_sane_entry() {
        for c in all() {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(c.arity != 0, "{}", c.name);
            assert!(
                !(c.has(flag::WRITE) && c.has(flag::READONLY)),
                "{} is both write and readonly",
                c.name
            );
        }
    }

    #[test]
    fn lazy_expiry_on_the_injected_clock() {
        let clock = ManualClock::new(1_000_000);
        let mut e = Engine::with_clock(16, clock.clone());
        let mut cl = ClientCtx::default();
        assert_eq!(
            e.run(&mut cl, &[b"set", b"k", b"v", b"px", b"100"]),
            Reply::ok()
        );
        clock.advance_ms(99);
        assert_eq!(e.run(&mut cl, &[b"get", b"k"]), Reply::bulk_str("v"));
        clock.advance_ms(1);
        assert_eq!(e.run(&mut cl, &[b"get", b"k"]), Reply::Null);
        assert_eq!(e.stats.expired_keys, 1);
    }

    #[test]
    fn active_expiry_removes_keys_nobody_reads() {
        let clock = ManualClock::new(1_000_000);
        let mut e = Engine::with_clock(16, clock.clone());
        let mut cl = ClientCtx::default();
        e.run(&mut cl, &[b"set", b"lock", b"holder", b"px", b"30000"]);
        assert_eq!(e.next_deadline(), Some(1_030_000));
        clock.advance_ms(30_000);
        e.tick();
        assert_eq!(e.dbs[0].len(), 0);
        assert_eq!(e.next_deadline(), None);
    }
}
