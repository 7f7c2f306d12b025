//! External checkers: built-in presets (ruff, pyright, mypy, tsc, eslint) and generic ones
//! from settings, which of them apply to a document, and where their programs are.

pub mod formats;
mod runner;
mod shadow;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::Regex;

pub use runner::{RunError, RunInput, run};

use crate::config::{CheckerConfig, CheckerSettings, ConfigError, PublishMode};
use crate::text::{Language, PositionEncoding};

/// How a checker gets the buffer's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// On stdin (`{file}` names the real path for the tool's messages and config lookup).
    Stdin,
    /// mypy's `--shadow-file`: `{buffer}` is a temporary file holding the text, `{file}` the
    /// real path it stands for.
    ShadowFile,
    /// The file itself when the buffer matches the disk; otherwise a shadow folder that
    /// mirrors the project (symlinks) with the buffer's text in place of the file, so imports
    /// and configuration still resolve.
    Mirror,
}

/// How to read what a checker prints.
#[derive(Debug, Clone)]
pub enum OutputFormat {
    Ruff,
    Pyright,
    Mypy,
    Tsc,
    Eslint,
    Pattern { regex: Regex, columns: PositionEncoding },
}

/// One checker, ready to run.
#[derive(Debug, Clone)]
pub struct Checker {
    pub name: String,
    pub command: String,
    /// `None`: the preset computes them per run (tsc, which depends on a tsconfig).
    pub args: Option<Vec<String>>,
    pub languages: Vec<Language>,
    pub files: Option<GlobSet>,
    pub input: InputMode,
    pub format: OutputFormat,
    pub timeout: Duration,
    /// Named in `enable` or configured: a missing program is shown to the user, not just
    /// logged.
    pub explicit: bool,
    /// The tool runs in the nearest folder (from the file up to the root) holding one of
    /// these, as it would when run by hand in that project; else in the root.
    pub project_markers: &'static [&'static str],
    /// Whether Tokamak's own run is published (see [`Checker::editor_sources`]).
    pub publish: PublishMode,
}

impl Checker {
    pub fn applies_to(&self, language: Language, path: &Path) -> bool {
        self.languages.contains(&language) || self.files.as_ref().is_some_and(|files| files.is_match(path))
    }

    /// The `source` an editor's own server for the same tool puts on its diagnostics
    /// (lowercase): pyright's language server says `Pyright` (or `basedpyright`, Pylance),
    /// typescript-language-server `typescript`.
    pub fn editor_sources(&self) -> Vec<&str> {
        match self.name.as_str() {
            "pyright" | "basedpyright" => vec!["pyright", "basedpyright", "pylance"],
            "tsc" => vec!["typescript", "ts", "tsc"],
            other => vec![other],
        }
    }
}

const PYTHON: &[Language] = &[Language::Python];
const SCRIPT: &[Language] = &[Language::TypeScript, Language::Tsx, Language::JavaScript, Language::Jsx];
const TYPESCRIPT: &[Language] = &[Language::TypeScript, Language::Tsx];

fn args(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|a| a.to_string()).collect())
}

/// The built-in presets, in the order they run.
fn presets(timeout: Duration) -> Vec<Checker> {
    let preset = |name: &str, languages: &[Language], input, format, arguments| Checker {
        name: name.to_string(),
        command: name.to_string(),
        args: arguments,
        languages: languages.to_vec(),
        files: None,
        input,
        format,
        timeout,
        explicit: false,
        project_markers: markers(name),
        publish: PublishMode::Auto,
    };
    vec![
        preset(
            "ruff",
            PYTHON,
            InputMode::Stdin,
            OutputFormat::Ruff,
            args(&[
                "check",
                "--output-format=json",
                "--no-fix",
                "--exit-zero",
                "--force-exclude",
                "--stdin-filename",
                "{file}",
                "-",
            ]),
        ),
        preset(
            "pyright",
            PYTHON,
            InputMode::Mirror,
            OutputFormat::Pyright,
            args(&["--outputjson", "{file}"]),
        ),
        preset(
            "mypy",
            PYTHON,
            InputMode::ShadowFile,
            OutputFormat::Mypy,
            args(&["-O", "json", "--no-error-summary", "--shadow-file", "{file}", "{buffer}", "{file}"]),
        ),
        preset("tsc", TYPESCRIPT, InputMode::Mirror, OutputFormat::Tsc, None),
        preset(
            "eslint",
            SCRIPT,
            InputMode::Stdin,
            OutputFormat::Eslint,
            args(&["--format", "json", "--no-warn-ignored", "--stdin", "--stdin-filename", "{file}"]),
        ),
    ]
}

fn markers(preset: &str) -> &'static [&'static str] {
    match preset {
        "ruff" => &["pyproject.toml", "ruff.toml", ".ruff.toml"],
        "pyright" => &["pyrightconfig.json", "pyproject.toml"],
        "mypy" => &["mypy.ini", ".mypy.ini", "pyproject.toml", "setup.cfg"],
        "tsc" => &["tsconfig.json", "package.json"],
        "eslint" => &[
            "eslint.config.js",
            "eslint.config.mjs",
            "eslint.config.cjs",
            "eslint.config.ts",
            "eslint.config.mts",
            "eslint.config.cts",
        ],
        _ => &[],
    }
}

/// tsc's arguments: the project's nearest `tsconfig.json` when there is one (so its options
/// and paths apply), else the file alone with modern defaults.
pub fn tsc_args(tsconfig: Option<&Path>, language: Language) -> Vec<String> {
    let mut args: Vec<String> = ["--noEmit", "--pretty", "false"].iter().map(|a| a.to_string()).collect();
    match tsconfig {
        Some(config) => {
            args.push("-p".to_string());
            args.push(config.display().to_string());
        }
        None => {
            for arg in [
                "--target",
                "es2022",
                "--module",
                "esnext",
                "--moduleResolution",
                "bundler",
                "--skipLibCheck",
            ] {
                args.push(arg.to_string());
            }
            if language == Language::Tsx {
                args.extend(["--jsx".to_string(), "preserve".to_string()]);
            }
            args.push("{file}".to_string());
        }
    }
    args
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
}

impl Checkers {
    /// Builds the list from settings: the presets (with their overrides) and the generic
    /// checkers, filtered by `enable`/`disable`.
    pub fn from_settings(settings: &CheckerSettings) -> Result<Checkers, ConfigError> {
        let timeout = Duration::from_millis(settings.timeout_ms.max(1));
        let mut checkers = Vec::new();
        let mut configured: BTreeMap<&str, &CheckerConfig> =
            settings.tools.iter().map(|(name, config)| (name.as_str(), config)).collect();
        for mut preset in presets(timeout) {
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
        (None, Some(errorformat)) => formats::pattern::errorformat_to_regex(errorformat),
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
        format: OutputFormat::Pattern { regex, columns },
        timeout: config.timeout_ms.map_or(timeout, |t| Duration::from_millis(t.max(1))),
        explicit: true,
        project_markers: &[],
        publish: config.publish.unwrap_or_default(),
    })
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

/// Why a checker would run the project's own code, which only a trusted workspace allows:
/// eslint loads `eslint.config.*` (a program), mypy the plugins its configuration names.
/// `(reason, whether the project has such code at its root)`: without it there is nothing
/// to tell the user.
pub fn runs_project_code(checker: &Checker, project: &Path) -> Option<(String, bool)> {
    match checker.name.as_str() {
        "eslint" => {
            let configured = std::fs::read_dir(project)
                .map(|entries| {
                    entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("eslint.config."))
                })
                .unwrap_or(false);
            Some(("eslint runs the project's eslint.config file, which is a program".to_string(), configured))
        }
        "mypy" => ["mypy.ini", ".mypy.ini", "setup.cfg", "pyproject.toml"].iter().find_map(|name| {
            let text = std::fs::read_to_string(project.join(name)).ok()?;
            text.lines()
                .any(|line| line.trim_start().starts_with("plugins"))
                .then(|| (format!("mypy would load the plugins {name} names"), true))
        }),
        _ => None,
    }
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

    #[test]
    fn tsc_uses_the_tsconfig_when_there_is_one() {
        assert_eq!(
            tsc_args(Some(Path::new("/p/tsconfig.json")), Language::TypeScript)[3..],
            ["-p", "/p/tsconfig.json"]
        );
        let alone = tsc_args(None, Language::Tsx);
        assert!(
            alone.contains(&"--jsx".to_string()) && alone.last() == Some(&"{file}".to_string()),
            "{alone:?}"
        );
    }
}
