//! A private PostgreSQL server for tests and benchmarks: a throwaway data
//! directory, a free port on 127.0.0.1, stopped and deleted when dropped.
//!
//! The binaries are Debian's (`/usr/lib/postgresql/<version>/bin`, the
//! newest version found), or those in `$TURNO_PG_BIN`. PostgreSQL refuses
//! to run as root, so when the process is root, `initdb`, `pg_ctl` and the
//! server run as the `postgres` user the Debian package creates.

use std::io;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// A running private server. See the [module docs](self).
#[derive(Debug)]
pub struct TempCluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    user: Option<(u32, u32)>,
    stopped: std::sync::atomic::AtomicBool,
}

static SHARED: OnceLock<Result<TempCluster, String>> = OnceLock::new();
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

extern "C" fn stop_shared() {
    if let Some(Ok(c)) = SHARED.get() {
        c.stop();
    }
}

fn bin_dir() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("TURNO_PG_BIN") {
        return Ok(PathBuf::from(p));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("/usr/lib/postgresql: {e} (apt-get install postgresql)"),
            )
        })?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)",
        )
    })
}

/// The `postgres` user's uid and gid, when we are root.
fn run_as() -> io::Result<Option<(u32, u32)>> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = c"postgres";
    // SAFETY: `name` is a valid NUL-terminated string; getpwnam returns a
    // pointer to static storage or null, read at once before any other call.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "running as root and there is no `postgres` user to run the server as (apt-get install postgresql creates it)",
        ));
    }
    // SAFETY: checked non-null above; the fields are plain integers.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Ok(Some((uid, gid)))
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn check(what: &str, out: Output) -> io::Result<()> {
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )))
}

impl TempCluster {
    /// Creates and starts a server with PostgreSQL's durable defaults
    /// (`fsync = on`): for benchmarks.
    pub fn start() -> io::Result<TempCluster> {
        Self::start_with(&[])
    }

    /// Like [`start`](Self::start) with `fsync = off` and no full-page
    /// writes: much faster, not crash-safe for the *server*: for tests,
    /// which kill clients, never the server.
    pub fn start_fast() -> io::Result<TempCluster> {
        Self::start_with(&["-c", "fsync=off", "-c", "full_page_writes=off"])
    }

    /// One fast server per process, started on first use and stopped when
    /// the process exits normally. An error (no PostgreSQL installed...) is
    /// returned to every caller.
    pub fn shared() -> Result<&'static TempCluster, String> {
        SHARED
            .get_or_init(|| {
                let c = TempCluster::start_fast().map_err(|e| e.to_string())?;
                // SAFETY: `stop_shared` is a plain `extern "C" fn()` that
                // only reads a static; atexit has no other precondition.
                unsafe { libc::atexit(stop_shared) };
                Ok(c)
            })
            .as_ref()
            .map_err(|e| e.clone())
    }

    fn start_with(extra: &[&str]) -> io::Result<TempCluster> {
        let bin = bin_dir()?;
        let user = run_as()?;
        let dir = std::env::temp_dir().join(format!(
            "turno-pg-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir(&dir)?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))?;
        }
        let mut c = TempCluster {
            bin,
            dir,
            port: 0,
            user,
            stopped: false.into(),
        };
        let data = c.dir.join("data");
        let out = c
            .cmd("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "turno",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()?;
        check("initdb", out)?;
        // A port can be taken between our probe and the server's bind:
        // try a few.
        let mut last = None;
        for _ in 0..5 {
            c.port = free_port()?;
            let mut opts = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
                c.port,
                c.dir.display()
            );
            for e in extra {
                opts.push(' ');
                opts.push_str(e);
            }
            let out = c
                .cmd("pg_ctl")
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(c.dir.join("server.log"))
                .args(["-w", "-t", "60", "-o", &opts, "start"])
                .output()?;
            match check("pg_ctl start", out) {
                Ok(()) => {
                    last = None;
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            let log = std::fs::read_to_string(c.dir.join("server.log")).unwrap_or_default();
            return Err(io::Error::other(format!("{e}\nserver log:\n{log}")));
        }
        Ok(c)
    }

    fn cmd(&self, tool: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(tool));
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        cmd.env_remove("PGDATA").current_dir(&self.dir);
        cmd
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The data directory (heap files under `base/`, WAL under `pg_wal/`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A connection URL for database `db` (the superuser is `turno`).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://turno@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a new, empty database and returns its URL: one per test
    /// keeps tests apart on a shared server.
    pub fn fresh_database(&self) -> io::Result<String> {
        let name = format!(
            "turno_{}_{}",
            std::process::id(),
            NEXT_DB.fetch_add(1, Ordering::Relaxed)
        );
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .map_err(io::Error::other)?;
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .map_err(io::Error::other)?;
        Ok(self.url(&name))
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`) and deletes its
    /// directory. Idempotent; also done on drop.
    pub fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = self
            .cmd("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// The directory holding everything of this server.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TempCluster {
    fn drop(&mut self) {
        self.stop();
    }
}
