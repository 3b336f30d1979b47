//! Per-command call counts and time: the one place that keeps them, for `/metrics` now and
//! for INFO commandstats later.
//!
//! One slot of relaxed atomics per command or subcommand, found by the spec's address in a
//! sorted table built once: a binary search over ~250 pointers and two uncontended-ish
//! `fetch_add`s per command, no lock, no allocation, no hashing of the name.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockcore::commands::{self, CommandSpec, Exec};

/// Counters of one command, as INFO commandstats reports them.
#[derive(Debug, Default)]
pub struct Slot {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    /// Calls that replied with an error (Redis' `failed_calls`).
    pub failed: AtomicU64,
}

pub struct CommandStats {
    /// Spec addresses, sorted; `slots[i]` belongs to `addrs[i]`.
    addrs: Vec<usize>,
    specs: Vec<&'static CommandSpec>,
    slots: Vec<Slot>,
}

impl Default for CommandStats {
    fn default() -> Self {
        Self::new()
    }
}

fn addr(spec: &'static CommandSpec) -> usize {
    spec as *const CommandSpec as usize
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
        CommandStats {
            addrs: specs.iter().map(|s| addr(s)).collect(),
            slots: specs.iter().map(|_| Slot::default()).collect(),
            specs,
        }
    }

    fn slot(&self, spec: &'static CommandSpec) -> Option<&Slot> {
        self.addrs
            .binary_search(&addr(spec))
            .ok()
            .map(|i| &self.slots[i])
    }

    /// Counts one execution of `spec` that took `took`.
    pub fn record(&self, spec: &'static CommandSpec, took: Duration, failed: bool) {
        if let Some(s) = self.slot(spec) {
            s.calls.fetch_add(1, Ordering::Relaxed);
            s.usec.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
            if failed {
                s.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
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

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for s in &self.slots {
            s.calls.store(0, Ordering::Relaxed);
            s.usec.store(0, Ordering::Relaxed);
            s.failed.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_commands_and_subcommands_by_spec() {
        let st = CommandStats::new();
        let get = commands::lookup(b"get").unwrap();
        let setname = commands::lookup_checked(&[
            bytes::Bytes::from_static(b"client"),
            bytes::Bytes::from_static(b"setname"),
            bytes::Bytes::from_static(b"x"),
        ])
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
