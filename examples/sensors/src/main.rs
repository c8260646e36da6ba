//! `sensors [SVG_PATH] [--seconds S]`: runs the scenario for every policy,
//! prints the table, writes the plot (default `target/sensors.svg`).

use std::path::PathBuf;

use sensors::{plot, policies, run, table, Scenario};

fn main() {
    let mut svg = PathBuf::from("target/sensors.svg");
    let mut sc = Scenario::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => match args.next().and_then(|s| s.parse::<u64>().ok()) {
                Some(s) if s > 0 => sc.duration = s * 1_000_000,
                _ => {
                    eprintln!("--seconds needs a positive whole number");
                    std::process::exit(2);
                }
            },
            "-h" | "--help" => {
                println!(
                    "usage: sensors [SVG_PATH] [--seconds S]  (default target/sensors.svg, 60 s)"
                );
                return;
            }
            path => svg = PathBuf::from(path),
        }
    }
    let outcomes: Vec<_> = policies().into_iter().map(|p| run(p, sc)).collect();
    println!(
        "100 Hz sensor, 80 Hz consumer, {} s of virtual time, over turno::stream::buffered\n",
        sc.duration / 1_000_000
    );
    print!("{}", table(&outcomes));
    if let Some(dir) = svg.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("cannot create {}: {e}", dir.display());
            std::process::exit(1);
        }
    }
    match plot(&outcomes, &svg) {
        Ok(()) => println!("\nplot: {}", svg.display()),
        Err(e) => {
            eprintln!("cannot write {}: {e}", svg.display());
            std::process::exit(1);
        }
    }
}
