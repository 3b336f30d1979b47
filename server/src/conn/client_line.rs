//! A connection as CLIENT LIST, CLIENT INFO and the ACL log describe it.

use std::sync::atomic::Ordering;

use crate::state::ClientHandle;

use super::Conn;

/// One CLIENT LIST / CLIENT INFO line, with Redis 7.2's fields in Redis' order. `cur` is
/// the command being run by `me`: Redis still has it in the caller's query buffer, so its
/// `qbuf` shows the command's RESP size.
pub fn client_line(me: &Conn, h: &ClientHandle, cur: &[bytes::Bytes]) -> String {
    let (qbuf, argv_mem, pending) = if h.id == me.cl.id {
        let mut n = 1 + cur.len().to_string().len() + 2;
        for a in cur {
            n += 1 + a.len().to_string().len() + 2 + a.len() + 2;
        }
        (n, cur.iter().map(|a| a.len()).sum::<usize>(), me.out.len())
    } else {
        (
            h.mem.qbuf.load(Ordering::Relaxed),
            0,
            h.mem.out.load(Ordering::Relaxed) + h.pending_out.load(Ordering::Relaxed),
        )
    };
    let (obl, oll, omem) = crate::state::climits::output_fields(pending);
    let info = h.info.lock();
    let age = h.created.elapsed().as_secs();
    let idle = info.last_interaction.map_or(0, |t| t.elapsed().as_secs());
    let mut flags = String::new();
    if info.subs + info.psubs + info.ssubs > 0 {
        flags.push('P');
    }
    if info.multi >= 0 {
        flags.push('x');
    }
    if h.id == me.cl.id && me.flow == crate::conn::Flow::Blocked {
        flags.push('b');
    }
    flags.push_str(info.tracking_flags);
    if flags.is_empty() {
        flags.push('N');
    }
    let db = if h.id == me.cl.id { me.cl.db } else { info.db };
    let last = if h.id == me.cl.id {
        me.last_spec
    } else {
        info.last_cmd
    };
    let cmd = last.map_or_else(|| "NULL".to_string(), |c| c.full_name());
    format!(
        "id={} addr={} laddr={} fd=8 name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem=0 rbs=16384 rbp=16384 obl={} oll={} omem={} tot-mem={} events={} cmd={} user={} redir={} resp={}",
        h.id,
        h.addr,
        h.laddr,
        String::from_utf8_lossy(&info.name),
        age,
        idle,
        flags,
        db,
        info.subs,
        info.psubs,
        info.ssubs,
        info.multi,
        qbuf,
        if qbuf > 0 { 20474 - qbuf.min(20474) } else { 0 },
        argv_mem,
        obl,
        oll,
        omem,
        22000 + qbuf + argv_mem + pending,
        if pending > 0 { "rw" } else { "r" },
        cmd,
        info.user,
        info.tracking_redir,
        info.resp,
    )
}
