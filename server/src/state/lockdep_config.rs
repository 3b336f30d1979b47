//! The server's side of the lock-order checker (lockcore/src/locks/lockdep.rs): the `lockdep`
//! and `lockdep-classes` configs turn it on, off or strict, and INFO shows its counters.

use lockcore::engine::locks::lockdep::{ClassRules, Lockdep};
use lockcore::Engine;

use crate::config::Config;

/// Pushes `lockdep` / `lockdep-classes` into the engine. Turning it off drops its state;
/// switching between `yes` and `strict` keeps what it has learnt.
pub fn apply(cfg: &Config, eng: &mut Engine) {
    let rules = ClassRules::parse(cfg.get(crate::config::key::LOCKDEP_CLASSES)).unwrap_or_default();
    let strict = match cfg.get(crate::config::key::LOCKDEP) {
        "yes" => false,
        "strict" => true,
        _ => {
            eng.lockdep = None;
            return;
        }
    };
    match eng.lockdep.as_deref_mut() {
        Some(ld) => {
            ld.strict = strict;
            ld.set_rules(rules);
        }
        None => eng.lockdep = Some(Box::new(Lockdep::new(strict, rules))),
    }
}

/// INFO's `# Lockdep` section.
pub fn info(eng: &Engine, out: &mut String) {
    out.push_str("# Lockdep\r\n");
    match eng.lockdep.as_deref() {
        Some(ld) => out.push_str(&ld.info()),
        None => out.push_str("lockdep_mode:no\r\n"),
    }
}
