// The Tokamak agent panel (seed 001's ChatPanel): a webview view in its own activity-bar
// container where a goal or a question is typed (with @-mentioned files, the selection, the
// current problems), the run is watched — the plan on top, ○ ⚡ ✓ ✗ with the running step's
// mode; below, the conversation: the model's words, each tool call with its diff (a click
// opens the diff editor), approvals answered inline, each step's checks and tests, the fix's
// candidates, the ending with *Undo this run* — and the next request follows in the same
// conversation. The role, approval and model pickers sit above the input. It speaks to the
// same language server as the rest of the extension; its conversation data is `transcript.ts`.
import * as vscode from "vscode";
import { Approval, Plan } from "./logic";
import { Transcript, Turn } from "./transcript";

export const PANEL_VIEW = "tokamak.panel";
/** The scheme of the read-only texts a tool call's diff editor compares. */
export const CHANGE_SCHEME = "tokamak-change";

/** What the panel needs of the rest of the extension. */
export interface PanelHost {
  execute(command: string, argument: unknown): Promise<unknown>;
  /** Answers approval `id` (closing its diff editor). */
  answer(id: string, approve: boolean, reason?: string): Promise<void>;
  log(line: string): void;
}

interface Pickers {
  roles: { id: string; name: string; description: string }[];
  approvals: { id: string; name: string; description: string }[];
  model: string;
  served: string[];
}

/** What the user picked, kept per workspace. */
interface Picked {
  role: string;
  approval: string;
}

function nonce(): string {
  let text = "";
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (let i = 0; i < 32; i++) text += chars.charAt(Math.floor(Math.random() * chars.length));
  return text;
}

function relative(uri: vscode.Uri): string {
  return vscode.workspace.asRelativePath(uri, false);
}

export class Panel implements vscode.WebviewViewProvider, vscode.TextDocumentContentProvider {
  readonly transcript = new Transcript();
  private view: vscode.WebviewView | undefined;
  private pickers: Pickers = { roles: [], approvals: [], model: "", served: [] };
  private picked: Picked;
  private files: string[] | undefined;
  private drawing: NodeJS.Timeout | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly host: PanelHost,
  ) {
    this.picked = context.workspaceState.get<Picked>("tokamak.panel.picked") ?? { role: "auto", approval: "default" };
  }

  // ----- the view

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.context.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    const script = view.webview.asWebviewUri(vscode.Uri.joinPath(media, "panel.js"));
    const style = view.webview.asWebviewUri(vscode.Uri.joinPath(media, "panel.css"));
    const n = nonce();
    view.webview.html = `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${view.webview.cspSource}; script-src 'nonce-${n}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${style}" rel="stylesheet"><title>Tokamak</title></head>
<body><div id="app" role="main"></div><script nonce="${n}" src="${script}"></script></body></html>`;
    view.webview.onDidReceiveMessage((message) => void this.receive(message));
    view.onDidChangeVisibility(() => {
      if (view.visible) this.draw();
    });
  }

  /** Shows the panel (and focuses its input when `focus`). */
  async reveal(focus = false): Promise<void> {
    await vscode.commands.executeCommand(`${PANEL_VIEW}.focus`);
    if (focus) void this.view?.webview.postMessage({ type: "focus" });
  }

  /** Draws the state in the webview, at most every 50 ms. */
  draw(): void {
    if (this.drawing) return;
    this.drawing = setTimeout(() => {
      this.drawing = undefined;
      void this.view?.webview.postMessage({
        type: "state",
        state: this.transcript.state,
        pickers: this.pickers,
        picked: this.picked,
        here: this.here(),
      });
    }, 50);
  }

  private here(): { file?: string; selection?: string } {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.uri.scheme !== "file") return {};
    const s = editor.selection;
    const file = relative(editor.document.uri);
    return { file, selection: s.isEmpty ? undefined : `${file}:${s.start.line + 1}-${s.end.line + 1}` };
  }

  // ----- what the server says

  plan(plan: Plan): void {
    this.transcript.plan(plan, Date.now());
    this.draw();
  }

  event(event: Record<string, unknown>): void {
    this.transcript.event(event);
    this.draw();
  }

  approval(approval: Approval): void {
    this.transcript.approval(approval);
    this.draw();
  }

  answered(id: string, approve: boolean, reason?: string): void {
    this.transcript.answered(id, approve, reason);
    this.draw();
  }

  finished(report: Record<string, unknown>): void {
    const files = Array.isArray(report.files_changed) ? report.files_changed : [];
    const relativeFiles = files.map((f) => {
      try {
        return relative(vscode.Uri.parse(String(f)));
      } catch {
        return String(f);
      }
    });
    this.transcript.finished({ ...report, files_changed: relativeFiles });
    this.draw();
  }

  /** The workspace's conversation so far, as the server keeps it (after a restart). */
  async load(): Promise<void> {
    try {
      const answer = (await this.host.execute("tokamak.conversation", {})) as { turns?: { asked: string; answered: string }[] };
      this.transcript.state.earlier = answer.turns ?? [];
    } catch (error) {
      this.host.log(`the conversation could not be read: ${error}`);
    }
    try {
      this.pickers = (await this.host.execute("tokamak.pickers", {})) as Pickers;
    } catch (error) {
      this.host.log(`the pickers could not be read: ${error}`);
    }
    this.draw();
  }

  // ----- what the user does in the panel

  private async receive(message: Record<string, unknown>): Promise<void> {
    switch (message.type) {
      case "ready":
        return this.draw();
      case "send":
        return this.send(String(message.text ?? ""), message as { mentions?: string[]; selection?: boolean; problems?: boolean });
      case "approve":
        return this.host.answer(String(message.id), true);
      case "reject":
        return this.host.answer(String(message.id), false, String(message.reason ?? ""));
      case "stop":
        return this.stop();
      case "undo":
        return this.undo(String(message.run_id));
      case "implement":
        return this.implement(String(message.plan_id));
      case "openDiff":
        return this.openDiff(String(message.key));
      case "openFile":
        return this.openFile(String(message.path));
      case "pick":
        return this.pick(String(message.picker), String(message.value));
      case "newConversation":
        return this.newConversation();
      case "compact":
        return this.compact();
      case "mention":
        return this.mention(String(message.query ?? ""));
    }
  }

  /** Sends a request: `tokamak.run` (or `tokamak.plan` under *Plan only*) with the goal, the mentioned files, the selection and the problems. */
  async send(text: string, extra: { mentions?: string[]; selection?: boolean; problems?: boolean } = {}): Promise<void> {
    const typed = text.trim();
    if (!typed) return;
    if (this.transcript.state.running.length > 0) {
      void vscode.window.showWarningMessage("Tokamak: a run is going on; stop it or wait for its end");
      return;
    }
    let goal = typed;
    const mentions = (extra.mentions ?? []).filter((m) => typed.includes(`@${m}`));
    if (mentions.length > 0) goal += `\n\nFiles mentioned: ${mentions.join(", ")}`;
    if (extra.problems) {
      const problems = this.problems();
      goal += problems ? `\n\nThe problems the editor shows now:\n${problems}` : "\n\n(The editor shows no problems now.)";
    }
    const where: { uri?: string; range?: unknown } = {};
    const editor = vscode.window.activeTextEditor;
    if (extra.selection && editor && editor.document.uri.scheme === "file") {
      const s = editor.selection;
      where.uri = editor.document.uri.toString();
      where.range = { start: { line: s.start.line, character: s.start.character }, end: { line: s.end.line, character: s.end.character } };
    }
    const planOnly = this.picked.approval === "plan";
    const turn = this.transcript.ask(typed, Date.now(), !planOnly);
    this.draw();
    if (planOnly) return this.planOnly(turn, goal, where);
    try {
      const started = (await this.host.execute("tokamak.run", {
        goal,
        ...where,
        role: this.picked.role === "auto" ? undefined : this.picked.role,
        approval: this.picked.approval,
      })) as { run_id: string };
      this.transcript.started(turn, started.run_id);
      this.host.log(`run ${started.run_id}: ${typed}`);
    } catch (error) {
      this.transcript.failed(turn, error instanceof Error ? error.message : String(error));
    }
    this.draw();
  }

  private async planOnly(turn: Turn, goal: string, where: { uri?: string; range?: unknown }): Promise<void> {
    try {
      const plan = (await this.host.execute("tokamak.plan", { goal, ...where })) as Plan;
      turn.plan = plan;
      turn.first_plan_at ??= Date.now();
      turn.ending = {
        exit_reason: "planned",
        summary: `A plan of ${plan.steps.length} step(s); nothing was carried out.`,
        files_changed: [],
        candidates: [],
        left: [],
        undoable: false,
      };
    } catch (error) {
      this.transcript.failed(turn, error instanceof Error ? error.message : String(error));
    }
    this.draw();
  }

  private async implement(planId: string): Promise<void> {
    const source = this.transcript.state.turns.find((t) => t.plan?.plan_id === planId);
    const turn = this.transcript.ask(`Carry out the plan: ${source?.plan?.goal ?? planId}`, Date.now());
    this.draw();
    try {
      const started = (await this.host.execute("tokamak.implement", { plan_id: planId })) as { run_id: string };
      this.transcript.started(turn, started.run_id);
    } catch (error) {
      this.transcript.failed(turn, error instanceof Error ? error.message : String(error));
    }
    this.draw();
  }

  /** The workspace's errors and warnings as the editor shows them, one per line (at most 40). */
  private problems(): string {
    const lines: string[] = [];
    for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
      if (uri.scheme !== "file") continue;
      for (const d of diagnostics) {
        if (d.severity > vscode.DiagnosticSeverity.Warning) continue;
        const source = d.source ? ` [${d.source}]` : "";
        lines.push(`${relative(uri)}:${d.range.start.line + 1}${source} ${d.message}`);
      }
    }
    return lines.slice(0, 40).join("\n");
  }

  private async stop(): Promise<void> {
    try {
      for (const runId of this.transcript.state.running) await this.host.execute("tokamak.cancel", { run_id: runId });
    } catch (error) {
      void vscode.window.showErrorMessage(`Tokamak: ${error instanceof Error ? error.message : error}`);
    }
  }

  private async undo(runId: string): Promise<void> {
    try {
      const answer = (await this.host.execute("tokamak.rollback", { checkpoint: runId })) as { run_id?: string };
      // the rollback is a run of its own: its ending says what was restored
      const rollback = answer.run_id;
      if (rollback) this.undoing.set(rollback, runId);
    } catch (error) {
      this.transcript.undone(runId, `Not undone: ${error instanceof Error ? error.message : error}`);
      const turn = this.transcript.state.turns.find((t) => t.run_id === runId);
      if (turn?.ending) turn.ending.undoable = true;
      this.draw();
    }
  }

  /** Rollback runs started from the panel, by their run id → the run they undo. */
  private readonly undoing = new Map<string, string>();

  /** Whether `report` ends a rollback the panel started (then it is told on the run it undid). */
  rollbackFinished(report: Record<string, unknown>): boolean {
    const id = String(report.run_id ?? "");
    const undone = this.undoing.get(id);
    if (!undone) return false;
    this.undoing.delete(id);
    this.transcript.undone(undone, String(report.summary ?? "rolled back"));
    this.draw();
    return true;
  }

  private async openDiff(key: string): Promise<void> {
    const texts = this.transcript.texts.get(key);
    if (!texts) return;
    const [run, call, ...rest] = key.split("/");
    const path = rest.join("/");
    const uri = (side: string) => vscode.Uri.from({ scheme: CHANGE_SCHEME, path: `/${run}/${call}/${side}/${path}` });
    await vscode.commands.executeCommand("vscode.diff", uri("before"), uri("after"), `${path} (Tokamak's change)`, {
      preview: true,
    });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const match = /^\/([^/]+)\/([^/]+)\/(before|after)\/(.*)$/.exec(uri.path);
    if (!match) return "";
    const texts = this.transcript.texts.get(`${match[1]}/${match[2]}/${match[4]}`);
    return (match[3] === "before" ? texts?.before : texts?.after) ?? "";
  }

  /** Opens a file the run named, when it is inside a workspace folder (the name comes from the model). */
  private async openFile(path: string): Promise<void> {
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const uri = vscode.Uri.joinPath(folder.uri, path);
      if (!uri.path.startsWith(`${folder.uri.path}/`)) continue;
      try {
        await vscode.workspace.fs.stat(uri);
      } catch {
        continue;
      }
      await vscode.window.showTextDocument(uri, { preview: true });
      return;
    }
  }

  private async pick(picker: string, value: string): Promise<void> {
    if (picker === "role") this.picked.role = value;
    else if (picker === "approval") this.picked.approval = value;
    else if (picker === "model") {
      // the model is a setting: the server hears of it as of any other
      await vscode.workspace.getConfiguration("tokamak").update("model.model", value, vscode.ConfigurationTarget.Workspace);
      this.pickers.model = value;
    }
    await this.context.workspaceState.update("tokamak.panel.picked", this.picked);
    this.draw();
  }

  private async newConversation(): Promise<void> {
    if (this.transcript.state.running.length > 0) return;
    try {
      await this.host.execute("tokamak.compact", { clear: true });
    } catch (error) {
      this.host.log(`the conversation could not be forgotten: ${error}`);
    }
    this.transcript.clear();
    this.draw();
  }

  private async compact(): Promise<void> {
    try {
      const answer = (await this.host.execute("tokamak.compact", {})) as { message: string };
      void vscode.window.showInformationMessage(`Tokamak: ${answer.message}`);
      await this.load();
    } catch (error) {
      this.host.log(`the conversation could not be compacted: ${error}`);
    }
  }

  /** The workspace's files whose path holds `query`, for an @-mention (at most 20). */
  private async mention(query: string): Promise<void> {
    if (!this.files) {
      const found = await vscode.workspace.findFiles("**/*", "**/{node_modules,.git,.venv,venv,__pycache__,dist,out,target}/**", 5000);
      this.files = found.map(relative).sort();
    }
    const q = query.toLowerCase();
    const files = this.files.filter((f) => f.toLowerCase().includes(q)).slice(0, 20);
    void this.view?.webview.postMessage({ type: "mentions", query, files });
  }
}
