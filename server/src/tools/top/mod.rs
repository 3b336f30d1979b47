//! `tumbler top [--host H] [--port P] [-a PASSWORD] [-n DB] [--interval MS]`: a live view
//! of the locks on a server.
//!
//! Native locks, semaphores and read-write locks (LOCK.LIST, LOCK.INFO) and the Redisson
//! lock hashes it recognises (`lockcore::engine::locks::redisson`), with holders, tokens, TTLs and waiters, most
//! contended first. Redraws on every refresh and on terminal resize; `q` quits.

pub mod collect;
pub mod reply;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use clap::Parser;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row as TRow, Table};
use ratatui::Frame;
use tumbler_client::Client;

use collect::Row;
use reply::call;

#[derive(Parser, Debug)]
#[command(
    name = "tumbler top",
    about = "A live view of the locks on a server, most contended first; q quits",
    // -h is --host, as in redis-cli; help is --help only.
    disable_help_flag = true,
    // An option given twice takes its last value.
    args_override_self = true
)]
struct Opts {
    /// The server's host.
    #[arg(short = 'h', long, default_value = "127.0.0.1")]
    host: String,
    /// The server's port.
    #[arg(short = 'p', long, default_value_t = 6379)]
    port: u16,
    /// Sent with AUTH before anything else.
    #[arg(short = 'a', long)]
    password: Option<String>,
    /// The database shown (SELECT).
    #[arg(short = 'n', long, default_value_t = 0)]
    db: u32,
    /// Milliseconds between refreshes (at least 50).
    #[arg(long, value_name = "MS", default_value_t = 500)]
    interval: u64,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

impl Opts {
    fn interval(&self) -> Duration {
        Duration::from_millis(self.interval.max(50))
    }
}

/// A TCP connection as top and `tumbler bench`'s administrative connection make it: at
/// most 2 s to connect and 5 s per reply (so a refresh never hangs the screen), Nagle off.
pub fn tcp(host: &str, port: u16) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))?;
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

fn connect(o: &Opts) -> Result<Client, String> {
    let tcp = tcp(&o.host, o.port).map_err(|e| format!("{}:{}: {e}", o.host, o.port))?;
    let mut c = Client::from_tcp(tcp);
    let mut check = |args: &[&str]| -> Result<(), String> {
        match call(&mut c, args) {
            Ok(reply::Frame::Error(e)) => Err(e),
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    };
    if let Some(p) = &o.password {
        check(&["AUTH", p])?;
    }
    check(&["SELECT", &o.db.to_string()])?;
    check(&["CLIENT", "SETNAME", "tumbler-top"])?;
    Ok(c)
}

/// Everything on screen.
struct View {
    rows: Vec<Row>,
    error: Option<String>,
    refreshed: Option<Instant>,
}

fn refresh(c: &mut Client) -> std::io::Result<Vec<Row>> {
    let mut rows = collect::native(c)?;
    rows.extend(collect::redisson_locks(c)?);
    collect::sort_by_contention(&mut rows);
    Ok(rows)
}

fn ttl(ms: i64) -> String {
    match ms {
        t if t < 0 => "session".into(),
        t if t < 10_000 => format!("{:.1}s", t as f64 / 1000.0),
        t => format!("{}s", t / 1000),
    }
}

fn draw(f: &mut Frame, o: &Opts, v: &View) {
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let held = v.rows.len();
    let waiting: i64 = v.rows.iter().map(|r| r.waiters).sum();
    let status = match &v.error {
        Some(e) => format!("error: {e}"),
        None => format!("{held} locks held, {waiting} waiters"),
    };
    f.render_widget(
        Paragraph::new(format!(
            "tumbler top  {}:{} db{}  {status}",
            o.host, o.port, o.db
        ))
        .style(Style::new().add_modifier(Modifier::BOLD)),
        head,
    );
    let header = TRow::new(["KEY", "TYPE", "WAITERS", "TTL", "HOLDER", "HOLDS", "TOKEN"])
        .style(Style::new().add_modifier(Modifier::REVERSED));
    let rows = v.rows.iter().map(|r| {
        let owners: Vec<Line> = r
            .holders
            .iter()
            .map(|h| Line::raw(h.owner.clone()))
            .collect();
        let holds: Vec<Line> = r
            .holders
            .iter()
            .map(|h| Line::raw(h.holds.clone()))
            .collect();
        let tokens: Vec<Line> = r
            .holders
            .iter()
            .map(|h| Line::raw(h.token.map_or("-".into(), |t| t.to_string())))
            .collect();
        let height = r.holders.len().max(1) as u16;
        TRow::new(vec![
            Cell::from(r.key.clone()),
            Cell::from(r.kind.clone()),
            Cell::from(r.waiters.to_string()),
            Cell::from(ttl(r.ttl_ms())),
            Cell::from(owners),
            Cell::from(holds),
            Cell::from(tokens),
        ])
        .height(height)
    });
    // TYPE and TOKEN are as wide as their widest entry (fencing tokens start from the wall
    // clock in µs, docs/locking.md: 16 digits), so KEY and HOLDER get the rest.
    let widest = |it: &mut dyn Iterator<Item = usize>, header: &str| {
        it.max().unwrap_or(0).max(header.len()) as u16
    };
    let type_w = widest(&mut v.rows.iter().map(|r| r.kind.len()), "TYPE");
    let token_w = widest(
        &mut v
            .rows
            .iter()
            .flat_map(|r| &r.holders)
            .map(|h| h.token.map_or(1, |t| t.to_string().len())),
        "TOKEN",
    );
    let table = Table::new(
        rows,
        [
            Constraint::Fill(3),
            Constraint::Length(type_w),
            Constraint::Length(7),
            Constraint::Length(8),
            Constraint::Fill(3),
            Constraint::Length(5),
            Constraint::Length(token_w + 1),
        ],
    )
    .header(header)
    .block(Block::bordered().title(" locks, most contended first "));
    f.render_widget(table, body);
    let age = v.refreshed.map_or(String::new(), |t| {
        format!("  refreshed {} ms ago", t.elapsed().as_millis())
    });
    f.render_widget(Paragraph::new(format!("q quit{age}")), foot);
}

/// Runs the view until `q`; returns the process exit status.
pub fn run(args: &[String]) -> i32 {
    let argv = std::iter::once("tumbler top".to_string()).chain(args.iter().cloned());
    let o = match Opts::try_parse_from(argv) {
        Ok(o) => o,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    // Fail before taking over the terminal if the server is not there.
    let mut client = match connect(&o) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("tumbler top: {e}");
            return 1;
        }
    };
    let mut terminal = ratatui::init();
    let mut view = View {
        rows: Vec::new(),
        error: None,
        refreshed: None,
    };
    let mut due = Instant::now();
    let result = loop {
        if Instant::now() >= due {
            due = Instant::now() + o.interval();
            if client.is_none() {
                client = connect(&o).map_err(|e| view.error = Some(e)).ok();
            }
            if let Some(c) = client.as_mut() {
                match refresh(c) {
                    Ok(rows) => {
                        view.rows = rows;
                        view.error = None;
                        view.refreshed = Some(Instant::now());
                    }
                    Err(e) => {
                        view.error = Some(e.to_string());
                        client = None;
                    }
                }
            }
        }
        if let Err(e) = terminal.draw(|f| draw(f, &o, &view)) {
            break Err(e);
        }
        let wait = due
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(250));
        match event::poll(wait) {
            Ok(true) => match event::read() {
                Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c {
                        break Ok(());
                    }
                }
                // Resize: the next draw lays out for the new size (ratatui autoresizes).
                Ok(_) => {}
                Err(e) => break Err(e),
            },
            Ok(false) => {}
            Err(e) => break Err(e),
        }
    };
    ratatui::restore();
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("tumbler top: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Opts, clap::Error> {
        Opts::try_parse_from(std::iter::once("tumbler top").chain(args.iter().copied()))
    }

    #[test]
    fn defaults() {
        let o = parse(&[]).unwrap();
        assert_eq!((o.host.as_str(), o.port, o.db), ("127.0.0.1", 6379, 0));
        assert_eq!(o.password, None);
        assert_eq!(o.interval(), Duration::from_millis(500));
    }

    #[test]
    fn short_and_long_options() {
        let o = parse(&["-h", "db1", "-p", "7000", "-a", "pw", "-n", "3"]).unwrap();
        assert_eq!((o.host.as_str(), o.port, o.db), ("db1", 7000, 3));
        assert_eq!(o.password.as_deref(), Some("pw"));
        let o = parse(&[
            "--host",
            "db2",
            "--port",
            "7001",
            "--password",
            "x",
            "--db",
            "4",
            "--interval",
            "100",
        ])
        .unwrap();
        assert_eq!((o.host.as_str(), o.port, o.db), ("db2", 7001, 4));
        assert_eq!(o.password.as_deref(), Some("x"));
        assert_eq!(o.interval(), Duration::from_millis(100));
        // The last of a repeated option wins; the interval is at least 50 ms.
        let o = parse(&["--port", "1", "--port", "2", "--interval", "10"]).unwrap();
        assert_eq!(o.port, 2);
        assert_eq!(o.interval(), Duration::from_millis(50));
    }

    #[test]
    fn help_and_mistakes() {
        use clap::error::ErrorKind;
        assert_eq!(
            parse(&["--help"]).unwrap_err().kind(),
            ErrorKind::DisplayHelp
        );
        let help = parse(&["--help"]).unwrap_err().to_string();
        for opt in ["--host", "--port", "--password", "--db", "--interval"] {
            assert!(help.contains(opt), "{help}");
        }
        for bad in [
            &["--port", "x"][..],
            &["--port", "70000"],
            &["--db", "-1"],
            &["--interval", "soon"],
            &["--port"],
            &["extra"],
            &["--verbose"],
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.use_stderr(), "{bad:?}");
        }
    }
}
