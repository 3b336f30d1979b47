//! ACL users, as Redis 7.0 has them: command categories, key and channel patterns,
//! selectors, the ACL log. This is the model every check reads; AUTH, the ACL commands and
//! the ACL file are in acl.rs, and the checks every command passes in conn/checks.rs.
//!
//! The command table is the one source of truth: a rule like `-@dangerous` selects the
//! commands whose [`CommandSpec::acl_mask`] has that category, and `%R~`/`%W~` patterns use
//! the key access of [`lockcore::key_access`].
//!
//! Users are immutable `Arc<User>`s in one map; ACL SETUSER builds a new value and swaps it
//! in, and bumps a version counter. A connection keeps its user's `Arc` and refreshes it when
//! the version moved, so the per-command cost for the usual all-permitted `default` user is
//! one atomic load and one flag test.

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use lockcore::commands;
use lockcore::engine::spec::{flag, CommandSpec, ACL_CATEGORIES};

use lockcore::Reply;

// ---------------------------------------------------------------- command ids

/// Every command and subcommand, numbered for the permission bitmaps.
struct Ids {
    specs: Vec<&'static CommandSpec>,
    by_ptr: HashMap<usize, usize>,
}

fn ids() -> &'static Ids {
    static IDS: OnceLock<Ids> = OnceLock::new();
    IDS.get_or_init(|| {
        let mut tops: Vec<&'static CommandSpec> = commands::all().collect();
        tops.sort_by_key(|c| c.name);
        let mut specs = Vec::new();
        for c in tops {
            specs.push(c);
            specs.extend(c.subcommands.iter());
        }
        let by_ptr = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (*s as *const CommandSpec as usize, i))
            .collect();
        Ids { specs, by_ptr }
    })
}

fn id_of(spec: &CommandSpec) -> Option<usize> {
    ids()
        .by_ptr
        .get(&(spec as *const CommandSpec as usize))
        .copied()
}

/// `get` or `config|get`, as ACL rules name commands; None for an unknown name or more
/// than one `|`.
fn lookup_rule_command(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut parts = name.split(|&b| b == b'|');
    let top = commands::lookup(parts.next()?)?;
    match parts.next() {
        None => Some(top),
        Some(sub) => {
            if parts.next().is_some() {
                return None;
            }
            top.subcommands
                .iter()
                .find(|s| s.name.as_bytes().eq_ignore_ascii_case(sub))
        }
    }
}

/// The spec whose permission bit applies: COMMAND's subcommands are listed in the table but
/// run by the top-level spec, so `-command|docs` must still match.
pub(crate) fn acl_spec(spec: &'static CommandSpec, argv: &[Bytes]) -> &'static CommandSpec {
    if spec.parent.is_empty() && !spec.subcommands.is_empty() && argv.len() >= 2 {
        if let Some(s) = spec
            .subcommands
            .iter()
            .find(|s| s.name.as_bytes().eq_ignore_ascii_case(&argv[1]))
        {
            return s;
        }
    }
    spec
}

#[derive(Clone, Default, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn filled(v: bool) -> Bits {
        let n = ids().specs.len().div_ceil(64);
        Bits(vec![if v { u64::MAX } else { 0 }; n])
    }
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    fn set(&mut self, i: usize, v: bool) {
        if v {
            self.0[i / 64] |= 1 << (i % 64);
        } else {
            self.0[i / 64] &= !(1 << (i % 64));
        }
    }
}

// ---------------------------------------------------------------- selectors and users

pub(crate) const READ: u8 = 1;
const WRITE: u8 = 2;

/// Why a rule was refused; the text is Redis' `ACLSetUserStringError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    UnknownCommand,
    Syntax,
    KeysAfterAll,
    ChannelsAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSubcommand,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeysAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelsAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// One set of command, key and channel permissions: the user's root, or a `(...)` selector.
#[derive(Clone, PartialEq, Eq)]
pub struct Selector {
    /// Every command, including ones added later (`+@all` without a later `-...`).
    allcommands: bool,
    /// Started from `+@all`: ACL LIST describes it as `+@all ...`.
    from_all: bool,
    allowed: Bits,
    /// `+select|0`: first arguments allowed for an otherwise denied command.
    firstargs: HashMap<usize, Vec<Vec<u8>>>,
    /// Rules for categories no Tumbler command is in (`-@geo`): they change no bit, so
    /// they are kept as written to read back as in Redis, where they always select some.
    empty_categories: Vec<String>,
    pub(crate) allkeys: bool,
    pub(crate) keys: Vec<(u8, Bytes)>,
    allchannels: bool,
    channels: Vec<Bytes>,
}

impl Selector {
    fn new(allchannels: bool) -> Selector {
        Selector {
            allcommands: false,
            from_all: false,
            allowed: Bits::filled(false),
            firstargs: HashMap::new(),
            empty_categories: Vec::new(),
            allkeys: false,
            keys: Vec::new(),
            allchannels,
            channels: Vec::new(),
        }
    }

    fn set_command(&mut self, spec: &CommandSpec, allow: bool) {
        let Some(id) = id_of(spec) else { return };
        self.allowed.set(id, allow);
        self.firstargs.remove(&id);
        for s in spec.subcommands {
            if let Some(sid) = id_of(s) {
                self.allowed.set(sid, allow);
            }
        }
        if !allow {
            self.allcommands = false;
        }
    }

    fn set_category(&mut self, bit: u32, allow: bool) {
        for spec in commands::all() {
            if spec.acl_mask() & bit != 0 {
                self.set_command(spec, allow);
            }
            for s in spec.subcommands {
                if s.acl_mask() & bit != 0 {
                    self.set_command(s, allow);
                }
            }
        }
    }

    fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let lower = String::from_utf8_lossy(op).to_ascii_lowercase();
        match lower.as_str() {
            "allkeys" | "~*" => {
                self.allkeys = true;
                self.keys.clear();
                return Ok(());
            }
            "resetkeys" => {
                self.allkeys = false;
                self.keys.clear();
                return Ok(());
            }
            "allchannels" | "&*" => {
                self.allchannels = true;
                self.channels.clear();
                return Ok(());
            }
            "resetchannels" => {
                self.allchannels = false;
                self.channels.clear();
                return Ok(());
            }
            "allcommands" | "+@all" => {
                self.allcommands = true;
                self.from_all = true;
                self.allowed = Bits::filled(true);
                self.firstargs.clear();
                self.empty_categories.clear();
                return Ok(());
            }
            "nocommands" | "-@all" => {
                self.allcommands = false;
                self.from_all = false;
                self.allowed = Bits::filled(false);
                self.firstargs.clear();
                self.empty_categories.clear();
                return Ok(());
            }
            _ => {}
        }
        match op.first() {
            Some(b'~') | Some(b'%') => self.add_key_pattern(op),
            Some(b'&') => {
                if self.allchannels {
                    return Err(RuleError::ChannelsAfterAll);
                }
                let p = &op[1..];
                if p == b"*" {
                    self.allchannels = true;
                    self.channels.clear();
                } else if !self.channels.iter().any(|c| c == p) {
                    self.channels.push(Bytes::copy_from_slice(p));
                }
                Ok(())
            }
            Some(b'+') | Some(b'-') if op.get(1) == Some(&b'@') => {
                let allow = op[0] == b'+';
                let bit = lockcore::engine::spec::acl_category_bit(&op[2..])
                    .ok_or(RuleError::UnknownCommand)?;
                self.set_category(bit, allow);
                if !category_has_commands(bit) {
                    self.empty_categories.retain(|r| r[1..] != lower[1..]);
                    self.empty_categories.push(lower.clone());
                }
                Ok(())
            }
            Some(b'+') | Some(b'-') => self.apply_command_rule(op),
            _ => Err(RuleError::Syntax),
        }
    }

    fn apply_command_rule(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let allow = op[0] == b'+';
        let name = &op[1..];
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let spec = lookup_rule_command(name).ok_or(RuleError::UnknownCommand)?;
            self.set_command(spec, allow);
            return Ok(());
        };
        let (head, sub) = (&name[..bar], &name[bar + 1..]);
        let parent = lookup_rule_command(head).ok_or(RuleError::UnknownCommand)?;
        if allow {
            if !parent.parent.is_empty() {
                return Err(RuleError::FirstArgOfSubcommand);
            }
            if sub.is_empty() {
                return Err(RuleError::Syntax);
            }
            if parent.subcommands.is_empty() {
                // `+select|0`: allow one first argument of a command without
                // subcommands, as Redis still (deprecated) does.
                let id = id_of(parent).ok_or(RuleError::UnknownCommand)?;
                let v = self.firstargs.entry(id).or_default();
                if !v.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                    v.push(sub.to_vec());
                }
            } else {
                let spec = lookup_rule_command(name).ok_or(RuleError::UnknownCommand)?;
                self.set_command(spec, true);
            }
        } else {
            let spec = lookup_rule_command(name).ok_or(RuleError::UnknownCommand)?;
            self.set_command(spec, false);
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let (flags, pat) = if op[0] == b'%' {
            let mut flags = 0;
            let mut i = 1;
            while i < op.len() {
                match op[i].to_ascii_uppercase() {
                    b'R' => flags |= READ,
                    b'W' => flags |= WRITE,
                    b'~' => {
                        i += 1;
                        break;
                    }
                    _ => return Err(RuleError::Syntax),
                }
                i += 1;
            }
            if flags == 0 {
                return Err(RuleError::Syntax);
            }
            (flags, &op[i.min(op.len())..])
        } else {
            (READ | WRITE, &op[1..])
        };
        if self.allkeys {
            return Err(RuleError::KeysAfterAll);
        }
        if pat == b"*" && flags == READ | WRITE {
            self.allkeys = true;
            self.keys.clear();
            return Ok(());
        }
        match self.keys.iter_mut().find(|(_, p)| p == pat) {
            Some((f, _)) => *f |= flags,
            None => self.keys.push((flags, Bytes::copy_from_slice(pat))),
        }
        Ok(())
    }

    fn describe_keys(&self) -> String {
        if self.allkeys {
            return "~*".into();
        }
        let mut parts = Vec::new();
        for (f, p) in &self.keys {
            let prefix = match *f {
                READ => "%R~",
                WRITE => "%W~",
                _ => "~",
            };
            parts.push(format!("{prefix}{}", String::from_utf8_lossy(p)));
        }
        parts.join(" ")
    }

    fn describe_channels(&self, with_reset: bool) -> String {
        if self.allchannels {
            return "&*".into();
        }
        let mut parts: Vec<String> = Vec::new();
        if with_reset {
            parts.push("resetchannels".into());
        }
        for c in &self.channels {
            parts.push(format!("&{}", String::from_utf8_lossy(c)));
        }
        parts.join(" ")
    }

    /// The command permissions as rules, the way Redis 7.0's
    /// `ACLDescribeSelectorCommandRules` derives them from the permission bits (not from
    /// the rules as typed): `+@all` or `-@all`, then repeatedly the category that best fits
    /// the remaining differences (more commands in common than different, fewest
    /// differences), then single commands, subcommands and first arguments for what is
    /// left. Redis walks its command table in hash order for the last part; Tumbler in
    /// name order.
    fn describe_commands(&self) -> String {
        let additive = !self.from_all;
        let base = if additive { "-@all" } else { "+@all" };
        let mut fake = Selector::new(false);
        let _ = fake.apply(base.as_bytes());
        let mut temp = self.clone();
        let mut out = vec![base.to_string()];
        let mut applied = [false; 32];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0);
            for (j, _) in ACL_CATEGORIES.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (mut on, mut off) = (0, 0);
                for c in commands::all() {
                    if c.acl_mask() & (1 << j) != 0 {
                        match id_of(c).is_some_and(|id| temp.allowed.get(id)) {
                            true => on += 1,
                            false => off += 1,
                        }
                    }
                }
                let (mut diff, mut same) = if additive { (off, on) } else { (on, off) };
                // A category without commands here counts as Redis would see it: all of
                // its commands (geo has ten, hyperloglog five) follow the rule.
                if on + off == 0 {
                    let sign = if additive { '+' } else { '-' };
                    let rule = format!("{sign}@{}", ACL_CATEGORIES[j]);
                    if self.empty_categories.contains(&rule) {
                        (diff, same) = (0, if ACL_CATEGORIES[j] == "geo" { 10 } else { 5 });
                    }
                }
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(j) = best else { break };
            let (op, inv) = if additive { ('+', '-') } else { ('-', '+') };
            let _ = fake.apply(format!("{op}@{}", ACL_CATEGORIES[j]).as_bytes());
            let _ = temp.apply(format!("{inv}@{}", ACL_CATEGORIES[j]).as_bytes());
            out.push(format!("{op}@{}", ACL_CATEGORIES[j]));
            applied[j] = true;
        }
        let mut tops: Vec<&'static CommandSpec> = commands::all().collect();
        tops.sort_by_key(|c| c.name);
        for c in tops {
            self.describe_single(c, &mut fake, &mut out);
        }
        out.join(" ")
    }

    fn describe_single(&self, spec: &CommandSpec, fake: &mut Selector, out: &mut Vec<String>) {
        let Some(id) = id_of(spec) else { return };
        let mine = self.allowed.get(id);
        if mine != fake.allowed.get(id) {
            out.push(format!(
                "{}{}",
                if mine { '+' } else { '-' },
                spec.full_name()
            ));
            fake.set_command(spec, mine);
        }
        for s in spec.subcommands {
            self.describe_single(s, fake, out);
        }
        if !mine {
            for a in self.firstargs.get(&id).into_iter().flatten() {
                out.push(format!(
                    "+{}|{}",
                    spec.full_name(),
                    String::from_utf8_lossy(a)
                ));
            }
        }
    }

    fn describe(&self) -> String {
        [
            self.describe_keys(),
            self.describe_channels(true),
            self.describe_commands(),
        ]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
    }

    fn getuser_fields(&self) -> Vec<(Reply, Reply)> {
        vec![
            (
                Reply::bulk_str("commands"),
                Reply::bulk_str(&self.describe_commands()),
            ),
            (
                Reply::bulk_str("keys"),
                Reply::bulk_str(&self.describe_keys()),
            ),
            (
                Reply::bulk_str("channels"),
                Reply::bulk_str(&self.describe_channels(false)),
            ),
        ]
    }

    /// Redis' `ACLSelectorCheckCmd`: Ok, or what was denied and at which argument.
    pub(crate) fn check(
        &self,
        spec: &'static CommandSpec,
        argv: &[Bytes],
        keys: &[usize],
    ) -> Result<(), (Denied, usize)> {
        if !self.allcommands && !spec.has(flag::NO_AUTH) {
            let id = id_of(spec).unwrap_or(0);
            if !self.allowed.get(id) {
                let at = if spec.parent.is_empty() { 1 } else { 2 };
                let first_ok = self.firstargs.get(&id).is_some_and(|v| {
                    argv.get(at)
                        .is_some_and(|a| v.iter().any(|f| f.eq_ignore_ascii_case(a)))
                });
                if !first_ok {
                    return Err((Denied::Command, 0));
                }
            }
        }
        if !self.allkeys {
            for (n, &pos) in keys.iter().enumerate() {
                let (r, w) = lockcore::key_access::key_access(spec, argv, n);
                let need = if r { READ } else { 0 } | if w { WRITE } else { 0 };
                let ok = self.keys.iter().any(|(f, p)| {
                    f & need == need && lockcore::glob::matches(p, &argv[pos], false)
                });
                if !ok {
                    return Err((Denied::Key, pos));
                }
            }
        }
        if !self.allchannels {
            for (pos, pattern) in channel_args(spec, argv) {
                if !self.channel_ok(&argv[pos], pattern) {
                    return Err((Denied::Channel, pos));
                }
            }
        }
        Ok(())
    }

    /// Channel patterns (PSUBSCRIBE) must be listed literally; channels match by glob.
    fn channel_ok(&self, ch: &[u8], pattern: bool) -> bool {
        self.allchannels
            || self.channels.iter().any(|p| {
                if pattern {
                    p == ch
                } else {
                    lockcore::glob::matches(p, ch, false)
                }
            })
    }
}

fn category_has_commands(bit: u32) -> bool {
    commands::all()
        .any(|c| c.acl_mask() & bit != 0 || c.subcommands.iter().any(|s| s.acl_mask() & bit != 0))
}

/// The channel arguments a command publishes or subscribes to: (argument index, is a
/// pattern).
fn channel_args(spec: &CommandSpec, argv: &[Bytes]) -> Vec<(usize, bool)> {
    match spec.name {
        "publish" | "spublish" if spec.parent.is_empty() => vec![(1, false)],
        "subscribe" | "ssubscribe" if spec.parent.is_empty() => {
            (1..argv.len()).map(|i| (i, false)).collect()
        }
        "psubscribe" if spec.parent.is_empty() => (1..argv.len()).map(|i| (i, true)).collect(),
        _ => vec![],
    }
}

/// What a permission check refused, ordered as Redis ranks them across selectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command = 1,
    Key = 2,
    Auth = 3,
    Channel = 4,
}

impl Denied {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Denied::Command => "command",
            Denied::Key => "key",
            Denied::Auth => "auth",
            Denied::Channel => "channel",
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub enabled: bool,
    pub nopass: bool,
    /// `sanitize-payload` (Some(true)) or `skip-sanitize-payload` (Some(false)).
    sanitize: Option<bool>,
    /// SHA-256 hex digests.
    pub(crate) passwords: Vec<String>,
    pub(crate) root: Selector,
    pub(crate) selectors: Vec<Selector>,
}

pub(crate) fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64
        && h.iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

impl User {
    /// A new user: off, no passwords, no commands, keys or selectors; channels per
    /// `acl-pubsub-default`.
    pub fn new(name: &str, allchannels: bool) -> User {
        User {
            name: name.to_string(),
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            root: Selector::new(allchannels),
            selectors: Vec::new(),
        }
    }

    /// The built-in `default` user: `on nopass ~* &* +@all`.
    pub fn default_user() -> User {
        let mut u = User::new("default", false);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            let _ = u.apply(op.as_bytes(), false);
        }
        u
    }

    /// Every command, key and channel: the permission check can be skipped.
    pub fn unrestricted(&self) -> bool {
        self.root.allcommands && self.root.allkeys && self.root.allchannels
    }

    /// Applies one rule (`on`, `>pass`, `~key*`, `+@read`, `(+get ~k*)`, ...).
    pub fn apply(&mut self, op: &[u8], pubsub_all: bool) -> Result<(), RuleError> {
        let lower = String::from_utf8_lossy(op).to_ascii_lowercase();
        match lower.as_str() {
            "on" => self.enabled = true,
            "off" => self.enabled = false,
            "skip-sanitize-payload" => self.sanitize = Some(false),
            "sanitize-payload" => self.sanitize = Some(true),
            "nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            "resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            "clearselectors" => self.selectors.clear(),
            "reset" => {
                for r in ["resetpass", "resetkeys", "resetchannels"] {
                    self.apply(r.as_bytes(), pubsub_all)?;
                }
                if pubsub_all {
                    self.apply(b"allchannels", pubsub_all)?;
                }
                for r in ["off", "sanitize-payload", "clearselectors", "-@all"] {
                    self.apply(r.as_bytes(), pubsub_all)?;
                }
            }
            _ => match op.first() {
                Some(b'>') => {
                    let h = sha256_hex(&op[1..]);
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'#') => {
                    if !valid_hash(&op[1..]) {
                        return Err(RuleError::BadHash);
                    }
                    let h = String::from_utf8_lossy(&op[1..]).into_owned();
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'<') | Some(b'!') => {
                    let h = if op[0] == b'<' {
                        sha256_hex(&op[1..])
                    } else {
                        if !valid_hash(&op[1..]) {
                            return Err(RuleError::BadHash);
                        }
                        String::from_utf8_lossy(&op[1..]).into_owned()
                    };
                    let before = self.passwords.len();
                    self.passwords.retain(|p| *p != h);
                    if self.passwords.len() == before {
                        return Err(RuleError::NoSuchPassword);
                    }
                }
                Some(b'(') if op.last() == Some(&b')') && op.len() >= 2 => {
                    let mut sel = Selector::new(pubsub_all);
                    for part in op[1..op.len() - 1]
                        .split(|b| b.is_ascii_whitespace())
                        .filter(|p| !p.is_empty())
                    {
                        sel.apply(part)?;
                    }
                    self.selectors.push(sel);
                }
                _ => self.root.apply(op)?,
            },
        }
        Ok(())
    }

    /// `pass` opens this user (enabled, and nopass or a matching password).
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&sha256_hex(pass)))
    }

    /// Redis' `ACLCheckAllUserCommandPerm`: allowed if the root or any selector allows it;
    /// otherwise the most relevant refusal (channel > key > command, then the later
    /// argument).
    pub fn check(&self, spec: &'static CommandSpec, argv: &[Bytes]) -> Result<(), (Denied, usize)> {
        let spec = acl_spec(spec, argv);
        let keys = if (self.root.allkeys && self.selectors.iter().all(|s| s.allkeys))
            || lockcore::key_access::keys_are_channels(spec)
        {
            Vec::new()
        } else {
            spec.key_positions(argv)
        };
        let mut worst: Option<(Denied, usize)> = None;
        for sel in std::iter::once(&self.root).chain(self.selectors.iter()) {
            match sel.check(spec, argv, &keys) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    if worst.is_none_or(|w| e.0 > w.0 || (e.0 == w.0 && e.1 > w.1)) {
                        worst = Some(e);
                    }
                }
            }
        }
        Err(worst.unwrap_or((Denied::Command, 0)))
    }

    /// May a client of this user stay subscribed to `ch`? (Redis kills it otherwise.)
    pub(crate) fn may_subscribe(&self, ch: &[u8], pattern: bool) -> bool {
        std::iter::once(&self.root)
            .chain(self.selectors.iter())
            .any(|s| s.channel_ok(ch, pattern))
    }

    fn flag_names(&self) -> Vec<&'static str> {
        let mut v = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            v.push("nopass");
        }
        match self.sanitize {
            Some(false) => v.push("skip-sanitize-payload"),
            Some(true) => v.push("sanitize-payload"),
            None => {}
        }
        v
    }

    /// The user as one `ACL LIST` / ACL file line.
    pub fn describe(&self) -> String {
        let mut s = format!("user {}", self.name);
        for f in self.flag_names() {
            s.push(' ');
            s.push_str(f);
        }
        for p in &self.passwords {
            s.push_str(" #");
            s.push_str(p);
        }
        let root = self.root.describe();
        if !root.is_empty() {
            s.push(' ');
            s.push_str(&root);
        }
        for sel in &self.selectors {
            s.push_str(&format!(" ({})", sel.describe()));
        }
        s
    }

    pub(crate) fn getuser_reply(&self) -> Reply {
        let mut fields = vec![
            (
                Reply::bulk_str("flags"),
                Reply::Set(self.flag_names().into_iter().map(Reply::bulk_str).collect()),
            ),
            (
                Reply::bulk_str("passwords"),
                Reply::Array(self.passwords.iter().map(|p| Reply::bulk_str(p)).collect()),
            ),
        ];
        fields.extend(self.root.getuser_fields());
        fields.push((
            Reply::bulk_str("selectors"),
            Reply::Array(
                self.selectors
                    .iter()
                    .map(|s| Reply::Map(s.getuser_fields()))
                    .collect(),
            ),
        ));
        Reply::Map(fields)
    }
}

/// Joins SETUSER arguments so that a selector may span several (`(` `~k` `+get` `)`), as
/// Redis' `ACLMergeSelectorArguments` does.
pub(crate) fn merge_selector_args(args: &[Bytes]) -> Result<Vec<Bytes>, String> {
    let mut out = Vec::new();
    let mut open: Option<Vec<u8>> = None;
    let mut open_at = Bytes::new();
    for a in args {
        match &mut open {
            Some(buf) => {
                buf.push(b' ');
                buf.extend_from_slice(a);
                if a.last() == Some(&b')') {
                    out.push(Bytes::from(open.take().unwrap()));
                }
            }
            None if a.first() == Some(&b'(') && a.last() != Some(&b')') => {
                open = Some(a.to_vec());
                open_at = a.clone();
            }
            None => out.push(a.clone()),
        }
    }
    if open.is_some() {
        return Err(format!(
            "Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(&open_at)
        ));
    }
    Ok(out)
}

pub(crate) fn valid_username(name: &[u8]) -> bool {
    !name.iter().any(|&b| b == 0 || b == b' ')
}

// ---------------------------------------------------------------- the user table and log

pub(crate) struct LogEntry {
    pub(crate) count: u64,
    pub(crate) reason: &'static str,
    pub(crate) context: &'static str,
    pub(crate) object: String,
    pub(crate) username: String,
    pub(crate) created: Instant,
    pub(crate) client_info: String,
}

/// Where a refused command came from (the ACL LOG `context`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// The users and the ACL log.
pub struct Acl {
    pub(crate) users: RwLock<BTreeMap<String, Arc<User>>>,
    version: AtomicU64,
    /// Every user is unrestricted: scripts skip the per-call check.
    pub(crate) all_unrestricted: AtomicBool,
    pub(crate) log: Mutex<VecDeque<LogEntry>>,
}

impl Acl {
    /// Every user as its `user ...` config line (ACL LIST's text), for CONFIG REWRITE.
    pub fn user_lines(&self) -> Vec<String> {
        self.users.read().values().map(|u| u.describe()).collect()
    }

    pub fn new(requirepass: &str) -> Acl {
        let mut d = User::default_user();
        if !requirepass.is_empty() {
            d.nopass = false;
            d.passwords = vec![sha256_hex(requirepass.as_bytes())];
        }
        let acl = Acl {
            users: RwLock::new(BTreeMap::new()),
            version: AtomicU64::new(0),
            all_unrestricted: AtomicBool::new(true),
            log: Mutex::new(VecDeque::new()),
        };
        acl.users.write().insert("default".into(), Arc::new(d));
        acl.changed();
        acl
    }

    pub(crate) fn changed(&self) {
        let all = self.users.read().values().all(|u| u.unrestricted());
        self.all_unrestricted.store(all, Ordering::Release);
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub fn get(&self, name: &str) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<User> {
        self.get("default")
            .unwrap_or_else(|| Arc::new(User::default_user()))
    }

    /// A new connection is logged in as `default` unless that user needs a password or is
    /// off.
    pub fn default_needs_auth(&self) -> bool {
        let d = self.default_user();
        !d.enabled || !d.nopass
    }

    /// `requirepass` sets the default user's password (empty: nopass), as in Redis.
    pub fn set_requirepass(&self, pass: &str) {
        let mut users = self.users.write();
        let mut d = users
            .get("default")
            .map_or_else(User::default_user, |u| (**u).clone());
        d.passwords.clear();
        if pass.is_empty() {
            d.nopass = true;
        } else {
            d.nopass = false;
            d.passwords.push(sha256_hex(pass.as_bytes()));
        }
        users.insert("default".into(), Arc::new(d));
        drop(users);
        self.changed();
    }

    /// Checks a username/password pair: the user on success.
    pub fn authenticate(&self, user: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let u = self.get(std::str::from_utf8(user).ok()?)?;
        u.password_ok(pass).then_some(u)
    }

    pub(crate) fn log(&self, max_len: usize, entry: LogEntry) {
        let mut log = self.log.lock();
        let now = Instant::now();
        let similar = log.iter().take(10).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && now.duration_since(e.created).as_millis() < 60_000
        });
        match similar {
            Some(i) => {
                let mut e = log.remove(i).unwrap();
                e.count += 1;
                e.created = now;
                e.client_info = entry.client_info;
                log.push_front(e);
            }
            None => log.push_front(entry),
        }
        log.truncate(max_len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &[&str]) -> User {
        let mut u = User::new("u", false);
        for r in rules {
            u.apply(r.as_bytes(), false).unwrap();
        }
        u
    }

    #[test]
    fn describes_rules_compactly_as_redis() {
        let cases: &[(&[&str], &str)] = &[
            (&["+memory|doctor"], "-@all +memory|doctor"),
            (&["+memory|doctor", "+memory"], "-@all +memory"),
            (&["+@all", "+client|id"], "+@all"),
            (&["+@all", "-client|kill", "-client"], "+@all -client"),
            (&["+@all", "-get", "+get"], "+@all"),
            (&["-@all", "+@string", "-@string"], "-@all"),
            (
                &["+@all", "-debug", "+debug|digest"],
                "+@all -debug +debug|digest",
            ),
            (
                &["-@all", "+select|0", "+select|1"],
                "-@all +select|0 +select|1",
            ),
            (&["-@all", "+select|0", "-select"], "-@all"),
            (&["allcommands", "-get", "nocommands", "+set"], "-@all +set"),
        ];
        for (rules, want) in cases {
            assert_eq!(user(rules).root.describe_commands(), *want, "{rules:?}");
        }
    }

    #[test]
    fn key_patterns_merge_and_describe() {
        let u = user(&["on", "nopass", "%RW~a", "%W~b", "%R~c", "%WR~d", "~b"]);
        assert_eq!(
            u.describe(),
            "user u on nopass ~a ~b %R~c ~d resetchannels -@all"
        );
        assert_eq!(
            User::default_user().describe(),
            "user default on nopass ~* &* +@all"
        );
    }

    #[test]
    fn rule_errors() {
        let mut u = User::new("u", false);
        assert_eq!(u.apply(b"bogus", false), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"+nocmd", false), Err(RuleError::UnknownCommand));
        assert_eq!(
            u.apply(b"+config|get|x", false),
            Err(RuleError::FirstArgOfSubcommand)
        );
        assert_eq!(u.apply(b"%~", false), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"#abc", false), Err(RuleError::BadHash));
        u.apply(b"~*", false).unwrap();
        assert_eq!(u.apply(b"~x", false), Err(RuleError::KeysAfterAll));
    }
}
