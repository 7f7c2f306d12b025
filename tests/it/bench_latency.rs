//! `tokamak bench latency` run once beside ruff's language server: both servers open the same
//! file and get every keystroke at the top, in the middle of the longest class and at the
//! end; the figures are printed (`-- --nocapture`), never asserted, since they are timings.

use crate::support;

use std::process::Command;

use serde_json::Value;
use support::UserDirs;

/// A Python file of some 2 000 lines: classes of methods, the last one the longest.
fn python_file(classes: usize) -> String {
    let mut text = String::from("\"\"\"A module to type into.\"\"\"\n\nimport math\n\n");
    for class in 0..classes {
        text.push_str(&format!("\nclass Shape{class}:\n    \"\"\"Shape number {class}.\"\"\"\n\n"));
        for method in 0..(10 + class) {
            text.push_str(&format!(
                "    def area_{method}(self, side: float) -> float:\n        return math.pi * side * {method}\n\n"
            ));
        }
    }
    text.push_str("\nRESULT = Shape0().area_1(2.0)\n");
    text
}

#[test]
fn latency_beside_ruffs_server() {
    if !support::require_tools(&["ruff"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shapes.py");
    let text = python_file(40);
    std::fs::write(&file, &text).unwrap();
    let ruff = support::tools_dir().join("venv/bin/ruff");
    let ruff = if ruff.exists() { ruff.display().to_string() } else { "ruff".to_string() };
    let user = UserDirs::new();
    let output = Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .args(["bench", "latency", &file.display().to_string()])
        .args(["--against", &format!("{ruff} server"), "--keystrokes", "20", "--format", "json"])
        .envs(user.env())
        .envs(support::tool_env())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let results: Vec<Value> = serde_json::from_str(&stdout).unwrap_or_else(|err| panic!("{err}: {stdout}"));
    assert_eq!(results.len(), 2, "{stdout}");
    assert!(results[0]["server"].as_str().unwrap().ends_with("tokamak lsp"), "{stdout}");
    assert!(results[1]["server"].as_str().unwrap().ends_with("ruff server"), "{stdout}");
    let lines = text.lines().count() as u64;
    // the longest class is the last: its middle is in its second half of the file
    let class = text.lines().position(|l| l.starts_with("class Shape39")).unwrap() as u64;
    for result in &results {
        assert_eq!(result["missed"], 0, "every keystroke answered: {result}");
        assert!(result["open_ms"].as_f64().unwrap() > 0.0, "{result}");
        let places = result["places"].as_array().unwrap();
        let named: Vec<&str> = places.iter().map(|p| p["place"].as_str().unwrap()).collect();
        assert_eq!(named, ["top", "middle", "end"], "{result}");
        assert!(places.iter().all(|p| p["samples"] == 20), "{result}");
        assert_eq!(places[0]["line"], 0);
        let middle = places[1]["line"].as_u64().unwrap();
        assert!(middle > class && middle < lines, "{result}");
        assert_eq!(places[2]["line"], lines - 1);
        for place in places {
            let (median, p90, p99) = (
                place["median_ms"].as_f64().unwrap(),
                place["p90_ms"].as_f64().unwrap(),
                place["p99_ms"].as_f64().unwrap(),
            );
            assert!(median <= p90 && p90 <= p99, "percentiles in order: {place}");
        }
        eprintln!("{result}");
    }
    // the same as a table, for a person
    let table = Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .args(["bench", "latency", &file.display().to_string(), "--keystrokes", "5"])
        .envs(user.env())
        .envs(support::tool_env())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("open → diagnostics") && table.contains("keystroke, middle"), "{table}");
    eprintln!("{table}");
}

/// `tokamak bench memory` on a small project: the server started on it, its index built,
/// documents made of its files opened; the figures are printed, never asserted beyond their
/// shape, since they are measurements.
#[test]
fn memory_of_a_project_with_large_documents_open() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..3 {
        std::fs::write(dir.path().join(format!("module_{n}.py")), python_file(10 + n)).unwrap();
    }
    let user = UserDirs::new();
    let output = Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .args(["bench", "memory", &dir.path().display().to_string()])
        .args(["--open", "3", "--lines", "1500", "--format", "json"])
        .envs(user.env())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let figures: Value = serde_json::from_str(&stdout).unwrap_or_else(|err| panic!("{err}: {stdout}"));
    assert_eq!(figures["files_indexed"], 3, "{figures}");
    assert_eq!(figures["open_documents"], 3, "{figures}");
    let mib = |key: &str| figures[key].as_f64().unwrap_or_else(|| panic!("{key}: {figures}"));
    assert!(mib("started_mib") > 0.0 && mib("started_mib") <= mib("peak_mib"), "{figures}");
    assert!(mib("opened_mib") <= mib("peak_mib"), "{figures}");
    eprintln!("{figures}");
    // a folder without Python files says so
    let empty = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tokamak"))
        .args(["bench", "memory", &empty.path().display().to_string()])
        .envs(user.env())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("has no Python files"), "{output:?}");
}
