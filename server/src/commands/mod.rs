//! Commands the server runs itself: connection state, introspection, config, transactions,
//! pub/sub subscriptions. Keyspace commands run in `lockcore`.

pub mod cmdlist;
pub mod migrate;
pub mod pubsub;
pub mod rdb;
pub mod timectl;

use bytes::Bytes;
use std::sync::atomic::Ordering;

use lockcore::commands;
use lockcore::engine::spec::CommandSpec;
use lockcore::num::parse_i64;
use lockcore::{error, Reply};

use crate::conn::{Conn, Flow, ReplyMode};
use crate::state::core;
use crate::state::{Core, CoreGuard, Msg};

fn arg_str(a: &[u8]) -> String {
    String::from_utf8_lossy(a).into_owned()
}

fn eq(a: &[u8], s: &str) -> bool {
    a.eq_ignore_ascii_case(s.as_bytes())
}

// The handlers of the server commands whose code is here; the others register beside
// their code (acl.rs, cluster/, scripting/, observe/, conn/multi.rs, commands/pubsub.rs...).
crate::server_command!(["ping"], |c, _, _, a| ping(c, a));
crate::server_command!(["echo"], |_, _, _, a| Reply::Bulk(a[1].clone()));
crate::server_command!(["quit"], |c, _, _, _| quit(c));
crate::server_command!(["reset"], |c, g, _, _| reset(c, g));
crate::server_command!(["auth"], |c, _, _, a| auth(c, a));
crate::server_command!(["hello"], |c, _, _, a| hello(c, a));
crate::server_command!(["client"], client);
crate::server_command!(["config"], config);
crate::server_command!(["command"], |c, _, _, a| command(c, a));
crate::server_command!(["shutdown"], |c, _, _, a| shutdown(c, a));
crate::server_command!(["debug"], |c, g, _, a| debug(c, core(g), a));
crate::server_command!(["function"], function);
crate::server_command!(["latency"], |c, _, spec, a| {
    let slowlog = c
        .shared
        .config
        .read()
        .get_i64(crate::config::key::SLOWLOG_LOG_SLOWER_THAN);
    crate::stats::latency_report::command(&c.shared.cmdstats, slowlog, spec, a)
});
crate::server_command!(["slowlog"], |c, _, spec, a| {
    crate::stats::slowlog::command(&c.shared.slowlog, spec, a)
});

crate::server_command!(["commandlog"], |c, _, spec, a| {
    crate::stats::slowlog::commandlog(&c.shared.slowlog, spec, a)
});

fn quit(c: &mut Conn) -> Reply {
    c.handle
        .quitting
        .store(true, std::sync::atomic::Ordering::Relaxed);
    c.reply(Reply::ok());
    c.flow = Flow::Close;
    Reply::NoReply
}

/// WAIT: no replicas, so at once 0 (after Redis' argument checks).

fn ping(c: &mut Conn, a: &[Bytes]) -> Reply {
    if a.len() > 2 {
        return error::wrong_arity("ping");
    }
    if c.in_resp2_pubsub() {
        let msg = a.get(1).cloned().unwrap_or_default();
        return Reply::Array(vec![Reply::bulk_str("pong"), Reply::Bulk(msg)]);
    }
    match a.get(1) {
        Some(m) => Reply::Bulk(m.clone()),
        None => Reply::simple("PONG"),
    }
}

fn reset(c: &mut Conn, guard: &mut Option<CoreGuard<'_>>) -> Reply {
    c.multi = None;
    crate::conn::multi::unwatch_all(c, core(guard));
    core(guard).engine.tracking.disable(c.cl.id);
    c.cl.tracking_caching = false;
    {
        let mut info = c.handle.info.lock();
        info.tracking_flags = "";
        info.tracking_redir = -1;
    }
    c.unsubscribe_all();
    if c.monitor {
        c.shared.monitors.remove(&c.cl.id);
        c.monitor = false;
    }
    c.cl.db = 0;
    c.cl.resp3 = false;
    c.cl.no_touch = false;
    c.reply_mode = ReplyMode::On;
    crate::acl::reset_to_default(c);
    let mut info = c.handle.info.lock();
    info.name = Bytes::new();
    info.db = 0;
    info.resp = 2;
    info.multi = -1;
    Reply::simple("RESET")
}

fn auth(c: &mut Conn, a: &[Bytes]) -> Reply {
    let (user, pass) = match a.len() {
        2 => (&b"default"[..], &a[1]),
        3 => (&a[1][..], &a[2]),
        _ => return error::syntax(),
    };
    // The one-argument form keeps its old error when the default user needs no password.
    if a.len() == 2 && c.shared.acl.default_user().nopass {
        return Reply::err(error::AUTH_NOT_CONFIGURED);
    }
    match crate::acl::login(c, user, pass) {
        Ok(()) => Reply::ok(),
        Err(e) => e,
    }
}

fn hello(c: &mut Conn, a: &[Bytes]) -> Reply {
    let mut i = 1;
    let mut proto = if c.cl.resp3 { 3 } else { 2 };
    if a.len() > 1 {
        match parse_i64(&a[1]) {
            Some(v @ (2 | 3)) => proto = v,
            Some(_) => return Reply::err("NOPROTO unsupported protocol version"),
            None => return Reply::err("ERR Protocol version is not an integer or out of range"),
        }
        i = 2;
    }
    let mut setname = None;
    let mut creds = None;
    while i < a.len() {
        let more = a.len() - i - 1;
        if eq(&a[i], "auth") && more >= 2 {
            creds = Some((a[i + 1].clone(), a[i + 2].clone()));
            i += 3;
        } else if eq(&a[i], "setname") && more >= 1 {
            setname = Some(a[i + 1].clone());
            i += 2;
        } else {
            return Reply::err(format!(
                "ERR Syntax error in HELLO option '{}'",
                arg_str(&a[i])
            ));
        }
    }
    if let Some((u, p)) = creds {
        if let Err(e) = crate::acl::login(c, &u, &p) {
            return e;
        }
    }
    if !c.authenticated {
        // Redis 7.2 named the protocol argument in the hint (7.0: "HELLO AUTH <user> <pass>").
        let usage = if c
            .shared
            .personality
            .has(lockcore::personality::Since::redis(702))
        {
            "HELLO <proto> AUTH <user> <pass>"
        } else {
            "HELLO AUTH <user> <pass>"
        };
        return Reply::err(format!("NOAUTH HELLO must be called with the client already authenticated, otherwise the {usage} option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(n) = setname {
        if let Err(e) = validate_name(&n) {
            return e;
        }
        c.handle.info.lock().name = n;
    }
    c.cl.resp3 = proto == 3;
    c.handle.info.lock().resp = proto as u8;
    let p = c.shared.personality;
    let modules = p
        .modules()
        .iter()
        .map(|(name, path)| {
            Reply::Map(vec![
                (Reply::bulk_str("name"), Reply::bulk_str(name)),
                (Reply::bulk_str("ver"), Reply::Int(1)),
                (Reply::bulk_str("path"), Reply::bulk_str(path)),
                (Reply::bulk_str("args"), Reply::Array(vec![])),
            ])
        })
        .collect();
    Reply::Map(vec![
        (Reply::bulk_str("server"), Reply::bulk_str(p.server_name())),
        (Reply::bulk_str("version"), Reply::bulk_str(p.version)),
        (Reply::bulk_str("proto"), Reply::Int(proto)),
        (Reply::bulk_str("id"), Reply::Int(c.cl.id as i64)),
        (
            Reply::bulk_str("mode"),
            Reply::bulk_str(if crate::state::sentinel_mode::active(&c.shared) {
                "sentinel"
            } else if c.shared.cluster.as_ref().is_some_and(|t| t.enabled) {
                "cluster"
            } else {
                "standalone"
            }),
        ),
        (Reply::bulk_str("role"), Reply::bulk_str("master")),
        (Reply::bulk_str("modules"), Reply::Array(modules)),
    ])
}

fn validate_name(n: &[u8]) -> Result<(), Reply> {
    if n.iter().any(|&b| b <= b' ' || b > b'~') {
        return Err(Reply::err(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- CLIENT

fn client(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    match spec.name {
        "id" => Reply::Int(c.cl.id as i64),
        "getname" => {
            let n = c.handle.info.lock().name.clone();
            if n.is_empty() {
                Reply::Null
            } else {
                Reply::Bulk(n)
            }
        }
        "setname" => {
            if let Err(e) = validate_name(&a[2]) {
                return e;
            }
            c.handle.info.lock().name = a[2].clone();
            if let Some(ld) = core(guard).engine.lockdep.as_deref_mut() {
                ld.set_client_name(c.cl.id, &a[2]);
            }
            Reply::ok()
        }
        "setinfo" => {
            let v = a[3].clone();
            if v.iter().any(|&b| b < b'!' || b > b'~') {
                return Reply::err(format!(
                    "ERR {} cannot contain spaces, newlines or special characters.",
                    arg_str(&a[2]).to_ascii_lowercase()
                ));
            }
            let mut info = c.handle.info.lock();
            if eq(&a[2], "lib-name") {
                info.lib_name = v;
            } else if eq(&a[2], "lib-ver") {
                info.lib_ver = v;
            } else {
                return Reply::err(format!("ERR Unrecognized option '{}'", arg_str(&a[2])));
            }
            Reply::ok()
        }
        "info" => Reply::Verbatim(
            "txt",
            Bytes::from(crate::conn::client_line::client_line(c, &c.handle, a) + "\n"),
        ),
        "list" => client_list(c, a),
        "kill" => client_kill(c, a),
        "reply" => {
            if eq(&a[2], "on") {
                c.reply_mode = ReplyMode::On;
                Reply::ok()
            } else if eq(&a[2], "off") {
                c.reply_mode = ReplyMode::Off;
                Reply::NoReply
            } else if eq(&a[2], "skip") {
                c.reply_mode = ReplyMode::Skip;
                Reply::NoReply
            } else {
                error::syntax()
            }
        }
        "capa" => {
            // Valkey accepts and ignores capabilities it does not know.
            if a[2..].iter().any(|o| eq(o, "redirect")) {
                c.handle.info.lock().capa_redirect = true;
            }
            Reply::ok()
        }
        "no-evict" => on_off(&a[2]).map_or_else(error::syntax, |_| Reply::ok()),
        "no-touch" => match on_off(&a[2]) {
            Some(v) => {
                c.cl.no_touch = v;
                Reply::ok()
            }
            None => error::syntax(),
        },
        "unblock" => {
            let Some(id) = parse_i64(&a[2]) else {
                return error::not_integer();
            };
            let reply = match a.get(3) {
                None => None,
                Some(m) if eq(m, "timeout") => None,
                Some(m) if eq(m, "error") => {
                    Some(Reply::err("UNBLOCKED client unblocked via CLIENT UNBLOCK"))
                }
                Some(_) => {
                    return Reply::err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
                }
            };
            Reply::Int(core(guard).engine.unblock_with(id as u64, reply) as i64)
        }
        "pause" | "unpause" => Reply::ok(),
        "getredir" => crate::state::invalidations::getredir(&core(guard).engine, c.cl.id),
        "tracking" => {
            let shared = c.shared.clone();
            if !core(guard).engine.tracking.is_tracking(c.cl.id)
                || a[2].eq_ignore_ascii_case(b"off")
            {
                c.cl.tracking_caching = false;
            }
            crate::state::invalidations::client_tracking(
                &shared,
                &mut core(guard).engine,
                c.cl.id,
                a,
            )
        }
        "caching" => {
            let r = crate::state::invalidations::client_caching(&core(guard).engine, c.cl.id, a);
            c.cl.tracking_caching |= !r.is_error();
            r
        }
        "trackinginfo" => crate::state::invalidations::trackinginfo(
            &core(guard).engine,
            c.cl.id,
            c.cl.tracking_caching,
        ),
        "help" => Reply::Array(
            [
                "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ID",
                "INFO",
                "LIST",
                "SETNAME",
                "GETNAME",
                "SETINFO",
                "KILL",
                "REPLY",
                "NO-EVICT",
                "NO-TOUCH",
                "UNBLOCK",
                "HELP",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => error::unknown_subcommand("client", spec.name.as_bytes()),
    }
}

fn on_off(a: &[u8]) -> Option<bool> {
    if eq(a, "on") {
        Some(true)
    } else if eq(a, "off") {
        Some(false)
    } else {
        None
    }
}

fn client_list(c: &mut Conn, a: &[Bytes]) -> Reply {
    let mut ids: Option<Vec<u64>> = None;
    let mut i = 2;
    while i < a.len() {
        if eq(&a[i], "type") && i + 1 < a.len() {
            let t = arg_str(&a[i + 1]).to_ascii_lowercase();
            if !matches!(
                t.as_str(),
                "normal" | "master" | "replica" | "slave" | "pubsub"
            ) {
                return Reply::err(format!("ERR Unknown client type '{}'", arg_str(&a[i + 1])));
            }
            i += 2;
        } else if eq(&a[i], "id") && i + 1 < a.len() {
            let mut v = Vec::new();
            for x in &a[i + 1..] {
                match parse_i64(x) {
                    Some(n) if n > 0 => v.push(n as u64),
                    _ => return Reply::err("ERR Invalid client ID"),
                }
            }
            ids = Some(v);
            break;
        } else {
            return error::syntax();
        }
    }
    let mut handles: Vec<_> = c.shared.clients.iter().map(|e| e.value().clone()).collect();
    handles.sort_by_key(|h| h.id);
    let mut s = String::new();
    for h in handles {
        // A client killed by another (CLIENT KILL, ACL DELUSER) is gone for CLIENT LIST at
        // once, as in Redis, even if its task has not finished closing.
        if ids.as_ref().is_some_and(|v| !v.contains(&h.id))
            || (h.id != c.cl.id && h.killed.load(Ordering::Relaxed))
        {
            continue;
        }
        s.push_str(&crate::conn::client_line::client_line(c, &h, a));
        s.push('\n');
    }
    Reply::Verbatim("txt", Bytes::from(s))
}

fn client_kill(c: &mut Conn, a: &[Bytes]) -> Reply {
    // Old form: CLIENT KILL addr:port
    if a.len() == 3 {
        let addr = arg_str(&a[2]);
        let target = c
            .shared
            .clients
            .iter()
            .find(|h| h.addr.to_string() == addr)
            .map(|h| h.value().clone());
        return match target {
            Some(h) => {
                kill_client(c, &h);
                Reply::ok()
            }
            None => Reply::err("ERR No such client"),
        };
    }
    let mut filters: Vec<(String, String)> = Vec::new();
    let mut i = 2;
    while i + 1 < a.len() {
        filters.push((arg_str(&a[i]).to_ascii_lowercase(), arg_str(&a[i + 1])));
        i += 2;
    }
    if i != a.len() {
        return error::syntax();
    }
    let mut skipme = true;
    for (k, v) in &filters {
        match k.as_str() {
            "id" => {
                if parse_i64(v.as_bytes()).is_none_or(|n| n <= 0) {
                    return Reply::err("ERR client-id should be greater than 0");
                }
            }
            "skipme" => match v.to_ascii_lowercase().as_str() {
                "yes" => skipme = true,
                "no" => skipme = false,
                _ => return error::syntax(),
            },
            "type" => {
                if !matches!(
                    v.to_ascii_lowercase().as_str(),
                    "normal" | "master" | "replica" | "slave" | "pubsub"
                ) {
                    return Reply::err(format!("ERR Unknown client type '{v}'"));
                }
            }
            "user" => {
                if c.shared.acl.get(v).is_none() {
                    return Reply::err(format!("ERR No such user '{v}'"));
                }
            }
            // MAXAGE: Redis 7.4, Valkey 8.0.
            "maxage"
                if !c
                    .shared
                    .personality
                    .has(lockcore::personality::Since::both(704, 800)) =>
            {
                return error::syntax()
            }
            "addr" | "laddr" | "maxage" => {}
            _ => return error::syntax(),
        }
    }
    let targets: Vec<_> = c
        .shared
        .clients
        .iter()
        .filter(|h| {
            filters.iter().all(|(k, v)| match k.as_str() {
                "id" => h.id.to_string() == *v,
                "addr" => h.addr.to_string() == *v,
                "laddr" => h.laddr.to_string() == *v,
                "user" => h.info.lock().user == *v,
                "type" => {
                    v.eq_ignore_ascii_case("normal")
                        || (v.eq_ignore_ascii_case("pubsub") && h.info.lock().subs > 0)
                }
                "maxage" => {
                    h.created.elapsed().as_secs() as i64 >= v.parse::<i64>().unwrap_or(i64::MAX)
                }
                _ => true,
            }) && !(skipme && h.id == c.cl.id)
        })
        .map(|h| h.value().clone())
        .collect();
    for h in &targets {
        if h.id == c.cl.id {
            // Killing ourselves: the count is still sent, then the connection closes.
            c.flow = Flow::Close;
        } else {
            kill_client(c, h);
        }
    }
    Reply::Int(targets.len() as i64)
}

fn kill_client(c: &mut Conn, h: &crate::state::ClientHandle) {
    if h.id == c.cl.id {
        c.reply(Reply::ok());
        c.flow = Flow::Close;
    } else {
        h.killed.store(true, Ordering::Relaxed);
        h.send(Msg::Kill);
    }
}

// ---------------------------------------------------------------- CONFIG

fn config(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    match spec.name {
        "get" => {
            let cfg = c.shared.config.read();
            let mut seen = std::collections::HashSet::new();
            let mut pairs = Vec::new();
            for pat in &a[2..] {
                for (k, v) in cfg.matching(pat) {
                    if seen.insert(k.clone()) {
                        pairs.push((Reply::bulk_str(&k), Reply::bulk_str(&v)));
                    }
                }
            }
            Reply::Map(pairs)
        }
        "set" => {
            if a.len() % 2 != 0 {
                return error::wrong_arity("config|set");
            }
            let mut next = c.shared.config.read().clone();
            let mut names = std::collections::HashSet::new();
            for kv in a[2..].chunks(2) {
                let name = arg_str(&kv[0]);
                let personality = next.personality();
                let Some(param) = crate::config::find(&name)
                    .filter(|p| crate::config::exists_in(p.name, personality))
                else {
                    return Reply::err(format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                    ));
                };
                if !names.insert(param.name) {
                    return Reply::err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"));
                }
                // Tumbler cannot re-bind its listener at runtime; setting the current
                // value is accepted (Redis treats that as a no-op too).
                let value = arg_str(&kv[1]);
                if matches!(param.name, "port" | "bind" | "tls-port")
                    && next.get_by_name(param.name) != value
                {
                    let why = if param.name != "bind" {
                        "Unable to listen on this port: tumbler cannot change its port at runtime"
                    } else {
                        "Failed to bind to specified addresses."
                    };
                    return Reply::err(format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                    ));
                }
                // Tumbler's own startup-only switches accept their current value, so a
                // CONFIG GET * / CONFIG SET round trip (Redis' "CONFIG sanity") works.
                let tumbler_own_unchanged = matches!(
                    param.name,
                    "enable-time-control"
                        | "enable-test-control"
                        | "nodes"
                        | "cluster-replicas"
                        | "replicas"
                        | "sentinels"
                ) && next.get_by_name(param.name) == value;
                if !param.mutable
                    && !matches!(param.name, "port" | "bind" | "tls-port")
                    && !tumbler_own_unchanged
                {
                    return Reply::err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"));
                }
                if let Err(e) = next.set(&name, &value) {
                    return Reply::err(format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
                    ));
                }
            }
            // As Redis: a `tls-*` change re-reads the certificates now; failing, nothing
            // is applied.
            let tls_names: Vec<String> = a[2..]
                .chunks(2)
                .map(|kv| arg_str(&kv[0]).to_ascii_lowercase())
                .filter(|n| crate::io::net::tls::is_tls_param(n))
                .collect();
            if let Some(tls_name) = tls_names.first() {
                let check_ca = tls_names.iter().any(|n| n != "tls-auth-clients");
                if crate::io::net::tls::reload(&c.shared, &next, check_ca).is_err() {
                    return Reply::err(format!("ERR CONFIG SET failed (possibly related to argument '{tls_name}') - Unable to update TLS configuration. Check server logs."));
                }
            }
            let requirepass = names
                .contains("requirepass")
                .then(|| next.get(crate::config::key::REQUIREPASS).to_string());
            *c.shared.config.write() = next;
            c.shared.apply_config_to(core(guard));
            // requirepass is the default user's password, as in Redis.
            if let Some(p) = requirepass {
                c.shared.acl.set_requirepass(&p);
            }
            Reply::ok()
        }
        "resetstat" => {
            core(guard).engine.stats = Default::default();
            c.shared.cmdstats.reset();
            crate::scripting::Scripts::of(&mut *core(guard).scripts).reset_stats();
            Reply::ok()
        }
        "rewrite" => {
            let cfg = c.shared.config.read().clone();
            let Some(path) = cfg.file.clone() else {
                return Reply::err("ERR The server is running without a config file");
            };
            match crate::config::rewrite::rewrite(&path, &cfg, &c.shared.acl.user_lines()) {
                Ok(()) => {
                    tracing::info!("CONFIG REWRITE executed with success.");
                    Reply::ok()
                }
                Err(e) => {
                    // strerror's text, as Redis prints it.
                    let e = e.split(" (os error").next().unwrap_or(&e).to_string();
                    tracing::warn!("CONFIG REWRITE failed: {e}");
                    Reply::err(format!("ERR Rewriting config file: {e}"))
                }
            }
        }
        "help" => Reply::Array(
            [
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "SET <directive> <value>",
                "RESETSTAT",
                "REWRITE",
                "HELP",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => error::unknown_subcommand("config", spec.name.as_bytes()),
    }
}

// ---------------------------------------------------------------- COMMAND

fn command(c: &Conn, a: &[Bytes]) -> Reply {
    // Time control is invisible unless enabled (timectl.rs); so is what the personality
    // does not have.
    let p = c.shared.personality;
    let hidden = |s: &CommandSpec| {
        crate::state::timectl::hidden_spec(&c.shared, s)
            || crate::state::cluster::hidden_spec(&c.shared, s)
            || crate::state::sentinel_mode::hidden_spec(&c.shared, s)
            || !p.has(s.avail)
    };
    let mut all: Vec<&CommandSpec> = commands::all().filter(|s| !hidden(s)).collect();
    all.sort_by_key(|c| c.name);
    if a.len() == 1 {
        return Reply::Array(all.iter().map(|c| commands::info_reply(&p, c)).collect());
    }
    let sub = arg_str(&a[1]).to_ascii_lowercase();
    let find = |name: &[u8]| -> Option<&'static CommandSpec> {
        let s = arg_str(name).to_ascii_lowercase();
        match s.split_once('|') {
            Some((p, child)) => commands::lookup(p.as_bytes())
                .and_then(|c| c.subcommands.iter().find(|x| x.name == child)),
            None => commands::lookup(name),
        }
        .filter(|s| !hidden(s))
    };
    match sub.as_str() {
        "count" if a.len() == 2 => Reply::Int(all.len() as i64),
        "info" => {
            if a.len() == 2 {
                return Reply::Array(all.iter().map(|c| commands::info_reply(&p, c)).collect());
            }
            Reply::Array(
                a[2..]
                    .iter()
                    .map(|n| find(n).map_or(Reply::Null, |c| commands::info_reply(&p, c)))
                    .collect(),
            )
        }
        "docs" => {
            let list: Vec<&CommandSpec> = if a.len() == 2 {
                all
            } else {
                a[2..].iter().filter_map(|n| find(n)).collect()
            };
            Reply::Map(
                list.iter()
                    .map(|c| {
                        (
                            Reply::bulk_str(&c.listed_name()),
                            commands::docs_reply(&p, c),
                        )
                    })
                    .collect(),
            )
        }
        "list" => crate::commands::cmdlist::command_list(&p, &all, a),
        "getkeys" | "getkeysandflags" if a.len() >= 3 => {
            let argv = &a[2..];
            let spec = match commands::lookup_checked(&p, argv) {
                Ok(s) if hidden(s) => return Reply::err("ERR Invalid command specified"),
                Ok(s) => s,
                Err(_) if commands::lookup(&argv[0]).is_none() => {
                    return Reply::err("ERR Invalid command specified")
                }
                Err(_) => {
                    return Reply::err("ERR Invalid number of arguments specified for command")
                }
            };
            let keys = spec.key_positions(argv);
            if keys.is_empty() {
                // Redis: EVAL/FCALL with 0 keys has none (an empty array); a command
                // with a key spec that found none has bad arguments.
                return match spec.keys {
                    _ if spec.has(lockcore::engine::spec::flag::NO_MANDATORY_KEYS) => {
                        Reply::Array(vec![])
                    }
                    lockcore::engine::spec::Keys::None => {
                        Reply::err("ERR The command has no key arguments")
                    }
                    _ => Reply::err("ERR Invalid arguments specified for command"),
                };
            }
            Reply::Array(
                keys.into_iter()
                    .map(|i| Reply::Bulk(argv[i].clone()))
                    .collect(),
            )
        }
        "help" => Reply::Array(
            [
                "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "(no subcommand)",
                "COUNT",
                "DOCS",
                "GETKEYS",
                "INFO",
                "LIST",
                "HELP",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => error::unknown_subcommand("command", &a[1]),
    }
}

// ---------------------------------------------------------------- SHUTDOWN, DEBUG, FUNCTION

fn shutdown(c: &mut Conn, a: &[Bytes]) -> Reply {
    for opt in &a[1..] {
        if !["nosave", "save", "now", "force", "abort"]
            .iter()
            .any(|o| eq(opt, o))
        {
            return error::syntax();
        }
    }
    if a[1..].iter().any(|o| eq(o, "abort")) {
        return Reply::err("ERR No shutdown in progress.");
    }
    let has = |w: &str| a[1..].iter().any(|o| eq(o, w));
    if has("save") && has("nosave") {
        return error::syntax();
    }
    // Tumbler has no save points (`save` is ignored), so only an explicit SAVE writes.
    if has("save") {
        if let Err(e) = rdb::shutdown_save(&c.shared) {
            tracing::warn!("Error trying to save the DB, can't exit: {e}");
            if !has("force") {
                return Reply::err("ERR Errors trying to SHUTDOWN. Check logs.");
            }
        }
    }
    tracing::info!("SHUTDOWN requested by client {}", c.cl.id);
    c.shared.shutting_down.store(true, Ordering::SeqCst);
    c.shared.script.kill.store(true, Ordering::SeqCst);
    c.shared.shutdown.notify_waiters();
    if let Some(t) = &c.shared.cluster {
        // One process, many nodes: SHUTDOWN on any node stops them all.
        t.shutting_down.store(true, Ordering::SeqCst);
        t.shutdown.notify_waiters();
    }
    c.flow = Flow::Close;
    Reply::NoReply
}

fn debug(c: &mut Conn, core: &mut Core, a: &[Bytes]) -> Reply {
    let sub = arg_str(&a[1]).to_ascii_lowercase();
    match sub.as_str() {
        "sleep" => {
            let secs: f64 = a
                .get(2)
                .and_then(|s| arg_str(s).parse().ok())
                .unwrap_or(0.0);
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.clamp(0.0, 60.0)));
            Reply::ok()
        }
        "set-active-expire" => match a.get(2).and_then(|v| parse_i64(v)) {
            Some(n) => {
                core.engine.active_expire_enabled = n != 0;
                Reply::ok()
            }
            None => error::syntax(),
        },
        "jmap" | "quicklist-packed-threshold" | "stringmatch-len" => Reply::ok(),
        "object" => {
            let Some(k) = a.get(2) else {
                return error::syntax();
            };
            let db = c.cl.db;
            let now = core.engine.now_ms();
            let ver = core.engine.config.personality.rdb_version();
            let listpack_lists = core
                .engine
                .config
                .personality
                .has(lockcore::personality::Since::redis(702));
            match core.engine.lookup(db, k) {
                Some(e) => Reply::Simple(
                    format!(
                        "Value at:0x0 refcount:1 encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
                        list_encoding(e, listpack_lists),
                        lockcore::storage::rdb::dump(&e.value, -2, ver).map_or(0, |p| p.len().saturating_sub(11)),
                        (e.lru_ms / 1000) & 0xff_ffff,
                        (now - e.lru_ms).max(0) / 1000
                    )
                    .into(),
                ),
                None => Reply::err("ERR no such key"),
            }
        }
        "listpack" if a.len() == 3 => {
            // Redis prints the listpack on its stdout; Tumbler only answers as it does.
            let db = c.cl.db;
            let listpack_lists = core
                .engine
                .config
                .personality
                .has(lockcore::personality::Since::redis(702));
            match core.engine.lookup(db, &a[2]) {
                None => Reply::err("ERR no such key"),
                Some(e)
                    if matches!(list_encoding(e, listpack_lists), "listpack" | "listpackex") =>
                {
                    Reply::Simple("Listpack structure printed on stdout".into())
                }
                Some(_) => Reply::err("ERR Not a listpack encoded object."),
            }
        }
        "change-repl-id" | "replybuffer" => Reply::ok(),
        "digest" if a.len() == 2 => {
            Reply::Simple(crate::observe::digest::dataset(&core.engine).into())
        }
        "digest-value" => {
            let db = &core.engine.dbs[c.cl.db];
            let fmt = core.engine.config.personality.doubles();
            Reply::Array(
                a[2..]
                    .iter()
                    .map(|k| Reply::Simple(crate::observe::digest::value(db.get(k), fmt).into()))
                    .collect(),
            )
        }
        "reload" => rdb::debug_reload(&c.shared, core, a),
        "populate" if (3..=5).contains(&a.len()) => debug_populate(c, core, a),
        "populate" => Reply::err(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            arg_str(&a[1])
        )),
        _ => Reply::err(format!(
            "ERR DEBUG {} is not supported by tumbler",
            sub.to_uppercase()
        )),
    }
}

/// DEBUG POPULATE count [prefix] [size]: `prefix:N` = `value:N` (zero-padded or cut to
/// `size` bytes) for N in 0..count, skipping keys that exist, as debug.c does (including its
/// 127-byte limit on the key and value texts).
fn debug_populate(c: &mut Conn, core: &mut Core, a: &[Bytes]) -> Reply {
    // getPositiveLongFromObjectOrReply: one message for negative and non-numbers alike.
    let positive = |v: &Bytes| match parse_i64(v) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(Reply::err("ERR value is out of range, must be positive")),
    };
    let count = match positive(&a[2]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let size = match a.get(4).map(positive).transpose() {
        Ok(n) => n.unwrap_or(0) as usize,
        Err(e) => return e,
    };
    if size as i64 > c.shared.proto_max_bulk.load(Ordering::Relaxed) {
        return Reply::err("ERR value size exceeds proto-max-bulk-len");
    }
    // C's `%s` stops at a NUL; snprintf into char[128] keeps 127 bytes.
    let prefix: &[u8] = match a.get(3) {
        Some(p) => p.split(|b| *b == 0).next().unwrap_or(b""),
        None => b"key",
    };
    let db = c.cl.db;
    let now = core.engine.now_ms();
    for j in 0..count {
        let mut key = prefix.to_vec();
        key.extend_from_slice(format!(":{j}").as_bytes());
        key.truncate(127);
        let key = Bytes::from(key);
        if core.engine.lookup(db, &key).is_some() {
            continue;
        }
        let text = format!("value:{j}");
        let value = if size == 0 {
            Bytes::from(text)
        } else {
            let mut v = vec![0u8; size];
            let n = text.len().min(size);
            v[..n].copy_from_slice(&text.as_bytes()[..n]);
            Bytes::from(v)
        };
        core.engine.dbs[db].insert(
            key.clone(),
            lockcore::storage::value::Value::Str(value.into()),
            None,
            now,
        );
        core.engine.touch_watched(db, &key);
    }
    Reply::ok()
}

fn function(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    match spec.name {
        "kill" => crate::scripting::function_kill(&c.shared),
        "stats" => crate::scripting::function_stats(&c.shared),
        "help" => crate::scripting::function_help(),
        sub => crate::scripting::function_command(&c.shared, core(guard), sub, a),
    }
}

/// `WAITAOF numlocal numreplicas timeout`, as Redis 7.2+ answers it without AOF and without
/// replicas: the checks in Redis' order, then `[0, 0]` at once. Only `numlocal` 1 is an
/// error (nothing is ever fsynced); Redisson probes `WAITAOF 0 0 0` outside single-server
/// mode and sends it in every lock batch, so it must answer, not fail.

#[cfg(test)]
mod tests {
    use lockcore::engine::spec::Exec;

    /// A server command is one row (lockcore's table) plus one handler (a
    /// `server_command!` beside its code): every row the server runs has exactly one
    /// handler, and every handler serves a row.
    #[test]
    fn every_server_row_has_one_handler() {
        let mut names: Vec<&str> = crate::conn::SERVER_COMMANDS
            .iter()
            .flat_map(|r| r.names.iter().copied())
            .collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a row registered twice");
        let mut rows = 0;
        for top in lockcore::commands::all() {
            let server = matches!(top.exec, Exec::Server)
                || top
                    .subcommands
                    .iter()
                    .any(|s| matches!(s.exec, Exec::Server));
            let registered = names.contains(&top.name);
            assert_eq!(
                server, registered,
                "row {}: server-run {server}, handler {registered}",
                top.name
            );
            rows += server as usize;
            for s in std::iter::once(top).chain(top.subcommands.iter()) {
                if matches!(s.exec, Exec::Server) {
                    assert!(crate::conn::handler(s).is_some(), "{}", s.full_name());
                }
            }
        }
        assert_eq!(rows, names.len(), "a handler names no row");
        assert!(rows > 40, "{rows} server rows");
    }
}

/// OBJECT ENCODING's name for `e`: a list in one node is a "listpack" only from Redis 7.2.
fn list_encoding(e: &lockcore::storage::value::Entry, listpack_lists: bool) -> &'static str {
    match &e.value {
        lockcore::storage::value::Value::List(_) => {
            lockcore::storage::qlist::encoding_name(e.encoding(), listpack_lists)
        }
        _ => e.encoding(),
    }
}
