//! editors/vscode: the extension's unit tests (node:test) and type check (`tsc`), and
//! `npm run package` producing a `.vsix`. (The end-to-end test in a real VS Code through
//! code-server is not built yet; see the issue.)

mod support;

use std::process::Command;

fn npm(args: &[&str]) -> std::process::Output {
    Command::new("npm")
        .args(args)
        .current_dir(support::repo_root().join("editors/vscode"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run npm")
}

fn ready() -> bool {
    if !support::require_tools(&["npm"]) {
        return false;
    }
    let modules = support::repo_root().join("editors/vscode/node_modules");
    if !modules.is_dir() {
        let reason = "editors/vscode/node_modules is missing: run `bash scripts/install-tools`";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{reason}");
        }
        eprintln!("skipping: {reason}");
        return false;
    }
    true
}

#[test]
fn the_extension_type_checks_and_its_unit_tests_pass_and_it_packages() {
    if !ready() {
        return;
    }
    // one test: both write editors/vscode/out
    let test = npm(&["test"]);
    let text = String::from_utf8_lossy(&test.stdout).into_owned() + &String::from_utf8_lossy(&test.stderr);
    assert!(test.status.success(), "{text}");
    assert!(text.contains("# pass 5") && text.contains("# fail 0"), "{text}");

    let vsix = support::repo_root().join("editors/vscode/tokamak.vsix");
    let _ = std::fs::remove_file(&vsix);
    let package = npm(&["run", "package"]);
    let text =
        String::from_utf8_lossy(&package.stdout).into_owned() + &String::from_utf8_lossy(&package.stderr);
    assert!(package.status.success(), "{text}");
    let bytes = std::fs::read(&vsix).expect("a .vsix");
    assert!(bytes.starts_with(b"PK"), "a .vsix is a zip");
    let listing = String::from_utf8_lossy(&bytes);
    for entry in [
        "extension/out/extension.js",
        "extension/out/logic.js",
        "extension/package.json",
        "vscode-languageclient",
    ] {
        assert!(listing.contains(entry), "{entry} is packaged");
    }
}
