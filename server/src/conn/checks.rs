//! The ACL checks every command passes: a client's command, each command queued in MULTI
//! (again at EXEC) and every `redis.call` of a script, once, before it runs. Denials go to the
//! ACL log. The users and their rules are in state/acl.rs.

use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use lockcore::engine::spec::CommandSpec;
use lockcore::Reply;

use crate::state::acl::*;
use crate::state::Shared;

use super::Conn;

pub fn acllog_max_len(shared: &Shared) -> usize {
    shared
        .config
        .read()
        .get_i64(crate::config::key::ACLLOG_MAX_LEN)
        .max(0) as usize
}

pub fn pubsub_default_all(shared: &Shared) -> bool {
    shared
        .config
        .read()
        .get(crate::config::key::ACL_PUBSUB_DEFAULT)
        == "allchannels"
}

/// Adds an ACL LOG entry for a refusal.
#[allow(clippy::too_many_arguments)]
fn log_denied(
    shared: &Shared,
    denied: Denied,
    context: Context,
    spec: &'static CommandSpec,
    argv: &[Bytes],
    pos: usize,
    username: &str,
    client_info: String,
) {
    let object = match denied {
        Denied::Command => acl_spec_name(spec, argv),
        Denied::Auth => "AUTH".into(),
        _ => String::from_utf8_lossy(&argv[pos]).into_owned(),
    };
    shared.acl.log(
        acllog_max_len(shared),
        LogEntry {
            count: 1,
            reason: denied.reason(),
            context: context.name(),
            object,
            username: username.to_string(),
            created: Instant::now(),
            client_info,
        },
    );
}

pub fn acl_spec_name(spec: &'static CommandSpec, argv: &[Bytes]) -> String {
    acl_spec(spec, argv).listed_name()
}

/// The connection's user, refreshed if any user changed since it was last read.
pub fn refresh_user(c: &mut Conn) {
    let v = c.shared.acl.version();
    if v != c.acl_version {
        c.acl_version = v;
        if let Some(u) = c.shared.acl.get(&c.user.name) {
            c.user = u;
        }
    }
}

/// The central check for a command from a client (at queue time inside MULTI too):
/// Redis' NOPERM errors, and an ACL LOG entry.
pub fn check_command(
    c: &mut Conn,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> Result<(), Reply> {
    refresh_user(c);
    if c.user.unrestricted() {
        return Ok(());
    }
    let Err((denied, pos)) = c.user.check(spec, argv) else {
        return Ok(());
    };
    let context = if c.multi.is_some() {
        Context::Multi
    } else {
        Context::Toplevel
    };
    let info = crate::conn::client_line::client_line(c, &c.handle, argv);
    log_denied(
        &c.shared,
        denied,
        context,
        spec,
        argv,
        pos,
        &c.user.name.clone(),
        info,
    );
    Err(Reply::err(match denied {
        Denied::Command => format!(
            "NOPERM this user has no permissions to run the '{}' command",
            acl_spec_name(spec, argv)
        ),
        Denied::Key => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        _ => "NOPERM this user has no permissions to access one of the channels used as arguments"
            .into(),
    }))
}

/// EXEC checks each queued command again: the rules may have changed since it was queued.
pub fn check_exec(c: &mut Conn, spec: &'static CommandSpec, argv: &[Bytes]) -> Result<(), Reply> {
    refresh_user(c);
    if c.user.unrestricted() {
        return Ok(());
    }
    let Err((denied, pos)) = c.user.check(spec, argv) else {
        return Ok(());
    };
    let info = crate::conn::client_line::client_line(c, &c.handle, argv);
    log_denied(
        &c.shared,
        denied,
        Context::Multi,
        spec,
        argv,
        pos,
        &c.user.name.clone(),
        info,
    );
    let reason = match denied {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key => "no permission to touch the specified keys",
        _ => "no permission to access one of the channels used as arguments",
    };
    Err(Reply::err(format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and its execution. This command is no longer allowed for the following reason: {reason}")))
}

/// `redis.call` from a script checks the calling client's user (Redis' scriptVerifyACL);
/// the error is the text the script sees.
pub fn check_script(
    shared: &Shared,
    client: lockcore::ClientId,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> Result<(), String> {
    if shared.acl.all_unrestricted.load(Ordering::Acquire) {
        return Ok(());
    }
    let Some(h) = shared.clients.get(&client).map(|h| h.value().clone()) else {
        return Ok(());
    };
    let name = h.info.lock().user.clone();
    let Some(user) = shared.acl.get(&name) else {
        return Ok(());
    };
    let Err((denied, pos)) = user.check(spec, argv) else {
        return Ok(());
    };
    log_denied(
        shared,
        denied,
        Context::Lua,
        spec,
        argv,
        pos,
        &name,
        handle_info(&h),
    );
    Err(match denied {
        Denied::Command => "ERR The user executing the script can't run this command or subcommand".into(),
        Denied::Key => "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments".into(),
        _ => "ERR The user executing the script can't publish to the channel mentioned in the command".into(),
    })
}

/// Why SORT/SORT_RO may not use BY/GET patterns, if it may not (sort.c): in cluster mode,
/// or when no selector of the user that allows the command also grants read access to
/// every key (`~*`, `%R~*`, allkeys), since the patterns read keys the key specs cannot
/// name. Redis' `ACLUserCheckCmdWithUnrestrictedKeyAccess`.
pub fn sort_patterns_denied(
    shared: &Shared,
    user: &User,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> Option<&'static str> {
    if shared.cluster.is_some() {
        return Some("in Cluster mode");
    }
    let spec = acl_spec(spec, argv);
    let keys = spec.key_positions(argv);
    let unrestricted = std::iter::once(&user.root)
        .chain(user.selectors.iter())
        .any(|sel| {
            sel.check(spec, argv, &keys).is_ok()
                && (sel.allkeys
                    || sel
                        .keys
                        .iter()
                        .any(|(flags, p)| flags & READ == READ && &p[..] == b"*"))
        });
    (!unrestricted).then_some("due to insufficient ACL permissions")
}

/// [`sort_patterns_denied`] for a SORT a script runs, as the script's calling user.
pub fn script_sort_patterns_denied(
    shared: &Shared,
    client: lockcore::ClientId,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> Option<&'static str> {
    if shared.cluster.is_none() && shared.acl.all_unrestricted.load(Ordering::Acquire) {
        return None;
    }
    match client_user(shared, client) {
        Some(u) => sort_patterns_denied(shared, &u, spec, argv),
        None => shared.cluster.is_some().then_some("in Cluster mode"),
    }
}

/// `redis.acl_check_cmd(...)`: may the script's calling user run this command? (No log
/// entry, as in Redis.)
pub fn script_user_may_run(
    shared: &Shared,
    client: lockcore::ClientId,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> bool {
    if shared.acl.all_unrestricted.load(Ordering::Acquire) {
        return true;
    }
    client_user(shared, client).is_none_or(|u| u.check(spec, argv).is_ok())
}

/// The user a client is authenticated as (the one its scripts run as), if the client and
/// the user still exist.
fn client_user(shared: &Shared, client: lockcore::ClientId) -> Option<Arc<User>> {
    let name = shared.clients.get(&client)?.info.lock().user.clone();
    shared.acl.get(&name)
}

/// A CLIENT LIST-style line for a client other than the current connection.
fn handle_info(h: &crate::state::ClientHandle) -> String {
    let info = h.info.lock();
    format!(
        "id={} addr={} laddr={} fd=8 name={} age={} idle=0 flags=N db={} sub={} psub={} ssub={} multi={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=16384 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user={} redir=-1 resp={}",
        h.id,
        h.addr,
        h.laddr,
        String::from_utf8_lossy(&info.name),
        h.created.elapsed().as_secs(),
        info.db,
        info.subs,
        info.psubs,
        info.ssubs,
        info.multi,
        info.last_cmd.map_or_else(|| "NULL".to_string(), |c| c.full_name()),
        info.user,
        info.resp
    )
}
