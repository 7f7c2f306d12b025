//! The `tokamak` command: the language server, the ACP agent and the measurements of the
//! language server, on this process's stdio; every other command is the command line's
//! (`cli::command`).

use std::io::IsTerminal;
use std::process::ExitCode;

use tokamak::cli::command::{LatencyArgs, MemoryArgs, Parsed};
use tokamak::cli::output::print_bench;

fn main() -> ExitCode {
    // the Landlock helper, before anything else starts (no thread, no runtime): it confines
    // itself and runs one command of the agent's
    #[cfg(target_os = "linux")]
    if std::env::args_os().nth(1).is_some_and(|arg| arg == tokamak::sandbox::landlock::SUBCOMMAND) {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
        let code = tokamak::sandbox::landlock::helper_main(&args);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let code = match tokamak::cli::command::parse(std::env::args_os(), std::io::stdin().is_terminal()) {
        Parsed::Command(command) => tokamak::cli::command::execute(*command),
        Parsed::Exit(code) => code,
        Parsed::Lsp => {
            return serve(|runtime| {
                let (layer, queue) = tokamak::server::log_message_channel();
                tokamak::logging::init(Some(layer));
                runtime.block_on(tokamak::server::run_stdio(Some(queue)))
            });
        }
        Parsed::Acp => {
            return serve(|runtime| {
                // logs go to stderr only: stdout carries the protocol
                tokamak::logging::init_cli(std::io::stderr);
                match runtime.block_on(tokamak::acp::serve()) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(err) => {
                        eprintln!("tokamak: {err:#}");
                        ExitCode::FAILURE
                    }
                }
            });
        }
        Parsed::Latency(args) => tokamak::cli::command::finish(bench_latency(args)),
        Parsed::Memory(args) => tokamak::cli::command::finish(bench_memory(args)),
    };
    ExitCode::from(code)
}

/// A protocol served on a runtime of its own until the client goes.
fn serve(serve: impl FnOnce(&tokio::runtime::Runtime) -> ExitCode) -> ExitCode {
    match tokamak::cli::command::start() {
        Some(runtime) => serve(&runtime),
        None => ExitCode::FAILURE,
    }
}

/// `tokamak bench latency`: `tokamak lsp` (this very binary), then the other server, on the
/// same file.
fn bench_latency(args: LatencyArgs) -> u8 {
    use tokamak::server::latency::{LatencyOptions, measure, table};
    tokamak::logging::init_cli(std::io::stderr);
    let options = LatencyOptions {
        keystrokes: args.keystrokes,
        pause: std::time::Duration::from_millis(args.pause),
        ..LatencyOptions::default()
    };
    let result = std::env::current_exe().map_err(anyhow::Error::from).and_then(|me| {
        let mut servers = vec![vec![me.display().to_string(), "lsp".to_string()]];
        if let Some(other) = &args.against {
            servers.push(other.split_whitespace().map(str::to_string).collect());
        }
        servers.iter().map(|command| Ok(measure(command, &args.file, &options)?)).collect()
    });
    print_bench(result, args.format, |results: &Vec<_>| table(results))
}

/// `tokamak bench memory`: this very binary as the language server on a real workspace.
fn bench_memory(args: MemoryArgs) -> u8 {
    use tokamak::server::memory::{MemoryOptions, measure_memory, table};
    tokamak::logging::init_cli(std::io::stderr);
    let options = MemoryOptions { open: args.open, lines: args.lines, ..Default::default() };
    let result = std::env::current_exe().map_err(anyhow::Error::from).and_then(|me| {
        let command = [me.display().to_string(), "lsp".to_string()];
        Ok(measure_memory(&command, &args.dir, &options)?)
    });
    print_bench(result, args.format, table)
}
