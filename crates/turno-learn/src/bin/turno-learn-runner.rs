//! The child that runs one snippet for `turno learn`'s server (the tests'
//! runner; `turno learn --runner` is the same in the `turno` binary).
//!
//! `turno-learn-runner serve [PORT]` serves the page itself, with this
//! binary as its runner: the page without the rest of the `turno` binary.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("serve") {
        return turno_learn::run::runner_main();
    }
    let port = match args.get(1).map(|p| p.parse::<u16>()) {
        None => 0,
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            eprintln!("turno-learn-runner: bad port: {e}");
            return ExitCode::from(2);
        }
    };
    let program = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("turno-learn-runner: cannot find this program: {e}");
            return ExitCode::from(2);
        }
    };
    let config = turno_learn::Config {
        runner: turno_learn::Runner {
            program,
            args: vec![],
        },
        budgets: turno_learn::Budgets::default(),
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    match turno_learn::serve_blocking(config, addr, |url| println!("{url}")) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("turno-learn-runner: {e}");
            ExitCode::from(2)
        }
    }
}
