// Unit tests of the panel's conversation (transcript.ts) and the status helpers of logic.ts.
import { strict as assert } from "assert";
import { test } from "node:test";
import { Plan, checkpointItems, eventLines, noModelHint, planLines, statusItems, statusView } from "../logic";
import { Transcript, diffStats, endingTitle } from "../transcript";

const plan = (status: "pending" | "running" | "done", mode?: string): Plan => ({
  plan_id: "plan-1",
  run_id: "run-1",
  goal: "add validate_email",
  steps: [
    { id: "1", title: "Add validate_email to User", status, mode },
    { id: "2", title: "Test it", status: "pending" },
  ],
});

test("a request typed in the panel claims its run's events, even those before the answer naming it", () => {
  const t = new Transcript();
  const turn = t.ask("add validate_email", 1000);
  t.plan(plan("running", "implementation"), 1250);
  assert.equal(turn.run_id, "run-1");
  assert.equal(turn.first_plan_at! - turn.sent_at!, 250);
  t.started(turn, "run-1");
  t.event({ run_id: "run-1", kind: "tool_call", id: "c1", tool: "edit", title: "edit user.py", paths: ["user.py"] });
  t.event({
    run_id: "run-1",
    kind: "tool_result",
    id: "c1",
    ok: true,
    summary: "edited user.py",
    files: [{ path: "user.py", diff: "--- a/user.py\n+++ b/user.py\n@@\n-a\n+b\n+c\n", before: "a\n", after: "b\nc\n", created: false, deleted: false }],
  });
  t.event({ run_id: "run-1", kind: "said", text: "Added it." });
  t.event({ run_id: "run-1", kind: "thought", text: "first" });
  t.event({ run_id: "run-1", kind: "thought", text: "second" });
  t.approval({ id: "a1", run_id: "run-1", action: "write", summary: "create NOTES.md", diff: "+x" });
  assert.deepEqual(t.waiting(), ["a1"]);
  t.answered("a1", false, "put it in docs/");
  assert.deepEqual(t.waiting(), []);
  const tool = turn.items[0];
  assert.ok(tool.kind === "tool" && tool.state === "ok" && tool.files[0].added === 2 && tool.files[0].removed === 1 && tool.files[0].openable);
  assert.deepEqual(t.texts.get("run-1/c1/user.py"), { before: "a\n", after: "b\nc\n" });
  assert.equal(turn.items.filter((i) => i.kind === "thought").length, 1, "a thought that goes on is one item");
  const rejected = turn.items.find((i) => i.kind === "approval");
  assert.ok(rejected?.kind === "approval" && rejected.state === "rejected" && rejected.reason === "put it in docs/");
  t.finished({
    run_id: "run-1",
    exit_reason: "done",
    summary: "2 steps done",
    files_changed: ["user.py"],
    candidates: [{ number: 2, temperature: 0.5, outcome: "passed", why: "the tests pass" }],
    left: { rejected: ["create NOTES.md"] },
  });
  assert.deepEqual(t.state.running, []);
  assert.equal(turn.ending?.undoable, true);
  assert.deepEqual(turn.ending?.candidates, [{ label: "candidate 2 at 0.5", outcome: "passed: the tests pass" }]);
  assert.deepEqual(turn.ending?.left, ["rejected: create NOTES.md"]);
  t.undone("run-1", "1 file(s) restored");
  assert.equal(turn.ending?.undoable, false);
});

test("a run started elsewhere gets a turn of its own; an approval still waiting at the end is gone", () => {
  const t = new Transcript();
  t.approval({ id: "a9", run_id: "fix-7", action: "write", summary: "edit calc.py", diff: "" });
  assert.equal(t.state.turns[0].from, "editor");
  t.finished({ run_id: "fix-7", exit_reason: "cancelled", summary: "Cancelled.", files_changed: [] });
  const item = t.state.turns[0].items[0];
  assert.ok(item.kind === "approval" && item.state === "gone");
  assert.equal(t.state.turns[0].ending?.undoable, false);
  const failed = t.ask("x", 0);
  t.failed(failed, "another Tokamak run is working in this folder");
  assert.equal(failed.ending?.exit_reason, "refused");
  // a run that ends before the answer naming it: not left running
  const quick = t.ask("y", 0);
  t.finished({ run_id: "task-2", exit_reason: "failed", summary: "Not started: the folder is busy.", files_changed: [] });
  t.started(quick, "task-2");
  assert.equal(quick.ending?.exit_reason, "failed");
  assert.deepEqual(t.state.running, []);
  // a fix from the editor beside a task from the panel; a plan-only request claims no run
  const task = t.ask("z", 0);
  t.started(task, "task-3");
  const planOnly = t.ask("plan it", 0, false);
  t.event({ run_id: "fix-9", kind: "tool_call", id: "c", tool: "edit", title: "fix" });
  assert.equal(planOnly.run_id, undefined);
  assert.deepEqual(t.state.running, ["task-3", "fix-9"]);
  t.finished({ run_id: "fix-9", exit_reason: "clean", summary: "fixed", files_changed: [] });
  assert.deepEqual(t.state.running, ["task-3"]);
  t.clear();
  assert.deepEqual(t.state.turns, []);
});

test("endings, diff counts and the status bar say it in words", () => {
  assert.equal(endingTitle("done"), "Done");
  assert.equal(endingTitle("tests_failing"), "Tests failing");
  assert.equal(endingTitle("something_new"), "Something new");
  assert.deepEqual(diffStats("--- a/x\n+++ b/x\n-a\n+b\n c\n"), { added: 1, removed: 1 });
  assert.equal(statusView(plan("running", "test"), 0, undefined).text, "$(sync~spin) Tokamak: step 1/2 Add validate_email to User · test");
  assert.equal(statusView(plan("running"), 1, undefined).text, "$(question) Tokamak: 1 approval(s) waiting");
  assert.equal(statusView(undefined, 0, "Done: 2 steps done").text, "$(hubot) Done: 2 steps done");
  assert.equal(statusView(undefined, 0, undefined).text, "$(hubot) Tokamak");
});

test("the output channel says each action, its output, a mode change and an ending once", () => {
  assert.deepEqual(eventLines({ run_id: "r", kind: "tool_call", title: "run python3 -m pytest" }), ["[r] run python3 -m pytest"]);
  assert.deepEqual(eventLines({ run_id: "r", kind: "tool_result", ok: false, summary: "exit 1", output: "F\nfailed\n" }), [
    "[r]   ✗ exit 1",
    "[r]     F",
    "[r]     failed",
  ]);
  assert.deepEqual(eventLines({ run_id: "r", kind: "said", text: "hi" }), []);
  const modes = new Map<string, string>();
  assert.deepEqual(planLines(plan("running", "implementation"), modes), ["[run-1] step 1 started: Add validate_email to User (implementation)"]);
  assert.deepEqual(planLines(plan("running", "implementation"), modes), [], "nothing new: nothing said");
  assert.deepEqual(planLines(plan("running", "test"), modes), ["[run-1] step 1 mode: implementation → test"]);
  assert.deepEqual(planLines(plan("done"), modes), ["[run-1] step 1 done"]);
});

test("status and checkpoints as quick-pick rows, and the no-model message names the extension's settings", () => {
  const rows = statusItems({
    model: { name: "qwen", provider: "openai", endpoint: "http://127.0.0.1:8080" },
    trusted: true,
    trust: "the editor",
    approval: "medium",
    runs: [],
    recentRuns: [{ run_id: "tokamak-run-1", exit_reason: "done", summary: "2 steps done", at: "2026-11-27T06:00:00Z" }],
  });
  assert.equal(rows[0].description, "qwen");
  assert.ok(rows.some((r) => r.label === "$(history) tokamak-run-1" && r.description === "done"));
  const picks = checkpointItems([{ id: "abc123", run_id: "tokamak-run-1", time: "2026-11-27T06:00:00Z", goal: "add it", files: ["user.py"], complete: true }]);
  assert.equal(picks[0].id, "tokamak-run-1");
  assert.equal(picks[0].detail, "1 file(s): user.py");
  assert.match(noModelHint("the model is not reachable at http://127.0.0.1:8080 (connection refused)"), /Tokamak › Model: Base Url/);
  assert.equal(noModelHint("the goal is empty"), "the goal is empty");
});
