//! The workspace's checkers: the built-in ones of [`crate::checker`] with the settings'
//! overrides and generic ones from settings, which of them apply to a document, and where
//! their programs are.

#[cfg(test)]
mod fixture;
mod runner;
mod shadow;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::Regex;

pub use runner::{RunError, RunInput, run};

use crate::checker::{self, Args, InputMode, ParseContext, Tool, Trust, pattern};
use crate::config::{CheckerConfig, CheckerSettings, ConfigError, PublishMode};
use crate::diagnostic::Diagnostic;
use crate::text::{Language, PositionEncoding};

/// What a checker is: a built-in tool, or a command whose output a pattern describes.
#[derive(Debug, Clone)]
pub enum Kind {
    Tool(&'static Tool),
    Pattern { regex: Regex, columns: PositionEncoding },
}

/// One checker, ready to run.
#[derive(Debug, Clone)]
pub struct Checker {
    pub name: String,
    pub command: String,
    /// `None`: the tool's own arguments (which may be made per run).
    pub args: Option<Vec<String>>,
    pub languages: Vec<Language>,
    pub files: Option<GlobSet>,
    pub input: InputMode,
    pub kind: Kind,
    pub timeout: Duration,
    /// Named in `enable` or configured: a missing program is shown to the user, not just
    /// logged.
    pub explicit: bool,
    /// Whether Tokamak's own run is published (see [`Checker::editor_sources`]).
    pub publish: PublishMode,
    /// The folders it writes, relative to where it runs: the only ones it may write when it
    /// runs confined (besides a scratch folder).
    pub writes: Vec<String>,
}

impl Checker {
    /// Whether it reads files besides the one it checks (imports, types): pyright, mypy,
    /// tsc and generic checkers given a path; not a tool fed the buffer on stdin.
    pub fn cross_file(&self) -> bool {
        self.input != InputMode::Stdin
    }

    fn from_tool(tool: &'static Tool, timeout: Duration) -> Checker {
        Checker {
            name: tool.name.to_string(),
            command: tool.command.to_string(),
            args: None,
            languages: tool.languages.to_vec(),
            files: None,
            input: tool.input,
            kind: Kind::Tool(tool),
            timeout,
            explicit: false,
            publish: PublishMode::Auto,
            writes: tool.caches.iter().map(ToString::to_string).collect(),
        }
    }

    pub fn applies_to(&self, language: Language, path: &Path) -> bool {
        self.languages.contains(&language) || self.files.as_ref().is_some_and(|files| files.is_match(path))
    }

    /// The `source` an editor's own server for the same tool puts on its diagnostics
    /// (lowercase).
    pub fn editor_sources(&self) -> Vec<&str> {
        match self.kind {
            Kind::Tool(tool) => tool.sources.to_vec(),
            Kind::Pattern { .. } => vec![self.name.as_str()],
        }
    }

    /// The folders that mark where the tool's project starts.
    pub fn project_markers(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::Tool(tool) => tool.project_markers,
            Kind::Pattern { .. } => &[],
        }
    }

    /// The argument templates a run uses: the settings' own, else the tool's (made from the
    /// nearest config file when the tool says so).
    pub fn arg_templates(
        &self,
        config_at: impl FnOnce(&str) -> Option<PathBuf>,
        file: &Path,
        language: Language,
    ) -> Vec<String> {
        match (&self.args, &self.kind) {
            (Some(args), _) => args.clone(),
            (None, Kind::Tool(Tool { args: Args::Fixed(list), .. })) => {
                list.iter().map(ToString::to_string).collect()
            }
            (None, Kind::Tool(Tool { args: Args::FromConfig { config, make }, .. })) => {
                make(config_at(config).as_deref(), file, language)
            }
            (None, Kind::Pattern { .. }) => Vec::new(),
        }
    }

    /// Reads what the tool printed.
    pub fn parse(&self, stdout: &str, context: &ParseContext<'_>) -> Result<Vec<Diagnostic>, String> {
        match &self.kind {
            Kind::Tool(tool) => (tool.parse)(stdout, context),
            Kind::Pattern { regex, columns } => pattern::parse(stdout, context, regex, *columns),
        }
    }

    /// Whether an exit code means "ran and reported" (a generic checker's always does).
    pub fn reported(&self, code: i32) -> bool {
        match self.kind {
            Kind::Tool(tool) => (tool.reported)(code),
            Kind::Pattern { .. } => true,
        }
    }

    /// What the project lacks for it to check `file`, known before it runs: for the tool's own
    /// program only (another set in its place — a wrapper, a daemon — may bring its own
    /// configuration).
    pub fn unconfigured(&self, file: &Path) -> Option<String> {
        match self.kind {
            Kind::Tool(tool) if self.command == tool.command => {
                (tool.unconfigured)(file, self.args.as_deref().unwrap_or_default())
            }
            Kind::Tool(_) | Kind::Pattern { .. } => None,
        }
    }

    /// The tool ran but the project has not set it up: what is missing.
    pub fn not_configured(&self, code: Option<i32>, stderr: &str) -> Option<String> {
        match self.kind {
            Kind::Tool(tool) => (tool.not_configured)(code, stderr),
            Kind::Pattern { .. } => None,
        }
    }

    /// Why running it would run the project's own code, which only a trusted workspace allows:
    /// `(reason, whether the project has such code at its root)`: without it there is nothing
    /// to tell the user.
    pub fn runs_project_code(&self, project: &Path) -> Option<(String, bool)> {
        match self.kind {
            Kind::Tool(Tool { trust: Trust::ProjectCode(runs), .. }) => runs(project),
            _ => None,
        }
    }
}

/// How to install a checker, for a sentence: "`pip install ruff`", or "installing NAME".
pub fn install_hint(name: &str) -> String {
    checker::find(name).map_or_else(|| format!("installing {name}"), |tool| tool.install.to_string())
}

/// The checkers a workspace uses.
#[derive(Debug, Clone, Default)]
pub struct Checkers {
    pub all: Vec<Checker>,
    /// The workspace is trusted: programs inside it (`node_modules/.bin`, `.tools/`) may run,
    /// and so may checkers that run the project's own code (eslint's configuration, mypy's
    /// plugins).
    pub trusted: bool,
    pub max_concurrent: usize,
    pub run_on_change: bool,
    pub debounce: Duration,
    /// How they start on this machine (`[sandbox]`): confined, unless nothing here can.
    pub confinement: std::sync::Arc<crate::sandbox::tools::Confinement>,
}

impl Checkers {
    /// Builds the list from settings: the presets (with their overrides) and the generic
    /// checkers, filtered by `enable`/`disable`.
    pub fn from_settings(settings: &CheckerSettings) -> Result<Checkers, ConfigError> {
        Checkers::from_tools(checker::ALL, settings)
    }

    /// The same from another set of tools (a test's own).
    pub fn from_tools(tools: &[&'static Tool], settings: &CheckerSettings) -> Result<Checkers, ConfigError> {
        let timeout = Duration::from_millis(settings.timeout_ms.max(1));
        let mut checkers = Vec::new();
        let mut configured: BTreeMap<&str, &CheckerConfig> =
            settings.tools.iter().map(|(name, config)| (name.as_str(), config)).collect();
        for mut preset in tools.iter().map(|tool| Checker::from_tool(tool, timeout)) {
            if let Some(config) = configured.remove(preset.name.as_str()) {
                apply_overrides(&mut preset, config)?;
                preset.explicit = true;
            }
            checkers.push(preset);
        }
        for (name, config) in configured {
            checkers.push(generic(name, config, timeout)?);
        }
        if let Some(enable) = &settings.enable {
            if let Some(unknown) = enable.iter().find(|name| !checkers.iter().any(|c| &c.name == *name)) {
                return Err(invalid(format!(
                    "checkers.enable names {unknown:?}, which is neither a preset nor configured"
                )));
            }
            checkers.retain(|c| enable.contains(&c.name));
            for checker in &mut checkers {
                checker.explicit = true;
            }
        }
        checkers.retain(|c| !settings.disable.contains(&c.name));
        Ok(Checkers {
            all: checkers,
            trusted: false,
            max_concurrent: settings.max_concurrent.max(1),
            run_on_change: settings.run_on_change,
            debounce: Duration::from_millis(settings.debounce_ms),
            confinement: Default::default(),
        })
    }

    pub fn for_document(&self, language: Language, path: &Path) -> Vec<Checker> {
        self.applying(language, path).cloned().collect()
    }

    /// The checkers for a document, borrowed (for what runs on every publish).
    pub fn applying<'a>(&'a self, language: Language, path: &'a Path) -> impl Iterator<Item = &'a Checker> {
        self.all.iter().filter(move |c| c.applies_to(language, path))
    }
}

fn invalid(reason: String) -> ConfigError {
    ConfigError::Invalid { from: None, reason }
}

fn apply_overrides(checker: &mut Checker, config: &CheckerConfig) -> Result<(), ConfigError> {
    if let Some(command) = &config.command {
        checker.command = command.clone();
    }
    if config.args.is_some() {
        checker.args = config.args.clone();
    }
    if let Some(languages) = &config.languages {
        checker.languages = languages_of(&checker.name, languages)?;
    }
    if let Some(files) = &config.files {
        checker.files = Some(globs(&checker.name, files)?);
    }
    if let Some(timeout) = config.timeout_ms {
        checker.timeout = Duration::from_millis(timeout.max(1));
    }
    if let Some(writes) = &config.writes {
        checker.writes = folders(&checker.name, writes)?;
    }
    if let Some(publish) = config.publish {
        checker.publish = publish;
    }
    if config.pattern.is_some() || config.errorformat.is_some() || config.stdin.is_some() {
        return Err(invalid(format!(
            "checkers.{}: a preset's output format and input are fixed; define a checker of another name for a custom one",
            checker.name
        )));
    }
    Ok(())
}

fn generic(name: &str, config: &CheckerConfig, timeout: Duration) -> Result<Checker, ConfigError> {
    let command = config
        .command
        .clone()
        .ok_or_else(|| invalid(format!("checkers.{name} needs a `command` (it is not a preset)")))?;
    let regex = match (&config.pattern, &config.errorformat) {
        (Some(pattern), None) => pattern.clone(),
        (None, Some(errorformat)) => pattern::errorformat_to_regex(errorformat),
        _ => {
            return Err(invalid(format!("checkers.{name} needs exactly one of `pattern` and `errorformat`")));
        }
    };
    let regex = Regex::new(&format!("(?m){regex}"))
        .map_err(|err| invalid(format!("checkers.{name}: the pattern is not a valid regex: {err}")))?;
    for group in ["line", "message"] {
        if !regex.capture_names().flatten().any(|g| g == group) {
            return Err(invalid(format!("checkers.{name}: the pattern needs a named group `{group}`")));
        }
    }
    let columns = match config.column_encoding.as_deref() {
        None | Some("utf-32") => PositionEncoding::Utf32,
        Some("utf-16") => PositionEncoding::Utf16,
        Some("utf-8") => PositionEncoding::Utf8,
        Some(other) => {
            return Err(invalid(format!(
                "checkers.{name}.column_encoding {other:?} is not utf-8, utf-16 or utf-32"
            )));
        }
    };
    let languages = languages_of(name, config.languages.as_deref().unwrap_or_default())?;
    let files = config.files.as_ref().map(|f| globs(name, f)).transpose()?;
    if languages.is_empty() && files.is_none() {
        return Err(invalid(format!("checkers.{name} needs `languages` or `files` to say what it checks")));
    }
    Ok(Checker {
        name: name.to_string(),
        command,
        args: Some(config.args.clone().unwrap_or_else(|| vec!["{file}".to_string()])),
        languages,
        files,
        input: if config.stdin.unwrap_or(false) { InputMode::Stdin } else { InputMode::Mirror },
        kind: Kind::Pattern { regex, columns },
        timeout: config.timeout_ms.map_or(timeout, |t| Duration::from_millis(t.max(1))),
        explicit: true,
        publish: config.publish.unwrap_or_default(),
        writes: folders(name, config.writes.as_deref().unwrap_or_default())?,
    })
}

/// `writes`: folders below where the checker runs, never above it or elsewhere.
fn folders(name: &str, paths: &[String]) -> Result<Vec<String>, ConfigError> {
    for path in paths {
        let below = Path::new(path).components().all(|c| matches!(c, std::path::Component::Normal(_)));
        if !below || path.is_empty() {
            return Err(invalid(format!(
                "checkers.{name}.writes: {path:?} is not a folder below where the checker runs (no `..`, not absolute)"
            )));
        }
    }
    Ok(paths.to_vec())
}

fn languages_of(name: &str, ids: &[String]) -> Result<Vec<Language>, ConfigError> {
    ids.iter()
        .map(|id| match Language::detect(id, None) {
            Language::PlainText => Err(invalid(format!(
                "checkers.{name}: unknown language {id:?} (use `files` globs for languages Tokamak does not parse)"
            ))),
            language => Ok(language),
        })
        .collect()
}

fn globs(name: &str, patterns: &[String]) -> Result<GlobSet, ConfigError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|err| invalid(format!("checkers.{name}.files: {err}")))?;
        builder.add(glob);
    }
    builder.build().map_err(|err| invalid(format!("checkers.{name}.files: {err}")))
}

/// Finds a checker's program: in a trusted workspace the project's own tool folders first
/// (`node_modules/.bin`, `.tools/venv/bin`, `.tools/node/node_modules/.bin`), then the same
/// under `$TOKAMAK_TOOLS`, then `PATH`. A command with a `/` is taken relative to the root,
/// and only in a trusted workspace when that is inside it. A program found inside an
/// untrusted workspace (a `PATH` entry pointing there) is not used.
pub fn resolve_program(command: &str, root: &Path, trusted: bool) -> Option<PathBuf> {
    let inside = |path: &Path| {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        real.starts_with(root)
    };
    if command.contains('/') {
        let path = root.join(command);
        return (path.is_file() && (trusted || !inside(&path))).then_some(path);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if trusted {
        dirs.extend([
            root.join("node_modules/.bin"),
            root.join(".tools/venv/bin"),
            root.join(".tools/node/node_modules/.bin"),
        ]);
    }
    if let Some(tools) = std::env::var_os("TOKAMAK_TOOLS") {
        let tools = PathBuf::from(tools);
        dirs.push(tools.join("venv/bin"));
        dirs.push(tools.join("node/node_modules/.bin"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    if !trusted {
        dirs.retain(|dir| dir.is_absolute() && !inside(dir));
    }
    let search = std::env::join_paths(dirs).ok()?;
    which::which_in(command, Some(search), root).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use serde_json::json;

    fn checkers(settings: serde_json::Value) -> Result<Checkers, ConfigError> {
        Checkers::from_settings(&Settings::from_json(json!({ "checkers": settings })).unwrap().checkers)
    }

    #[test]
    fn presets_apply_by_language() {
        let all = checkers(json!({})).unwrap();
        let names = |language, path: &str| -> Vec<String> {
            all.for_document(language, Path::new(path)).into_iter().map(|c| c.name).collect()
        };
        assert_eq!(names(Language::Python, "a.py"), ["ruff", "pyright", "mypy"]);
        assert_eq!(names(Language::TypeScript, "a.ts"), ["tsc", "eslint"]);
        assert_eq!(names(Language::JavaScript, "a.js"), ["eslint"]);
        assert!(names(Language::PlainText, "a.sh").is_empty());
    }

    #[test]
    fn enable_disable_and_generic_checkers() {
        let all = checkers(json!({
            "enable": ["ruff", "shellcheck"],
            "disable": ["ruff"],
            "shellcheck": {"command": "shellcheck", "files": ["*.sh"], "errorformat": "%f:%l:%c: %m"},
        }))
        .unwrap();
        let names: Vec<&str> = all.all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["shellcheck"]);
        assert!(all.all[0].applies_to(Language::PlainText, Path::new("dir/run.sh")));
    }

    #[test]
    fn bad_checker_settings_say_what_is_wrong() {
        let cases = [
            (json!({"enable": ["rufff"]}), "neither a preset"),
            (
                json!({"lint": {"files": ["*.x"], "pattern": "(?P<line>\\d+) (?P<message>.*)"}}),
                "needs a `command`",
            ),
            (
                json!({"lint": {"command": "x", "files": ["*.x"], "pattern": "(?P<line>\\d+)"}}),
                "named group `message`",
            ),
            (
                json!({"lint": {"command": "x", "files": ["*.x"], "pattern": "(unclosed"}}),
                "not a valid regex",
            ),
            (json!({"lint": {"command": "x", "errorformat": "%l %m"}}), "`languages` or `files`"),
            (
                json!({"lint": {"command": "x", "languages": ["cobol"], "errorformat": "%l %m"}}),
                "unknown language",
            ),
            (json!({"ruff": {"pattern": "x"}}), "fixed"),
        ];
        for (settings, expected) in cases {
            let err = checkers(settings.clone()).unwrap_err().to_string();
            assert!(err.contains(expected), "{settings}: {err}");
        }
    }
}
