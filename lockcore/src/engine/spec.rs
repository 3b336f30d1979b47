//! The command table's types: every command's name, arity, flags and key positions as
//! data ([`CommandSpec`]), who runs it ([`Exec`]), and what an engine handler is and gets
//! ([`Handler`], [`Ctx`]). The rows of the table are in `commands/`, one file per family;
//! the registry and lookup are `commands/mod.rs`.

use bytes::Bytes;

use crate::engine::{BlockRequest, ClientCtx, Engine};
use crate::personality::{Personality, Since};
use crate::reply::Reply;
use crate::storage::db::Db;

/// A command's flags, as COMMAND INFO prints them.
pub mod flag {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_MONITOR: u32 = 1 << 9;
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    pub const FAST: u32 = 1 << 11;
    pub const NO_AUTH: u32 = 1 << 12;
    pub const MAY_REPLICATE: u32 = 1 << 13;
    pub const NO_MULTI: u32 = 1 << 14;
    pub const ALLOW_BUSY: u32 = 1 << 15;
    pub const SENTINEL: u32 = 1 << 16;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 17;
    pub const NO_ASYNC_LOADING: u32 = 1 << 18;
    /// Tumbler's own, not shown by COMMAND: a server command (`Exec::Server`) that runs
    /// under the keyspace lock, which the connection takes before it runs.
    pub const CORE: u32 = 1 << 19;

    /// The flags COMMAND INFO shows (never `may_replicate`, which Redis keeps to itself),
    /// in its order. Valkey 8.1 calls `skip_slowlog` `skip_commandlog`
    /// ([`super::CommandSpec::flag_names_in`]).
    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (NO_MULTI, "no_multi"),
        (ALLOW_BUSY, "allow_busy"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
    ];
}

/// Where a command's keys are in its arguments (argv[0] is the command name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    None,
    /// Keys at `first..=last` (negative `last` counts from the end) every `step`.
    Range {
        first: i32,
        last: i32,
        step: i32,
    },
    /// The number of keys is at argument `numkeys_at`; keys follow it (EVAL, ZUNIONSTORE
    /// has the destination first: `first` is where the keys begin relative to numkeys).
    NumKeys {
        numkeys_at: i32,
        step: i32,
    },
    /// A destination key at `dest` and `numkeys` keys at `numkeys_at` (ZUNIONSTORE).
    DestNumKeys {
        dest: i32,
        numkeys_at: i32,
    },
    /// XREAD/XREADGROUP: the first half of the arguments after the `STREAMS` keyword
    /// (Redis' keyword key spec; the options before it are skipped as XREAD parses them).
    Movable,
    /// SORT: the key at 1, and the argument after the last STORE option (Redis'
    /// sortGetKeys, which skips the arguments of LIMIT, GET and BY).
    Sort,
    /// GEORADIUS[BYMEMBER]: the key at 1, and the arguments after the first STORE and the
    /// first STOREDIST from argument 6 on (Redis 7.0's keyword key specs).
    GeoRadius,
    /// MIGRATE: the key at 3, or with an empty key there, the arguments after `KEYS`.
    Migrate,
}

pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> Reply;

/// Who runs a command.
#[derive(Clone, Copy)]
pub enum Exec {
    /// A pure handler against the keyspace.
    Engine(Handler),
    /// The server: connection state, pub/sub, scripting, transactions, introspection.
    Server,
    /// A container whose subcommands are in `subcommands`.
    Container,
}

impl std::fmt::Debug for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exec::Engine(_) => f.write_str("Engine"),
            Exec::Server => f.write_str("Server"),
            Exec::Container => f.write_str("Container"),
        }
    }
}

#[derive(Debug)]
pub struct CommandSpec {
    /// Lowercase name; for a subcommand, the subcommand alone ("setname").
    pub name: &'static str,
    /// For a subcommand, its container ("client"); empty otherwise.
    pub parent: &'static str,
    /// Redis arity: N means exactly N arguments (with the name), -N at least N.
    pub arity: i32,
    pub flags: u32,
    pub keys: Keys,
    /// ACL categories, without the '@'.
    pub acl: &'static [&'static str],
    pub group: &'static str,
    pub since: &'static str,
    /// In which personalities the command exists (engine/personality.rs).
    pub avail: Since,
    pub summary: &'static str,
    pub exec: Exec,
    pub subcommands: &'static [CommandSpec],
}

impl CommandSpec {
    /// "get", or "client|setname".
    pub fn full_name(&self) -> String {
        if self.parent.is_empty() {
            self.name.to_string()
        } else {
            format!("{}|{}", self.parent, self.name)
        }
    }

    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// The arity personality `p` announces and checks: ZRANK and ZREVRANK took exactly 3
    /// arguments before 7.2 added WITHSCORE.
    pub fn arity_in(&self, p: &Personality) -> i32 {
        if !p.has(Since::redis(702))
            && self.arity == -3
            && matches!(self.name, "zrank" | "zrevrank")
        {
            return 3;
        }
        // Redis 7.0: COMMAND GETKEYS needed a command with an argument.
        if !p.has(Since::redis(702))
            && self.parent == "command"
            && matches!(self.name, "getkeys" | "getkeysandflags")
        {
            return -4;
        }
        // Valkey 9.1: SCRIPT DEBUG takes an engine name too.
        if p.has(Since::valkey(901)) && self.parent == "script" && self.name == "debug" {
            return -3;
        }
        self.arity
    }

    /// The flags personality `p` gives the command: Redis 7.2 let the blocking list and
    /// sorted-set pops run in scripts (they do not block there), 7.4 (Valkey 8.0) WAIT and
    /// WAITAOF, which became `blocking`.
    pub fn flags_in(&self, p: &Personality) -> u32 {
        let mut f = self.flags;
        if p.has(Since::valkey(800)) {
            f |= match (self.parent, self.name) {
                (
                    "client",
                    "caching" | "getname" | "getredir" | "id" | "no-evict" | "no-touch" | "setinfo"
                    | "setname",
                )
                | ("", "select") => flag::ALLOW_BUSY,
                ("client", "reply") => flag::ALLOW_BUSY | flag::NO_MULTI,
                ("", "multi" | "watch") => flag::NO_MULTI,
                ("memory", "malloc-stats" | "purge") => flag::LOADING,
                ("script", "exists" | "flush") => flag::STALE,
                _ => 0,
            };
        }
        if !self.parent.is_empty() {
            return f;
        }
        if p.has(Since::redis(702))
            && matches!(
                self.name,
                "blmove" | "blpop" | "brpop" | "brpoplpush" | "bzpopmax" | "bzpopmin"
            )
        {
            f &= !flag::NOSCRIPT;
        }
        if p.has(Since::both(704, 800)) && matches!(self.name, "wait" | "waitaof") {
            f = (f & !flag::NOSCRIPT) | flag::BLOCKING;
        }
        f
    }

    /// The names of [`CommandSpec::flags_in`] as COMMAND INFO lists them.
    pub fn flag_names_in(&self, p: &Personality) -> impl Iterator<Item = &'static str> {
        let f = self.flags_in(p);
        let valkey_log = p.has(Since::valkey(801));
        flag::NAMES
            .iter()
            .filter(move |(b, _)| f & b != 0)
            .map(move |&(b, n)| {
                if b == flag::SKIP_SLOWLOG && valkey_log {
                    "skip_commandlog"
                } else {
                    n
                }
            })
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        Self::arity_allows(self.arity, argc)
    }

    /// True if the command exists with `argc` arguments in every personality, so that a
    /// lookup made before the personality is known (a native plan's) cannot be wrong.
    pub fn ok_in_every_personality(&self, argc: usize) -> bool {
        self.avail == Since::ALWAYS
            && crate::personality::ALL
                .iter()
                .all(|p| self.arity_ok_in(p, argc))
    }

    /// [`CommandSpec::arity_ok`] with the arity of personality `p`.
    pub fn arity_ok_in(&self, p: &Personality, argc: usize) -> bool {
        Self::arity_allows(self.arity_in(p), argc)
    }

    fn arity_allows(a: i32, argc: usize) -> bool {
        (a >= 0 && argc == a as usize) || (a < 0 && argc >= (-a) as usize)
    }

    /// The key arguments of `argv`, per the key spec. Malformed numkeys yields no keys.
    pub fn key_positions(&self, argv: &[Bytes]) -> Vec<usize> {
        let mut v = Vec::new();
        self.for_each_key(argv, |i| v.push(i));
        v
    }

    /// Calls `f` with each key argument's index, in order, without allocating (the cluster
    /// slot check runs this on every command).
    pub fn for_each_key(&self, argv: &[Bytes], mut f: impl FnMut(usize)) {
        let n = argv.len() as i32;
        match self.keys {
            Keys::None => {}
            Keys::Movable => {
                let mut i = 1;
                while i < argv.len() {
                    let a = &argv[i];
                    if a.eq_ignore_ascii_case(b"streams") {
                        let rest = argv.len() - i - 1;
                        (i + 1..i + 1 + rest / 2).for_each(f);
                        return;
                    }
                    i += if a.eq_ignore_ascii_case(b"group") {
                        3
                    } else if a.eq_ignore_ascii_case(b"block") || a.eq_ignore_ascii_case(b"count") {
                        2
                    } else {
                        1
                    };
                }
            }
            Keys::Sort => {
                let mut store = None;
                let mut i = 2;
                while i < argv.len() {
                    let a = &argv[i];
                    if a.eq_ignore_ascii_case(b"limit") {
                        i += 2;
                    } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
                        i += 1;
                    } else if a.eq_ignore_ascii_case(b"store") && i + 1 < argv.len() {
                        store = Some(i + 1);
                    }
                    i += 1;
                }
                std::iter::once(1).chain(store).for_each(f);
            }
            Keys::GeoRadius => {
                // Two keyword key specs, each the first match from argument 6 on.
                let after = |word: &[u8]| {
                    (6..argv.len().saturating_sub(1))
                        .find(|&i| argv[i].eq_ignore_ascii_case(word))
                        .map(|i| i + 1)
                };
                std::iter::once(1)
                    .chain(after(b"store"))
                    .chain(after(b"storedist"))
                    .for_each(f);
            }
            Keys::Migrate => {
                // Redis' migrateGetKeys: the key at 3, or after a KEYS option (skipping
                // the arguments of AUTH and AUTH2) the rest; none if both are given.
                let mut keys = 3..4;
                let mut i = 6;
                while i < argv.len() {
                    let a = &argv[i];
                    if a.eq_ignore_ascii_case(b"keys") {
                        keys = if argv[3].is_empty() {
                            i + 1..argv.len()
                        } else {
                            0..0
                        };
                        break;
                    } else if a.eq_ignore_ascii_case(b"auth") {
                        i += 1;
                    } else if a.eq_ignore_ascii_case(b"auth2") {
                        i += 2;
                    }
                    i += 1;
                }
                keys.for_each(f);
            }
            Keys::Range { first, last, step } => {
                let last = if last < 0 { n + last } else { last.min(n - 1) };
                (first..=last)
                    .step_by(step.max(1) as usize)
                    .filter(|&i| i < n)
                    .for_each(|i| f(i as usize));
            }
            Keys::NumKeys { numkeys_at, step } => {
                let Some(nk) = argv
                    .get(numkeys_at as usize)
                    .and_then(|a| crate::num::parse_i64(a))
                else {
                    return;
                };
                let first = numkeys_at + 1;
                // More keys than arguments: Redis' key spec is invalid and names no key
                // (the command then fails on its own; ACL DRYRUN says OK).
                let step = step.max(1) as i64;
                if nk > 0 && first as i64 + (nk - 1) * step >= n as i64 {
                    return;
                }
                (0..nk.clamp(0, n as i64))
                    .map(|i| first as i64 + i * step)
                    .for_each(|i| f(i as usize));
            }
            Keys::DestNumKeys { dest, numkeys_at } => {
                f(dest as usize);
                if let Some(nk) = argv
                    .get(numkeys_at as usize)
                    .and_then(|a| crate::num::parse_i64(a))
                {
                    (0..nk.clamp(0, n as i64) as i32)
                        .map(|i| numkeys_at + 1 + i)
                        .take_while(|&i| i < n)
                        .for_each(|i| f(i as usize));
                }
            }
        }
    }

    /// (first, last, step) as COMMAND INFO's legacy fields show them.
    pub fn legacy_key_range(&self) -> (i64, i64, i64) {
        match self.keys {
            Keys::None => (0, 0, 0),
            Keys::Sort | Keys::GeoRadius => (1, 1, 1),
            Keys::Migrate => (3, 3, 1),
            Keys::Range { first, last, step } => (first as i64, last as i64, step as i64),
            Keys::NumKeys { .. } | Keys::Movable => (0, 0, 0),
            Keys::DestNumKeys { dest, .. } => (dest as i64, dest as i64, 1),
        }
    }
}

/// Redis 7's ACL categories, in the order ACL CAT and COMMAND INFO list them (bit i of
/// [`CommandSpec::acl_mask`] is category i).
pub const ACL_CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The bit of a category name (case-insensitive, without the '@').
pub fn acl_category_bit(name: &[u8]) -> Option<u32> {
    ACL_CATEGORIES
        .iter()
        .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

impl CommandSpec {
    /// [`CommandSpec::acl_mask`] with the flags of personality `p` ([`CommandSpec::flags_in`]).
    pub fn acl_mask_in(&self, p: &Personality) -> u32 {
        CommandSpec {
            flags: self.flags_in(p),
            ..*self
        }
        .acl_mask()
    }

    /// The command's ACL categories as a bitmask over [`ACL_CATEGORIES`]: the ones its table
    /// row names, plus those Redis derives from the flags (`setImplicitACLCategories`):
    /// write, read (not for scripting commands), admin+dangerous, pubsub, fast, blocking,
    /// and slow for everything that is not fast.
    /// The name COMMAND LIST/DOCS and ACL denials print: a module command's (Redis 8.0's
    /// vector sets) is uppercase, as the module registered it.
    pub fn listed_name(&self) -> String {
        if self.group == "module" {
            self.full_name().to_ascii_uppercase()
        } else {
            self.full_name()
        }
    }

    pub fn acl_mask(&self) -> u32 {
        // Redis 8.0's module commands (vector sets) are in no category: only +@all or
        // naming them grants them, and -@write does not take them away.
        if self.group == "module" {
            return 0;
        }
        let bit = |n: &str| acl_category_bit(n.as_bytes()).unwrap_or(0);
        let mut m = self.acl.iter().fold(0, |m, c| m | bit(c));
        if self.has(flag::WRITE) {
            m |= bit("write");
        }
        if self.has(flag::READONLY) && m & bit("scripting") == 0 {
            m |= bit("read");
        }
        if self.has(flag::ADMIN) {
            m |= bit("admin") | bit("dangerous");
        }
        if self.has(flag::PUBSUB) {
            m |= bit("pubsub");
        }
        if self.has(flag::FAST) {
            m |= bit("fast");
        }
        if self.has(flag::BLOCKING) {
            m |= bit("blocking");
        }
        if m & bit("fast") == 0 {
            m |= bit("slow");
        }
        m
    }

    /// The names of [`CommandSpec::acl_mask`], in Redis' order.
    pub fn acl_categories(&self) -> impl Iterator<Item = &'static str> {
        self.acl_categories_in(&Personality::DEFAULT)
    }

    /// The names of [`CommandSpec::acl_mask_in`], in Redis' order.
    pub fn acl_categories_in(&self, p: &Personality) -> impl Iterator<Item = &'static str> {
        let m = self.acl_mask_in(p);
        ACL_CATEGORIES
            .iter()
            .enumerate()
            .filter(move |(i, _)| m & (1 << i) != 0)
            .map(|(_, c)| *c)
    }
}

/// `spec`, available only `since` (a command newer than Redis 7.0, or Valkey's own).
pub const fn since(avail: Since, spec: CommandSpec) -> CommandSpec {
    CommandSpec { avail, ..spec }
}

/// A default spec to build table entries with `..BASE`.
pub const BASE: CommandSpec = CommandSpec {
    name: "",
    parent: "",
    arity: 1,
    flags: 0,
    keys: Keys::None,
    acl: &[],
    group: "generic",
    since: "1.0.0",
    avail: Since::ALWAYS,
    summary: "",
    exec: Exec::Server,
    subcommands: &[],
};

/// An engine command of `group` with ACL categories `acl`; the command families' table
/// builders are thin wrappers around it.
pub const fn engine(
    group: &'static str,
    acl: &'static [&'static str],
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    h: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        group,
        acl,
        exec: Exec::Engine(h),
        ..BASE
    }
}

/// `spec` with the ACL categories Redis' command JSON gives it (those not implied by its
/// flags, see [`CommandSpec::acl_mask`]).
pub const fn with_acl(acl: &'static [&'static str], spec: CommandSpec) -> CommandSpec {
    CommandSpec { acl, ..spec }
}

/// Shorthand for the common key spec "one key at argument 1".
pub const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};

/// What a handler gets: the engine, the calling client and a way to ask to block.
pub struct Ctx<'a> {
    pub eng: &'a mut Engine,
    pub cl: &'a mut ClientCtx,
    /// Set by a blocking command that cannot be served yet.
    pub block: Option<BlockRequest>,
}

impl Ctx<'_> {
    pub fn db(&mut self) -> &mut Db {
        &mut self.eng.dbs[self.cl.db]
    }
    pub fn dbi(&self) -> usize {
        self.cl.db
    }
    pub fn now(&self) -> i64 {
        self.eng.now_ms()
    }
    /// The write epilogue for a key of the current db.
    pub fn modified(&mut self, key: &Bytes, class: u32, event: &str) {
        let db = self.cl.db;
        self.eng.modified(db, key, class, event);
    }
    /// Call before creating `key`: sends the `new` event if it does not exist yet.
    pub fn note_new_key(&mut self, key: &Bytes) {
        let db = self.cl.db;
        self.eng.note_new_key(db, key);
    }
    pub fn notify(&mut self, class: u32, event: &str, key: &Bytes) {
        let db = self.cl.db;
        self.eng.notify(class, event, db, key);
    }
    /// Looks a key up for reading: lazy expiry, hit/miss stats, LRU touch.
    pub fn read(&mut self, key: &[u8]) -> Option<&mut crate::storage::value::Entry> {
        let db = self.cl.db;
        let now = self.eng.now_ms();
        let no_touch = self.cl.no_touch;
        self.eng.lookup_read(db, key, now, !no_touch)
    }
    /// [`Ctx::read`] without the LRU/LFU touch: Redis' LOOKUP_NOTOUCH, which TTL, PTTL,
    /// EXPIRETIME, PEXPIRETIME, TYPE and EXISTS use (they leave OBJECT IDLETIME alone).
    pub fn read_notouch(&mut self, key: &[u8]) -> Option<&mut crate::storage::value::Entry> {
        let db = self.cl.db;
        let now = self.eng.now_ms();
        self.eng.lookup_read(db, key, now, false)
    }
    /// Looks a key up for writing: lazy expiry, no stats, and the access time set as
    /// Redis' lookupKeyWrite sets it (not for a CLIENT NO-TOUCH client).
    pub fn write(&mut self, key: &[u8]) -> Option<&mut crate::storage::value::Entry> {
        let db = self.cl.db;
        let touch = !self.cl.no_touch;
        self.eng.lookup_write(db, key, touch)
    }
    /// Looks a key up for writing and creates it with `make()` (no TTL, with the `new`
    /// event) if absent or expired. One probe when the key exists.
    pub fn write_or_create(
        &mut self,
        key: &Bytes,
        make: impl FnOnce() -> crate::storage::value::Value,
    ) -> &mut crate::storage::value::Entry {
        let db = self.cl.db;
        let touch = !self.cl.no_touch;
        self.eng.lookup_or_insert(db, key, touch, make)
    }
    /// Looks a key up without counting or touching it: lazy expiry only. Redis' OBJECT and
    /// MEMORY USAGE look keys up this way (LOOKUP_NOTOUCH, no stats).
    pub fn peek(&mut self, key: &[u8]) -> Option<&mut crate::storage::value::Entry> {
        let db = self.cl.db;
        self.eng.lookup(db, key)
    }
    pub fn exists(&mut self, key: &[u8]) -> bool {
        self.write(key).is_some()
    }
}
