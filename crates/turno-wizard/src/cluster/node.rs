//! A wizard node process (`turno demo cluster` starts three).

use std::sync::Arc;
use std::time::Duration;

use turno_store::Store;

use super::home::Home;
use super::web::{router, NodeState};
use super::NodeConfig;

/// Runs a node until SIGTERM or Ctrl-C, then shuts it down cleanly (its
/// sessions finish what they hold, its leases are released). The
/// configuration comes as JSON ([`NodeConfig`]). An error says what could
/// not be started.
pub fn run_node(config: &str) -> Result<(), String> {
    let config: NodeConfig =
        serde_json::from_str(config).map_err(|e| format!("the node's configuration: {e}"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("the async runtime: {e}"))?;
    rt.block_on(serve(config))
}

async fn serve(config: NodeConfig) -> Result<(), String> {
    let url = config.postgres.clone();
    let store = tokio::task::spawn_blocking(move || connect(&url))
        .await
        .map_err(|e| e.to_string())??;
    let (name, gateway, nats, nodes) = (
        config.name.clone(),
        config.gateway,
        config.nats.clone(),
        config.peers.len(),
    );
    let home =
        tokio::task::spawn_blocking(move || Home::start(&name, store, gateway, &nats, nodes))
            .await
            .map_err(|e| e.to_string())??;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let state = Arc::new(NodeState {
        home: home.clone(),
        control: config.control,
    });
    println!(
        "turno node {} ({}) at http://{}/",
        config.name, home.owner, config.addr
    );
    let stop = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| e.to_string());
        match term.as_mut() {
            Ok(t) => {
                tokio::select! {
                    _ = t.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    let served = axum::serve(listener, router(state))
        .with_graceful_shutdown(stop)
        .await;
    let h = home.clone();
    let _ = tokio::task::spawn_blocking(move || h.shutdown()).await;
    served.map_err(|e| format!("the server: {e}"))
}

/// PostgreSQL may still be starting: a few tries.
fn connect(url: &str) -> Result<Store, String> {
    let mut last = String::new();
    for _ in 0..50 {
        match Store::postgres(url) {
            Ok(s) => return Ok(s),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("cannot open the database {url}: {last}"))
}
