//! `textDocument/documentSymbol` over the real stdio connection.

use crate::support;

use serde_json::{Value, json};
use support::{LspClient, uri};

/// `name kind [start line-end line]`, indented by depth.
fn render(symbols: &Value, depth: usize, out: &mut String) {
    for symbol in symbols.as_array().expect("symbol array") {
        out.push_str(&format!(
            "{}{} {} [{}-{}]\n",
            "  ".repeat(depth),
            symbol["name"].as_str().unwrap_or_default(),
            symbol["kind"],
            symbol["range"]["start"]["line"],
            symbol["range"]["end"]["line"],
        ));
        if let Some(children) = symbol.get("children") {
            render(children, depth + 1, out);
        }
    }
}

fn symbols(client: &mut LspClient, file: &str) -> String {
    let response = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": file}}));
    let mut out = String::new();
    render(&response["result"], 0, &mut out);
    out
}

#[test]
fn python_symbols_are_hierarchical() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("users.py");
    client.open(
        &file,
        "python",
        1,
        "import re\n\nclass User:\n    @property\n    def email(self):\n        return self._email\n\n    def validate_email(self):\n        return bool(re.match('.+@.+', self.email))\n\ndef login(name, password):\n    pass\n",
    );
    // kinds: 5 class, 6 method, 12 function
    assert_eq!(
        symbols(&mut client, &file),
        "User 5 [2-8]\n  email 6 [3-5]\n  validate_email 6 [7-8]\nlogin 12 [10-11]\n"
    );
}

#[test]
fn typescript_symbols_are_hierarchical() {
    let mut client = LspClient::initialized(&[]);
    let file = uri("store.ts");
    client.open(
        &file,
        "typescript",
        1,
        "export interface Item { id: string }\n\nexport class Store {\n  private items: Item[] = [];\n  add(item: Item): void {\n    this.items.push(item);\n  }\n}\n\nexport function create(): Store {\n  return new Store();\n}\n",
    );
    // kinds: 11 interface, 5 class, 6 method, 12 function
    assert_eq!(
        symbols(&mut client, &file),
        "Item 11 [0-0]\nStore 5 [2-7]\n  add 6 [4-6]\ncreate 12 [9-11]\n"
    );
}

#[test]
fn symbols_of_a_file_that_is_not_open_come_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("on_disk.py");
    std::fs::write(&path, "def from_disk():\n    pass\n").unwrap();
    let file = url::Url::from_file_path(&path).unwrap().to_string();
    let mut client = LspClient::initialized(&[]);
    assert_eq!(symbols(&mut client, &file), "from_disk 12 [0-1]\n");
    let missing = client.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": url::Url::from_file_path(dir.path().join("nope.py")).unwrap()}}),
    );
    let message = missing["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("cannot read") && message.contains("nope.py"), "{missing}");
}
