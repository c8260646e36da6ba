//! `turno learn [--port N]`: the event-loop essay as a page on 127.0.0.1,
//! every example run on the explorer. Each snippet runs in a child process
//! (this same binary, `turno learn --runner`) under the page's budgets.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use clap::Args;

/// `turno learn [--port N]`.
#[derive(Args, Debug)]
pub struct LearnArgs {
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Run one snippet from stdin and exit (how the server runs snippets).
    #[arg(long, hide = true)]
    pub runner: bool,
}

/// Runs `turno learn`.
pub fn main(args: &LearnArgs) -> ExitCode {
    if args.runner {
        return turno_learn::run::runner_main();
    }
    let program = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("turno learn: cannot find this program to run snippets with: {e}");
            return ExitCode::from(2);
        }
    };
    let config = turno_learn::Config {
        runner: turno_learn::Runner {
            program,
            args: vec!["learn".into(), "--runner".into()],
        },
        budgets: turno_learn::Budgets::default(),
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let result = turno_learn::serve_blocking(config, addr, |url| {
        println!("{url}");
        eprintln!("turno learn: the event loop, as a page you press, at {url} (Ctrl-C to stop)");
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("turno learn: {e}");
            if args.port != 0 {
                eprintln!(
                    "  (another program may use port {}: try --port 0)",
                    args.port
                );
            }
            ExitCode::from(2)
        }
    }
}
