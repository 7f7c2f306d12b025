//! The `tokamak` command: the language server and its headless front-ends.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tokamak::cli::bench::BenchOptions;
use tokamak::cli::check::{CheckOptions, Format};
use tokamak::cli::fix::FixOptions;
use tokamak::cli::run::RunOptions;

use tokamak::cli::output::{self, USAGE};

#[derive(Parser)]
#[command(name = "tokamak", version, about = "A language server with an autonomous coding agent inside")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Serve the Agent Client Protocol on stdin/stdout (as `tokamak acp`; the flag Copilot's
    /// language server uses for the same split).
    #[arg(long)]
    acp: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Language Server Protocol on stdin/stdout (the default when stdin is not a
    /// terminal).
    Lsp,
    /// Serve the Agent Client Protocol on stdin/stdout, one JSON-RPC message per line: Tokamak
    /// as the agent of Zed, JetBrains IDEs, Neovim's CodeCompanion and avante, Emacs.
    Acp,
    /// Rank the workspace's files for a question, in English or Korean, with no model: the
    /// files that matter first, the symbols in them and why they rank.
    Context {
        /// The question ("where is login handled?", "로그인 기능 어디 있어?").
        query: String,
        /// The workspace (default: the nearest folder up from here with .git or tokamak.toml).
        #[arg(long)]
        root: Option<PathBuf>,
        /// Files shown at most.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
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
        /// Candidate fixes per attempt, each verified by the tests (`[test] command`) in a
        /// sandboxed copy; the first that passes is applied (default: fix.candidates, 3; at
        /// most 5; 1: one fix, applied as it comes).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=5))]
        candidates: Option<u32>,
        /// Change nothing on disk; print the diff that would be made.
        #[arg(long)]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Run exactly these checkers (comma-separated; `none` for syntax only).
        #[arg(long, value_delimiter = ',')]
        checkers: Option<Vec<String>>,
    },
    /// Make a plan for a goal (numbered steps with their dependencies) without carrying it
    /// out.
    Plan {
        /// What to do, in words (Korean or English).
        goal: String,
        /// The workspace (default: the one the current folder is in).
        #[arg(long)]
        root: Option<PathBuf>,
        #[arg(long)]
        model_url: Option<String>,
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        provider: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Carry out a task in the workspace: plan it, then for each step read, search, edit and
    /// run commands through the executor, check what the step changed and fix what it broke.
    /// Progress and the plan on stderr, then the diff and the exit reason. Asks before each
    /// change on a terminal; without one, --yes allows changes.
    Run {
        /// What to do, in words (Korean or English).
        goal: String,
        /// The workspace (default: the one the current folder is in).
        #[arg(long)]
        root: Option<PathBuf>,
        /// Apply changes without asking.
        #[arg(long)]
        yes: bool,
        /// Change nothing: carry the task out in a copy of the workspace and print the diff.
        #[arg(long)]
        dry_run: bool,
        /// The project's test command, run after each step (default: [test] command).
        #[arg(long)]
        test_command: Option<String>,
        /// The role to act in: architect, coder, tester, reviewer, documenter (or one the
        /// workspace adds in .tokamak/agents/); default: each step routed by its words.
        #[arg(long)]
        role: Option<String>,
        /// The model's base URL (OpenAI-compatible unless --provider says otherwise).
        #[arg(long)]
        model_url: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// openai, anthropic or ollama.
        #[arg(long)]
        provider: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// List the checkpoints of the runs that changed files (newest first).
    Checkpoints {
        /// The workspace (default: the one the current folder is in).
        root: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Restore the files a run changed to what they were before it.
    Rollback {
        /// A checkpoint id (or its first digits) or a run id, from `tokamak checkpoints`.
        id: String,
        /// The workspace (default: the one the current folder is in).
        #[arg(long)]
        root: Option<PathBuf>,
        /// Restore even files that changed after the run (those changes are lost).
        #[arg(long)]
        force: bool,
    },
    /// Trust a folder: its own tokamak.toml settings (commands, model URLs, keys) and the
    /// programs inside it are used. Written to the user's settings file.
    Trust {
        /// The folder (default: the current one).
        path: Option<PathBuf>,
        /// Stop trusting it.
        #[arg(long)]
        remove: bool,
    },
    /// Measure: run a benchmark and print a table.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Which sandbox confines the agent's commands here, what it confines, and why the other
    /// backends are not used; exit status 1 when none does.
    Sandbox,
    /// The model Tokamak talks to.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
}

/// The model a benchmark asks, over its settings.
#[derive(clap::Args)]
struct BenchModel {
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
}

impl BenchModel {
    fn overlay(self) -> serde_json::Value {
        model_overlay(self.model_url, self.model, self.provider, self.max_reply_tokens)
    }
}

#[derive(Subcommand)]
enum BenchWhat {
    /// How long a user waits: `didOpen` → first diagnostics, and keystrokes (typed into a
    /// comment at the top, in the middle of the longest class and at the end) → diagnostics,
    /// median, p90 and p99, for `tokamak lsp` and, side by side, another language server.
    Latency {
        /// The file to open and type into (Python, TypeScript or JavaScript); each server gets
        /// a copy of it in a folder of its own.
        file: PathBuf,
        /// Another server's command line, split at spaces (e.g. "ruff server").
        #[arg(long)]
        against: Option<String>,
        /// Keystrokes typed at each of the three places.
        #[arg(long, default_value_t = 60)]
        keystrokes: usize,
        /// Milliseconds between a keystroke's diagnostics and the next keystroke, as a person
        /// types (0: back to back). A pause lets the machine's cores sleep, and a server then
        /// pays for waking each thread a message passes through.
        #[arg(long, default_value_t = 0)]
        pause: u64,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The language server's memory on a real workspace: started on DIR, its index built, then
    /// documents of some ten thousand lines opened (made of DIR's own Python files).
    Memory {
        dir: PathBuf,
        /// Documents opened.
        #[arg(long, default_value_t = 20)]
        open: usize,
        /// Lines in each document, at least.
        #[arg(long, default_value_t = 10_000)]
        lines: usize,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The workspace index on a real tree: built cold, one file updated, symbol searches and
    /// the callers and importers of each best hit, with the times and the memory it took.
    Context {
        /// The tree to index (e.g. /usr/lib/python3.11).
        root: PathBuf,
        /// Symbol searches to time.
        #[arg(long = "query", default_values_t = ["urlopen".to_string(), "parse_args".to_string(), "HTTPConnection".to_string()])]
        queries: Vec<String>,
        /// A question set (`question TAB expected,files` lines, e.g.
        /// fixtures/context/cpython-queries.tsv): top-1/top-5 hit rates beside a plain BM25.
        #[arg(long)]
        questions: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// How precisely syntax errors are placed: real code with one token removed (a block's
    /// `:`, a bracket, a brace), Tokamak's first syntax error against the line the token was
    /// removed from, beside ruff's (Python) and tsc's (TypeScript) on the same files.
    Syntax {
        /// Folders of Python files to mutate (e.g. /usr/lib/python3.11).
        #[arg(long)]
        python: Vec<PathBuf>,
        /// Folders of TypeScript files to mutate (e.g. rxjs's src).
        #[arg(long)]
        typescript: Vec<PathBuf>,
        /// Files per language at most, spread over the sorted list.
        #[arg(long, default_value_t = 200)]
        files: usize,
        /// The ruff to compare with (default: the tools folder's, then `PATH`'s).
        #[arg(long)]
        ruff: Option<PathBuf>,
        /// The tsc to compare with (default: the tools folder's, then `PATH`'s).
        #[arg(long)]
        tsc: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Carry out every task of a task benchmark (e.g. fixtures/taskbench) and judge it by its
    /// hidden acceptance tests: solved, steps, actions, tokens (prompt, cached, completion),
    /// wall time and exit reason per task, then the totals.
    Task {
        /// The folder holding one folder per task (each with a task.toml, project/, accept/).
        dir: PathBuf,
        /// Only tasks whose name contains this.
        #[arg(long)]
        filter: Option<String>,
        #[command(flatten)]
        model: BenchModel,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
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
        /// Candidate fixes per attempt, verified by each case's `[test] command` (1..=5).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=5))]
        candidates: Option<u32>,
        #[command(flatten)]
        model: BenchModel,
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

/// `tokamak lsp` (this very binary), then the other server, on the same file.
fn bench_latency(
    file: &std::path::Path,
    against: Option<&str>,
    keystrokes: usize,
    pause: u64,
) -> anyhow::Result<Vec<tokamak::server::latency::ServerLatency>> {
    use tokamak::server::latency::{LatencyOptions, measure};
    let pause = std::time::Duration::from_millis(pause);
    let options = LatencyOptions { keystrokes, pause, ..LatencyOptions::default() };
    let me = std::env::current_exe()?.display().to_string();
    let mut servers = vec![vec![me, "lsp".to_string()]];
    if let Some(other) = against {
        servers.push(other.split_whitespace().map(str::to_string).collect());
    }
    servers.iter().map(|command| Ok(measure(command, file, &options)?)).collect()
}

fn main() -> ExitCode {
    // the Landlock helper, before anything else starts (no thread, no runtime): it confines
    // itself and runs one command of the agent's
    #[cfg(target_os = "linux")]
    if std::env::args_os().nth(1).is_some_and(|arg| arg == tokamak::sandbox::landlock::SUBCOMMAND) {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
        let code = tokamak::sandbox::landlock::helper_main(&args);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = Cli::parse();
    let command = match cli.command {
        None if cli.acp => Command::Acp,
        Some(command) => command,
        None if !std::io::stdin().is_terminal() => Command::Lsp,
        None => {
            eprintln!("tokamak: say what to do, e.g. `tokamak lsp` or `tokamak check PATH` (see --help)");
            return ExitCode::from(USAGE);
        }
    };
    // what Tokamak keeps of projects is the user's alone, whatever the umask made of it
    if let Err(err) = tokamak::places::make_cache_private() {
        eprintln!("tokamak: cannot make {} private: {err}", tokamak::places::cache_dir().display());
    }
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
            runtime.block_on(tokamak::server::run_stdio(Some(queue)))
        }
        Command::Acp => {
            // logs go to stderr only: stdout carries the protocol
            tokamak::logging::init_cli();
            match runtime.block_on(tokamak::acp::serve()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    eprintln!("tokamak: {err:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Sandbox => {
            let root = tokamak::config::find_root(Path::new("."));
            match tokamak::cli::sandbox::check_sandbox(&root) {
                Ok(check) => {
                    for line in &check.lines {
                        println!("{line}");
                    }
                    if check.confined { ExitCode::SUCCESS } else { ExitCode::FAILURE }
                }
                Err(err) => {
                    eprintln!("tokamak: {err}");
                    ExitCode::from(USAGE)
                }
            }
        }
        Command::Model { action: ModelAction::Check { role, stream } } => {
            tokamak::logging::init_cli();
            runtime.block_on(output::run_model_check(role.as_deref(), stream))
        }
        Command::Fix { paths, max_attempts, candidates, dry_run, format, checkers } => {
            tokamak::logging::init_cli();
            let checkers = checkers.map(|names| names.into_iter().filter(|n| n != "none").collect());
            let options = FixOptions {
                max_attempts,
                candidates,
                dry_run,
                progress: format == Format::Text,
                checkers,
                model: serde_json::Value::Null,
                trusted: None,
            };
            runtime.block_on(output::run_fix(&paths, format, &options))
        }
        Command::Bench { what: BenchWhat::Memory { dir, open, lines, format } } => {
            tokamak::logging::init_cli();
            let options = tokamak::server::memory::MemoryOptions { open, lines, ..Default::default() };
            let result = std::env::current_exe().map_err(anyhow::Error::from).and_then(|me| {
                let command = [me.display().to_string(), "lsp".to_string()];
                Ok(tokamak::server::memory::measure_memory(&command, &dir, &options)?)
            });
            output::print_bench(result, format, tokamak::server::memory::table)
        }
        Command::Bench { what: BenchWhat::Latency { file, against, keystrokes, pause, format } } => {
            tokamak::logging::init_cli();
            let result = bench_latency(&file, against.as_deref(), keystrokes, pause);
            output::print_bench(result, format, |results| tokamak::server::latency::table(results))
        }
        Command::Bench { what: BenchWhat::Fix { dir, filter, max_attempts, candidates, model, format } } => {
            tokamak::logging::init_cli();
            let options = BenchOptions { filter, max_attempts, candidates, model: model.overlay() };
            runtime.block_on(output::run_bench_fix(&dir, format, &options))
        }
        Command::Bench { what: BenchWhat::Task { dir, filter, model, format } } => {
            tokamak::logging::init_cli();
            let options = tokamak::cli::bench_task::TaskBenchOptions { filter, model: model.overlay() };
            runtime.block_on(output::run_bench_task(&dir, format, &options))
        }
        Command::Bench { what: BenchWhat::Context { root, queries, questions, format } } => {
            tokamak::logging::init_cli();
            let questions =
                match questions.as_deref().map(tokamak::cli::bench_context::read_questions).transpose() {
                    Ok(questions) => questions,
                    Err(err) => {
                        eprintln!("tokamak: {err:#}");
                        return ExitCode::from(USAGE);
                    }
                };
            let bench = tokamak::cli::bench_context::bench_context(&root, &queries, questions.as_deref());
            output::print_bench(bench, format, tokamak::cli::bench_context::table)
        }
        Command::Bench { what: BenchWhat::Syntax { python, typescript, files, ruff, tsc, format } } => {
            tokamak::logging::init_cli();
            let options =
                tokamak::cli::bench_syntax::SyntaxBenchOptions { python, typescript, files, ruff, tsc };
            let rows = tokamak::cli::bench_syntax::bench_syntax(&options);
            output::print_bench(rows, format, |rows| tokamak::cli::bench_syntax::table(rows))
        }
        Command::Run { goal, root, yes, dry_run, test_command, role, model_url, model, provider, format } => {
            tokamak::logging::init_cli();
            let test_command = match test_command.map(|line| shlex::split(&line)) {
                Some(None) => {
                    eprintln!("tokamak: --test-command has an unclosed quote");
                    return ExitCode::from(USAGE);
                }
                Some(Some(argv)) if !argv.is_empty() => Some(argv),
                _ => None,
            };
            let model = model_overlay(model_url, model, provider, None);
            let root = root.unwrap_or_else(|| tokamak::config::find_root(Path::new(".")));
            let options =
                RunOptions { model, progress: format == Format::Text, test_command, dry_run, yes, role };
            runtime.block_on(output::run_task(&root, &goal, format, &options))
        }
        Command::Plan { goal, root, model_url, model, provider, format } => {
            tokamak::logging::init_cli();
            let model = model_overlay(model_url, model, provider, None);
            let root = root.unwrap_or_else(|| tokamak::config::find_root(Path::new(".")));
            let options = RunOptions { model, progress: false, ..RunOptions::default() };
            runtime.block_on(output::make_plan(&root, &goal, format, &options))
        }
        Command::Checkpoints { root, format } => {
            tokamak::logging::init_cli();
            let root = root.unwrap_or_else(|| tokamak::config::find_root(Path::new(".")));
            runtime.block_on(output::list_checkpoints(&root, format))
        }
        Command::Rollback { id, root, force } => {
            tokamak::logging::init_cli();
            let root = root.unwrap_or_else(|| tokamak::config::find_root(Path::new(".")));
            runtime.block_on(output::rollback(&root, &id, force))
        }
        Command::Trust { path, remove } => {
            tokamak::logging::init_cli();
            let path = path.unwrap_or_else(|| PathBuf::from("."));
            match tokamak::cli::history::trust(&path, remove) {
                Ok(message) => {
                    println!("{message}");
                    ExitCode::SUCCESS
                }
                Err(err) => {
                    eprintln!("tokamak: {err:#}");
                    ExitCode::from(USAGE)
                }
            }
        }
        Command::Context { query, root, limit, format } => {
            tokamak::logging::init_cli();
            let root = root.unwrap_or_else(|| tokamak::config::find_root(Path::new(".")));
            let cache = tokamak::context::LiveIndex::cache_file(&root);
            let (index, _) = tokamak::context::Index::build_cached(&root, &cache);
            let ranked = tokamak::context::rank(&index, &query, None, limit);
            match format {
                Format::Json => {
                    let shown: Vec<serde_json::Value> = ranked
                        .iter()
                        .map(|r| {
                            serde_json::json!({
                                "path": r.path.strip_prefix(&root).unwrap_or(&r.path),
                                "score": r.score,
                                "symbols": r.symbols,
                                "reasons": r.reasons,
                            })
                        })
                        .collect();
                    println!("{}", serde_json::to_string_pretty(&shown).unwrap_or_default());
                }
                Format::Text => {
                    for r in &ranked {
                        let path = r.path.strip_prefix(&root).unwrap_or(&r.path);
                        println!("{:6.1}  {}", r.score, path.display());
                        for s in &r.symbols {
                            println!("        {} {} (line {})", s.kind, s.name, s.line);
                        }
                        println!("        because it {}", r.reasons.join("; "));
                    }
                    if ranked.is_empty() {
                        eprintln!("tokamak: nothing in {} matches {query:?}", root.display());
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Command::Check { paths, format, checkers } => {
            tokamak::logging::init_cli();
            let checkers = checkers.map(|names| names.into_iter().filter(|n| n != "none").collect());
            runtime.block_on(output::run_check(&paths, format, &CheckOptions { checkers }))
        }
    }
}

/// `[model]` settings from command-line flags (`null` when none is given).
fn model_overlay(
    model_url: Option<String>,
    model: Option<String>,
    provider: Option<String>,
    max_reply_tokens: Option<u32>,
) -> serde_json::Value {
    let mut overlay = serde_json::Map::new();
    for (key, value) in [("base_url", model_url), ("model", model), ("provider", provider)] {
        if let Some(value) = value {
            overlay.insert(key.to_string(), serde_json::Value::String(value));
        }
    }
    if let Some(tokens) = max_reply_tokens {
        overlay.insert("max_tokens".to_string(), serde_json::Value::from(tokens));
    }
    if overlay.is_empty() { serde_json::Value::Null } else { serde_json::Value::Object(overlay) }
}
