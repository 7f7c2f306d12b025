//! The `tokamak` command: the language server and its headless front-ends.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tokamak::cli::check::{self, Format};
use tokamak::config::SyntaxSettings;

/// Exit status for bad usage (clap uses it too).
const USAGE: u8 = 2;

#[derive(Parser)]
#[command(name = "tokamak", version, about = "A language server with an autonomous coding agent inside")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Language Server Protocol on stdin/stdout (the default when stdin is not a
    /// terminal).
    Lsp,
    /// Print the Observer's diagnostics for files and folders, like a linter; exit status 1
    /// when any error is found.
    Check {
        /// Files or folders (folders are walked with .gitignore respected).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = match cli.command {
        Some(command) => command,
        None if !std::io::stdin().is_terminal() => Command::Lsp,
        None => {
            eprintln!("tokamak: say what to do, e.g. `tokamak lsp` or `tokamak check PATH` (see --help)");
            return ExitCode::from(USAGE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("tokamak: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match command {
        Command::Lsp => {
            let (layer, queue) = tokamak::server::log_message_channel();
            tokamak::logging::init(Some(layer));
            runtime.block_on(tokamak::server::run_stdio(Some(queue)));
            ExitCode::SUCCESS
        }
        Command::Check { paths, format } => {
            tokamak::logging::init(None::<tracing_subscriber::layer::Identity>);
            runtime.block_on(run_check(&paths, format))
        }
    }
}

async fn run_check(paths: &[PathBuf], format: Format) -> ExitCode {
    let report = match check::check(paths, &SyntaxSettings::default()).await {
        Ok(report) => report,
        Err(err) => {
            eprintln!("tokamak: {err:#}");
            return ExitCode::from(USAGE);
        }
    };
    for (path, reason) in &report.skipped {
        eprintln!("{}: not checked: {reason}", path.display());
    }
    match format {
        Format::Text => {
            for finding in &report.findings {
                println!("{}", finding.to_line());
            }
        }
        Format::Json => match serde_json::to_string_pretty(&report.findings) {
            Ok(json) => println!("{json}"),
            Err(err) => {
                eprintln!("tokamak: cannot write JSON: {err}");
                return ExitCode::FAILURE;
            }
        },
    }
    if report.has_errors() { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
