//! `turno-bench`: turno against its peers, in one binary and one run.
//!
//! ```text
//! turno-bench list
//! turno-bench stream [--n N] [--producers P] [--case SUBSTR] [--only SUBSTR] [--runs R] [--json]
//! turno-bench pingpong|ring|spawn|fanin|fanout|counting|chameneos|bndbuffer [--n N] [--only SUBSTR] [--runs R] [--json]
//! turno-bench memory [--n ACTORS] [--only IMPL] [--json]
//! turno-bench store [--n N] [--only SUBSTR] [--runs R] [--json]   # needs PostgreSQL for its postgres cases
//! turno-bench chart [--n EVENTS] [--only IMPL] [--runs R] [--json]
//! turno-bench all [--json]      # every actor bench, then memory
//! turno-bench wizard [--n USERS] [--json]
//! turno-bench inspect [--n EVENTS] [--only SUBSTR] [--runs R] [--json]
//! turno-bench cluster [--n TELLS] [--runs ROUNDS] [--kills K] [--json]   # needs nats-server
//! ```
//!
//! The actor benches live in [`actors`], one file per bench.
//!
//! Each bench is a module with a `run(&Args, &mut Harness)` function and one
//! arm in [`main`]'s dispatch; [`harness`] does the timing (one warm-up, five
//! runs, median) and the output (a table, or JSON lines with `--json`).
//! Build with `--release`.

mod actors;
#[cfg(feature = "chart")]
mod chart;
#[cfg(feature = "cluster")]
mod cluster;
mod harness;
#[cfg(feature = "inspect")]
mod inspect;
#[cfg(feature = "store")]
mod store;
mod stream;
#[cfg(feature = "wizard")]
mod wizard;

use clap::Parser;

use harness::Harness;

/// Every bench: name and one-line description (shown by `turno-bench list`).
const BENCHES: &[(&str, &str)] = &[
    (
        "stream",
        "spsc and mpsc throughput of a bounded(1024) stream and a rendezvous channel, vs tokio, flume, crossbeam, kanal, async-channel",
    ),
    (
        "store",
        "turno-store vs plain SQL (same statements): snapshot puts and queue enqueue+lease+ack, SQLite and PostgreSQL",
    ),
    ("pingpong", "2 actors, n round trips (actors module: turno vs actix, ractor, kameo, stakker, tokio, crossbeam)"),
    ("ring", "Savina thread ring: 1000 actors, n hops of a token"),
    ("spawn", "the whole timed: build the system, spawn n actors from outside, one message each, wait until all handled, stop each, wait until all stopped, shut down"),
    ("spawn-pipelined", "narrower: n actors spawned into a warm system, one message each, each stops itself, all stops confirmed"),
    ("fanin", "4 producer threads send_blocking into one actor with a suspend mailbox of 1024, timed from the producers' spawn to the verified sum"),
    ("fanout", "one actor sends n jobs of about 10 us of arithmetic to 16 actors: how work spreads over threads (checksum checked)"),
    ("counting", "Savina counting: a producer actor sends n increments, then asks for the count"),
    ("chameneos", "Savina chameneos: 8 chameneos, n meetings through a mall"),
    ("bndbuffer", "Savina bounded buffer: 4 producers, 4 consumers, a manager buffering 64 items, n items"),
    ("memory", "live heap bytes per idle actor (counting allocator), --n actors"),
    ("chart", "statecharts: pure transition and chart actor events/s and idle chart actor bytes, turno-chart vs XState v5 on Node"),
    ("all", "every actor bench, then memory"),
    ("inspect", "the inspector on a million-event trace (JavaScript and actor): open (validate, index, checkpoint) vs Reader alone, serde_json Value and IgnoredAny per line; step median and slowest"),
    ("cluster", "two turno-cluster nodes in two processes over a nats-server vs raw async-nats: tells/s, send and ask round trip p50/p99 vs request/reply; failure detection over --kills SIGKILLs"),
    ("wizard", "the signup wizard under load on loopback: --n users, --concurrency at a time (64), faults on every 4th; signups/s, p50/p99, CONFIRM to completed, charges == completed"),
];

/// turno's benchmarks.
#[derive(Parser, Debug)]
#[command(name = "turno-bench", version, about)]
pub struct Args {
    /// The bench to run (`list` shows them).
    pub bench: String,
    /// Operations per run (the bench's default when absent).
    #[arg(long)]
    pub n: Option<u64>,
    /// Producer threads for the multi-producer cases.
    #[arg(long, default_value_t = 4)]
    pub producers: usize,
    /// Simulated users at a time (`wizard`; 64 when absent).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Only cases or implementations whose name contains this (`=NAME`:
    /// exactly this implementation, e.g. `=turno` without `turno-1t`).
    #[arg(long)]
    pub only: Option<String>,
    /// Only cases whose name contains this (with `--only`: both must hold),
    /// e.g. `--case spsc_bounded --only =turno`.
    #[arg(long)]
    pub case: Option<String>,
    /// Peers killed to time failure detection (`cluster`; 100 when absent).
    #[arg(long)]
    pub kills: Option<usize>,
    /// Timed runs per measurement (after one warm-up).
    #[arg(long, default_value_t = harness::RUNS)]
    pub runs: usize,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// True when a case/implementation passes `--only`.
    pub fn selected(&self, bench: &str, imp: &str) -> bool {
        if self
            .case
            .as_ref()
            .is_some_and(|c| !bench.contains(c.as_str()))
        {
            return false;
        }
        match &self.only {
            Some(s) => match s.strip_prefix('=') {
                Some(exact) => imp == exact,
                None => bench.contains(s.as_str()) || imp.contains(s.as_str()),
            },
            None => true,
        }
    }
}

fn main() {
    let args = Args::parse();
    let mut h = Harness::new(args.json).runs(args.runs);
    match args.bench.as_str() {
        "list" => {
            for (name, what) in BENCHES {
                println!("{name:<10} {what}");
            }
            return;
        }
        "stream" => stream::run(&args, &mut h),
        #[cfg(feature = "store")]
        "store" => store::run(&args, &mut h),
        #[cfg(feature = "wizard")]
        "wizard" => {
            wizard::run(&args);
            return;
        }
        #[cfg(feature = "chart")]
        "chart" => chart::run(&args, &mut h),
        #[cfg(feature = "inspect")]
        "inspect" => inspect::run(&args, &mut h),
        #[cfg(feature = "cluster")]
        "cluster" => {
            cluster::run(&args);
            return;
        }
        #[cfg(feature = "cluster")]
        "cluster-peer" => {
            cluster::peer();
            return;
        }
        #[cfg(not(feature = "store"))]
        "store" => not_built("store"),
        #[cfg(not(feature = "wizard"))]
        "wizard" => not_built("wizard"),
        #[cfg(not(feature = "chart"))]
        "chart" => not_built("chart"),
        #[cfg(not(feature = "cluster"))]
        "cluster" => not_built("cluster"),
        #[cfg(not(feature = "inspect"))]
        "inspect" => not_built("inspect"),
        other if actors::run(other, &args, &mut h) => {}
        other => {
            eprintln!("unknown bench {other:?}; `turno-bench list` shows them");
            std::process::exit(2);
        }
    }
    h.finish();
}

/// A bench whose feature this binary was built without.
#[allow(dead_code)]
fn not_built(feature: &str) -> ! {
    eprintln!(
        "turno-bench was built without the {feature:?} feature (see crates/turno-bench/Cargo.toml)"
    );
    std::process::exit(2);
}
