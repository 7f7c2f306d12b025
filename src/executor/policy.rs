//! Which commands and commits run without asking (SPEC X2): the allow-list from the user's
//! settings (and, in a trusted folder, the project's), the test command; everything else
//! goes to an [`Approver`] — the person at the editor or terminal. The default approver
//! refuses and says how to allow.

use async_trait::async_trait;

/// What the agent wants to do that needs a person's yes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Run a command that is not on the allow-list.
    Command { argv: Vec<String> },
    /// Commit the run's changes to the project's git.
    Commit { message: String, files: Vec<String> },
    /// Change files (when the settings ask for approval of changes): what, and the diff.
    Change { summary: String, diff: String },
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    /// Refused, with the reason that goes back to the model.
    Reject(String),
}

/// Asks a person (the approval UI arrives with the modes-and-approvals work).
#[async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: &Request) -> Decision;
}

/// Refuses everything, saying how to allow it.
pub struct RefuseUnlisted;

#[async_trait]
impl Approver for RefuseUnlisted {
    async fn decide(&self, request: &Request) -> Decision {
        Decision::Reject(match request {
            Request::Command { argv } => format!(
                "`{}` is not on the allow-list, so it was not run; the user can allow it with [commands] allow = [[{}]] in their Tokamak settings",
                argv.join(" "),
                argv.iter().take(2).map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ")
            ),
            Request::Commit { .. } => {
                "commits need the user's approval or auto_commit = true in their Tokamak settings; nothing was committed"
                    .to_string()
            }
            Request::Change { .. } => "changes need the user's approval, and nobody could be asked; nothing was changed".to_string(),
        })
    }
}

/// Whether `argv` starts with one of the allowed argument lists (the test command counts as
/// allowed). The program must be written exactly as allowed: `./python` is not `python` —
/// it could be a file the agent wrote.
pub fn allowed(argv: &[String], allow: &[Vec<String>], test_command: Option<&[String]>) -> bool {
    let matches = |prefix: &[String]| !prefix.is_empty() && argv.starts_with(prefix);
    allow.iter().any(|prefix| matches(prefix)) || test_command.is_some_and(matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn commands_are_gated_by_prefix() {
        let allow = vec![argv("python -m pytest"), argv("ruff check")];
        let test = argv("npm test");
        let cases = [
            ("python -m pytest -q tests/a.py", true),
            ("python -m pytest", true),
            ("/usr/bin/python -m pytest", false),
            ("python -m pip install evil", false),
            ("python", false),
            ("ruff check src", true),
            ("ruff format", false),
            ("npm test", true),
            ("npm install", false),
            ("curl https://example.com", false),
            ("./python -m pytest", false),
        ];
        for (line, expected) in cases {
            assert_eq!(allowed(&argv(line), &allow, Some(&test)), expected, "{line}");
        }
        assert!(!allowed(&argv("anything"), &[vec![]], None), "an empty entry allows nothing");
    }

    #[tokio::test]
    async fn the_default_refuses_and_says_how_to_allow() {
        let decision = RefuseUnlisted.decide(&Request::Command { argv: argv("curl -s x") }).await;
        let Decision::Reject(reason) = decision else { panic!("approved") };
        assert!(reason.contains("[commands] allow = [[\"curl\", \"-s\"]]"), "{reason}");
    }
}
