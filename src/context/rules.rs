//! The project's rules (SPEC C7): `AGENTS.md`, `CONTRIBUTING.md` and `.tokamak/rules.md` at
//! the root, and in a monorepo the nearest of each above the file a run is about; read for
//! every run's context and cut to fit its budget.

use std::path::{Path, PathBuf};

/// The files that hold a project's rules, most specific to the agent first.
pub const RULE_FILES: &[&str] = &["AGENTS.md", ".tokamak/rules.md", "CONTRIBUTING.md"];

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
/// nearest file above `near` (when it is not the root's) and the root's, the nearest first.
pub fn project_rules(root: &Path, near: Option<&Path>) -> Vec<RuleFile> {
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
    for name in RULE_FILES {
        // the nearest one below the root, then the root's
        if let Some(found) = folders.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
            out.extend(read(root, &found));
        }
        out.extend(read(root, &root.join(name)));
    }
    out
}

fn read(root: &Path, path: &Path) -> Option<RuleFile> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_RULES_BYTES)]).trim().to_string();
    if text.is_empty() {
        return None;
    }
    Some(RuleFile { path: path.strip_prefix(root).unwrap_or(path).to_path_buf(), text })
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
        let rules = project_rules(root, Some(&file));
        let paths: Vec<String> = rules.iter().map(|r| r.path.display().to_string()).collect();
        assert_eq!(
            paths,
            ["packages/web/AGENTS.md", "AGENTS.md", ".tokamak/rules.md"],
            "an empty file is not a rule"
        );
        assert_eq!(project_rules(root, None).len(), 2);

        let shown = render_rules(&rules, 4096);
        assert!(
            shown.starts_with("The project's rules:\n--- packages/web/AGENTS.md ---\nUse React hooks.\n"),
            "{shown}"
        );
        std::fs::write(root.join("AGENTS.md"), "x".repeat(10_000)).unwrap();
        let shown = render_rules(&project_rules(root, None), 1000);
        assert!(shown.len() < 1300, "cut to the budget: {}", shown.len());
        assert!(render_rules(&[], 100).is_empty());
    }
}
