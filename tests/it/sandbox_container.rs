//! Seed 000's scenario with its tests run in containers (seed 003's worker): the editor's
//! unsaved buffer in the run's copy, the copy mounted at the workspace's own path — a test
//! that asserts its working folder is the workspace passes — on this machine's Docker engine,
//! on the same engine reached over TCP as another machine's (the copy sent, not mounted), and
//! on Podman. The
//! run ends done either way, and the plan says where its tests ran.

use crate::support;

use serde_json::{Value, json};
use support::LspClient;
use support::model_server::ModelServer;
use support::scenario::{GOAL, PYTHON};

use support::{REMOTE_ENGINE as REMOTE, TEST_IMAGE as IMAGE};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Docker,
    /// The same Docker engine through its TCP socket, standing for another machine's.
    Remote,
    Podman,
}

fn scenario_in_a_container(engine: Engine) {
    let remote = engine == Engine::Remote;
    let dir = PYTHON.project();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    // a test that looks at where it runs: the workspace's own path, not a copy's
    std::fs::write(
        root.join("test_where.py"),
        format!(
            "import os\n\n\ndef test_runs_at_the_workspace_path():\n    assert os.getcwd() == {:?}\n",
            root.display().to_string()
        ),
    )
    .unwrap();
    let model = ModelServer::start(PYTHON.script());
    let options = json!({
        "checkers": {"enable": []},
        "model": {"base_url": model.url(), "model": "scripted", "max_retries": 0},
        // the image's own python and pytest: the host's tools mean nothing in it
        "test": {"command": ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]},
        "sandbox": {"backend": "container", "image": IMAGE, "engine": if engine == Engine::Podman { "podman" } else { "docker" }},
    });
    let env = match engine {
        Engine::Docker => Vec::new(),
        Engine::Remote => vec![("DOCKER_HOST".to_string(), REMOTE.to_string())],
        Engine::Podman => vec![("CONTAINERS_CONF".to_string(), support::podman_conf().display().to_string())],
    };
    let mut client = LspClient::editor_for_project_env(&root, options, &env);
    let source = client.open_file(&root.join(PYTHON.source), "");
    let clock = std::time::Instant::now();
    let run_id = client.start_run(GOAL);
    let finished = client.wait_for("the run's end", |m| {
        m["method"] == "tokamak/runFinished" && m["params"]["run_id"] == run_id
    })["params"]
        .clone();
    eprintln!("container scenario ({engine:?}): {:?}", clock.elapsed());
    assert_eq!(finished["exit_reason"], "done", "{finished}\n{}", client.stderr());
    let steps = finished["steps"].as_array().cloned().unwrap_or_default();
    assert!(!steps.is_empty() && steps.iter().all(|s| s["status"] == "done"), "{finished}");
    // the method only in the buffer, and the tests that call it passed in the container
    assert!(client.text(&source).contains("alidate"), "{}", client.text(&source));
    assert!(!std::fs::read_to_string(root.join(PYTHON.source)).unwrap().contains("alidate"), "unsaved");
    let runs: Vec<Value> = support::audit_events(client.user.cache.path(), "action")
        .into_iter()
        .filter(|a| a["action"] == "run")
        .collect();
    assert!(!runs.is_empty(), "the tests ran");
    for run in &runs {
        assert!(run["summary"].as_str().unwrap_or_default().contains("exit status 0"), "{run}");
    }
    let placed = if remote {
        "sandboxed (a container on a remote engine): a copy of the workspace with the editor's text"
    } else {
        "sandboxed (container): a copy of the workspace with the editor's text"
    };
    let plan = client.seen(|m| m["method"] == "tokamak/planUpdated").pop().unwrap();
    assert!(serde_json::to_string(&plan).unwrap().contains(placed), "{plan}");
    let label = format!("label=tokamak.project={}", tokamak::places::project_key(&root));
    let cli = if engine == Engine::Podman { "podman" } else { "docker" };
    let left = std::process::Command::new(cli)
        .args(["ps", "-aq", "--filter", &label])
        .env("CONTAINERS_CONF", support::podman_conf())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&left.stdout).trim().is_empty(), "no container of the run is left");
}

#[test]
fn the_scenario_runs_its_tests_in_a_container_at_the_workspaces_path() {
    if support::require_engine() {
        scenario_in_a_container(Engine::Docker);
    }
}

#[test]
fn the_scenario_runs_its_tests_in_a_container_on_a_remote_engine() {
    if support::require_engine() {
        scenario_in_a_container(Engine::Remote);
    }
}

#[test]
fn the_scenario_runs_its_tests_in_a_podman_container_at_the_workspaces_path() {
    if support::require_podman() {
        scenario_in_a_container(Engine::Podman);
    }
}
