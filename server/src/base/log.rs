//! The log, as redis-server writes it: `pid:role dd Mon yyyy HH:MM:SS.mmm <level> message`,
//! to stdout when `logfile` is empty and appended to the file when it is set.
//!
//! Launchers start a server and read what it prints: npm `redis-server` and
//! `redis-memory-server` wait for `Ready to accept connections` on stdout, Redis' own test
//! suite for ` PID: <pid>` in the banner, Testcontainers for its log regex. So the format,
//! the destination and the words are part of the contract, and this module keeps them in one
//! place. The rest of the server logs with `tracing` macros; their levels map to Redis':
//! `warn!`/`error!` are warning (`#`), `info!` notice (`*`), `debug!` verbose (`-`) and
//! `trace!` debug (`.`).
//!
//! The role character is Redis': `C` until the server is initialised (Redis writes its first
//! lines before `initServer` sets the pid it compares against), then `M`.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

static ROLE: AtomicU8 = AtomicU8::new(b'C');
/// The log file when `logfile` is set; stdout otherwise.
static FILE: OnceLock<Mutex<std::fs::File>> = OnceLock::new();
/// Redis' verbosity, 0 (debug) to 3 (warning), 4 for `nothing`: what raw lines obey.
static VERBOSITY: AtomicU8 = AtomicU8::new(2);

/// Marks the server initialised: from here on lines carry role `M`, as Redis' do after
/// `initServer`.
pub fn set_initialised() {
    ROLE.store(b'M', Ordering::Relaxed);
}

/// Where log lines go; one `write` per line, so lines from several threads never mix. A
/// failed write is dropped, as Redis drops it: a closed stdout must not stop the server or
/// fill stderr with complaints.
pub struct Sink;

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let _ = match FILE.get() {
            Some(f) => f.lock().unwrap_or_else(|e| e.into_inner()).write_all(buf),
            None => {
                let mut out = io::stdout().lock();
                out.write_all(buf).and_then(|()| out.flush())
            }
        };
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `loglevel` (debug, verbose, notice, warning, nothing) as Redis' number.
fn verbosity(loglevel: &str) -> u8 {
    match loglevel {
        "debug" => 0,
        "verbose" => 1,
        "warning" => 3,
        "nothing" => 4,
        _ => 2,
    }
}

/// Installs the logger: Redis' format, to `logfile` (already opened) or stdout, at
/// `loglevel`; `discard` (a daemon without a log file, whose stdout Redis points at
/// /dev/null before its first line) writes nothing. `RUST_LOG` still overrides the filter,
/// for debugging Tumbler itself.
pub fn init(loglevel: &str, logfile: Option<std::fs::File>, discard: bool) {
    let v = if discard { 4 } else { verbosity(loglevel) };
    VERBOSITY.store(v, Ordering::Relaxed);
    if let Some(f) = logfile {
        let _ = FILE.set(Mutex::new(f));
    }
    let level = ["trace", "debug", "info", "warn", "off"][v as usize];
    // Only Tumbler's own crates at the chosen level: a dependency's debug output (rustls,
    // tokio) is not part of Redis' log.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("warn,tumbler={level},lockcore={level}"))
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| Sink)
        .with_ansi(false)
        .event_format(RedisFormat)
        .init();
}

/// `27 Nov 2026 14:35:07.006` in local time, as Redis' `%d %b %Y %H:%M:%S.` plus
/// milliseconds.
fn timestamp(out: &mut impl fmt::Write) -> fmt::Result {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes only into `tm`, which lives on this stack frame.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&secs, &mut tm) };
    write!(
        out,
        "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
        tm.tm_mday,
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis()
    )
}

/// Redis' level character for a `tracing` level.
fn level_char(l: &Level) -> char {
    match *l {
        Level::ERROR | Level::WARN => '#',
        Level::INFO => '*',
        Level::DEBUG => '-',
        Level::TRACE => '.',
    }
}

struct RedisFormat;

impl<S, N> FormatEvent<S, N> for RedisFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(
            w,
            "{}:{} ",
            std::process::id(),
            ROLE.load(Ordering::Relaxed) as char
        )?;
        timestamp(&mut w)?;
        write!(w, " {} ", level_char(event.metadata().level()))?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// Whether log lines go nowhere (see [`init`]).
pub fn discarded() -> bool {
    VERBOSITY.load(Ordering::Relaxed) == 4
}

/// Writes `text` as it is (Redis' `LL_RAW`: the banner) at notice level.
pub fn raw(text: &str) {
    if VERBOSITY.load(Ordering::Relaxed) <= 2 {
        let _ = Sink.write_all(text.as_bytes());
    }
}

/// The line Redis' signal handler writes, in its own shape:
/// `pid:signal-handler (unixtime) Received SIGTERM scheduling shutdown...`.
pub fn from_signal_handler(msg: &str) {
    if VERBOSITY.load(Ordering::Relaxed) <= 3 {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let line = format!("{}:signal-handler ({secs}) {msg}\n", std::process::id());
        let _ = Sink.write_all(line.as_bytes());
    }
}

/// The startup banner, shown where Redis shows its ASCII logo (stdout is a terminal and no
/// log file, or `always-show-logo yes`); otherwise Redis' one line `Running mode=..., port=...`.
/// Redis' own test suite waits for the banner's ` PID: <pid>` line.
/// `persona` is the personality the banner names (`Redis 8.0.2 compatible`).
pub fn banner(
    show_logo: bool,
    mode: &str,
    port: u16,
    persona: &lockcore::personality::Personality,
) {
    if !show_logo {
        tracing::info!("Running mode={mode}, port={port}.");
        return;
    }
    let v = format!(
        "{} {}",
        if persona.is_valkey() {
            "Valkey"
        } else {
            "Redis"
        },
        persona.version
    );
    let t = env!("CARGO_PKG_VERSION");
    let pid = std::process::id();
    raw(&format!(
        "\n\
         \x20   _____               _     _\n\
         \x20  |_   _|   _ _ __ ___ | |__ | | ___ _ __     Tumbler {t} ({v} compatible) 64 bit\n\
         \x20    | || | | | '_ ` _ \\| '_ \\| |/ _ \\ '__|\n\
         \x20    | || |_| | | | | | | |_) | |  __/ |       Running in {mode} mode\n\
         \x20    |_| \\__,_|_| |_| |_|_.__/|_|\\___|_|       Port: {port}\n\
         \x20                                              PID: {pid}\n\n"
    ));
}

/// What `--version` and `-v` print: redis-server's line, with the version Tumbler is
/// compatible with as `v=` (launchers such as pytest-redis parse it), and Tumbler's own
/// name and version after it.
pub fn version_line() -> String {
    format!(
        "Redis server v={} sha=00000000:0 malloc=libc bits={} build={} tumbler={}",
        crate::base::consts::REDIS_VERSION,
        usize::BITS,
        build_id(),
        env!("CARGO_PKG_VERSION")
    )
}

/// A build id in the shape of Redis' (16 hex digits): a hash of the version and the target,
/// stable for a given release.
fn build_id() -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    let id = format!("{}-{}", env!("CARGO_PKG_VERSION"), std::env::consts::ARCH);
    for b in id.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}
