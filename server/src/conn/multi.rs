//! MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! EXEC runs the whole queue under the keyspace lock the connection already holds, so no
//! other client's command, script or expiry can interleave with a transaction.

use bytes::Bytes;

use lockcore::{error, Reply};

use crate::conn::{Conn, Flow, Multi, ReplyMode};
use crate::state::core;
use crate::state::{Core, CoreGuard};

pub fn command(c: &mut Conn, guard: &mut Option<CoreGuard<'_>>, name: &str, a: &[Bytes]) -> Reply {
    match name {
        "multi" => {
            if c.multi.is_some() {
                return Reply::err(error::MULTI_NESTED);
            }
            c.multi = Some(Multi::default());
            c.handle.info.lock().multi = 0;
            Reply::ok()
        }
        "exec" => exec(c, guard),
        "discard" => match c.multi.take() {
            None => Reply::err(error::DISCARD_WITHOUT_MULTI),
            Some(_) => {
                unwatch_all(c, core(guard));
                c.handle.info.lock().multi = -1;
                Reply::ok()
            }
        },
        "watch" => {
            if c.multi.is_some() {
                return Reply::err(error::WATCH_IN_MULTI);
            }
            let core = core(guard);
            for k in &a[1..] {
                let item = (c.cl.db, k.clone());
                // A key already expired at WATCH time is deleted now, before it is watched:
                // its later removal is no logical change (Redis flags it `expired` and
                // ignores its deletion), so it must not break EXEC.
                core.engine.expire_if_needed(c.cl.db, k);
                if !c.watched.contains(&item) {
                    core.engine.watch(c.cl.id, c.cl.db, k.clone());
                    c.watched.push(item);
                }
            }
            c.handle.info.lock().watch = c.watched.len();
            Reply::ok()
        }
        _ => {
            unwatch_all(c, core(guard));
            Reply::ok()
        }
    }
}

pub fn unwatch_all(c: &mut Conn, core: &mut Core) {
    if !c.watched.is_empty() {
        let w = std::mem::take(&mut c.watched);
        core.engine.unwatch(c.cl.id, &w);
        c.handle.info.lock().watch = 0;
    }
}

fn exec(c: &mut Conn, guard: &mut Option<CoreGuard<'_>>) -> Reply {
    let Some(multi) = c.multi.take() else {
        return Reply::err(error::EXEC_WITHOUT_MULTI);
    };
    c.handle.info.lock().multi = -1;
    if multi.dirty {
        unwatch_all(c, core(guard));
        return Reply::err(error::EXECABORT);
    }
    let broken = !c.watched.is_empty() && {
        let core = core(guard);
        // A watched key that expired since WATCH counts as modified, as in Redis 7.
        for (db, k) in c.watched.clone() {
            core.engine.expire_if_needed(db, &k);
        }
        core.engine.watch_broken(c.cl.id)
    };
    unwatch_all(c, core(guard));
    if broken {
        return Reply::NullArray;
    }
    // The reply is streamed as Redis does: the array header first, then each command's
    // reply as it runs. A SUBSCRIBE inside the transaction thus writes its confirmations
    // in place, byte for byte like Redis.
    if c.reply_mode == ReplyMode::On {
        c.out
            .extend_from_slice(format!("*{}\r\n", multi.queue.len()).as_bytes());
    }
    let deny = c.cl.deny_blocking;
    c.cl.deny_blocking = true;
    c.in_exec = true;
    for (spec, argv) in &multi.queue {
        let r = match crate::conn::checks::check_exec(c, spec, argv) {
            Ok(()) => c.execute(guard, spec, argv),
            Err(e) => {
                c.shared.cmdstats.count_error_reply(&e);
                e
            }
        };
        c.feed_monitors_for(spec, argv);
        // A blocking command inside EXEC answered with its timeout reply already.
        c.cl.blocked = false;
        if c.reply_mode == ReplyMode::On {
            r.encode_fmt(&mut c.out, c.cl.resp3, c.shared.personality.doubles());
        }
        if c.flow == Flow::Close {
            break;
        }
    }
    c.cl.deny_blocking = deny;
    c.in_exec = false;
    if let Some(core) = guard.as_mut() {
        core.engine.after_command();
    }
    Reply::NoReply
}

crate::server_command!(
    ["multi", "exec", "discard", "watch", "unwatch"],
    |c, g, spec, a| command(c, g, spec.name, a)
);
