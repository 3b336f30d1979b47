//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, with Redis 7's semantics.
//!
//! # Design
//!
//! One long-lived Lua 5.1 state lives in [`Scripts`], inside `Core`, next to the engine, so
//! it is only ever touched while the keyspace lock is held: a script is atomic because the
//! whole of it runs under that lock, and `redis.call` reaches the engine directly (never
//! re-locking, which would deadlock). Each script body is compiled once and cached by its
//! SHA1; EVAL-only scripts are bounded ([`MAX_EVAL_SCRIPTS`], oldest evicted first, as Redis
//! 8 does) while SCRIPT LOAD-ed ones stay until SCRIPT FLUSH.
//!
//! While a script runs, the bridge (`bridge.rs`) finds the engine and the calling client
//! through a thread-local pointer to the current [`bridge::RunCtx`]: the Lua functions are
//! created once at start-up, so a call allocates no closures.
//!
//! A long script keeps its tokio worker thread; past [`DETACH_AFTER`] the instruction hook
//! moves the rest of the script off the worker with `block_in_place`, so the runtime keeps
//! serving other connections (they get `-BUSY` past busy-reply-threshold, and SCRIPT KILL
//! runs without the keyspace lock).

mod bridge;
mod cmsgpack;
mod functions;
mod libs;
mod lua_struct;
pub(crate) use functions::command as function_command;
pub use functions::{check_libraries, library_codes, replace_libraries};
pub use functions::{help as function_help, kill as function_kill, stats as function_stats};
mod patterns;
mod plan;
pub mod profile;
mod sandbox;
pub mod stats;

use bytes::Bytes;
use mlua::{Function, Lua};
use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use lockcore::num::parse_i64;
use lockcore::CommandSpec;
use lockcore::{error, Reply};

use crate::conn::Conn;
use crate::state::{Core, CoreGuard, Shared};

/// At most this many scripts seen only through EVAL are kept compiled.
pub const MAX_EVAL_SCRIPTS: usize = 500;

/// A script running longer than this moves off its tokio worker thread.
pub const DETACH_AFTER: Duration = Duration::from_millis(20);

/// Lua heap limit: memory bombs fail with an error instead of taking the server down.
pub const LUA_MEMORY_LIMIT: usize = 512 << 20;

/// The Lua VM and script cache, kept under the keyspace lock with the engine.
#[derive(Default)]
pub struct Scripts {
    vm: Option<Vm>,
    /// `lua-native-plans no` (or SCRIPT PLANS NO): every script runs on Lua.
    pub plans_off: bool,
    /// Script runs that took their native plan (INFO `native_plan_runs`).
    pub plan_runs: u64,
    /// `lua-profiler yes`: runs add to their script's profile (profile.rs).
    profiling: bool,
    /// The personality the Lua state made next announces (`redis.REDIS_VERSION`, and for
    /// Valkey the `server` alias with `VALKEY_VERSION`).
    personality: Option<lockcore::personality::Personality>,
}

#[linkme::distributed_slice(crate::state::SCRIPT_STATE)]
static NEW: fn() -> Box<dyn crate::state::ScriptState> = Scripts::boxed;

impl crate::state::ScriptState for Scripts {
    fn configure(&mut self, plans: bool, profiler: bool, p: lockcore::personality::Personality) {
        self.personality = Some(p);
        self.plans_off = !plans;
        self.set_profiler(profiler);
    }
    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
    fn as_any_ref(&self) -> &dyn std::any::Any {
        self
    }
}

/// The cached script whose SHA1 is `sha` (40 hex digits, any case), for SCRIPT SHOW and
/// SCRIPT PLAN.
fn cached_script<'a>(s: &'a Scripts, sha: &[u8]) -> Option<&'a Cached> {
    if sha.len() != 40 {
        return None;
    }
    let mut k = [0u8; 40];
    k.copy_from_slice(sha);
    k.make_ascii_lowercase();
    s.vm.as_ref()?.cache.get(&k)
}

/// A compiled script.
struct Cached {
    func: Function,
    /// Loaded with SCRIPT LOAD: never evicted.
    loaded: bool,
    /// Shebang `flags=no-writes`.
    no_writes: bool,
    /// How maxmemory applies (shebang flags).
    oom: Oom,
    last_used: u64,
    /// The native plan, or why the script runs on Lua (plan/mod.rs).
    plan: Result<std::sync::Arc<plan::Plan>, String>,
    /// INFO scriptstats and the profile (stats.rs). Boxed: runs keep its address.
    stats: Box<stats::ScriptStats>,
    /// The body as sent, for the profiler's source column.
    source: Bytes,
}

pub(crate) struct Vm {
    lua: Lua,
    /// By lowercase hex SHA1. ahash (randomly keyed, as the keyspace's) rather than std's
    /// SipHash: hashing the 40-byte key was ~190 of the ~15,000 instructions of an EVALSHA.
    cache: HashMap<[u8; 40], Cached, lockcore::storage::key::KeyHasher>,
    eval_only: usize,
    tick: u64,
    /// `function(f) return xpcall(f, __redis__err__handler) end`
    runner: Function,
    /// `function(f) return xpcall(function() return f(KEYS, ARGV) end, handler) end`
    fn_runner: Function,
    /// FUNCTION LOAD-ed libraries and their functions.
    funcs: functions::Registry,
    /// Reused argument vector for redis.call.
    scratch: Vec<Bytes>,
}

impl Scripts {
    fn vm(&mut self) -> &mut Vm {
        if self.vm.is_none() {
            let p = self
                .personality
                .unwrap_or(lockcore::personality::Personality::DEFAULT);
            let vm = Vm::new(&p).expect("creating the Lua state");
            if self.profiling {
                profile::install_hook(&vm.lua, true);
            }
            self.vm = Some(vm);
        }
        self.vm.as_mut().unwrap()
    }

    /// `lua-profiler`: while on, the VM also has a line hook (none while off, so the
    /// profiler costs nothing then).
    /// An empty script state, as `state::new_scripts` makes it.
    pub fn boxed() -> Box<dyn crate::state::ScriptState> {
        Box::<Scripts>::default()
    }

    /// A dataset's scripts (`Core::scripts` holds them as a `ScriptState`).
    pub fn of(s: &mut dyn crate::state::ScriptState) -> &mut Scripts {
        s.as_any()
            .downcast_mut()
            .expect("Core::scripts is scripting::Scripts")
    }

    pub fn of_ref(s: &dyn crate::state::ScriptState) -> &Scripts {
        s.as_any_ref()
            .downcast_ref()
            .expect("Core::scripts is scripting::Scripts")
    }

    pub fn set_profiler(&mut self, on: bool) {
        if on != self.profiling {
            self.profiling = on;
            if let Some(vm) = &self.vm {
                profile::install_hook(&vm.lua, on);
            }
        }
    }

    /// CONFIG RESETSTAT: every script's INFO scriptstats counters start again.
    pub fn reset_stats(&mut self) {
        if let Some(vm) = &mut self.vm {
            for c in vm.cache.values_mut() {
                c.stats.reset();
            }
        }
    }

    /// Every cached script's figures, by SHA (INFO scriptstats, `/metrics`).
    pub fn stats_rows(&self) -> Vec<stats::Row> {
        let mut rows: Vec<stats::Row> = self.vm.as_ref().map_or_else(Vec::new, |v| {
            v.cache
                .iter()
                .map(|(sha, c)| c.stats.row(std::str::from_utf8(sha).unwrap_or("")))
                .collect()
        });
        rows.sort_by(|a, b| a.sha.cmp(&b.sha));
        rows
    }

    /// The `# Scriptstats` INFO section: one line per cached script.
    pub fn info_section(&self, out: &mut String) {
        out.push_str("# Scriptstats\r\n");
        let Some(vm) = &self.vm else { return };
        let mut shas: Vec<&[u8; 40]> = vm.cache.keys().collect();
        shas.sort();
        for sha in shas {
            vm.cache[sha]
                .stats
                .info_line(std::str::from_utf8(sha).unwrap_or(""), out);
            out.push_str("\r\n");
        }
    }

    /// Number of cached scripts (INFO `number_of_cached_scripts`).
    pub fn len(&self) -> usize {
        self.vm.as_ref().map_or(0, |v| v.cache.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cached scripts that have a native plan (INFO `number_of_native_plans`).
    pub fn plans(&self) -> usize {
        self.vm
            .as_ref()
            .map_or(0, |v| v.cache.values().filter(|c| c.plan.is_ok()).count())
    }

    /// Bytes used by the Lua heap (INFO `used_memory_lua`).
    pub fn memory(&self) -> usize {
        self.vm.as_ref().map_or(32 * 1024, |v| v.lua.used_memory())
    }
}

impl Vm {
    fn new(p: &lockcore::personality::Personality) -> mlua::Result<Vm> {
        let lua = sandbox::new_state(p)?;
        let runner: Function = lua.named_registry_value("tumbler.runner")?;
        let fn_runner: Function = lua.named_registry_value("tumbler.fn_runner")?;
        Ok(Vm {
            lua,
            cache: HashMap::default(),
            eval_only: 0,
            tick: 0,
            runner,
            fn_runner,
            funcs: functions::Registry::default(),
            scratch: Vec::with_capacity(16),
        })
    }

    /// Compiles `body` and caches it under `sha`, or returns Redis' compile error.
    fn compile(&mut self, sha: [u8; 40], body: &[u8], loaded: bool) -> Result<(), Reply> {
        let (no_writes, oom, code): (bool, Oom, std::borrow::Cow<[u8]>) = parse_shebang(body)?;
        let f = self
            .lua
            .load(&*code)
            .set_name("@user_script")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .into_function()
            .map_err(|e| {
                let msg = match &e {
                    mlua::Error::SyntaxError { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                Reply::err(format!("ERR Error compiling script (new function): {msg}"))
            })?;
        let plan = plan::compile(&code).map(std::sync::Arc::new);
        self.tick += 1;
        if !loaded {
            self.eval_only += 1;
        }
        self.cache.insert(
            sha,
            Cached {
                func: f,
                loaded,
                no_writes,
                oom,
                last_used: self.tick,
                plan,
                stats: Box::default(),
                source: Bytes::copy_from_slice(body),
            },
        );
        if self.eval_only > MAX_EVAL_SCRIPTS {
            self.evict_one(sha);
        }
        Ok(())
    }

    /// Drops the least recently used EVAL-only script other than `keep`.
    fn evict_one(&mut self, keep: [u8; 40]) {
        let victim = self
            .cache
            .iter()
            .filter(|(k, c)| !c.loaded && **k != keep)
            .min_by_key(|(_, c)| c.last_used)
            .map(|(k, _)| *k);
        if let Some(v) = victim {
            self.cache.remove(&v);
            self.eval_only -= 1;
        }
    }
}

/// Parses a `#!lua [flags=...]` first line. Returns (no-writes, the body to compile).
/// How a script meets maxmemory, from its shebang (Redis' scriptFlagsToCmdFlags and
/// scriptVerifyOOM).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Oom {
    /// No shebang: a deny-oom command is refused while the script has not written yet, if
    /// the server was over maxmemory when the script started.
    Legacy,
    /// Flags without allow-oom/no-writes: the whole script is refused when over maxmemory.
    Deny,
    /// allow-oom or no-writes.
    Allow,
}

#[allow(clippy::type_complexity)]
fn parse_shebang(body: &[u8]) -> Result<(bool, Oom, std::borrow::Cow<'_, [u8]>), Reply> {
    if !body.starts_with(b"#!") {
        return Ok((false, Oom::Legacy, body.into()));
    }
    let mut allow_oom = false;
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[2..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if engine != "lua" {
        return Err(Reply::err(format!(
            "ERR Unexpected engine in script shebang: #!{engine}"
        )));
    }
    let mut no_writes = false;
    for p in parts {
        let Some(flags) = p.strip_prefix("flags=") else {
            return Err(Reply::err(format!("ERR Unknown lua shebang option: {p}")));
        };
        for f in flags.split(',').filter(|f| !f.is_empty()) {
            match f {
                "no-writes" => no_writes = true,
                "allow-oom" => allow_oom = true,
                "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                other => {
                    return Err(Reply::err(format!(
                        "ERR Unexpected flag in script shebang: {other}"
                    )))
                }
            }
        }
    }
    // Keep the line count so error line numbers match the body the user sent.
    let mut code = Vec::with_capacity(body.len());
    code.extend_from_slice(b"--");
    code.extend_from_slice(&body[2..]);
    let oom = if allow_oom || no_writes {
        Oom::Allow
    } else {
        Oom::Deny
    };
    Ok((no_writes, oom, code.into()))
}

/// Hex SHA1 of `body`, lowercase, as Redis names scripts.
pub fn sha1_hex(body: &[u8]) -> [u8; 40] {
    let d = Sha1::digest(body);
    let mut out = [0u8; 40];
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in d.iter().enumerate() {
        out[2 * i] = HEX[(b >> 4) as usize];
        out[2 * i + 1] = HEX[(b & 15) as usize];
    }
    out
}

fn top_name(spec: &CommandSpec) -> &'static str {
    if spec.parent.is_empty() {
        spec.name
    } else {
        spec.parent
    }
}

pub fn command(
    c: &mut Conn,
    guard: &mut Option<CoreGuard<'_>>,
    spec: &CommandSpec,
    a: &[Bytes],
) -> Reply {
    match (top_name(spec), spec.name) {
        ("script", "kill") => script_kill(&c.shared, true),
        ("script", "help") => script_help(&c.shared.personality),
        ("script", "plans") => {
            let core = crate::state::core(guard);
            plans_switch(&c.shared, core, a)
        }
        ("script", sub) => {
            let core = crate::state::core(guard);
            script_sub(core, sub, a)
        }
        ("fcall" | "fcall_ro", name) => {
            if !c.shared.monitors.is_empty() {
                c.shared
                    .feed_monitors(c.cl.db, &c.handle.addr.to_string(), a);
            }
            let shared = c.shared.clone();
            let core = crate::state::core(guard);
            let r = functions::fcall(core, &shared, &c.cl, a, name == "fcall_ro");
            core.engine.after_command();
            r
        }
        ("eval" | "evalsha" | "eval_ro" | "evalsha_ro", name) => {
            let by_sha = name.starts_with("evalsha");
            let ro = name.ends_with("_ro");
            // EVAL is flagged skip_monitor: Redis shows it before the lines of its calls.
            if !c.shared.monitors.is_empty() {
                c.shared
                    .feed_monitors(c.cl.db, &c.handle.addr.to_string(), a);
            }
            let core = crate::state::core(guard);
            let r = eval(core, &c.shared, &c.cl, a, by_sha, ro, c.cmd_started);
            core.engine.after_command();
            r
        }
        _ => Reply::err(format!(
            "ERR '{}' is not supported by tumbler",
            spec.full_name()
        )),
    }
}

fn eval(
    core: &mut Core,
    shared: &Shared,
    caller: &lockcore::ClientCtx,
    a: &[Bytes],
    by_sha: bool,
    ro: bool,
    started: crate::base::mono::Mono,
) -> Reply {
    let Some(numkeys) = parse_i64(&a[2]) else {
        return error::not_integer();
    };
    if numkeys < 0 {
        return Reply::err("ERR Number of keys can't be negative");
    }
    if numkeys as usize > a.len() - 3 {
        return Reply::err("ERR Number of keys can't be greater than number of args");
    }
    let nk = numkeys as usize;
    let Core { engine, scripts } = core;
    let scripts = Scripts::of(&mut **scripts);
    let plans = !scripts.plans_off;
    let profiling = scripts.profiling;
    let vm = scripts.vm();
    let sha = if by_sha {
        let s = &a[1];
        if s.len() != 40 {
            return Reply::err(error_noscript());
        }
        let mut k = [0u8; 40];
        k.copy_from_slice(s);
        k.make_ascii_lowercase();
        k
    } else {
        sha1_hex(&a[1])
    };
    vm.tick += 1;
    let tick = vm.tick;
    let (path, no_writes, oom, obs) = match vm.cache.get_mut(&sha) {
        Some(c) => {
            c.last_used = tick;
            let path = c.path(plans);
            let obs = c.observe(&path, profiling);
            (path, c.no_writes, c.oom, obs)
        }
        None if by_sha => return Reply::err(error_noscript()),
        None => {
            if let Err(e) = vm.compile(sha, &a[1], false) {
                return e;
            }
            let Some(c) = vm.cache.get_mut(&sha) else {
                return Reply::err("ERR script cache");
            };
            let path = c.path(plans);
            let obs = c.observe(&path, profiling);
            (path, c.no_writes, c.oom, obs)
        }
    };
    let over = shared.over_maxmemory();
    if over && oom == Oom::Deny {
        return Reply::err(crate::base::consts::OOM_ERR);
    }
    // The key matched a cached script's SHA1, hex digits only: ASCII.
    let sha = std::str::from_utf8(&sha).unwrap_or("");
    let (keys, args) = (&a[3..3 + nk], &a[3 + nk..]);
    let read_only = ro || no_writes;
    let oom_at_start = over && oom == Oom::Legacy;
    match path {
        Path::Plan(plan) => {
            scripts.plan_runs += 1;
            let vm = scripts.vm();
            bridge::run_plan(
                vm,
                &plan,
                engine,
                shared,
                caller,
                sha,
                keys,
                args,
                read_only,
                oom_at_start,
                obs,
                started,
            )
        }
        Path::Lua(func) => bridge::run(
            scripts.vm(),
            func,
            engine,
            shared,
            caller,
            sha,
            false,
            keys,
            args,
            read_only,
            oom_at_start,
            obs,
            started,
        ),
    }
}

/// How a cached script runs this time.
enum Path {
    Plan(std::sync::Arc<plan::Plan>),
    Lua(Function),
}

impl Cached {
    /// The native plan when there is one and plans are on, else the Lua function.
    fn path(&self, plans: bool) -> Path {
        match &self.plan {
            Ok(p) if plans => Path::Plan(p.clone()),
            _ => Path::Lua(self.func.clone()),
        }
    }

    /// Where this run's figures go: the script's stats, and its profile for `path` while
    /// the profiler is on.
    fn observe(&mut self, path: &Path, profiling: bool) -> bridge::Observe {
        let st: &mut stats::ScriptStats = &mut self.stats;
        let prof = if profiling {
            let i = matches!(path, Path::Plan(_)) as usize;
            let p: &mut stats::Profile = st.profile[i].get_or_insert_with(Box::default);
            p as *mut stats::Profile
        } else {
            std::ptr::null_mut()
        };
        bridge::Observe {
            stats: st as *mut stats::ScriptStats,
            prof,
        }
    }
}

fn error_noscript() -> &'static str {
    "NOSCRIPT No matching script. Please use EVAL."
}

fn script_sub(core: &mut Core, sub: &str, a: &[Bytes]) -> Reply {
    match sub {
        "load" => {
            let vm = Scripts::of(&mut *core.scripts).vm();
            let sha = sha1_hex(&a[2]);
            match vm.cache.get_mut(&sha) {
                Some(c) => {
                    if !c.loaded {
                        c.loaded = true;
                        vm.eval_only -= 1;
                    }
                }
                None => {
                    if let Err(e) = vm.compile(sha, &a[2], true) {
                        return e;
                    }
                }
            }
            Reply::Bulk(Bytes::copy_from_slice(&sha))
        }
        "exists" => {
            let vm = Scripts::of(&mut *core.scripts).vm.as_ref();
            Reply::Array(
                a[2..]
                    .iter()
                    .map(|s| {
                        let found = s.len() == 40 && {
                            let mut k = [0u8; 40];
                            k.copy_from_slice(s);
                            k.make_ascii_lowercase();
                            vm.is_some_and(|v| v.cache.contains_key(&k))
                        };
                        Reply::Int(found as i64)
                    })
                    .collect(),
            )
        }
        "show" => match cached_script(Scripts::of(&mut *core.scripts), &a[2]) {
            Some(c) => Reply::Bulk(c.source.clone()),
            None => Reply::err("NOSCRIPT No matching script."),
        },
        "flush" => {
            let functions = Scripts::of(&mut *core.scripts)
                .vm
                .as_mut()
                .map(|v| std::mem::take(&mut v.funcs.libraries));
            let ok = match a.len() {
                2 => true,
                3 => a[2].eq_ignore_ascii_case(b"sync") || a[2].eq_ignore_ascii_case(b"async"),
                _ => false,
            };
            if !ok {
                return Reply::err("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            }
            // Redis recreates the Lua state: scripts can leave nothing behind. Functions
            // survive SCRIPT FLUSH in Redis, so their libraries are loaded again.
            Scripts::of(&mut *core.scripts).vm = None;
            if let Some(libs) = functions {
                functions::reload_all(Scripts::of(&mut *core.scripts).vm(), libs);
            }
            Reply::ok()
        }
        "plan" => match cached_script(Scripts::of(&mut *core.scripts), &a[2]) {
            None => Reply::err(error_noscript()),
            Some(c) => match &c.plan {
                Ok(_) => Reply::Bulk(Bytes::from_static(b"native")),
                Err(why) => Reply::Bulk(Bytes::from(format!("lua: {why}"))),
            },
        },
        "debug" => Reply::err("ERR SCRIPT DEBUG is not supported by tumbler"),
        _ => Reply::err(format!("ERR unknown subcommand '{sub}'. Try SCRIPT HELP.")),
    }
}

/// `SCRIPT PLANS [YES|NO]`: reads or sets `lua-native-plans` (the same switch as CONFIG).
fn plans_switch(shared: &Shared, core: &mut Core, a: &[Bytes]) -> Reply {
    let on = match a.get(2).map(|v| v.to_ascii_lowercase()) {
        None if a.len() == 2 => {
            let on = !Scripts::of(&mut *core.scripts).plans_off;
            return Reply::Bulk(Bytes::from_static(if on { b"yes" } else { b"no" }));
        }
        Some(v) if a.len() == 3 && v == b"yes" => "yes",
        Some(v) if a.len() == 3 && v == b"no" => "no",
        _ => return Reply::err("ERR SCRIPT PLANS takes YES or NO"),
    };
    if let Err(e) = shared.config.write().set("lua-native-plans", on) {
        return Reply::err(format!("ERR {e}"));
    }
    shared.apply_config_to(core);
    Reply::ok()
}

/// SCRIPT KILL (and FUNCTION KILL), run without the keyspace lock.
pub fn script_kill(shared: &Shared, caller_is_eval: bool) -> Reply {
    if shared.script.started_ms.load(Ordering::Acquire) == 0 {
        return Reply::err("NOTBUSY No scripts in execution right now.");
    }
    if caller_is_eval && shared.script.running_fn.lock().unwrap().is_some() {
        return Reply::err(crate::base::consts::busy_err(&shared.personality, true));
    }
    if shared.script.wrote.load(Ordering::Acquire) {
        return Reply::err(
            "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
        );
    }
    shared.script.kill.store(true, Ordering::Release);
    Reply::ok()
}

fn script_help(p: &lockcore::personality::Personality) -> Reply {
    const LINES: &[&str] = &[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ];
    // Valkey 9's text: scripting engines, and SHOW.
    const VALKEY: &[&str] = &[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO) [<engine_name>]",
        "    Set the debug mode for subsequent scripts executed of the specified engine.",
        "    Default engine name: 'lua'",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined",
        "     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "SHOW <sha1>",
        "    Show a script from the scripts cache.",
        "HELP",
        "    Print this help.",
    ];
    let lines = if p.is_valkey() { VALKEY } else { LINES };
    Reply::Array(lines.iter().map(|l| Reply::simple(l)).collect())
}

crate::server_command!(
    [
        "eval",
        "evalsha",
        "eval_ro",
        "evalsha_ro",
        "script",
        "fcall",
        "fcall_ro"
    ],
    |c, g, spec, a| command(c, g, spec, a)
);
