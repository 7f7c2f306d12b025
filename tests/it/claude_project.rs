//! A project set up for Claude Code, opened with Tokamak as it is (seed 004, SPEC M3, C7):
//! its `.claude/agents/*.md` are the roles, its `.claude/skills/*/SKILL.md` reach the steps
//! whose work or role calls for them (the others only as one line), its `CLAUDE.md` and what
//! it imports are the rules, a tool an agent does not list is refused, and the tester fixes
//! the source a failing test shows wrong. Headless with `tokamak run`, in a trusted folder.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::UserDirs;
use support::model_server::{ModelServer, openai_chat};
use support::replies::{action, create, done, edit, told};

/// `tokamak run GOAL --format json` in `root`, trusted, with a Claude folder of its own (no
/// user skills or rules of the machine's).
fn run(root: &Path, model: &ModelServer, goal: &str, trusted: bool) -> (std::process::Output, UserDirs) {
    let user = if trusted { UserDirs::trusting(&[root]) } else { UserDirs::new() };
    let claude = user.config.path().join("claude");
    std::fs::create_dir_all(&claude).unwrap();
    let shown = root.display().to_string();
    let output = user
        .command(&["run", goal, "--yes", "--root", &shown, "--format", "json"])
        .env("CLAUDE_CONFIG_DIR", &claude)
        .env("TOKAMAK_LLM_URL", model.url())
        .env("TOKAMAK_MODEL", "scripted")
        .envs(support::tool_env())
        .output()
        .expect("tokamak runs");
    (output, user)
}

/// The fixture, its test command the tools folder's pytest.
fn project() -> tempfile::TempDir {
    let dir = support::copy_fixture("claude-project");
    let toml = format!(
        "[checkers]\nenable = []\n\n[test]\ncommand = {}\n",
        serde_json::to_string(&pytest()).unwrap()
    );
    std::fs::write(dir.path().join("tokamak.toml"), toml).unwrap();
    dir
}

fn pytest() -> Vec<String> {
    support::scenario::PYTHON.test_command()
}

/// The text of every message of request `n`.
fn prompt(model: &ModelServer, n: usize) -> String {
    let requests = model.requests();
    let messages = requests[n].body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

const PROFILES: [&str; 5] =
    ["ARCHITECT-PROFILE", "CODER-PROFILE", "TESTER-PROFILE", "REVIEWER-PROFILE", "DOCUMENTER-PROFILE"];
const SKILLS: [&str; 4] = ["DESIGN-PATTERNS", "CODE-STANDARDS", "ERROR-HANDLING", "TESTING-STRATEGY"];

/// Seed 004's routed tasks: each step gets its agent's instructions and the skills its agent
/// names, in full; the other skills as their one line; the rules and their import always.
#[test]
fn the_seeds_routed_tasks_reach_their_agents_with_their_skills() {
    let cases: [(&str, &str, &[&str]); 4] = [
        ("결제 모듈 아키텍처 설계해줘", "ARCHITECT-PROFILE", &["DESIGN-PATTERNS"]),
        ("apply_discount 함수를 리팩토링해줘", "CODER-PROFILE", &["CODE-STANDARDS", "ERROR-HANDLING"]),
        ("apply_discount 테스트 작성해줘", "TESTER-PROFILE", &["TESTING-STRATEGY"]),
        ("payments 코드 리뷰해줘", "REVIEWER-PROFILE", &["CODE-STANDARDS"]),
    ];
    for (goal, profile, skills) in cases {
        let dir = project();
        let root = dir.path();
        let model = ModelServer::start(vec![openai_chat(&format!("1. {goal}\n")), done("looked")]);
        let (output, user) = run(root, &model, goal, true);
        assert!(model.requests().len() >= 2, "{goal}: {}", String::from_utf8_lossy(&output.stderr));
        // the plan sees every skill's one line and the rules, no agent's instructions
        let plan = prompt(&model, 0);
        for name in ["design-patterns", "code-standards", "error-handling", "testing-strategy"] {
            assert!(plan.contains(&format!("- {name}: ")), "{goal}: the plan lists {name}:\n{plan}");
        }
        assert!(plan.contains("CLAUDE-RULE-MARKER") && plan.contains("IMPORTED-STYLE-MARKER"), "{plan}");
        let step = prompt(&model, 1);
        for other in PROFILES {
            assert_eq!(step.contains(other), other == profile, "{goal}: {other} in the step's prompt");
        }
        for skill in SKILLS {
            let body = format!("SKILL-BODY-{skill}");
            assert_eq!(
                step.contains(&body),
                skills.contains(&skill),
                "{goal}: {body} in the step's prompt:\n{step}"
            );
        }
        assert!(step.contains("CLAUDE-RULE-MARKER") && step.contains("IMPORTED-STYLE-MARKER"), "{goal}");
        // which skills each step was given is in the audit log
        let given = support::audit_events(user.cache.path(), "skills");
        let given: Vec<String> = given
            .iter()
            .flat_map(|e| e["given"].as_array().cloned().unwrap_or_default())
            .map(|v| v.as_str().unwrap_or_default().to_uppercase())
            .collect();
        assert_eq!(given, skills.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{goal}");
    }
}

/// The reviewer's tools are Read, Grep and Glob: running a command is refused by the executor,
/// naming the agent's file; a skill's other file is read on demand.
#[test]
fn a_tool_the_agent_does_not_list_is_refused_and_skill_files_are_read_on_demand() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(vec![
        openai_chat("1. payments 코드 리뷰해줘\n"),
        action(json!({"action": "run", "command": "python3 -m pytest -q"})),
        action(json!({"action": "skill", "name": "design-patterns", "file": "examples.md"})),
        action(json!({"action": "skill", "name": "design-patterns", "file": "../code-standards/SKILL.md"})),
        done("apply_discount divides by 10: CRITICAL, payments/discount.py:6"),
    ]);
    let (output, _user) = run(root, &model, "payments 코드 리뷰해줘", true);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let told = told(&model);
    assert!(
        told[0].contains("Refused: the reviewer role may not run")
            && told[0].contains(".claude/agents/reviewer.md"),
        "{}",
        told[0]
    );
    assert!(told[1].starts_with("Result of skill") && told[1].contains("SKILL-FILE-EXAMPLES"), "{}", told[1]);
    assert!(told[2].contains("has no file"), "{}", told[2]);
}

/// Seed 004's tester: a test it wrote fails because of the source's bug (a tenth taken for a
/// percent); the source is fixed within the step and the run ends with the tests passing. A
/// source change before any test failed is refused.
#[test]
fn the_tester_fixes_the_source_a_failing_test_shows_wrong() {
    if !support::require_tools(&["pytest"]) {
        return;
    }
    let dir = project();
    let root = dir.path();
    let test = "from payments.discount import apply_discount\n\n\ndef test_ten_percent_off():\n    assert apply_discount(20000, 10) == 18000\n";
    let model = ModelServer::start(vec![
        openai_chat("1. apply_discount 테스트 작성해줘\n"),
        // before any test failed, the source is not the tester's
        edit("payments/discount.py", "percent // 10", "percent // 100"),
        create("tests/test_discount.py", test),
        action(json!({"action": "run", "command": pytest()})),
        edit("payments/discount.py", "percent // 10", "percent // 100"),
        action(json!({"action": "run", "command": pytest()})),
        done("apply_discount took a tenth for a percent; fixed and tested"),
    ]);
    let (output, _user) = run(root, &model, "apply_discount 테스트 작성해줘", true);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let told = told(&model);
    assert!(
        told[0].contains("the tester role may write only") && told[0].contains("only while a test run fails"),
        "{}",
        told[0]
    );
    assert!(told[2].contains("1 failed"), "the test fails on the bug: {}", told[2]);
    assert!(told[3].starts_with("Result of edit"), "{}", told[3]);
    assert!(told[4].contains("2 passed"), "{}", told[4]);
    assert!(std::fs::read_to_string(root.join("payments/discount.py")).unwrap().contains("percent // 100"));
    let result: Value = serde_json::from_str(&stdout).expect("a JSON result");
    let report = &result;
    assert_eq!(report["exit_reason"], "done", "{report}");
    assert_eq!(report["step_endings"][0]["status"], "done", "{report}");
    assert!(report["left"].get("tests_failing").is_none(), "{report}");
}

/// Untrusted, the project's agents, skills and CLAUDE.md are not used, and the run says so.
#[test]
fn an_untrusted_projects_claude_files_are_not_used() {
    let dir = project();
    let root = dir.path();
    let model = ModelServer::start(vec![openai_chat("1. payments 코드 리뷰해줘\n"), done("looked")]);
    let (output, _user) = run(root, &model, "payments 코드 리뷰해줘", false);
    let everything =
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(model.requests().len(), 2, "planned and carried out: {everything}");
    let all: String = (0..model.requests().len()).map(|n| prompt(&model, n)).collect();
    for marker in ["REVIEWER-PROFILE", "CLAUDE-RULE-MARKER", "code-standards", "SKILL-BODY"] {
        assert!(!all.contains(marker), "{marker} reached the model");
    }
    assert!(
        everything.contains(
            "this folder's CLAUDE.md, .claude/agents, .claude/skills are not used until it is trusted"
        ),
        "{everything}"
    );
}

/// What a project's skills cost a step's prompt: the bytes of the step's first request with the
/// skills and without them, for an unrelated step and a matching one (printed for the closing
/// note; asserted only as more for the matching one).
#[test]
fn what_skills_add_to_a_prompt_is_measured() {
    let measure = |goal: &str, with_skills: bool| -> usize {
        let dir = project();
        if !with_skills {
            std::fs::remove_dir_all(dir.path().join(".claude/skills")).unwrap();
        }
        let model = ModelServer::start(vec![openai_chat(&format!("1. {goal}\n")), done("ok")]);
        let _ = run(dir.path(), &model, goal, true);
        prompt(&model, 1).len()
    };
    let unrelated = "README.md 문서 업데이트";
    let matching = "apply_discount 테스트 작성해줘";
    let (u_with, u_without) = (measure(unrelated, true), measure(unrelated, false));
    let (m_with, m_without) = (measure(matching, true), measure(matching, false));
    let tokens = |bytes: usize| bytes / 4;
    eprintln!(
        "skills add ~{} tokens to an unrelated step ({u_without} → {u_with} bytes) and ~{} to a matching one ({m_without} → {m_with} bytes)",
        tokens(u_with - u_without),
        tokens(m_with - m_without)
    );
    assert!(u_with > u_without, "the one lines are in every step");
    assert!(m_with - m_without > u_with - u_without, "a matching step has its skill in full");
}
