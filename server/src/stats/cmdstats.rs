//! Per-command call counts and time, and the error counters: the one place that keeps
//! INFO commandstats, errorstats and latencystats (with `latency.rs`), `total_error_replies`
//! and the `/metrics` command counters.
//!
//! One slot of relaxed atomics per command or subcommand, found by the spec's address in a
//! sorted table built once: a binary search over ~400 pointers and a few uncontended-ish
//! `fetch_add`s per command, no lock, no allocation, no hashing of the name. Errors (rare
//! on the hot path) are counted by their first word under a mutex.
//!
//! What counts, as Redis 7.0 counts it (`call()`, `rejectCommand`, `afterErrorReply`):
//! * `calls`/`usec`: every execution, including the commands inside EXEC and the
//!   `redis.call`s of a script; a blocked command counts when it is answered, with the time
//!   it waited.
//! * `rejected_calls`: refused before running (arity, NOAUTH, ACL, OOM, -BUSY, MULTI
//!   queueing errors, and a script's refused `redis.call`); `calls` does not move.
//! * `failed_calls`: ran and answered an error. EXEC and EVAL fail only by their own reply:
//!   an error inside the transaction, or one a script caught with `redis.pcall`, is the
//!   inner command's.
//! * errorstats / `total_error_replies`: every error reply, once. An error a script got from
//!   `redis.call` and raised (or returned) is already counted when the command failed, so the
//!   script's reply does not count it again (Redis' `ignore_error_stats_update`).

use lockcore::personality::Personality;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

use lockcore::commands;
use lockcore::engine::spec::{flag, CommandSpec, Exec};
use lockcore::Reply;

use crate::stats::latency::{safe_info_name, HistSlot, Monitor};

/// Counters of one command, as INFO commandstats reports them.
#[derive(Default)]
pub struct Slot {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    /// Calls that replied with an error (Redis' `failed_calls`).
    pub failed: AtomicU64,
    /// Calls refused before they ran (Redis' `rejected_calls`).
    pub rejected: AtomicU64,
    pub(crate) hist: HistSlot,
}

/// Error replies by their first word (Redis' `server.errors`).
#[derive(Default)]
struct ErrorTable {
    counts: BTreeMap<String, u64>,
    /// Past [`MAX_ERROR_TYPES`] prefixes: only `ERRORSTATS_DISABLED` until RESETSTAT.
    disabled: bool,
}

/// How many error prefixes are kept. Redis 7.0.15 keeps any number; from 7.4 it keeps 128
/// and then shows only `ERRORSTATS_DISABLED` (a script's `redis.error_reply` with a
/// varying first word would otherwise grow the table, and INFO, without bound). Tumbler
/// takes the later rule: the output is 7.0's until the 129th distinct prefix.
pub const MAX_ERROR_TYPES: usize = 128;

pub struct CommandStats {
    /// Spec addresses, sorted; `slots[i]` belongs to `addrs[i]`.
    addrs: Vec<usize>,
    /// A direct-mapped index over the addresses (`hash(addr)` -> slot + 1, 0: none or a
    /// collision), so that the lookup on every command is a shift, a load and a compare;
    /// the binary search over `addrs` is the fallback.
    index: Box<[u16; INDEX_LEN]>,
    specs: Vec<&'static CommandSpec>,
    slots: Vec<Slot>,
    errors: Mutex<ErrorTable>,
    /// INFO stats `total_error_replies`.
    pub total_error_replies: AtomicU64,
    /// `latency-tracking`.
    pub tracking: AtomicBool,
    /// `latency-tracking-info-percentiles`.
    pub percentiles: Mutex<Vec<f64>>,
    /// The latency monitor (`latency-monitor-threshold`, LATENCY LATEST/HISTORY).
    pub monitor: Monitor,
}

impl Default for CommandStats {
    fn default() -> Self {
        Self::new()
    }
}

fn addr(spec: &'static CommandSpec) -> usize {
    spec as *const CommandSpec as usize
}

const INDEX_LEN: usize = 4096;

/// Specs lie in static arrays, `size_of::<CommandSpec>()` apart: dividing by that size
/// makes neighbours consecutive.
#[inline]
fn index_of(addr: usize) -> usize {
    (addr / std::mem::size_of::<CommandSpec>()) % INDEX_LEN
}

thread_local! {
    /// Set by the script bridge when a script's error reply was already counted (it came
    /// from a failed `redis.call`); read and cleared by the next [`CommandStats::record_reply`]
    /// on this thread, which is the EVAL/FCALL that ran the script.
    static ERROR_COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// The running script's error reply was already counted (see [`ERROR_COUNTED`]).
pub fn mark_error_counted() {
    ERROR_COUNTED.with(|c| c.set(true));
}

/// The errorstats key of an error reply's text (without the leading '-'): its first word
/// if a space ends it within Redis' 32-byte window (which includes the '-'), else `ERR`.
pub fn error_prefix(text: &str) -> &str {
    let b = text.as_bytes();
    match b[..b.len().min(31)].iter().position(|&c| c == b' ') {
        Some(i) => &text[..i],
        None => "ERR",
    }
}

impl CommandStats {
    /// One slot for every command and subcommand of the table.
    pub fn new() -> CommandStats {
        let mut specs: Vec<&'static CommandSpec> = Vec::new();
        for c in commands::all() {
            specs.push(c);
            if let Exec::Container = c.exec {
                specs.extend(c.subcommands.iter());
            }
        }
        specs.sort_by_key(|s| addr(s));
        let mut index = Box::new([0u16; INDEX_LEN]);
        let mut taken = vec![false; INDEX_LEN];
        for (i, s) in specs.iter().enumerate() {
            let h = index_of(addr(s));
            // A second spec on the same entry leaves it to the binary search.
            index[h] = if taken[h] { 0 } else { i as u16 + 1 };
            taken[h] = true;
        }
        CommandStats {
            index,
            addrs: specs.iter().map(|s| addr(s)).collect(),
            slots: specs.iter().map(|_| Slot::default()).collect(),
            specs,
            errors: Mutex::default(),
            total_error_replies: AtomicU64::new(0),
            tracking: AtomicBool::new(true),
            percentiles: Mutex::new(vec![50.0, 99.0, 99.9]),
            monitor: Monitor::default(),
        }
    }

    #[inline]
    pub(crate) fn slot(&self, spec: &'static CommandSpec) -> Option<&Slot> {
        let a = addr(spec);
        let i = self.index[index_of(a)] as usize;
        if i != 0 && self.addrs[i - 1] == a {
            return Some(&self.slots[i - 1]);
        }
        self.addrs
            .binary_search(&addr(spec))
            .ok()
            .map(|i| &self.slots[i])
    }

    /// Every command and subcommand with its slot, by full name (a container before its
    /// subcommands).
    pub(crate) fn in_order(&self) -> Vec<(&'static CommandSpec, &Slot)> {
        let mut v: Vec<_> = self.specs.iter().copied().zip(&self.slots).collect();
        v.sort_by_key(|(s, _)| {
            if s.parent.is_empty() {
                (s.name, "")
            } else {
                (s.parent, s.name)
            }
        });
        v
    }

    /// Counts one execution of `spec` that took `took`: calls, time, the latency
    /// histogram (with `latency-tracking`) and the latency monitor.
    #[inline]
    pub fn record(&self, spec: &'static CommandSpec, took: Duration, failed: bool) {
        let us = took.as_micros() as u64;
        if let Some(s) = self.slot(spec) {
            s.calls.fetch_add(1, Ordering::Relaxed);
            s.usec.fetch_add(us, Ordering::Relaxed);
            if failed {
                s.failed.fetch_add(1, Ordering::Relaxed);
            }
            if self.tracking.load(Ordering::Relaxed) {
                s.hist.record(us);
            }
        }
        let event = if spec.has(flag::FAST) {
            "fast-command"
        } else {
            "command"
        };
        self.monitor.add_if_needed(event, us / 1000);
    }

    /// [`record`](Self::record) for a command that answered `reply`, counting the error
    /// reply unless a script already did.
    #[inline]
    pub fn record_reply(&self, spec: &'static CommandSpec, took: Duration, reply: &Reply) {
        let counted = ERROR_COUNTED.with(|c| c.replace(false));
        if let Reply::Error(e) = reply {
            if !counted {
                self.count_error(e);
            }
        }
        self.record(spec, took, reply.is_error());
    }

    /// A command that blocked: its call and time now, but not its latency histogram (Redis'
    /// `call()` for a client left blocked).
    pub fn record_blocked(&self, spec: &'static CommandSpec, took: Duration) {
        let us = took.as_micros() as u64;
        if let Some(s) = self.slot(spec) {
            s.calls.fetch_add(1, Ordering::Relaxed);
            s.usec.fetch_add(us, Ordering::Relaxed);
        }
        self.monitor.add_if_needed("command", us / 1000);
    }

    /// A blocked command was answered with `reply`: as Redis' updateStatsOnUnblock, its
    /// first run's time counts again (the wait itself does not), with the histogram and
    /// the error, if it is one.
    pub fn record_unblocked(&self, spec: &'static CommandSpec, took: Duration, reply: &Reply) {
        let us = took.as_micros() as u64;
        self.count_error_reply(reply);
        if let Some(s) = self.slot(spec) {
            s.usec.fetch_add(us, Ordering::Relaxed);
            if reply.is_error() {
                s.failed.fetch_add(1, Ordering::Relaxed);
            }
            if self.tracking.load(Ordering::Relaxed) {
                s.hist.record(us);
            }
        }
    }

    /// A command refused before it ran: `rejected_calls` of the command `argv` names (if it
    /// names one) and the error reply.
    pub fn rejected(&self, p: &Personality, argv: &[Bytes], err: &Reply) {
        if let Some(s) = rejected_spec(p, argv).and_then(|s| self.slot(s)) {
            s.rejected.fetch_add(1, Ordering::Relaxed);
        }
        self.count_error_reply(err);
    }

    /// `rejected_calls` of `spec`, without counting an error.
    pub fn rejected_spec(&self, spec: &'static CommandSpec) {
        if let Some(s) = self.slot(spec) {
            s.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts `r` if it is an error reply.
    pub fn count_error_reply(&self, r: &Reply) {
        if let Reply::Error(e) = r {
            self.count_error(e);
        }
    }

    /// Counts one error reply with text `text` (without the '-').
    pub fn count_error(&self, text: &str) {
        self.total_error_replies.fetch_add(1, Ordering::Relaxed);
        let prefix = error_prefix(text);
        let mut t = self.errors.lock();
        if t.disabled {
            return;
        }
        if let Some(n) = t.counts.get_mut(prefix) {
            *n += 1;
            return;
        }
        if t.counts.len() >= MAX_ERROR_TYPES {
            let names: Vec<_> = t.counts.keys().cloned().collect();
            tracing::warn!(
                "Errorstats stopped adding new errors because the number of errors reached the limit, may be misuse of lua error_reply, please check INFO ERRORSTATS, this can be re-enabled via CONFIG RESETSTAT. Current errors code list: {}",
                names.join(", ")
            );
            t.counts.clear();
            t.counts.insert("ERRORSTATS_DISABLED".into(), 1);
            t.disabled = true;
            return;
        }
        t.counts.insert(prefix.to_string(), 1);
    }

    /// Every call counted since the last CONFIG RESETSTAT: INFO stats'
    /// `total_commands_processed`, which Redis counts in the same place (`call()`), so it
    /// includes the commands of transactions and scripts.
    pub fn total_calls(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.calls.load(Ordering::Relaxed))
            .sum()
    }

    /// `(full name, calls, usec, failed)` of every command called at least once.
    pub fn called(&self) -> Vec<(String, u64, u64, u64)> {
        let mut out: Vec<_> = self
            .specs
            .iter()
            .zip(&self.slots)
            .filter_map(|(spec, s)| {
                let calls = s.calls.load(Ordering::Relaxed);
                (calls > 0).then(|| {
                    (
                        spec.full_name(),
                        calls,
                        s.usec.load(Ordering::Relaxed),
                        s.failed.load(Ordering::Relaxed),
                    )
                })
            })
            .collect();
        out.sort();
        out
    }

    /// CONFIG RESETSTAT: commandstats, errorstats, `total_error_replies` and the latency
    /// histograms (the latency monitor's events stay, as in Redis).
    pub fn reset(&self) {
        for s in &self.slots {
            s.calls.store(0, Ordering::Relaxed);
            s.usec.store(0, Ordering::Relaxed);
            s.failed.store(0, Ordering::Relaxed);
            s.rejected.store(0, Ordering::Relaxed);
            s.hist.reset();
        }
        *self.errors.lock() = ErrorTable::default();
        self.total_error_replies.store(0, Ordering::Relaxed);
    }

    /// Takes `latency-tracking`, `latency-tracking-info-percentiles` and
    /// `latency-monitor-threshold` from the configuration.
    pub fn apply_config(&self, cfg: &crate::config::Config) {
        self.tracking.store(
            cfg.get_bool(crate::config::key::LATENCY_TRACKING),
            Ordering::Relaxed,
        );
        if let Ok(p) = crate::config::percentiles::parse_percentiles(
            cfg.get(crate::config::key::LATENCY_TRACKING_INFO_PERCENTILES),
        ) {
            *self.percentiles.lock() = p;
        }
        self.monitor.threshold_ms.store(
            cfg.get_i64(crate::config::key::LATENCY_MONITOR_THRESHOLD)
                .max(0) as u64,
            Ordering::Relaxed,
        );
    }

    /// The `# Commandstats` section.
    pub fn info_commandstats(&self, out: &mut String) {
        out.push_str("# Commandstats\r\n");
        for (spec, s) in self.in_order() {
            let calls = s.calls.load(Ordering::Relaxed);
            let failed = s.failed.load(Ordering::Relaxed);
            let rejected = s.rejected.load(Ordering::Relaxed);
            if calls == 0 && failed == 0 && rejected == 0 {
                continue;
            }
            let usec = s.usec.load(Ordering::Relaxed);
            let per = if calls == 0 {
                0.0
            } else {
                (usec as f32 / calls as f32) as f64
            };
            let _ = write!(
                out,
                "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rejected},failed_calls={failed}\r\n",
                safe_info_name(&spec.full_name())
            );
        }
    }

    /// The `# Errorstats` section, by prefix in byte order.
    pub fn info_errorstats(&self, out: &mut String) {
        out.push_str("# Errorstats\r\n");
        for (name, n) in self.errors.lock().counts.iter() {
            let _ = write!(out, "errorstat_{}:count={n}\r\n", safe_info_name(name));
        }
    }
}

/// The command whose `rejected_calls` a refusal of `argv` counts: the command, or the
/// subcommand it names (a container without one is the container's own arity error); none
/// for an unknown command or subcommand (one personality `p` does not have included).
fn rejected_spec(p: &Personality, argv: &[Bytes]) -> Option<&'static CommandSpec> {
    let spec = commands::lookup_in(p, argv.first()?)?;
    match spec.exec {
        Exec::Container if argv.len() >= 2 => commands::subcommand_in(p, spec, &argv[1]),
        _ => Some(spec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_has_its_own_slot_mostly_through_the_direct_index() {
        let st = CommandStats::new();
        let mut direct = 0;
        for (i, spec) in st.specs.iter().enumerate() {
            let slot = st.slot(spec).unwrap() as *const Slot;
            assert_eq!(slot, &st.slots[i] as *const Slot);
            let j = st.index[index_of(addr(spec))] as usize;
            if j == i + 1 {
                direct += 1;
            }
        }
        assert!(
            direct * 10 >= st.specs.len() * 9,
            "{direct} of {}",
            st.specs.len()
        );
    }

    #[test]
    fn records_commands_and_subcommands_by_spec() {
        let st = CommandStats::new();
        let get = commands::lookup(b"get").unwrap();
        let setname = commands::lookup_checked(
            &Default::default(),
            &[
                bytes::Bytes::from_static(b"client"),
                bytes::Bytes::from_static(b"setname"),
                bytes::Bytes::from_static(b"x"),
            ],
        )
        .unwrap();
        st.record(get, Duration::from_micros(5), false);
        st.record(get, Duration::from_micros(7), true);
        st.record(setname, Duration::from_micros(1), false);
        let c = st.called();
        assert_eq!(
            c,
            vec![
                ("client|setname".to_string(), 1, 1, 0),
                ("get".to_string(), 2, 12, 1)
            ]
        );
        st.reset();
        assert!(st.called().is_empty());
    }
}
