//! `redis.call` and friends: the bridge between Lua and the engine, and the conversions
//! between typed [`Reply`] values and Lua values (RESP2 and RESP3 rules from Redis' docs),
//! without a round trip through RESP.

use crate::base::mono::Mono;
use bytes::Bytes;
use mlua::debug::{Debug, DebugEvent};
use mlua::{Function, Lua, MultiValue, Table, Value, VmState};
use std::cell::Cell;
use std::sync::atomic::Ordering;

use lockcore::commands::lookup_checked;
use lockcore::engine::spec::{flag, CommandSpec, Exec};
use lockcore::{ClientCtx, Engine, Reply};

use super::stats::{Profile, ScriptStats};
use super::Vm;
use crate::state::Shared;

/// The instruction hook runs every this many VM instructions.
pub const HOOK_EVERY: u32 = 100_000;

/// What the bridge needs while a script runs.
pub struct RunCtx<'a> {
    engine: &'a mut Engine,
    shared: &'a Shared,
    /// The script's own client: SELECT inside a script changes only this copy.
    cl: ClientCtx,
    read_only: bool,
    /// redis.setresp(): how replies are converted to Lua.
    resp3: bool,
    killed: bool,
    started: Mono,
    detached: bool,
    /// Reused argument vector for redis.call.
    scratch: Vec<Bytes>,
    /// KEYS and ARGV of this run, copied into the reused Lua tables by `raw_fill`.
    keys: &'a [Bytes],
    args: &'a [Bytes],
    /// Whether MONITOR clients exist (checked once per script, not per call).
    monitors: bool,
    /// Over maxmemory when the script started: its first write is refused, as Redis'
    /// scriptVerifyOOM does (a script that already wrote may go on, to stay atomic).
    oom: bool,
    wrote: bool,
    /// Cluster mode: the caller is connected to a replica, which refuses writes.
    on_replica: bool,
    /// The script's statistics (in its cache entry; null for FCALL) and this run's count
    /// of redis.call/pcall (stats.rs).
    stats: *mut ScriptStats,
    redis_calls: u64,
    /// The profile this run adds to; null while `lua-profiler` is off.
    prof: *mut Profile,
    /// The profiled line running now and when it started (0: none yet).
    prof_line: u32,
    prof_at: Mono,
    /// A native plan's last clock reading (its start, then the end of its last command),
    /// which also starts the timing of its next command: between two commands a plan only
    /// walks a few nodes of its tree (no loops), so that time, a fraction of a microsecond,
    /// goes to the next command's INFO commandstats time rather than costing one more
    /// clock read per `redis.call`. None for Lua, which can run any time between calls.
    chain: Option<Mono>,
}

thread_local! {
    /// The running script's context. Set only for the duration of [`run`], on the thread
    /// that runs it; Lua calls back into Rust on that same thread.
    static CTX: Cell<*mut RunCtx<'static>> = const { Cell::new(std::ptr::null_mut()) };
}

/// Runs `f` with the current script's context, or returns None outside a script.
fn with_ctx<R>(f: impl FnOnce(&mut RunCtx<'static>) -> R) -> Option<R> {
    let p = CTX.with(|c| c.get());
    if p.is_null() {
        return None;
    }
    // SAFETY: `run` sets the pointer to a RunCtx that outlives the Lua call and clears it
    // before returning; callbacks run on this thread, one at a time, and never re-enter.
    Some(f(unsafe { &mut *p }))
}

impl<'a> RunCtx<'a> {
    /// A script's run context, with the time snapshot taken and the script marked as
    /// running (for `busy`, SCRIPT KILL and the UNKILLABLE check).
    #[allow(clippy::too_many_arguments)]
    fn start(
        vm: &mut Vm,
        engine: &'a mut Engine,
        shared: &'a Shared,
        caller: &ClientCtx,
        keys: &'a [Bytes],
        args: &'a [Bytes],
        read_only: bool,
        oom_at_start: bool,
        obs: Observe,
        started: Mono,
    ) -> RunCtx<'a> {
        engine.time_snapshot = Some(engine.clock.now_ms());
        engine.tracking.script_keys = if engine.tracking.is_tracking(caller.id) {
            keys.to_vec()
        } else {
            Vec::new()
        };
        let ctx = RunCtx {
            engine,
            shared,
            cl: ClientCtx {
                id: caller.id,
                db: caller.db,
                resp3: false,
                deny_blocking: true,
                in_script: true,
                no_touch: caller.no_touch,
                blocked: false,
                sort_patterns_denied: None,
                tracking_caching: caller.tracking_caching,
                wrote: caller.wrote,
            },
            read_only,
            resp3: false,
            killed: false,
            started,
            detached: false,
            scratch: std::mem::take(&mut vm.scratch),
            keys,
            args,
            monitors: !shared.monitors.is_empty(),
            // Only flagless scripts: flagged ones were checked before starting (scripting::Oom).
            oom: oom_at_start,
            wrote: false,
            on_replica: shared
                .repl
                .is_replica
                .load(std::sync::atomic::Ordering::Relaxed)
                || (shared.cluster.is_some() && crate::conn::route::on_replica(shared, caller.id)),
            stats: obs.stats,
            redis_calls: 0,
            prof: obs.prof,
            prof_line: 0,
            prof_at: started,
            chain: None,
        };
        shared.script.kill.store(false, Ordering::Relaxed);
        shared.script.wrote.store(false, Ordering::Relaxed);
        shared
            .script
            .started_ms
            .store(started.ms().max(1), Ordering::Release);
        ctx
    }

    /// The end of a run: the script no longer runs, the snapshot is dropped.
    fn finish(&mut self, vm: &mut Vm) {
        self.shared.script.started_ms.store(0, Ordering::Release);
        self.shared.script.kill.store(false, Ordering::Relaxed);
        vm.scratch = std::mem::take(&mut self.scratch);
        self.engine.time_snapshot = None;
        if let Some(ld) = self.engine.lockdep.as_deref_mut() {
            ld.end_script();
        }
    }

    /// Adds this run to the script's statistics and profile; `end` is when the script
    /// returned.
    fn observe(&mut self, end: Mono, reply: &Reply) {
        let took = end.since(self.started);
        if !self.stats.is_null() {
            // SAFETY: `Observe` points into the script's boxed stats in its cache entry;
            // nothing a script can run touches the script cache (SCRIPT, EVAL and FUNCTION
            // are not allowed from scripts), so the box outlives the run, and the keyspace
            // lock held for the whole run makes this the only access.
            let st = unsafe { &mut *self.stats };
            st.record(took, self.redis_calls, matches!(reply, Reply::Error(_)));
        }
        if !self.prof.is_null() {
            // SAFETY: as above; the profile is boxed inside the same stats.
            let p = unsafe { &mut *self.prof };
            if self.prof_line != 0 {
                let since = end.ns_since(self.prof_at);
                p.line(self.prof_line).ns += since;
            }
            p.calls += 1;
            p.ns += took.as_nanos() as u64;
        }
    }
}

/// Where a run's figures go (stats.rs): the script's stats and, while the profiler is on,
/// the profile of the path it takes. Null pointers: not observed (FCALL).
#[derive(Clone, Copy)]
pub struct Observe {
    pub stats: *mut ScriptStats,
    pub prof: *mut Profile,
}

impl Observe {
    pub const NONE: Observe = Observe {
        stats: std::ptr::null_mut(),
        prof: std::ptr::null_mut(),
    };
}

/// The profiler's line event: the time since the previous line event of the script goes
/// to that line, and this line gets a hit. Lines of the prelude's own Lua (the runners,
/// the error handler) are not the user's: their time stays with the user line that called
/// them.
fn line_event(dbg: &Debug) {
    with_ctx(|ctx| {
        if ctx.prof.is_null() {
            return;
        }
        if dbg.source().source.as_deref() != Some("@user_script") {
            return;
        }
        let Some(line) = dbg.current_line() else {
            return;
        };
        let now = Mono::now();
        // SAFETY: see RunCtx::observe.
        let p = unsafe { &mut *ctx.prof };
        if ctx.prof_line != 0 {
            p.line(ctx.prof_line).ns += now.ns_since(ctx.prof_at);
        }
        let line = line.min(u32::MAX as usize) as u32;
        p.line(line).hits += 1;
        ctx.prof_line = line;
        ctx.prof_at = now;
    });
}

/// Runs a script's native plan with the same context, checks and bookkeeping as [`run`];
/// errors get the same `script: <sha>, on @user_script:<line>.` suffix the Lua error
/// handler gives them.
#[allow(clippy::too_many_arguments)]
pub fn run_plan(
    vm: &mut Vm,
    plan: &super::plan::Plan,
    engine: &mut Engine,
    shared: &Shared,
    caller: &ClientCtx,
    sha: &str,
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
    oom_at_start: bool,
    obs: Observe,
    started: Mono,
) -> Reply {
    let mut ctx = RunCtx::start(
        vm,
        engine,
        shared,
        caller,
        keys,
        args,
        read_only,
        oom_at_start,
        obs,
        started,
    );
    ctx.chain = Some(started);
    if let Some(ld) = ctx.engine.lockdep.as_deref_mut() {
        ld.begin_script(sha);
    }
    let mut argv = std::mem::take(&mut ctx.scratch);
    let fmt = ctx.shared.personality.doubles();
    let res = plan.run(
        fmt,
        &mut |spec, argv: &[Bytes], line| {
            let r = if ctx.prof.is_null() {
                call_spec(&mut ctx, spec, argv)?
            } else {
                plan_call_profiled(&mut ctx, spec, argv, line)?
            };
            match r {
                Reply::Error(e) => Err(e.into_owned()),
                r => Ok(r),
            }
        },
        &mut argv,
        keys,
        args,
    );
    let end = Mono::now_ending();
    ctx.scratch = argv;
    ctx.finish(vm);
    use super::plan::Failure;
    let reply = match res {
        Ok(r) => r,
        Err(Failure::Call(msg, line)) => {
            // A failed command counted its error already; redis.call's own argument
            // checks did not.
            if super::plan::counted_error(&msg) {
                crate::stats::cmdstats::mark_error_counted();
            }
            let p = &ctx.shared.personality;
            let at = script_at(p, sha, "@user_script", line);
            Reply::err(format!("{} {at}", script_err(p, &msg)))
        }
        Err(Failure::Runtime(msg, line)) => {
            let p = &ctx.shared.personality;
            let at = script_at(p, sha, "@user_script", line);
            Reply::err(format!(
                "ERR user_script:{line}: {} {at}",
                script_err(p, &msg)
            ))
        }
    };
    ctx.observe(end, &reply);
    reply
}

/// Where a script error happened, as its message ends: `script: SHA, on SRC:LINE.`
/// (Valkey 9.1, whose Lua engine is a module, names no script: `script: on SRC:LINE.`).
fn script_at(
    p: &lockcore::personality::Personality,
    sha: &str,
    src: &str,
    line: impl std::fmt::Display,
) -> String {
    if p.has(lockcore::personality::Since::valkey(901)) {
        format!("script: on {src}:{line}.")
    } else {
        format!("script: {sha}, on {src}:{line}.")
    }
}

/// Redis' script error texts as personality `p` words them: Valkey's drop "Redis" (or say
/// "Valkey") and "redis lib".
fn script_err(p: &lockcore::personality::Personality, redis: &str) -> String {
    if !p.is_valkey() {
        return redis.to_string();
    }
    const VALKEY: &[(&str, &str)] = &[
        (
            "This Redis command is not allowed from script",
            "This Valkey command is not allowed from script",
        ),
        ("Redis command", "command"),
        ("for this redis lib call", "for this call"),
        (
            "Lua redis lib command arguments must be",
            "Command arguments must be",
        ),
    ];
    let mut s = redis.to_string();
    for (from, to) in VALKEY {
        if s.contains(from) {
            s = s.replacen(from, to, 1);
        }
    }
    s
}

/// A plan's redis.call while profiling. A plan has no per-line clock (its walk between
/// calls is a few hundred nanoseconds): the call's line gets a hit and the command's time,
/// and the rest of the run is reported as the script's interpreter time.
fn plan_call_profiled(
    ctx: &mut RunCtx<'_>,
    spec: Option<&'static CommandSpec>,
    argv: &[Bytes],
    line: u32,
) -> Result<Reply, String> {
    ctx.prof_line = line;
    let t0 = Mono::now();
    let r = call_spec(ctx, spec, argv);
    let ns = t0.elapsed().as_nanos() as u64;
    // SAFETY: see RunCtx::observe.
    let l = unsafe { &mut *ctx.prof }.line(line);
    l.hits += 1;
    l.ns += ns;
    // The run's last segment is not a line's: the native path has none.
    ctx.prof_line = 0;
    r
}

/// Runs one script and converts its result to the caller's reply.
#[allow(clippy::too_many_arguments)]
pub fn run(
    vm: &mut Vm,
    func: Function,
    engine: &mut Engine,
    shared: &Shared,
    caller: &ClientCtx,
    sha: &str,
    is_function: bool,
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
    oom_at_start: bool,
    obs: Observe,
    started: Mono,
) -> Reply {
    let mut ctx = RunCtx::start(
        vm,
        engine,
        shared,
        caller,
        keys,
        args,
        read_only,
        oom_at_start,
        obs,
        started,
    );
    if let Some(ld) = ctx.engine.lockdep.as_deref_mut() {
        ld.begin_script(sha);
    }
    // The lifetime is erased: CTX is cleared before `ctx` goes out of scope.
    let p = (&mut ctx as *mut RunCtx<'_>).cast::<RunCtx<'static>>();
    CTX.with(|c| c.set(p));
    let runner = if is_function {
        &vm.fn_runner
    } else {
        &vm.runner
    };
    let res = runner.call::<(bool, Value)>(func);
    CTX.with(|c| c.set(std::ptr::null_mut()));
    let end = Mono::now_ending();
    let killed = ctx.killed;
    ctx.finish(vm);
    let reply = match res {
        Ok((true, v)) => lua_to_reply(&vm.lua, v),
        Ok((false, Value::Table(t))) => {
            let msg = if killed {
                "ERR Script killed by user with SCRIPT KILL...".to_string()
            } else {
                match t.raw_get::<Value>("err") {
                    Ok(Value::String(s)) => s.to_string_lossy(),
                    _ => "ERR unknown error".to_string(),
                }
            };
            if !killed
                && t.raw_get::<bool>("ignore_error_stats_update")
                    .unwrap_or(false)
            {
                crate::stats::cmdstats::mark_error_counted();
            }
            let source: Option<String> = t.raw_get("source").ok().flatten();
            let line: Option<i64> = t.raw_get("line").ok().flatten();
            match (source, line) {
                (Some(src), Some(line)) => {
                    let p = &ctx.shared.personality;
                    let at = script_at(p, sha, &src, line);
                    Reply::err(format!("{} {at}", script_err(p, &msg)))
                }
                _ => Reply::err(msg),
            }
        }
        Ok((false, other)) => {
            // Out of memory and errors in the error handler skip the handler.
            let m = match &other {
                Value::String(s) => s.to_string_lossy(),
                _ => "unknown error".into(),
            };
            Reply::err(format!("ERR Error running script {sha}: {m}"))
        }
        Err(e) => Reply::err(format!("ERR Error running script {sha}: {e}")),
    };
    ctx.observe(end, &reply);
    reply
}

/// The instruction hook: SCRIPT KILL, SHUTDOWN NOSAVE, and moving a long script off its
/// tokio worker.
pub fn hook(_lua: &Lua, dbg: &Debug) -> mlua::Result<VmState> {
    // Line events come only while the profiler is on (scripting::Scripts::set_profiler).
    if dbg.event() == DebugEvent::Line {
        line_event(dbg);
        return Ok(VmState::Continue);
    }
    let r = with_ctx(|ctx| {
        let s = &ctx.shared.script;
        if s.kill.load(Ordering::Relaxed) || s.shutdown.load(Ordering::Relaxed) {
            ctx.killed = true;
            return Err(mlua::Error::runtime(
                "Script killed by user with SCRIPT KILL...",
            ));
        }
        if !ctx.detached && ctx.started.elapsed() >= super::DETACH_AFTER {
            ctx.detached = detach_from_worker();
        }
        Ok(VmState::Continue)
    });
    r.unwrap_or_else(load_hook)
}

/// Hands this worker's scheduler core to a new thread (`block_in_place`), so the rest of a
/// long script runs on a thread the runtime no longer counts as a worker and other
/// connections (and the I/O driver) keep being served. `block_in_place` takes the core back
/// if its closure ends before the new thread picked it up, which a loaded machine makes
/// likely for any fixed wait; so the closure waits until a probe task, spawned into this
/// core's own queue, has run, for at most 50 ms. A task spawned on a worker goes to its LIFO
/// slot, which other workers do not steal, so normally only the core's new owner runs it
/// (were it stolen, the script would keep the worker, as before this check).
/// Returns whether the probe ran; if not, the hook tries again on a later call.
fn detach_from_worker() -> bool {
    // On our own event loop's thread (`event-loop yes`): a new thread takes the loop.
    if let Some(r) = crate::io::evloop::hand_off() {
        return r;
    }
    let Ok(h) = tokio::runtime::Handle::try_current() else {
        return true;
    };
    if h.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return true;
    }
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let probe = ran.clone();
    h.spawn(async move { probe.store(true, Ordering::Relaxed) });
    tokio::task::block_in_place(|| {
        let until = std::time::Instant::now() + std::time::Duration::from_millis(50);
        while !ran.load(Ordering::Relaxed) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    });
    ran.load(Ordering::Relaxed)
}

/// The Rust primitives the prelude wraps: rawcall, rawpcall, sha1hex, setresp,
/// acl_check_cmd.
#[allow(clippy::type_complexity)]
pub fn functions(
    lua: &Lua,
) -> mlua::Result<(Function, Function, Function, Function, Function, Function)> {
    // SAFETY: see the raw C fast path below.
    let rawcall = unsafe { lua.create_c_function(raw_call)? };
    let errconv = lua.create_function(|lua, v: Value| {
        // A killed script's error must not be caught: pcall and friends re-raise it.
        if with_ctx(|c| c.killed).unwrap_or(false) {
            return Err(mlua::Error::runtime(
                "Script killed by user with SCRIPT KILL...",
            ));
        }
        match v {
            // Library errors (struct, ...) are plain strings in Redis, as luaL_error raises.
            Value::Error(e) if plain_text(&e).is_some() => Ok(Value::String(
                lua.create_string(plain_text(&e).unwrap_or_default())?,
            )),
            Value::Error(e) => Ok(Value::Table(err_table(lua, &error_text(&e))?)),
            other => Ok(other),
        }
    })?;
    let rawpcall = unsafe { lua.create_c_function(raw_pcall)? };
    let sha1hex = lua.create_function(|lua, args: MultiValue| {
        if args.len() != 1 {
            return Err(mlua::Error::runtime("wrong number of arguments"));
        }
        let s = match &args[0] {
            Value::String(s) => s.as_bytes().to_vec(),
            v => lua
                .coerce_string(v.clone())?
                .map(|s| s.as_bytes().to_vec())
                .unwrap_or_default(),
        };
        lua.create_string(super::sha1_hex(&s))
    })?;
    let setresp = lua.create_function(|_, args: MultiValue| {
        let v = match args.front() {
            Some(Value::Number(n)) if args.len() == 1 => *n as i64,
            Some(Value::Integer(n)) if args.len() == 1 => *n,
            _ => {
                return Err(mlua::Error::runtime(
                    "redis.setresp() requires one argument.",
                ))
            }
        };
        if v != 2 && v != 3 {
            return Err(mlua::Error::runtime("RESP version must be 2 or 3."));
        }
        with_ctx(|c| c.resp3 = v == 3);
        Ok(())
    })?;
    let acl_check = lua.create_function(|_, args: MultiValue| {
        let mut argv = Vec::with_capacity(args.len());
        for a in args.iter() {
            argv.push(arg_bytes(a).ok_or_else(|| {
                mlua::Error::runtime("Lua redis lib command arguments must be strings or integers")
            })?);
        }
        if argv.is_empty() {
            return Err(mlua::Error::runtime(
                "Please specify at least one argument for this redis lib call",
            ));
        }
        // Redis' lookupCommand: a container with arguments names one of its subcommands.
        let p = with_ctx(|c| c.shared.personality).unwrap_or_default();
        let spec = lockcore::commands::lookup_in(&p, &argv[0]).and_then(|top| {
            if top.subcommands.is_empty() || argv.len() < 2 {
                Some(top)
            } else {
                lockcore::commands::subcommand_in(&p, top, &argv[1])
            }
        });
        match spec {
            Some(spec) => Ok(with_ctx(|c| {
                crate::conn::checks::script_user_may_run(c.shared, c.cl.id, spec, &argv)
            })
            .unwrap_or(true)),
            None => Err(mlua::Error::runtime(
                "Invalid command passed to redis.acl_check_cmd()",
            )),
        }
    })?;
    Ok((rawcall, rawpcall, sha1hex, setresp, acl_check, errconv))
}

/// The message of an error a library function raised as a plain Lua string (marked with a
/// leading `\x02`, see lua_struct.rs' `plain`).
fn plain_text(e: &mlua::Error) -> Option<String> {
    match e {
        mlua::Error::CallbackError { cause, .. } => plain_text(cause),
        mlua::Error::RuntimeError(m) => m.strip_prefix('\x02').map(str::to_string),
        _ => None,
    }
}

/// The text of an error a Rust function raised: ours carry Redis' full error text; anything
/// else gets the generic ERR code.
fn error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => error_text(cause),
        mlua::Error::RuntimeError(m) if m.starts_with('\x01') => m[1..].to_string(),
        mlua::Error::RuntimeError(m) => format!("ERR {m}"),
        mlua::Error::MemoryError(m) => format!("ERR {m}"),
        other => format!("ERR {other}"),
    }
}

/// `redis.log(level, msg, ...)`: argument checks as Redis; the message goes to the
/// server log at debug level.
pub fn log_function(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|_, args: MultiValue| {
        if args.len() < 2 {
            return Err(mlua::Error::runtime(
                "redis.log() requires two arguments or more.",
            ));
        }
        let level = match &args[0] {
            Value::Number(n) => *n as i64,
            Value::Integer(i) => *i,
            _ => {
                return Err(mlua::Error::runtime(
                    "First argument must be a number (log level).",
                ))
            }
        };
        if !(0..=3).contains(&level) {
            return Err(mlua::Error::runtime("Invalid debug level."));
        }
        let msg: Vec<String> = args
            .iter()
            .skip(1)
            .filter_map(|a| arg_bytes(a).map(|b| String::from_utf8_lossy(&b).into_owned()))
            .collect();
        tracing::debug!(level, "lua: {}", msg.join(" "));
        Ok(())
    })
}

/// `{err = msg}`
fn err_table(lua: &Lua, msg: &str) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set("err", msg)?;
    Ok(t)
}

/// How the running script's server prints doubles (its personality's).
fn doubles() -> lockcore::num::DoubleFmt {
    with_ctx(|c| c.shared.personality.doubles()).unwrap_or_default()
}

/// A Lua argument as Redis passes it to a command: strings as they are, numbers formatted
/// as Lua prints them (`%.14g`).
fn arg_bytes(v: &Value) -> Option<Bytes> {
    match v {
        Value::String(s) => Some(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Integer(i) => Some(lockcore::num::int_bytes(*i)),
        Value::Number(n) => Some(super::plan::lua_number_bytes(*n, doubles())),
        _ => None,
    }
}

/// Redis' scriptCall checks, then the command. An error comes back as its text.
fn call_checked(ctx: &mut RunCtx<'_>, argv: &[Bytes]) -> Result<Reply, String> {
    call_spec(ctx, None, argv)
}

/// [`call_checked`], with the command's spec already looked up when `known` is given (a
/// plan resolves a literal command name with a fixed argument count once, at compile
/// time: `lookup_checked` depends on nothing else for a command without subcommands).
///
/// The call counts in INFO commandstats as Redis' scriptCall counts it: a refusal is the
/// command's `rejected_calls`, a run its `calls` (failed or not), and either error reply
/// counts in errorstats now, once (the script's own reply will not count it again).
fn call_spec(
    ctx: &mut RunCtx<'_>,
    known: Option<&'static CommandSpec>,
    argv: &[Bytes],
) -> Result<Reply, String> {
    ctx.redis_calls += 1;
    let mut ran = None;
    let started = ctx.chain.unwrap_or_else(Mono::now);
    let r = call_spec_inner(ctx, known, argv, &mut ran);
    let stats = &ctx.shared.cmdstats;
    match (&r, ran) {
        (Ok(reply), Some(spec)) => {
            let end = Mono::now();
            if ctx.chain.is_some() {
                ctx.chain = Some(end);
            }
            let took = end.since(started);
            stats.record_reply(spec, took, reply);
            // Redis' scriptCall runs the command with CMD_CALL_SLOWLOG: a command a script
            // runs is logged (client "?:0") when it alone passes the threshold.
            if ctx.shared.slowlog.over(took) {
                crate::stats::slowlog::record_script(&ctx.shared.slowlog, argv, took);
            }
        }
        (Err(e), _) => {
            match known
                .or_else(|| lockcore::commands::lookup_checked(&ctx.shared.personality, argv).ok())
            {
                Some(spec) => stats.rejected_spec(spec),
                None => {
                    let _ = argv
                        .first()
                        .and_then(|n| lockcore::commands::lookup_in(&ctx.shared.personality, n))
                        .map(|s| {
                            if !matches!(s.exec, Exec::Container) {
                                stats.rejected_spec(s)
                            }
                        });
                }
            }
            stats.count_error(e);
        }
        _ => {}
    }
    r
}

fn call_spec_inner(
    ctx: &mut RunCtx<'_>,
    known: Option<&'static CommandSpec>,
    argv: &[Bytes],
    ran: &mut Option<&'static CommandSpec>,
) -> Result<Reply, String> {
    let looked_up = match known {
        Some(s) => Ok(s),
        None => lookup_checked(&ctx.shared.personality, argv),
    };
    let spec = match looked_up {
        Ok(s) => s,
        Err(_) => {
            let p = &ctx.shared.personality;
            return Err(match lockcore::commands::lookup_in(p, &argv[0]) {
                Some(s)
                    if !matches!(s.exec, Exec::Container)
                        || argv.len() >= 2
                            && lockcore::commands::subcommand_in(p, s, &argv[1]).is_some() =>
                {
                    script_err(
                        &ctx.shared.personality,
                        "ERR Wrong number of args calling Redis command from script",
                    )
                }
                Some(_) if argv.len() < 2 => script_err(
                    &ctx.shared.personality,
                    "ERR Wrong number of args calling Redis command from script",
                ),
                _ => script_err(
                    &ctx.shared.personality,
                    "ERR Unknown Redis command called from script",
                ),
            });
        }
    };
    if spec.flags_in(&ctx.shared.personality) & flag::NOSCRIPT != 0 {
        return Err(script_err(
            &ctx.shared.personality,
            "ERR This Redis command is not allowed from script",
        ));
    }
    crate::conn::checks::check_script(ctx.shared, ctx.cl.id, spec, argv)?;
    if spec.name.starts_with("sort") {
        ctx.cl.sort_patterns_denied =
            crate::conn::checks::script_sort_patterns_denied(ctx.shared, ctx.cl.id, spec, argv);
    }
    if spec.has(flag::WRITE) && ctx.read_only {
        return Err("ERR Write commands are not allowed from read-only scripts.".into());
    }
    if ctx.oom && !ctx.wrote && spec.has(flag::DENYOOM) {
        return Err(crate::base::consts::OOM_ERR.into());
    }
    if ctx.on_replica && spec.has(flag::WRITE) {
        return Err("READONLY You can't write against a read only replica.".into());
    }
    if ctx.shared.cluster.is_some() {
        crate::conn::route::script_call_check(ctx.shared, spec, argv)?;
    }
    *ran = Some(spec);
    // The profiler's command time (Lua path: the line the hook saw last; plans time their
    // calls themselves).
    let t0 = (!ctx.prof.is_null() && ctx.prof_line != 0).then(Mono::now);
    let reply = match spec.exec {
        Exec::Engine(_) => {
            ctx.cl.resp3 = ctx.resp3;
            let r = ctx.engine.call(&mut ctx.cl, spec, argv);
            if spec.has(flag::WRITE) {
                ctx.wrote = true;
                ctx.shared.script.wrote.store(true, Ordering::Relaxed);
            }
            r
        }
        _ => match spec.name {
            "ping" => match argv.get(1) {
                Some(m) => Reply::Bulk(m.clone()),
                None => Reply::simple("PONG"),
            },
            "echo" => Reply::Bulk(argv[1].clone()),
            // Redis 7.4, Valkey 8.0 (flags_in): no replica or AOF to wait for.
            "wait" => lockcore::commands::server_cmds::wait(argv),
            "waitaof" => lockcore::commands::server_cmds::waitaof(argv),
            _ => {
                return Err(script_err(
                    &ctx.shared.personality,
                    "ERR This Redis command is not allowed from script",
                ))
            }
        },
    };
    if ctx.monitors {
        ctx.shared.feed_monitors(ctx.cl.db, "lua", argv);
    }
    if let Some(t0) = t0 {
        let ns = t0.elapsed().as_nanos() as u64;
        // SAFETY: see RunCtx::observe.
        let p = unsafe { &mut *ctx.prof };
        p.cmd_ns += ns;
        p.line(ctx.prof_line).cmd_ns += ns;
    }
    Ok(reply)
}

/// A script's return value as the reply to EVAL (Redis' Lua-to-reply conversion). Tables
/// are converted on the Lua stack by [`top_to_reply`].
pub fn lua_to_reply(lua: &Lua, v: Value) -> Reply {
    match v {
        Value::Nil => Reply::Null,
        Value::Boolean(true) => Reply::Int(1),
        Value::Boolean(false) => Reply::Null,
        Value::Integer(i) => Reply::Int(i),
        Value::Number(n) => Reply::Int(super::plan::c_long_long(n)),
        Value::String(s) => Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Table(_) => {
            let mut reply = Reply::Null;
            // SAFETY: the value is the only argument; a copy is converted (and popped), so
            // two slots are in use at the start, as in Redis (the error handler and the
            // result), which puts the "reached lua stack limit" at the same depth.
            let r = unsafe {
                lua.exec_raw::<()>(v, |l| {
                    ffi::lua_pushvalue(l, 1);
                    reply = top_to_reply(l);
                    ffi::lua_settop(l, 0);
                })
            };
            match r {
                Ok(()) => reply,
                Err(e) => Reply::err(format!("ERR {e}")),
            }
        }
        _ => Reply::Null,
    }
}

/// Redis' luaReplyToRedisReply: converts the value on top of `l`'s stack and pops it. Each
/// level first asks `lua_checkstack` for 4 slots; past Lua's stack limit (LUAI_MAXCSTACK,
/// 8000 slots, a little under 8000 levels) the element becomes "-ERR reached lua stack
/// limit", exactly where Redis puts it, so nesting is bounded whatever the script built.
unsafe fn top_to_reply(l: *mut ffi::lua_State) -> Reply {
    if ffi::lua_checkstack(l, 4) == 0 {
        ffi::lua_pop(l, 1);
        return Reply::err("ERR reached lua stack limit");
    }
    let r = match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => Reply::Bulk(Bytes::copy_from_slice(top_str(l, -1))),
        ffi::LUA_TBOOLEAN if ffi::lua_toboolean(l, -1) != 0 => Reply::Int(1),
        ffi::LUA_TNUMBER => Reply::Int(super::plan::c_long_long(ffi::lua_tonumber(l, -1))),
        ffi::LUA_TTABLE => table_to_reply(l),
        _ => Reply::Null,
    };
    ffi::lua_pop(l, 1);
    r
}

unsafe fn top_str<'a>(l: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    std::slice::from_raw_parts(p as *const u8, len)
}

/// Pushes `t[name]` (raw) for the table on top and returns its type.
unsafe fn push_field(l: *mut ffi::lua_State, name: &std::ffi::CStr) -> c_int {
    ffi::lua_pushstring(l, name.as_ptr());
    ffi::lua_rawget(l, -2);
    ffi::lua_type(l, -1)
}

/// The table on top of the stack (left there): `{err=}`, `{ok=}`, `{double=}`,
/// `{big_number=}`, `{map=}`, `{set=}`, else an array up to the first nil.
unsafe fn table_to_reply(l: *mut ffi::lua_State) -> Reply {
    let string_field = |name: &std::ffi::CStr| {
        let r = (push_field(l, name) == ffi::LUA_TSTRING).then(|| top_str(l, -1).to_vec());
        ffi::lua_pop(l, 1);
        r
    };
    if let Some(e) = string_field(c"err") {
        if push_field(l, c"ignore_error_stats_update") == ffi::LUA_TBOOLEAN
            && ffi::lua_toboolean(l, -1) != 0
        {
            crate::stats::cmdstats::mark_error_counted();
        }
        ffi::lua_pop(l, 1);
        return Reply::Error(String::from_utf8_lossy(&e).into_owned().into());
    }
    if let Some(s) = string_field(c"ok") {
        return Reply::Simple(String::from_utf8_lossy(&s).into_owned().into());
    }
    if push_field(l, c"double") == ffi::LUA_TNUMBER {
        let d = ffi::lua_tonumber(l, -1);
        ffi::lua_pop(l, 1);
        return Reply::Double(d);
    }
    ffi::lua_pop(l, 1);
    if let Some(b) = string_field(c"big_number") {
        return Reply::BigNumber(Bytes::from(b));
    }
    if push_field(l, c"map") == ffi::LUA_TTABLE {
        let mut pairs = Vec::new();
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            // table, map, key, value: convert a copy of the key, then the value.
            ffi::lua_pushvalue(l, -2);
            let k = top_to_reply(l);
            let v = top_to_reply(l);
            pairs.push((k, v));
        }
        ffi::lua_pop(l, 1);
        return Reply::Map(pairs);
    }
    ffi::lua_pop(l, 1);
    if push_field(l, c"set") == ffi::LUA_TTABLE {
        let mut items = Vec::new();
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_pop(l, 1);
            ffi::lua_pushvalue(l, -1);
            items.push(top_to_reply(l));
        }
        ffi::lua_pop(l, 1);
        return Reply::Set(items);
    }
    ffi::lua_pop(l, 1);
    let mut items = Vec::new();
    for i in 1.. {
        ffi::lua_rawgeti(l, -1, i);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            break;
        }
        items.push(top_to_reply(l));
    }
    Reply::Array(items)
}

// ---------------------------------------------------------------- raw C fast path
//
// `redis.call` and `redis.pcall` are plain Lua C functions: arguments are read straight off
// the Lua stack and replies pushed onto it, with no mlua value references in between (they
// dominated the profile). An error from `redis.call` is raised as Redis raises it, a
// `{err=...}` table, with `lua_error`; that longjmp crosses only the outer C function, and
// only after every Rust value in it has been dropped.

use mlua::ffi;
use std::os::raw::c_int;

/// Reads the call's arguments into `ctx.scratch` and runs the command. Ok(()) has pushed the
/// converted reply; Err is the error text, and whether errorstats counted it already (the
/// command's own error or refusal; not a bad argument to `redis.call` itself).
unsafe fn raw_call_inner(l: *mut ffi::lua_State) -> Result<(), (String, bool)> {
    let n = ffi::lua_gettop(l);
    let r = with_ctx(|ctx| {
        if n == 0 {
            return Err((
                "ERR Please specify at least one argument for this redis lib call".to_string(),
                false,
            ));
        }
        let mut argv = std::mem::take(&mut ctx.scratch);
        argv.clear();
        for i in 1..=n {
            let t = ffi::lua_type(l, i);
            if t == ffi::LUA_TSTRING {
                let mut len = 0usize;
                let p = ffi::lua_tolstring(l, i, &mut len);
                argv.push(Bytes::copy_from_slice(std::slice::from_raw_parts(
                    p as *const u8,
                    len,
                )));
            } else if t == ffi::LUA_TNUMBER {
                argv.push(arg_bytes(&Value::Number(ffi::lua_tonumber(l, i))).unwrap());
            } else {
                ctx.scratch = argv;
                return Err((
                    "ERR Lua redis lib command arguments must be strings or integers".into(),
                    false,
                ));
            }
        }
        let r = call_checked(ctx, &argv);
        argv.clear();
        ctx.scratch = argv;
        match r.map_err(|e| (e, true))? {
            Reply::Error(e) => Err((e.into_owned(), true)),
            reply => {
                // Every nesting level holds a table and a key on the stack while its children
                // are pushed. Command replies are shallow, but the room for an aggregate is
                // checked up front rather than assumed (Redis panics here instead). A scalar
                // fits the slots every C call gets, even after 8000 arguments.
                let depth = reply_depth(&reply);
                if depth > 0 && ffi::lua_checkstack(l, (2 * depth + 4) as c_int) == 0 {
                    return Err(("ERR reached lua stack limit".into(), false));
                }
                push_reply(l, reply, ctx.resp3, 0);
                Ok(())
            }
        }
    });
    r.unwrap_or_else(|| {
        Err((
            "ERR redis.call() can only be used inside a script".into(),
            false,
        ))
    })
}

/// How deeply `r` nests aggregates (0 for a scalar), without recursion.
fn reply_depth(r: &Reply) -> usize {
    if !matches!(
        r,
        Reply::Array(_) | Reply::Set(_) | Reply::Push(_) | Reply::Map(_)
    ) {
        return 0;
    }
    let mut max = 0;
    let mut todo = vec![(r, 0usize)];
    while let Some((r, d)) = todo.pop() {
        max = max.max(d);
        match r {
            Reply::Array(v) | Reply::Set(v) | Reply::Push(v) => {
                todo.extend(v.iter().map(|x| (x, d + 1)))
            }
            Reply::Map(p) => todo.extend(p.iter().flat_map(|(k, v)| [(k, d + 1), (v, d + 1)])),
            _ => {}
        }
    }
    max
}

/// `{err = msg}`, with Redis' `ignore_error_stats_update = true` when errorstats counted the
/// error already (so that the script's reply, if it is this error, does not count again).
unsafe fn push_err_table(l: *mut ffi::lua_State, msg: &str, counted: bool) {
    ffi::lua_createtable(l, 0, 2);
    ffi::lua_pushlstring(l, msg.as_ptr() as *const _, msg.len());
    ffi::lua_setfield(l, -2, c"err".as_ptr());
    if counted {
        ffi::lua_pushboolean(l, 1);
        ffi::lua_setfield(l, -2, c"ignore_error_stats_update".as_ptr());
    }
}

/// `redis.call`: raises `{err=...}` on error.
pub unsafe extern "C-unwind" fn raw_call(l: *mut ffi::lua_State) -> c_int {
    let failed = match raw_call_inner(l) {
        Ok(()) => false,
        Err((msg, counted)) => {
            push_err_table(l, &msg, counted);
            true
        }
    };
    if failed {
        ffi::lua_error(l);
    }
    1
}

/// Refills one reused KEYS/ARGV table (at stack index `idx`) with `vals`.
unsafe fn fill_table(l: *mut ffi::lua_State, idx: c_int, vals: &[Bytes]) {
    let prev = ffi::lua_objlen(l, idx);
    for (i, v) in vals.iter().enumerate() {
        push_str(l, v);
        ffi::lua_rawseti(l, idx, (i + 1) as _);
    }
    for i in vals.len()..prev {
        ffi::lua_pushnil(l);
        ffi::lua_rawseti(l, idx, (i + 1) as _);
    }
    // Redis gives each run fresh tables: whatever an earlier script stored in them beyond
    // this run's sequence (`KEYS[9] = x`, `ARGV.k = y`) or a metatable it set must not be
    // seen now. Clearing existing fields during a traversal is allowed.
    ffi::lua_pushnil(l);
    ffi::lua_setmetatable(l, idx);
    let n = vals.len() as f64;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, idx) != 0 {
        ffi::lua_pop(l, 1);
        let in_seq = ffi::lua_type(l, -1) == ffi::LUA_TNUMBER && {
            let k = ffi::lua_tonumber(l, -1);
            k >= 1.0 && k <= n && k.fract() == 0.0
        };
        if !in_seq {
            ffi::lua_pushvalue(l, -1);
            ffi::lua_pushnil(l);
            ffi::lua_rawset(l, idx);
        }
    }
}

/// `fill(KEYS, ARGV)`, called by the runners: copies this run's keys and arguments in.
pub unsafe extern "C-unwind" fn raw_fill(l: *mut ffi::lua_State) -> c_int {
    let p = CTX.with(|c| c.get());
    if !p.is_null() {
        ffi::lua_checkstack(l, 4);
        let (keys, args) = ((*p).keys, (*p).args);
        fill_table(l, 1, keys);
        fill_table(l, 2, args);
    }
    0
}

/// `redis.pcall`: returns `{err=...}` on error.
pub unsafe extern "C-unwind" fn raw_pcall(l: *mut ffi::lua_State) -> c_int {
    if let Err((msg, counted)) = raw_call_inner(l) {
        push_err_table(l, &msg, counted);
    }
    1
}

unsafe fn push_str(l: *mut ffi::lua_State, b: &[u8]) {
    ffi::lua_pushlstring(l, b.as_ptr() as *const _, b.len());
}

/// Pushes `r` converted as [`reply_to_lua`] does.
unsafe fn push_reply(l: *mut ffi::lua_State, r: Reply, resp3: bool, depth: usize) {
    ffi::lua_checkstack(l, 4);
    let single = |l: *mut ffi::lua_State, key: &std::ffi::CStr| {
        // Expects the value on top: wraps it as {key = value}.
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_insert(l, -2);
        ffi::lua_setfield(l, -2, key.as_ptr());
    };
    match r {
        Reply::Int(i) => ffi::lua_pushnumber(l, i as f64),
        Reply::Bulk(b) => push_str(l, &b),
        Reply::Simple(s) => {
            push_str(l, s.as_bytes());
            single(l, c"ok");
        }
        Reply::Error(e) => {
            push_str(l, e.as_bytes());
            single(l, c"err");
        }
        Reply::Null | Reply::NullArray | Reply::NoReply => {
            if resp3 {
                ffi::lua_pushnil(l)
            } else {
                ffi::lua_pushboolean(l, 0)
            }
        }
        Reply::Array(items) | Reply::Push(items) => push_seq(l, items, resp3, depth),
        Reply::Set(items) => {
            if resp3 {
                ffi::lua_createtable(l, 0, items.len() as c_int);
                for it in items {
                    push_reply(l, it, resp3, depth + 1);
                    ffi::lua_pushboolean(l, 1);
                    ffi::lua_rawset(l, -3);
                }
                single(l, c"set");
            } else {
                push_seq(l, items, resp3, depth)
            }
        }
        Reply::Map(pairs) => {
            if resp3 {
                ffi::lua_createtable(l, 0, pairs.len() as c_int);
                for (k, v) in pairs {
                    push_reply(l, k, resp3, depth + 1);
                    push_reply(l, v, resp3, depth + 1);
                    ffi::lua_rawset(l, -3);
                }
                single(l, c"map");
            } else {
                ffi::lua_createtable(l, (pairs.len() * 2) as c_int, 0);
                let mut i = 1;
                for (k, v) in pairs {
                    push_reply(l, k, resp3, depth + 1);
                    ffi::lua_rawseti(l, -2, i);
                    push_reply(l, v, resp3, depth + 1);
                    ffi::lua_rawseti(l, -2, i + 1);
                    i += 2;
                }
            }
        }
        Reply::Double(d) => {
            if resp3 {
                ffi::lua_pushnumber(l, d);
                single(l, c"double");
            } else {
                push_str(l, doubles().double(d).as_bytes())
            }
        }
        Reply::HumanDouble(d) => {
            if resp3 {
                ffi::lua_pushnumber(l, d);
                single(l, c"double");
            } else {
                push_str(l, doubles().human(d).as_bytes())
            }
        }
        Reply::Bool(b) => {
            if resp3 {
                ffi::lua_pushboolean(l, b as c_int)
            } else if b {
                ffi::lua_pushnumber(l, 1.0)
            } else {
                ffi::lua_pushboolean(l, 0)
            }
        }
        Reply::BigNumber(b) => {
            push_str(l, &b);
            if resp3 {
                single(l, c"big_number");
            }
        }
        Reply::Verbatim(fmt, b) => {
            if resp3 {
                ffi::lua_createtable(l, 0, 2);
                push_str(l, fmt.as_bytes());
                ffi::lua_setfield(l, -2, c"format".as_ptr());
                push_str(l, &b);
                ffi::lua_setfield(l, -2, c"string".as_ptr());
                single(l, c"verbatim_string");
            } else {
                push_str(l, &b)
            }
        }
    }
}

unsafe fn push_seq(l: *mut ffi::lua_State, items: Vec<Reply>, resp3: bool, depth: usize) {
    ffi::lua_createtable(l, items.len() as c_int, 0);
    for (i, it) in items.into_iter().enumerate() {
        push_reply(l, it, resp3, depth + 1);
        ffi::lua_rawseti(l, -2, (i + 1) as _);
    }
}

thread_local! {
    /// When the running FUNCTION LOAD times out (functions.rs); None outside a load.
    pub(super) static LOAD_DEADLINE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// The instruction hook's answer when no script runs: a library load past its time fails.
pub fn load_hook() -> mlua::Result<mlua::VmState> {
    match LOAD_DEADLINE.with(|d| d.get()) {
        Some(t) if std::time::Instant::now() >= t => {
            Err(mlua::Error::runtime("FUNCTION LOAD timeout"))
        }
        _ => Ok(mlua::VmState::Continue),
    }
}
