//! RDB files (docs/rdb.md): SAVE, BGSAVE, SHUTDOWN SAVE and DEBUG RELOAD write
//! `dir`/`dbfilename`; `TUMBLER.RDB SAVE` returns the file instead and `TUMBLER.RDB LOAD`
//! replaces the keyspace with one; start-up reads the file when `dir` or `dbfilename` was
//! given. The format is lockcore's (`storage::rdb::file`); this module takes the keyspace
//! lock's snapshot, writes files as Redis does (a temp file, then a rename) and installs
//! what was read.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use lockcore::storage::rdb::file;
use lockcore::storage::value::Value;
use lockcore::{error, Reply};

use crate::base::consts::REDIS_VERSION;
use crate::config::key;
use crate::conn::Conn;
use crate::state::{core, Core, Shared};

crate::server_command!(["save"], |c, g, _, _| save_command(&c.shared, core(g)));
crate::server_command!(["bgsave"], |c, g, _, a| bgsave(&c.shared, core(g), a));
crate::server_command!(["tumbler.rdb"], |c, g, spec, a| tumbler_rdb(
    c,
    core(g),
    spec.name,
    a
));

fn unix_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// `dir`/`dbfilename` (`dir` empty: the working directory).
pub fn rdb_path(shared: &Shared) -> PathBuf {
    path_of(&shared.config.read())
}

fn path_of(cfg: &crate::config::Config) -> PathBuf {
    let dir = cfg.get(key::DIR);
    let dir = if dir.is_empty() { "." } else { dir };
    Path::new(dir).join(cfg.get(key::DBFILENAME))
}

/// The whole keyspace and the function libraries as an RDB file, under the keyspace lock.
pub fn snapshot(shared: &Shared, core: &mut Core) -> file::Saved {
    let (compress, checksum, lru) = {
        let cfg = shared.config.read();
        (
            cfg.get_bool(key::RDBCOMPRESSION),
            cfg.get_bool(key::RDBCHECKSUM),
            cfg.get(key::MAXMEMORY_POLICY).ends_with("-lru"),
        )
    };
    let functions = crate::scripting::library_codes(core);
    let o = file::SaveOptions {
        list_fill: core.engine.config.list_max_listpack_size,
        compress,
        checksum,
        redis_ver: REDIS_VERSION,
        ctime: unix_secs(),
        used_mem: crate::state::memory::used_memory(),
        lru,
        lfu: core.engine.config.lfu,
        now: core.engine.now_ms(),
        lfu_decay_time: core.engine.config.lfu_decay_time,
        rdb_version: core.engine.config.personality.rdb_version(),
    };
    file::write(&core.engine.dbs, &functions, &o)
}

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` as Redis does: a temp file in the same directory, flushed to
/// disk, then renamed over the target, so a reader never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let name = format!(
        "temp-{}-{}.rdb",
        std::process::id(),
        TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let tmp = dir.map_or_else(|| PathBuf::from(&name), |d| d.join(&name));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn is_lock(v: &Value) -> bool {
    matches!(v, Value::Lock(_))
}

fn log_skipped(saved: &file::Saved) {
    if saved.skipped_locks > 0 {
        tracing::info!(
            "{} native lock keys not saved (locks are live connection state)",
            saved.skipped_locks
        );
    }
}

/// A save finished: LASTSAVE and INFO move on.
fn note_saved(core: &mut Core, dirty_at_snapshot: u64) {
    let p = &mut core.engine.persist;
    p.last_save = unix_secs();
    p.dirty_at_save = dirty_at_snapshot;
    p.saves += 1;
}

/// The nodes of a multi-node process share one config, so each would write the same
/// file: they write none.
const SHARED_FILE: &str = "a node of a multi-node process (nodes > 1) has no RDB file of its own";

fn multi_node(shared: &Shared) -> bool {
    shared.cluster.as_ref().is_some_and(|t| t.nodes.len() > 1)
}

/// SAVE (and what SHUTDOWN SAVE and DEBUG RELOAD write): the file, synchronously.
pub fn save(shared: &Shared, core: &mut Core) -> Result<file::Saved, String> {
    if multi_node(shared) {
        return Err(SHARED_FILE.into());
    }
    let saved = snapshot(shared, core);
    let path = rdb_path(shared);
    if let Err(e) = write_atomic(&path, &saved.bytes) {
        tracing::warn!("Failed saving the DB to {}: {e}", path.display());
        return Err(e.to_string());
    }
    let dirty = core.engine.stats.dirty;
    note_saved(core, dirty);
    log_skipped(&saved);
    tracing::info!("DB saved on disk");
    Ok(saved)
}

fn save_command(shared: &Shared, core: &mut Core) -> Reply {
    if core.engine.persist.bgsave_in_progress {
        return Reply::err("ERR Background save already in progress");
    }
    match save(shared, core) {
        Ok(_) => Reply::ok(),
        Err(e) => Reply::err(format!("ERR Error saving the DB: {e}")),
    }
}

/// BGSAVE [SCHEDULE]: the snapshot is taken under the keyspace lock; a thread writes it.
fn bgsave(shared: &Arc<Shared>, core: &mut Core, a: &[Bytes]) -> Reply {
    let schedule = match a.len() {
        1 => false,
        2 if a[1].eq_ignore_ascii_case(b"schedule") => true,
        _ => return error::syntax(),
    };
    if multi_node(shared) {
        return Reply::err(format!("ERR {SHARED_FILE}"));
    }
    if core.engine.persist.bgsave_in_progress {
        if schedule {
            core.engine.persist.bgsave_scheduled = true;
            return Reply::simple("Background saving scheduled");
        }
        return Reply::err("ERR Background save already in progress");
    }
    start_bgsave(shared, core);
    Reply::simple("Background saving started")
}

fn start_bgsave(shared: &Arc<Shared>, core: &mut Core) {
    let saved = snapshot(shared, core);
    let dirty = core.engine.stats.dirty;
    core.engine.persist.bgsave_in_progress = true;
    core.engine.persist.bgsave_started_ms = unix_ms();
    tracing::info!("Background saving started");
    let path = rdb_path(shared);
    let shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("bgsave".into())
        .spawn(move || bgsave_thread(shared, path, saved, dirty));
    if let Err(e) = spawned {
        tracing::warn!("Can't start the background save: {e}");
        core.engine.persist.bgsave_in_progress = false;
        core.engine.persist.last_bgsave_ok = false;
    }
}

fn bgsave_thread(shared: Arc<Shared>, path: PathBuf, saved: file::Saved, dirty: u64) {
    let result = write_atomic(&path, &saved.bytes);
    let mut core = shared.lock_core_blocking();
    let core = &mut *core;
    let p = &mut core.engine.persist;
    p.bgsave_in_progress = false;
    p.last_bgsave_secs = (unix_ms() - p.bgsave_started_ms).max(0) / 1000;
    match result {
        Ok(()) => {
            p.last_bgsave_ok = true;
            note_saved(core, dirty);
            log_skipped(&saved);
            tracing::info!("DB saved on disk");
            tracing::info!("Background saving terminated with success");
        }
        Err(e) => {
            p.last_bgsave_ok = false;
            tracing::warn!("Background saving error: {}: {e}", path.display());
        }
    }
    if std::mem::take(&mut core.engine.persist.bgsave_scheduled) {
        start_bgsave(&shared, core);
    }
}

/// SHUTDOWN SAVE: `Err` (and no shutdown) if the file could not be written.
pub fn shutdown_save(shared: &Shared) -> Result<(), String> {
    let mut core = shared.lock_core_blocking();
    tracing::info!("Saving the final RDB snapshot before exiting.");
    save(shared, &mut core).map(|_| ())
}

/// What loading a file did.
pub struct Loaded {
    pub keys: usize,
    pub expired: usize,
    /// The file's aux fields (`redis-ver`, `ctime`...).
    pub aux: Vec<(Bytes, Bytes)>,
}

/// What a load does with the keyspace it finds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LoadMode {
    /// Every db and the function libraries are replaced, as Redis' loading into an empty
    /// server (TUMBLER.RDB LOAD, start-up).
    Replace,
    /// DEBUG RELOAD: every key but the native locks (live connection state, not in the
    /// file) is replaced; so are the libraries.
    KeepLocks,
    /// DEBUG RELOAD NOFLUSH: the file's keys and libraries replace same-named ones.
    Merge,
}

/// Installs an RDB file's contents (see [`LoadMode`]). The whole file is parsed and its
/// libraries checked first, so on `Err` nothing has changed. A file key named as a live
/// native lock leaves the lock alone.
pub fn load_bytes(
    shared: &Shared,
    core: &mut Core,
    bytes: &[u8],
    mode: LoadMode,
) -> Result<Loaded, String> {
    let now = core.engine.now_ms();
    let dbs = core.engine.dbs.len();
    let contents = file::read(bytes, now, &core.engine.config, dbs)?;
    crate::scripting::check_libraries(core, &contents.functions)?;
    let eng = &mut core.engine;
    match mode {
        LoadMode::Replace => {
            for db in 0..dbs {
                lockcore::commands::server_cmds::flush_db(eng, db);
            }
            eng.tracking.flush();
        }
        LoadMode::KeepLocks => {
            for db in 0..dbs {
                let keys: Vec<Bytes> = eng.dbs[db]
                    .iter()
                    .filter(|(_, e)| !is_lock(&e.value))
                    .map(|(k, _)| Bytes::copy_from_slice(k))
                    .collect();
                for k in &keys {
                    eng.dbs[db].remove(k);
                    eng.touch_watched(db, k);
                }
                eng.stats.dirty += keys.len() as u64;
            }
            eng.tracking.flush();
        }
        LoadMode::Merge => {}
    }
    let lfu = eng.config.lfu;
    let mut keys = 0;
    let mut lock_names = 0;
    for k in contents.keys {
        if eng.dbs[k.db].get(&k.key).is_some_and(|e| is_lock(&e.value)) {
            lock_names += 1;
            continue;
        }
        if mode == LoadMode::Merge {
            eng.touch_watched(k.db, &k.key);
        }
        let e = eng.dbs[k.db].insert(k.key, k.value, k.expire_at, now);
        match (lfu, k.idle, k.freq) {
            (false, Some(i), _) => e.lru_ms = now - (i as i64).saturating_mul(1000),
            (true, _, Some(f)) => e.lru_ms = lockcore::storage::lfu::encode(now, f),
            _ => {}
        }
        keys += 1;
    }
    eng.deadline_changed = true;
    eng.persist.dirty_at_save = eng.stats.dirty;
    eng.persist.last_load_keys_loaded = keys as u64;
    eng.persist.last_load_keys_expired = contents.expired as u64;
    if lock_names > 0 {
        tracing::warn!(
            "{lock_names} keys of the RDB file not loaded: native locks hold their names"
        );
    }
    crate::scripting::replace_libraries(shared, core, &contents.functions, mode != LoadMode::Merge);
    tracing::info!(
        "Done loading RDB, keys loaded: {keys}, keys expired: {}.",
        contents.expired
    );
    Ok(Loaded {
        keys,
        expired: contents.expired,
        aux: contents.aux,
    })
}

/// Start-up: reads `dir`/`dbfilename` when either was given (command line, config file or
/// `TUMBLER_*`) and the file exists. `Err` stops the server.
pub fn load_at_startup(shared: &Shared) -> Result<(), String> {
    let path = {
        let cfg = shared.config.read();
        if !cfg.is_set("dir") && !cfg.is_set("dbfilename") {
            return Ok(());
        }
        path_of(&cfg)
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(format!(
                "Error reading the RDB file {}: {e}",
                path.display()
            ))
        }
    };
    let started = std::time::Instant::now();
    let mut core = shared.lock_core_blocking();
    let loaded = load_bytes(shared, &mut core, &bytes, LoadMode::Replace).map_err(|e| {
        format!(
            "Fatal error loading the DB ({}): {e}. Exiting.",
            path.display()
        )
    })?;
    // What redis-server logs of the file's aux fields.
    let aux = |k: &str| {
        loaded
            .aux
            .iter()
            .find(|(n, _)| n.as_ref() == k.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    if let Some(v) = aux("redis-ver").or_else(|| aux("valkey-ver")) {
        tracing::info!("Loading RDB produced by version {v}");
    }
    if let Some(t) = aux("ctime").and_then(|t| t.parse::<i64>().ok()) {
        tracing::info!("RDB age {} seconds", (unix_secs() - t).max(0));
    }
    if let Some(m) = aux("used-mem").and_then(|m| m.parse::<f64>().ok()) {
        tracing::info!(
            "RDB memory usage when created {:.2} Mb",
            m / (1024.0 * 1024.0)
        );
    }
    core.engine.persist.last_save = unix_secs();
    tracing::info!(
        "DB loaded from disk: {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save (unless NOSAVE), empty the keyspace
/// (unless NOFLUSH) and load the file, as Redis does; native locks, which the file does
/// not hold, stay as they are (held, with their waiters). A stream's node bookkeeping (how
/// many entries each node ever held, which decides when a node is full) is kept from
/// before, as Redis keeps it in the tombstones the file holds.
pub fn debug_reload(shared: &Shared, core: &mut Core, a: &[Bytes]) -> Reply {
    let (mut nosave, mut noflush) = (false, false);
    for o in &a[2..] {
        if o.eq_ignore_ascii_case(b"nosave") {
            nosave = true;
        } else if o.eq_ignore_ascii_case(b"noflush") || o.eq_ignore_ascii_case(b"merge") {
            noflush = true;
        } else {
            return Reply::err(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            );
        }
    }
    let bytes = if nosave {
        match std::fs::read(rdb_path(shared)) {
            Ok(b) => b,
            Err(_) => {
                return Reply::err("ERR Error trying to load the RDB dump, check server logs.")
            }
        }
    } else {
        match save(shared, core) {
            Ok(s) => s.bytes,
            Err(_) => return Reply::err("ERR Error trying to save the DB"),
        }
    };
    let mut nodes = Vec::new();
    for (db, d) in core.engine.dbs.iter_mut().enumerate() {
        let keys: Vec<Bytes> = d
            .iter()
            .filter(|(_, e)| matches!(e.value, Value::Stream(_)))
            .map(|(k, _)| Bytes::copy_from_slice(k))
            .collect();
        for k in keys {
            if let Some(Value::Stream(s)) = d.get_mut(&k).map(|e| &mut e.value) {
                nodes.push((db, k, std::mem::take(&mut s.nodes)));
            }
        }
    }
    let mode = if noflush {
        LoadMode::Merge
    } else {
        LoadMode::KeepLocks
    };
    let result = load_bytes(shared, core, &bytes, mode);
    for (db, k, n) in nodes {
        if let Some(Value::Stream(s)) = core.engine.dbs[db].get_mut(&k).map(|e| &mut e.value) {
            if result.is_err() || s.nodes.keys().eq(n.keys()) {
                s.nodes = n;
            }
        }
    }
    match result {
        Ok(_) => Reply::ok(),
        Err(e) => {
            tracing::warn!("DEBUG RELOAD: {e}");
            Reply::err("ERR Error trying to load the RDB dump, check server logs.")
        }
    }
}

/// TUMBLER.RDB SAVE | LOAD path | HELP
fn tumbler_rdb(c: &mut Conn, core: &mut Core, sub: &str, a: &[Bytes]) -> Reply {
    match sub {
        "save" => {
            let saved = snapshot(&c.shared, core);
            Reply::Bulk(Bytes::from(saved.bytes))
        }
        "load" => {
            let path = String::from_utf8_lossy(&a[2]).into_owned();
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    return Reply::err(format!("ERR Error reading the RDB file '{path}': {e}"))
                }
            };
            match load_bytes(&c.shared, core, &bytes, LoadMode::Replace) {
                Ok(_) => Reply::ok(),
                Err(e) => Reply::err(format!("ERR Bad RDB file '{path}': {e}")),
            }
        }
        "help" => Reply::Array(
            [
                "TUMBLER.RDB <subcommand> [<arg> ...]. Subcommands are:",
                "SAVE",
                "    Return the whole keyspace as an RDB file (nothing is written to disk).",
                "LOAD <path>",
                "    Replace every database and the function libraries with the contents of",
                "    the RDB file at <path> (an error, and nothing changed, on a bad file).",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|s| Reply::simple(s))
            .collect(),
        ),
        _ => error::unknown_subcommand("tumbler.rdb", sub.as_bytes()),
    }
}
