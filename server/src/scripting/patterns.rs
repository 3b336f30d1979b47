//! A depth bound for Lua 5.1's pattern matcher, and a range bound for `unpack`.
//!
//! `string.find`, `match`, `gmatch` and `gsub` match patterns with a C function that
//! recurses once per quantified item (`?`, `*`, `+`, `-`) and has no depth limit in Lua 5.1:
//! `string.find(s, string.rep('a?', 300000))` overflows any thread's stack (Redis 7.0
//! crashes too, a little later: its main thread has 8 MB). Lua 5.2 added a limit and the
//! error "pattern too complex"; we refuse patterns with more than [`MAX_QUANTIFIERS`]
//! quantifier characters with that error. The recursion is then at most about
//! 10,000 frames of `match` (well under 1 MiB), whatever thread runs the script.
//!
//! The four functions are replaced by C closures around the originals. A wrapper frame
//! changes what the originals report about where they were called from, so errors are
//! fixed up to read as without it: library errors get the script's `user_script:<line>: `
//! prefix, and argument errors the function's name (and the method-call argument shift)
//! as the script's call site gives them. Everything else passes through unchanged.

use mlua::{ffi, Lua};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

/// Quantifier characters a pattern may hold; a longer pattern is checked, then refused.
pub const MAX_QUANTIFIERS: usize = 10_000;

/// Replaces the pattern functions of the `string` table of `lua` (before it is protected).
pub fn install(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: plain C API use on the state's own stack; the closures follow the C function
    // contract (see `guard`).
    unsafe {
        lua.exec_raw::<()>((), |l| {
            ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"string".as_ptr());
            for name in [c"find", c"match", c"gmatch", c"gsub"] {
                ffi::lua_getfield(l, -1, name.as_ptr());
                ffi::lua_pushstring(l, name.as_ptr());
                ffi::lua_pushcclosure(l, guard, 2);
                ffi::lua_setfield(l, -2, name.as_ptr());
            }
            ffi::lua_settop(l, 0);
            ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"unpack".as_ptr());
            ffi::lua_pushstring(l, c"unpack".as_ptr());
            ffi::lua_pushcclosure(l, guard, 2);
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, c"unpack".as_ptr());
        })
    }
}

/// Messages the string library raises with `luaL_error` (no position, behind our frame).
const LIB_ERRORS: &[&str] = &[
    "malformed pattern",
    "missing '[' after '%f' in pattern",
    "unbalanced pattern",
    "invalid capture index",
    "invalid pattern capture",
    "unfinished capture",
    "too many captures",
    "invalid replacement value",
    "too many results to unpack",
];

/// Lua 5.1.5's `unpack` computes its result count in an `int` that overflows for huge
/// ranges (and then corrupts the heap); Redis patches it to refuse them. A range of more
/// than 8000 values cannot fit Lua's stack anyway, so the guard refuses it with the same
/// error before the original runs; smaller ranges get the original's own stack check.
unsafe fn unpack_too_big(l: *mut ffi::lua_State) -> bool {
    if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
        return false;
    }
    let int_arg = |idx: c_int, default: i64| -> i64 {
        if ffi::lua_type(l, idx) == ffi::LUA_TNUMBER {
            // luaL_checkint: lua_Number to lua_Integer, then a C (int) truncation.
            ffi::lua_tonumber(l, idx) as i64 as i32 as i64
        } else {
            default
        }
    };
    let i = int_arg(2, 1);
    let e = int_arg(3, ffi::lua_objlen(l, 1) as i64);
    e >= i && e - i >= 8000
}

unsafe fn is_plain_find(l: *mut ffi::lua_State, name: &[u8]) -> bool {
    name == b"find" && ffi::lua_gettop(l) >= 4 && ffi::lua_toboolean(l, 4) != 0
}

/// The C closure: upvalue 1 is the original function, upvalue 2 its name.
unsafe extern "C-unwind" fn guard(l: *mut ffi::lua_State) -> c_int {
    let name = CStr::from_ptr(ffi::lua_tostring(l, ffi::lua_upvalueindex(2))).to_bytes();
    if name == b"unpack" {
        if unpack_too_big(l) {
            ffi::luaL_where(l, 1);
            ffi::lua_pushstring(l, c"too many results to unpack".as_ptr());
            ffi::lua_concat(l, 2);
            ffi::lua_error(l);
        }
    } else if ffi::lua_type(l, 2) == ffi::LUA_TSTRING && !is_plain_find(l, name) {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, 2, &mut len);
        if len > MAX_QUANTIFIERS {
            let pat = std::slice::from_raw_parts(p as *const u8, len);
            let n = pat
                .iter()
                .filter(|&&c| matches!(c, b'?' | b'*' | b'+' | b'-'))
                .count();
            if n > MAX_QUANTIFIERS {
                ffi::luaL_where(l, 1);
                ffi::lua_pushstring(l, c"pattern too complex".as_ptr());
                ffi::lua_concat(l, 2);
                ffi::lua_error(l);
            }
        }
    }
    let nargs = ffi::lua_gettop(l);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_insert(l, 1);
    if ffi::lua_pcall(l, nargs, ffi::LUA_MULTRET, 0) == 0 {
        return ffi::lua_gettop(l);
    }
    if ffi::lua_type(l, -1) == ffi::LUA_TSTRING {
        fix_message(l);
    }
    ffi::lua_error(l)
}

/// Rewrites the error message on top of the stack as the original would have raised it
/// when called directly by the script.
unsafe fn fix_message(l: *mut ffi::lua_State) {
    let msg = CStr::from_ptr(ffi::lua_tostring(l, -1)).to_bytes().to_vec();
    let text = String::from_utf8_lossy(&msg).into_owned();
    let fixed = if let Some(rest) = text.strip_prefix("bad argument #") {
        // "bad argument #N to '?' (extra)": the original could not see its own name.
        let Some((num, tail)) = rest.split_once(" to '?' (") else {
            return;
        };
        let Ok(mut narg) = num.parse::<i64>() else {
            return;
        };
        let extra = tail.strip_suffix(')').unwrap_or(tail);
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        let (mut fname, mut method) = ("?".to_string(), false);
        if ffi::lua_getstack(l, 0, &mut ar) != 0 && ffi::lua_getinfo(l, c"n".as_ptr(), &mut ar) != 0
        {
            if !ar.name.is_null() {
                fname = cstr(ar.name);
            }
            method = !ar.namewhat.is_null() && cstr(ar.namewhat) == "method";
        }
        if method {
            narg -= 1;
            if narg == 0 {
                format!("calling '{fname}' on bad self ({extra})")
            } else {
                format!("bad argument #{narg} to '{fname}' ({extra})")
            }
        } else {
            format!("bad argument #{narg} to '{fname}' ({extra})")
        }
    } else if LIB_ERRORS.iter().any(|p| text.starts_with(p)) {
        text.clone()
    } else {
        return;
    };
    ffi::lua_pop(l, 1);
    ffi::luaL_where(l, 1);
    ffi::lua_pushlstring(l, fixed.as_ptr() as *const c_char, fixed.len());
    drop(fixed);
    drop(text);
    drop(msg);
    ffi::lua_concat(l, 2);
}

unsafe fn cstr(p: *const c_char) -> String {
    CStr::from_ptr(p).to_string_lossy().into_owned()
}
