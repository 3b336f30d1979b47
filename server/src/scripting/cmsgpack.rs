//! `cmsgpack.pack(...)` / `cmsgpack.unpack(s)` with lua-cmsgpack's encoding choices
//! (smallest integer format, float when exact, arrays for 1..n tables, nesting limit 16).

use mlua::{ffi, Lua, MultiValue, Table, Value};
use std::os::raw::c_int;

use super::lua_struct::{argerr, lib_fn};

const MAX_NESTING: usize = 16;

/// Registers `cmsgpack` in `g`.
pub fn install(lua: &Lua, g: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set(
        "pack",
        lib_fn(lua, |lua, a: MultiValue| {
            if a.is_empty() {
                return Err(argerr(lua, 0, "MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for v in a.iter() {
                encode(v, &mut out, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    // The decoders are plain C functions: they build the values on the Lua stack, as
    // lua-cmsgpack does, so Lua's own stack limit bounds nesting and result counts with
    // Redis' errors, and no value passes through an mlua reference.
    // SAFETY: each follows the C API contract (see `unpack_full`).
    unsafe {
        t.set("unpack", lua.create_c_function(unpack)?)?;
        t.set("unpack_one", lua.create_c_function(unpack_one)?)?;
        t.set("unpack_limit", lua.create_c_function(unpack_limit)?)?;
    }
    g.raw_set("cmsgpack", t)
}

fn encode(v: &Value, out: &mut Vec<u8>, depth: usize) -> mlua::Result<()> {
    match v {
        Value::Nil => out.push(0xc0),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => int(*i, out),
        Value::Number(n) => {
            if n.fract() == 0.0 && n.is_finite() && n.abs() < 9.2e18 {
                int(*n as i64, out)
            } else if (*n as f32) as f64 == *n {
                out.push(0xca);
                out.extend_from_slice(&(*n as f32).to_be_bytes());
            } else {
                out.push(0xcb);
                out.extend_from_slice(&n.to_be_bytes());
            }
        }
        Value::String(s) => {
            let b = s.as_bytes();
            let n = b.len();
            if n < 32 {
                out.push(0xa0 | n as u8);
            } else if n <= 0xff {
                out.extend_from_slice(&[0xd9, n as u8]);
            } else if n <= 0xffff {
                out.push(0xda);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            } else {
                out.push(0xdb);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
            out.extend_from_slice(&b);
        }
        Value::Table(t) if depth < MAX_NESTING => {
            let mut count = 0usize;
            let mut max = 0usize;
            let mut array = true;
            for (k, _) in t.pairs::<Value, Value>().flatten() {
                count += 1;
                match k {
                    Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => max = max.max(n as usize),
                    Value::Integer(i) if i >= 1 => max = max.max(i as usize),
                    _ => array = false,
                }
            }
            if array && max == count {
                header(count, 0x90, 0xdc, out);
                for i in 1..=count {
                    let v: Value = t.raw_get(i)?;
                    encode(&v, out, depth + 1)?;
                }
            } else {
                header(count, 0x80, 0xde, out);
                for (k, v) in t.pairs::<Value, Value>().flatten() {
                    encode(&k, out, depth + 1)?;
                    encode(&v, out, depth + 1)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

/// Array/map header: fix form below 16, else the 16- or 32-bit form.
fn header(n: usize, fix: u8, b16: u8, out: &mut Vec<u8>) {
    if n < 16 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b16 + 1);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn int(i: i64, out: &mut Vec<u8>) {
    if i >= 0 {
        if i < 128 {
            out.push(i as u8);
        } else if i <= 0xff {
            out.extend_from_slice(&[0xcc, i as u8]);
        } else if i <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(i as u16).to_be_bytes());
        } else if i <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(i as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(i as u64).to_be_bytes());
        }
    } else if i >= -32 {
        out.push(i as i8 as u8);
    } else if i >= -128 {
        out.extend_from_slice(&[0xd0, i as i8 as u8]);
    } else if i >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(i as i16).to_be_bytes());
    } else if i >= -2147483648 {
        out.push(0xd2);
        out.extend_from_slice(&(i as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&i.to_be_bytes());
    }
}

/// Why decoding stopped: lua-cmsgpack's MP_CUR_ERROR_EOF / MP_CUR_ERROR_BADFMT, or a
/// failed `luaL_checkstack` with its message.
enum MpErr {
    Eof,
    BadFormat,
    Stack(&'static str),
}

fn take<'a>(b: &'a [u8], i: &mut usize, n: usize) -> Result<&'a [u8], MpErr> {
    let s = b.get(*i..*i + n).ok_or(MpErr::Eof)?;
    *i += n;
    Ok(s)
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, &x| (a << 8) | x as u64)
}

/// lua-cmsgpack's mp_decode_to_lua_type: decodes one value at `b[*i..]` and pushes it. The
/// `luaL_checkstack` calls sit where lua-cmsgpack has them, so a deep or long input ends
/// with Redis' "stack overflow (...)" error once Lua's stack limit (LUAI_MAXCSTACK, 8000
/// slots) is reached, instead of growing without bound.
unsafe fn decode(l: *mut ffi::lua_State, b: &[u8], i: &mut usize) -> Result<(), MpErr> {
    let c = *b.get(*i).ok_or(MpErr::Eof)?;
    if ffi::lua_checkstack(l, 1) == 0 {
        return Err(MpErr::Stack(
            "too many return values at once; use unpack_one or unpack_limit instead.",
        ));
    }
    *i += 1;
    let num = |n: f64| {
        ffi::lua_pushnumber(l, n);
        Ok(())
    };
    match c {
        0x00..=0x7f => num(c as f64),
        0xe0..=0xff => num(c as i8 as f64),
        0xc0 => {
            ffi::lua_pushnil(l);
            Ok(())
        }
        0xc2 | 0xc3 => {
            ffi::lua_pushboolean(l, (c == 0xc3) as c_int);
            Ok(())
        }
        0xcc => num(be(take(b, i, 1)?) as f64),
        0xcd => num(be(take(b, i, 2)?) as f64),
        0xce => num(be(take(b, i, 4)?) as f64),
        0xcf => num(be(take(b, i, 8)?) as f64),
        0xd0 => num(take(b, i, 1)?[0] as i8 as f64),
        0xd1 => num(be(take(b, i, 2)?) as u16 as i16 as f64),
        0xd2 => num(be(take(b, i, 4)?) as u32 as i32 as f64),
        0xd3 => num(be(take(b, i, 8)?) as i64 as f64),
        0xca => num(f32::from_bits(be(take(b, i, 4)?) as u32) as f64),
        0xcb => num(f64::from_bits(be(take(b, i, 8)?))),
        0xa0..=0xbf | 0xd9 | 0xda | 0xdb => {
            let n = match c {
                0xa0..=0xbf => (c & 0x1f) as usize,
                0xd9 => be(take(b, i, 1)?) as usize,
                0xda => be(take(b, i, 2)?) as usize,
                _ => be(take(b, i, 4)?) as usize,
            };
            let s = take(b, i, n)?;
            ffi::lua_pushlstring(l, s.as_ptr() as *const _, s.len());
            Ok(())
        }
        0x90..=0x9f | 0xdc | 0xdd => {
            let n = match c {
                0x90..=0x9f => (c & 0x0f) as u64,
                0xdc => be(take(b, i, 2)?),
                _ => be(take(b, i, 4)?),
            };
            ffi::lua_createtable(l, 0, 0);
            if ffi::lua_checkstack(l, 1) == 0 {
                return Err(MpErr::Stack("in function mp_decode_to_lua_array"));
            }
            for k in 1..=n {
                ffi::lua_pushnumber(l, k as f64);
                decode(l, b, i)?;
                ffi::lua_rawset(l, -3);
            }
            Ok(())
        }
        0x80..=0x8f | 0xde | 0xdf => {
            let n = match c {
                0x80..=0x8f => (c & 0x0f) as u64,
                0xde => be(take(b, i, 2)?),
                _ => be(take(b, i, 4)?),
            };
            ffi::lua_createtable(l, 0, 0);
            for _ in 0..n {
                decode(l, b, i)?;
                decode(l, b, i)?;
                // A nil or NaN key cannot index a table: the pair is dropped.
                let t = ffi::lua_type(l, -2);
                let k = ffi::lua_tonumber(l, -2);
                if t == ffi::LUA_TNIL || (t == ffi::LUA_TNUMBER && k.is_nan()) {
                    ffi::lua_pop(l, 2);
                } else {
                    ffi::lua_rawset(l, -3);
                }
            }
            Ok(())
        }
        _ => Err(MpErr::BadFormat),
    }
}

/// Raises `msg` as `luaL_error` does: a string with the calling line's position. Called as
/// the last step of a C function, when no Rust value with a destructor is alive.
unsafe fn raise(l: *mut ffi::lua_State, msg: &str) -> c_int {
    ffi::luaL_where(l, 1);
    ffi::lua_pushlstring(l, msg.as_ptr() as *const _, msg.len());
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

/// lua-cmsgpack's mp_unpack_full: decodes up to `limit` values from `offset` of the string
/// argument; unless it decodes everything (limit and offset 0), the next offset (-1 at the
/// end) comes first.
unsafe fn unpack_full(l: *mut ffi::lua_State, mut limit: i64, offset: i64) -> c_int {
    let mut len = 0usize;
    // Raises (before any Rust value exists) if the argument is not a string.
    let p = ffi::luaL_checklstring(l, 1, &mut len);
    let b = std::slice::from_raw_parts(p as *const u8, len);
    let msg = if offset < 0 || limit < 0 {
        format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32, len as i32
        )
    } else if offset as u64 > len as u64 {
        format!(
            "Start offset {} greater than input length {}.",
            offset as i32, len as i32
        )
    } else {
        let decode_all = limit == 0 && offset == 0;
        if decode_all {
            limit = i32::MAX as i64;
        }
        let mut i = offset as usize;
        let mut cnt: c_int = 0;
        let mut err = None;
        while i < len && (cnt as i64) < limit {
            if let Err(e) = decode(l, b, &mut i) {
                err = Some(e);
                break;
            }
            cnt += 1;
        }
        match err {
            None if decode_all => return cnt,
            None => {
                if ffi::lua_checkstack(l, 1) == 0 {
                    ffi::lua_settop(l, 1);
                    return raise(l, "stack overflow (in function mp_unpack_full)");
                }
                ffi::lua_pushnumber(l, if i >= len { -1.0 } else { i as f64 });
                ffi::lua_insert(l, 2);
                return cnt + 1;
            }
            Some(MpErr::Eof) => "Missing bytes in input.".to_string(),
            Some(MpErr::BadFormat) => "Bad data format in input.".to_string(),
            Some(MpErr::Stack(m)) => format!("stack overflow ({m})"),
        }
    };
    // Drop what was decoded: the stack may be full, and the message needs room.
    ffi::lua_settop(l, 1);
    ffi::lua_pushlstring(l, msg.as_ptr() as *const _, msg.len());
    drop(msg);
    ffi::luaL_where(l, 1);
    ffi::lua_insert(l, -2);
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

unsafe extern "C-unwind" fn unpack(l: *mut ffi::lua_State) -> c_int {
    unpack_full(l, 0, 0)
}

unsafe extern "C-unwind" fn unpack_one(l: *mut ffi::lua_State) -> c_int {
    let offset = ffi::luaL_optinteger(l, 2, 0) as i64;
    ffi::lua_settop(l, 1);
    unpack_full(l, 1, offset)
}

unsafe extern "C-unwind" fn unpack_limit(l: *mut ffi::lua_State) -> c_int {
    let limit = ffi::luaL_checkinteger(l, 2) as i64;
    let offset = ffi::luaL_optinteger(l, 3, 0) as i64;
    ffi::lua_settop(l, 1);
    unpack_full(l, limit, offset)
}
