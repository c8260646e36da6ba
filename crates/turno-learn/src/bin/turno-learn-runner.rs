//! The child that runs one snippet for `turno learn`'s server (the tests'
//! runner; `turno learn --runner` is the same in the `turno` binary).

fn main() -> std::process::ExitCode {
    turno_learn::run::runner_main()
}
