//! `cmsgpack.pack(...)` / `cmsgpack.unpack(s)` with lua-cmsgpack's encoding choices
//! (smallest integer format, float when exact, arrays for 1..n tables, nesting limit 16).

use mlua::{Lua, MultiValue, Table, Value};

use super::lua_struct::{argerr, check_string, lib_fn};

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
    t.set(
        "unpack",
        lib_fn(lua, |lua, a: MultiValue| {
            let b = check_string(lua, &a, 1)?;
            let mut i = 0;
            let mut out = MultiValue::new();
            while i < b.len() {
                out.push_back(decode(lua, &b, &mut i)?);
            }
            Ok(out)
        })?,
    )?;
    // unpack_limit(s, limit, offset) -> next offset (-1 at the end), then up to `limit`
    // values; unpack_one(s, offset) is unpack_limit(s, 1, offset).
    let limit = lib_fn(
        lua,
        |lua, (s, limit, offset): (mlua::LuaString, i64, Option<i64>)| {
            unpack_limit(lua, &s.as_bytes(), limit, offset.unwrap_or(0))
        },
    )?;
    t.set("unpack_limit", limit)?;
    t.set(
        "unpack_one",
        lib_fn(lua, |lua, (s, offset): (mlua::LuaString, Option<i64>)| {
            unpack_limit(lua, &s.as_bytes(), 1, offset.unwrap_or(0))
        })?,
    )?;
    g.raw_set("cmsgpack", t)
}

fn unpack_limit(lua: &Lua, b: &[u8], limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    if offset < 0 || offset as usize > b.len() {
        return Err(mlua::Error::runtime(
            "Start offset greater than input length.",
        ));
    }
    let mut i = offset as usize;
    let mut vals = MultiValue::new();
    let mut n = 0;
    while i < b.len() && (limit <= 0 || n < limit) {
        vals.push_back(decode(lua, b, &mut i)?);
        n += 1;
    }
    let next = if i >= b.len() { -1.0 } else { i as f64 };
    vals.push_front(Value::Number(next));
    Ok(vals)
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

fn take<'a>(b: &'a [u8], i: &mut usize, n: usize) -> mlua::Result<&'a [u8]> {
    let s = b
        .get(*i..*i + n)
        .ok_or_else(|| mlua::Error::runtime("Missing bytes in input."))?;
    *i += n;
    Ok(s)
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, &x| (a << 8) | x as u64)
}

fn decode(lua: &Lua, b: &[u8], i: &mut usize) -> mlua::Result<Value> {
    let c = take(b, i, 1)?[0];
    let num = |n: f64| Ok(Value::Number(n));
    match c {
        0x00..=0x7f => num(c as f64),
        0xe0..=0xff => num(c as i8 as f64),
        0xc0 => Ok(Value::Nil),
        0xc2 => Ok(Value::Boolean(false)),
        0xc3 => Ok(Value::Boolean(true)),
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
        0xa0..=0xbf | 0xd9 | 0xda | 0xdb | 0xc4 | 0xc5 | 0xc6 => {
            let n = match c {
                0xa0..=0xbf => (c & 0x1f) as usize,
                0xd9 | 0xc4 => be(take(b, i, 1)?) as usize,
                0xda | 0xc5 => be(take(b, i, 2)?) as usize,
                _ => be(take(b, i, 4)?) as usize,
            };
            Ok(Value::String(lua.create_string(take(b, i, n)?)?))
        }
        0x90..=0x9f | 0xdc | 0xdd => {
            let n = match c {
                0x90..=0x9f => (c & 0x0f) as usize,
                0xdc => be(take(b, i, 2)?) as usize,
                _ => be(take(b, i, 4)?) as usize,
            };
            let t = lua.create_table()?;
            for k in 1..=n {
                t.raw_set(k, decode(lua, b, i)?)?;
            }
            Ok(Value::Table(t))
        }
        0x80..=0x8f | 0xde | 0xdf => {
            let n = match c {
                0x80..=0x8f => (c & 0x0f) as usize,
                0xde => be(take(b, i, 2)?) as usize,
                _ => be(take(b, i, 4)?) as usize,
            };
            let t = lua.create_table()?;
            for _ in 0..n {
                let k = decode(lua, b, i)?;
                let v = decode(lua, b, i)?;
                if !k.is_nil() {
                    t.raw_set(k, v)?;
                }
            }
            Ok(Value::Table(t))
        }
        _ => Err(mlua::Error::runtime("Bad data format in input.")),
    }
}
