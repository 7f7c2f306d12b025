// Unit tests of the extension's own logic (node:test; no VS Code needed).
import { strict as assert } from "assert";
import { test } from "node:test";
import { Debouncer, initializationOptions, lspSeverity, othersOnly, serverCommand, toServerSettings } from "../logic";

const at = (line: number, start: number, end: number) => ({
  start: { line, character: start },
  end: { line, character: end },
});

test("settings become Tokamak's snake_case settings, empty ones left out", () => {
  const values: Record<string, unknown> = {
    "model.baseUrl": " http://127.0.0.1:8080 ",
    "model.model": "qwen",
    "model.provider": "",
    "fix.maxAttempts": 2,
  };
  assert.deepEqual(toServerSettings((k) => values[k]), {
    model: { base_url: "http://127.0.0.1:8080", model: "qwen" },
    fix: { max_attempts: 2 },
  });
  assert.deepEqual(toServerSettings(() => undefined), {});
  assert.deepEqual(toServerSettings((k) => (k === "fix.maxAttempts" ? 0 : "")), {}, "0 attempts is not a setting");
});

test("the workspace's trust goes to the server with the settings", () => {
  const settings = { model: { model: "qwen" } };
  assert.deepEqual(initializationOptions(settings, false), { model: { model: "qwen" }, trusted: false });
  assert.deepEqual(initializationOptions({}, true), { trusted: true });
  assert.deepEqual(settings, { model: { model: "qwen" } }, "the settings are not changed");
});

test("Tokamak's own diagnostics are never forwarded back", () => {
  const ours = { range: at(1, 4, 9), severity: 1, source: "tokamak", message: "missing \")\"" };
  const theirs = { range: at(1, 4, 9), severity: 1, source: "Pylance", message: "\"(\" was not closed" };
  const sameTextOtherPlace = { ...ours, range: at(2, 0, 1) };
  assert.deepEqual(othersOnly([ours, theirs, sameTextOtherPlace], [ours]), [theirs, sameTextOtherPlace]);
});

test("severities map from VS Code's to LSP's", () => {
  assert.deepEqual([0, 1, 2, 3].map(lspSeverity), [1, 2, 3, 4]);
});

test("the server command: setting, then bundled, then PATH", () => {
  assert.equal(serverCommand(" /opt/tokamak ", "/ext/bin/tokamak", () => true), "/opt/tokamak");
  assert.equal(serverCommand("", "/ext/bin/tokamak", () => true), "/ext/bin/tokamak");
  assert.equal(serverCommand("", "/ext/bin/tokamak", () => false), "tokamak");
});

test("the debouncer runs once per key after a quiet spell", async () => {
  const runs: string[] = [];
  const debouncer = new Debouncer(20, (key) => runs.push(key));
  debouncer.schedule("a");
  debouncer.schedule("a");
  debouncer.schedule("b");
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.deepEqual(runs.sort(), ["a", "b"]);
  debouncer.schedule("a");
  debouncer.dispose();
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(runs.length, 2, "disposed timers never fire");
});
