// The agent panel's conversation as data: each request the user made (or a run started
// elsewhere — a code action, the palette) with what its run streamed — the plan, the model's
// words, each tool call with its result and diff, each approval and how it was answered, each
// step's checks — and how it ended. The extension folds the server's notifications into it
// (`tokamak/planUpdated`, `tokamak/runEvent`, `tokamak/approvalRequested`,
// `tokamak/runFinished`) and hands the webview a copy to draw. No VS Code API here: unit-tested.
import { Approval, Plan } from "./logic";

export interface FileChange {
  path: string;
  diff: string;
  created: boolean;
  deleted: boolean;
  added: number;
  removed: number;
  /** Whether the extension holds both texts (a click opens the diff editor). */
  openable: boolean;
}

export interface Found {
  path: string;
  severity: string;
  source?: string;
  code?: string | null;
  message: string;
}

export interface Tests {
  passed: boolean;
  ran: boolean;
  output: string;
}

export interface Checked {
  step?: string | null;
  files: string[];
  introduced: Found[];
  resolved: Found[];
  warned: Found[];
  tests?: Tests | null;
  summary: string;
}

export type Item =
  | { kind: "said"; text: string }
  | { kind: "thought"; text: string }
  | {
      kind: "tool";
      id: string;
      tool: string;
      title: string;
      paths: string[];
      state: "running" | "ok" | "failed";
      summary?: string;
      files: FileChange[];
      check?: Checked | null;
      output?: string | null;
    }
  | {
      kind: "approval";
      id: string;
      summary: string;
      diff: string;
      state: "waiting" | "approved" | "rejected" | "gone";
      reason?: string;
    }
  | ({ kind: "checked" } & Checked)
  | { kind: "error"; text: string };

export interface Candidate {
  label: string;
  outcome: string;
}

export interface Ending {
  exit_reason: string;
  summary: string;
  files_changed: string[];
  candidates: Candidate[];
  wrap_up?: string;
  /** What the run leaves: errors, failing tests, changes refused or not applied. */
  left: string[];
  /** A run that changed files can be undone (`tokamak.rollback {checkpoint: run_id}`). */
  undoable: boolean;
  undone?: string;
}

export interface Turn {
  /** The panel's own id for the request. */
  key: number;
  goal: string;
  /** Where it came from: the panel, or a run started elsewhere. */
  from: "panel" | "editor";
  run_id?: string;
  plan?: Plan;
  items: Item[];
  /** What the run is doing now (its latest progress line). */
  doing?: string;
  ending?: Ending;
  /** When the panel sent it, and when its first plan line came (ms since the epoch). */
  sent_at?: number;
  /** A request that starts a run (`tokamak.run`, `tokamak.implement`): it takes the first
   * events of a run not yet named (a plan-only request does not). */
  claims?: boolean;
  first_plan_at?: number;
}

export interface TranscriptState {
  /** Earlier requests of the workspace's conversation (before this window), as the server keeps them. */
  earlier: { asked: string; answered: string }[];
  turns: Turn[];
  /** The runs going on (a fix from the editor can go beside a task from the panel). */
  running: string[];
  /** Context tokens after the latest reply. */
  context_tokens?: number;
}

/** A text's first line, cut to 160 characters. */
function firstLine(text: string): string {
  const line = text.split(/\n| \| /)[0].trim();
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}

/** The goal of a run started elsewhere, until its plan or report names it. */
const EDITOR_RUN = "A run started in the editor";

/** Lines added and removed in a unified diff. */
export function diffStats(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of diff.split("\n")) {
    if (line.startsWith("+++") || line.startsWith("---")) continue;
    if (line.startsWith("+")) added++;
    else if (line.startsWith("-")) removed++;
  }
  return { added, removed };
}

const WORDS: Record<string, string> = {
  done: "Done",
  clean: "Clean",
  tests_failing: "Tests failing",
  untested: "Not tested",
  unchecked: "Not checked",
  cancelled: "Cancelled",
  failed: "Not done",
  refused: "Refused",
  unsure: "Stopped, unsure",
  max_attempts: "Stopped after its attempts",
  repeated_error: "Stopped on a repeated error",
  token_limit: "Stopped at the token limit",
  time_limit: "Stopped at the time limit",
  tool_call_limit: "Stopped at the action limit",
  revision_limit: "Stopped at the revision limit",
  file_limit: "Stopped at the file limit",
  iteration_limit: "Stopped at the round limit",
  repeated_state: "Stopped in a loop",
};

/** Whether an exit reason is a success (done, clean). */
export function succeeded(exitReason: string): boolean {
  return exitReason === "done" || exitReason === "clean";
}

/** The ending's headline: the exit reason in words. */
export function endingTitle(exitReason: string): string {
  return WORDS[exitReason] ?? exitReason.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
}

/** The panel's conversation, folded from the server's notifications. */
export class Transcript {
  state: TranscriptState = { earlier: [], turns: [], running: [] };
  private next = 1;
  /** Texts of the files each tool call changed, for the diff editor: `run/call/path` → texts. */
  readonly texts = new Map<string, { before: string | null; after: string | null }>();

  /** A request typed into the panel; its run id follows when the server answers (`claims`:
   * it starts a run, rather than only asking for a plan). */
  ask(goal: string, now: number, claims = true): Turn {
    const turn: Turn = { key: this.next++, goal, from: "panel", items: [], sent_at: now, claims };
    this.state.turns.push(turn);
    return turn;
  }

  /** The server answered `turn`'s request with its run. */
  started(turn: Turn, runId: string): void {
    turn.run_id = runId;
    // a run that ended before this answer came (refused at once) is not running
    if (!turn.ending && !this.state.running.includes(runId)) this.state.running.push(runId);
  }

  /** The request could not start: the server's words. */
  failed(turn: Turn, message: string): void {
    turn.items.push({ kind: "error", text: message });
    turn.ending = { exit_reason: "refused", summary: message, files_changed: [], candidates: [], left: [], undoable: false };
  }

  /** The turn of run `runId`: the panel's request waiting for its id, else a new one for a run started elsewhere. */
  private turnOf(runId: string, goal?: string): Turn {
    const known = this.state.turns.find((t) => t.run_id === runId);
    if (known) return known;
    // an event can come before the answer that names the run: the panel's latest request claims it
    const waiting = [...this.state.turns].reverse().find((t) => t.from === "panel" && t.claims && !t.run_id && !t.ending);
    if (waiting) {
      waiting.run_id = runId;
      if (!this.state.running.includes(runId)) this.state.running.push(runId);
      return waiting;
    }
    const turn: Turn = { key: this.next++, goal: goal ?? EDITOR_RUN, from: "editor", run_id: runId, items: [] };
    this.state.turns.push(turn);
    this.state.running.push(runId);
    return turn;
  }

  plan(plan: Plan, now: number): void {
    if (!plan || !Array.isArray(plan.steps)) return;
    const runId = plan.run_id ?? plan.plan_id;
    const turn = this.turnOf(runId, plan.goal);
    if (turn.from === "editor" && turn.goal === EDITOR_RUN) turn.goal = plan.goal;
    turn.plan = plan;
    if (turn.first_plan_at === undefined && plan.steps.length > 0) turn.first_plan_at = now;
  }

  /** A `tokamak/runEvent`. */
  event(event: Record<string, unknown>): void {
    const runId = String(event.run_id ?? "");
    if (!runId) return;
    const turn = this.turnOf(runId);
    switch (event.kind) {
      case "said":
      case "thought": {
        const text = String(event.text ?? "").trim();
        if (!text) return;
        const last = turn.items[turn.items.length - 1];
        // a thought that goes on is one item
        if (last && last.kind === event.kind && event.kind === "thought") last.text += `\n${text}`;
        else turn.items.push({ kind: event.kind, text });
        return;
      }
      case "tool_call":
        turn.items.push({
          kind: "tool",
          id: String(event.id ?? ""),
          tool: String(event.tool ?? ""),
          title: String(event.title ?? ""),
          paths: Array.isArray(event.paths) ? event.paths.map(String) : [],
          state: "running",
          files: [],
        });
        return;
      case "tool_result": {
        const id = String(event.id ?? "");
        let item = [...turn.items].reverse().find((i) => i.kind === "tool" && i.id === id);
        if (!item || item.kind !== "tool") {
          item = { kind: "tool", id, tool: "", title: String(event.summary ?? ""), paths: [], state: "running", files: [] };
          turn.items.push(item);
        }
        item.state = event.ok ? "ok" : "failed";
        item.summary = String(event.summary ?? "");
        item.output = typeof event.output === "string" ? event.output : null;
        item.check = (event.check as Checked | null) ?? null;
        const files = Array.isArray(event.files) ? (event.files as Record<string, unknown>[]) : [];
        item.files = files.map((file) => {
          const path = String(file.path ?? "");
          const diff = String(file.diff ?? "");
          const before = typeof file.before === "string" ? file.before : null;
          const after = typeof file.after === "string" ? file.after : null;
          const created = file.created === true;
          const deleted = file.deleted === true;
          const openable = (before !== null || created) && (after !== null || deleted);
          if (openable) this.texts.set(`${runId}/${id}/${path}`, { before, after });
          return { path, diff, created, deleted, openable, ...diffStats(diff) };
        });
        return;
      }
      case "checked":
        turn.items.push({ kind: "checked", ...(event as unknown as Checked) });
        return;
      case "context":
        this.state.context_tokens = Number(event.tokens ?? 0);
        return;
      case "progress":
        if (typeof event.message === "string" && event.message.trim()) turn.doing = event.message.trim();
        return;
    }
  }

  approval(approval: Approval): void {
    const turn = this.turnOf(approval.run_id);
    if (turn.items.some((i) => i.kind === "approval" && i.id === approval.id)) return;
    turn.items.push({ kind: "approval", id: approval.id, summary: approval.summary, diff: approval.diff ?? "", state: "waiting" });
  }

  /** An approval was answered (here, in the diff editor's title bar or the palette). */
  answered(id: string, approved: boolean, reason?: string): void {
    for (const turn of this.state.turns) {
      for (const item of turn.items) {
        if (item.kind === "approval" && item.id === id && item.state === "waiting") {
          item.state = approved ? "approved" : "rejected";
          item.reason = reason;
        }
      }
    }
  }

  /** The approvals still waiting. */
  waiting(): string[] {
    return this.state.turns.flatMap((t) => t.items).flatMap((i) => (i.kind === "approval" && i.state === "waiting" ? [i.id] : []));
  }

  finished(report: Record<string, unknown>): void {
    const runId = String(report.run_id ?? "");
    if (!runId) return;
    const turn = this.turnOf(runId);
    // a fix started from the editor (a code action, the palette) has no plan to name it
    if (turn.goal === EDITOR_RUN && typeof report.uri === "string") turn.goal = `Fix ${report.uri.split("/").pop()}`;
    const candidates = Array.isArray(report.candidates)
      ? (report.candidates as Record<string, unknown>[]).map((c, n) => ({
          label: `candidate ${c.number ?? n + 1}${c.model ? ` (${c.model})` : ""}${typeof c.temperature === "number" ? ` at ${c.temperature.toFixed(1)}` : ""}`,
          outcome: `${String(c.outcome ?? "").replace(/_/g, " ")}${c.why ? `: ${firstLine(String(c.why))}` : ""}`,
        }))
      : [];
    const files = Array.isArray(report.files_changed) ? report.files_changed.map(String) : [];
    const left: string[] = [];
    const l = (report.left ?? {}) as Record<string, unknown>;
    const list = (key: string, what: string) => {
      if (Array.isArray(l[key])) for (const entry of l[key] as unknown[]) left.push(`${what}: ${String(entry)}`);
    };
    list("errors", "error");
    list("tests_failing", "failing test");
    if (typeof l.tests_not_run === "string") left.push(`tests not run: ${l.tests_not_run}`);
    list("unanswered", "checker without an answer");
    list("refused", "refused");
    list("rejected", "rejected");
    list("not_applied", "not applied");
    const wrapUp = report.wrap_up as { kind?: string; text?: string } | undefined;
    turn.ending = {
      exit_reason: String(report.exit_reason ?? ""),
      summary: String(report.summary ?? ""),
      files_changed: files,
      candidates,
      wrap_up: wrapUp?.kind === "said" ? wrapUp.text : undefined,
      left,
      undoable: files.length > 0,
    };
    for (const item of turn.items) {
      if (item.kind === "approval" && item.state === "waiting") item.state = "gone";
      if (item.kind === "tool" && item.state === "running") item.state = "failed";
    }
    this.state.running = this.state.running.filter((id) => id !== runId);
  }

  /** The run `runId` was rolled back: the summary of the rollback. */
  undone(runId: string, summary: string): void {
    const turn = this.state.turns.find((t) => t.run_id === runId);
    if (turn?.ending) {
      turn.ending.undone = summary;
      turn.ending.undoable = false;
    }
  }

  /** A new conversation: this window's requests and the earlier ones gone. */
  clear(): void {
    this.state = { earlier: [], turns: [], running: [] };
    this.texts.clear();
  }
}
