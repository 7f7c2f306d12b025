// Unit tests of the extension's own logic (node:test; no VS Code needed).
import { strict as assert } from "assert";
import { test } from "node:test";
import {
  Debouncer,
  Plan,
  PlanBook,
  goalOf,
  initializationOptions,
  lspSeverity,
  othersOnly,
  serverCommand,
  stepView,
  toServerSettings,
} from "../logic";

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

test("a plan step as the tree shows it", () => {
  const view = stepView({
    id: "2",
    title: "Test validate_email",
    detail: "In test_user.py.",
    depends_on: ["1"],
    status: "running",
    glyph: "⚡",
    files: ["test_user.py"],
  });
  assert.equal(view.label, "⚡ 2. Test validate_email [depends: 1]");
  assert.equal(view.description, "running");
  assert.equal(view.tooltip, "Test validate_email\n\nIn test_user.py.\n\nFiles: test_user.py");
  assert.deepEqual(view.files, ["test_user.py"]);
  assert.equal(stepView({ id: "1", title: "One", status: "failed" }).label, "✗ 1. One", "the glyph from the status");
});

test("plans are kept by id and the latest is shown; goals are trimmed", () => {
  const book = new PlanBook();
  assert.equal(book.current(), undefined);
  book.update({ plan_id: "p1", goal: "a", steps: [] });
  book.update({ plan_id: "p2", goal: "b", steps: [{ id: "1", title: "x", status: "pending" }] });
  book.update({ plan_id: "p1", goal: "a", steps: [{ id: "1", title: "y", status: "done" }] });
  assert.equal(book.current()?.goal, "a");
  book.update({ nonsense: true } as unknown as Plan);
  assert.equal(book.current()?.plan_id, "p1", "a malformed notification changes nothing");
  assert.equal(goalOf("  add it "), "add it");
  assert.equal(goalOf("   "), undefined);
  assert.equal(goalOf(undefined), undefined);
});
