//! Settings: what the user can tune, with defaults that work with no configuration.
//!
//! Every setting is documented in `docs/CONFIG.md`. They come from `tokamak.toml` in the
//! workspace root, overridden key by key by LSP `initializationOptions` (same structure,
//! same snake_case names).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::ModelSettings;

/// Documents larger than this are kept as text but not parsed (10 MiB).
pub const DEFAULT_MAX_PARSE_BYTES: usize = 10 * 1024 * 1024;

/// The settings file looked for in the workspace root.
pub const CONFIG_FILE: &str = "tokamak.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {reason}", path.display())]
    Read { path: PathBuf, reason: std::io::Error },
    #[error("{} is not valid TOML: {reason}", path.display())]
    Toml { path: PathBuf, reason: String },
    #[error("invalid settings{}: {reason}", from.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default())]
    Invalid { from: Option<PathBuf>, reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SyntaxSettings {
    /// `syntax.max_file_bytes`: larger documents get no syntax tree, diagnostics or symbols.
    pub max_file_bytes: usize,
    /// `syntax.background_parse_bytes`: documents larger than this are reparsed off the
    /// keystroke, in the background once typing pauses (tree-sitter's reparse of a large file
    /// can take tens of milliseconds). Smaller documents are too once a reparse of theirs
    /// took more than a few milliseconds.
    pub background_parse_bytes: usize,
    /// `syntax.tree_bytes`: how much open text keeps its syntax tree — the most recently
    /// edited documents' (a tree takes some twenty times its text); the others' trees are let
    /// go and parsed again, off the keystroke, when they are next edited or needed. The most
    /// recent document always keeps its tree.
    pub tree_bytes: usize,
}

/// Documents over this size are reparsed in the background (1 MiB).
pub const DEFAULT_BACKGROUND_PARSE_BYTES: usize = 1024 * 1024;
/// Open text whose trees are kept (2 MiB: some forty megabytes of trees).
pub const DEFAULT_TREE_BYTES: usize = 2 * 1024 * 1024;

impl Default for SyntaxSettings {
    fn default() -> Self {
        SyntaxSettings {
            max_file_bytes: DEFAULT_MAX_PARSE_BYTES,
            background_parse_bytes: DEFAULT_BACKGROUND_PARSE_BYTES,
            tree_bytes: DEFAULT_TREE_BYTES,
        }
    }
}

/// `[checkers]`: the external tools the Observer runs. (Not `deny_unknown_fields`: serde
/// cannot combine it with `flatten`; a stray key is read as a checker table and fails there.)
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct CheckerSettings {
    /// Exactly these checkers (preset or generic names). Unset: every preset whose tool is
    /// found, plus every generic checker defined below.
    pub enable: Option<Vec<String>>,
    /// These never run, whatever else says.
    pub disable: Vec<String>,
    /// A run taking longer is killed and reported.
    pub timeout_ms: u64,
    /// How many checker processes may run at once.
    pub max_concurrent: usize,
    /// Also run on every change (after `debounce_ms` of quiet), not only on open and save.
    pub run_on_change: bool,
    pub debounce_ms: u64,
    /// Per-checker settings: overrides of a preset (`[checkers.ruff]`) or a generic checker
    /// of your own (`[checkers.shellcheck]`).
    #[serde(flatten, deserialize_with = "checker_config")]
    pub tools: BTreeMap<String, CheckerConfig>,
}

impl Default for CheckerSettings {
    fn default() -> Self {
        CheckerSettings {
            enable: None,
            disable: Vec::new(),
            timeout_ms: 30_000,
            max_concurrent: 2,
            run_on_change: false,
            debounce_ms: 300,
            tools: BTreeMap::new(),
        }
    }
}

/// Whether Tokamak publishes its own run of a checker (`checkers.<name> = "auto"`, or
/// `publish = …` in its table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PublishMode {
    /// Published unless the editor forwards the same tool's diagnostics (its own server): then
    /// those are shown, and Tokamak's run is kept for the agent only.
    #[default]
    Auto,
    /// Always published.
    On,
    /// Never published (still run for the agent).
    Off,
}

/// One checker's settings. For a preset every field is optional and overrides the preset;
/// a generic checker needs `command`, something to match files (`languages` or `files`),
/// and `pattern` or `errorformat`. `checkers.<name> = "auto" | "on" | "off"` alone sets
/// only `publish`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckerConfig {
    pub command: Option<String>,
    /// Arguments; `{file}` is the path of the file to check, `{root}` the workspace root.
    pub args: Option<Vec<String>>,
    /// Language ids it applies to (`python`, `typescript`, `typescriptreact`, `javascript`,
    /// `javascriptreact`).
    pub languages: Option<Vec<String>>,
    /// File globs it applies to (`*.sh`), for languages Tokamak does not parse.
    pub files: Option<Vec<String>>,
    /// Feed the buffer on stdin (else the file is checked on disk, or through a shadow copy
    /// when the buffer has unsaved changes).
    pub stdin: Option<bool>,
    /// A regex with named groups `line` and `message`, and optionally `file`, `col`,
    /// `end_line`, `end_col`, `severity`, `code`.
    pub pattern: Option<String>,
    /// Or an errorformat: `%f` file, `%l` line, `%c` column, `%e` end line, `%k` end column,
    /// `%t` severity letter, `%n` code, `%m` message, `%%` a percent sign.
    pub errorformat: Option<String>,
    /// How the tool counts columns: `utf-8`, `utf-16` or `utf-32` (characters, the default).
    pub column_encoding: Option<String>,
    pub timeout_ms: Option<u64>,
    pub publish: Option<PublishMode>,
    /// Folders it writes, relative to where it runs (a build's `target`): the only ones it
    /// may write when it runs confined (a built-in tool's own caches are known).
    pub writes: Option<Vec<String>>,
}

/// `checkers.<name>`: a publish mode string or a table.
fn checker_config<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, CheckerConfig>, D::Error> {
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = BTreeMap<String, CheckerConfig>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("checker tables")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(name) = map.next_key::<String>()? {
                let entry: OneChecker = map.next_value()?;
                out.insert(name, entry.0);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Entries)
}

/// One `checkers.<name>` value.
struct OneChecker(CheckerConfig);

impl<'de> Deserialize<'de> for OneChecker {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Value;
        impl<'de> serde::de::Visitor<'de> for Value {
            type Value = CheckerConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"auto\", \"on\", \"off\" or a checker table")
            }
            fn visit_str<E: serde::de::Error>(self, mode: &str) -> Result<CheckerConfig, E> {
                let publish = PublishMode::deserialize(serde::de::value::StrDeserializer::<E>::new(mode))?;
                Ok(CheckerConfig { publish: Some(publish), ..CheckerConfig::default() })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<CheckerConfig, A::Error> {
                CheckerConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_any(Value).map(OneChecker)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub syntax: SyntaxSettings,
    pub checkers: CheckerSettings,
    /// `[model]`: the model the agent uses (see `model::ModelConfig::resolve`).
    pub model: ModelSettings,
    /// `[profiles.<role>]`: a role's own model settings over `[model]`.
    pub profiles: BTreeMap<String, ModelSettings>,
    /// `[fix]`: the fix loop's limits.
    pub fix: FixSettings,
    /// `[commands]`: which commands the agent may run without asking, and how.
    pub commands: CommandSettings,
    /// `sandbox` (a backend's name) or `[sandbox]`: what confines the agent's commands.
    pub sandbox: SandboxSettings,
    /// `auto_commit`: `git_commit` actions commit without asking.
    pub auto_commit: bool,
    /// `approval`: what the agent asks a person before doing (`low`, `medium`, `high`).
    pub approval: ApprovalLevel,
    /// `[checkpoints]`: the shadow repository that makes every run undoable.
    pub checkpoints: CheckpointSettings,
    /// `[limits]`: how far one agent run may go (SPEC G1).
    pub limits: LimitSettings,
    /// `[test]`: the project's test command.
    pub test: TestSettings,
    /// `[plan]`: how plans are made.
    pub plan: PlanSettings,
    /// `[context]`: what the model sees of the workspace.
    pub context: ContextSettings,
    /// `[mcp]`: MCP servers whose tools the agent may call.
    pub mcp: McpSettings,
}

/// `[mcp]`: MCP servers whose tools are offered to the model beside Tokamak's own actions
/// (the user's settings; a trusted project's own `.mcp.json` and `[mcp]` too).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// `[mcp.servers.NAME]`: each server, as `.mcp.json` describes one.
    pub servers: BTreeMap<String, McpServerSettings>,
    /// Seconds a run waits for servers still starting before it goes on without them.
    pub startup_timeout_s: u64,
    /// Seconds one tool call may take (and never past the run's own limits).
    pub call_timeout_s: u64,
    /// Bytes of a tool's result the model is shown (the rest is cut, with a marker).
    pub max_result_bytes: usize,
    /// Read a trusted project's `.mcp.json` (Claude Code's file).
    pub project_servers: bool,
    /// Tools called without asking, by Claude Code's names: `mcp__<server>` for all of a
    /// server's, `mcp__<server>__<tool>` for one (servers from `.mcp.json` or the editor too).
    pub allow: Vec<String>,
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            servers: BTreeMap::new(),
            startup_timeout_s: 20,
            call_timeout_s: 60,
            max_result_bytes: 16 * 1024,
            project_servers: true,
            allow: Vec::new(),
        }
    }
}

/// `[mcp.servers.NAME]`: a server started as a program (`command`, `args`, `env`) or reached
/// at a `url` (streamable HTTP, or `type = "sse"` for the older SSE transport).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerSettings {
    /// `stdio`, `http` or `sse`; unset: `stdio` with a command, `http` with a url.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Variables the program is started with (beside a minimal environment).
    pub env: BTreeMap<String, String>,
    pub url: Option<String>,
    /// Headers sent with every HTTP request (a bearer token, say).
    pub headers: BTreeMap<String, String>,
    /// Tools called without asking: `true` for all of them, or their names.
    pub allow: AllowTools,
    /// `false`: not started.
    pub enabled: bool,
}

impl Default for McpServerSettings {
    fn default() -> Self {
        McpServerSettings {
            kind: None,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            headers: BTreeMap::new(),
            allow: AllowTools::default(),
            enabled: true,
        }
    }
}

/// Which of a server's tools run without asking.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum AllowTools {
    /// `true`: every tool of the server; `false`: none.
    All(bool),
    /// These tools (their names as the server gives them).
    Only(Vec<String>),
}

impl Default for AllowTools {
    fn default() -> Self {
        AllowTools::All(false)
    }
}

impl AllowTools {
    pub fn allows(&self, tool: &str) -> bool {
        match self {
            AllowTools::All(all) => *all,
            AllowTools::Only(tools) => tools.iter().any(|t| t == tool),
        }
    }
}

/// `[context]` (SPEC C2–C4).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextSettings {
    /// Tokens of the workspace (rules, files, outlines, paths) one prompt may carry.
    pub budget_tokens: usize,
    /// Model summaries of large files a run may ask for (cached by content hash; 0: outlines
    /// only).
    pub summaries: usize,
    /// A file of more lines than this is shown by its summary or outline rather than whole.
    pub large_file_lines: usize,
    /// Past this many replies in one step the conversation is compressed…
    pub compress_turns: usize,
    /// …or past this many tokens of it.
    pub compress_tokens: usize,
    /// Replies kept verbatim after a compression.
    pub keep_turns: usize,
    /// Ask the model for the English words a goal's code would contain before ranking.
    pub expand_query: bool,
    /// An embeddings model on the model's server (`/v1/embeddings`, Ollama's `/api/embed`):
    /// the ranked files are ordered again by their similarity in meaning to the goal.
    pub embeddings_model: Option<String>,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings {
            budget_tokens: 6000,
            summaries: 2,
            large_file_lines: 400,
            compress_turns: 20,
            compress_tokens: 10_000,
            keep_turns: 4,
            expand_query: false,
            embeddings_model: None,
        }
    }
}

/// `[plan]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanSettings {
    /// The most steps a plan may have.
    pub max_steps: usize,
    /// How many times a run may plan again what is left after a step failed.
    pub max_replans: usize,
}

impl Default for PlanSettings {
    fn default() -> Self {
        PlanSettings { max_steps: 8, max_replans: 1 }
    }
}

/// `[commands]` (a trusted setting: a project's own is used only when the folder is trusted).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandSettings {
    /// Commands that run without asking, as argument lists: a command is allowed when it
    /// starts with one of them (`["python", "-m", "pytest"]` allows `python -m pytest -q`).
    /// The test command is always allowed.
    pub allow: Vec<Vec<String>>,
    /// A command taking longer is killed with its children.
    pub timeout_s: u64,
    /// Output kept from a command (head and tail; the middle is cut with a marker).
    pub max_output_bytes: usize,
}

impl Default for CommandSettings {
    fn default() -> Self {
        CommandSettings { allow: Vec::new(), timeout_s: 120, max_output_bytes: 16 * 1024 }
    }
}

/// What confines the agent's commands (SPEC X3): `sandbox = "auto"` or a table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "SandboxSetting")]
pub struct SandboxSettings {
    /// `backend`: what confines them.
    pub backend: SandboxMode,
    /// `env`: variables passed on to commands besides the documented few (names).
    pub env: Vec<String>,
    /// `hide`: more paths commands may not read (`~/` is the home folder), besides the
    /// known secrets (`~/.ssh`, `~/.aws`, …).
    pub hide: Vec<String>,
    /// `network`: commands may reach the network (default: no).
    pub network: bool,
    /// `[sandbox] backend = "container"`: the engine and the limits its containers get.
    pub container: ContainerSettings,
}

/// The container backend's settings (`[sandbox]`'s `image`, `engine`, `cpus`, `memory_mb`,
/// `pids`).
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSettings {
    /// The image commands run in (the project's toolchain in it).
    pub image: Option<String>,
    /// `docker`, `podman` or a path to either's CLI (default: whichever is on PATH).
    pub engine: Option<String>,
    pub cpus: f64,
    pub memory_mb: u64,
    pub pids: u32,
}

impl Default for ContainerSettings {
    fn default() -> Self {
        ContainerSettings { image: None, engine: None, cpus: 2.0, memory_mb: 4096, pids: 1024 }
    }
}

impl Eq for ContainerSettings {}

/// `sandbox` as written: a backend's name, or the whole table.
#[derive(Deserialize)]
#[serde(untagged)]
enum SandboxSetting {
    Backend(SandboxMode),
    Table(SandboxTable),
}

#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SandboxTable {
    backend: SandboxMode,
    env: Vec<String>,
    hide: Vec<String>,
    network: bool,
    image: Option<String>,
    engine: Option<String>,
    cpus: f64,
    memory_mb: u64,
    pids: u32,
}

impl Default for SandboxTable {
    fn default() -> Self {
        let container = ContainerSettings::default();
        SandboxTable {
            backend: SandboxMode::default(),
            env: Vec::new(),
            hide: Vec::new(),
            network: false,
            image: None,
            engine: None,
            cpus: container.cpus,
            memory_mb: container.memory_mb,
            pids: container.pids,
        }
    }
}

impl From<SandboxSetting> for SandboxSettings {
    fn from(setting: SandboxSetting) -> Self {
        match setting {
            SandboxSetting::Backend(backend) => SandboxSettings { backend, ..SandboxSettings::default() },
            SandboxSetting::Table(table) => SandboxSettings {
                backend: table.backend,
                env: table.env,
                hide: table.hide,
                network: table.network,
                container: ContainerSettings {
                    image: table.image,
                    engine: table.engine,
                    cpus: table.cpus,
                    memory_mb: table.memory_mb,
                    pids: table.pids,
                },
            },
        }
    }
}

/// What confines the agent's commands (SPEC X3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// The best this machine has: bubblewrap, else Landlock (Linux), else Seatbelt (macOS);
    /// with none, every command is asked first.
    #[default]
    Auto,
    /// Under bubblewrap, or not at all.
    Bwrap,
    /// Under Landlock and seccomp (Linux 5.13+), or not at all.
    Landlock,
    /// Under Seatbelt (`sandbox-exec`, macOS), or not at all.
    Seatbelt,
    /// In a container of a Docker- or Podman-compatible engine (`[sandbox] image`), local
    /// or remote (`DOCKER_HOST`, `CONTAINER_HOST`), or not at all.
    Container,
    /// Unconfined, in the copy (with the timeout, the environment's allow-list and no stdin).
    Off,
}

impl SandboxMode {
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Bwrap => "bwrap",
            SandboxMode::Landlock => "landlock",
            SandboxMode::Seatbelt => "seatbelt",
            SandboxMode::Container => "container",
            SandboxMode::Off => "off",
        }
    }
}

/// An approval picker's values (ACP's, the VS Code panel's): `(id, name, description)`, the
/// settings' level first; [`ApprovalLevel::picked`] reads them.
pub const APPROVAL_PICKER: &[(&str, &str, &str)] = &[
    (
        "default",
        "As the settings say",
        "Ask before edits and unlisted commands (approval in the settings, medium unless set)",
    ),
    (
        "accept_edits",
        "Accept edits",
        "Edits are made without asking; unlisted commands and commits are still asked",
    ),
    ("ask_everything", "Ask before everything", "Every action is asked, reads included"),
    ("plan", "Plan only", "Each prompt is planned and the plan shown; nothing is carried out"),
];

/// `approval` (SPEC M4): when the agent asks a person before it acts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalLevel {
    /// Changes to files apply without asking; commands not on the allow-list and commits
    /// (without `auto_commit`) are still asked.
    Low,
    /// Also every change to files is asked, with its diff.
    #[default]
    Medium,
    /// Every action the model takes is asked: reads and searches, allow-listed commands and
    /// commits too.
    High,
}

impl ApprovalLevel {
    /// The level an approval picker's value asks for (ACP's picker, the VS Code panel's):
    /// `accept_edits` low, `ask_everything` high; `default` (and anything else) the settings'.
    pub fn picked(value: &str) -> Option<ApprovalLevel> {
        match value {
            "accept_edits" => Some(ApprovalLevel::Low),
            "ask_everything" => Some(ApprovalLevel::High),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ApprovalLevel::Low => "low",
            ApprovalLevel::Medium => "medium",
            ApprovalLevel::High => "high",
        }
    }
}

/// `[checkpoints]` (SPEC K1, K2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointSettings {
    /// Take a checkpoint before and after every run that edits.
    pub enabled: bool,
    /// Keep the checkpoints (and audit logs) of this many most recent runs…
    pub keep_runs: usize,
    /// …and none older than this many days.
    pub keep_days: u64,
    /// Files larger than this are not saved in checkpoints (and so never deleted by an action).
    pub max_file_bytes: u64,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings { enabled: true, keep_runs: 50, keep_days: 14, max_file_bytes: 2 * 1024 * 1024 }
    }
}

/// `[limits]`: per run (SPEC G1); hitting one ends the run naming it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitSettings {
    /// Actions (tool calls) one run may make.
    pub tool_calls: u32,
    /// Changes to files (edit, create, delete, rename) one run may make.
    pub revisions: u32,
    /// Prompt plus completion tokens one run may spend.
    pub tokens: u32,
    /// Distinct files one run may change.
    pub files: u32,
    /// Rounds of observe → reflect → fix one run may make.
    pub iterations: u32,
    /// Wall time one run may take.
    pub wall_time_s: u64,
    /// Tokens kept beyond `tokens` for the model's wrap-up of a run stopped by a limit or
    /// cancelled (seed 002: what it did and what is left, in its words); 0: no wrap-up.
    pub wrap_up_tokens: u32,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            tool_calls: 50,
            revisions: 10,
            tokens: 100_000,
            files: 20,
            iterations: 5,
            wall_time_s: 300,
            wrap_up_tokens: 600,
        }
    }
}

/// `[test]` (a trusted setting).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TestSettings {
    /// The project's test command, as an argument list (`["python", "-m", "pytest", "-q"]`).
    pub command: Option<Vec<String>>,
    /// Run the tests that reach what a step changed first (pytest node ids, vitest/jest
    /// files), when the command's runner is one Tokamak knows.
    pub impact_first: bool,
    /// After those pass, run the whole command too.
    pub then_all: bool,
}

impl Default for TestSettings {
    fn default() -> Self {
        TestSettings { command: None, impact_first: true, then_all: true }
    }
}

/// `[fix]`: how far one fix run may go before it stops (SPEC F2, G1).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FixSettings {
    /// Model attempts per run (`max_fix_attempts` in the SPEC).
    pub max_attempts: u32,
    /// Prompt plus completion tokens one run may spend.
    pub max_tokens: u32,
    /// Wall time one run may take, model and checkers included.
    pub time_limit_s: u64,
    /// The least similarity (0..1) a SEARCH block may have to the closest lines and still be
    /// applied there.
    pub similarity: f32,
    /// How long to wait for the checkers after each edit.
    pub settle_timeout_ms: u64,
    /// Tokens of code shown around the errors (enclosing scopes, else nearby lines).
    pub context_tokens: usize,
    /// Candidate fixes asked for per model attempt when a test command can verify them (SPEC
    /// V1; at most [`MAX_CANDIDATES`]); `1`: one fix, applied as it comes.
    pub candidates: u32,
    /// `[[fix.candidate_models]]`: the candidates come from these models instead, each at its
    /// temperatures (seed 002's "Multi-LLM × Temperature"), asked together, each at its own
    /// endpoint with its own limits, all judged by the same tests; at most
    /// [`MAX_MODEL_CANDIDATES`] in all.
    pub candidate_models: Vec<CandidateModel>,
}

/// One model the candidates come from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidateModel {
    /// A `[profiles.NAME]` of the settings (its own server, model, key and limits over
    /// `[model]`); unset: the fix's own model.
    #[serde(default)]
    pub profile: Option<String>,
    /// The temperatures it is asked at, one candidate each.
    #[serde(default = "one_temperature")]
    pub temperatures: Vec<f32>,
}

fn one_temperature() -> Vec<f32> {
    vec![0.2]
}

/// The most candidates `[[fix.candidate_models]]` asks for in one attempt, all models together.
pub const MAX_MODEL_CANDIDATES: usize = 8;

/// The most candidates one attempt asks for: one per temperature of [`CANDIDATE_TEMPERATURES`].
pub const MAX_CANDIDATES: u32 = 5;
/// The temperatures candidates are asked at, in order (SPEC V1: diversity, the steadiest first).
pub const CANDIDATE_TEMPERATURES: [f32; 5] = [0.2, 0.5, 0.7, 0.9, 1.0];

impl Default for FixSettings {
    fn default() -> Self {
        FixSettings {
            max_attempts: 3,
            max_tokens: 100_000,
            time_limit_s: 300,
            similarity: 0.85,
            settle_timeout_ms: 60_000,
            context_tokens: 3_000,
            candidates: 3,
            candidate_models: Vec::new(),
        }
    }
}

impl Settings {
    /// The environment variables named as holding API keys (`api_key_env` of `[model]` and
    /// the profiles): scrubbed from logs and from the agent's commands like the well-known
    /// ones.
    pub fn key_variables(&self) -> Vec<String> {
        let mut names: Vec<String> = std::iter::once(&self.model)
            .chain(self.profiles.values())
            .filter_map(|m| m.api_key_env.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Reads settings from a JSON value (LSP `initializationOptions`); a value of the wrong
    /// type or an unknown key is an error that names it.
    pub fn from_json(value: serde_json::Value) -> Result<Settings, ConfigError> {
        let mut set = serde_json::Value::Object(Default::default());
        merge(&mut set, value);
        deserialize(set).map_err(|reason| ConfigError::Invalid { from: None, reason })
    }

    /// The settings of a workspace, in layers: the user's own settings file, then the
    /// project's `tokamak.toml` (without what only a trusted folder may set, unless it is
    /// trusted), then `overrides` (LSP `initializationOptions` or the command line; its
    /// `trusted` key is the editor's word on trust).
    pub fn load(root: Option<&Path>, overrides: serde_json::Value) -> Result<Loaded, ConfigError> {
        let user = crate::trust::UserConfig::read()
            .map_err(|err| ConfigError::Invalid { from: None, reason: err.to_string() })?;
        Settings::load_with(root, overrides, &user)
    }

    /// [`Settings::load`] with the user's settings given.
    pub fn load_with(
        root: Option<&Path>,
        mut overrides: serde_json::Value,
        user: &crate::trust::UserConfig,
    ) -> Result<Loaded, ConfigError> {
        let editor_trust = match overrides.as_object_mut().and_then(|o| o.remove("trusted")) {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Bool(trusted)) => Some(trusted),
            Some(other) => {
                return Err(ConfigError::Invalid {
                    from: None,
                    reason: format!("trusted: expected true or false, got {other}"),
                });
            }
        };
        let trust = crate::trust::Trust::decide(root, editor_trust, user);
        let mut merged = serde_json::Value::Object(Default::default());
        if !user.settings.is_null() {
            deserialize(user.settings.clone())
                .map_err(|reason| ConfigError::Invalid { from: Some(user.path.clone()), reason })?;
            merge(&mut merged, user.settings.clone());
        }
        let mut ignored = Vec::new();
        if let Some(path) = root.map(|r| r.join(CONFIG_FILE)).filter(|p| p.is_file()) {
            let text = std::fs::read_to_string(&path)
                .map_err(|reason| ConfigError::Read { path: path.clone(), reason })?;
            let value: toml::Value = toml::from_str(&text)
                .map_err(|err| ConfigError::Toml { path: path.clone(), reason: err.to_string() })?;
            let mut json = serde_json::to_value(value)
                .map_err(|err| ConfigError::Toml { path: path.clone(), reason: err.to_string() })?;
            // a project never trusts itself, trusted or not
            if let Some(object) = json.as_object_mut()
                && object.remove("trusted").is_some()
                && !trust.trusted
            {
                ignored.push("trusted".to_string());
            }
            if !trust.trusted {
                ignored.extend(crate::trust::restrict_project_settings(&mut json));
                // a project may ask for more approvals than the user does, never for fewer
                let level = |value: Option<&serde_json::Value>| {
                    value.and_then(|v| ApprovalLevel::deserialize(v.clone()).ok())
                };
                let user = level(merged.get("approval")).unwrap_or_default();
                if let Some(object) = json.as_object_mut()
                    && object.contains_key("approval")
                    && level(object.get("approval")).is_none_or(|project| project < user)
                {
                    object.remove("approval");
                    ignored.push("approval".to_string());
                }
            }
            deserialize(json.clone()).map_err(|reason| ConfigError::Invalid { from: Some(path), reason })?;
            merge(&mut merged, json);
        }
        merge(&mut merged, overrides);
        let settings = Settings::from_json(merged)?;
        Ok(Loaded { settings, trust, ignored })
    }
}

/// Settings with where their trust came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub settings: Settings,
    pub trust: crate::trust::Trust,
    /// Keys of the project's `tokamak.toml` ignored because the folder is not trusted.
    pub ignored: Vec<String>,
}

/// Reads settings, naming the key a bad value is at (`fix.max_attempts: invalid type …`).
fn deserialize(value: serde_json::Value) -> Result<Settings, String> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        if path == "." { err.inner().to_string() } else { format!("{path}: {}", err.inner()) }
    })
}

/// Deep-merges `top` into `base`: objects key by key, anything else replaced. A `null` in
/// `top` is a setting left unset (an editor's `vim.NIL`, a VS Code setting whose default is
/// `null`): it neither replaces nor is added.
fn merge(base: &mut serde_json::Value, top: serde_json::Value) {
    match (base, top) {
        (serde_json::Value::Object(base), serde_json::Value::Object(top)) => {
            for (key, value) in top {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None if value.is_null() => {}
                    None if value.is_object() => {
                        let mut set = serde_json::Value::Object(Default::default());
                        merge(&mut set, value);
                        base.insert(key, set);
                    }
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (_, serde_json::Value::Null) => {}
        (base, top) => *base = top,
    }
}

/// The workspace root for a path given on the command line: the nearest ancestor with a
/// `tokamak.toml` or a `.git`, else the current directory.
pub fn find_root(start: &Path) -> PathBuf {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    let mut dir = if start.is_dir() { Some(start.as_path()) } else { start.parent() };
    while let Some(candidate) = dir {
        if candidate.join(CONFIG_FILE).is_file() || candidate.join(".git").exists() {
            return candidate.to_path_buf();
        }
        dir = candidate.parent();
    }
    std::env::current_dir().unwrap_or(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_initialization_options() {
        let settings = Settings::from_json(json!({"syntax": {"max_file_bytes": 5}})).unwrap();
        assert_eq!(settings.syntax.max_file_bytes, 5);
        assert_eq!(Settings::from_json(serde_json::Value::Null).unwrap(), Settings::default());
        let err = Settings::from_json(json!({"syntax": {"max_file_bytes": "big"}})).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
        let err = Settings::from_json(json!({"sintax": {}})).unwrap_err();
        assert!(err.to_string().contains("unknown field `sintax`"), "{err}");
    }

    #[test]
    fn a_checker_is_a_publish_mode_or_a_table() {
        let dir = tempfile::tempdir().unwrap();
        let user = crate::trust::UserConfig::default();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[checkers]\nruff = \"off\"\n[checkers.pyright]\npublish = \"on\"\ntimeout_ms = 5\n",
        )
        .unwrap();
        let settings =
            Settings::load_with(Some(dir.path()), serde_json::Value::Null, &user).unwrap().settings;
        assert_eq!(settings.checkers.tools["ruff"].publish, Some(PublishMode::Off));
        assert_eq!(settings.checkers.tools["pyright"].publish, Some(PublishMode::On));
        assert_eq!(settings.checkers.tools["pyright"].timeout_ms, Some(5));
        let settings = Settings::from_json(json!({"checkers": {"eslint": "auto"}})).unwrap();
        assert_eq!(settings.checkers.tools["eslint"].publish, Some(PublishMode::Auto));
        let err = Settings::from_json(json!({"checkers": {"mypy": "sometimes"}})).unwrap_err();
        assert!(err.to_string().contains("unknown variant `sometimes`"), "{err}");
        let err = Settings::from_json(json!({"checkers": {"mypy": {"publsh": "on"}}})).unwrap_err();
        assert!(err.to_string().contains("unknown field `publsh`"), "{err}");
    }

    #[test]
    fn toml_then_initialization_options() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[checkers]\ntimeout_ms = 1000\nenable = [\"ruff\"]\n\n[checkers.ruff]\nargs = [\"check\"]\n\n[checkers.shellcheck]\ncommand = \"shellcheck\"\nfiles = [\"*.sh\"]\nerrorformat = \"%f:%l:%c: %m\"\n",
        )
        .unwrap();
        let user = crate::trust::UserConfig::default();
        let load = |overrides| Settings::load_with(Some(dir.path()), overrides, &user);
        let loaded = load(json!({"checkers": {"timeout_ms": 2000}, "trusted": true})).unwrap();
        assert!(loaded.trust.trusted && loaded.ignored.is_empty());
        let settings = loaded.settings;
        assert_eq!(settings.checkers.timeout_ms, 2000);
        assert_eq!(settings.checkers.enable, Some(vec!["ruff".to_string()]));
        assert_eq!(settings.checkers.tools["ruff"].args, Some(vec!["check".to_string()]));
        assert_eq!(settings.checkers.tools["shellcheck"].files, Some(vec!["*.sh".to_string()]));

        std::fs::write(dir.path().join(CONFIG_FILE), "[checkers\n").unwrap();
        let err = load(serde_json::Value::Null).unwrap_err();
        assert!(err.to_string().contains("not valid TOML"), "{err}");
        std::fs::write(dir.path().join(CONFIG_FILE), "[checkers.ruff]\nargz = []\n").unwrap();
        let err = load(serde_json::Value::Null).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `argz`") && err.to_string().contains(CONFIG_FILE),
            "{err}"
        );
        let err = load(json!({"trusted": "yes"})).unwrap_err();
        assert!(err.to_string().contains("trusted: expected true or false"), "{err}");
    }

    #[test]
    fn a_null_is_a_setting_left_unset() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[fix]
max_attempts = 7
",
        )
        .unwrap();
        let user = crate::trust::UserConfig::default();
        // an editor's vim.NIL or a VS Code default of null, at the top and inside a table
        let loaded = Settings::load_with(
            Some(dir.path()),
            json!({"trusted": true, "approval": null, "fix": {"max_attempts": null}, "context": {"embeddings_model": null, "budget_tokens": 10}}),
            &user,
        )
        .unwrap();
        assert!(loaded.trust.trusted);
        assert_eq!(loaded.settings.approval, ApprovalLevel::Medium);
        assert_eq!(loaded.settings.fix.max_attempts, 7, "the project's value stays");
        assert_eq!(loaded.settings.context.budget_tokens, 10);
        assert_eq!(
            Settings::from_json(json!({"approval": null, "test": null})).unwrap(),
            Settings::default()
        );
        assert!(Settings::from_json(json!("low")).is_err(), "settings are a table");
    }

    #[test]
    fn an_untrusted_folder_keeps_its_harmless_settings_and_names_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "trusted = true\nsandbox = \"off\"\n[fix]\nmax_attempts = 7\n[checkers.lint]\ncommand = \"./lint\"\nfiles = [\"*.sh\"]\nerrorformat = \"%l %m\"\n[model]\nbase_url = \"http://elsewhere\"\n",
        )
        .unwrap();
        let mut user = crate::trust::UserConfig {
            settings: json!({"model": {"model": "mine", "base_url": "http://127.0.0.1:9"}}),
            ..Default::default()
        };
        let loaded = Settings::load_with(Some(dir.path()), serde_json::Value::Null, &user).unwrap();
        assert!(!loaded.trust.trusted);
        assert_eq!(loaded.ignored, ["trusted", "sandbox", "model.base_url", "checkers.lint"]);
        assert_eq!(loaded.settings.fix.max_attempts, 7);
        assert_eq!(loaded.settings.sandbox.backend, SandboxMode::Auto);
        assert!(loaded.settings.checkers.tools.is_empty());
        assert_eq!(loaded.settings.model.base_url.as_deref(), Some("http://127.0.0.1:9"), "the user's own");
        assert_eq!(loaded.settings.model.model.as_deref(), Some("mine"));

        user.trusted = vec![std::fs::canonicalize(dir.path()).unwrap()];
        let loaded = Settings::load_with(Some(dir.path()), serde_json::Value::Null, &user).unwrap();
        assert!(loaded.trust.trusted && loaded.ignored.is_empty(), "{loaded:?}");
        assert_eq!(loaded.settings.sandbox.backend, SandboxMode::Off);
        assert_eq!(loaded.settings.model.base_url.as_deref(), Some("http://elsewhere"));
        assert!(loaded.settings.checkers.tools.contains_key("lint"));
    }
}
