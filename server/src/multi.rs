//! MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! EXEC runs the whole queue under the keyspace lock the connection already holds, so no
//! other client's command, script or expiry can interleave with a transaction.

use bytes::Bytes;

use lockcore::{error, Reply};

use crate::conn::{Conn, Multi};
use crate::dispatch::core;
use crate::shared::{Core, CoreGuard};

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
                if !c.watched.contains(&item) {
                    core.engine.watch(c.cl.id, c.cl.db, k.clone());
                    c.watched.push(item);
                }
            }
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
    if !c.shared.monitors.is_empty() {
        c.shared.feed_monitors(
            c.cl.db,
            &c.handle.addr.to_string(),
            &[Bytes::from_static(b"exec")],
        );
    }
    let mut replies = Vec::with_capacity(multi.queue.len());
    c.cl.deny_blocking = true;
    for (spec, argv) in &multi.queue {
        if !c.shared.monitors.is_empty() {
            c.shared
                .feed_monitors(c.cl.db, &c.handle.addr.to_string(), argv);
        }
        let r = c.execute(guard, spec, argv);
        replies.push(if matches!(r, Reply::NoReply) {
            Reply::ok()
        } else {
            r
        });
    }
    c.cl.deny_blocking = false;
    core(guard).engine.after_command();
    Reply::Array(replies)
}
