//! The `turno` command: `turno demo` runs the overload scenario; `turno js
//! run FILE.js` runs JavaScript on the event-loop explorer.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

mod chart;
mod demo;
mod inspect;
mod js;
mod scxml;

#[derive(Parser)]
#[command(
    name = "turno",
    version,
    about = "Demos and tools for the turno runtime"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The overload scenario: a 100 msg/s producer, an 80 msg/s consumer,
    /// 60 s of virtual time, once per mailbox policy.
    Demo {
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
    },
    /// Statecharts: `turno chart run MACHINE.json EVENTS.json`,
    /// `turno chart mermaid MACHINE.json`.
    Chart {
        #[command(subcommand)]
        command: chart::ChartCommand,
    },
    /// Step through a recorded trace in the browser: `turno inspect TRACE`.
    Inspect(inspect::InspectArgs),
    /// The JavaScript event-loop explorer (`turno js run FILE.js`).
    #[command(subcommand)]
    Js(js::JsCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo {
            capacity,
            seconds,
            produce,
            consume,
            seed,
            inspect,
        } => {
            let scenario = demo::Scenario {
                produce_hz: produce,
                consume_hz: consume,
                duration: Duration::from_secs(seconds),
                capacity: capacity as usize,
                seed,
            };
            if let Some(policy) = inspect {
                return inspect::demo(&scenario, &policy);
            }
            print!("{}", demo::report(&scenario));
            ExitCode::SUCCESS
        }
        Command::Chart { command } => chart::main(command),
        Command::Inspect(args) => inspect::main(&args),
        Command::Js(cmd) => js::main(cmd),
    }
}
