//! Skills (Claude Code's `SKILL.md`, seed 004's `.claude/skills/…`): a folder with a
//! `SKILL.md` — front matter `name` and `description`, then instructions — and any files beside
//! it. Read from a trusted project's `.tokamak/skills/` and `.claude/skills/` and from the
//! user's `~/.claude/skills/` (the first of a name wins). Every prompt sees each skill's one
//! line; a step whose profile names a skill, or whose words match its name or description, gets
//! its instructions in full; the model reads the other files with the `skill` action.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::rank::query_words;

/// Bytes of a `SKILL.md` kept (the rest is cut with a marker).
const MAX_SKILL_BYTES: usize = 24 * 1024;
/// Files of a skill's folder listed, at most.
const MAX_FILES: usize = 40;
/// Characters of a description shown in a prompt's list.
const MAX_DESCRIPTION: usize = 300;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its folder.
    pub dir: PathBuf,
    /// The instructions: `SKILL.md` after its front matter.
    pub instructions: String,
    /// The other files in its folder, relative to it.
    pub files: Vec<String>,
    /// Where it came from, as said to the user (`.claude/skills/testing`, `~/.claude/skills/x`).
    pub source: String,
}

/// The skills a session can use, and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    pub skills: Vec<Skill>,
    pub problems: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct FrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

impl Skills {
    /// The skills of `root` (when `trusted`) and of the user's home.
    pub fn load(root: &Path, trusted: bool) -> Skills {
        Skills::load_with_home(root, trusted, crate::places::claude_home().as_deref())
    }

    /// [`Skills::load`] with the user's Claude folder given (`None`: no user skills).
    pub fn load_with_home(root: &Path, trusted: bool, home: Option<&Path>) -> Skills {
        let mut skills = Skills::default();
        if trusted {
            for folder in [".tokamak/skills", ".claude/skills"] {
                skills.read_folder(&root.join(folder), folder);
            }
        }
        if let Some(home) = home {
            skills.read_folder(&home.join("skills"), "~/.claude/skills");
        }
        skills
    }

    /// The skill folders of a project that an untrusted folder's runs do not read.
    pub fn unread(root: &Path) -> Vec<PathBuf> {
        [".tokamak/skills", ".claude/skills"]
            .iter()
            .map(PathBuf::from)
            .filter(|f| root.join(f).is_dir())
            .collect()
    }

    fn read_folder(&mut self, folder: &Path, shown: &str) {
        let Ok(entries) = std::fs::read_dir(folder) else { return };
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for dir in dirs {
            let file = dir.join("SKILL.md");
            if !file.is_file() {
                continue;
            }
            let folder_name = dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            let source = format!("{shown}/{folder_name}");
            match read_skill(&dir, &file, &folder_name, &source) {
                Ok(skill) if self.get(&skill.name).is_some() => {
                    tracing::debug!("{source}: the skill {} is already read from elsewhere", skill.name);
                }
                Ok(skill) => self.skills.push(skill),
                Err(problem) => self.problems.push(problem),
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name.eq_ignore_ascii_case(name))
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Each skill's one line, for every prompt (empty without skills).
    pub fn index(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "Skills (instructions for kinds of work; read one in full, or a file beside it, with the skill action):\n",
        );
        for skill in &self.skills {
            let description: String = skill.description.chars().take(MAX_DESCRIPTION).collect();
            out.push_str(&format!("- {}: {}\n", skill.name, description));
        }
        out
    }

    /// The skills a step needs in full: those its profile lists (`named`) or its instructions
    /// name (`.claude/skills/<name>/SKILL.md`, `skills/<name>`), and those whose name or
    /// description its words match (`work`: the step's title and detail).
    pub fn for_step(&self, work: &str, profile: &str, named: &[String]) -> Vec<&Skill> {
        let words: Vec<String> = query_words(work).iter().map(|w| stem(w)).collect();
        self.skills
            .iter()
            .filter(|skill| {
                named.iter().any(|n| n.eq_ignore_ascii_case(&skill.name))
                    || named_in(profile, &skill.name)
                    || matches(skill, &words)
            })
            .collect()
    }

    /// The instructions of `skills` as a prompt shows them (empty: none).
    pub fn render(skills: &[&Skill]) -> String {
        let mut out = String::new();
        for skill in skills {
            out.push_str(&format!("The skill {} ({}):\n{}\n", skill.name, skill.source, skill.instructions));
            if !skill.files.is_empty() {
                out.push_str(&format!(
                    "Files beside it (read with the skill action): {}\n",
                    skill.files.join(", ")
                ));
            }
            out.push('\n');
        }
        out
    }

    /// A skill's instructions, or one of its files (`file` relative to its folder): the text,
    /// or one sentence for the model.
    pub fn read(&self, name: &str, file: Option<&str>) -> Result<String, String> {
        let Some(skill) = self.get(name) else {
            let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            return Err(if names.is_empty() {
                "there are no skills".to_string()
            } else {
                format!("there is no skill {name:?}; the skills are {}", names.join(", "))
            });
        };
        let Some(file) = file.filter(|f| !f.is_empty() && *f != "SKILL.md") else {
            return Ok(Skills::render(&[skill]));
        };
        // only a file listed in its folder: no `..`, no link out of it
        if !skill.files.iter().any(|f| f == file) {
            return Err(format!(
                "the skill {} has no file {file:?}; its files are {}",
                skill.name,
                if skill.files.is_empty() {
                    "none besides SKILL.md".to_string()
                } else {
                    skill.files.join(", ")
                }
            ));
        }
        let path = skill.dir.join(file);
        let inside = path
            .canonicalize()
            .ok()
            .zip(skill.dir.canonicalize().ok())
            .is_some_and(|(p, d)| p.starts_with(d));
        if !inside {
            return Err(format!("{file} is outside the skill {}'s folder", skill.name));
        }
        let bytes = std::fs::read(&path).map_err(|err| format!("{file} cannot be read: {err}"))?;
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_SKILL_BYTES)]).to_string();
        Ok(crate::text::cut(&text, MAX_SKILL_BYTES))
    }
}

/// `profile` names the skill: by its path (`skills/<name>`) or as `<name>` in backticks.
fn named_in(profile: &str, name: &str) -> bool {
    let lower = profile.to_ascii_lowercase();
    let name = name.to_ascii_lowercase();
    lower.contains(&format!("skills/{name}/"))
        || lower.contains(&format!("skills/{name}`"))
        || lower.contains(&format!("`{name}`"))
}

/// The step's words match the skill: every word of its name, or two of its description's.
fn matches(skill: &Skill, words: &[String]) -> bool {
    let has = |w: &String| words.contains(w);
    let name: Vec<String> = skill
        .name
        .split(['-', '_', ' '])
        .filter(|w| w.len() > 2)
        .map(|w| stem(&w.to_ascii_lowercase()))
        .collect();
    if !name.is_empty() && name.iter().all(has) {
        return true;
    }
    let mut described: Vec<String> = query_words(&skill.description)
        .into_iter()
        .filter(|w| w.len() > 3 && !GENERIC.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect();
    described.sort();
    described.dedup();
    described.iter().filter(|w| has(w)).count() >= 2
}

/// Words too common in descriptions of work to tell skills apart.
const GENERIC: &[&str] = &[
    "code",
    "when",
    "with",
    "this",
    "that",
    "from",
    "into",
    "your",
    "each",
    "them",
    "use",
    "uses",
    "using",
    "write",
    "writing",
    "file",
    "files",
    "project",
    "work",
    "should",
    "must",
    "make",
    "makes",
    "what",
    "which",
    "about",
    "before",
    "after",
    "read",
    "apply",
    "applies",
    "rules",
    "guide",
    "guidelines",
];

/// A word without its commonest English endings, so "tests", "testing" and "test" meet.
fn stem(word: &str) -> String {
    let word = word.to_ascii_lowercase();
    for ending in ["ing", "ies", "es", "s", "ed"] {
        if let Some(stem) = word.strip_suffix(ending)
            && stem.len() >= 3
        {
            return stem.to_string();
        }
    }
    word
}

fn read_skill(dir: &Path, file: &Path, folder_name: &str, source: &str) -> Result<Skill, String> {
    let bytes = std::fs::read(file).map_err(|err| format!("{source}/SKILL.md: {err}"))?;
    let text = String::from_utf8_lossy(&bytes).to_string();
    let (front, body) = match crate::text::front_matter(&text) {
        crate::text::FrontMatter::Present { yaml, body } => {
            let front: FrontMatter = serde_yaml_ng::from_str(yaml).map_err(|err| {
                let line = err.location().map_or(2, |l| l.line() + 1);
                format!("{source}/SKILL.md:{line}: {err}")
            })?;
            (front, body)
        }
        crate::text::FrontMatter::Absent(body) => (FrontMatter { name: None, description: None }, body),
        crate::text::FrontMatter::Unclosed => {
            return Err(format!("{source}/SKILL.md:1: the front matter is not closed with a --- line"));
        }
    };
    let name = front.name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| folder_name.to_string());
    // without a description, its first line of prose says what it is
    let description = front.description.unwrap_or_else(|| {
        body.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or_default()
            .to_string()
    });
    let mut files = crate::walk::project(dir).relative_files();
    files.retain(|p| p != "SKILL.md");
    files.truncate(MAX_FILES);
    Ok(Skill {
        name: name.trim().to_string(),
        description: description.split_whitespace().collect::<Vec<_>>().join(" "),
        dir: dir.to_path_buf(),
        instructions: crate::text::cut(body, MAX_SKILL_BYTES),
        files,
        source: source.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, folder: &str, text: &str) {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn skills_are_read_matched_to_steps_and_their_files_read_on_demand() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let root = project.path();
        skill(
            root,
            ".claude/skills/testing-strategy",
            "---\nname: testing-strategy\ndescription: How tests are written here, pytest fixtures and coverage.\nallowed-tools: Read\n---\n# Testing\nArrange, act, assert.\n",
        );
        std::fs::write(root.join(".claude/skills/testing-strategy/examples.md"), "def test_x(): ...\n")
            .unwrap();
        skill(
            root,
            ".claude/skills/error-handling",
            "---\nname: error-handling\ndescription: Exceptions, retries and messages for failures.\n---\nRaise domain errors.\n",
        );
        skill(root, ".tokamak/skills/error-handling", "---\ndescription: Ours wins.\n---\nOurs.\n");
        skill(root, ".claude/skills/broken", "---\nname: [x\n---\nbody\n");
        skill(
            home.path(),
            "skills/design-patterns",
            "# Design patterns\nPrefer composition to inheritance.\n",
        );

        let skills = Skills::load_with_home(root, true, Some(home.path()));
        let names: Vec<&str> = skills.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["error-handling", "testing-strategy", "design-patterns"]);
        assert_eq!(
            skills.get("error-handling").unwrap().instructions,
            "Ours.",
            "the project's .tokamak wins"
        );
        assert_eq!(skills.get("design-patterns").unwrap().description, "Prefer composition to inheritance.");
        assert!(skills.problems[0].starts_with(".claude/skills/broken/SKILL.md:2:"), "{:?}", skills.problems);
        let index = skills.index();
        assert!(index.contains("- testing-strategy: How tests are written here"), "{index}");

        let chosen = |work: &str, profile: &str| -> Vec<String> {
            skills.for_step(work, profile, &[]).iter().map(|s| s.name.clone()).collect()
        };
        assert_eq!(chosen("Write tests for the cart with pytest fixtures", ""), ["testing-strategy"]);
        assert_eq!(chosen("테스트 전략에 맞게 작성해줘 testing strategy", ""), ["testing-strategy"]);
        assert_eq!(chosen("Add error handling to the payment client", ""), ["error-handling"]);
        assert!(chosen("Rename the variable in utils.py", "").is_empty());
        assert_eq!(
            chosen("Rename it", "Before you start read .claude/skills/design-patterns/SKILL.md."),
            ["design-patterns"]
        );
        let listed: Vec<&str> = skills
            .for_step("Rename it", "", &["Error-Handling".into()])
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(listed, ["error-handling"], "a profile's skills list");

        let full = skills.read("testing-strategy", None).unwrap();
        assert!(full.contains("Arrange, act, assert.") && full.contains("examples.md"), "{full}");
        assert_eq!(skills.read("testing-strategy", Some("examples.md")).unwrap(), "def test_x(): ...\n");
        assert!(
            skills.read("testing-strategy", Some("../../../etc/passwd")).unwrap_err().contains("has no file")
        );
        assert!(skills.read("nope", None).unwrap_err().contains("the skills are error-handling"));

        let untrusted = Skills::load_with_home(root, false, Some(home.path()));
        assert_eq!(untrusted.skills.len(), 1, "only the user's own");
        assert_eq!(Skills::unread(root), [PathBuf::from(".tokamak/skills"), PathBuf::from(".claude/skills")]);
    }
}
