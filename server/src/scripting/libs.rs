//! The extra libraries Redis gives scripts, written in Rust: `bit` (LuaBitOp semantics)
//! and `cjson` (lua-cjson's encode/decode behaviour and messages); `cmsgpack` is in
//! cmsgpack.rs.

use mlua::{ffi, LightUserData, Lua, MultiValue, Table, Value, Variadic};
use std::os::raw::c_int;

use super::lua_struct::{argerr, check_string, lib_fn, typename};

/// Registers `bit` and `cjson` in `g`.
pub fn install(lua: &Lua, g: &Table) -> mlua::Result<()> {
    g.raw_set("bit", bit(lua)?)?;
    g.raw_set("cjson", cjson(lua)?)?;
    super::cmsgpack::install(lua, g)?;
    super::lua_struct::install(lua, g)?;
    Ok(())
}

// ---------------------------------------------------------------- bit

/// LuaBitOp's number normalisation: round to an integer, wrap to 32 bits, signed.
/// Argument `i` (0-based) is checked like luaL_checknumber.
fn tobit(lua: &Lua, a: &MultiValue, i: usize) -> mlua::Result<i32> {
    let bad = || {
        argerr(
            lua,
            i + 1,
            &format!("number expected, got {}", typename(a, i + 1)),
        )
    };
    let n = match a.get(i).unwrap_or(&Value::Nil) {
        Value::Number(n) => *n,
        Value::Integer(i) => *i as f64,
        Value::String(s) => s
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    let r = (n + 6755399441055744.0) - 6755399441055744.0;
    Ok(r.rem_euclid(4294967296.0) as u64 as u32 as i32)
}

fn arg(lua: &Lua, a: &MultiValue, i: usize) -> mlua::Result<i32> {
    tobit(lua, a, i)
}

fn bit(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "tobit",
        lib_fn(lua, |lua, a: MultiValue| Ok(arg(lua, &a, 0)? as f64))?,
    )?;
    t.set(
        "bnot",
        lib_fn(lua, |lua, a: MultiValue| Ok(!arg(lua, &a, 0)? as f64))?,
    )?;
    macro_rules! fold {
        ($name:expr, $op:tt) => {
            t.set(
                $name,
                lib_fn(lua, |lua, a: MultiValue| {
                    let mut r = arg(lua, &a, 0)?;
                    for i in 1..a.len() {
                        #[allow(clippy::assign_op_pattern)]
                        {
                            r = r $op arg(lua, &a, i)?;
                        }
                    }
                    Ok(r as f64)
                })?,
            )?;
        };
    }
    fold!("band", &);
    fold!("bor", |);
    fold!("bxor", ^);
    macro_rules! shift {
        ($name:expr, $f:expr) => {
            t.set(
                $name,
                lib_fn(lua, |lua, a: MultiValue| {
                    let x = arg(lua, &a, 0)?;
                    let n = (arg(lua, &a, 1)? & 31) as u32;
                    let f: fn(i32, u32) -> i32 = $f;
                    Ok(f(x, n) as f64)
                })?,
            )?;
        };
    }
    shift!("lshift", |x, n| ((x as u32) << n) as i32);
    shift!("rshift", |x, n| ((x as u32) >> n) as i32);
    shift!("arshift", |x, n| x >> n);
    shift!("rol", |x, n| (x as u32).rotate_left(n) as i32);
    shift!("ror", |x, n| (x as u32).rotate_right(n) as i32);
    t.set(
        "bswap",
        lib_fn(lua, |lua, a: MultiValue| {
            Ok((arg(lua, &a, 0)? as u32).swap_bytes() as i32 as f64)
        })?,
    )?;
    t.set(
        "tohex",
        lib_fn(lua, |lua, a: MultiValue| {
            let x = arg(lua, &a, 0)? as u32;
            let mut n = if a.len() > 1 {
                arg(lua, &a, 1)? as i64
            } else {
                8
            };
            let upper = n < 0;
            if upper {
                n = -n;
            }
            let n = n.clamp(1, 8) as usize;
            let s = if upper {
                format!("{:08X}", x)
            } else {
                format!("{:08x}", x)
            };
            Ok(s[8 - n..].to_string())
        })?,
    )?;
    Ok(t)
}

// ---------------------------------------------------------------- cjson

/// cjson.encode_max_depth / decode_max_depth settings.
struct CjsonDepth {
    encode: usize,
    decode: usize,
    /// encode_invalid_numbers: 0 off, 1 on, 2 "null".
    invalid: u8,
}

fn cjson(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let null = Value::LightUserData(LightUserData(std::ptr::null_mut()));
    t.set("null", null)?;
    lua.set_app_data(CjsonDepth {
        encode: 1000,
        decode: 1000,
        invalid: 0,
    });
    // encode_invalid_numbers([true|false|"on"|"off"|"null"]) -> the setting (boolean, or
    // "null"); it persists in the Lua state like lua-cjson's config.
    t.set(
        "encode_invalid_numbers",
        lib_fn(lua, |lua, a: MultiValue| {
            let mut d = lua.app_data_mut::<CjsonDepth>().unwrap();
            match a.front() {
                None | Some(Value::Nil) => {}
                Some(Value::Boolean(b)) => d.invalid = *b as u8,
                Some(_) => {
                    let s = check_string(lua, &a, 1)?;
                    d.invalid = match &s[..] {
                        b"off" => 0,
                        b"on" => 1,
                        b"null" => 2,
                        _ => {
                            let msg = format!("invalid option '{}'", String::from_utf8_lossy(&s));
                            return Err(argerr(lua, 1, &msg));
                        }
                    }
                }
            }
            Ok(match d.invalid {
                2 => Value::String(lua.create_string("null")?),
                v => Value::Boolean(v == 1),
            })
        })?,
    )?;
    t.set(
        "encode_max_depth",
        lib_fn(lua, |lua, n: Option<i64>| {
            let mut d = lua.app_data_mut::<CjsonDepth>().unwrap();
            if let Some(n) = n {
                if !(1..=i32::MAX as i64).contains(&n) {
                    return Err(argerr(lua, 1, "expected integer between 1 and 2147483647"));
                }
                d.encode = n as usize;
            }
            Ok(d.encode as i64)
        })?,
    )?;
    t.set(
        "decode_max_depth",
        lib_fn(lua, |lua, n: Option<i64>| {
            let mut d = lua.app_data_mut::<CjsonDepth>().unwrap();
            if let Some(n) = n {
                if !(1..=i32::MAX as i64).contains(&n) {
                    return Err(argerr(lua, 1, "expected integer between 1 and 2147483647"));
                }
                d.decode = n as usize;
            }
            Ok(d.decode as i64)
        })?,
    )?;
    // Other lua-cjson configuration functions: accepted; tumbler keeps its defaults.
    for name in [
        "encode_keep_buffer",
        "encode_number_precision",
        "encode_sparse_array",
        "decode_invalid_numbers",
    ] {
        t.set(name, lib_fn(lua, |_, a: MultiValue| Ok(a))?)?;
    }
    t.set(
        "encode",
        lib_fn(lua, |lua, a: Variadic<Value>| {
            if a.len() != 1 {
                return Err(argerr(lua, 1, "expected 1 argument"));
            }
            let mut out = Vec::new();
            let cfg = lua
                .app_data_ref::<CjsonDepth>()
                .map_or((1000, 0), |d| (d.encode, d.invalid));
            let mut res = Ok(());
            // SAFETY: `encode` reads the value (the only argument, on top of the stack) with
            // the C API and leaves the stack as it found it; it raises no Lua error itself.
            unsafe {
                lua.exec_raw::<()>(a[0].clone(), |l| {
                    res = encode(l, &mut out, 0, cfg);
                    ffi::lua_settop(l, 0);
                })?;
            }
            res.map_err(mlua::Error::runtime)?;
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "decode",
        lib_fn(lua, |lua, a: Variadic<Value>| {
            let s = match a.first() {
                _ if a.len() != 1 => return Err(argerr(lua, 1, "expected 1 argument")),
                Some(Value::String(s)) => s.as_bytes().to_vec(),
                _ => check_string(lua, &a.iter().cloned().collect(), 1)?,
            };
            let max = lua.app_data_ref::<CjsonDepth>().map_or(1000, |d| d.decode);
            let mut res = Ok(());
            // SAFETY: the parser pushes exactly one value, or fails with the stack cut back
            // to nothing; it raises no Lua error itself. The input string is the one
            // argument, so the stack starts as lua-cjson's does.
            let v = unsafe {
                lua.exec_raw::<Value>(Value::Nil, |l| {
                    ffi::lua_settop(l, 1);
                    let mut p = Parser {
                        s: &s,
                        i: 0,
                        l,
                        max,
                        depth: 0,
                    };
                    p.ws();
                    res = p.value().and_then(|()| {
                        p.ws();
                        if p.i < s.len() {
                            return Err(p.bad_tok("the end"));
                        }
                        Ok(())
                    });
                    if res.is_err() {
                        ffi::lua_settop(l, 0);
                    } else {
                        ffi::lua_replace(l, 1);
                    }
                })?
            };
            res.map_err(mlua::Error::runtime)?;
            Ok(v)
        })?,
    )?;
    Ok(t)
}

/// `invalid` is the encode_invalid_numbers setting: 0 refuse NaN/Inf, 1 write
/// nan/inf/-inf, 2 write null.
fn fmt_num(n: f64, out: &mut Vec<u8>, invalid: u8) -> Result<(), String> {
    if !n.is_finite() {
        match invalid {
            0 => return Err("Cannot serialise number: must not be NaN or Inf".into()),
            1 if n.is_nan() => out.extend_from_slice(b"nan"),
            1 if n < 0.0 => out.extend_from_slice(b"-inf"),
            1 => out.extend_from_slice(b"inf"),
            _ => out.extend_from_slice(b"null"),
        }
        return Ok(());
    }
    out.extend_from_slice(lockcore::num::fmt_g(n, 14).as_bytes());
    Ok(())
}

fn encode_str(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            8 => out.extend_from_slice(b"\\b"),
            12 => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => out.extend_from_slice(format!("\\u{:04x}", c).as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// lua-cjson's json_append_data for the value on top of `l`'s stack. Nesting is bounded as in
/// lua-cjson: past `encode_max_depth`, or when `lua_checkstack` cannot find 3 more slots
/// (Lua's LUAI_MAXCSTACK of 8000 counts the tables and keys held by the outer levels), the
/// error is "Cannot serialise, excessive nesting (N)", with N the same as in Redis.
unsafe fn encode(
    l: *mut ffi::lua_State,
    out: &mut Vec<u8>,
    depth: usize,
    cfg: (usize, u8),
) -> Result<(), String> {
    let (limit, invalid) = cfg;
    match ffi::lua_type(l, -1) {
        ffi::LUA_TNIL => out.extend_from_slice(b"null"),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
            out.extend_from_slice(b"null")
        }
        ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(l, -1) != 0 {
            b"true"
        } else {
            b"false"
        }),
        ffi::LUA_TNUMBER => fmt_num(ffi::lua_tonumber(l, -1), out, invalid)?,
        ffi::LUA_TSTRING => encode_str(raw_str(l, -1), out),
        ffi::LUA_TTABLE => {
            let depth = depth + 1;
            if depth > limit || ffi::lua_checkstack(l, 3) == 0 {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            // lua-cjson's lua_array_length: an array if every key is an integer >= 1.
            let (mut max, mut items, mut is_array) = (0f64, 0f64, true);
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, -2) != 0 {
                let k = ffi::lua_tonumber(l, -2);
                if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER && k >= 1.0 && k.floor() == k {
                    max = k.max(max);
                    items += 1.0;
                    ffi::lua_pop(l, 1);
                } else {
                    ffi::lua_pop(l, 2);
                    is_array = false;
                    break;
                }
            }
            if is_array && max > items * 2.0 && max > 10.0 {
                return Err("Cannot serialise table: excessively sparse array".into());
            }
            if is_array && max > 0.0 {
                out.push(b'[');
                for i in 1..=max as i64 {
                    if i > 1 {
                        out.push(b',');
                    }
                    ffi::lua_rawgeti(l, -1, i as _);
                    let r = encode(l, out, depth, cfg);
                    ffi::lua_pop(l, 1);
                    r?;
                }
                out.push(b']');
            } else {
                out.push(b'{');
                let mut first = true;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    match ffi::lua_type(l, -2) {
                        ffi::LUA_TSTRING => encode_str(raw_str(l, -2), out),
                        ffi::LUA_TNUMBER => {
                            out.push(b'"');
                            let r = fmt_num(ffi::lua_tonumber(l, -2), out, invalid);
                            if r.is_err() {
                                ffi::lua_pop(l, 2);
                                return r;
                            }
                            out.push(b'"');
                        }
                        t => {
                            ffi::lua_pop(l, 2);
                            return Err(format!(
                                "Cannot serialise {}: table key must be a number or string",
                                type_name(t)
                            ));
                        }
                    }
                    out.push(b':');
                    let r = encode(l, out, depth, cfg);
                    ffi::lua_pop(l, 1);
                    if r.is_err() {
                        ffi::lua_pop(l, 1);
                        return r;
                    }
                }
                out.push(b'}');
            }
        }
        t => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                type_name(t)
            ))
        }
    }
    Ok(())
}

/// The string at `idx` (which must be a string, so that lua_next is not disturbed).
unsafe fn raw_str<'a>(l: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    std::slice::from_raw_parts(p as *const u8, len)
}

/// Lua's `lua_typename`.
fn type_name(t: c_int) -> &'static str {
    match t {
        ffi::LUA_TNIL => "nil",
        ffi::LUA_TBOOLEAN => "boolean",
        ffi::LUA_TLIGHTUSERDATA | ffi::LUA_TUSERDATA => "userdata",
        ffi::LUA_TNUMBER => "number",
        ffi::LUA_TSTRING => "string",
        ffi::LUA_TTABLE => "table",
        ffi::LUA_TFUNCTION => "function",
        ffi::LUA_TTHREAD => "thread",
        _ => "no value",
    }
}

/// lua-cjson's decoder, building the value on the Lua stack as lua-cjson does.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    l: *mut ffi::lua_State,
    /// decode_max_depth.
    max: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    /// lua-cjson's "Expected X but found <token>": the token at the current position is
    /// named by its type (T_END at the end of input), or "invalid token".
    fn bad_tok(&self, what: &str) -> String {
        let rest = &self.s[self.i.min(self.s.len())..];
        let tok = match rest.first() {
            None => "T_END",
            Some(b'{') => "T_OBJ_BEGIN",
            Some(b'}') => "T_OBJ_END",
            Some(b'[') => "T_ARR_BEGIN",
            Some(b']') => "T_ARR_END",
            Some(b'"') => "T_STRING",
            Some(b':') => "T_COLON",
            Some(b',') => "T_COMMA",
            Some(b'-' | b'0'..=b'9') => "T_NUMBER",
            _ if rest.starts_with(b"true") || rest.starts_with(b"false") => "T_BOOLEAN",
            _ if rest.starts_with(b"null") => "T_NULL",
            _ => "invalid token",
        };
        format!(
            "Expected {what} but found {tok} at character {}",
            self.i + 1
        )
    }
    /// lua-cjson's json_decode_descend: one more nesting level, within decode_max_depth and
    /// with `slots` free Lua stack slots (2 for an array, 3 for an object), else lua-cjson's
    /// error. Lua's stack limit (LUAI_MAXCSTACK, 8000 slots) bounds the nesting even when
    /// decode_max_depth is raised to its maximum, as in Redis.
    fn descend(&mut self, slots: c_int) -> Result<(), String> {
        self.depth += 1;
        // SAFETY: `l` is the running Lua state.
        if self.depth <= self.max && unsafe { ffi::lua_checkstack(self.l, slots) } != 0 {
            return Ok(());
        }
        Err(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth,
            self.i + 1
        ))
    }

    /// Parses one value and pushes it.
    fn value(&mut self) -> Result<(), String> {
        let l = self.l;
        // SAFETY (every ffi call below): `l` is the running state; each push is covered by
        // the slots `descend` reserved or by the LUA_MINSTACK a C call starts with.
        match self.s.get(self.i) {
            Some(b'{') => {
                self.descend(3)?;
                self.i += 1;
                unsafe { ffi::lua_createtable(l, 0, 0) };
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self.bad_tok("object key string"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return Err(self.bad_tok("colon"));
                    }
                    self.i += 1;
                    self.ws();
                    unsafe { ffi::lua_pushlstring(l, k.as_ptr() as *const _, k.len()) };
                    drop(k);
                    self.value()?;
                    unsafe { ffi::lua_rawset(l, -3) };
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            self.depth -= 1;
                            return Ok(());
                        }
                        _ => return Err(self.bad_tok("comma or object end")),
                    }
                }
            }
            Some(b'[') => {
                self.descend(2)?;
                self.i += 1;
                unsafe { ffi::lua_createtable(l, 0, 0) };
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                let mut n = 1;
                loop {
                    self.ws();
                    self.value()?;
                    unsafe { ffi::lua_rawseti(l, -2, n) };
                    n += 1;
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            self.depth -= 1;
                            return Ok(());
                        }
                        _ => return Err(self.bad_tok("comma or array end")),
                    }
                }
            }
            Some(b'"') => {
                let s = self.string()?;
                unsafe { ffi::lua_pushlstring(l, s.as_ptr() as *const _, s.len()) };
                Ok(())
            }
            Some(b't') if self.s[self.i..].starts_with(b"true") => {
                self.i += 4;
                unsafe { ffi::lua_pushboolean(l, 1) };
                Ok(())
            }
            Some(b'f') if self.s[self.i..].starts_with(b"false") => {
                self.i += 5;
                unsafe { ffi::lua_pushboolean(l, 0) };
                Ok(())
            }
            Some(b'n') if self.s[self.i..].starts_with(b"null") => {
                self.i += 4;
                unsafe { ffi::lua_pushlightuserdata(l, std::ptr::null_mut()) };
                Ok(())
            }
            Some(c) if *c == b'-' || c.is_ascii_digit() => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
                    )
                {
                    self.i += 1;
                }
                let n = std::str::from_utf8(&self.s[start..self.i])
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .ok_or_else(|| {
                        format!(
                            "Expected value but found invalid number at character {}",
                            start + 1
                        )
                    })?;
                unsafe { ffi::lua_pushnumber(l, n) };
                Ok(())
            }
            _ => Err(self.bad_tok("value")),
        }
    }
    fn string(&mut self) -> Result<Vec<u8>, String> {
        // lua-cjson reports escape errors at the first character after the opening quote.
        let start = self.i;
        let esc =
            |what: &str| format!("Expected value but found {what} at character {}", start + 2);
        let hex4 = |s: &[u8], at: usize| {
            s.get(at..at + 4)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u32::from_str_radix(h, 16).ok())
        };
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.s.get(self.i) {
                None => {
                    return Err(format!(
                        "Expected value but found unexpected end of string at character {}",
                        self.i + 1
                    ))
                }
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let c = *self
                        .s
                        .get(self.i + 1)
                        .ok_or_else(|| esc("invalid escape code"))?;
                    self.i += 2;
                    match c {
                        b'"' | b'\\' | b'/' => out.push(c),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let bad = || esc("invalid unicode escape code");
                            let hex = hex4(self.s, self.i).ok_or_else(bad)?;
                            self.i += 4;
                            let mut cp = hex;
                            if (0xDC00..0xE000).contains(&hex) {
                                return Err(bad());
                            }
                            if (0xD800..0xDC00).contains(&hex) {
                                if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                                    return Err(bad());
                                }
                                let lo = hex4(self.s, self.i + 2)
                                    .filter(|lo| (0xDC00..0xE000).contains(lo))
                                    .ok_or_else(bad)?;
                                cp = 0x10000 + ((hex - 0xD800) << 10) + (lo - 0xDC00);
                                self.i += 6;
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(esc("invalid escape code")),
                    }
                }
                Some(&c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
}
