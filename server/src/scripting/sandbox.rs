//! The Lua state as Redis 7 sets it up: the same global names, read-only library tables
//! and globals, no file/OS access, no bytecode loading, and the error handler that gives
//! errors their `script: <sha>, on @user_script:<line>.` context.

use mlua::{HookTriggers, Lua, LuaOptions, StdLib, Table, Value};

use super::bridge;
use super::libs;

/// Lua run once at start-up with the unprotected globals as environment. It builds the
/// `redis` table around the Rust primitives, protects every library table and `_G`, and
/// hands back what the Rust side needs.
const PRELUDE: &str = r#"
local rawcall, rawpcall, sha1hex, setresp, acl_check, errconv, log, register_function, fill, version, version_num, valkey_version, valkey_version_num = ...
local G = _G
local tonumber = tonumber
local error, type, tostring, rawget, setmetatable, getmetatable, rawset, next =
      error, type, tostring, rawget, setmetatable, getmetatable, rawset, next
local dbg_getinfo = debug.getinfo
local loadstring, load, string_sub = loadstring, load, string.sub

-- What Redis 7.0 does not expose.
for _, name in ipairs({'loadfile', 'dofile', 'require', 'module', 'setfenv', 'getfenv',
                       'print', 'newproxy', 'debug', 'io', 'os', 'package'}) do
  G[name] = nil
end

local function readonly_error()
  error("Attempt to modify a readonly table", 2)
end

-- Tables made read-only, keyed by their proxy.
local protected = setmetatable({}, {__mode = 'k'})

local function protect(t)
  local mt = {__index = t, __newindex = readonly_error}
  local proxy = setmetatable({}, mt)
  local mt_proxy = setmetatable({}, {__index = mt, __newindex = readonly_error, __metatable = false})
  mt.__metatable = mt_proxy
  protected[proxy] = true
  protected[mt_proxy] = true
  return proxy
end

-- Bytecode is never loaded: Redis' Lua refuses binary chunks.
G.loadstring = function(s, name)
  if type(s) == 'string' and string_sub(s, 1, 1) == '\27' then
    return nil, 'attempt to load a binary chunk'
  end
  return loadstring(s, name)
end
G.load = function(f, name)
  local parts, n = {}, 0
  if type(f) ~= 'function' then return load(f, name) end
  while true do
    local p = f()
    if p == nil or p == '' then break end
    n = n + 1
    parts[n] = p
  end
  local s = table.concat(parts)
  return G.loadstring(s, name)
end
-- unpack: Lua 5.1.5 overflows its count for huge ranges; the C guard in patterns.rs
-- refuses them first, as Redis' patched unpack does.
G.setmetatable = function(t, mt)
  if protected[t] then error("Attempt to modify a readonly table", 0) end
  return setmetatable(t, mt)
end
G.rawset = function(t, k, v)
  if protected[t] then error("Attempt to modify a readonly table", 0) end
  return rawset(t, k, v)
end
-- Errors raised by Rust functions reach Lua as userdata; scripts see Redis' tables.
local function conv(e)
  if type(e) == 'userdata' then return errconv(e) end
  return e
end
local function fix(ok, ...)
  if ok then return ok, ... end
  -- errconv raises again if the script was killed (SCRIPT KILL cannot be caught).
  return false, errconv((...))
end
-- Redis' own pcall (luaRedisPcall) hands scripts the `err` field of an error table
-- (string or number) instead of the table: `pcall(redis.call, ...)` yields false, "ERR ...".
-- xpcall and coroutine.resume are Lua's and keep the table.
local function pcall_fix(ok, ...)
  if ok then return ok, ... end
  local e = errconv((...))
  if type(e) == 'table' then
    local m = e.err
    if type(m) == 'string' or type(m) == 'number' then e = m end
  end
  return false, e
end
local pcall, xpcall = pcall, xpcall
G.pcall = function(f, ...) return pcall_fix(pcall(f, ...)) end
G.xpcall = function(f, h) return fix(xpcall(f, function(e) return h(conv(e)) end)) end
local co_resume = coroutine.resume
coroutine.resume = function(co, ...) return fix(co_resume(co, ...)) end

local redis = {}
-- A C function, like Redis': `return redis.call(...)` keeps the caller's frame, so errors
-- name the user's line.
redis.call = rawcall
redis.pcall = rawpcall
redis.sha1hex = sha1hex
redis.setresp = setresp
redis.acl_check_cmd = acl_check
-- Bad arguments make error_reply/status_reply *return* an error table (they do not raise).
redis.error_reply = function(...)
  local e = ...
  if select('#', ...) ~= 1 or type(e) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  if string_sub(e, 1, 1) ~= '-' then e = '-' .. e end
  local sp = string.find(e, ' ', 1, true)
  local code, msg
  if sp then
    code, msg = string_sub(e, 2, sp - 1), string_sub(e, sp + 1)
  else
    code, msg = 'ERR', string_sub(e, 2)
  end
  msg = string.gsub(msg, '^[\r\n]+', '')
  msg = string.gsub(msg, '[\r\n]+$', '')
  return {err = code .. ' ' .. msg}
end
redis.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = s}
end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.log = log
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.set_repl = function(flags)
  if type(flags) ~= 'number' then
    return error("redis.set_repl() requires one argument.", 2)
  end
  if flags < 0 or flags > 3 then
    return error("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.", 2)
  end
end
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.REDIS_VERSION = version
redis.REDIS_VERSION_NUM = version_num
-- Valkey: the same object is also `server`, and names the server and its own version.
if valkey_version then
  redis.SERVER_NAME = 'valkey'
  redis.VALKEY_VERSION = valkey_version
  redis.VALKEY_VERSION_NUM = valkey_version_num
end

-- Errors become {err=..., source=..., line=...} naming the user's frame, as Redis 7's
-- handler does; frames of this prelude and C functions are skipped.
local function err_handler(err)
  local level = 2
  local i = dbg_getinfo(level, 'nSl')
  while i and (i.what == 'C' or i.source == '=tumbler') do
    level = level + 1
    i = dbg_getinfo(level, 'nSl')
  end
  if type(err) == 'userdata' then err = errconv(err) end
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
G.__redis__err__handler = err_handler
if valkey_version then G.__server__err__handler = err_handler end

local KEYS, ARGV = {}, {}
G.KEYS, G.ARGV = KEYS, ARGV

local runner = function(f)
  fill(KEYS, ARGV)
  local ok, r = xpcall(f, err_handler)
  return ok, r
end
-- FCALL: a registered function gets (KEYS, ARGV) as arguments.
local fn_runner = function(f)
  fill(KEYS, ARGV)
  local ok, r = xpcall(function() return f(KEYS, ARGV) end, err_handler)
  return ok, r
end
-- FUNCTION LOAD runs a library with only this in reach: `redis` with register_function,
-- log and the version fields (Redis swaps the globals' __index the same way).
local function no_global(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
local lib_redis = setmetatable({
  register_function = register_function, log = log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = version, REDIS_VERSION_NUM = version_num,
}, {__index = no_global})
if valkey_version then
  lib_redis.SERVER_NAME = 'valkey'
  lib_redis.VALKEY_VERSION = valkey_version
  lib_redis.VALKEY_VERSION_NUM = valkey_version_num
end
local lib_env = setmetatable({redis = protect(lib_redis)}, {__index = no_global})

G.redis = protect(redis)
if valkey_version then
  G.server = G.redis
  lib_env.server = lib_env.redis
end
for _, name in ipairs({'string', 'table', 'math', 'coroutine', 'cjson', 'cmsgpack', 'bit', 'struct'}) do
  if rawget(G, name) ~= nil then G[name] = protect(G[name]) end
end
-- Strings index the protected string table too.
local smt = getmetatable('')
smt.__index = G.string
smt.__metatable = protect(smt)

-- The globals scripts see: reads fall through to G; unknown names are errors; every write
-- is refused.
local proxy_mt = {__index = G, __newindex = readonly_error}
local proxy = setmetatable({}, proxy_mt)
local proxy_mt_ro = setmetatable({}, {__index = proxy_mt, __newindex = readonly_error, __metatable = false})
proxy_mt.__metatable = proxy_mt_ro
protected[proxy] = true
protected[proxy_mt_ro] = true
setmetatable(G, {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end, __newindex = readonly_error, __metatable = false})
G._G = proxy
local load_mode = function(on)
  if on then proxy_mt.__index = lib_env else proxy_mt.__index = G end
end
return proxy, runner, KEYS, ARGV, fn_runner, load_mode
"#;

/// Builds a fresh, sandboxed Lua state for personality `p`: `redis.REDIS_VERSION` is the
/// Redis version it announces (7.2.4 for every Valkey); a Valkey one also has the `server`
/// global (the same object as `redis`) with `SERVER_NAME` and `VALKEY_VERSION[_NUM]`.
pub fn new_state(p: &lockcore::personality::Personality) -> mlua::Result<Lua> {
    let version = p.redis_version();
    let valkey = p.is_valkey().then_some(p.version);
    // DEBUG is opened only for the error handler's `getinfo`; the prelude removes the
    // global before any script runs.
    let lua = unsafe {
        Lua::unsafe_new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
            LuaOptions::default(),
        )
    };
    let g = lua.globals();
    libs::install(&lua, &g)?;
    super::patterns::install(&lua)?;
    let (rawcall, rawpcall, sha1hex, setresp, acl_check, errconv) = bridge::functions(&lua)?;
    let log = bridge::log_function(&lua)?;
    let (proxy, runner, keys, argv, fn_runner, load_mode): (
        Table,
        mlua::Function,
        Table,
        Table,
        mlua::Function,
        mlua::Function,
    ) = lua.load(PRELUDE).set_name("=tumbler").call((
        rawcall,
        rawpcall,
        sha1hex,
        setresp,
        acl_check,
        errconv,
        log,
        super::functions::register_function(&lua)?,
        // SAFETY: raw_fill only touches the stack slots it is given.
        unsafe { lua.create_c_function(bridge::raw_fill)? },
        version,
        version_num(version),
        valkey,
        valkey.map(version_num),
    ))?;
    lua.set_globals(proxy)?;
    lua.set_named_registry_value("tumbler.runner", runner)?;
    lua.set_named_registry_value("tumbler.fn_runner", fn_runner)?;
    lua.set_named_registry_value("tumbler.load_mode", load_mode)?;
    lua.set_named_registry_value("tumbler.keys", keys)?;
    lua.set_named_registry_value("tumbler.argv", argv)?;
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(bridge::HOOK_EVERY),
        bridge::hook,
    )?;
    lua.set_memory_limit(super::LUA_MEMORY_LIMIT)?;
    let _ = Value::Nil;
    Ok(lua)
}

fn version_num(v: &str) -> i64 {
    v.split('.')
        .take(3)
        .fold(0, |acc, p| acc * 256 + p.parse::<i64>().unwrap_or(0))
}
