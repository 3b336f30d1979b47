//! `tumbler bench --profile`: the script profiler (server/src/scripting/profile.rs,
//! docs/profiling.md) switched on for the run, and its per-line table printed per script.
//!
//! The hook is these names and two calls: `CONFIG SET lua-profiler yes` (and `RESET`)
//! before the first round, `TUMBLER.PROFILE GET <sha>` after the last, then the switch
//! back off. A server without the profiler (redis-server) answers the CONFIG SET with an
//! error, which is printed; the run goes on.

use super::target::Admin;
use crate::tools::top::reply::{self, Frame};

pub const PARAM: &str = "lua-profiler";
pub const GET: &[&str] = &["TUMBLER.PROFILE", "GET"];
pub const RESET: &[&str] = &["TUMBLER.PROFILE", "RESET"];

/// Forgets earlier profiles and switches the profiler on; the line to print.
pub fn switch_on(a: &mut Admin) -> String {
    let _ = a.call(RESET);
    match a.call(&["CONFIG", "SET", PARAM, "yes"]) {
        Ok(_) => format!("profile: {}: CONFIG SET {PARAM} yes: OK", a.url),
        Err(e) => format!("profile: {}: CONFIG SET {PARAM} yes: {e}", a.url),
    }
}

/// The per-line table of each script in `shas`, then the profiler switched off.
pub fn report(a: &mut Admin, shas: &[String]) -> String {
    let mut out = String::new();
    for sha in shas {
        let mut cmd: Vec<&str> = GET.to_vec();
        cmd.push(sha);
        out.push_str(&format!("\nprofile of {sha} on {}:\n", a.url));
        match a.call(&cmd) {
            Ok(f) => out.push_str(&render(&f)),
            Err(e) => out.push_str(&format!("  {} GET: {e}\n", GET[0])),
        }
    }
    let _ = a.call(&["CONFIG", "SET", PARAM, "no"]);
    out
}

fn int(f: Option<&&Frame>) -> i64 {
    f.and_then(|f| reply::int(f)).unwrap_or(0)
}

/// Renders `TUMBLER.PROFILE GET`'s reply (RESP2: maps as name, value pairs): per script and
/// path, its totals, interpreter against command time, and its lines, busiest first.
pub fn render(f: &Frame) -> String {
    let Frame::Array(entries) = f else {
        return format!("  {}\n", reply::text(f));
    };
    if entries.is_empty() {
        return "  (no profile: the script did not run while the profiler was on)\n".into();
    }
    let mut out = String::new();
    for e in entries {
        let m = reply::pairs(e);
        let get = |k: &str| m.iter().find(|(n, _)| n == k).map(|(_, v)| v);
        let usec = int(get("usec"));
        let calls = int(get("calls"));
        let interp = int(get("interpreter_usec"));
        let cmd = int(get("command_usec"));
        out.push_str(&format!(
            "  path {}: {calls} calls, {usec} us ({:.2} us/call): interpreter {interp} us, commands {cmd} us\n",
            get("path").map_or(String::new(), |p| reply::text(p)),
            usec as f64 / calls.max(1) as f64,
        ));
        out.push_str(&format!(
            "  {:>5} {:>9} {:>10} {:>12} {:>6}  source\n",
            "line", "hits", "usec", "command_usec", "%time"
        ));
        if let Some(Frame::Array(lines)) = get("lines").copied() {
            for l in lines {
                let lm = reply::pairs(l);
                let g = |k: &str| lm.iter().find(|(n, _)| n == k).map(|(_, v)| v);
                let lu = int(g("usec"));
                out.push_str(&format!(
                    "  {:>5} {:>9} {:>10} {:>12} {:>5.1}%  {}\n",
                    int(g("line")),
                    int(g("hits")),
                    lu,
                    int(g("command_usec")),
                    100.0 * lu as f64 / usec.max(1) as f64,
                    g("source").map_or(String::new(), |s| reply::text(s)).trim()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Frame {
        Frame::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn renders_lines_busiest_first_as_sent() {
        // The reply shape of TUMBLER.PROFILE GET over RESP2.
        let line = |n: i64, hits: i64, us: i64, cmd: i64, src: &str| {
            Frame::Array(vec![
                b("line"),
                Frame::Integer(n),
                b("hits"),
                Frame::Integer(hits),
                b("usec"),
                Frame::Integer(us),
                b("command_usec"),
                Frame::Integer(cmd),
                b("source"),
                b(src),
            ])
        };
        let reply = Frame::Array(vec![Frame::Array(vec![
            b("sha"),
            b(&"a".repeat(40)),
            b("path"),
            b("lua"),
            b("calls"),
            Frame::Integer(10),
            b("usec"),
            Frame::Integer(100),
            b("interpreter_usec"),
            Frame::Integer(30),
            b("command_usec"),
            Frame::Integer(70),
            b("lines"),
            Frame::Array(vec![
                line(2, 10, 80, 70, "redis.call('hset', KEYS[1], 'f', 1)"),
                line(1, 10, 20, 0, "local x = 1"),
            ]),
        ])]);
        let s = render(&reply);
        assert!(
            s.contains(
                "path lua: 10 calls, 100 us (10.00 us/call): interpreter 30 us, commands 70 us"
            ),
            "{s}"
        );
        let busiest = s.lines().position(|l| l.contains("hset")).unwrap();
        let other = s.lines().position(|l| l.contains("local x")).unwrap();
        assert!(busiest < other);
        assert!(s.contains(" 80.0%  redis.call"), "{s}");
        assert!(render(&Frame::Array(vec![])).contains("no profile"));
    }
}
