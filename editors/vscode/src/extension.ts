// Tokamak for VS Code: starts the `tokamak` language server, forwards the diagnostics of
// other extensions to it, sends `tokamak.*` settings, and gives the agent a place of its own:
// the *Tokamak* panel (panel.ts) in the activity bar, where goals and questions are typed, the
// run is watched and approvals are answered. Palette commands (Fix file, Run…, Plan…,
// Rollback…, Status, …), the *Tokamak Plan* tree view, a status-bar item that follows the
// running step and its mode, and the *Tokamak* output channel that says what the agent did.
// Code actions ("Fix with Tokamak", "Implement with Tokamak") come from the server. Each
// approval (`tokamak/approvalRequested`) opens a diff editor — the file now against the
// proposed text — with Approve and Reject in its title bar and in the panel.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";
import {
  APPROVAL_SCHEME,
  Approval,
  ApprovalBook,
  Debouncer,
  approvalPaths,
  approvalTitle,
  Plan,
  PlanBook,
  PlanStep,
  goalOf,
  stepView,
  PlainDiagnostic,
  checkpointItems,
  eventLines,
  initializationOptions,
  noModelHint,
  planLines,
  statusItems,
  statusView,
  lspSeverity,
  othersOnly,
  serverCommand,
  toServerSettings,
} from "./logic";
import { CHANGE_SCHEME, PANEL_VIEW, Panel } from "./panel";
import { endingTitle } from "./transcript";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;

const SELECTOR = ["python", "typescript", "typescriptreact", "javascript", "javascriptreact"].map((language) => ({
  scheme: "file",
  language,
}));

function settings(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration("tokamak");
  return toServerSettings((key) => config.get(key));
}

function plain(d: vscode.Diagnostic): PlainDiagnostic {
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  return {
    range: {
      start: { line: d.range.start.line, character: d.range.start.character },
      end: { line: d.range.end.line, character: d.range.end.character },
    },
    severity: lspSeverity(d.severity),
    source: d.source,
    code,
    message: d.message,
  };
}

function forward(uri: string): void {
  if (!client || !client.isRunning()) return;
  const target = vscode.Uri.parse(uri);
  const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
  if (!document || !vscode.languages.match(SELECTOR, document)) return;
  const all = vscode.languages.getDiagnostics(target).map(plain);
  const ours = (client.diagnostics?.get(target) ?? []).map(plain);
  void client.sendNotification("tokamak/clientDiagnostics", {
    uri,
    version: document.version,
    diagnostics: othersOnly(all, ours),
  });
}

async function execute(command: string, argument: unknown): Promise<unknown> {
  if (!client) throw new Error("Tokamak is not running (see Tokamak: Show logs)");
  return client.sendRequest("workspace/executeCommand", { command, arguments: [argument] });
}

function report(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  void vscode.window.showErrorMessage(`Tokamak: ${noModelHint(message)}`);
}

type PlanNode = { step: PlanStep } | { file: string; step: PlanStep };

/** The *Tokamak Plan* view: the latest plan's steps with their status glyphs; a step's children are the files it changed. */
class PlanTree implements vscode.TreeDataProvider<PlanNode> {
  readonly book = new PlanBook();
  private changed = new vscode.EventEmitter<PlanNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  update(plan: Plan): void {
    this.book.update(plan);
    this.changed.fire(undefined);
  }

  getTreeItem(node: PlanNode): vscode.TreeItem {
    if ("file" in node) {
      const item = new vscode.TreeItem(node.file, vscode.TreeItemCollapsibleState.None);
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
      if (folder) {
        const uri = vscode.Uri.joinPath(folder, node.file);
        item.resourceUri = uri;
        item.command = { command: "vscode.open", title: "Open", arguments: [uri] };
      }
      return item;
    }
    const view = stepView(node.step);
    const state = view.files.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(view.label, state);
    item.description = view.description;
    item.tooltip = view.tooltip;
    return item;
  }

  getChildren(node?: PlanNode): PlanNode[] {
    if (!node) {
      const plan = this.book.current();
      return (plan?.steps ?? []).map((step) => ({ step }));
    }
    if ("file" in node) return [];
    return (node.step.files ?? []).map((file) => ({ file, step: node.step }));
  }
}

/** Tells the server this extension shows approvals itself (no `window/showMessageRequest`) and wants the run stream for the panel. */
const approvalFeature = {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, tokamak: { approvals: true, runEvents: true } };
  },
  initialize(): void {},
  getState(): { kind: "static" } {
    return { kind: "static" };
  },
  clear(): void {},
};

/** The approvals waiting, each shown as a diff editor with Approve / Reject in its title bar and in the panel (no notification: one answered elsewhere would stay up with buttons that do nothing). */
class Approvals implements vscode.TextDocumentContentProvider {
  readonly book = new ApprovalBook();
  panel: Panel | undefined;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.book.text(uri.path) ?? "";
  }

  async ask(approval: Approval): Promise<void> {
    if (!this.book.add(approval)) return;
    output.appendLine(`[${approval.run_id}] asks: ${approval.summary} (${approval.id})`);
    this.panel?.approval(approval);
    status.waiting(this.book.count());
    const paths = approvalPaths(approval);
    if (paths) {
      const uri = (path: string) => vscode.Uri.from({ scheme: APPROVAL_SCHEME, path });
      await vscode.commands.executeCommand("vscode.diff", uri(paths.before), uri(paths.after), approvalTitle(approval), {
        preview: false,
      });
    }
    // the panel is where the question is answered (the diff editor's title bar too)
    await this.panel?.reveal();
  }

  /** Answers `id` (the diff editor's, else the oldest waiting, when none is named); a rejection without a `reason` asks for one. */
  async answer(id: string | undefined, approve: boolean, given?: string): Promise<void> {
    const approval = id ? this.book.get(id) : this.current() ?? this.book.oldest();
    if (!approval) return void vscode.window.showWarningMessage("Tokamak: no approval is waiting");
    let reason = given;
    if (!approve && reason === undefined) {
      reason = await vscode.window.showInputBox({
        prompt: `Why not ${approval.summary}? Tokamak's agent reads your reason.`,
        placeHolder: "e.g. put it in docs/ instead",
        ignoreFocusOut: true,
      });
      if (reason === undefined) return; // <Esc>: still waiting
    }
    try {
      await execute(approve ? "tokamak.approve" : "tokamak.reject", approve ? { id: approval.id } : { id: approval.id, reason });
      output.appendLine(`[${approval.run_id}] ${approve ? "approved" : `rejected${reason ? `: ${reason}` : ""}`}: ${approval.summary}`);
      this.panel?.answered(approval.id, approve, reason);
    } catch (error) {
      report(error);
    }
    this.forget(approval.id);
  }

  /** The approval whose diff editor is active. */
  private current(): Approval | undefined {
    const uri = vscode.window.activeTextEditor?.document.uri;
    if (uri?.scheme !== APPROVAL_SCHEME) return undefined;
    return this.book.get(uri.path.split("/")[1] ?? "");
  }

  /** Forgets `id` and closes its diff editor. */
  forget(id: string): void {
    this.book.remove(id);
    status.waiting(this.book.count());
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        const input = tab.input;
        if (input instanceof vscode.TabInputTextDiff && input.modified.scheme === APPROVAL_SCHEME && input.modified.path.startsWith(`/${id}/`)) {
          void vscode.window.tabGroups.close(tab);
        }
      }
    }
  }
}

/** Where the user is: the active editor's document and selection, for the goal's context. */
function here(): { uri?: string; range?: unknown } {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return {};
  const s = editor.selection;
  return {
    uri: editor.document.uri.toString(),
    range: {
      start: { line: s.start.line, character: s.start.character },
      end: { line: s.end.line, character: s.end.character },
    },
  };
}

async function askGoal(prompt: string): Promise<string | undefined> {
  return goalOf(
    await vscode.window.showInputBox({
      prompt,
      placeHolder: "e.g. add a validate_email method to User",
      ignoreFocusOut: true,
    }),
  );
}

/** The status-bar item: the running step and its mode, an approval waiting, or how the last run ended. */
class StatusItem {
  readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private plan: Plan | undefined;
  private approvals = 0;
  private ended: string | undefined;
  private clearing: NodeJS.Timeout | undefined;

  constructor() {
    this.item.command = "tokamak.client.openPanel";
    this.draw();
    this.item.show();
  }

  running(plan: Plan): void {
    this.plan = plan;
    this.ended = undefined;
    this.draw();
  }

  /** What a run without a plan (a fix) is doing now. */
  activity(text: string): void {
    if (this.plan?.steps.some((s) => s.status === "running")) return;
    this.ended = undefined;
    this.item.text = `$(sync~spin) Tokamak: ${text.length > 60 ? `${text.slice(0, 59)}…` : text}`;
    this.item.tooltip = text;
  }

  waiting(count: number): void {
    this.approvals = count;
    this.draw();
  }

  finished(exitReason: string, summary: string): void {
    this.plan = undefined;
    this.ended = `${endingTitle(exitReason)}: ${summary}`;
    this.draw();
    if (this.clearing) clearTimeout(this.clearing);
    this.clearing = setTimeout(() => {
      this.ended = undefined;
      this.draw();
    }, 15000);
  }

  private draw(): void {
    const view = statusView(this.plan, this.approvals, this.ended);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
  }
}

let status: StatusItem;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Tokamak");
  // the server's own log, apart from what the agent did
  const serverLog = vscode.window.createOutputChannel("Tokamak (server log)");
  status = new StatusItem();
  const configured = vscode.workspace.getConfiguration("tokamak").get<string>("server.path") ?? "";
  const bundled = path.join(context.extensionPath, "bin", process.platform === "win32" ? "tokamak.exe" : "tokamak");
  const command = serverCommand(configured, bundled, fs.existsSync);
  serverLog.appendLine(`starting ${command} lsp`);
  // the server sends its log as window/logMessage: not on stderr too, or each line shows twice
  const serverOptions: ServerOptions = { command, args: ["lsp"], options: { env: { ...process.env, TOKAMAK_LOG_STDERR: "0" } } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: SELECTOR,
    outputChannel: serverLog,
    // read at every (re)start: trust granted later restarts the server with it
    initializationOptions: () => initializationOptions(settings(), vscode.workspace.isTrusted),
    middleware: {
      workspace: {
        // the server asks for the `tokamak` section: answer with its own snake_case names
        configuration: (params, token, next) =>
          params.items.map((item) => (item.section === "tokamak" ? settings() : null)),
      },
    },
  };
  client = new LanguageClient("tokamak", "Tokamak", serverOptions, clientOptions);
  client.registerFeature(approvalFeature);
  const approvals = new Approvals();
  const panel = new Panel(context, {
    execute,
    answer: (id, approve, reason) => approvals.answer(id, approve, reason ?? ""),
    log: (line) => output.appendLine(line),
  });
  approvals.panel = panel;
  const planTree = new PlanTree();
  const planView = vscode.window.createTreeView("tokamakPlan", { treeDataProvider: planTree });
  const modes = new Map<string, string>();
  client.onNotification("tokamak/approvalRequested", (approval: Approval) => void approvals.ask(approval));
  client.onNotification("tokamak/planUpdated", (plan: Plan) => {
    planTree.update(plan);
    planView.message = plan.goal;
    panel.plan(plan);
    status.running(plan);
    for (const line of planLines(plan, modes)) output.appendLine(line);
  });
  client.onNotification("tokamak/runEvent", (event: Record<string, unknown>) => {
    panel.event(event);
    for (const line of eventLines(event)) output.appendLine(line);
    if (event.kind === "tool_call" || event.kind === "progress") status.activity(String(event.title ?? event.message ?? ""));
  });
  client.onNotification("tokamak/runFinished", (result: Record<string, unknown>) => {
    const runId = String(result.run_id ?? "");
    const exit = String(result.exit_reason ?? "");
    output.appendLine(`[${runId}] ${endingTitle(exit)}: ${String(result.summary ?? "")}`);
    for (const approval of approvals.book.ofRun(runId)) approvals.forget(approval.id);
    if (!panel.rollbackFinished(result)) panel.finished(result);
    status.finished(exit, String(result.summary ?? ""));
  });
  const showPlan = () => void vscode.commands.executeCommand("tokamakPlan.focus");
  const makePlan = async (where: { uri?: string; range?: unknown }) => {
    const goal = await askGoal("What should Tokamak plan?");
    if (!goal) return;
    try {
      const plan = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: "Tokamak: planning…" },
        () => execute("tokamak.plan", { goal, ...where }) as Promise<Plan>,
      );
      planTree.update(plan);
      showPlan();
      const choice = await vscode.window.showInformationMessage(
        `Tokamak: a plan of ${plan.steps.length} step(s) for "${plan.goal}"`,
        "Implement",
      );
      if (choice === "Implement") await execute("tokamak.implement", { plan_id: plan.plan_id });
    } catch (error) {
      report(error);
    }
  };

  const debouncer = new Debouncer(200, forward);
  context.subscriptions.push(
    output,
    serverLog,
    status.item,
    { dispose: () => debouncer.dispose() },
    vscode.window.registerWebviewViewProvider(PANEL_VIEW, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(CHANGE_SCHEME, panel),
    vscode.languages.onDidChangeDiagnostics((event) => {
      if (!vscode.workspace.getConfiguration("tokamak").get<boolean>("forwardDiagnostics", true)) return;
      for (const uri of event.uris) debouncer.schedule(uri.toString());
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      output.appendLine("workspace trusted: restarting Tokamak so it uses the project's own settings");
      void client?.restart();
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("tokamak")) {
        if (!vscode.workspace.isTrusted && restrictedChanged(event)) {
          void vscode.window.showWarningMessage(
            "Tokamak: this folder is in Restricted Mode, so tokamak.server.path, tokamak.model.baseUrl and tokamak.model.provider are taken from your User settings only, and a Workspace value is ignored until you trust the folder.",
          );
        }
        void client?.sendNotification("workspace/didChangeConfiguration", { settings: { tokamak: settings() } });
      }
    }),
    vscode.commands.registerCommand("tokamak.client.fixFile", async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor) return void vscode.window.showWarningMessage("Tokamak: open a file to fix first");
      try {
        await execute("tokamak.fix", { uri: editor.document.uri.toString() });
      } catch (error) {
        report(error);
      }
    }),
    planView,
    vscode.workspace.registerTextDocumentContentProvider(APPROVAL_SCHEME, approvals),
    vscode.commands.registerCommand("tokamak.client.approve", () => approvals.answer(undefined, true)),
    vscode.commands.registerCommand("tokamak.client.reject", () => approvals.answer(undefined, false)),
    vscode.commands.registerCommand("tokamak.client.plan", () => makePlan(here())),
    // "Plan with Tokamak…" in the code-action menu: the server's action names this command
    vscode.commands.registerCommand("tokamak.askGoal", (where?: { uri?: string; range?: unknown }) =>
      makePlan(where ?? here()),
    ),
    vscode.commands.registerCommand("tokamak.client.openPanel", () => panel.reveal(true)),
    vscode.commands.registerCommand("tokamak.client.run", async () => {
      const goal = await askGoal("What should Tokamak do?");
      if (!goal) return;
      // the panel carries the run: the conversation, the plan, the approvals
      await panel.reveal();
      await panel.send(goal, { selection: !(vscode.window.activeTextEditor?.selection.isEmpty ?? true) });
    }),
    vscode.commands.registerCommand("tokamak.client.implement", async () => {
      const plan = planTree.book.current();
      if (!plan) return void vscode.window.showWarningMessage("Tokamak: no plan yet; make one with Tokamak: Plan…");
      try {
        await execute("tokamak.implement", { plan_id: plan.plan_id });
        showPlan();
      } catch (error) {
        report(error);
      }
    }),
    vscode.commands.registerCommand("tokamak.client.cancel", async () => {
      try {
        const result = (await execute("tokamak.cancel", {})) as { cancelled: string[] };
        void vscode.window.showInformationMessage(
          result.cancelled.length > 0 ? `Tokamak: cancelling ${result.cancelled.join(", ")}` : "Tokamak: no run is going on",
        );
      } catch (error) {
        report(error);
      }
    }),
    vscode.commands.registerCommand("tokamak.client.status", async () => {
      try {
        const answer = (await execute("tokamak.status", {})) as Record<string, unknown>;
        const items = statusItems(answer);
        const picked = await vscode.window.showQuickPick(
          items.map((item) => ({ label: item.label, description: item.description, detail: item.detail })),
          { title: "Tokamak status", placeHolder: "Pick Model or Show logs for more" },
        );
        if (picked?.label.startsWith("$(server)")) void vscode.commands.executeCommand("tokamak.client.checkModel");
        else if (picked) output.show(true);
      } catch (error) {
        report(error);
      }
    }),
    vscode.commands.registerCommand("tokamak.client.rollback", async () => {
      try {
        const checkpoints = (await execute("tokamak.checkpoints", {})) as Record<string, unknown>[];
        if (!Array.isArray(checkpoints) || checkpoints.length === 0) {
          return void vscode.window.showInformationMessage("Tokamak: no run has left a checkpoint in this workspace yet");
        }
        const picked = await vscode.window.showQuickPick(checkpointItems(checkpoints), {
          title: "Roll back a Tokamak run",
          placeHolder: "The run to undo: its files go back to how they were before it",
        });
        if (!picked) return;
        await execute("tokamak.rollback", { checkpoint: picked.id });
      } catch (error) {
        report(error);
      }
    }),
    vscode.commands.registerCommand("tokamak.client.checkModel", async () => {
      try {
        const result = (await execute("tokamak.checkModel", {})) as Record<string, unknown>;
        const text = result.ok
          ? `model ${result.model} at ${result.endpoint} answered in ${result.latency_ms} ms`
          : `model not reachable: ${noModelHint(String(result.error))}`;
        void (result.ok ? vscode.window.showInformationMessage : vscode.window.showWarningMessage)(`Tokamak: ${text}`);
      } catch (error) {
        report(error);
      }
    }),
    vscode.commands.registerCommand("tokamak.client.showLogs", () => output.show(true)),
  );
  try {
    await client.start();
    void panel.load();
  } catch (error) {
    output.appendLine(`cannot start ${command}: ${error}`);
    void vscode.window.showErrorMessage(
      `Tokamak could not start \`${command}\`: set tokamak.server.path, or put tokamak on PATH (Tokamak: Show logs)`,
    );
  }
}

/** Whether a setting that Restricted Mode takes from the User settings only changed. */
function restrictedChanged(event: vscode.ConfigurationChangeEvent): boolean {
  return ["tokamak.server.path", "tokamak.model.baseUrl", "tokamak.model.provider"].some((key) => {
    if (!event.affectsConfiguration(key)) return false;
    const inspected = vscode.workspace.getConfiguration().inspect(key);
    return inspected?.workspaceValue !== undefined || inspected?.workspaceFolderValue !== undefined;
  });
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
