//! Client-side caching, the server's part: `CLIENT TRACKING/CACHING/GETREDIR/TRACKINGINFO`
//! and the delivery of the invalidations the engine's tracking table queues
//! (lockcore::engine::tracking). Deliveries happen when the keyspace lock is released
//! (`CoreGuard::drop`), so a client's own invalidation follows its reply, as in Redis 7.0.

use bytes::Bytes;
use lockcore::engine::tracking::TrackState;
use lockcore::{ClientId, Engine, Reply};

use crate::state::{Msg, Shared};

fn eq(a: &[u8], s: &str) -> bool {
    a.eq_ignore_ascii_case(s.as_bytes())
}

/// `CLIENT TRACKING on|off [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]`.
pub fn client_tracking(shared: &Shared, eng: &mut Engine, me: ClientId, a: &[Bytes]) -> Reply {
    let mut opts = TrackState::default();
    let mut prefixes = Vec::new();
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        let o = &a[j];
        if eq(o, "redirect") && more {
            j += 1;
            if opts.redirect != 0 {
                return Reply::err("ERR A client can only redirect to a single other client");
            }
            let Some(id) = std::str::from_utf8(&a[j])
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
            else {
                return Reply::err("ERR value is not an integer or out of range");
            };
            if id <= 0 || shared.clients.get(&(id as ClientId)).is_none() {
                return Reply::err("ERR The client ID you want redirect to does not exist");
            }
            opts.redirect = id as ClientId;
        } else if eq(o, "bcast") {
            opts.bcast = true;
        } else if eq(o, "optin") {
            opts.optin = true;
        } else if eq(o, "optout") {
            opts.optout = true;
        } else if eq(o, "noloop") {
            opts.noloop = true;
        } else if eq(o, "prefix") && more {
            j += 1;
            prefixes.push(a[j].clone());
        } else {
            return Reply::err("ERR syntax error");
        }
        j += 1;
    }
    if eq(&a[2], "on") {
        if !opts.bcast && !prefixes.is_empty() {
            return Reply::err("ERR PREFIX option requires BCAST mode to be enabled");
        }
        let cur = eng.tracking.state(me).cloned();
        if let Some(cur) = &cur {
            if cur.bcast != opts.bcast {
                return Reply::err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
            }
        }
        if opts.bcast && (opts.optin || opts.optout) {
            return Reply::err("ERR OPTIN and OPTOUT are not compatible with BCAST");
        }
        if opts.optin && opts.optout {
            return Reply::err("ERR You can't specify both OPTIN mode and OPTOUT mode");
        }
        if let Some(cur) = &cur {
            if (opts.optin && cur.optout) || (opts.optout && cur.optin) {
                return Reply::err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.");
            }
        }
        if opts.bcast {
            if let Some(e) = eng.tracking.prefix_collision(me, &prefixes) {
                return Reply::err(e);
            }
        }
        eng.tracking.enable(me, &opts, prefixes);
    } else if eq(&a[2], "off") {
        eng.tracking.disable(me);
    } else {
        return Reply::err("ERR syntax error");
    }
    sync_info(shared, eng, me);
    Reply::ok()
}

/// Copies a client's tracking mode to what CLIENT LIST / CLIENT INFO show.
pub fn sync_info(shared: &Shared, eng: &Engine, id: ClientId) {
    if let Some(c) = shared.clients.get(&id) {
        let mut info = c.info.lock();
        info.tracking_flags = list_flags(eng, id);
        info.tracking_redir = eng.tracking.state(id).map_or(-1, |s| s.redirect as i64);
    }
}

/// `CLIENT CACHING yes|no`.
pub fn client_caching(eng: &Engine, me: ClientId, a: &[Bytes]) -> Reply {
    let Some(s) = eng.tracking.state(me) else {
        return Reply::err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
    };
    if eq(&a[2], "yes") {
        if !s.optin {
            return Reply::err(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            );
        }
    } else if eq(&a[2], "no") {
        if !s.optout {
            return Reply::err(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            );
        }
    } else {
        return Reply::err("ERR syntax error");
    }
    Reply::ok()
}

/// The invalidations of the client's own writes, to write right after its reply.
pub fn own_pushes(eng: &mut Engine, me: ClientId) -> Vec<Reply> {
    eng.tracking
        .take_own(me)
        .into_iter()
        .map(|keys| {
            let payload = match keys {
                Some(ks) => Reply::Array(ks.into_iter().map(Reply::Bulk).collect()),
                None => Reply::Null,
            };
            Reply::Push(vec![Reply::bulk_str("invalidate"), payload])
        })
        .collect()
}

/// `CLIENT GETREDIR`.
pub fn getredir(eng: &Engine, me: ClientId) -> Reply {
    Reply::Int(eng.tracking.state(me).map_or(-1, |s| s.redirect as i64))
}

/// `CLIENT TRACKINGINFO`.
pub fn trackinginfo(eng: &Engine, me: ClientId, caching: bool) -> Reply {
    let s = eng.tracking.state(me);
    let mut flags = Vec::new();
    let redirect = match s {
        None => {
            flags.push("off");
            -1
        }
        Some(s) => {
            flags.push("on");
            if s.bcast {
                flags.push("bcast");
            }
            if s.optin {
                flags.push("optin");
                if caching {
                    flags.push("caching-yes");
                }
            }
            if s.optout {
                flags.push("optout");
                if caching {
                    flags.push("caching-no");
                }
            }
            if s.noloop {
                flags.push("noloop");
            }
            if s.redirect != 0 && s.broken_redirect {
                flags.push("broken_redirect");
            }
            s.redirect as i64
        }
    };
    let mut prefixes: Vec<Bytes> = s.map_or(Vec::new(), |s| s.prefixes.clone());
    prefixes.sort();
    let prefixes = prefixes.into_iter().map(Reply::Bulk).collect();
    Reply::Map(vec![
        (
            Reply::bulk_str("flags"),
            Reply::Set(flags.into_iter().map(Reply::bulk_str).collect()),
        ),
        (Reply::bulk_str("redirect"), Reply::Int(redirect)),
        (Reply::bulk_str("prefixes"), Reply::Array(prefixes)),
    ])
}

/// CLIENT LIST flags for a tracking client: t, R (broken redirect), B (BCAST).
pub fn list_flags(eng: &Engine, me: ClientId) -> &'static str {
    match eng.tracking.state(me) {
        None => "",
        Some(s) => match (s.bcast, s.broken_redirect) {
            (false, false) => "t",
            (false, true) => "tR",
            (true, false) => "tB",
            (true, true) => "tRB",
        },
    }
}

/// Sends the invalidations queued by the commands that ran under the lock.
pub fn deliver(shared: &Shared, eng: &mut Engine) {
    eng.tracking.flush_broadcast();
    if eng.tracking.pending.is_empty() {
        return;
    }
    let pending = std::mem::take(&mut eng.tracking.pending);
    for (id, keys) in pending {
        let Some(s) = eng.tracking.clients.get_mut(&id) else {
            continue;
        };
        let payload = match keys {
            Some(ks) => Reply::Array(ks.into_iter().map(Reply::Bulk).collect()),
            None => Reply::Null,
        };
        let Some(me) = shared.clients.get(&id).map(|c| c.clone()) else {
            continue;
        };
        if s.redirect == 0 {
            if me.info.lock().resp >= 3 {
                me.send(Msg::Push(Reply::Push(vec![
                    Reply::bulk_str("invalidate"),
                    payload,
                ])));
            }
            continue;
        }
        let to = shared.clients.get(&s.redirect).map(|c| c.clone());
        let Some(to) = to.filter(|c| !c.quitting.load(std::sync::atomic::Ordering::Relaxed)) else {
            s.broken_redirect = true;
            me.info.lock().tracking_flags = if s.bcast { "tRB" } else { "tR" };
            if me.info.lock().resp >= 3 {
                me.send(Msg::Push(Reply::Push(vec![
                    Reply::bulk_str("tracking-redir-broken"),
                    Reply::Int(s.redirect as i64),
                ])));
            }
            continue;
        };
        let (resp, subscribed) = {
            let i = to.info.lock();
            (i.resp, i.subs + i.psubs + i.ssubs > 0)
        };
        if resp >= 3 {
            to.send(Msg::Push(Reply::Push(vec![
                Reply::bulk_str("invalidate"),
                payload,
            ])));
        } else if subscribed {
            to.send(Msg::Push(Reply::Push(vec![
                Reply::bulk_str("message"),
                Reply::bulk_str("__redis__:invalidate"),
                payload,
            ])));
        }
    }
}
