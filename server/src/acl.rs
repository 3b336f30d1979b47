//! ACL as clients drive it: AUTH, ACL SETUSER/GETUSER/DELUSER/LIST/LOG/... and the ACL
//! file. The users and their rules are in state/acl.rs; the checks every command passes in
//! conn/checks.rs.

use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use lockcore::commands;
use lockcore::engine::spec::{CommandSpec, ACL_CATEGORIES};
use lockcore::num::parse_i64;
use lockcore::{error, Reply};

use crate::conn::checks::{acl_spec_name, acllog_max_len, pubsub_default_all, refresh_user};
use crate::conn::{Conn, Flow};
use crate::state::acl::*;
use crate::state::{Msg, Shared};

// ---------------------------------------------------------------- AUTH

/// AUTH and HELLO's AUTH: logs the client in as `user`, or WRONGPASS (logged in ACL LOG).
pub fn login(c: &mut Conn, user: &[u8], pass: &[u8]) -> Result<(), Reply> {
    match c.shared.acl.authenticate(user, pass) {
        Some(u) => {
            c.handle.info.lock().user = u.name.clone();
            c.user = u;
            c.acl_version = c.shared.acl.version();
            c.authenticated = true;
            Ok(())
        }
        None => {
            let name = String::from_utf8_lossy(user).into_owned();
            let info = crate::conn::client_line::client_line(c, &c.handle, &[]);
            c.shared.acl.log(
                acllog_max_len(&c.shared),
                LogEntry {
                    count: 1,
                    reason: "auth",
                    context: "toplevel",
                    object: "AUTH".into(),
                    username: name,
                    created: Instant::now(),
                    client_info: info,
                },
            );
            Err(Reply::err(error::WRONGPASS))
        }
    }
}

/// RESET: back to the default user, logged in only if it needs no password.
pub fn reset_to_default(c: &mut Conn) {
    c.user = c.shared.acl.default_user();
    c.acl_version = c.shared.acl.version();
    c.authenticated = !c.shared.acl.default_needs_auth();
    c.handle.info.lock().user = "default".into();
}

// ---------------------------------------------------------------- killing clients

/// Disconnects the clients logged in as one of `names` (the current one after its reply).
fn kill_clients_of(c: &mut Conn, names: &[String]) {
    let targets: Vec<_> = c
        .shared
        .clients
        .iter()
        .filter(|h| names.contains(&h.info.lock().user))
        .map(|h| h.value().clone())
        .collect();
    for h in targets {
        if h.id == c.cl.id {
            c.flow = Flow::Close;
        } else {
            h.killed.store(true, Ordering::Relaxed);
            h.send(Msg::Kill);
        }
    }
}

/// After a user's rules changed, its subscribers whose channels are no longer allowed are
/// disconnected, as Redis' `ACLKillPubsubClientsIfNeeded` does.
fn kill_revoked_subscribers(c: &mut Conn, user: &User) {
    let ps = c.shared.pubsub.clone();
    let mut doomed = std::collections::HashSet::new();
    let tables = [
        (&ps.channels, false),
        (&ps.shard_channels, false),
        (&ps.patterns, true),
    ];
    // Collected first, checked after: no registry or info lock is taken while a pub/sub
    // table shard is held.
    let mut subs = Vec::new();
    for (table, pattern) in tables {
        for e in table.iter() {
            for h in e.value() {
                subs.push((h.clone(), e.key().clone(), pattern));
            }
        }
    }
    for (h, ch, pattern) in subs {
        if !doomed.contains(&h.id)
            && h.info.lock().user == user.name
            && !user.may_subscribe(&ch, pattern)
        {
            doomed.insert(h.id);
        }
    }
    for id in doomed {
        if id == c.cl.id {
            c.flow = Flow::Close;
        } else if let Some(h) = c.shared.clients.get(&id) {
            h.killed.store(true, Ordering::Relaxed);
            h.send(Msg::Kill);
        }
    }
}

// ---------------------------------------------------------------- loading users

/// Builds users from `user ...` lines: (name, rules). Later lines for the same name are an
/// error, as Redis refuses duplicates.
fn build_users(
    lines: &[(String, Vec<Bytes>)],
    pubsub_all: bool,
    reset_existing_default: bool,
) -> Result<BTreeMap<String, Arc<User>>, Vec<String>> {
    let mut users: BTreeMap<String, Arc<User>> = BTreeMap::new();
    let mut errors = Vec::new();
    for (i, (where_, args)) in lines.iter().enumerate() {
        let _ = i;
        let Some(name) = args.first() else {
            errors.push(format!("{where_}: should have a username"));
            continue;
        };
        if !valid_username(name) {
            errors.push(format!(
                "{where_}: username '{}' contains invalid characters",
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        let name = String::from_utf8_lossy(name).into_owned();
        if users.contains_key(&name) {
            errors.push(format!("{where_}: Duplicate user '{name}' found"));
            continue;
        }
        let rules = match merge_selector_args(&args[1..]) {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("{where_}: {e}"));
                continue;
            }
        };
        let mut u = User::new(&name, pubsub_all);
        if name == "default" && reset_existing_default {
            let _ = u.apply(b"reset", pubsub_all);
        }
        let mut bad = false;
        for r in &rules {
            if let Err(e) = u.apply(r, pubsub_all) {
                errors.push(format!(
                    "{where_}: Error in applying operation '{}': {}",
                    String::from_utf8_lossy(r),
                    e.text()
                ));
                bad = true;
                break;
            }
        }
        if !bad {
            users.insert(name, Arc::new(u));
        }
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        Err(errors)
    }
}

/// Reads an ACL file into `user` lines (`path:line` for error messages).
fn read_acl_file(path: &str) -> Result<Vec<(String, Vec<Bytes>)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{path}': {e}"))?;
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let where_ = format!("{path}:{}", i + 1);
        let Some(args) = crate::resp::split_args(line.as_bytes()) else {
            errors.push(format!("{where_}: unbalanced quotes in acl line"));
            continue;
        };
        if !args[0].eq_ignore_ascii_case(b"user") {
            errors.push(format!("{where_} should start with user keyword"));
            continue;
        }
        lines.push((
            where_,
            args[1..].iter().map(|a| Bytes::from(a.to_vec())).collect(),
        ));
    }
    if errors.is_empty() {
        Ok(lines)
    } else {
        Err(errors.join(". ") + ".")
    }
}

/// The configured `aclfile`, relative to `dir` as redis-server (which chdirs there) reads it.
fn acl_file_path_of(cfg: &crate::config::Config) -> Option<String> {
    let f = cfg.get(crate::config::key::ACLFILE);
    if f.is_empty() {
        return None;
    }
    let dir = cfg.get(crate::config::key::DIR);
    if f.starts_with('/') || dir.is_empty() {
        Some(f.to_string())
    } else {
        Some(format!("{}/{f}", dir.trim_end_matches('/')))
    }
}

fn acl_file_path(shared: &Shared) -> Option<String> {
    acl_file_path_of(&shared.config.read())
}

/// The users a configuration starts with: its `user` lines, or its `aclfile`. Err is the
/// reason to refuse to start, as redis-server does; checked before anything is bound.
pub type StartupUsers = Option<BTreeMap<String, Arc<User>>>;

pub fn users_from_config(cfg: &crate::config::Config) -> Result<StartupUsers, String> {
    let file = acl_file_path_of(cfg);
    let pubsub_all = cfg.get(crate::config::key::ACL_PUBSUB_DEFAULT) == "allchannels";
    if !cfg.acl_users.is_empty() && file.is_some() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    let lines: Vec<(String, Vec<Bytes>)> = match &file {
        Some(path) => read_acl_file(path)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?,
        None => cfg
            .acl_users
            .iter()
            .map(|l| {
                (
                    "config".to_string(),
                    l.iter()
                        .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                        .collect(),
                )
            })
            .collect(),
    };
    if lines.is_empty() {
        return Ok(None);
    }
    match build_users(&lines, pubsub_all, true) {
        Ok(u) => Ok(Some(u)),
        Err(e) if file.is_some() => Err(format!(
            "Aborting Redis startup because of ACL errors: {}",
            e.join(". ")
        )),
        Err(e) => Err(format!("Error in user declaration: {}", e.join(". "))),
    }
}

/// Installs the startup users from [`users_from_config`].
pub fn install_startup_users(shared: &Shared, users: StartupUsers) {
    if let Some(u) = users {
        install_users(shared, u);
    }
}

/// Replaces the user table; `default` is kept (as the built-in one) if the new set lacks it.
fn install_users(shared: &Shared, mut users: BTreeMap<String, Arc<User>>) {
    if !users.contains_key("default") {
        let mut d = User::default_user();
        let pass = shared
            .config
            .read()
            .get(crate::config::key::REQUIREPASS)
            .to_string();
        if !pass.is_empty() {
            d.nopass = false;
            d.passwords = vec![sha256_hex(pass.as_bytes())];
        }
        users.insert("default".into(), Arc::new(d));
    }
    *shared.acl.users.write() = users;
    shared.acl.changed();
}

// ---------------------------------------------------------------- ACL command

fn bulk_lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `ACL <subcommand> ...`.
pub fn command(c: &mut Conn, spec: &CommandSpec, a: &[Bytes]) -> Reply {
    let shared = c.shared.clone();
    let acl = &shared.acl;
    if matches!(spec.name, "cat" | "genpass" | "log") && a.len() > 3 {
        return Reply::err(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try ACL HELP.",
            bulk_lossy(&a[1])
        ));
    }
    match spec.name {
        "whoami" => {
            refresh_user(c);
            Reply::bulk_str(&c.user.name)
        }
        "users" => Reply::Array(
            acl.users
                .read()
                .keys()
                .map(|k| Reply::bulk_str(k))
                .collect(),
        ),
        "list" => Reply::Array(
            acl.users
                .read()
                .values()
                .map(|u| Reply::bulk_str(&u.describe()))
                .collect(),
        ),
        "getuser" => match acl.get(&bulk_lossy(&a[2])) {
            Some(u) => u.getuser_reply(),
            None => Reply::Null,
        },
        "setuser" => setuser(c, a),
        "deluser" => {
            let mut gone = Vec::new();
            for n in &a[2..] {
                if n.as_ref() == b"default" {
                    return Reply::err("ERR The 'default' user cannot be removed");
                }
            }
            {
                let mut users = acl.users.write();
                for n in &a[2..] {
                    let n = bulk_lossy(n);
                    if users.remove(&n).is_some() {
                        gone.push(n);
                    }
                }
            }
            acl.changed();
            kill_clients_of(c, &gone);
            Reply::Int(gone.len() as i64)
        }
        "cat" => match a.get(2) {
            None => Reply::Array(ACL_CATEGORIES.iter().map(|n| Reply::bulk_str(n)).collect()),
            Some(cat) => match lockcore::engine::spec::acl_category_bit(cat) {
                None => Reply::err(format!("ERR Unknown category '{}'", bulk_lossy(cat))),
                Some(bit) => {
                    let mut names = Vec::new();
                    for spec in commands::all() {
                        if crate::state::timectl::hidden_spec(&shared, spec)
                            || !shared.personality.has(spec.avail)
                        {
                            continue;
                        }
                        let p = &shared.personality;
                        if spec.acl_mask_in(p) & bit != 0 {
                            names.push(spec.full_name());
                        }
                        for s in spec.subcommands {
                            if s.acl_mask_in(p) & bit != 0 && p.has(s.avail) {
                                names.push(s.full_name());
                            }
                        }
                    }
                    Reply::Array(names.iter().map(|n| Reply::bulk_str(n)).collect())
                }
            },
        },
        "genpass" => {
            let bits = match a.get(2) {
                None => 256,
                Some(b) => match parse_i64(b) {
                    Some(n) if n > 0 && n <= 4096 => n,
                    None => return error::not_integer(),
                    Some(_) => return Reply::err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"),
                },
            };
            let chars = (bits as usize).div_ceil(4);
            Reply::bulk_str(&random_hex(chars))
        }
        "dryrun" => {
            let Some(u) = acl.get(&bulk_lossy(&a[2])) else {
                return Reply::err(format!("ERR User '{}' not found", bulk_lossy(&a[2])));
            };
            let argv = &a[3..];
            let spec = match commands::lookup_checked(&shared.personality, argv) {
                Ok(s) => s,
                Err(_) if commands::lookup(&argv[0]).is_none() => {
                    return Reply::err(format!("ERR Command '{}' not found", bulk_lossy(&argv[0])))
                }
                Err(e) => return e,
            };
            match u.check(spec, argv) {
                Ok(()) => Reply::ok(),
                Err((Denied::Command, _)) => Reply::bulk_str(&format!(
                    "This user has no permissions to run the '{}' command",
                    acl_spec_name(spec, argv)
                )),
                Err((Denied::Key, pos)) => Reply::bulk_str(&format!(
                    "This user has no permissions to access the '{}' key",
                    bulk_lossy(&argv[pos])
                )),
                Err((_, pos)) => Reply::bulk_str(&format!(
                    "This user has no permissions to access the '{}' channel",
                    bulk_lossy(&argv[pos])
                )),
            }
        }
        "log" => {
            let mut count = usize::MAX;
            if let Some(arg) = a.get(2) {
                if arg.eq_ignore_ascii_case(b"reset") {
                    acl.log.lock().clear();
                    return Reply::ok();
                }
                match parse_i64(arg) {
                    Some(n) => count = n.max(0) as usize,
                    None => return error::not_integer(),
                }
            }
            let log = acl.log.lock();
            Reply::Array(
                log.iter()
                    .take(count)
                    .map(|e| {
                        Reply::Map(vec![
                            (Reply::bulk_str("count"), Reply::Int(e.count as i64)),
                            (Reply::bulk_str("reason"), Reply::bulk_str(e.reason)),
                            (Reply::bulk_str("context"), Reply::bulk_str(e.context)),
                            (Reply::bulk_str("object"), Reply::bulk_str(&e.object)),
                            (Reply::bulk_str("username"), Reply::bulk_str(&e.username)),
                            (
                                Reply::bulk_str("age-seconds"),
                                Reply::Double(e.created.elapsed().as_secs_f64()),
                            ),
                            (
                                Reply::bulk_str("client-info"),
                                Reply::bulk_str(&e.client_info),
                            ),
                        ])
                    })
                    .collect(),
            )
        }
        "load" => {
            let Some(path) = acl_file_path(&shared) else {
                return Reply::err(no_acl_file(&shared));
            };
            let lines = match read_acl_file(&path) {
                Ok(l) => l,
                Err(e) => return Reply::err(format!("ERR {e}")),
            };
            let users = match build_users(&lines, pubsub_default_all(&shared), false) {
                Ok(u) => u,
                Err(e) => return Reply::err(format!("ERR {}.", e.join(". "))),
            };
            // As Redis' ACLFreeUsersSet: every client of a non-default user is dropped.
            let old: Vec<String> = acl
                .users
                .read()
                .keys()
                .filter(|k| *k != "default")
                .cloned()
                .collect();
            install_users(&shared, users);
            kill_clients_of(c, &old);
            Reply::ok()
        }
        "save" => {
            let Some(path) = acl_file_path(&shared) else {
                return Reply::err(no_acl_file(&shared));
            };
            let mut text = String::new();
            for u in acl.users.read().values() {
                text.push_str(&u.describe());
                text.push('\n');
            }
            let tmp = format!("{path}.tmp-{}", std::process::id());
            match std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &path)) {
                Ok(()) => Reply::ok(),
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    tracing::warn!("ACL SAVE to {path} failed: {e}");
                    Reply::err("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
                }
            }
        }
        "help" => Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect()),
        _ => error::unknown_subcommand("acl", spec.name.as_bytes()),
    }
}

/// [`NO_ACL_FILE`], or Valkey's wording of it.
fn no_acl_file(shared: &crate::state::Shared) -> &'static str {
    if shared.personality.is_valkey() {
        "ERR This instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a configuration file set) in order to store users in the configuration."
    } else {
        NO_ACL_FILE
    }
}

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn setuser(c: &mut Conn, a: &[Bytes]) -> Reply {
    let shared = c.shared.clone();
    let acl = &shared.acl;
    let name = &a[2];
    if !valid_username(name) {
        return Reply::err("ERR Usernames can't contain spaces or null characters");
    }
    let name = bulk_lossy(name);
    let rules = match merge_selector_args(&a[3..]) {
        Ok(r) => r,
        Err(e) => return Reply::err(format!("ERR {e}")),
    };
    let pubsub_all = pubsub_default_all(&shared);
    // All rules apply to a copy, so an error leaves the user as it was.
    let mut users = acl.users.write();
    let old = users.get(&name).cloned();
    let mut u = old
        .as_deref()
        .cloned()
        .unwrap_or_else(|| User::new(&name, pubsub_all));
    for r in &rules {
        if let Err(e) = u.apply(r, pubsub_all) {
            return Reply::err(format!(
                "ERR Error in ACL SETUSER modifier '{}': {}",
                bulk_lossy(r),
                e.text()
            ));
        }
    }
    let u = Arc::new(u);
    users.insert(name, u.clone());
    drop(users);
    acl.changed();
    if old.is_some() {
        kill_revoked_subscribers(c, &u);
    }
    Reply::ok()
}

fn random_hex(chars: usize) -> String {
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_ok();
    if !ok {
        use std::hash::BuildHasher;
        let s = std::collections::hash_map::RandomState::new();
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = s.hash_one(i) as u8;
        }
    }
    let mut s: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    s.truncate(chars);
    s
}

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

crate::server_command!(["acl"], |c, _, spec, a| command(c, spec, a));
