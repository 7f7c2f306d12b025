//! The `tokamak` command: the language server and its headless front-ends.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tokamak::cli::bench::BenchOptions;
use tokamak::cli::check::{self, CheckOptions, Format};
use tokamak::cli::fix::FixOptions;
use tokamak::cli::model_check;

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
        /// Run exactly these checkers (comma-separated; `none` for syntax only). Default: as
        /// tokamak.toml says, or every built-in checker that is installed.
        #[arg(long, value_delimiter = ',')]
        checkers: Option<Vec<String>>,
    },
    /// Fix the errors and warnings in files and folders with the fix loop: deterministic
    /// fixes first, then the model. Prints the diff and the exit reason per file; exit status
    /// 0 when every file ends clean, 1 when not.
    Fix {
        /// Files or folders (folders are walked with .gitignore respected).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Model attempts per file (default: fix.max_attempts, 3).
        #[arg(long)]
        max_attempts: Option<u32>,
        /// Change nothing on disk; print the diff that would be made.
        #[arg(long)]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Run exactly these checkers (comma-separated; `none` for syntax only).
        #[arg(long, value_delimiter = ',')]
        checkers: Option<Vec<String>>,
    },
    /// Measure: run a benchmark and print a table.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// The model Tokamak talks to.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
}

#[derive(Subcommand)]
enum BenchWhat {
    /// Run the fix loop on every case of a fix benchmark (e.g. fixtures/fixbench): solved,
    /// attempts, tokens, wall time and exit reason per case, then the totals.
    Fix {
        /// The folder holding one folder per case (each with a case.toml).
        dir: PathBuf,
        /// Only cases whose name contains this.
        #[arg(long)]
        filter: Option<String>,
        #[arg(long)]
        max_attempts: Option<u32>,
        /// The model's base URL (OpenAI-compatible unless --provider says otherwise).
        #[arg(long)]
        model_url: Option<String>,
        /// The model's name.
        #[arg(long)]
        model: Option<String>,
        /// openai, anthropic or ollama.
        #[arg(long)]
        provider: Option<String>,
        /// The most tokens one reply may have ([model] max_tokens).
        #[arg(long)]
        max_reply_tokens: Option<u32>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(Subcommand)]
enum ModelAction {
    /// Send one tiny request to the configured model and print provider, endpoint, model,
    /// latency and tokens.
    Check {
        /// Use the model of this role's profile (`[profiles.<role>]` in tokamak.toml).
        #[arg(long)]
        role: Option<String>,
        /// Stream the reply, as the agent does.
        #[arg(long)]
        stream: bool,
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
        Command::Model { action: ModelAction::Check { role, stream } } => {
            tokamak::logging::init_cli();
            runtime.block_on(run_model_check(role.as_deref(), stream))
        }
        Command::Fix { paths, max_attempts, dry_run, format, checkers } => {
            tokamak::logging::init_cli();
            let checkers = checkers.map(|names| names.into_iter().filter(|n| n != "none").collect());
            let options = FixOptions {
                max_attempts,
                dry_run,
                progress: format == Format::Text,
                checkers,
                model: serde_json::Value::Null,
            };
            runtime.block_on(run_fix(&paths, format, &options))
        }
        Command::Bench {
            what:
                BenchWhat::Fix { dir, filter, max_attempts, model_url, model, provider, max_reply_tokens, format },
        } => {
            tokamak::logging::init_cli();
            let mut overlay = serde_json::Map::new();
            for (key, value) in [("base_url", model_url), ("model", model), ("provider", provider)] {
                if let Some(value) = value {
                    overlay.insert(key.to_string(), serde_json::Value::String(value));
                }
            }
            if let Some(tokens) = max_reply_tokens {
                overlay.insert("max_tokens".to_string(), serde_json::Value::from(tokens));
            }
            let model =
                if overlay.is_empty() { serde_json::Value::Null } else { serde_json::Value::Object(overlay) };
            let options = BenchOptions { filter, max_attempts, model };
            runtime.block_on(run_bench_fix(&dir, format, &options))
        }
        Command::Check { paths, format, checkers } => {
            tokamak::logging::init_cli();
            let checkers = checkers.map(|names| names.into_iter().filter(|n| n != "none").collect());
            runtime.block_on(run_check(&paths, format, &CheckOptions { checkers }))
        }
    }
}

async fn run_model_check(role: Option<&str>, stream: bool) -> ExitCode {
    let root = tokamak::config::find_root(Path::new("."));
    match model_check::check_model(&root, role, stream).await {
        Ok(check) => {
            for line in check.lines() {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(model_check::CheckError::Settings(err)) => {
            eprintln!("tokamak: {err}");
            ExitCode::from(USAGE)
        }
        Err(model_check::CheckError::Model(err @ tokamak::model::ModelError::Config { .. })) => {
            eprintln!("tokamak: {err}");
            ExitCode::from(USAGE)
        }
        Err(model_check::CheckError::Model(err)) => {
            eprintln!("tokamak: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run_check(paths: &[PathBuf], format: Format, options: &CheckOptions) -> ExitCode {
    let report = match check::check(paths, options).await {
        Ok(report) => report,
        Err(err) => {
            eprintln!("tokamak: {err:#}");
            return ExitCode::from(USAGE);
        }
    };
    for message in &report.messages {
        eprintln!("{message}");
    }
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

async fn run_fix(paths: &[PathBuf], format: Format, options: &FixOptions) -> ExitCode {
    let results = match tokamak::cli::fix::fix(paths, options).await {
        Ok(results) => results,
        Err(err) => {
            eprintln!("tokamak: {err:#}");
            return ExitCode::from(USAGE);
        }
    };
    match format {
        Format::Text => {
            for result in &results {
                print!("{}", result.diff);
            }
            for result in &results {
                println!("[{}] {}", result.exit_reason, result.summary);
            }
        }
        Format::Json => match serde_json::to_string_pretty(&results) {
            Ok(json) => println!("{json}"),
            Err(err) => {
                eprintln!("tokamak: cannot write JSON: {err}");
                return ExitCode::FAILURE;
            }
        },
    }
    let clean = results.iter().all(|r| r.exit_reason == tokamak::agent::ExitReason::Clean);
    if clean { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

async fn run_bench_fix(dir: &Path, format: Format, options: &BenchOptions) -> ExitCode {
    let results = match tokamak::cli::bench::bench_fix(dir, options).await {
        Ok(results) => results,
        Err(err) => {
            eprintln!("tokamak: {err:#}");
            return ExitCode::from(USAGE);
        }
    };
    match format {
        Format::Text => print!("{}", tokamak::cli::bench::table(&results)),
        Format::Json => match serde_json::to_string_pretty(&results) {
            Ok(json) => println!("{json}"),
            Err(err) => {
                eprintln!("tokamak: cannot write JSON: {err}");
                return ExitCode::FAILURE;
            }
        },
    }
    ExitCode::SUCCESS
}
