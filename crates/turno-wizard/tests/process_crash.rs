//! A real crash of the wizard's process: the server (wizard and gateway,
//! as `turno demo` runs them) is a child process, killed with SIGKILL while
//! a charge is in flight (the gateway has charged and holds its reply),
//! then started again on the same data directory and ports. The session
//! comes back from its snapshot in `wizard.db`: the submit resumes in
//! `uncertain`, finds the charge by its key, and completes with exactly one
//! charge and no second charge request; another user, parked at the
//! payment step, is resumed at that same step.
//!
//! The child is this test binary again, running the ignored test
//! `wizard_process`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{call, Client};
use serde_json::json;
use turno_wizard::{Config, Wizard};

#[test]
#[ignore = "the child process of the process-crash test; it runs it"]
fn wizard_process() {
    let Some(dir) = std::env::var_os("TURNO_WIZARD_DIR").map(PathBuf::from) else {
        return;
    };
    let port = |v: &str| std::env::var(v).unwrap().parse::<u16>().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cfg = Config::new(&dir);
        cfg.port = port("TURNO_WIZARD_PORT");
        cfg.gateway_port = port("TURNO_WIZARD_GATEWAY_PORT");
        let w = Wizard::start(cfg).await.unwrap();
        std::fs::write(dir.join("ready"), w.url()).unwrap();
        // Serve until killed.
        std::future::pending::<()>().await;
    });
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    dir: PathBuf,
    ports: (u16, u16),
}

impl Server {
    /// Starts the server process and waits until it listens.
    fn start(&self) -> (Child, String) {
        let ready = self.dir.join("ready");
        let _ = std::fs::remove_file(&ready);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "wizard_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TURNO_WIZARD_DIR", &self.dir)
            .env("TURNO_WIZARD_PORT", self.ports.0.to_string())
            .env("TURNO_WIZARD_GATEWAY_PORT", self.ports.1.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !ready.exists() {
            if let Some(s) = child.try_wait().unwrap() {
                panic!("the server process exited: {s}");
            }
            assert!(start.elapsed() < Duration::from_secs(60), "never ready");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(20));
        let url = std::fs::read_to_string(&ready).unwrap();
        (child, url)
    }
}

async fn gateway_stats(port: u16) -> serde_json::Value {
    call(
        &format!("http://127.0.0.1:{port}/"),
        "GET",
        "/stats",
        "",
        None,
    )
    .await
    .2
}

fn kill(mut child: Child) {
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

fn dir_of(t: &tempfile::TempDir) -> &Path {
    t.path()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_submit_then_restart_one_charge_and_users_resume_where_they_were() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server {
        dir: dir_of(&tmp).to_owned(),
        ports: (free_port(), free_port()),
    };
    let gw = server.ports.1;
    let (child, url) = tokio::task::block_in_place(|| server.start());

    // A user parked at the payment step...
    let parked = Client::new(&url).await;
    for (step, fields) in [
        (
            "personal",
            json!({"name": "Grace Hopper", "email": "grace@example.org"}),
        ),
        ("plan", json!({"plan": "team", "billing": "monthly"})),
    ] {
        assert_eq!(parked.event(step, "NEXT", fields).await.0, 200);
    }
    assert_eq!(parked.state().await.1["step"], "payment.card");

    // ...and one who confirms while the gateway charges and holds its reply.
    let payer = Client::new(&url).await;
    payer.to_review().await;
    assert_eq!(
        payer.faults(json!({"charge": "timeout"})).await["charge"],
        "timeout"
    );
    let key = payer.state().await.1["key"].clone();
    assert!(key.is_string());
    let (s, v) = payer.event("review", "CONFIRM", json!({})).await;
    assert_eq!((s, v["step"].as_str()), (200, Some("submit.sending")));
    let start = Instant::now();
    while gateway_stats(gw).await["charges"] != 1 {
        assert!(start.elapsed() < Duration::from_secs(20), "never charged");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Charged, the reply not given yet: the wizard is mid-submit.
    assert_eq!(payer.state().await.1["step"], "submit.sending");
    tokio::task::block_in_place(|| kill(child));

    // A new process on the same files.
    let (child, url2) = tokio::task::block_in_place(|| server.start());
    assert_eq!(url2, url);
    let v = payer.wait_for("completed").await;
    assert_eq!(v["key"], key, "the same key");
    assert_eq!(
        v["context"]["attempts"], 1,
        "never resent after the restart"
    );
    let stats = gateway_stats(gw).await;
    assert_eq!(stats["charges"], 1, "exactly one charge: {stats}");
    assert_eq!(
        stats["charge_requests"], 0,
        "the new process sent no charge, it looked the key up: {stats}"
    );
    assert!(stats["lookups"].as_u64().unwrap() >= 1, "{stats}");
    let p = parked.state().await.1;
    assert_eq!(p["step"], "payment.card", "resumed at the same step");
    assert_eq!(p["context"]["personal"]["name"], "Grace Hopper");
    tokio::task::block_in_place(|| kill(child));
}
