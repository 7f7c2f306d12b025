//! The project's rules (SPEC C7): `AGENTS.md`, Claude Code's `CLAUDE.md` (and
//! `.claude/CLAUDE.md`, `CLAUDE.local.md`), `.tokamak/rules.md` and `CONTRIBUTING.md` at the
//! root, and in a monorepo the nearest of each above the file a run is about, then the user's
//! own `~/.claude/CLAUDE.md` (`CLAUDE_CONFIG_DIR`); a `CLAUDE.md`'s imports (`@path`) followed within its project
//! (the user's within their home); read for every run's context and cut to fit its budget. A
//! folder the user has not trusted gives no rules: only the user's own are read.

use std::path::{Path, PathBuf};

/// The files that hold a project's rules, most specific to the agent first.
pub const RULE_FILES: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    ".claude/CLAUDE.md",
    "CLAUDE.local.md",
    ".tokamak/rules.md",
    "CONTRIBUTING.md",
];

/// How deep imports are followed (`@a.md` importing `@b.md` …), as Claude Code does.
const MAX_IMPORT_DEPTH: usize = 5;

/// Bytes of one rules file read at most.
const MAX_RULES_BYTES: usize = 16 * 1024;

/// One rules file read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFile {
    /// Relative to the root.
    pub path: PathBuf,
    pub text: String,
}

/// The rules for work in `root` near `near` (a file or folder inside it): for each name, the
/// nearest file above `near` (when it is not the root's) and the root's, the nearest first, each
/// followed by what it imports; then the user's own. `trusted`: the folder's own are read.
pub fn project_rules(root: &Path, near: Option<&Path>, trusted: bool) -> Vec<RuleFile> {
    rules_with_home(root, near, trusted, crate::places::claude_home().as_deref())
}

/// [`project_rules`] with the user's Claude folder given (`None`: no user rules).
fn rules_with_home(root: &Path, near: Option<&Path>, trusted: bool, home: Option<&Path>) -> Vec<RuleFile> {
    let mut out = if trusted { folder_rules(root, near) } else { Vec::new() };
    if let Some(home) = home {
        let user = home.join("CLAUDE.md");
        let mut seen = Vec::new();
        out.extend(read_with_imports(home, &user, 0, &mut seen));
    }
    out
}

/// The rules files in `root` that an untrusted folder's runs do not read (relative paths).
pub fn unread_rules(root: &Path) -> Vec<PathBuf> {
    RULE_FILES.iter().map(PathBuf::from).filter(|name| root.join(name).is_file()).collect()
}

fn folder_rules(root: &Path, near: Option<&Path>) -> Vec<RuleFile> {
    let mut folders: Vec<PathBuf> = Vec::new();
    if let Some(near) = near.filter(|n| n.starts_with(root)) {
        let mut dir = if near.is_dir() { Some(near) } else { near.parent() };
        while let Some(d) = dir {
            if d == root || !d.starts_with(root) {
                break;
            }
            folders.push(d.to_path_buf());
            dir = d.parent();
        }
    }
    let mut out = Vec::new();
    // a file imported twice (two CLAUDE.md importing one guide) is shown once
    let mut seen = Vec::new();
    for name in RULE_FILES {
        // the nearest one below the root, then the root's
        if let Some(found) = folders.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
            out.extend(read_with_imports(root, &found, 0, &mut seen));
        }
        out.extend(read_with_imports(root, &root.join(name), 0, &mut seen));
    }
    out
}

/// `path` read, then each file it imports (`@docs/style.md`, relative to `path`'s folder, or
/// `@~/…` in the home) that lies within `within`, depth first, each once.
fn read_with_imports(within: &Path, path: &Path, depth: usize, seen: &mut Vec<PathBuf>) -> Vec<RuleFile> {
    let Ok(real) = path.canonicalize() else { return Vec::new() };
    let inside = within.canonicalize().is_ok_and(|w| real.starts_with(w));
    if seen.contains(&real) || !inside {
        return Vec::new();
    }
    seen.push(real);
    let Some(rule) = read(within, path) else { return Vec::new() };
    let mut out = Vec::new();
    let imports = if depth < MAX_IMPORT_DEPTH { imports(&rule.text) } else { Vec::new() };
    out.push(rule);
    let folder = path.parent().unwrap_or(within);
    for import in imports {
        let target = match import.strip_prefix("~/") {
            Some(rest) => match dirs::home_dir() {
                Some(home) => home.join(rest),
                None => continue,
            },
            None => folder.join(&import),
        };
        if target.is_file() {
            out.extend(read_with_imports(within, &target, depth + 1, seen));
        } else {
            tracing::debug!("{}: the import @{import} is not a file", path.display());
        }
    }
    out
}

/// The `@path` imports of a rules file, as Claude Code reads them: a word starting with `@`
/// outside code blocks and code spans, naming a path (it has a `/` or a `.`).
fn imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // code spans are not imports
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for word in plain.split_whitespace() {
            let Some(target) = word.strip_prefix('@') else { continue };
            let target = target.trim_end_matches([',', ';', ':', ')', '.']);
            let pathlike = target.contains('/') || target.contains('.');
            if !target.is_empty() && pathlike && !target.contains('@') && !out.iter().any(|o| o == target) {
                out.push(target.to_string());
            }
        }
    }
    out
}

fn read(root: &Path, path: &Path) -> Option<RuleFile> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_RULES_BYTES)]).trim().to_string();
    if text.is_empty() {
        return None;
    }
    let shown = match path.strip_prefix(root) {
        Ok(relative) => relative.to_path_buf(),
        Err(_) => path.to_path_buf(),
    };
    Some(RuleFile { path: shown, text })
}

/// The rules as a prompt shows them, within `max_bytes` (each file cut in proportion, with a
/// marker), or an empty string when there are none.
pub fn render_rules(rules: &[RuleFile], max_bytes: usize) -> String {
    if rules.is_empty() {
        return String::new();
    }
    let share = (max_bytes / rules.len()).max(256);
    let mut out = String::from("The project's rules:\n");
    for rule in rules {
        out.push_str(&format!("--- {} ---\n{}\n", rule.path.display(), crate::text::cut(&rule.text, share)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_rules_above_a_file_come_before_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("packages/web/src")).unwrap();
        std::fs::create_dir_all(root.join(".tokamak")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "Use tabs.\n").unwrap();
        std::fs::write(root.join("packages/web/AGENTS.md"), "Use React hooks.\n").unwrap();
        std::fs::write(root.join(".tokamak/rules.md"), "Never touch migrations.\n").unwrap();
        std::fs::write(root.join("CONTRIBUTING.md"), "  \n").unwrap();
        let file = root.join("packages/web/src/app.tsx");
        let rules = rules_with_home(root, Some(&file), true, None);
        let paths: Vec<String> = rules.iter().map(|r| r.path.display().to_string()).collect();
        assert_eq!(
            paths,
            ["packages/web/AGENTS.md", "AGENTS.md", ".tokamak/rules.md"],
            "an empty file is not a rule"
        );
        assert_eq!(rules_with_home(root, None, true, None).len(), 2);
        assert!(
            rules_with_home(root, Some(&file), false, None).is_empty(),
            "an untrusted folder's rules are not read"
        );
        assert_eq!(
            unread_rules(root),
            [
                PathBuf::from("AGENTS.md"),
                PathBuf::from(".tokamak/rules.md"),
                PathBuf::from("CONTRIBUTING.md")
            ]
        );

        let shown = render_rules(&rules, 4096);
        assert!(
            shown.starts_with("The project's rules:\n--- packages/web/AGENTS.md ---\nUse React hooks.\n"),
            "{shown}"
        );
        std::fs::write(root.join("AGENTS.md"), "x".repeat(10_000)).unwrap();
        let shown = render_rules(&rules_with_home(root, None, true, None), 1000);
        assert!(shown.len() < 1300, "cut to the budget: {}", shown.len());
        assert!(render_rules(&[], 100).is_empty());
    }

    #[test]
    fn claude_md_is_read_nearest_first_with_its_imports_within_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("services/pay/src")).unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(
            root.join("CLAUDE.md"),
            "# Project\nSee @docs/style.md and @docs/missing.md.\nNot `@docs/secret.md`, nor a@b.com.\n```\n@docs/secret.md\n```\nOutside: @../outside.md\n",
        )
        .unwrap();
        std::fs::write(root.join("docs/style.md"), "Four spaces. Also @style.md again and @deeper.md\n")
            .unwrap();
        std::fs::write(root.join("docs/deeper.md"), "Deeper rule.\n").unwrap();
        std::fs::write(root.join("docs/secret.md"), "SECRET\n").unwrap();
        std::fs::write(dir.path().parent().unwrap().join("outside.md"), "OUTSIDE\n").ok();
        std::fs::write(root.join("services/pay/CLAUDE.md"), "Money is Decimal.\n").unwrap();
        let rules = rules_with_home(root, Some(&root.join("services/pay/src/api.py")), true, None);
        let paths: Vec<String> = rules.iter().map(|r| r.path.display().to_string()).collect();
        assert_eq!(paths, ["services/pay/CLAUDE.md", "CLAUDE.md", "docs/style.md", "docs/deeper.md"]);
        let all: String = rules.iter().map(|r| r.text.as_str()).collect();
        assert!(!all.contains("SECRET") && !all.contains("OUTSIDE"), "{all}");
        assert_eq!(imports("@a.md, `@b.md` @c/d and me@x.org @word"), ["a.md", "c/d"]);
    }
}
