// The extension's own logic, free of the `vscode` module so it can be unit-tested with
// node:test: settings to Tokamak's settings, which diagnostics to forward, and debouncing.

/** A position as LSP and VS Code both count it: zero-based line, UTF-16 character. */
export interface Position {
  line: number;
  character: number;
}

/** The parts of a diagnostic Tokamak needs, whichever API it came from. */
export interface PlainDiagnostic {
  range: { start: Position; end: Position };
  /** LSP severity: 1 error, 2 warning, 3 information, 4 hint. */
  severity: number;
  source?: string;
  code?: string | number;
  message: string;
}

/** The `tokamak.*` settings VS Code holds (flattened keys), as Tokamak's settings (snake_case, as in tokamak.toml). */
export function toServerSettings(get: (key: string) => unknown): Record<string, unknown> {
  const model: Record<string, unknown> = {};
  const text = (key: string) => {
    const value = get(key);
    return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
  };
  const baseUrl = text("model.baseUrl");
  if (baseUrl) model.base_url = baseUrl;
  const name = text("model.model");
  if (name) model.model = name;
  const provider = text("model.provider");
  if (provider) model.provider = provider;
  const settings: Record<string, unknown> = {};
  if (Object.keys(model).length > 0) settings.model = model;
  const attempts = get("fix.maxAttempts");
  if (typeof attempts === "number" && Number.isInteger(attempts) && attempts > 0) {
    settings.fix = { max_attempts: attempts };
  }
  return settings;
}

/**
 * The `initializationOptions` Tokamak starts with: the settings, and VS Code's workspace
 * trust as `trusted` (in a restricted workspace Tokamak ignores the project's own commands,
 * URLs and keys, and runs none of its programs).
 */
export function initializationOptions(settings: Record<string, unknown>, isTrusted: boolean): Record<string, unknown> {
  return { ...settings, trusted: isTrusted };
}

function sameDiagnostic(a: PlainDiagnostic, b: PlainDiagnostic): boolean {
  return (
    a.message === b.message &&
    (a.source ?? "") === (b.source ?? "") &&
    a.range.start.line === b.range.start.line &&
    a.range.start.character === b.range.start.character &&
    a.range.end.line === b.range.end.line &&
    a.range.end.character === b.range.end.character
  );
}

/** The diagnostics in `all` that are not Tokamak's own (`ours`): never echo Tokamak back to itself. */
export function othersOnly(all: PlainDiagnostic[], ours: PlainDiagnostic[]): PlainDiagnostic[] {
  return all.filter((d) => !ours.some((o) => sameDiagnostic(d, o)));
}

/** VS Code's DiagnosticSeverity (0 error … 3 hint) as LSP's (1 … 4). */
export function lspSeverity(vscodeSeverity: number): number {
  return Math.min(Math.max(vscodeSeverity, 0), 3) + 1;
}

/** Calls `run(key)` once `waitMs` pass without another `schedule(key)`. */
export class Debouncer {
  private timers = new Map<string, ReturnType<typeof setTimeout>>();
  constructor(private readonly waitMs: number, private readonly run: (key: string) => void) {}

  schedule(key: string): void {
    const pending = this.timers.get(key);
    if (pending) clearTimeout(pending);
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        this.run(key);
      }, this.waitMs),
    );
  }

  dispose(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}

/** The server to start: the setting, else the bundled binary if it exists, else `tokamak` on PATH. */
export function serverCommand(setting: string, bundled: string, exists: (path: string) => boolean): string {
  if (setting.trim() !== "") return setting.trim();
  if (exists(bundled)) return bundled;
  return "tokamak";
}

/** A plan step as `tokamak/planUpdated` sends it. */
export interface PlanStep {
  id: string;
  title: string;
  detail?: string;
  depends_on?: string[];
  /** How it ended when not done: failed, rejected (every change refused), nothing_changed (none landed), not_applied (an approved change did not land), cancelled. */
  status: "pending" | "running" | "done" | "failed" | "rejected" | "nothing_changed" | "not_applied" | "cancelled";
  glyph?: string;
  note?: string;
  files?: string[];
  /** The role and mode it is carried out in, and why. */
  role?: string;
  /** Its current mode while it runs (`test`, `debug` …), the last one after. */
  mode?: string;
  /** The steps a re-plan put in its place after it failed: it stays, failed, beside them. */
  replaced_by?: string[];
}

/** A plan as `tokamak/planUpdated` and `tokamak.plan` send it. */
export interface Plan {
  plan_id: string;
  run_id?: string;
  goal: string;
  steps: PlanStep[];
}

const GLYPHS: Record<string, string> = {
  pending: "○",
  running: "⚡",
  done: "✓",
  failed: "✗",
  rejected: "✗",
  nothing_changed: "✗",
  not_applied: "✗",
  cancelled: "⊘",
};

/** What the *Tokamak Plan* tree shows for a step: its label, description, tooltip and children (the files it changed). */
export interface StepView {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  files: string[];
}

export function stepView(step: PlanStep): StepView {
  const glyph = step.glyph ?? GLYPHS[step.status] ?? "?";
  const depends = step.depends_on && step.depends_on.length > 0 ? ` [depends: ${step.depends_on.join(", ")}]` : "";
  const tooltip = [step.title, step.role ? `Role: ${step.role}` : "", step.detail ?? "", step.note ?? "", (step.files ?? []).length > 0 ? `Files: ${(step.files ?? []).join(", ")}` : ""]
    .filter((part) => part.trim() !== "")
    .join("\n\n");
  return {
    id: step.id,
    label: `${glyph} ${step.id}. ${step.title}${depends}`,
    // the running step's current mode, as each outcome moves it; how a step that was not done
    // ended, and what replaced it
    description:
      step.status === "running" && step.mode
        ? `running · ${step.mode}`
        : step.status.replace(/_/g, " ") + (step.replaced_by && step.replaced_by.length > 0 ? ` · replaced by ${step.replaced_by.join(", ")}` : ""),
    tooltip,
    files: step.files ?? [],
  };
}

/** The goal typed into the input box, or undefined when there is none. */
export function goalOf(input: string | undefined): string | undefined {
  const goal = input?.trim();
  return goal ? goal : undefined;
}

/** Keeps the plans received, by id, and which one the view shows (the latest). */
export class PlanBook {
  private plans = new Map<string, Plan>();
  latest: string | undefined;

  update(plan: Plan): void {
    if (!plan || typeof plan.plan_id !== "string" || !Array.isArray(plan.steps)) return;
    this.plans.set(plan.plan_id, plan);
    this.latest = plan.plan_id;
  }

  current(): Plan | undefined {
    return this.latest ? this.plans.get(this.latest) : undefined;
  }
}

/** A question as `tokamak/approvalRequested` sends it; `path`, `before` and `after` come with a change of one file. */
export interface Approval {
  id: string;
  run_id: string;
  action: string;
  summary: string;
  diff: string;
  path?: string | null;
  before?: string | null;
  after?: string | null;
}

/** The scheme of the read-only documents an approval's diff editor compares. */
export const APPROVAL_SCHEME = "tokamak-approval";

/** Keeps the questions waiting, oldest first, and serves their texts to the diff editor. */
export class ApprovalBook {
  private items = new Map<string, Approval>();

  /** Adds a question; `false` (and nothing kept) for a malformed one. */
  add(approval: Approval): boolean {
    if (!approval || typeof approval.id !== "string" || typeof approval.summary !== "string") return false;
    this.items.set(approval.id, approval);
    return true;
  }

  remove(id: string): void {
    this.items.delete(id);
  }

  get(id: string): Approval | undefined {
    return this.items.get(id);
  }

  /** The question meant when none is named: the oldest waiting. */
  oldest(): Approval | undefined {
    return this.items.values().next().value;
  }

  count(): number {
    return this.items.size;
  }

  /** The questions of a run (to forget when it ends). */
  ofRun(runId: string): Approval[] {
    return [...this.items.values()].filter((a) => a.run_id === runId);
  }

  /** The text at a diff document's path (`/<id>/before/<file>` or `/<id>/after/<file>`): empty for an absent file. */
  text(documentPath: string): string | undefined {
    const match = /^\/([^/]+)\/(before|after)\//.exec(documentPath);
    if (!match) return undefined;
    const approval = this.items.get(match[1]);
    if (!approval) return undefined;
    return (match[2] === "before" ? approval.before : approval.after) ?? "";
  }
}

/** The two documents the diff editor compares for a change of one file, or undefined for any other question. */
export function approvalPaths(approval: Approval): { before: string; after: string } | undefined {
  if (!approval.path || (approval.before == null && approval.after == null)) return undefined;
  return { before: `/${approval.id}/before/${approval.path}`, after: `/${approval.id}/after/${approval.path}` };
}

/** The diff editor's title. */
export function approvalTitle(approval: Approval): string {
  return `Tokamak wants to ${approval.summary} (${approval.id}) ↔ proposed`;
}

/** What the status-bar item says: the running step and its mode, an approval waiting, or the last ending. */
export function statusView(plan: Plan | undefined, approvals: number, ended: string | undefined): { text: string; tooltip: string } {
  if (approvals > 0) {
    return { text: `$(question) Tokamak: ${approvals} approval(s) waiting`, tooltip: "Answer in the Tokamak panel or the diff editor's title bar" };
  }
  const steps = plan?.steps ?? [];
  const running = steps.find((s) => s.status === "running");
  if (plan && running) {
    const n = steps.indexOf(running) + 1;
    const mode = running.mode ? ` · ${running.mode}` : "";
    const title = running.title.length > 40 ? `${running.title.slice(0, 39)}…` : running.title;
    return { text: `$(sync~spin) Tokamak: step ${n}/${steps.length} ${title}${mode}`, tooltip: `${plan.goal}\n\nStep ${running.id}: ${running.title}${mode}` };
  }
  if (ended) {
    const short = ended.length > 60 ? `${ended.slice(0, 59)}…` : ended;
    return { text: `$(hubot) ${short}`, tooltip: ended };
  }
  return { text: "$(hubot) Tokamak", tooltip: "Open the Tokamak panel" };
}

/** `tokamak.status` as quick-pick rows: the model, trust, approval, the runs going on and those that ended. */
export function statusItems(status: Record<string, unknown>): { label: string; description?: string; detail?: string }[] {
  const items: { label: string; description?: string; detail?: string }[] = [];
  const model = (status.model ?? {}) as Record<string, unknown>;
  items.push(
    model.error
      ? { label: "$(server) Model", description: "not set up", detail: noModelHint(String(model.error)) }
      : { label: "$(server) Model", description: String(model.name ?? ""), detail: `${model.provider ?? ""} at ${model.endpoint ?? ""}` },
  );
  items.push({ label: "$(shield) Trust", description: status.trusted ? "trusted" : "restricted", detail: String(status.trust ?? "") });
  if (status.approval) items.push({ label: "$(question) Approval", description: String(status.approval) });
  const runs = Array.isArray(status.runs) ? (status.runs as Record<string, unknown>[]) : [];
  for (const run of runs) {
    const confidence = Array.isArray(run.confidence) && run.confidence.length > 0
      ? ` · confidence ${(run.confidence as Record<string, unknown>[]).map((c) => `${c.file} ${c.confidence}`).join(", ")}`
      : "";
    items.push({ label: `$(sync~spin) ${run.run_id}`, description: `running${run.mode ? ` · ${run.mode}` : ""}${confidence}`, detail: String(run.uri ?? "") });
  }
  const recent = Array.isArray(status.recentRuns) ? (status.recentRuns as Record<string, unknown>[]) : [];
  for (const run of recent) {
    items.push({ label: `$(history) ${run.run_id}`, description: String(run.exit_reason ?? "").replace(/_/g, " "), detail: `${run.summary ?? ""} (${run.at ?? ""})` });
  }
  if (runs.length === 0 && recent.length === 0) items.push({ label: "$(circle-outline) No run yet in this session" });
  const waiting = Array.isArray(status.approvals) ? status.approvals.length : 0;
  if (waiting > 0) items.push({ label: `$(bell) ${waiting} approval(s) waiting` });
  return items;
}

/** `tokamak.checkpoints` as quick-pick rows, newest first; `id` is what `tokamak.rollback` takes. */
export function checkpointItems(checkpoints: Record<string, unknown>[]): { label: string; description: string; detail: string; id: string }[] {
  return checkpoints.map((c) => {
    const files = Array.isArray(c.files) ? c.files.map(String) : [];
    return {
      label: String(c.goal || c.run_id),
      description: `${c.run_id} · ${String(c.time ?? "").replace("T", " ").replace(/Z$/, " UTC")}${c.complete ? "" : " · incomplete"}`,
      detail: files.length > 0 ? `${files.length} file(s): ${files.slice(0, 6).join(", ")}${files.length > 6 ? ", …" : ""}` : "no files recorded",
      id: String(c.run_id),
    };
  });
}

/** What the *Tokamak* output channel says of a `tokamak/runEvent`: actions and their results (a command's output below it), each step's checks; nothing for the model's words or context counts. */
export function eventLines(event: Record<string, unknown>): string[] {
  const run = `[${event.run_id}]`;
  switch (event.kind) {
    case "tool_call":
      return [`${run} ${event.title}`];
    case "tool_result": {
      const lines = [`${run}   ${event.ok ? "→" : "✗"} ${event.summary}`];
      if (typeof event.output === "string" && event.output.trim()) {
        lines.push(...event.output.trimEnd().split("\n").map((line) => `${run}     ${line}`));
      }
      return lines;
    }
    case "checked": {
      const step = event.step ? `step ${event.step} checked: ` : "checked: ";
      return [`${run} ${step}${event.summary}`];
    }
    default:
      return [];
  }
}

/** The output channel's lines for a plan update: a step that starts, changes mode or ends (`modes`: each step's last mode, kept between updates). */
export function planLines(plan: Plan, modes: Map<string, string>): string[] {
  const run = `[${plan.run_id ?? plan.plan_id}]`;
  const lines: string[] = [];
  for (const step of plan.steps ?? []) {
    const key = `${plan.plan_id}/${step.id}`;
    const was = modes.get(key);
    const now = step.status === "running" ? `running:${step.mode ?? ""}` : step.status;
    if (was === now) continue;
    modes.set(key, now);
    if (step.status === "pending") continue;
    if (step.status === "running") {
      lines.push(was?.startsWith("running:") ? `${run} step ${step.id} mode: ${was.slice(8) || "?"} → ${step.mode ?? "?"}` : `${run} step ${step.id} started: ${step.title}${step.mode ? ` (${step.mode})` : ""}`);
    } else {
      lines.push(`${run} step ${step.id} ${step.status.replace(/_/g, " ")}${step.note ? `: ${step.note}` : ""}`);
    }
  }
  return lines;
}

/** A model error as the extension says it: pointing at its own `tokamak.model.*` settings first. */
export function noModelHint(message: string): string {
  if (!/TOKAMAK_LLM_URL|no model|not reachable|connection refused|could not connect|cannot reach|error sending request/i.test(message)) return message;
  return `${message} — set the model in VS Code's settings (Tokamak › Model: Base Url, Model: Model, Model: Provider), or in tokamak.toml`;
}
