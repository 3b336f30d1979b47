//! The `struct` library Redis embeds (Roberto Ierusalimschy's lua_struct 0.2 with Redis'
//! hardening): `struct.pack(fmt, ...)`, `struct.unpack(fmt, data [, pos])` and
//! `struct.size(fmt)`. Redisson's rate limiter and map cache pack binary values with it, so
//! the encodings, alignment rules and error texts follow Redis 7.0.15 byte for byte.
//!
//! Format: `<` little / `>` big endian (native = little, as on the x86-64/arm64 builds
//! Redis ships), `![n]` max alignment (default 8), `b B h H l L T i[n] I[n]` integers
//! (lower case signed), `f d` floats, `c[n]` fixed string (`c0` = whole string / size taken
//! from the previous unpacked number), `s` zero-terminated string, `x` one pad byte, space
//! ignored. There is no `=` option in this version: it is an invalid format option.

use mlua::{Lua, MultiValue, Table, Value};

/// Largest integer size accepted by `i[n]` / `I[n]`.
const MAXINTSIZE: usize = 32;
/// `!` without a number: the platform's maximum alignment (8 on 64-bit builds).
const MAXALIGN: usize = 8;
/// Lua 5.1's LUAI_MAXCSTACK: `unpack` refuses to push more results than this.
const MAXCSTACK: usize = 8000;

/// Registers `struct` in `g` (sandbox.rs makes it read-only with the other libraries).
pub fn install(lua: &Lua, g: &Table) -> mlua::Result<()> {
    type Prim = fn(&Lua, &MultiValue) -> mlua::Result<MultiValue>;
    let reg = |f: Prim| {
        lua.create_function(move |lua, a: MultiValue| f(lua, &a).map_err(|e| plain(lua, e)))
    };
    let t = lua.create_table()?;
    t.set(
        "pack",
        reg(|lua, a| Ok(MultiValue::from_iter([Value::String(pack(lua, a)?)])))?,
    )?;
    t.set("unpack", reg(unpack)?)?;
    t.set(
        "size",
        reg(|lua, a| Ok(MultiValue::from_iter([Value::Number(size(lua, a)?)])))?,
    )?;
    g.raw_set("struct", t)
}

/// `lua.create_function` for library functions: their runtime errors are raised the way
/// `luaL_error` raises them (see [`plain`]).
pub(crate) fn lib_fn<A, R, F>(lua: &Lua, f: F) -> mlua::Result<mlua::Function>
where
    A: mlua::FromLuaMulti,
    R: mlua::IntoLuaMulti,
    F: Fn(&Lua, A) -> mlua::Result<R> + mlua::MaybeSend + 'static,
{
    lua.create_function(move |lua, a: A| f(lua, a).map_err(|e| plain(lua, e)))
}

/// Turns our message into what `luaL_error` raises in C: a plain string (the `\x02` mark
/// tells bridge.rs' error conversion not to build an error table, so `pcall` yields
/// `false, "msg"`) prefixed with `luaL_where(L, 1)`, the position of the calling Lua code
/// (empty when the caller is a C function such as `pcall`).
pub(crate) fn plain(lua: &Lua, e: mlua::Error) -> mlua::Error {
    match e {
        mlua::Error::RuntimeError(m) => {
            let at = lua
                .inspect_stack(1, |d| {
                    let line = d.current_line()?;
                    let src = d.source().short_src?.into_owned();
                    Some(format!("{src}:{line}: "))
                })
                .flatten()
                .unwrap_or_default();
            mlua::Error::RuntimeError(format!("\x02{at}{m}"))
        }
        e => e,
    }
}

/// Endianness and maximum alignment, reset at the start of every format.
struct Header {
    little: bool,
    align: usize,
}

impl Header {
    fn new() -> Header {
        Header {
            little: true,
            align: 1,
        }
    }
}

/// `luaL_error` with a plain message.
fn err(msg: String) -> mlua::Error {
    mlua::Error::runtime(msg)
}

/// `luaL_argerror`: "bad argument #n to 'name' (msg)", the name being the one Lua's debug
/// info gives the running function (`?` when called through pcall and the like).
pub(crate) fn argerr(lua: &Lua, n: usize, msg: &str) -> mlua::Error {
    let name = lua
        .inspect_stack(0, |d| d.names().name.map(|s| s.into_owned()))
        .flatten()
        .unwrap_or_else(|| "?".to_string());
    err(format!("bad argument #{n} to '{name}' ({msg})"))
}

/// Lua's type name of argument `i` (1-based), "no value" past the end.
pub(crate) fn typename(a: &MultiValue, i: usize) -> &'static str {
    match a.get(i - 1) {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Number(_)) | Some(Value::Integer(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        _ => "userdata",
    }
}

/// `luaL_checknumber` on argument `i` (1-based).
fn check_number(lua: &Lua, a: &MultiValue, i: usize) -> mlua::Result<f64> {
    let v = a.get(i - 1).cloned().unwrap_or(Value::Nil);
    match lua.coerce_number(v)? {
        Some(n) => Ok(n),
        None => Err(argerr(
            lua,
            i,
            &format!("number expected, got {}", typename(a, i)),
        )),
    }
}

/// `luaL_checklstring` on argument `i` (1-based); numbers are converted as Lua does.
pub(crate) fn check_string(lua: &Lua, a: &MultiValue, i: usize) -> mlua::Result<Vec<u8>> {
    let v = a.get(i - 1).cloned().unwrap_or(Value::Nil);
    match v {
        Value::String(_) | Value::Number(_) | Value::Integer(_) => {}
        _ => {
            return Err(argerr(
                lua,
                i,
                &format!("string expected, got {}", typename(a, i)),
            ))
        }
    }
    match lua.coerce_string(v)? {
        Some(s) => Ok(s.as_bytes().to_vec()),
        None => Err(argerr(
            lua,
            i,
            &format!("string expected, got {}", typename(a, i)),
        )),
    }
}

/// Reads an optional decimal number at `fmt[*i..]`, `df` when there is none; refuses
/// values past INT_MAX like Redis' patched getnum.
fn getnum(fmt: &[u8], i: &mut usize, df: usize) -> mlua::Result<usize> {
    if *i >= fmt.len() || !fmt[*i].is_ascii_digit() {
        return Ok(df);
    }
    let max = i32::MAX as i64;
    let mut a: i64 = 0;
    while *i < fmt.len() && fmt[*i].is_ascii_digit() {
        let d = (fmt[*i] - b'0') as i64;
        if a > max / 10 || a * 10 > max - d {
            return Err(err("integral size overflow".into()));
        }
        a = a * 10 + d;
        *i += 1;
    }
    Ok(a as usize)
}

/// Size in bytes of option `opt` (0 for options that take no room or need no alignment).
fn optsize(opt: u8, fmt: &[u8], i: &mut usize) -> mlua::Result<usize> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'x' => 1,
        b'c' => getnum(fmt, i, 1)?,
        b'i' | b'I' => {
            let sz = getnum(fmt, i, 4)?;
            if sz > MAXINTSIZE {
                return Err(err(format!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                )));
            }
            sz
        }
        _ => 0,
    })
}

/// Padding needed before an item of `size` bytes at offset `len`.
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size.wrapping_sub(len & (size - 1))) & (size - 1)
}

/// Endianness/alignment options; anything else is an invalid format option.
fn controloptions(
    lua: &Lua,
    opt: u8,
    fmt: &[u8],
    i: &mut usize,
    h: &mut Header,
) -> mlua::Result<()> {
    match opt {
        b' ' => Ok(()),
        b'>' => {
            h.little = false;
            Ok(())
        }
        b'<' => {
            h.little = true;
            Ok(())
        }
        b'!' => {
            let a = getnum(fmt, i, MAXALIGN)?;
            if a == 0 || a & (a - 1) != 0 {
                return Err(err(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
            Ok(())
        }
        _ => Err(argerr(
            lua,
            1,
            &format!("invalid format option '{}'", opt as char),
        )),
    }
}

fn pack(lua: &Lua, a: &MultiValue) -> mlua::Result<mlua::LuaString> {
    let fmt = check_string(lua, a, 1)?;
    // The C code pushes a nil marker after the arguments, so a missing value reads "nil".
    let mut marked = a.clone();
    marked.push_back(Value::Nil);
    let a = &marked;
    let mut h = Header::new();
    let mut arg = 2;
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, &fmt, &mut i)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(lua, a, arg)?;
                arg += 1;
                // C casts: negative numbers through the signed type, others directly;
                // out-of-range values give what x86-64 conversions give Redis.
                let mut value: u64 = if n.is_nan() {
                    1 << 63
                } else if n < 0.0 {
                    n as i64 as u64
                } else if n >= 18446744073709551616.0 {
                    0
                } else {
                    n as u64
                };
                let mut buf = vec![0u8; size];
                for k in 0..size {
                    let idx = if h.little { k } else { size - 1 - k };
                    buf[idx] = (value & 0xff) as u8;
                    value = value.checked_shr(8).unwrap_or(0);
                }
                out.extend_from_slice(&buf);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(lua, a, arg)? as f32;
                arg += 1;
                if h.little {
                    out.extend_from_slice(&f.to_le_bytes());
                } else {
                    out.extend_from_slice(&f.to_be_bytes());
                }
            }
            b'd' => {
                let d = check_number(lua, a, arg)?;
                arg += 1;
                if h.little {
                    out.extend_from_slice(&d.to_le_bytes());
                } else {
                    out.extend_from_slice(&d.to_be_bytes());
                }
            }
            b'c' | b's' => {
                let s = check_string(lua, a, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(argerr(lua, arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => controloptions(lua, opt, &fmt, &mut i, &mut h)?,
        }
    }
    lua.create_string(&out)
}

/// Reads a `size`-byte integer; signed formats sign-extend from the top bit.
fn getinteger(buf: &[u8], little: bool, signed: bool) -> f64 {
    let size = buf.len();
    let mut l: u64 = 0;
    for k in 0..size {
        let b = if little { buf[size - 1 - k] } else { buf[k] };
        l = (l << 8) | b as u64;
    }
    if !signed || size == 0 {
        return l as f64;
    }
    // x86 masks the shift count, which is what the C code gets for sizes above 8.
    let mask = u64::MAX << ((size * 8 - 1) & 63);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

fn unpack(lua: &Lua, a: &MultiValue) -> mlua::Result<MultiValue> {
    let fmt = check_string(lua, a, 1)?;
    let data = check_string(lua, a, 2)?;
    let ld = data.len();
    let mut pos: usize = match a.get(2) {
        None | Some(Value::Nil) => 1,
        Some(_) => check_number(lua, a, 3)? as i64 as usize,
    };
    if pos == 0 {
        return Err(argerr(lua, 3, "offset must be 1 or greater"));
    }
    pos -= 1;
    let nargs = a.len();
    let mut h = Header::new();
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, &fmt, &mut i)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(argerr(lua, 2, "data string too short"));
        }
        if nargs + out.len() + 2 > MAXCSTACK {
            return Err(err("stack overflow (too many results)".into()));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                out.push(Value::Number(getinteger(
                    &data[pos..pos + size],
                    h.little,
                    signed,
                )));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                let f = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                out.push(Value::Number(f as f64));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                let d = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                out.push(Value::Number(d));
            }
            b'c' => {
                if size == 0 {
                    let prev = match out.last() {
                        Some(v) => lua.coerce_number(v.clone())?,
                        None => None,
                    };
                    let Some(n) = prev else {
                        return Err(err("format 'c0' needs a previous size".into()));
                    };
                    size = n as usize;
                    out.pop();
                    if !(size <= ld && pos <= ld - size) {
                        return Err(argerr(lua, 2, "data string too short"));
                    }
                }
                out.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(e) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(err("unfinished string in data".into()));
                };
                out.push(Value::String(lua.create_string(&data[pos..pos + e])?));
                size = e + 1;
            }
            _ => controloptions(lua, opt, &fmt, &mut i, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    out.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(out.into_iter().collect())
}

fn size(lua: &Lua, a: &MultiValue) -> mlua::Result<f64> {
    let fmt = check_string(lua, a, 1)?;
    let mut h = Header::new();
    let mut pos: usize = 0;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let size = optsize(opt, &fmt, &mut i)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(argerr(lua, 1, "option 's' has no fixed size"));
        } else if opt == b'c' && size == 0 {
            return Err(argerr(lua, 1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(lua, opt, &fmt, &mut i, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos as f64)
}
