//! Redis Functions: libraries loaded with FUNCTION LOAD, their registry, and the FUNCTION
//! subcommands (LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE, STATS) and FCALL/FCALL_RO, with
//! Redis 7.0's replies and error texts.
//!
//! A library's code runs once at load time with a restricted environment: the globals'
//! `__index` points at a table holding only `redis` (register_function, log, the LOG_*
//! levels and the version fields), as Redis swaps the globals' metatable during a load.
//! The functions it registers are ordinary closures of the shared Lua state; they see the
//! full `redis` API when FCALL runs them.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;
use lockcore::num::parse_i64;
use lockcore::reply::Reply;
use mlua::{Function, Lua, MultiValue, Value};

use super::{bridge, Oom, Vm};
use crate::state::{Core, Shared};

/// How long a library's load-time code may run (Redis' `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

pub const NO_WRITES: u8 = 1;
pub const ALLOW_OOM: u8 = 2;
pub const ALLOW_STALE: u8 = 4;
pub const NO_CLUSTER: u8 = 8;
pub const ALLOW_CROSS_SLOT: u8 = 16;

/// Flag names in the order FUNCTION LIST shows them.
const FLAG_NAMES: [(&str, u8); 5] = [
    ("no-writes", NO_WRITES),
    ("allow-oom", ALLOW_OOM),
    ("allow-stale", ALLOW_STALE),
    ("no-cluster", NO_CLUSTER),
    ("allow-cross-slot-keys", ALLOW_CROSS_SLOT),
];

const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// One registered function.
#[derive(Clone)]
pub(crate) struct FnDef {
    pub func: Function,
    pub name: String,
    pub flags: u8,
    pub desc: Option<Bytes>,
    pub lib: String,
}

/// One library: its code and its functions in registration order.
pub(crate) struct Library {
    pub code: Bytes,
    pub fns: Vec<FnDef>,
}

/// Functions by lowercased name (FCALL is case-insensitive), libraries by exact name.
#[derive(Default)]
pub(crate) struct Registry {
    pub functions: HashMap<String, FnDef>,
    pub libraries: BTreeMap<String, Library>,
}

impl Registry {
    fn remove_lib(&mut self, name: &str) -> Option<Library> {
        let lib = self.libraries.remove(name)?;
        for f in &lib.fns {
            let k = f.name.to_ascii_lowercase();
            if self.functions.get(&k).is_some_and(|g| g.lib == name) {
                self.functions.remove(&k);
            }
        }
        Some(lib)
    }

    /// Adds a library. Function names are case-sensitive within a library but FCALL's
    /// lookup is not: of two names differing only in case, the later one answers, as in
    /// Redis.
    fn insert_lib(&mut self, name: String, code: Bytes, fns: Vec<FnDef>) {
        for f in &fns {
            self.functions
                .insert(f.name.to_ascii_lowercase(), f.clone());
        }
        self.libraries.insert(name, Library { code, fns });
    }
}

/// A function `redis.register_function` recorded during a load.
struct Registered {
    name: String,
    func: Function,
    flags: u8,
    desc: Option<Bytes>,
}

thread_local! {
    /// Functions registered by the library being loaded; None outside a load.
    static REGISTERED: RefCell<Option<Vec<Registered>>> = const { RefCell::new(None) };
}

fn valid_name(n: &[u8]) -> bool {
    !n.is_empty() && n.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

fn rt(msg: &str) -> mlua::Error {
    mlua::Error::runtime(msg)
}

fn parse_flags(v: &Value) -> mlua::Result<u8> {
    let Value::Table(t) = v else {
        return Err(rt(
            "flags argument to redis.register_function must be a table representing function flags",
        ));
    };
    let mut flags = 0;
    for v in t.clone().sequence_values::<Value>() {
        let f = match v? {
            Value::String(s) => FLAG_NAMES
                .iter()
                .find(|(n, _)| s.as_bytes() == n.as_bytes())
                .map(|(_, f)| *f),
            _ => None,
        };
        flags |= f.ok_or_else(|| rt("unknown flag given"))?;
    }
    Ok(flags)
}

/// `redis.register_function(name, fn)` or `redis.register_function{function_name=...,
/// callback=..., flags={...}, description=...}`, valid only while FUNCTION LOAD runs.
pub fn register_function(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|lua, args: MultiValue| {
        // Numbers pass as strings (Redis checks with lua_isstring).
        let text = |v: &Value| -> Option<Vec<u8>> {
            match v {
                Value::String(s) => Some(s.as_bytes().to_vec()),
                Value::Integer(_) | Value::Number(_) => lua
                    .coerce_string(v.clone())
                    .ok()
                    .flatten()
                    .map(|s| s.as_bytes().to_vec()),
                _ => None,
            }
        };
        if REGISTERED.with(|r| r.borrow().is_none()) {
            return Err(rt(
                "redis.register_function can only be called on FUNCTION LOAD command",
            ));
        }
        let (name, func, flags, desc) = match args.len() {
            1 => {
                let Value::Table(t) = &args[0] else {
                    return Err(rt("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."));
                };
                let (mut name, mut func, mut flags, mut desc) = (None, None, 0, None);
                for pair in t.clone().pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    let Value::String(k) = k else {
                        return Err(rt(
                            "named argument key given to redis.register_function is not a string",
                        ));
                    };
                    match &*k.as_bytes() {
                        b"function_name" => match text(&v) {
                            Some(s) => name = Some(s),
                            _ => return Err(rt("function_name argument given to redis.register_function must be a string")),
                        },
                        b"description" => match text(&v) {
                            Some(s) => desc = Some(Bytes::from(s)),
                            _ => return Err(rt("description argument given to redis.register_function must be a string")),
                        },
                        b"callback" => match v {
                            Value::Function(f) => func = Some(f),
                            _ => return Err(rt("callback argument given to redis.register_function must be a function")),
                        },
                        b"flags" => flags = parse_flags(&v)?,
                        _ => return Err(rt("unknown argument given to redis.register_function")),
                    }
                }
                let Some(name) = name else {
                    return Err(rt("redis.register_function must get a function name argument"));
                };
                let Some(func) = func else {
                    return Err(rt("redis.register_function must get a callback argument"));
                };
                (name, func, flags, desc)
            }
            2 => {
                let Some(n) = text(&args[0]) else {
                    return Err(rt("first argument to redis.register_function must be a string"));
                };
                let Value::Function(f) = &args[1] else {
                    return Err(rt("second argument to redis.register_function must be a function"));
                };
                (n, f.clone(), 0, None)
            }
            _ => return Err(rt("wrong number of arguments to redis.register_function")),
        };
        if !valid_name(&name) {
            return Err(rt(BAD_NAME));
        }
        let name = String::from_utf8(name).unwrap_or_default();
        REGISTERED.with(|r| {
            let mut r = r.borrow_mut();
            let v = r.as_mut().expect("checked above");
            if v.iter().any(|f| f.name == name) {
                return Err(rt("Function already exists in the library"));
            }
            v.push(Registered {
                name,
                func,
                flags,
                desc,
            });
            Ok(())
        })
    })
}

/// The first line's arguments, split as Redis' sdssplitargs does (quotes, escapes).
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Some(out);
        }
        let mut cur = Vec::new();
        let mut quote: Option<u8> = None;
        loop {
            let Some(&c) = line.get(i) else {
                if quote.is_some() {
                    return None;
                }
                break;
            };
            match quote {
                Some(q) if c == b'\\' && q == b'"' && i + 1 < line.len() => {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        o => o,
                    });
                }
                Some(q) if c == q => {
                    // The closing quote must end the argument.
                    if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                        return None;
                    }
                    i += 1;
                    break;
                }
                Some(_) => cur.push(c),
                None if c.is_ascii_whitespace() => break,
                None if c == b'"' || c == b'\'' => quote = Some(c),
                None => cur.push(c),
            }
            i += 1;
        }
        out.push(cur);
    }
}

/// Parses `#!<engine> name=<lib>`: Ok((library name, code to compile)) or Redis' error.
fn parse_metadata(code: &[u8]) -> Result<(String, Vec<u8>), Reply> {
    if !code.starts_with(b"#!") {
        return Err(Reply::err("ERR Missing library metadata"));
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err(Reply::err("ERR Invalid library metadata"));
    };
    let Some(parts) = split_args(&code[..end]) else {
        return Err(Reply::err("ERR Invalid library metadata"));
    };
    let engine = parts
        .first()
        .map(|p| String::from_utf8_lossy(&p[2.min(p.len())..]).into_owned())
        .unwrap_or_default();
    let mut name: Option<Vec<u8>> = None;
    for p in parts.iter().skip(1) {
        let text = String::from_utf8_lossy(p);
        match p.iter().position(|&b| b == b'=') {
            Some(3) if p.starts_with(b"name") => {
                return Err(Reply::err(format!(
                    "ERR Invalid metadata value given: {text}"
                )))
            }
            Some(4) if p.starts_with(b"name") => {
                if name.is_some() {
                    return Err(Reply::err(
                        "ERR Invalid metadata value, name argument was given multiple times",
                    ));
                }
                name = Some(p[5..].to_vec());
            }
            _ => {
                return Err(Reply::err(format!(
                    "ERR Invalid metadata value given: {text}"
                )))
            }
        }
    }
    let Some(name) = name else {
        return Err(Reply::err("ERR Library name was not given"));
    };
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(Reply::err(format!("ERR Engine '{engine}' not found")));
    }
    if !valid_name(&name) {
        return Err(Reply::err(format!("ERR {BAD_NAME}")));
    }
    // Keep the line count so error line numbers match the code the user sent.
    let mut body = Vec::with_capacity(code.len() + 2);
    body.extend_from_slice(b"--");
    body.extend_from_slice(&code[2..]);
    Ok((String::from_utf8(name).unwrap_or_default(), body))
}

/// Compiles and runs a library's code in the load environment: its functions, or the
/// error FUNCTION LOAD replies with.
fn run_library(vm: &mut Vm, body: &[u8]) -> Result<Vec<Registered>, Reply> {
    let f = vm
        .lua
        .load(body)
        .set_name("@user_function")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .into_function()
        .map_err(|e| {
            let msg = match &e {
                mlua::Error::SyntaxError { message, .. } => message.clone(),
                other => other.to_string(),
            };
            Reply::err(format!("ERR Error compiling function: {msg}"))
        })?;
    let load_mode: Function = vm
        .lua
        .named_registry_value("tumbler.load_mode")
        .map_err(|e| Reply::err(format!("ERR {e}")))?;
    REGISTERED.with(|r| *r.borrow_mut() = Some(Vec::new()));
    super::bridge::LOAD_DEADLINE.with(|d| d.set(Some(Instant::now() + LOAD_TIMEOUT)));
    let _ = load_mode.call::<()>(true);
    let res = vm.runner.call::<(bool, Value)>(f);
    let _ = load_mode.call::<()>(false);
    super::bridge::LOAD_DEADLINE.with(|d| d.set(None));
    let registered = REGISTERED
        .with(|r| r.borrow_mut().take())
        .unwrap_or_default();
    match res {
        Ok((true, _)) => {}
        Ok((false, Value::Table(t))) => {
            let msg: String = t
                .raw_get("err")
                .unwrap_or_else(|_| "ERR unknown error".into());
            return Err(Reply::err(format!(
                "ERR Error registering functions: {msg}"
            )));
        }
        Ok((false, v)) => {
            let m = match v {
                Value::String(s) => s.to_string_lossy(),
                _ => "unknown error".into(),
            };
            return Err(Reply::err(format!("ERR Error registering functions: {m}")));
        }
        Err(e) => return Err(Reply::err(format!("ERR Error registering functions: {e}"))),
    }
    if registered.is_empty() {
        return Err(Reply::err("ERR No functions registered"));
    }
    Ok(registered)
}

/// Where a library being added may collide.
#[derive(Clone, Copy, PartialEq)]
enum Policy {
    /// An existing library of the same name is an error.
    Append,
    /// It is replaced.
    Replace,
}

/// Loads one library into `reg`. Errors leave `reg` unchanged.
fn load_into(
    vm: &mut Vm,
    reg: &mut Registry,
    code: &[u8],
    policy: Policy,
    restore: bool,
) -> Result<String, Reply> {
    let (lib, body) = parse_metadata(code)?;
    if reg.libraries.contains_key(&lib) && policy == Policy::Append {
        return Err(Reply::err(if restore {
            format!("ERR Library {lib} already exists")
        } else {
            format!("ERR Library '{lib}' already exists")
        }));
    }
    let registered = run_library(vm, &body)?;
    for r in &registered {
        if let Some(f) = reg.functions.get(&r.name.to_ascii_lowercase()) {
            if f.lib != lib {
                return Err(Reply::err(format!(
                    "ERR Function {} already exists",
                    r.name
                )));
            }
        }
    }
    reg.remove_lib(&lib);
    let fns = registered
        .into_iter()
        .map(|r| FnDef {
            func: r.func,
            name: r.name,
            flags: r.flags,
            desc: r.desc,
            lib: lib.clone(),
        })
        .collect();
    reg.insert_lib(lib.clone(), Bytes::copy_from_slice(code), fns);
    Ok(lib)
}

/// FUNCTION LOAD [REPLACE] code
fn load(vm: &mut Vm, a: &[Bytes]) -> Reply {
    let mut replace = false;
    for opt in &a[2..a.len() - 1] {
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else {
            return Reply::err(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(opt)
            ));
        }
    }
    let policy = if replace {
        Policy::Replace
    } else {
        Policy::Append
    };
    let mut reg = std::mem::take(&mut vm.funcs);
    let r = load_into(vm, &mut reg, &a[a.len() - 1], policy, false);
    vm.funcs = reg;
    match r {
        Ok(lib) => Reply::Bulk(Bytes::from(lib)),
        Err(e) => e,
    }
}

/// Reloads every library into a fresh Lua state (after SCRIPT FLUSH).
pub(crate) fn reload_all(vm: &mut Vm, libs: BTreeMap<String, Library>) {
    let mut reg = Registry::default();
    for (_, l) in libs {
        let _ = load_into(vm, &mut reg, &l.code, Policy::Replace, false);
    }
    vm.funcs = reg;
}

/// Replaces CR and LF with spaces, as Redis does for text echoed in an error.
fn sanitize(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace(['\r', '\n'], " ")
}

fn list(vm: &Vm, a: &[Bytes]) -> Reply {
    let (mut code, mut pattern): (bool, Option<&Bytes>) = (false, None);
    let mut i = 2;
    while i < a.len() {
        let arg = &a[i];
        if !code && arg.eq_ignore_ascii_case(b"withcode") {
            code = true;
        } else if pattern.is_none() && arg.eq_ignore_ascii_case(b"libraryname") {
            let Some(p) = a.get(i + 1) else {
                return Reply::err("ERR library name argument was not given");
            };
            pattern = Some(p);
            i += 1;
        } else {
            return Reply::err(format!("ERR Unknown argument {}", sanitize(arg)));
        }
        i += 1;
    }
    let libs = vm
        .funcs
        .libraries
        .iter()
        .filter(|(name, _)| {
            pattern.is_none_or(|p| lockcore::glob::matches(p, name.as_bytes(), false))
        })
        .map(|(name, lib)| {
            let fns = lib
                .fns
                .iter()
                .map(|f| {
                    let flags = FLAG_NAMES
                        .iter()
                        .filter(|(_, b)| f.flags & b != 0)
                        .map(|(n, _)| Reply::simple(n))
                        .collect();
                    Reply::Map(vec![
                        (Reply::bulk_str("name"), Reply::bulk_str(&f.name)),
                        (
                            Reply::bulk_str("description"),
                            f.desc.clone().map_or(Reply::Null, Reply::Bulk),
                        ),
                        (Reply::bulk_str("flags"), Reply::Set(flags)),
                    ])
                })
                .collect();
            let mut m = vec![
                (Reply::bulk_str("library_name"), Reply::bulk_str(name)),
                (Reply::bulk_str("engine"), Reply::bulk_str("LUA")),
                (Reply::bulk_str("functions"), Reply::Array(fns)),
            ];
            if code {
                m.push((
                    Reply::bulk_str("library_code"),
                    Reply::Bulk(lib.code.clone()),
                ));
            }
            Reply::Map(m)
        })
        .collect();
    Reply::Array(libs)
}

/// RDB_OPCODE_FUNCTION2: one library's code follows as an RDB string.
const OPCODE_FUNCTION2: u8 = 245;

/// FUNCTION DUMP: each library as an RDB function record, then the RDB version and CRC64.
fn dump(vm: &Vm, ver: u16) -> Reply {
    let mut out = Vec::new();
    for lib in vm.funcs.libraries.values() {
        out.push(OPCODE_FUNCTION2);
        lockcore::storage::rdb::put_raw_string(&mut out, &lib.code);
    }
    out.extend_from_slice(&ver.to_le_bytes());
    let crc = lockcore::storage::rdb::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Reply::Bulk(Bytes::from(out))
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]
fn restore(vm: &mut Vm, a: &[Bytes], ver: u16) -> Reply {
    if a.len() > 4 {
        return Reply::err(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
            sanitize(&a[1])
        ));
    }
    let (mut policy, mut flush) = (Policy::Append, false);
    if let Some(p) = a.get(3) {
        if p.eq_ignore_ascii_case(b"flush") {
            flush = true;
        } else if p.eq_ignore_ascii_case(b"replace") {
            policy = Policy::Replace;
        } else if !p.eq_ignore_ascii_case(b"append") {
            return Reply::err(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
        }
    }
    let p = &a[2];
    if !lockcore::storage::rdb::verify(p, ver) {
        return Reply::err("ERR DUMP payload version or checksum are wrong");
    }
    let mut body = &p[..p.len() - 10];
    let mut codes = Vec::new();
    while !body.is_empty() {
        if body[0] != OPCODE_FUNCTION2 {
            return Reply::err("ERR given type is not a function");
        }
        body = &body[1..];
        match lockcore::storage::rdb::take_string(&mut body) {
            Some(c) => codes.push(c),
            None => return Reply::err("ERR payload is not a valid function payload"),
        }
    }
    let mut reg = Registry::default();
    for c in &codes {
        if let Err(e) = load_into(vm, &mut reg, c, Policy::Append, true) {
            return e;
        }
    }
    let empty = Registry::default();
    let live = if flush { &empty } else { &vm.funcs };
    for name in reg.libraries.keys() {
        if policy == Policy::Append && live.libraries.contains_key(name) {
            return Reply::err(format!("ERR Library {name} already exists"));
        }
    }
    for (k, f) in &reg.functions {
        if let Some(old) = live.functions.get(k) {
            if !reg.libraries.contains_key(&old.lib) {
                return Reply::err(format!("ERR Function {} already exists", f.name));
            }
        }
    }
    if flush {
        vm.funcs = Registry::default();
    }
    for (name, lib) in std::mem::take(&mut reg.libraries) {
        vm.funcs.remove_lib(&name);
        vm.funcs.insert_lib(name, lib.code, lib.fns);
    }
    Reply::ok()
}

/// The loaded libraries' code, as an RDB file's FUNCTION2 records hold it (no VM is
/// started for a dataset that never loaded one).
pub fn library_codes(core: &mut Core) -> Vec<Bytes> {
    match &crate::scripting::Scripts::of(&mut *core.scripts).vm {
        Some(vm) => vm
            .funcs
            .libraries
            .values()
            .map(|l| l.code.clone())
            .collect(),
        None => Vec::new(),
    }
}

/// Checks that `codes` (an RDB file's libraries) all load, without changing anything.
pub fn check_libraries(core: &mut Core, codes: &[Bytes]) -> Result<(), String> {
    if codes.is_empty() {
        return Ok(());
    }
    let vm = crate::scripting::Scripts::of(&mut *core.scripts).vm();
    let mut reg = Registry::default();
    for c in codes {
        load_into(vm, &mut reg, c, Policy::Append, true).map_err(|e| match e {
            Reply::Error(m) => m.into_owned(),
            _ => "a function library does not load".to_string(),
        })?;
    }
    Ok(())
}

/// Installs `codes` (checked first with [`check_libraries`]): with `flush` they replace
/// every library, without they replace same-named ones.
pub fn replace_libraries(shared: &Shared, core: &mut Core, codes: &[Bytes], flush: bool) {
    let scripts = crate::scripting::Scripts::of(&mut *core.scripts);
    if codes.is_empty() && scripts.vm.is_none() {
        return;
    }
    let vm = scripts.vm();
    let mut reg = Registry::default();
    for c in codes {
        let _ = load_into(vm, &mut reg, c, Policy::Append, true);
    }
    if flush {
        vm.funcs = Registry::default();
    }
    for (name, lib) in std::mem::take(&mut reg.libraries) {
        vm.funcs.remove_lib(&name);
        vm.funcs.insert_lib(name, lib.code, lib.fns);
    }
    *shared.script.fn_counts.lock().unwrap() = (vm.funcs.libraries.len(), vm.funcs.functions.len());
}

/// FUNCTION STATS; it runs without the keyspace lock (a script may hold it), so the
/// counts come from `Shared`, updated by every FUNCTION command that takes the lock.
pub fn stats(shared: &Shared) -> Reply {
    let running = match shared.script.running_fn.lock().unwrap().as_ref() {
        Some((name, argv)) if shared.script_running_for().is_some() => Reply::Map(vec![
            (Reply::bulk_str("name"), Reply::bulk_str(name)),
            (
                Reply::bulk_str("command"),
                Reply::Array(argv.iter().cloned().map(Reply::Bulk).collect()),
            ),
            (
                Reply::bulk_str("duration_ms"),
                Reply::Int(shared.script_running_for().unwrap_or(0)),
            ),
        ]),
        _ => Reply::Null,
    };
    let (libs, fns) = *shared.script.fn_counts.lock().unwrap();
    Reply::Map(vec![
        (Reply::bulk_str("running_script"), running),
        (
            Reply::bulk_str("engines"),
            Reply::Map(vec![(
                Reply::bulk_str("LUA"),
                Reply::Map(vec![
                    (Reply::bulk_str("libraries_count"), Reply::Int(libs as i64)),
                    (Reply::bulk_str("functions_count"), Reply::Int(fns as i64)),
                ]),
            )]),
        ),
    ])
}

/// FUNCTION KILL: only a running function (SCRIPT KILL stops EVAL scripts).
pub fn kill(shared: &Shared) -> Reply {
    if shared
        .script
        .started_ms
        .load(std::sync::atomic::Ordering::Acquire)
        != 0
        && shared.script.running_fn.lock().unwrap().is_none()
    {
        return Reply::err(crate::base::consts::busy_err(&shared.personality, false));
    }
    super::script_kill(shared, false)
}

/// FUNCTION subcommands that take the keyspace lock.
pub fn command(shared: &Shared, core: &mut Core, sub: &str, a: &[Bytes]) -> Reply {
    let vm = crate::scripting::Scripts::of(&mut *core.scripts).vm();
    let r = match sub {
        "load" => {
            if shared.over_maxmemory() {
                return Reply::err(crate::base::consts::OOM_ERR);
            }
            load(vm, a)
        }
        "delete" => {
            let lib = String::from_utf8_lossy(&a[2]).into_owned();
            match vm.funcs.remove_lib(&lib) {
                Some(_) => Reply::ok(),
                None => Reply::err("ERR Library not found"),
            }
        }
        "flush" => match a.len() {
            2 => {
                vm.funcs = Registry::default();
                Reply::ok()
            }
            3 if a[2].eq_ignore_ascii_case(b"sync") || a[2].eq_ignore_ascii_case(b"async") => {
                vm.funcs = Registry::default();
                Reply::ok()
            }
            3 => Reply::err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"),
            _ => Reply::err(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
                sanitize(&a[1])
            )),
        },
        "list" => list(vm, a),
        "dump" => dump(vm, shared.personality.rdb_version()),
        "restore" => {
            if shared.over_maxmemory() {
                return Reply::err(crate::base::consts::OOM_ERR);
            }
            restore(vm, a, shared.personality.rdb_version())
        }
        _ => Reply::err(format!(
            "ERR unknown subcommand '{}'. Try FUNCTION HELP.",
            sanitize(&a[1])
        )),
    };
    *shared.script.fn_counts.lock().unwrap() = (vm.funcs.libraries.len(), vm.funcs.functions.len());
    r
}

/// FCALL / FCALL_RO name numkeys key... arg...
pub fn fcall(
    core: &mut Core,
    shared: &Shared,
    caller: &lockcore::ClientCtx,
    a: &[Bytes],
    ro: bool,
) -> Reply {
    let Core { engine, scripts } = core;
    let scripts = crate::scripting::Scripts::of(&mut **scripts);
    let vm = scripts.vm();
    let Some(f) = vm
        .funcs
        .functions
        .get(&String::from_utf8_lossy(&a[1]).to_ascii_lowercase())
    else {
        return Reply::err("ERR Function not found");
    };
    let Some(nk) = parse_i64(&a[2]) else {
        return Reply::err("ERR Bad number of keys provided");
    };
    if nk > (a.len() - 3) as i64 {
        return Reply::err("ERR Number of keys can't be greater than number of args");
    }
    if nk < 0 {
        return Reply::err("ERR Number of keys can't be negative");
    }
    let nk = nk as usize;
    let (func, flags, name) = (f.func.clone(), f.flags, f.name.clone());
    let no_writes = flags & NO_WRITES != 0;
    if ro && !no_writes {
        return Reply::err("ERR Can not execute a script with write flag using *_ro command.");
    }
    if flags & NO_CLUSTER != 0 && shared.cluster.is_some() {
        return Reply::err("ERR Can not run script on cluster, 'no-cluster' flag is set.");
    }
    let oom = if flags & (NO_WRITES | ALLOW_OOM) != 0 {
        Oom::Allow
    } else {
        Oom::Deny
    };
    if oom == Oom::Deny && shared.over_maxmemory() {
        return Reply::err(crate::base::consts::OOM_ERR);
    }
    *shared.script.running_fn.lock().unwrap() = Some((name.clone(), a.to_vec()));
    let r = bridge::run(
        vm,
        func,
        engine,
        shared,
        caller,
        &name,
        true,
        &a[3..3 + nk],
        &a[3 + nk..],
        ro || no_writes,
        false,
        // Functions have no SHA and are not in the script cache: not in INFO scriptstats.
        bridge::Observe::NONE,
        crate::base::mono::Mono::now(),
    );
    *shared.script.running_fn.lock().unwrap() = None;
    r
}

/// FUNCTION HELP
pub fn help() -> Reply {
    const LINES: &[&str] = &[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::simple(l)).collect())
}
