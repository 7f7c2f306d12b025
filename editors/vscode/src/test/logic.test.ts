// Unit tests of the extension's own logic (node:test; no VS Code needed).
import { strict as assert } from "assert";
import { test } from "node:test";
import {
  Approval,
  ApprovalBook,
  Debouncer,
  approvalPaths,
  approvalTitle,
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
  // the running step's mode, as the outcomes move it; a finished step shows its status only
  const moving = { id: "1", title: "One", status: "running" as const, role: "coder, implementation (the default)", mode: "test" };
  assert.equal(stepView(moving).description, "running · test");
  assert.ok(stepView(moving).tooltip.includes("Role: coder, implementation (the default)"));
  assert.equal(stepView({ ...moving, status: "done" as const }).description, "done");
  // a step that was not done says how, and what replaced it
  const replaced = stepView({ ...moving, status: "not_applied" as const, replaced_by: ["r1.1", "r1.2"] });
  assert.equal(replaced.description, "not applied · replaced by r1.1, r1.2");
  assert.ok(replaced.label.startsWith("✗ "), replaced.label);
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

test("approvals are kept oldest first and serve their texts to the diff editor", () => {
  const book = new ApprovalBook();
  assert.equal(book.oldest(), undefined);
  const edit: Approval = {
    id: "a1", run_id: "r1", action: "edit", summary: "edit user.py", diff: "-x\n+y\n",
    path: "src/user.py", before: "x\n", after: "y\n",
  };
  const create: Approval = { id: "a2", run_id: "r2", action: "create", summary: "create N.md", diff: "+n\n", path: "N.md", before: null, after: "n\n" };
  const command: Approval = { id: "a3", run_id: "r1", action: "run", summary: "run `make`", diff: "" };
  assert.ok(book.add(edit) && book.add(create) && book.add(command));
  assert.equal(book.add({ nonsense: true } as unknown as Approval), false, "a malformed notification is not kept");
  assert.equal(book.oldest()?.id, "a1");
  const paths = approvalPaths(edit);
  assert.deepEqual(paths, { before: "/a1/before/src/user.py", after: "/a1/after/src/user.py" });
  assert.equal(book.text(paths!.before), "x\n");
  assert.equal(book.text(paths!.after), "y\n");
  assert.equal(book.text("/a2/before/N.md"), "", "a file that does not exist yet is empty");
  assert.equal(book.text("/a9/after/x"), undefined);
  assert.equal(approvalPaths(command), undefined, "a command has no diff editor");
  assert.deepEqual(book.ofRun("r1").map((a) => a.id), ["a1", "a3"]);
  book.remove("a1");
  assert.equal(book.oldest()?.id, "a2");
  assert.equal(approvalTitle(create), "Tokamak wants to create N.md (a2) ↔ proposed");
});
