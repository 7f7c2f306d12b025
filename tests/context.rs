//! The workspace index from the command line: `tokamak bench context` on a small project.

use std::process::Command;

#[test]
fn bench_context_indexes_a_project_and_answers_its_queries() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("app")).unwrap();
    std::fs::write(dir.path().join("app/auth.py"), "def login(user):\n    return check(user)\n\n\ndef check(user):\n    return True\n").unwrap();
    std::fs::write(dir.path().join("app/views.py"), "from app.auth import login\n\n\ndef view(request):\n    return login(request.user)\n").unwrap();
    std::fs::write(dir.path().join("app/blob.py"), b"\x00binary").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .args(["bench", "context", "--query", "login", "--format", "json"])
        .arg(dir.path())
        .output()
        .expect("tokamak runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bench: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(bench["files"], 2, "{bench}");
    assert_eq!(bench["skipped"], 1, "{bench}");
    assert_eq!(bench["definitions"], 3, "{bench}");
    let queries = bench["queries"].as_array().unwrap();
    assert_eq!(queries[0][0], "search \"login\"");
    assert_eq!(queries[0][2], 1);
    assert_eq!(queries[1][0], "callers of login (3 levels)");
    assert_eq!(queries[1][2], 1, "the view calls it");
    assert_eq!(queries[2][0], "importers of app.auth");
    assert_eq!(queries[2][2], 1);
}
