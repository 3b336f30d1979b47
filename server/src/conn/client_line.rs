//! A connection as CLIENT LIST, CLIENT INFO and the ACL log describe it.

use std::sync::atomic::Ordering;

use crate::state::ClientHandle;

use super::Conn;

/// One CLIENT LIST / CLIENT INFO line, with the fields of the personality's release in its
/// order (7.2 added lib-name and lib-ver, 7.4 watch, 8.0 io-thread; Valkey 8 capa and the
/// tot-net-in/out and tot-cmds counters, which Tumbler does not keep: 0). `cur` is
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
    let p = me.shared.personality;
    let valkey = p.is_valkey();
    let capa = if valkey {
        if info.capa_redirect {
            " capa=r"
        } else {
            " capa="
        }
    } else {
        ""
    };
    let watch = if valkey || p.has(lockcore::personality::Since::redis(704)) {
        let n = if h.id == me.cl.id {
            me.watched.len()
        } else {
            info.watch
        };
        format!(" watch={n}")
    } else {
        String::new()
    };
    let mut tail = String::new();
    if p.has(lockcore::personality::Since::redis(702)) {
        tail = format!(
            " lib-name={} lib-ver={}",
            String::from_utf8_lossy(&info.lib_name),
            String::from_utf8_lossy(&info.lib_ver)
        );
    }
    if valkey {
        tail.push_str(" tot-net-in=0 tot-net-out=0 tot-cmds=0");
    } else if p.has(lockcore::personality::Since::redis(800)) {
        tail.push_str(" io-thread=0");
    }
    format!(
        "id={} addr={} laddr={} fd=8 name={} age={} idle={} flags={}{} db={} sub={} psub={} ssub={} multi={}{} qbuf={} qbuf-free={} argv-mem={} multi-mem=0 rbs=16384 rbp=16384 obl={} oll={} omem={} tot-mem={} events={} cmd={} user={} redir={} resp={}{}",
        h.id,
        h.addr,
        h.laddr,
        String::from_utf8_lossy(&info.name),
        age,
        idle,
        flags,
        capa,
        db,
        info.subs,
        info.psubs,
        info.ssubs,
        info.multi,
        watch,
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
        tail,
    )
}
