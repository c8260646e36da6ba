//! `turno demo`: the signup wizard (the main job), and `turno demo
//! overload`: the overload table of every mailbox policy.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::{demo, inspect};

/// `turno demo [--port N] [--data-dir DIR] [--inspect]` | `turno demo overload ...`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DemoArgs {
    #[command(subcommand)]
    command: Option<DemoCommand>,
    #[command(flatten)]
    wizard: WizardArgs,
}

#[derive(Subcommand)]
enum DemoCommand {
    /// The overload scenario: a 100 msg/s producer, an 80 msg/s consumer,
    /// 60 s of virtual time, once per mailbox policy.
    Overload(OverloadArgs),
    /// The signup wizard on three nodes: three wizard node processes, a
    /// three-server NATS cluster, PostgreSQL and the payment gateway, on
    /// 127.0.0.1; each signup session a sharded durable entity.
    Cluster(ClusterArgs),
    /// One node of `turno demo cluster` (started by it; its configuration
    /// in TURNO_NODE_CONFIG).
    #[command(hide = true)]
    ClusterNode,
}

/// `turno demo cluster`'s options.
#[derive(Args)]
struct ClusterArgs {
    /// The front door's port on 127.0.0.1 (each request to a live node in
    /// turn; 0: any free port).
    #[arg(long, default_value_t = 7879)]
    port: u16,
    /// The payment gateway's port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    gateway_port: u16,
    /// Where the gateway's SQLite file and NATS's files live (default: a
    /// `turno-demo-cluster` folder in the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

/// The wizard's options.
#[derive(Args)]
struct WizardArgs {
    /// The wizard's port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 7878)]
    port: u16,
    /// The payment gateway's port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    gateway_port: u16,
    /// Where the wizard's and the gateway's SQLite files live (default: a
    /// `turno-demo` folder in the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// How long sessions, drafts and draft links live, in seconds.
    #[arg(long, default_value_t = 7 * 24 * 3600, value_parser = clap::value_parser!(u64).range(1..))]
    ttl_secs: u64,
    /// Follow the wizard server's actors live in the inspector (a second
    /// page on 127.0.0.1, printed at start).
    #[arg(long)]
    inspect: bool,
}

#[derive(Args)]
struct OverloadArgs {
    /// Capacity of the bounded policies.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    capacity: u64,
    /// Virtual seconds to run.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    seconds: u64,
    /// Producer rate, messages per second.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    produce: u32,
    /// Consumer rate, messages per second.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    consume: u32,
    /// Scheduler seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Record the run under one policy (default keep-newest) and open it in the inspector.
    #[arg(long, value_name = "POLICY", num_args = 0..=1, default_missing_value = "keep-newest")]
    inspect: Option<String>,
    /// Where the picture of the comparison goes (an SVG: mailbox depth and
    /// queueing delay per policy over the run); default
    /// `turno-overload.svg` in the system's temporary directory.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// Runs `turno demo ...`.
pub fn main(args: DemoArgs) -> ExitCode {
    match args.command {
        Some(DemoCommand::Overload(o)) => overload(o),
        Some(DemoCommand::Cluster(c)) => cluster(c),
        Some(DemoCommand::ClusterNode) => cluster_node(),
        None => wizard(args.wizard),
    }
}

fn overload(o: OverloadArgs) -> ExitCode {
    let scenario = demo::Scenario {
        produce_hz: o.produce,
        consume_hz: o.consume,
        duration: Duration::from_secs(o.seconds),
        capacity: o.capacity as usize,
        seed: o.seed,
    };
    if let Some(policy) = o.inspect {
        return inspect::demo(&scenario, &policy);
    }
    print!("{}", demo::report(&scenario));
    let path = o
        .svg
        .unwrap_or_else(|| std::env::temp_dir().join("turno-overload.svg"));
    let written = crate::overload_svg::picture(&scenario)
        .and_then(|p| std::fs::write(&path, p).map_err(|e| e.to_string()));
    match written {
        Ok(()) => {
            println!("the same as a picture: {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("turno demo overload: cannot write {}: {e}", path.display());
            ExitCode::from(2)
        }
    }
}

fn wizard(w: WizardArgs) -> ExitCode {
    let data_dir = w
        .data_dir
        .unwrap_or_else(|| std::env::temp_dir().join("turno-demo"));
    let mut config = turno_wizard::Config::new(data_dir.clone());
    config.port = w.port;
    config.gateway_port = w.gateway_port;
    config.ttl = Duration::from_secs(w.ttl_secs);
    let live = if w.inspect {
        match turno_inspect::live::start(Default::default()) {
            Ok((live, sink)) => {
                let sink = std::sync::Mutex::new(sink);
                config.trace = Some(turno_wizard::TraceTo::new(move || {
                    sink.lock().unwrap_or_else(|p| p.into_inner()).clone()
                }));
                Some(live)
            }
            Err(e) => {
                eprintln!("turno demo: cannot start the inspector: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("turno demo: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    rt.block_on(async move {
        match turno_wizard::Wizard::start(config).await {
            Ok(wz) => {
                println!("turno demo: the signup wizard is at {}", wz.url());
                println!(
                    "  payment gateway: http://{}/ (its own service and SQLite file)",
                    wz.addrs().gateway
                );
                println!("  data: {} (wizard.db, gateway.db)", data_dir.display());
                if let Some(live) = &live {
                    println!("  inspector (live): {}", live.url());
                }
                println!(
                    "  Ctrl-C stops it; `turno demo overload` prints the mailbox-policy table."
                );
                wz.until_ctrl_c().await;
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("turno demo: {e}");
                if w.port != 0 {
                    eprintln!("  (another program may use port {}: try --port 0)", w.port);
                }
                ExitCode::from(2)
            }
        }
    })
}

#[cfg(feature = "cluster")]
fn cluster(c: ClusterArgs) -> ExitCode {
    use turno_wizard::cluster::{ClusterConfig, ClusterDemo};
    let data_dir = c
        .data_dir
        .unwrap_or_else(|| std::env::temp_dir().join("turno-demo-cluster"));
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("turno demo cluster: cannot find the turno binary to start the nodes: {e}");
            return ExitCode::from(2);
        }
    };
    let config = ClusterConfig {
        port: c.port,
        gateway_port: c.gateway_port,
        data_dir: data_dir.clone(),
        nodes: 3,
        restart_after: turno_wizard::cluster::demo::RESTART_AFTER,
        node_command: (exe, vec!["demo".into(), "cluster-node".into()]),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("turno demo cluster: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    rt.block_on(async move {
        let mut demo = match ClusterDemo::start(config).await {
            Ok(d) => d,
            Err(e) => {
                eprintln!("turno demo cluster: {e}");
                if c.port != 0 {
                    eprintln!("  (another program may use port {}: try --port 0)", c.port);
                }
                return ExitCode::from(2);
            }
        };
        println!(
            "turno demo cluster: the signup wizard is at {} (the front door: each request to a live node in turn)",
            demo.url()
        );
        for (name, addr) in demo.nodes() {
            println!("  node {name}: http://{addr}/");
        }
        if let Some(g) = demo.gateway() {
            println!("  payment gateway: http://{g}/ (its own service and SQLite file)");
        }
        println!("  PostgreSQL: {} (a temporary server, deleted at exit)", demo.postgres_url());
        println!("  NATS: {}", demo.nats_urls().join(", "));
        println!("  data: {}", data_dir.display());
        println!("  Ctrl-C stops everything (each node hands its shards over first).");
        demo.until_stopped().await;
        tokio::task::block_in_place(|| demo.shutdown());
        ExitCode::SUCCESS
    })
}

#[cfg(not(feature = "cluster"))]
fn cluster(_: ClusterArgs) -> ExitCode {
    eprintln!("turno demo cluster: this turno was built without the `cluster` feature (cargo build -p turno-cli --features cluster)");
    ExitCode::from(2)
}

#[cfg(feature = "cluster")]
fn cluster_node() -> ExitCode {
    let Ok(config) = std::env::var("TURNO_NODE_CONFIG") else {
        eprintln!(
            "turno demo cluster-node: no TURNO_NODE_CONFIG (`turno demo cluster` starts the nodes)"
        );
        return ExitCode::from(2);
    };
    match turno_wizard::cluster::run_node(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("turno demo cluster-node: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(not(feature = "cluster"))]
fn cluster_node() -> ExitCode {
    eprintln!("turno demo cluster-node: this turno was built without the `cluster` feature");
    ExitCode::from(2)
}
