//! The servers a bench runs against: `redis://[user:pass@]host:port[/db]` URLs (and
//! `rediss://`, TLS, server/src/tools/bench/tls.rs), the
//! administrative connection (AUTH, SELECT, SCRIPT LOAD, INFO) and the Tumbler the bench
//! starts itself when no URL is given.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use super::tls::TlsTarget;
use tumbler_client::Client;

use crate::tools::top::reply::{self, call, Frame};

/// One `--url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    pub db: u32,
    /// `rediss://`.
    pub tls: bool,
}

impl Target {
    /// Parses `redis[s]://[[user]:pass@]host[:port][/db]`.
    pub fn parse(url: &str) -> Result<Target, String> {
        let bad = |why: &str| format!("bad URL \"{url}\": {why}");
        let (rest, tls) = if let Some(r) = url.strip_prefix("redis://") {
            (r, false)
        } else if let Some(r) = url.strip_prefix("rediss://") {
            (r, true)
        } else {
            return Err(bad(
                "expected redis://[user:pass@]host:port[/db] or rediss://...",
            ));
        };
        let (auth, hostpart) = match rest.rsplit_once('@') {
            Some((a, h)) => (Some(a), h),
            None => (None, rest),
        };
        let (hostport, db) = match hostpart.split_once('/') {
            Some((h, "")) => (h, 0),
            Some((h, d)) => (
                h,
                d.parse()
                    .map_err(|_| bad("the database must be a number"))?,
            ),
            None => (hostpart, 0),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, p) = v6.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
            (h.to_string(), p.strip_prefix(':').unwrap_or(""))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p),
                None => (hostport.to_string(), ""),
            }
        };
        let port = if port.is_empty() {
            6379
        } else {
            port.parse().map_err(|_| bad("the port must be a number"))?
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some(("", p)) => (None, Some(p.to_string())),
                Some((u, p)) => (Some(u.to_string()), Some(p.to_string())),
                None => (None, Some(a.to_string())),
            },
        };
        Ok(Target {
            host,
            port,
            user,
            password,
            db,
            tls,
        })
    }

    /// The URL as shown in reports: the password masked.
    pub fn display(&self) -> String {
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (None, Some(_)) => ":***@".to_string(),
            _ => String::new(),
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let db = if self.db == 0 {
            String::new()
        } else {
            format!("/{}", self.db)
        };
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://{auth}{host}:{}{db}", self.port)
    }

    /// The commands a new connection sends first: AUTH and SELECT as the URL asks.
    pub fn handshake(&self) -> Vec<Vec<String>> {
        let mut v = Vec::new();
        match (&self.user, &self.password) {
            (Some(u), Some(p)) => v.push(vec!["AUTH".into(), u.clone(), p.clone()]),
            (None, Some(p)) => v.push(vec!["AUTH".into(), p.clone()]),
            _ => {}
        }
        if self.db != 0 {
            v.push(vec!["SELECT".into(), self.db.to_string()]);
        }
        v
    }

    /// An administrative connection, handshake done (`tls` for a `rediss://` URL). The
    /// error is one line for the user.
    pub fn admin(&self, tls: Option<&TlsTarget>) -> Result<Admin, String> {
        let url = self.display();
        let tcp = crate::tools::top::tcp(&self.host, self.port)
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        let mut c = match tls {
            None => Client::from_tcp(tcp),
            Some(t) => Client::from_tls(t.wrap_blocking(tcp).map_err(|e| format!("{url}: {e}"))?),
        };
        for cmd in self.handshake() {
            match call(&mut c, &cmd) {
                Ok(Frame::Error(e)) => return Err(format!("{url}: {} failed: {e}", cmd[0])),
                Ok(_) => {}
                Err(e) => {
                    let e = super::tls::describe(&e);
                    return Err(format!("{url}: {} failed: {e}", cmd[0]));
                }
            }
        }
        // A server that wants a password we were not given says so on the first command.
        match call(&mut c, &["PING"]) {
            Ok(Frame::Error(e)) => return Err(format!("{url}: {e}")),
            Err(e) => return Err(format!("{url}: PING failed: {}", super::tls::describe(&e))),
            Ok(_) => {}
        }
        Ok(Admin { c, url })
    }
}

/// One administrative connection to a target.
pub struct Admin {
    c: Client,
    pub url: String,
}

impl Admin {
    /// Sends a command; an error reply becomes `Err` with the server's text.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Frame, String> {
        match call(&mut self.c, args) {
            Ok(Frame::Error(e)) => Err(e),
            Ok(f) => Ok(f),
            Err(e) => Err(format!("{}: {e}", self.url)),
        }
    }

    /// `SCRIPT LOAD`; the SHA.
    pub fn script_load(&mut self, src: &str) -> Result<String, String> {
        match self.call(&["SCRIPT", "LOAD", src]) {
            Ok(f) => Ok(reply::text(&f)),
            Err(e) => Err(format!("{}: SCRIPT LOAD failed: {e}", self.url)),
        }
    }

    /// What the server says it is, from INFO server: `tumbler 0.1.0` or `redis 7.0.15`.
    pub fn identity(&mut self) -> String {
        let Ok(f) = self.call(&["INFO", "server"]) else {
            return String::new();
        };
        let info = reply::text(&f);
        let field = |k: &str| {
            info.lines()
                .find_map(|l| l.trim_end().strip_prefix(k)?.strip_prefix(':'))
                .map(str::to_string)
        };
        match (field("tumbler_version"), field("redis_version")) {
            (Some(v), _) => format!("tumbler {v}"),
            (None, Some(v)) => format!("redis {v}"),
            _ => String::new(),
        }
    }

    /// The counters a round reads before and after.
    pub fn stats(&mut self) -> Result<ServerStats, String> {
        let f = self
            .call(&["INFO", "cpu", "stats", "commandstats"])
            .map_err(|e| format!("{}: INFO failed: {e}", self.url))?;
        Ok(ServerStats::parse(&reply::text(&f)))
    }
}

/// What INFO says about the work a server did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerStats {
    /// `used_cpu_sys + used_cpu_user`, seconds.
    pub cpu_s: f64,
    pub total_commands: u64,
    /// `cmdstat_<name>` calls, by lowercase name; empty if the section is.
    pub cmdstats: Vec<(String, u64)>,
}

impl ServerStats {
    pub fn parse(info: &str) -> ServerStats {
        let mut s = ServerStats::default();
        for line in info.lines() {
            let Some((k, v)) = line.trim_end().split_once(':') else {
                continue;
            };
            match k {
                "used_cpu_sys" | "used_cpu_user" => s.cpu_s += v.parse::<f64>().unwrap_or(0.0),
                "total_commands_processed" => s.total_commands = v.parse().unwrap_or(0),
                _ => {
                    if let Some(name) = k.strip_prefix("cmdstat_") {
                        let calls = v
                            .split(',')
                            .find_map(|f| f.strip_prefix("calls="))
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(0);
                        s.cmdstats.push((name.to_ascii_lowercase(), calls));
                    }
                }
            }
        }
        s
    }

    fn cmd_calls(&self, names: &[String]) -> Option<u64> {
        if self.cmdstats.is_empty() {
            return None;
        }
        Some(
            self.cmdstats
                .iter()
                .filter(|(n, _)| names.contains(n))
                .map(|(_, c)| c)
                .sum(),
        )
    }
}

/// The calls a server saw between two snapshots, and where the figure came from: the
/// workload's commands in INFO commandstats when the server keeps them, else
/// `total_commands_processed` (which also counts the bench's own INFO calls, a handful).
pub fn calls_between(
    before: &ServerStats,
    after: &ServerStats,
    names: &[String],
) -> (u64, &'static str) {
    if let (Some(b), Some(a)) = (before.cmd_calls(names), after.cmd_calls(names)) {
        if a > b {
            return (a - b, "commandstats");
        }
    }
    (
        after.total_commands.saturating_sub(before.total_commands),
        "total_commands_processed",
    )
}

/// A Tumbler the bench started itself (the current executable, `--port 0`), stopped on drop.
///
/// A child process rather than the embedding API: INFO's `used_cpu_*` is the whole
/// process's CPU, so a server inside the bench's own process would be charged the client's
/// work too.
pub struct OwnServer {
    child: Child,
    pub port: u16,
}

impl OwnServer {
    pub fn start() -> Result<OwnServer, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find tumbler: {e}"))?;
        let mut child = Command::new(exe)
            .args([
                "--port",
                "0",
                "--bind",
                "127.0.0.1",
                "--loglevel",
                "warning",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start tumbler: {e}"))?;
        let out = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let port = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("port="))
            .and_then(|p| p.parse().ok());
        match port {
            Some(port) => Ok(OwnServer { child, port }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("tumbler did not start: {line:?}"))
            }
        }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = Target::parse("redis://127.0.0.1:7000").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.db), ("127.0.0.1", 7000, 0));
        let t = Target::parse("redis://alice:secret@localhost:6380/2").unwrap();
        assert_eq!(t.user.as_deref(), Some("alice"));
        assert_eq!(t.password.as_deref(), Some("secret"));
        assert_eq!(t.db, 2);
        assert_eq!(t.display(), "redis://alice:***@localhost:6380/2");
        let t = Target::parse("redis://:pw@h").unwrap();
        assert_eq!(
            (t.user, t.password.as_deref(), t.port),
            (None, Some("pw"), 6379)
        );
        let t = Target::parse("rediss://:pw@localhost:6380/1").unwrap();
        assert!(t.tls);
        assert_eq!(t.display(), "rediss://:***@localhost:6380/1");
        let t = Target::parse("redis://[::1]:7000").unwrap();
        assert!(!t.tls);
        assert_eq!((t.host.as_str(), t.port), ("::1", 7000));
        for bad in [
            "http://x",
            "redis://h:port",
            "redis://h:1/x",
            "redis://",
            "rediss://",
            "redis:/h:1",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_info() {
        let s = ServerStats::parse(
            "# CPU\r\nused_cpu_sys:1.5\r\nused_cpu_user:2.25\r\n# Stats\r\ntotal_commands_processed:10\r\n# Commandstats\r\ncmdstat_evalsha:calls=7,usec=3,usec_per_call=0.4,rejected_calls=0,failed_calls=0\r\ncmdstat_info:calls=2,usec=1\r\n",
        );
        assert_eq!(s.cpu_s, 3.75);
        assert_eq!(s.total_commands, 10);
        let mut after = s.clone();
        after.cmdstats[0].1 = 17;
        after.total_commands = 30;
        assert_eq!(
            calls_between(&s, &after, &["evalsha".into()]),
            (10, "commandstats")
        );
        let empty = ServerStats::default();
        let later = ServerStats {
            total_commands: 5,
            ..ServerStats::default()
        };
        assert_eq!(
            calls_between(&empty, &later, &["get".into()]),
            (5, "total_commands_processed")
        );
    }
}
