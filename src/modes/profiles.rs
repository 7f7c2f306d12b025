//! Role profiles (SPEC M3, L5, seed 004): each role's system prompt, the actions it may take,
//! the paths it may write and the commands it may run — least privilege the executor
//! enforces, not a prompt. A trusted workspace can override a role or add one with
//! `.tokamak/agents/<role>.md`: YAML front matter (`model`, `allowed_actions`, `write_paths`,
//! `commands`, `description`, `skills`), the body as the system prompt; or with Claude Code's
//! `.claude/agents/<name>.md` (front matter `name`, `description`, `tools`, `model`, `skills`),
//! its tools mapped onto Tokamak's actions (`.tokamak/agents/` wins a clash, said once). A
//! broken file is reported with its path and line, and the built-in profile stays.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use super::routing::Role;
use crate::action::ACTION_NAMES;

/// The actions that only look.
const LOOK: &[&str] =
    &["read", "list", "search", "symbols", "definition", "callers", "importers", "locate", "impact", "skill"];

/// One role's permissions and instructions.
#[derive(Debug, Clone)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub system_prompt: String,
    /// Action names it may take.
    pub allowed_actions: Vec<String>,
    /// Globs (relative to the root) of the files it may change; `None`: any file.
    pub write_paths: Option<Vec<String>>,
    /// Programs it may run (by name: `pytest`, or `python -m pytest`), besides the project's
    /// test command when `test_command` says so; `None`: whatever the command policy allows.
    pub commands: Option<Vec<String>>,
    /// It may run the project's test command.
    pub test_command: bool,
    /// Its own model, by name, on the configured server (or a `[profiles.NAME]` of the
    /// settings: Claude Code's `opus`, `sonnet`, `haiku`).
    pub model: Option<String>,
    /// Skills it reads in full before its work (by name).
    pub skills: Vec<String>,
    /// It may also change the files outside `write_paths` once a test run of its run failed
    /// and until one passes (seed 004's tester: a test failing because of the source's bug
    /// is fixed in the source).
    pub fixes_source: bool,
    /// `built in`, or the file it came from.
    pub source: String,
    writable: Option<GlobSet>,
}

impl Profile {
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        description: &str,
        system_prompt: &str,
        allowed_actions: Vec<String>,
        write_paths: Option<Vec<String>>,
        commands: Option<Vec<String>>,
        test_command: bool,
        source: &str,
    ) -> Result<Profile, String> {
        let writable = match &write_paths {
            None => None,
            Some(globs) => {
                let mut builder = GlobSetBuilder::new();
                for glob in globs {
                    builder.add(
                        Glob::new(glob)
                            .map_err(|err| format!("write_paths: {glob:?} is not a glob: {err}"))?,
                    );
                }
                Some(builder.build().map_err(|err| err.to_string())?)
            }
        };
        Ok(Profile {
            name: name.to_string(),
            description: description.to_string(),
            system_prompt: system_prompt.to_string(),
            allowed_actions,
            write_paths,
            commands,
            test_command,
            model: None,
            skills: Vec::new(),
            fixes_source: false,
            source: source.to_string(),
            writable,
        })
    }

    /// Why this role may not take `action` (its name; an MCP server's tool by its full name,
    /// `mcp__server__tool`, allowed by `mcp`, `mcp__server` or its own name), or `None`.
    pub fn refuses_action(&self, action: &str) -> Option<String> {
        let allowed = |a: &String| {
            a == action
                || (action.starts_with("mcp__")
                    && (a == "mcp"
                        || action.strip_prefix(a.as_str()).is_some_and(|rest| rest.starts_with("__"))))
        };
        (!self.allowed_actions.iter().any(allowed)).then(|| {
            format!(
                "the {} role may not {action} (its actions are {}; {})",
                self.name,
                self.allowed_actions.join(", "),
                self.source
            )
        })
    }

    /// Why this role may not change `relative` (a path relative to the root), or `None`.
    pub fn refuses_write(&self, relative: &str) -> Option<String> {
        let (Some(globs), Some(set)) = (&self.write_paths, &self.writable) else { return None };
        (!set.is_match(relative)).then(|| {
            format!(
                "the {} role may write only {}, not {relative} ({})",
                self.name,
                globs.join(", "),
                self.source
            )
        })
    }

    /// Why this role may not run `argv`, or `None`. `test` is the project's test command.
    pub fn refuses_command(&self, argv: &[String], test: Option<&[String]>) -> Option<String> {
        if self.test_command && test.is_some_and(|t| argv.starts_with(t)) {
            return None;
        }
        let allowed = self.commands.as_ref()?;
        let program = argv
            .first()
            .map(|p| Path::new(p).file_name().and_then(|n| n.to_str()).unwrap_or(p))
            .unwrap_or("");
        // `python -m pytest` runs pytest
        let module = match argv {
            [_, flag, module, ..] if flag == "-m" => Some(module.as_str()),
            _ => None,
        };
        let ok = allowed
            .iter()
            .any(|a| a == program || module == Some(a.as_str()) || program.starts_with(&format!("{a}.")));
        (!ok).then(|| {
            let also = if self.test_command { " and the project's test command" } else { "" };
            format!(
                "the {} role may run only {}{also}, not {}",
                self.name,
                allowed.join(", "),
                argv.join(" ")
            )
        })
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn with(look: &[&str], more: &[&str]) -> Vec<String> {
    look.iter().chain(more).map(|s| s.to_string()).collect()
}

/// The five roles as seed 004 describes them.
pub fn built_in(role: Role) -> Profile {
    let built = match role {
        Role::Architect => Profile::new(
            "architect",
            "Designs structure, modules, dependency direction, interfaces and data models; writes design documents, not code.",
            "You are the architect. Decide the directory structure, the split into modules, the direction of dependencies, the interfaces and the data models, and write them down in docs/architecture/, with the reason for each decision, so a coder and a tester can follow. Read the existing code first; design nothing on a guess. Write no code.",
            with(LOOK, &["create", "edit"]),
            Some(names(&["docs/architecture/**"])),
            Some(Vec::new()),
            false,
            "built in",
        ),
        Role::Coder => Profile::new(
            "coder",
            "Implements features, fixes bugs and refactors, with tests.",
            "You are the coder. Find similar code first, implement with type hints and docstrings, keep functions small and single-purpose, name constants instead of magic numbers, and write unit tests for what you change. Fix build, test, lint and type errors yourself.",
            with(ACTION_NAMES, &["mcp"]),
            None,
            None,
            true,
            "built in",
        ),
        Role::Tester => Profile::new(
            "tester",
            "Writes and runs tests.",
            "You are the tester. Cover the happy path, the edge cases and the errors, arrange-act-assert, and run the tests until they pass. You write tests; when a test fails because of a bug in the code under test (not in the test), fix that code too — the smallest change that makes the right behaviour pass — run the tests again, and say in your summary what the bug was.",
            with(LOOK, &["create", "edit", "rename", "delete", "run", "mcp"]),
            Some(names(&[
                "tests/**",
                "test/**",
                "**/tests/**",
                "**/test/**",
                "**/__tests__/**",
                "**/test_*.py",
                "**/*_test.py",
                "**/conftest.py",
                "**/*.test.*",
                "**/*.spec.*",
                "test_*.py",
                "*_test.py",
                "conftest.py",
                "*.test.*",
                "*.spec.*",
            ])),
            Some(names(&["pytest", "vitest", "jest"])),
            true,
            "built in",
        ),
        Role::Reviewer => Profile::new(
            "reviewer",
            "Reviews code and says what to change; writes nothing.",
            "You are the reviewer. Check design and dependency direction, code quality (names, single responsibility, small functions, types, docstrings, constants), error handling, tests and security (no secrets in code, inputs validated). Say what to change as concrete instructions with file, line and severity (CRITICAL, MAJOR, MINOR); no feedback without a reason. You cannot change files.",
            with(LOOK, &["run"]),
            Some(Vec::new()),
            Some(names(&["ruff", "mypy", "pytest", "eslint", "tsc", "pyright"])),
            true,
            "built in",
        ),
        Role::Documenter => Profile::new(
            "documenter",
            "Writes and updates documentation from the code as it is.",
            "You are the documenter. Write only what you checked against the code: Markdown, code blocks with their language, a table of contents for long documents, API documentation from the real signatures. Document nothing that does not exist. You change documentation only.",
            with(LOOK, &["create", "edit", "rename", "delete"]),
            Some(names(&["docs/**", "**/*.md", "**/*.rst", "*.md", "*.rst"])),
            Some(Vec::new()),
            false,
            "built in",
        ),
    };
    // the built-in globs and lists are constants: they parse
    let mut built = built.unwrap_or_else(|err| unreachable!("built-in profile: {err}"));
    built.fixes_source = role == Role::Tester;
    built
}

/// A profile file's front matter.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    allowed_actions: Option<Vec<String>>,
    #[serde(default)]
    write_paths: Option<Vec<String>>,
    #[serde(default)]
    commands: Option<Vec<String>>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, deserialize_with = "names_or_line")]
    skills: Option<Vec<String>>,
}

/// Claude Code's agent file's front matter (`.claude/agents/<name>.md`); what else it holds
/// (`color`, …) is Claude Code's own.
#[derive(Debug, Deserialize)]
struct ClaudeFrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, deserialize_with = "names_or_line")]
    tools: Option<Vec<String>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default, deserialize_with = "names_or_line")]
    skills: Option<Vec<String>>,
}

/// A list of names: YAML's list, or one line separated by commas (`Read, Grep, Glob`).
fn names_or_line<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Names {
        Line(String),
        List(Vec<String>),
    }
    Ok(Option::<Names>::deserialize(deserializer)?.map(|names| match names {
        Names::Line(line) => {
            line.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect()
        }
        Names::List(list) => list.into_iter().map(|n| n.trim().to_string()).collect(),
    }))
}

/// Claude Code's tools as Tokamak's actions (`None`: a tool Tokamak has no action for —
/// `WebFetch`, `Task`, `TodoWrite` …). An MCP tool (`mcp__…`) is itself.
fn claude_tool(tool: &str) -> Option<Vec<String>> {
    let actions: &[&str] = match tool {
        "Read" => &["read", "skill", "symbols", "definition", "callers", "importers", "locate", "impact"],
        "Glob" | "LS" => &["list"],
        "Grep" => &["search", "symbols", "locate"],
        "Edit" | "MultiEdit" | "NotebookEdit" => &["edit", "rename", "delete"],
        "Write" => &["create", "edit"],
        "Bash" => &["run", "git_commit"],
        mcp if mcp.starts_with("mcp__") => return Some(vec![mcp.to_string()]),
        _ => return None,
    };
    Some(names(actions))
}

/// Every role's profile: the built-in five, overridden or joined by a trusted workspace's
/// files.
#[derive(Debug, Clone)]
pub struct Profiles {
    by_name: BTreeMap<String, Profile>,
    /// The files read, and the ones that could not be (path:line: why).
    pub read: Vec<PathBuf>,
    pub problems: Vec<String>,
    /// What was read differently from what the file says (a Claude Code agent shadowed by a
    /// `.tokamak/agents/` file, tools Tokamak has no action for), to be said once.
    pub notes: Vec<String>,
}

impl Profiles {
    /// The built-in profiles, with `root`'s `.claude/agents/*.md` and then its
    /// `.tokamak/agents/*.md` over them when `trusted`.
    pub fn load(root: &Path, trusted: bool) -> Profiles {
        let mut profiles = Profiles {
            by_name: Role::ALL.into_iter().map(|r| (r.name().to_string(), built_in(r))).collect(),
            read: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
        };
        let claude = markdown_files(&root.join(".claude/agents"));
        let ours = markdown_files(&root.join(".tokamak/agents"));
        if !trusted {
            for (dir, files) in [(".claude/agents", &claude), (".tokamak/agents", &ours)] {
                if !files.is_empty() {
                    profiles.problems.push(format!(
                        "{} is not read: the folder is not trusted (role files choose models and permissions; `tokamak trust` to allow them)",
                        root.join(dir).display()
                    ));
                }
            }
            return profiles;
        }
        let mut from_claude: BTreeMap<String, PathBuf> = BTreeMap::new();
        for path in claude {
            let read = std::fs::read_to_string(&path)
                .map_err(|e| format!("{}: {e}", path.display()))
                .and_then(|text| parse_claude(&text, &path, &profiles.by_name));
            match read {
                Ok((profile, unknown)) => {
                    if !unknown.is_empty() {
                        profiles.notes.push(format!(
                            "{}: Tokamak has no action for {} (left out)",
                            path.display(),
                            unknown.join(", ")
                        ));
                    }
                    from_claude.insert(profile.name.clone(), path.clone());
                    profiles.by_name.insert(profile.name.clone(), profile);
                    profiles.read.push(path);
                }
                Err(problem) => {
                    tracing::warn!("{problem}");
                    profiles.problems.push(problem);
                }
            }
        }
        for path in ours {
            let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(|s| s.to_ascii_lowercase()) else {
                continue;
            };
            // a Claude Code agent of the same name is not the base: the built-in role is
            let base = match from_claude.get(&name) {
                Some(_) => Role::from_name(&name).map(built_in),
                None => profiles.by_name.get(&name).cloned(),
            };
            match std::fs::read_to_string(&path)
                .map_err(|e| format!("{}: {e}", path.display()))
                .and_then(|text| parse(&name, &text, &path, base.as_ref()))
            {
                Ok(profile) => {
                    if let Some(shadowed) = from_claude.get(&name) {
                        profiles.notes.push(format!(
                            "{} is not used: {} defines the {name} role",
                            shadowed.display(),
                            path.display()
                        ));
                        profiles.read.retain(|p| p != shadowed);
                    }
                    profiles.by_name.insert(name, profile);
                    profiles.read.push(path);
                }
                Err(problem) => {
                    tracing::warn!("{problem}");
                    profiles.problems.push(problem);
                }
            }
        }
        profiles
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.by_name.get(&name.to_ascii_lowercase())
    }

    pub fn names(&self) -> Vec<String> {
        self.by_name.keys().cloned().collect()
    }
}

/// A profile file: `---`, YAML, `---`, then the system prompt. What it does not set comes
/// from the built-in profile of the same name (an added role starts from the reviewer's:
/// looking only).
fn parse(name: &str, text: &str, path: &Path, base: Option<&Profile>) -> Result<Profile, String> {
    let shown = path.display();
    let (yaml, body) = front_matter(text, &shown.to_string())?;
    let front: FrontMatter = serde_yaml_ng::from_str(yaml).map_err(|err| {
        // the YAML starts on the file's second line
        let line = err.location().map_or(2, |l| l.line() + 1);
        format!("{shown}:{line}: {err}")
    })?;
    let base =
        base.cloned().unwrap_or_else(|| Profile { name: name.to_string(), ..built_in(Role::Reviewer) });
    if let Some(actions) = &front.allowed_actions {
        for action in actions {
            if !ACTION_NAMES.contains(&action.as_str()) && action != "mcp" && !action.starts_with("mcp__") {
                let line = text.lines().position(|l| l.contains(action.as_str())).map_or(2, |i| i + 1);
                return Err(format!(
                    "{shown}:{line}: there is no action {action:?}; the actions are {}",
                    ACTION_NAMES.join(", ")
                ));
            }
        }
    }
    let mut profile = Profile::new(
        name,
        front.description.as_deref().unwrap_or(&base.description),
        if body.is_empty() { &base.system_prompt } else { body },
        front.allowed_actions.unwrap_or(base.allowed_actions),
        front.write_paths.or(base.write_paths),
        front.commands.or(base.commands),
        base.test_command,
        &shown.to_string(),
    )
    .map_err(|err| format!("{shown}: {err}"))?;
    profile.model = front.model.or(base.model);
    profile.skills = front.skills.unwrap_or(base.skills);
    profile.fixes_source = base.fixes_source;
    Ok(profile)
}

/// The `.md` files of a folder, sorted.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "md")).collect();
    files.sort();
    files
}

/// The front matter's YAML and the body of a Markdown file with front matter.
fn front_matter<'t>(text: &'t str, shown: &str) -> Result<(&'t str, &'t str), String> {
    match crate::text::front_matter(text) {
        crate::text::FrontMatter::Present { yaml, body } => Ok((yaml, body)),
        crate::text::FrontMatter::Absent(_) => {
            Err(format!("{shown}:1: an agent file starts with front matter between --- lines"))
        }
        crate::text::FrontMatter::Unclosed => {
            Err(format!("{shown}:1: the front matter is not closed with a --- line"))
        }
    }
}

/// A Claude Code agent file (`.claude/agents/<name>.md`) as a profile, and the tools it lists
/// that Tokamak has no action for. Its `tools` decide its actions (none listed: every action
/// and every MCP tool, as Claude Code gives an agent without a list); the paths it may write
/// and the commands it may run are the built-in role's of its name, if there is one.
fn parse_claude(
    text: &str,
    path: &Path,
    known: &BTreeMap<String, Profile>,
) -> Result<(Profile, Vec<String>), String> {
    let shown = path.display().to_string();
    let (yaml, body) = front_matter(text, &shown)?;
    let front: ClaudeFrontMatter = serde_yaml_ng::from_str(yaml).map_err(|err| {
        let line = err.location().map_or(2, |l| l.line() + 1);
        format!("{shown}:{line}: {err}")
    })?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("agent");
    let name =
        front.name.as_deref().filter(|n| !n.trim().is_empty()).unwrap_or(stem).trim().to_ascii_lowercase();
    if body.is_empty() {
        return Err(format!("{shown}: the agent has no instructions after its front matter"));
    }
    let base = Role::from_name(&name).map(built_in).or_else(|| known.get(&name).cloned());
    let mut unknown = Vec::new();
    let actions = match &front.tools {
        None => {
            let mut all = names(ACTION_NAMES);
            all.push("mcp".to_string());
            all
        }
        Some(tools) => {
            let mut actions: Vec<String> = Vec::new();
            for tool in tools {
                match claude_tool(tool) {
                    Some(mapped) => mapped.into_iter().for_each(|a| {
                        if !actions.contains(&a) {
                            actions.push(a);
                        }
                    }),
                    None => unknown.push(tool.clone()),
                }
            }
            actions
        }
    };
    let description =
        front.description.unwrap_or_else(|| base.as_ref().map(|b| b.description.clone()).unwrap_or_default());
    let mut profile = Profile::new(
        &name,
        &description,
        body,
        actions,
        base.as_ref().and_then(|b| b.write_paths.clone()),
        base.as_ref().and_then(|b| b.commands.clone()),
        base.as_ref().is_none_or(|b| b.test_command),
        &shown,
    )
    .map_err(|err| format!("{shown}: {err}"))?;
    // `inherit`: the run's model
    profile.model = front.model.filter(|m| m != "inherit");
    profile.skills = front.skills.unwrap_or_default();
    profile.fixes_source = base.is_some_and(|b| b.fixes_source);
    Ok((profile, unknown))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        names(list)
    }

    #[test]
    fn built_in_roles_have_least_privilege() {
        let reviewer = built_in(Role::Reviewer);
        assert!(reviewer.refuses_action("edit").unwrap().starts_with("the reviewer role may not edit"));
        assert!(reviewer.refuses_action("read").is_none());
        assert!(reviewer.refuses_write("src/app.py").is_some());
        assert!(reviewer.refuses_command(&strings(&["ruff", "check", "."]), None).is_none());
        assert!(reviewer.refuses_command(&strings(&["python", "-m", "pytest", "-q"]), None).is_none());
        assert!(
            reviewer
                .refuses_command(&strings(&["rm", "-rf", "src"]), None)
                .unwrap()
                .contains("may run only ruff")
        );

        let documenter = built_in(Role::Documenter);
        assert!(documenter.refuses_write("src/app.py").unwrap().contains("may write only docs/**"));
        assert!(documenter.refuses_write("docs/guide.md").is_none());
        assert!(documenter.refuses_write("README.md").is_none());
        assert!(documenter.refuses_write("pkg/notes.rst").is_none());
        assert!(documenter.refuses_action("run").is_some());

        let architect = built_in(Role::Architect);
        assert!(architect.refuses_write("docs/architecture/payments.md").is_none());
        assert!(architect.refuses_write("docs/guide.md").is_some());
        assert!(architect.refuses_write("src/app.py").is_some());

        let tester = built_in(Role::Tester);
        assert!(tester.refuses_write("tests/test_app.py").is_none());
        assert!(tester.refuses_write("pkg/test_app.py").is_none());
        assert!(tester.refuses_write("web/src/cart.test.ts").is_none());
        assert!(tester.refuses_write("src/app.py").is_some());
        let test = strings(&["make", "check"]);
        assert!(
            tester.refuses_command(&strings(&["make", "check", "-j2"]), Some(&test)).is_none(),
            "the test command"
        );

        let coder = built_in(Role::Coder);
        assert!(
            coder.refuses_action("git_commit").is_none()
                && coder.refuses_write("anything/at/all.py").is_none()
        );
        assert!(
            coder.refuses_command(&strings(&["cargo", "build"]), None).is_none(),
            "the command policy decides"
        );
    }

    #[test]
    fn workspace_files_override_add_or_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(".tokamak/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("reviewer.md"),
            "---\nmodel: big-model\ndescription: Strict reviews\n---\nReview like a hawk.\n",
        )
        .unwrap();
        std::fs::write(
            agents.join("translator.md"),
            "---\nallowed_actions: [read, search, edit]\nwrite_paths: [\"locales/**\"]\n---\nTranslate the messages.\n",
        )
        .unwrap();
        std::fs::write(agents.join("documenter.md"), "---\nallowed_actions: [read, teleport]\n---\nx\n")
            .unwrap();
        std::fs::write(agents.join("tester.md"), "---\nmodel: [unclosed\n---\nx\n").unwrap();
        std::fs::write(agents.join("coder.md"), "---\nwrite_path: [src/**]\n---\nx\n").unwrap();

        let profiles = Profiles::load(dir.path(), true);
        let reviewer = profiles.get("reviewer").unwrap();
        assert_eq!(reviewer.model.as_deref(), Some("big-model"));
        assert_eq!(reviewer.system_prompt, "Review like a hawk.");
        assert_eq!(reviewer.description, "Strict reviews");
        assert!(reviewer.refuses_action("edit").is_some(), "what the file does not set stays built in");
        let translator = profiles.get("translator").unwrap();
        assert!(translator.refuses_write("locales/ko.json").is_none());
        assert!(translator.refuses_write("src/app.py").is_some());
        assert!(translator.refuses_action("run").is_some());

        let problems = profiles.problems.join("\n");
        assert!(problems.contains("documenter.md:2: there is no action \"teleport\""), "{problems}");
        assert!(problems.contains("tester.md:2:"), "{problems}");
        assert!(problems.contains("coder.md:2: unknown field `write_path`"), "{problems}");
        assert_eq!(profiles.problems.len(), 3, "{problems}");
        // the broken ones keep their built-in profile
        assert_eq!(profiles.get("documenter").unwrap().source, "built in");
        assert_eq!(profiles.read.len(), 2);

        // untrusted: nothing read, and it says why
        let untrusted = Profiles::load(dir.path(), false);
        assert_eq!(untrusted.get("reviewer").unwrap().source, "built in");
        assert!(untrusted.get("translator").is_none());
        assert!(untrusted.problems[0].contains("not trusted"), "{:?}", untrusted.problems);
    }

    #[test]
    fn claude_code_agents_are_roles_with_their_tools_as_actions() {
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join(".claude/agents");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::write(
            claude.join("reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews payments code\ntools: Read, Grep, Glob, WebFetch\nmodel: opus\ncolor: red\n---\nReview it. Read .claude/skills/code-standards/SKILL.md first.\n",
        )
        .unwrap();
        std::fs::write(
            claude.join("security-auditor.md"),
            "---\nname: Security-Auditor\ndescription: Audits\n---\nAudit everything.\n",
        )
        .unwrap();
        std::fs::write(
            claude.join("tester.md"),
            "---\nname: tester\ntools:\n  - Read\n  - Write\n  - Edit\n  - Bash\n  - mcp__rag__search\nskills: testing-strategy\n---\nTest it.\n",
        )
        .unwrap();
        std::fs::write(claude.join("coder.md"), "---\nname: coder\n---\nCode it.\n").unwrap();
        std::fs::write(claude.join("empty.md"), "---\nname: empty\n---\n").unwrap();
        let ours = dir.path().join(".tokamak/agents");
        std::fs::create_dir_all(&ours).unwrap();
        std::fs::write(ours.join("coder.md"), "---\ndescription: Ours\n---\nOur coder.\n").unwrap();

        let profiles = Profiles::load(dir.path(), true);
        let reviewer = profiles.get("reviewer").unwrap();
        assert_eq!(reviewer.system_prompt, "Review it. Read .claude/skills/code-standards/SKILL.md first.");
        assert_eq!(reviewer.model.as_deref(), Some("opus"));
        assert!(reviewer.refuses_action("read").is_none() && reviewer.refuses_action("search").is_none());
        assert!(reviewer.refuses_action("list").is_none() && reviewer.refuses_action("skill").is_none());
        assert!(reviewer.refuses_action("edit").unwrap().contains("may not edit"), "not in its tools");
        assert!(reviewer.refuses_action("run").is_some());
        assert!(reviewer.refuses_action("mcp__rag__search").is_some());

        let auditor = profiles.get("security-auditor").unwrap();
        assert!(
            auditor.refuses_action("edit").is_none() && auditor.refuses_action("mcp__any__tool").is_none(),
            "no tools: all of them"
        );

        let tester = profiles.get("tester").unwrap();
        assert_eq!(tester.skills, ["testing-strategy"]);
        assert!(tester.refuses_action("mcp__rag__search").is_none());
        assert!(tester.refuses_action("mcp__rag__delete").is_some());
        assert!(tester.refuses_action("run").is_none() && tester.refuses_action("create").is_none());
        assert!(
            tester.refuses_write("src/app.py").is_some() && tester.fixes_source,
            "the built-in tester's paths"
        );

        assert_eq!(profiles.get("coder").unwrap().system_prompt, "Our coder.", ".tokamak wins");
        let notes = profiles.notes.join("\n");
        assert!(
            notes.contains(".claude/agents/coder.md is not used") && notes.contains("no action for WebFetch"),
            "{notes}"
        );
        assert!(
            profiles.problems.join("\n").contains("empty.md: the agent has no instructions"),
            "{:?}",
            profiles.problems
        );

        let untrusted = Profiles::load(dir.path(), false);
        assert!(untrusted.get("security-auditor").is_none());
        assert_eq!(untrusted.problems.len(), 2, "{:?}", untrusted.problems);
    }
}
