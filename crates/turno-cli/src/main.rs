//! The `turno` command: `turno demo` runs the signup wizard (`turno demo
//! overload` the overload scenario); `turno js
//! run FILE.js` runs JavaScript on the event-loop explorer; `turno learn`
//! serves the event-loop essay as a page.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod chart;
mod demo;
mod events;
mod inspect;
mod js;
mod learn;
mod locate;
mod overload_svg;
mod scxml;
mod wizard;

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
    /// The signup wizard in the browser (`turno demo`); the overload
    /// table of every mailbox policy (`turno demo overload`).
    Demo(wizard::DemoArgs),
    /// Statecharts, XState v5 JSON machines or SCXML documents (.scxml):
    /// `turno chart run MACHINE EVENTS.json`, `turno chart paths MACHINE`,
    /// `turno chart mermaid MACHINE`.
    Chart {
        #[command(subcommand)]
        command: chart::ChartCommand,
    },
    /// Step through a recorded trace in the browser: `turno inspect TRACE`.
    Inspect(inspect::InspectArgs),
    /// The JavaScript event-loop explorer (`turno js run FILE.js`).
    #[command(subcommand)]
    Js(js::JsCommand),
    /// The event loop as a page you press: `turno learn [--port N]`.
    Learn(learn::LearnArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(args) => wizard::main(args),
        Command::Chart { command } => chart::main(command),
        Command::Inspect(args) => inspect::main(&args),
        Command::Js(cmd) => js::main(cmd),
        Command::Learn(args) => learn::main(&args),
    }
}
