//! Seed 000's scenario, shared by every front end's end-to-end test: "User 클래스에
//! validate_email 메서드 추가해줘" on `fixtures/scenario/{python,typescript}` — the plan of two
//! steps, the model's tool calls for each, the project's test command, and where the tests are
//! said to have run.

use serde_json::{Value, json};

use super::model_server::{ModelServer, Scripted, openai_chat, openai_tool_calls};

pub const GOAL: &str = "User 클래스에 validate_email 메서드 추가해줘";

pub fn call(name: &str, args: Value) -> Scripted {
    openai_tool_calls("", &[(name, args)])
}

pub fn block(search: &str, replace: &str) -> String {
    format!("<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n")
}

pub struct Language {
    pub folder: &'static str,
    pub source: &'static str,
    pub tests: &'static str,
    pub plan: &'static str,
    pub method: (&'static str, &'static str),
    pub test: (&'static str, &'static str),
}

pub const PYTHON: Language = Language {
    folder: "python",
    source: "user.py",
    tests: "test_user.py",
    plan: "1. Add a validate_email method to the User class in user.py\n   It says whether the address has a name, an @ and a dot after it.\n2. Write a pytest test for User.validate_email in test_user.py [depends: 1]\n",
    method: (
        "        return self.name.title()\n",
        "        return self.name.title()\n\n    def validate_email(self) -> bool:\n        name, _, domain = self.email.partition(\"@\")\n        return bool(name) and \".\" in domain\n",
    ),
    test: (
        "    assert User(\"ada lovelace\", \"ada@example.com\").display_name() == \"Ada Lovelace\"\n",
        "    assert User(\"ada lovelace\", \"ada@example.com\").display_name() == \"Ada Lovelace\"\n\n\ndef test_validate_email():\n    assert User(\"ada\", \"ada@example.com\").validate_email()\n    assert not User(\"ada\", \"ada.example.com\").validate_email()\n",
    ),
};

pub const TYPESCRIPT: Language = Language {
    folder: "typescript",
    source: "user.ts",
    tests: "user.test.ts",
    plan: "1. Add a validateEmail method to the User class in user.ts\n2. Test User.validateEmail in user.test.ts [depends: 1]\n",
    method: (
        "    return this.name.toUpperCase();\n  }\n",
        "    return this.name.toUpperCase();\n  }\n\n  validateEmail(): boolean {\n    const [name, domain] = this.email.split(\"@\");\n    return Boolean(name) && domain !== undefined && domain.includes(\".\");\n  }\n",
    ),
    test: (
        "  throw new Error(`displayName: ${ada.displayName()}`);\n}\n",
        "  throw new Error(`displayName: ${ada.displayName()}`);\n}\nif (!ada.validateEmail() || new User(\"x\", \"x.example.com\").validateEmail()) {\n  throw new Error(\"validateEmail\");\n}\n",
    ),
};

impl Language {
    pub fn project(&self) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        super::copy_tree(&super::repo_root().join("fixtures/scenario").join(self.folder), dir.path());
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        dir
    }

    /// The project's test command.
    pub fn test_command(&self) -> Vec<String> {
        let tools = super::tools_dir();
        match self.folder {
            "python" => vec![
                tools.join("venv/bin/python").display().to_string(),
                "-m".into(),
                "pytest".into(),
                "-q".into(),
                "-p".into(),
                "no:cacheprovider".into(),
            ],
            _ => vec![
                "sh".into(),
                "-c".into(),
                format!(
                    "{} -p . && node dist/user.test.js",
                    tools.join("node/node_modules/.bin/tsc").display()
                ),
            ],
        }
    }

    /// The model's side of the scenario: the plan, then each step's tool calls.
    pub fn script(&self) -> Vec<Scripted> {
        vec![
            openai_chat(self.plan),
            call("read", json!({"path": self.source})),
            call("edit", json!({"path": self.source, "blocks": block(self.method.0, self.method.1)})),
            call("done", json!({"summary": "the method is there"})),
            call("edit", json!({"path": self.tests, "blocks": block(self.test.0, self.test.1)})),
            call("done", json!({"summary": "it is tested"})),
        ]
    }

    /// The same, from a model that ends each step with its answer in plain text rather than
    /// calling done (as OpenAI's and Anthropic's own agent loops do).
    pub fn script_ending_in_prose(&self) -> Vec<Scripted> {
        vec![
            openai_chat(self.plan),
            call("read", json!({"path": self.source})),
            call("edit", json!({"path": self.source, "blocks": block(self.method.0, self.method.1)})),
            openai_chat("The method is there."),
            call("edit", json!({"path": self.tests, "blocks": block(self.test.0, self.test.1)})),
            openai_chat("Done: it is tested."),
        ]
    }

    pub fn options(&self, model: &ModelServer) -> Value {
        json!({
            "checkers": {"enable": []},
            "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0},
            "test": {"command": self.test_command()},
        })
    }
}

/// Where the test commands ran, as the command results say.
pub fn placed(with_bwrap: bool) -> &'static str {
    if with_bwrap {
        "sandboxed: a copy of the workspace with the editor's text"
    } else {
        "sandboxed (Landlock): a copy of the workspace with the editor's text"
    }
}

/// The test commands a run made (its audit log's `run` actions under the user's `cache`),
/// each checked to have passed; at least `at_least` of them.
pub fn test_runs_passed(cache: &std::path::Path, at_least: usize) -> Vec<Value> {
    let runs: Vec<Value> =
        super::audit_events(cache, "action").into_iter().filter(|a| a["action"] == "run").collect();
    assert!(runs.len() >= at_least, "{runs:?}");
    for run in &runs {
        assert!(run["summary"].as_str().unwrap_or_default().contains("exit status 0"), "{run}");
    }
    runs
}
