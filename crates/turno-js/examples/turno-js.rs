//! Stand-alone front end: `cargo run -p turno-js --example turno-js -- run FILE.js [--model node|html] [--trace OUT.json]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(turno_js::cli_main(&args));
}
