//! The sentinels' view of the data nodes, failure detection on Tumbler's clock, the
//! failover, and the events (pub/sub messages and log lines) in Redis' formats.

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

use super::{data, Sentinels};
use crate::config::Config;
use crate::state::cluster::Topology;

/// The sentinels' knowledge of one data node.
#[derive(Debug, Clone, Default)]
pub struct Inst {
    /// When it last answered (the last monitor pass that found it up), clock ms.
    pub last_ok: i64,
    /// Subjectively down since (clock ms).
    pub sdown_since: Option<i64>,
    /// When its role last changed as the sentinels saw it.
    pub role_time: i64,
    /// The role it reported last: true for master.
    pub reported_master: bool,
}

/// Per-sentinel settings (SENTINEL CONFIG SET).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub announce_ip: String,
    pub announce_port: i64,
    pub resolve_hostnames: bool,
    pub announce_hostnames: bool,
    pub sentinel_user: String,
    pub sentinel_pass: String,
}

/// What the sentinels know of the one primary they monitor.
#[derive(Debug)]
pub struct State {
    pub name: String,
    /// SENTINEL REMOVE stops monitoring; SENTINEL MONITOR starts again.
    pub monitored: bool,
    /// The node index of the primary.
    pub master: usize,
    pub quorum: i64,
    pub down_after: i64,
    pub failover_timeout: i64,
    pub parallel_syncs: i64,
    pub current_epoch: u64,
    pub config_epoch: u64,
    /// Per data node.
    pub nodes: Vec<Inst>,
    /// The replicas the sentinels know, in the order they learnt of them.
    pub replicas: Vec<usize>,
    pub odown_since: Option<i64>,
    /// When the last failover attempt started (clock ms), and whether one runs.
    pub failover_start: Option<i64>,
    pub failover_running: bool,
    /// A failover between its two passes: the promoted replica, the old primary, the leader.
    pub promoting: Option<(usize, usize, usize)>,
    /// When the failover's first pass ran (real time): the second waits [`PROMOTION`].
    pub promoting_since: Option<std::time::Instant>,
    /// Per sentinel: the leader it voted for (its myid) and the epoch of the vote.
    pub votes: Vec<(String, u64)>,
    pub settings: Vec<Settings>,
    /// SENTINEL SIMULATE-FAILURE flags (only shown).
    pub simulate_failure: i64,
    /// When monitoring started (clock ms), for the timings SENTINEL MASTER shows.
    pub since: i64,
}

impl State {
    pub fn new(config: &Config, topo: &Topology, sentinels: usize) -> State {
        let name = match config.get_by_name("sentinel-master-name") {
            "" => "mymaster".to_string(),
            n => n.to_string(),
        };
        let quorum = match super::directive_i64(config, "sentinel-quorum", 0) {
            q if q > 0 => q,
            _ => sentinels as i64 / 2 + 1,
        };
        let down_after = match super::directive_i64(config, "sentinel-down-after-milliseconds", 0) {
            d if d > 0 => d,
            _ => 30000,
        };
        let failover_timeout = match super::directive_i64(config, "sentinel-failover-timeout", 0) {
            t if t > 0 => t,
            _ => 180000,
        };
        let n = topo.nodes.len();
        State {
            name,
            monitored: true,
            master: 0,
            quorum,
            down_after,
            failover_timeout,
            parallel_syncs: 1,
            current_epoch: 0,
            config_epoch: 0,
            nodes: vec![Inst::default(); n],
            replicas: Vec::new(),
            odown_since: None,
            failover_start: None,
            failover_running: false,
            promoting: None,
            promoting_since: None,
            votes: vec![("?".to_string(), 0); sentinels],
            settings: vec![Settings::default(); sentinels],
            simulate_failure: 0,
            since: 0,
        }
    }

    pub fn sdown(&self, node: usize) -> bool {
        self.nodes[node].sdown_since.is_some()
    }
}

/// Who publishes an event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum To {
    /// Every sentinel.
    All,
    /// Only this sentinel (the failover's leader).
    One(usize),
    /// Every sentinel but this one.
    Others(usize),
}

/// One event: its channel (`+sdown`), its message, and Redis' log level (warning or not).
#[derive(Debug, Clone)]
pub struct Event {
    pub to: To,
    pub kind: &'static str,
    pub msg: String,
    pub warning: bool,
}

/// Events gathered under the state lock and published after it.
#[derive(Default)]
pub struct Events {
    pub list: Vec<Event>,
    /// Which sentinel's log the process log shows (the leader's, else sentinel 0's).
    pub logger: usize,
}

impl Events {
    pub fn push(&mut self, to: To, kind: &'static str, msg: String) {
        let warning = !matches!(
            kind,
            "+slave"
                | "+sentinel"
                | "+failover-state-send-slaveof-noone"
                | "+failover-state-wait-promotion"
                | "+slave-reconf-sent"
                | "+slave-reconf-inprog"
                | "+slave-reconf-done"
                | "+convert-to-slave"
                | "+fix-slave-config"
                | "+role-change"
                | "-role-change"
                | "+reboot"
        );
        self.list.push(Event {
            to,
            kind,
            msg,
            warning,
        });
    }
}

/// `<ip>` of the data nodes, as the sentinels announce them.
pub fn ip(topo: &Topology) -> &str {
    &topo.announce_ip
}

/// `master <name> <ip> <port>`.
pub fn master_desc(all: &Sentinels, st: &State) -> String {
    format!(
        "master {} {} {}",
        st.name,
        ip(&all.topo),
        data::port(&all.topo, st.master)
    )
}

/// `slave <ip>:<port> <ip> <port> @ <name> <master-ip> <master-port>`.
pub fn slave_desc(all: &Sentinels, st: &State, node: usize) -> String {
    let ip = ip(&all.topo);
    let p = data::port(&all.topo, node);
    format!(
        "slave {ip}:{p} {ip} {p} @ {} {ip} {}",
        st.name,
        data::port(&all.topo, st.master)
    )
}

/// Publishes `events` on the sentinels' pub/sub and writes the logger's to the log.
pub fn publish(all: &Sentinels, events: Events) {
    for e in &events.list {
        let logged = match e.to {
            To::All => true,
            To::One(j) => j == events.logger,
            To::Others(j) => j != events.logger,
        };
        if logged {
            if e.warning {
                tracing::warn!("{} {}", e.kind, e.msg);
            } else {
                tracing::info!("{} {}", e.kind, e.msg);
            }
        }
        let channel = Bytes::from_static(e.kind.as_bytes());
        let msg = Bytes::from(e.msg.clone());
        for s in &all.list {
            let yes = match e.to {
                To::All => true,
                To::One(j) => j == s.index,
                To::Others(j) => j != s.index,
            };
            if yes {
                s.shared.pubsub.publish_to(&channel, &msg, false);
            }
        }
    }
}

/// At start: `+monitor`, the replicas and the other sentinels, as a sentinel logs them when
/// it starts with a configuration that names the primary.
pub fn started(all: &Arc<Sentinels>) {
    let now = all.now_ms();
    let mut ev = Events::default();
    {
        let mut st = all.state.lock();
        st.since = now;
        for i in 0..st.nodes.len() {
            st.nodes[i].last_ok = now;
            st.nodes[i].role_time = now;
            st.nodes[i].reported_master = data::primary_of(&all.topo, i).is_none();
        }
        tracing::warn!("Sentinel ID is {}", all.list[0].id);
        let m = format!("{} quorum {}", master_desc(all, &st), st.quorum);
        ev.push(To::All, "+monitor", m);
        discover(all, &mut st, &mut ev);
        for s in &all.list {
            for o in all.list.iter().filter(|o| o.index != s.index) {
                let msg = format!(
                    "sentinel {} {} {} @ {} {} {}",
                    o.id,
                    o.addr.ip(),
                    o.addr.port(),
                    st.name,
                    ip(&all.topo),
                    data::port(&all.topo, st.master)
                );
                ev.push(To::One(s.index), "+sentinel", msg);
            }
        }
    }
    publish(all, ev);
}

/// Replicas of the primary the sentinels do not know yet: `+slave`.
fn discover(all: &Sentinels, st: &mut State, ev: &mut Events) {
    for i in 0..st.nodes.len() {
        if i != st.master
            && !st.replicas.contains(&i)
            && data::primary_of(&all.topo, i) == Some(st.master)
        {
            st.replicas.push(i);
            ev.push(To::All, "+slave", slave_desc(all, st, i));
        }
    }
}

/// The monitor: a pass every 10 ms of real time while something is pending (a node down,
/// a failover to retry), every 100 ms otherwise, and at once when woken.
pub async fn run(all: Arc<Sentinels>) {
    let mut downs: Vec<_> = all.topo.nodes.iter().map(|n| n.down.subscribe()).collect();
    loop {
        if all.list[0]
            .shared
            .shutting_down
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let pending = tick(&all, None);
        let wait = if pending { 10 } else { 100 };
        let changed = futures_like_any(&mut downs);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
            _ = all.wake.notified() => {}
            _ = changed => {}
        }
    }
}

/// Resolves when any node's down flag changes.
async fn futures_like_any(downs: &mut [tokio::sync::watch::Receiver<bool>]) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut set = Vec::new();
    for d in downs.iter() {
        let mut d = d.clone();
        let tx = tx.clone();
        set.push(tokio::spawn(async move {
            if d.changed().await.is_ok() {
                let _ = tx.send(()).await;
            }
        }));
    }
    drop(tx);
    let _ = rx.recv().await;
    for t in set {
        t.abort();
    }
    for d in downs.iter_mut() {
        d.borrow_and_update();
    }
}

/// One monitor pass. `forced`: SENTINEL FAILOVER sent to that sentinel. Returns whether
/// something is pending (a node down, a failover not done).
pub fn tick(all: &Arc<Sentinels>, forced: Option<usize>) -> bool {
    let now = all.now_ms();
    let mut ev = Events::default();
    let pending;
    {
        let mut st = all.state.lock();
        if !st.monitored {
            return false;
        }
        let topo = all.topo.clone();
        let n = st.nodes.len();
        // Subjective down and up.
        for i in 0..n {
            let down = data::is_down(&topo, i);
            if !down {
                st.nodes[i].last_ok = now;
                if st.nodes[i].sdown_since.take().is_some() {
                    let d = desc(all, &st, i);
                    ev.push(To::All, "-sdown", d);
                }
            } else if st.nodes[i].sdown_since.is_none()
                && now - st.nodes[i].last_ok >= st.down_after
                && (i == st.master || st.replicas.contains(&i))
            {
                st.nodes[i].sdown_since = Some(now);
                let d = desc(all, &st, i);
                ev.push(To::All, "+sdown", d);
            }
        }
        discover(all, &mut st, &mut ev);
        // Objective down: every sentinel sees what the others see.
        let m = st.master;
        let s = all.list.len() as i64;
        if st.sdown(m) && st.odown_since.is_none() && s >= st.quorum {
            st.odown_since = Some(now);
            let d = format!("{} #quorum {}/{}", master_desc(all, &st), s, st.quorum);
            ev.push(To::All, "+odown", d);
        } else if !st.sdown(m) && st.odown_since.is_some() {
            st.odown_since = None;
            let d = master_desc(all, &st);
            ev.push(To::All, "-odown", d);
        }
        // A failover: forced, or for an objectively down primary (retried after twice
        // the failover timeout, as Redis does).
        let retry_ok = st
            .failover_start
            .is_none_or(|t| now - t >= 2 * st.failover_timeout);
        if st.promoting.is_some() {
            if st.promoting_since.is_none_or(|t| t.elapsed() >= PROMOTION) {
                finish_failover(all, &mut st, &mut ev, now);
            }
        } else if let Some(j) = forced {
            failover(all, &mut st, &mut ev, j, true, now);
        } else if st.odown_since.is_some() && retry_ok {
            failover(all, &mut st, &mut ev, 0, false, now);
        }
        // Replicas that came back, or never followed: make them follow the primary.
        if st.promoting.is_none() {
            reconfigure(all, &mut st, &mut ev, now);
        }
        pending = (0..n).any(|i| data::is_down(&topo, i))
            || st.odown_since.is_some()
            || st.promoting.is_some();
    }
    if !ev.list.is_empty() {
        publish(all, ev);
    }
    pending
}

/// `master ...` or `slave ...` for a node.
fn desc(all: &Sentinels, st: &State, node: usize) -> String {
    if node == st.master {
        master_desc(all, st)
    } else {
        slave_desc(all, st, node)
    }
}

/// Known replicas that are up and report being a primary, or follow another node than the
/// primary: the old primary back after a failover (`+convert-to-slave`), a replica that
/// was down during the failover or was pointed elsewhere (`+fix-slave-config`).
fn reconfigure(all: &Sentinels, st: &mut State, ev: &mut Events, now: i64) {
    let topo = &all.topo;
    let leader = leader_index(st, all);
    ev.logger = leader;
    for k in 0..st.replicas.len() {
        let r = st.replicas[k];
        if data::is_down(topo, r) {
            continue;
        }
        let role = data::primary_of(topo, r);
        let is_master = role.is_none();
        if is_master != st.nodes[r].reported_master {
            st.nodes[r].reported_master = is_master;
            st.nodes[r].role_time = now;
            let d = format!(
                "{} new reported role is {}",
                slave_desc(all, st, r),
                if is_master { "master" } else { "slave" }
            );
            ev.push(
                To::All,
                if is_master {
                    "-role-change"
                } else {
                    "+role-change"
                },
                d,
            );
        }
        match role {
            None => {
                ev.push(To::One(leader), "+convert-to-slave", slave_desc(all, st, r));
                data::replicate(topo, r, st.master);
                st.nodes[r].reported_master = false;
                st.nodes[r].role_time = now;
                let d = format!("{} new reported role is slave", slave_desc(all, st, r));
                ev.push(To::All, "+role-change", d);
            }
            Some(of) if of != st.master => {
                ev.push(To::One(leader), "+fix-slave-config", slave_desc(all, st, r));
                data::replicate(topo, r, st.master);
            }
            Some(_) => {}
        }
    }
}

/// The sentinel that led the last failover (by the votes), else sentinel 0.
fn leader_index(st: &State, all: &Sentinels) -> usize {
    let (id, epoch) = &st.votes[0];
    if *epoch == st.current_epoch && *epoch > 0 {
        if let Some(s) = all.list.iter().find(|s| &s.id == id) {
            return s.index;
        }
    }
    0
}

/// The replica a failover promotes, as Redis' sentinelSelectSlave: not down, its link up
/// unless the primary is down, a non-zero priority; then the lowest priority, the greatest
/// offset, the smallest run id.
pub fn select_replica(all: &Sentinels, st: &State) -> Option<usize> {
    let topo = &all.topo;
    let master_down = st.sdown(st.master) || data::is_down(topo, st.master);
    let mut cands: Vec<(i64, std::cmp::Reverse<u64>, String, usize)> = st
        .replicas
        .iter()
        .copied()
        .filter(|&r| {
            !st.sdown(r)
                && !data::is_down(topo, r)
                && data::primary_of(topo, r).is_some()
                && (master_down || data::link_up(topo, r))
                && data::priority(topo, r) != 0
        })
        .map(|r| {
            (
                data::priority(topo, r),
                std::cmp::Reverse(data::offset(topo, r)),
                data::run_id(topo, r),
                r,
            )
        })
        .collect();
    cands.sort();
    cands.first().map(|c| c.3)
}

/// Runs a failover to the end, led by sentinel `leader`.
fn failover(
    all: &Sentinels,
    st: &mut State,
    ev: &mut Events,
    leader: usize,
    forced: bool,
    now: i64,
) {
    let topo = all.topo.clone();
    st.failover_start = Some(now);
    st.current_epoch += 1;
    let epoch = st.current_epoch;
    ev.logger = leader;
    let old = st.master;
    let lid = all.list[leader].id.clone();
    ev.push(To::All, "+new-epoch", epoch.to_string());
    ev.push(To::One(leader), "+try-failover", master_desc(all, st));
    if forced {
        st.votes[leader] = (lid.clone(), epoch);
        ev.push(
            To::One(leader),
            "+vote-for-leader",
            format!("{lid} {epoch}"),
        );
    } else {
        for v in st.votes.iter_mut() {
            *v = (lid.clone(), epoch);
        }
        ev.push(To::All, "+vote-for-leader", format!("{lid} {epoch}"));
    }
    ev.push(To::One(leader), "+elected-leader", master_desc(all, st));
    ev.push(
        To::One(leader),
        "+failover-state-select-slave",
        master_desc(all, st),
    );
    let Some(r) = select_replica(all, st) else {
        ev.push(
            To::One(leader),
            "-failover-abort-no-good-slave",
            master_desc(all, st),
        );
        return;
    };
    st.failover_running = true;
    let rd = slave_desc(all, st, r);
    ev.push(To::One(leader), "+selected-slave", rd.clone());
    ev.push(
        To::One(leader),
        "+failover-state-send-slaveof-noone",
        rd.clone(),
    );
    ev.push(
        To::One(leader),
        "+failover-state-wait-promotion",
        rd.clone(),
    );
    data::promote(&topo, r);
    // The rest on the next pass (10 ms later), once the promoted replica "reports" its new
    // role: meanwhile the failover is in progress (-INPROG), as Redis' is for a while.
    st.promoting = Some((r, old, leader));
    st.promoting_since = Some(std::time::Instant::now());
}

/// How long (real time) a failover stays between its promotion and its end, during which
/// SENTINEL FAILOVER answers -INPROG and the old primary is still the one named.
pub const PROMOTION: Duration = Duration::from_millis(20);

/// The second half of a failover: the promoted replica is a primary, the others follow it.
fn finish_failover(all: &Sentinels, st: &mut State, ev: &mut Events, now: i64) {
    let Some((r, old, leader)) = st.promoting.take() else {
        return;
    };
    let topo = all.topo.clone();
    ev.logger = leader;
    let epoch = st.current_epoch;
    let lid = all.list[leader].id.clone();
    let rd = slave_desc(all, st, r);
    st.nodes[r].reported_master = true;
    st.nodes[r].role_time = now;
    ev.push(
        To::All,
        "-role-change",
        format!("{rd} new reported role is master"),
    );
    ev.push(To::One(leader), "+promoted-slave", rd);
    ev.push(
        To::One(leader),
        "+failover-state-reconf-slaves",
        master_desc(all, st),
    );
    let others: Vec<usize> = st
        .replicas
        .iter()
        .copied()
        .filter(|&o| o != r && o != old)
        .collect();
    for &o in &others {
        if data::is_down(&topo, o) {
            continue;
        }
        let od = slave_desc(all, st, o);
        ev.push(To::One(leader), "+slave-reconf-sent", od.clone());
        data::replicate(&topo, o, r);
        ev.push(To::One(leader), "+slave-reconf-inprog", od.clone());
        ev.push(To::One(leader), "+slave-reconf-done", od);
    }
    if st.odown_since.take().is_some() {
        ev.push(To::All, "-odown", master_desc(all, st));
    }
    ev.push(To::One(leader), "+failover-end", master_desc(all, st));
    let ip = ip(&topo).to_string();
    let (op, np) = (data::port(&topo, old), data::port(&topo, r));
    ev.push(
        To::Others(leader),
        "+config-update-from",
        format!(
            "sentinel {lid} {} {} @ {} {ip} {op}",
            all.list[leader].addr.ip(),
            all.list[leader].addr.port(),
            st.name
        ),
    );
    ev.push(
        To::All,
        "+switch-master",
        format!("{} {ip} {op} {ip} {np}", st.name),
    );
    // The new configuration: the promoted replica is the primary, the others and the old
    // primary its replicas (the old primary is converted when it is up: `reconfigure`).
    st.master = r;
    st.config_epoch = epoch;
    st.failover_running = false;
    // A later failure of the new primary fails over at once (Redis resets the master's
    // state when it switches).
    st.failover_start = None;
    let old_sdown = st.nodes[old].sdown_since.take().is_some() || data::is_down(&topo, old);
    st.nodes[r].sdown_since = None;
    st.replicas = others;
    st.replicas.push(old);
    for k in 0..st.replicas.len() {
        let o = st.replicas[k];
        ev.push(To::All, "+slave", slave_desc(all, st, o));
    }
    for k in 0..st.replicas.len() {
        let o = st.replicas[k];
        if data::is_down(&topo, o) {
            st.nodes[o].sdown_since = Some(now);
            if o == old && !old_sdown {
                continue;
            }
            ev.push(To::All, "+sdown", slave_desc(all, st, o));
        }
    }
}

/// SENTINEL FAILOVER from sentinel `j`: `Err` with Redis' error when it cannot start.
pub fn force_failover(all: &Arc<Sentinels>, j: usize) -> Result<(), &'static str> {
    {
        let st = all.state.lock();
        if st.failover_running {
            return Err("INPROG Failover already in progress");
        }
        if select_replica(all, &st).is_none() {
            return Err("NOGOODSLAVE No suitable replica to promote");
        }
    }
    tick(all, Some(j));
    Ok(())
}
