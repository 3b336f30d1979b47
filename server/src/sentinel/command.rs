//! A sentinel's commands: SENTINEL and its subcommands, INFO, ROLE and PUBLISH as
//! redis-sentinel 7.0 answers them; every command a sentinel does not have is unknown.

use bytes::Bytes;
use std::sync::Arc;

use lockcore::num::parse_i64;
use lockcore::{error, Reply};

use super::monitor::{self, State};
use super::{data, Sentinels};
use crate::conn::Conn;
use crate::state::CoreGuard;

/// The conn hook for a sentinel's dataset (conn::SENTINEL_HOOK).
pub fn hook(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    argv: &[Bytes],
) -> Option<Result<Reply, Reply>> {
    let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
    match name.as_str() {
        "sentinel" | "info" | "role" => {}
        "publish" => {
            // Redis' sentinelPublishCommand: only hello messages.
            if c.authenticated && argv.len() == 3 && &argv[1][..] != b"__sentinel__:hello" {
                return Some(Err(Reply::err(
                    "ERR Only HELLO messages are accepted by Sentinel instances.",
                )));
            }
            return None;
        }
        n if crate::state::sentinel_mode::COMMANDS.contains(&n) => return None,
        // Tumbler's test and time control reach the whole topology from any listener.
        n if n.starts_with("tumbler.") => return None,
        _ => return Some(Err(error::unknown_command(argv))),
    }
    if !c.authenticated {
        return Some(Err(Reply::err(error::NOAUTH)));
    }
    let (all, me) = Sentinels::of(&c.shared)?;
    if c.in_resp2_pubsub() {
        let full = if name == "sentinel" && argv.len() > 1 {
            format!(
                "sentinel|{}",
                String::from_utf8_lossy(&argv[1]).to_ascii_lowercase()
            )
        } else {
            name.clone()
        };
        return Some(Err(Reply::err(format!(
            "ERR Can't execute '{full}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
        ))));
    }
    let r = match name.as_str() {
        "info" => info(c, guard, &all, argv),
        "role" => role(&all),
        _ => sentinel(&all, me, argv),
    };
    Some(match r {
        Reply::Error(_) => Err(r),
        r => Ok(r),
    })
}

fn role(all: &Sentinels) -> Reply {
    let st = all.state.lock();
    let masters = if st.monitored {
        vec![Reply::bulk_str(&st.name)]
    } else {
        vec![]
    };
    Reply::Array(vec![Reply::bulk_str("sentinel"), Reply::Array(masters)])
}

/// INFO: the sections redis-sentinel has (server, clients, stats, cpu, sentinel).
fn info(c: &mut Conn, guard: &mut Option<CoreGuard<'_>>, all: &Sentinels, argv: &[Bytes]) -> Reply {
    const SECTIONS: &[&str] = &["server", "clients", "stats", "cpu"];
    let mut wanted: Vec<String> = argv[1..]
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    if wanted.is_empty()
        || wanted
            .iter()
            .any(|w| matches!(w.as_str(), "all" | "default" | "everything"))
    {
        wanted = SECTIONS.iter().map(|s| s.to_string()).collect();
        wanted.push("sentinel".into());
    }
    let mut args = vec![Bytes::from_static(b"info")];
    args.extend(
        SECTIONS
            .iter()
            .filter(|s| wanted.iter().any(|w| w == *s))
            .map(|s| Bytes::from_static(s.as_bytes())),
    );
    let mut out = String::new();
    if args.len() > 1 {
        let shared = c.shared.clone();
        let r = match guard.as_mut() {
            Some(g) => crate::observe::info::info(c, g, &args),
            None => {
                let mut g = shared.lock_core_blocking();
                crate::observe::info::info(c, &mut g, &args)
            }
        };
        if let Reply::Verbatim(_, b) = r {
            out = String::from_utf8_lossy(&b).into_owned();
        }
        out = out
            .replace("redis_mode:standalone", "redis_mode:sentinel")
            .replace("server_mode:standalone", "server_mode:sentinel");
    }
    if wanted.iter().any(|w| w == "sentinel") {
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let st = all.state.lock();
        out.push_str(&format!(
            "# Sentinel\r\nsentinel_masters:{}\r\nsentinel_tilt:0\r\nsentinel_tilt_since_seconds:-1\r\nsentinel_running_scripts:0\r\nsentinel_scripts_queue_length:0\r\nsentinel_simulate_failure_flags:{}\r\n",
            st.monitored as i32, st.simulate_failure
        ));
        if st.monitored {
            let status = if st.odown_since.is_some() {
                "odown"
            } else if st.sdown(st.master) {
                "sdown"
            } else {
                "ok"
            };
            out.push_str(&format!(
                "master0:name={},status={status},address={}:{},slaves={},sentinels={}\r\n",
                st.name,
                monitor::ip(&all.topo),
                data::port(&all.topo, st.master),
                st.replicas.len(),
                all.list.len()
            ));
        }
    }
    Reply::Verbatim("txt", Bytes::from(out))
}

/// (subcommand, arity as Redis' table gives it).
const SUBS: &[(&str, i32)] = &[
    ("ckquorum", 3),
    ("config", -3),
    ("debug", -2),
    ("failover", 3),
    ("flushconfig", 2),
    ("get-master-addr-by-name", 3),
    ("help", 2),
    ("info-cache", -3),
    ("is-master-down-by-addr", 6),
    ("master", 3),
    ("masters", 2),
    ("monitor", 6),
    ("myid", 2),
    ("pending-scripts", 2),
    ("remove", 3),
    ("replicas", 3),
    ("reset", 3),
    ("sentinels", 3),
    ("set", -5),
    ("simulate-failure", -3),
    ("slaves", 3),
];

const NO_MASTER: &str = "ERR No such master with that name";

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn sentinel(all: &Arc<Sentinels>, me: usize, a: &[Bytes]) -> Reply {
    if a.len() < 2 {
        return error::wrong_arity("sentinel");
    }
    let sub = s(&a[1]).to_ascii_lowercase();
    let Some(&(_, arity)) = SUBS.iter().find(|(n, _)| *n == sub) else {
        return error::unknown_subcommand("sentinel", &a[1]);
    };
    let n = a.len() as i32;
    if (arity > 0 && n != arity) || (arity < 0 && n < -arity) {
        return error::wrong_arity(&format!("sentinel|{sub}"));
    }
    // The named master, for the subcommands that take one.
    let named = |st: &State, name: &[u8]| st.monitored && st.name.as_bytes() == name;
    match sub.as_str() {
        "help" => help(),
        "myid" => Reply::bulk_str(&all.list[me].id),
        "masters" => {
            let st = all.state.lock();
            if st.monitored {
                Reply::Array(vec![master_reply(all, &st)])
            } else {
                Reply::Array(vec![])
            }
        }
        "master" => {
            let st = all.state.lock();
            if !named(&st, &a[2]) {
                return Reply::err(NO_MASTER);
            }
            master_reply(all, &st)
        }
        "replicas" | "slaves" => {
            let st = all.state.lock();
            if !named(&st, &a[2]) {
                return Reply::err(NO_MASTER);
            }
            Reply::Array(
                st.replicas
                    .iter()
                    .map(|&r| replica_reply(all, &st, r))
                    .collect(),
            )
        }
        "sentinels" => {
            let st = all.state.lock();
            if !named(&st, &a[2]) {
                return Reply::err(NO_MASTER);
            }
            Reply::Array(
                all.list
                    .iter()
                    .filter(|o| o.index != me)
                    .map(|o| sentinel_reply(all, &st, o.index))
                    .collect(),
            )
        }
        "get-master-addr-by-name" => {
            let st = all.state.lock();
            if !named(&st, &a[2]) {
                return Reply::NullArray;
            }
            Reply::Array(vec![
                Reply::bulk_str(monitor::ip(&all.topo)),
                Reply::bulk_str(&data::port(&all.topo, st.master).to_string()),
            ])
        }
        "failover" => {
            {
                let st = all.state.lock();
                if !named(&st, &a[2]) {
                    return Reply::err(NO_MASTER);
                }
            }
            tracing::warn!(
                "Executing user requested FAILOVER of '{}'",
                all.state.lock().name
            );
            match monitor::force_failover(all, me) {
                Ok(()) => Reply::ok(),
                Err(e) => Reply::err(e),
            }
        }
        "ckquorum" => {
            let st = all.state.lock();
            if !named(&st, &a[2]) {
                return Reply::err(NO_MASTER);
            }
            let usable = all.list.len() as i64;
            let mut e = Vec::new();
            if usable < st.quorum {
                e.push(
                    "Not enough available Sentinels to reach the specified quorum for this master",
                );
            }
            if usable < usable / 2 + 1 {
                e.push(
                    "Not enough available Sentinels to reach the majority and authorize a failover",
                );
            }
            if e.is_empty() {
                Reply::Simple(
                    format!(
                        "OK {usable} usable Sentinels. Quorum and failover authorization can be reached"
                    )
                    .into(),
                )
            } else {
                Reply::err(format!(
                    "NOQUORUM {usable} usable Sentinels. {}",
                    e.join(". ")
                ))
            }
        }
        "reset" => {
            let pattern = &a[2];
            let mut st = all.state.lock();
            if !st.monitored || !lockcore::glob::matches(pattern, st.name.as_bytes(), false) {
                return Reply::Int(0);
            }
            // Forget replicas and state; the next pass finds the replicas again.
            st.replicas.clear();
            st.odown_since = None;
            st.failover_running = false;
            st.failover_start = None;
            for i in 0..st.nodes.len() {
                st.nodes[i].sdown_since = None;
            }
            let d = monitor::master_desc(all, &st);
            drop(st);
            let mut ev = monitor::Events::default();
            ev.push(monitor::To::One(me), "+reset-master", d);
            monitor::publish(all, ev);
            all.wake.notify_one();
            Reply::Int(1)
        }
        "is-master-down-by-addr" => {
            let (Some(port), Some(epoch)) = (parse_i64(&a[3]), parse_i64(&a[4])) else {
                return Reply::err(error::NOT_INTEGER);
            };
            let mut st = all.state.lock();
            let down = st.monitored
                && &a[2][..] == monitor::ip(&all.topo).as_bytes()
                && port == data::port(&all.topo, st.master) as i64
                && st.sdown(st.master);
            let mut leader = "*".to_string();
            let mut leader_epoch = 0u64;
            if down && &a[5][..] != b"*" {
                let e = epoch.max(0) as u64;
                if e > st.current_epoch {
                    st.current_epoch = e;
                }
                if st.votes[me].1 < e {
                    st.votes[me] = (s(&a[5]), e);
                }
                leader = st.votes[me].0.clone();
                leader_epoch = st.votes[me].1;
            }
            Reply::Array(vec![
                Reply::Int(down as i64),
                Reply::bulk_str(&leader),
                Reply::Int(leader_epoch as i64),
            ])
        }
        "config" => config(all, me, a),
        "set" => set(all, a),
        "monitor" => {
            let mut st = all.state.lock();
            if st.monitored && st.name.as_bytes() == &a[2][..] {
                return Reply::err("ERR Duplicate master name.");
            }
            let Some(quorum) = parse_i64(&a[5]) else {
                return Reply::err(error::NOT_INTEGER);
            };
            if quorum <= 0 {
                return Reply::err("ERR Quorum must be 1 or greater.");
            }
            let Some(port) = parse_i64(&a[4]).filter(|p| (1..=65535).contains(p)) else {
                return Reply::err("ERR Invalid port number");
            };
            if st.monitored {
                return Reply::err(
                    "ERR this Tumbler sentinel monitors one primary; SENTINEL REMOVE it first",
                );
            }
            let Some(node) = all.topo.nodes.iter().position(|n| {
                n.port() as i64 == port && &a[3][..] == all.topo.announce_ip.as_bytes()
            }) else {
                return Reply::err(
                    "ERR a Tumbler sentinel monitors only a data node of its own process",
                );
            };
            st.name = s(&a[2]);
            st.master = node;
            st.quorum = quorum;
            st.monitored = true;
            st.replicas.clear();
            let d = format!("{} quorum {quorum}", monitor::master_desc(all, &st));
            drop(st);
            let mut ev = monitor::Events::default();
            ev.push(monitor::To::One(me), "+monitor", d);
            monitor::publish(all, ev);
            all.wake.notify_one();
            Reply::ok()
        }
        "remove" => {
            let mut st = all.state.lock();
            if !named(&st, &a[2]) {
                return Reply::err(NO_MASTER);
            }
            st.monitored = false;
            let d = monitor::master_desc(all, &st);
            drop(st);
            let mut ev = monitor::Events::default();
            ev.push(monitor::To::One(me), "-monitor", d);
            monitor::publish(all, ev);
            Reply::ok()
        }
        "info-cache" => info_cache(all, a),
        "pending-scripts" => Reply::Array(vec![]),
        "flushconfig" => Reply::ok(),
        "debug" => debug(a),
        "simulate-failure" => {
            let mut flags = 0;
            for w in &a[2..] {
                let w = s(w).to_ascii_lowercase();
                match w.as_str() {
                    "crash-after-election" => flags |= 1,
                    "crash-after-promotion" => flags |= 2,
                    "help" => {
                        return Reply::Array(vec![
                            Reply::bulk_str("crash-after-election"),
                            Reply::bulk_str("crash-after-promotion"),
                        ])
                    }
                    _ => return Reply::err("ERR Unknown failure simulation specified"),
                }
            }
            all.state.lock().simulate_failure = flags;
            Reply::ok()
        }
        _ => Reply::err(format!(
            "ERR unknown subcommand '{sub}'. Try SENTINEL HELP."
        )),
    }
}

fn kv(k: &str, v: String) -> (Reply, Reply) {
    (Reply::bulk_str(k), Reply::Bulk(Bytes::from(v)))
}

/// The first fields of every instance (Redis' addReplySentinelRedisInstance), `flags` given.
/// (One argument per field Redis writes, in its order.)
#[allow(clippy::too_many_arguments)]
fn common(
    name: String,
    port: u16,
    runid: String,
    flags: String,
    ip: &str,
    since_ok: i64,
    sdown: Option<i64>,
    odown: Option<i64>,
    down_after: i64,
) -> Vec<(Reply, Reply)> {
    let ping_sent = sdown.map_or(0, |_| since_ok);
    let mut v = vec![
        kv("name", name),
        kv("ip", ip.to_string()),
        kv("port", port.to_string()),
        kv("runid", runid),
        kv("flags", flags),
        kv("link-pending-commands", "0".into()),
        kv("link-refcount", "1".into()),
        kv("last-ping-sent", ping_sent.to_string()),
        kv("last-ok-ping-reply", since_ok.to_string()),
        kv("last-ping-reply", since_ok.to_string()),
    ];
    if let Some(t) = sdown {
        v.push(kv("s-down-time", t.to_string()));
    }
    if let Some(t) = odown {
        v.push(kv("o-down-time", t.to_string()));
    }
    v.push(kv("down-after-milliseconds", down_after.to_string()));
    v
}

fn flags(sdown: bool, odown: bool, kind: &str, disconnected: bool) -> String {
    let mut f = Vec::new();
    if sdown {
        f.push("s_down");
    }
    if odown {
        f.push("o_down");
    }
    f.push(kind);
    if disconnected {
        f.push("disconnected");
    }
    f.join(",")
}

fn master_reply(all: &Sentinels, st: &State) -> Reply {
    let now = all.now_ms();
    let m = st.master;
    let topo = &all.topo;
    let down = data::is_down(topo, m);
    let inst = &st.nodes[m];
    let mut v = common(
        st.name.clone(),
        data::port(topo, m),
        data::run_id(topo, m),
        flags(st.sdown(m), st.odown_since.is_some(), "master", down),
        monitor::ip(topo),
        if down { now - inst.last_ok } else { 0 },
        inst.sdown_since.map(|t| now - t),
        st.odown_since.map(|t| now - t),
        st.down_after,
    );
    v.extend([
        kv(
            "info-refresh",
            if down { now - inst.last_ok } else { 0 }.to_string(),
        ),
        kv("role-reported", "master".into()),
        kv("role-reported-time", (now - inst.role_time).to_string()),
        kv("config-epoch", st.config_epoch.to_string()),
        kv("num-slaves", st.replicas.len().to_string()),
        kv("num-other-sentinels", (all.list.len() - 1).to_string()),
        kv("quorum", st.quorum.to_string()),
        kv("failover-timeout", st.failover_timeout.to_string()),
        kv("parallel-syncs", st.parallel_syncs.to_string()),
    ]);
    Reply::Map(v)
}

fn replica_reply(all: &Sentinels, st: &State, r: usize) -> Reply {
    let now = all.now_ms();
    let topo = &all.topo;
    let down = data::is_down(topo, r);
    let inst = &st.nodes[r];
    let ip = monitor::ip(topo);
    let port = data::port(topo, r);
    let mut v = common(
        format!("{ip}:{port}"),
        port,
        data::run_id(topo, r),
        flags(st.sdown(r), false, "slave", down),
        ip,
        if down { now - inst.last_ok } else { 0 },
        inst.sdown_since.map(|t| now - t),
        None,
        st.down_after,
    );
    let of = data::primary_of(topo, r);
    let link = of.is_some() && !down && data::link_up(topo, r);
    let (mhost, mport) = match of {
        Some(p) => (ip.to_string(), data::port(topo, p).to_string()),
        None => ("?".to_string(), "0".to_string()),
    };
    v.extend([
        kv(
            "info-refresh",
            if down { now - inst.last_ok } else { 0 }.to_string(),
        ),
        kv(
            "role-reported",
            if of.is_none() { "master" } else { "slave" }.into(),
        ),
        kv("role-reported-time", (now - inst.role_time).to_string()),
        kv("master-link-down-time", "0".into()),
        kv("master-link-status", if link { "ok" } else { "err" }.into()),
        kv("master-host", mhost),
        kv("master-port", mport),
        kv("slave-priority", data::priority(topo, r).to_string()),
        kv("slave-repl-offset", data::offset(topo, r).to_string()),
        kv("replica-announced", "1".into()),
    ]);
    Reply::Map(v)
}

fn sentinel_reply(all: &Sentinels, st: &State, j: usize) -> Reply {
    let o = &all.list[j];
    // What sentinel j announces (SENTINEL CONFIG SET announce-ip / announce-port on it).
    let set = &st.settings[j];
    let ip = if set.announce_ip.is_empty() {
        o.addr.ip().to_string()
    } else {
        set.announce_ip.clone()
    };
    let port = if set.announce_port > 0 {
        set.announce_port as u16
    } else {
        o.addr.port()
    };
    let mut v = common(
        o.id.clone(),
        port,
        o.id.clone(),
        "sentinel".into(),
        &ip,
        0,
        None,
        None,
        st.down_after,
    );
    let (leader, epoch) = &st.votes[j];
    v.extend([
        kv("last-hello-message", "0".into()),
        kv("voted-leader", leader.clone()),
        kv("voted-leader-epoch", epoch.to_string()),
    ]);
    Reply::Map(v)
}

/// SENTINEL CONFIG GET|SET: the global parameters of the sentinel it is sent to.
fn config(all: &Sentinels, me: usize, a: &[Bytes]) -> Reply {
    const USAGE: &str =
        "ERR Only SENTINEL CONFIG GET <option> / SET <option> <value> are supported.";
    const PARAMS: &[&str] = &[
        "resolve-hostnames",
        "announce-hostnames",
        "announce-ip",
        "announce-port",
        "sentinel-user",
        "sentinel-pass",
    ];
    let op = s(&a[2]).to_ascii_lowercase();
    let mut st = all.state.lock();
    let set = &mut st.settings[me];
    let yn = |b: bool| if b { "yes" } else { "no" }.to_string();
    match (op.as_str(), a.len()) {
        ("get", 4) => {
            let pat = &a[3];
            let mut out = Vec::new();
            for p in PARAMS {
                if lockcore::glob::matches(pat, p.as_bytes(), true) {
                    let v = match *p {
                        "resolve-hostnames" => yn(set.resolve_hostnames),
                        "announce-hostnames" => yn(set.announce_hostnames),
                        "announce-ip" => set.announce_ip.clone(),
                        "announce-port" => set.announce_port.to_string(),
                        "sentinel-user" => set.sentinel_user.clone(),
                        _ => set.sentinel_pass.clone(),
                    };
                    out.push(Reply::bulk_str(p));
                    out.push(Reply::Bulk(Bytes::from(v)));
                }
            }
            Reply::Array(out)
        }
        ("set", 5) => {
            let name = s(&a[3]).to_ascii_lowercase();
            let val = s(&a[4]);
            let invalid = || {
                Reply::err(format!(
                    "ERR Invalid value '{val}' to SENTINEL CONFIG SET '{name}'"
                ))
            };
            let yesno = |v: &str| match v.to_ascii_lowercase().as_str() {
                "yes" => Some(true),
                "no" => Some(false),
                _ => None,
            };
            match name.as_str() {
                "resolve-hostnames" => match yesno(&val) {
                    Some(b) => set.resolve_hostnames = b,
                    None => return invalid(),
                },
                "announce-hostnames" => match yesno(&val) {
                    Some(b) => set.announce_hostnames = b,
                    None => return invalid(),
                },
                "announce-ip" => set.announce_ip = val.clone(),
                "announce-port" => match val.parse::<i64>() {
                    Ok(p) if (0..=65535).contains(&p) => set.announce_port = p,
                    _ => return invalid(),
                },
                "sentinel-user" => set.sentinel_user = val.clone(),
                "sentinel-pass" => set.sentinel_pass = val.clone(),
                _ => {
                    return Reply::err(format!(
                        "ERR Invalid argument '{}' to SENTINEL CONFIG SET",
                        s(&a[3])
                    ))
                }
            }
            Reply::ok()
        }
        _ => Reply::err(USAGE),
    }
}

/// SENTINEL SET <master> <option> <value> ...
fn set(all: &Sentinels, a: &[Bytes]) -> Reply {
    let mut st = all.state.lock();
    if !(st.monitored && st.name.as_bytes() == &a[2][..]) {
        return Reply::err(NO_MASTER);
    }
    let mut i = 3;
    while i < a.len() {
        let opt = s(&a[i]).to_ascii_lowercase();
        let Some(v) = a.get(i + 1) else {
            return Reply::err(format!(
                "ERR Unknown option or number of arguments for SENTINEL SET '{}'",
                s(&a[i])
            ));
        };
        let num = parse_i64(v);
        let bad = || {
            Reply::err(format!(
                "ERR Invalid argument '{}' for SENTINEL SET '{}'",
                s(v),
                s(&a[i])
            ))
        };
        match opt.as_str() {
            "quorum" => match num {
                Some(n) if n > 0 => st.quorum = n,
                _ => return bad(),
            },
            "down-after-milliseconds" => match num {
                Some(n) if n > 0 => st.down_after = n,
                _ => return bad(),
            },
            "failover-timeout" => match num {
                Some(n) if n > 0 => st.failover_timeout = n,
                _ => return bad(),
            },
            "parallel-syncs" => match num {
                Some(n) if n > 0 => st.parallel_syncs = n,
                _ => return bad(),
            },
            "auth-pass" | "auth-user" | "master-reboot-down-after-period" => {}
            _ => {
                return Reply::err(format!(
                    "ERR Unknown option or number of arguments for SENTINEL SET '{}'",
                    s(&a[i])
                ))
            }
        }
        i += 2;
    }
    Reply::ok()
}

/// SENTINEL INFO-CACHE <master> ...: each known instance's INFO, as the sentinels last saw it
/// (here: now).
fn info_cache(all: &Sentinels, a: &[Bytes]) -> Reply {
    let st = all.state.lock();
    if !st.monitored || !a[2..].iter().any(|n| &n[..] == st.name.as_bytes()) {
        return Reply::Array(vec![]);
    }
    let mut nodes = vec![st.master];
    nodes.extend(st.replicas.iter().copied());
    let entries = nodes
        .into_iter()
        .map(|n| {
            let text = if data::is_down(&all.topo, n) {
                Reply::Null
            } else {
                Reply::Bulk(Bytes::from(format!(
                    "# Server\r\nredis_version:{}\r\nrun_id:{}\r\ntcp_port:{}\r\n",
                    all.list[0].shared.personality.redis_version(),
                    data::run_id(&all.topo, n),
                    data::port(&all.topo, n)
                )))
            };
            Reply::Array(vec![Reply::Int(0), text])
        })
        .collect();
    Reply::Array(vec![Reply::bulk_str(&st.name), Reply::Array(entries)])
}

fn debug(a: &[Bytes]) -> Reply {
    const PARAMS: &[(&str, i64)] = &[
        ("INFO-PERIOD", 10000),
        ("PING-PERIOD", 1000),
        ("ASK-PERIOD", 1000),
        ("PUBLISH-PERIOD", 2000),
        ("DEFAULT-DOWN-AFTER", 30000),
        ("DEFAULT-FAILOVER-TIMEOUT", 180000),
        ("TILT-TRIGGER", 2000),
        ("TILT-PERIOD", 30000),
        ("SLAVE-RECONF-TIMEOUT", 10000),
        ("MIN-LINK-RECONNECT-PERIOD", 15000),
        ("ELECTION-TIMEOUT", 10000),
        ("SCRIPT-MAX-RUNTIME", 60000),
        ("SCRIPT-RETRY-DELAY", 30000),
    ];
    if a.len() == 2 {
        return Reply::Map(
            PARAMS
                .iter()
                .map(|(k, v)| (Reply::bulk_str(k), Reply::bulk_str(&v.to_string())))
                .collect(),
        );
    }
    // Tumbler's sentinels have no timers to tune: the values are accepted and shown as Redis'.
    Reply::ok()
}

fn help() -> Reply {
    const LINES: &[&str] = &[
        "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CKQUORUM <master-name>",
        "    Check if the current Sentinel configuration is able to reach the quorum",
        "    needed to failover a master and the majority needed to authorize the",
        "    failover.",
        "CONFIG SET <param> <value>",
        "    Set a global Sentinel configuration parameter.",
        "CONFIG GET <param>",
        "    Get global Sentinel configuration parameter.",
        "DEBUG [<param> <value> ...]",
        "    Show a list of configurable time parameters and their values (milliseconds).",
        "    Or update current configurable parameters values (one or more).",
        "GET-MASTER-ADDR-BY-NAME <master-name>",
        "    Return the ip and port number of the master with that name.",
        "FAILOVER <master-name>",
        "    Manually failover a master node without asking for agreement from other",
        "    Sentinels",
        "FLUSHCONFIG",
        "    Force Sentinel to rewrite its configuration on disk, including the current",
        "    Sentinel state.",
        "INFO-CACHE <master-name>",
        "    Return last cached INFO output from masters and all its replicas.",
        "IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
        "    Check if the master specified by ip:port is down from current Sentinel's",
        "    point of view.",
        "MASTER <master-name>",
        "    Show the state and info of the specified master.",
        "MASTERS",
        "    Show a list of monitored masters and their state.",
        "MONITOR <name> <ip> <port> <quorum>",
        "    Start monitoring a new master with the specified name, ip, port and quorum.",
        "MYID",
        "    Return the ID of the Sentinel instance.",
        "PENDING-SCRIPTS",
        "    Get pending scripts information.",
        "REMOVE <master-name>",
        "    Remove master from Sentinel's monitor list.",
        "REPLICAS <master-name>",
        "    Show a list of replicas for this master and their state.",
        "RESET <pattern>",
        "    Reset masters for specific master name matching this pattern.",
        "SENTINELS <master-name>",
        "    Show a list of Sentinel instances for this master and their state.",
        "SET <master-name> <option> <value> [<option> <value> ...]",
        "    Set configuration parameters for certain masters.",
        "SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]",
        "    Simulate a Sentinel crash.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::simple(l)).collect())
}
