//! The command line itself: its flags (clap), and each command dispatched to what carries it
//! out, with the exit status it ends with. `main.rs` serves the protocols on stdio and hands
//! every other command here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use super::bench::BenchOptions;
use super::check::{CheckOptions, Format};
use super::fix::FixOptions;
use super::output::{self, FAILURE, SUCCESS, USAGE};
use super::run::RunOptions;
use super::stdio::{errln, outln};

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
pub enum Command {
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
        #[command(flatten)]
        model: ModelFlags,
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
        #[command(flatten)]
        model: ModelFlags,
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
pub struct BenchModel {
    #[command(flatten)]
    model: ModelFlags,
    /// The most tokens one reply may have ([model] max_tokens).
    #[arg(long)]
    max_reply_tokens: Option<u32>,
}

/// The model a command asks, over its settings.
#[derive(clap::Args)]
pub struct ModelFlags {
    /// The model's base URL (OpenAI-compatible unless --provider says otherwise).
    #[arg(long)]
    model_url: Option<String>,
    /// The model's name.
    #[arg(long)]
    model: Option<String>,
    /// openai, anthropic or ollama.
    #[arg(long)]
    provider: Option<String>,
}

impl BenchModel {
    fn overlay(self) -> serde_json::Value {
        model_overlay(self.model, self.max_reply_tokens)
    }
}

#[derive(Subcommand)]
pub enum BenchWhat {
    /// How long a user waits: `didOpen` → first diagnostics, and keystrokes (typed into a
    /// comment at the top, in the middle of the longest class and at the end) → diagnostics,
    /// median, p90 and p99, for `tokamak lsp` and, side by side, another language server.
    Latency(LatencyArgs),
    /// The language server's memory on a real workspace: started on DIR, its index built, then
    /// documents of some ten thousand lines opened (made of DIR's own Python files).
    Memory(MemoryArgs),
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

// `tokamak bench latency`'s flags: measured in `main.rs`, where the language server is.
#[derive(clap::Args)]
pub struct LatencyArgs {
    /// The file to open and type into (Python, TypeScript or JavaScript); each server gets
    /// a copy of it in a folder of its own.
    pub file: PathBuf,
    /// Another server's command line, split at spaces (e.g. "ruff server").
    #[arg(long)]
    pub against: Option<String>,
    /// Keystrokes typed at each of the three places.
    #[arg(long, default_value_t = 60)]
    pub keystrokes: usize,
    /// Milliseconds between a keystroke's diagnostics and the next keystroke, as a person
    /// types (0: back to back). A pause lets the machine's cores sleep, and a server then
    /// pays for waking each thread a message passes through.
    #[arg(long, default_value_t = 0)]
    pub pause: u64,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

// `tokamak bench memory`'s flags: measured in `main.rs`, where the language server is.
#[derive(clap::Args)]
pub struct MemoryArgs {
    pub dir: PathBuf,
    /// Documents opened.
    #[arg(long, default_value_t = 20)]
    pub open: usize,
    /// Lines in each document, at least.
    #[arg(long, default_value_t = 10_000)]
    pub lines: usize,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Subcommand)]
pub enum ModelAction {
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

/// What the command line asks for.
pub enum Parsed {
    /// Serve the Language Server Protocol on stdin/stdout.
    Lsp,
    /// Serve the Agent Client Protocol on stdin/stdout.
    Acp,
    /// Measure the language server as an editor waits on it.
    Latency(LatencyArgs),
    /// Measure the language server's memory.
    Memory(MemoryArgs),
    /// A command of the command line's own, for [`execute`].
    Command(Box<Command>),
    /// Nothing to do but end with this status (the help, the version, bad usage: said already).
    Exit(u8),
}

/// Reads the command line (`args`, the program's name first). With no command, stdin not being
/// a terminal means an editor started the server: `stdin_is_terminal` tells.
pub fn parse(args: impl IntoIterator<Item = OsString>, stdin_is_terminal: bool) -> Parsed {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            if super::stdio::redirected() {
                let text = err.render().to_string();
                if err.use_stderr() {
                    super::stdio::to_err(format_args!("{text}"));
                } else {
                    super::stdio::to_out(format_args!("{text}"));
                }
            } else if let Err(written) = err.print()
                // clap's own way: in colour on a terminal
                && written.kind() != std::io::ErrorKind::BrokenPipe
            {
                // the help or the version not written (a full disk): not an answer
                errln!("tokamak: cannot write the output: {written}");
                return Parsed::Exit(u8::try_from(err.exit_code()).unwrap_or(USAGE).max(FAILURE));
            }
            return Parsed::Exit(u8::try_from(err.exit_code()).unwrap_or(USAGE));
        }
    };
    match cli.command {
        None if cli.acp => Parsed::Acp,
        Some(Command::Lsp) => Parsed::Lsp,
        Some(Command::Acp) => Parsed::Acp,
        Some(Command::Bench { what: BenchWhat::Latency(args) }) => Parsed::Latency(args),
        Some(Command::Bench { what: BenchWhat::Memory(args) }) => Parsed::Memory(args),
        Some(command) => Parsed::Command(Box::new(command)),
        None if !stdin_is_terminal => Parsed::Lsp,
        None => {
            errln!("tokamak: say what to do, e.g. `tokamak lsp` or `tokamak check PATH` (see --help)");
            Parsed::Exit(USAGE)
        }
    }
}

/// The command line's logging: warnings on stderr (or its stand-in), unless `TOKAMAK_LOG` says
/// otherwise.
fn init_logging() {
    crate::logging::init_cli(|| super::stdio::LogWriter);
}

/// Carries out `command` on a runtime of its own; the exit status (1 for a command that ended
/// well but whose answer could not be written whole).
pub fn execute(command: Command) -> u8 {
    finish(carry_out(command))
}

/// A command's exit status once its answer is out: 1 for one that ended well but whose answer
/// could not be written whole.
pub fn finish(code: u8) -> u8 {
    super::stdio::flush_out();
    if code == SUCCESS && super::stdio::write_failed() { FAILURE } else { code }
}

/// What every command and protocol starts with: the user's cache made theirs alone (whatever
/// the umask made of it), and an async runtime — `None` when it cannot start, said on stderr.
pub fn start() -> Option<tokio::runtime::Runtime> {
    if let Err(err) = crate::places::make_cache_private() {
        errln!("tokamak: cannot make {} private: {err}", crate::places::cache_dir().display());
    }
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => Some(runtime),
        Err(err) => {
            errln!("tokamak: cannot start the async runtime: {err}");
            None
        }
    }
}

fn carry_out(command: Command) -> u8 {
    let Some(runtime) = start() else {
        return FAILURE;
    };
    match command {
        Command::Lsp | Command::Acp => {
            errln!(
                "tokamak: the protocols are served on stdin and stdout by `tokamak lsp` and `tokamak acp`"
            );
            USAGE
        }
        Command::Sandbox => {
            let root = crate::config::find_root(Path::new("."));
            match crate::cli::sandbox::check_sandbox(&root) {
                Ok(check) => {
                    for line in &check.lines {
                        outln!("{line}");
                    }
                    if check.confined { SUCCESS } else { FAILURE }
                }
                Err(err) => {
                    errln!("tokamak: {err}");
                    USAGE
                }
            }
        }
        Command::Model { action: ModelAction::Check { role, stream } } => {
            init_logging();
            runtime.block_on(output::run_model_check(role.as_deref(), stream))
        }
        Command::Fix { paths, max_attempts, candidates, dry_run, format, checkers } => {
            init_logging();
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
        Command::Bench { what: BenchWhat::Latency(_) | BenchWhat::Memory(_) } => {
            errln!("tokamak: the language server's benchmarks are measured by the `tokamak` binary");
            USAGE
        }
        Command::Bench { what: BenchWhat::Fix { dir, filter, max_attempts, candidates, model, format } } => {
            init_logging();
            let options = BenchOptions { filter, max_attempts, candidates, model: model.overlay() };
            runtime.block_on(output::run_bench_fix(&dir, format, &options))
        }
        Command::Bench { what: BenchWhat::Task { dir, filter, model, format } } => {
            init_logging();
            let options = crate::cli::bench_task::TaskBenchOptions { filter, model: model.overlay() };
            runtime.block_on(output::run_bench_task(&dir, format, &options))
        }
        Command::Bench { what: BenchWhat::Context { root, queries, questions, format } } => {
            init_logging();
            let questions =
                match questions.as_deref().map(crate::cli::bench_context::read_questions).transpose() {
                    Ok(questions) => questions,
                    Err(err) => {
                        errln!("tokamak: {err:#}");
                        return USAGE;
                    }
                };
            let bench = crate::cli::bench_context::bench_context(&root, &queries, questions.as_deref());
            output::print_bench(bench, format, crate::cli::bench_context::table)
        }
        Command::Bench { what: BenchWhat::Syntax { python, typescript, files, ruff, tsc, format } } => {
            init_logging();
            let options =
                crate::cli::bench_syntax::SyntaxBenchOptions { python, typescript, files, ruff, tsc };
            let rows = crate::cli::bench_syntax::bench_syntax(&options);
            output::print_bench(rows, format, |rows| crate::cli::bench_syntax::table(rows))
        }
        Command::Run { goal, root, yes, dry_run, test_command, role, model, format } => {
            init_logging();
            let test_command = match test_command.map(|line| shlex::split(&line)) {
                Some(None) => {
                    errln!("tokamak: --test-command has an unclosed quote");
                    return USAGE;
                }
                Some(Some(argv)) if !argv.is_empty() => Some(argv),
                _ => None,
            };
            let model = model_overlay(model, None);
            let root = root.unwrap_or_else(|| crate::config::find_root(Path::new(".")));
            let options =
                RunOptions { model, progress: format == Format::Text, test_command, dry_run, yes, role };
            runtime.block_on(output::run_task(&root, &goal, format, &options))
        }
        Command::Plan { goal, root, model, format } => {
            init_logging();
            let model = model_overlay(model, None);
            let root = root.unwrap_or_else(|| crate::config::find_root(Path::new(".")));
            let options = RunOptions { model, progress: false, ..RunOptions::default() };
            runtime.block_on(output::make_plan(&root, &goal, format, &options))
        }
        Command::Checkpoints { root, format } => {
            init_logging();
            let root = root.unwrap_or_else(|| crate::config::find_root(Path::new(".")));
            runtime.block_on(output::list_checkpoints(&root, format))
        }
        Command::Rollback { id, root, force } => {
            init_logging();
            let root = root.unwrap_or_else(|| crate::config::find_root(Path::new(".")));
            runtime.block_on(output::rollback(&root, &id, force))
        }
        Command::Trust { path, remove } => {
            init_logging();
            let path = path.unwrap_or_else(|| PathBuf::from("."));
            match crate::cli::history::trust(&path, remove) {
                Ok(message) => {
                    outln!("{message}");
                    SUCCESS
                }
                Err(err) => {
                    errln!("tokamak: {err:#}");
                    USAGE
                }
            }
        }
        Command::Context { query, root, limit, format } => {
            init_logging();
            let root = root.unwrap_or_else(|| crate::config::find_root(Path::new(".")));
            let cache = crate::context::LiveIndex::cache_file(&root);
            let (index, _) = crate::context::Index::build_cached(&root, &cache);
            let ranked = crate::context::rank(&index, &query, None, limit);
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
                    outln!("{}", serde_json::to_string_pretty(&shown).unwrap_or_default());
                }
                Format::Text => {
                    for r in &ranked {
                        let path = r.path.strip_prefix(&root).unwrap_or(&r.path);
                        outln!("{:6.1}  {}", r.score, path.display());
                        for s in &r.symbols {
                            outln!("        {} {} (line {})", s.kind, s.name, s.line);
                        }
                        outln!("        because it {}", r.reasons.join("; "));
                    }
                    if ranked.is_empty() {
                        errln!("tokamak: nothing in {} matches {query:?}", root.display());
                    }
                }
            }
            SUCCESS
        }
        Command::Check { paths, format, checkers } => {
            init_logging();
            let checkers = checkers.map(|names| names.into_iter().filter(|n| n != "none").collect());
            runtime.block_on(output::run_check(&paths, format, &CheckOptions { checkers }))
        }
    }
}

/// `[model]` settings from command-line flags (`null` when none is given).
fn model_overlay(flags: ModelFlags, max_reply_tokens: Option<u32>) -> serde_json::Value {
    let mut overlay = serde_json::Map::new();
    for (key, value) in [("base_url", flags.model_url), ("model", flags.model), ("provider", flags.provider)]
    {
        if let Some(value) = value {
            overlay.insert(key.to_string(), serde_json::Value::String(value));
        }
    }
    if let Some(tokens) = max_reply_tokens {
        overlay.insert("max_tokens".to_string(), serde_json::Value::from(tokens));
    }
    if overlay.is_empty() { serde_json::Value::Null } else { serde_json::Value::Object(overlay) }
}
