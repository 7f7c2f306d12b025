// Tokamak for VS Code: starts the `tokamak` language server, forwards the diagnostics of
// other extensions to it, sends `tokamak.*` settings, adds palette commands (Fix file,
// Plan…, Run…, Implement plan, Cancel, …) and the *Tokamak Plan* tree view, kept current from
// `tokamak/planUpdated`. Code actions ("Fix with Tokamak", "Implement with Tokamak") and
// progress come from the server and appear natively; "Plan with Tokamak…" asks for the goal
// here (`tokamak.askGoal`). Each approval the agent asks for (`tokamak/approvalRequested`)
// opens a diff editor — the file now against the proposed text — with Approve and Reject in a
// notification and in the editor's title bar; a rejection asks for the reason the agent sees.
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
  initializationOptions,
  lspSeverity,
  othersOnly,
  serverCommand,
  toServerSettings,
} from "./logic";

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
  void vscode.window.showErrorMessage(`Tokamak: ${message}`);
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

/** Tells the server this extension shows approvals itself (no `window/showMessageRequest`). */
const approvalFeature = {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, tokamak: { approvals: true } };
  },
  initialize(): void {},
  getState(): { kind: "static" } {
    return { kind: "static" };
  },
  clear(): void {},
};

/** The approvals waiting, shown as diff editors with Approve / Reject. */
class Approvals implements vscode.TextDocumentContentProvider {
  readonly book = new ApprovalBook();

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.book.text(uri.path) ?? "";
  }

  async ask(approval: Approval): Promise<void> {
    if (!this.book.add(approval)) return;
    output.appendLine(`approval ${approval.id} (${approval.run_id}): ${approval.summary}`);
    const paths = approvalPaths(approval);
    if (paths) {
      const uri = (path: string) => vscode.Uri.from({ scheme: APPROVAL_SCHEME, path });
      await vscode.commands.executeCommand("vscode.diff", uri(paths.before), uri(paths.after), approvalTitle(approval), {
        preview: false,
      });
    }
    const detail = paths ? "" : approval.diff ? `\n${approval.diff}` : "";
    const choice = await vscode.window.showInformationMessage(
      `Tokamak wants to ${approval.summary}. (${approval.id})${detail}`,
      "Approve",
      "Reject",
    );
    if (!this.book.get(approval.id)) return; // answered meanwhile (title bar, palette) or the run ended
    if (choice === "Approve") await this.answer(approval.id, true);
    else if (choice === "Reject") await this.answer(approval.id, false);
  }

  /** Answers `id` (the diff editor's, else the oldest waiting, when none is named). */
  async answer(id: string | undefined, approve: boolean): Promise<void> {
    const approval = id ? this.book.get(id) : this.current() ?? this.book.oldest();
    if (!approval) return void vscode.window.showWarningMessage("Tokamak: no approval is waiting");
    let reason: string | undefined;
    if (!approve) {
      reason = await vscode.window.showInputBox({
        prompt: `Why not ${approval.summary}? Tokamak's agent reads your reason.`,
        placeHolder: "e.g. put it in docs/ instead",
        ignoreFocusOut: true,
      });
      if (reason === undefined) return; // <Esc>: still waiting
    }
    try {
      await execute(approve ? "tokamak.approve" : "tokamak.reject", approve ? { id: approval.id } : { id: approval.id, reason });
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

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Tokamak");
  const configured = vscode.workspace.getConfiguration("tokamak").get<string>("server.path") ?? "";
  const bundled = path.join(context.extensionPath, "bin", process.platform === "win32" ? "tokamak.exe" : "tokamak");
  const command = serverCommand(configured, bundled, fs.existsSync);
  output.appendLine(`starting ${command} lsp`);
  const serverOptions: ServerOptions = { command, args: ["lsp"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: SELECTOR,
    outputChannel: output,
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
  client.onNotification("tokamak/approvalRequested", (approval: Approval) => void approvals.ask(approval));
  client.onNotification("tokamak/runFinished", (result: { run_id: string; exit_reason: string; summary: string }) => {
    output.appendLine(`run finished: ${result.exit_reason}: ${result.summary}`);
    for (const approval of approvals.book.ofRun(result.run_id)) approvals.forget(approval.id);
  });
  const planTree = new PlanTree();
  const planView = vscode.window.createTreeView("tokamakPlan", { treeDataProvider: planTree });
  client.onNotification("tokamak/planUpdated", (plan: Plan) => {
    planTree.update(plan);
    planView.message = plan.goal;
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
    { dispose: () => debouncer.dispose() },
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
    vscode.commands.registerCommand("tokamak.client.run", async () => {
      const goal = await askGoal("What should Tokamak do?");
      if (!goal) return;
      try {
        const started = (await execute("tokamak.run", { goal, ...here() })) as { run_id: string };
        output.appendLine(`run ${started.run_id}: ${goal}`);
        showPlan();
      } catch (error) {
        report(error);
      }
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
        void vscode.window.showInformationMessage(`Tokamak: cancelled ${result.cancelled.length} run(s)`);
      } catch (error) {
        report(error);
      }
    }),
    vscode.commands.registerCommand("tokamak.client.status", async () => {
      try {
        const status = await execute("tokamak.status", {});
        output.appendLine(JSON.stringify(status, null, 2));
        void vscode.window.showInformationMessage(`Tokamak: ${JSON.stringify(status)}`);
      } catch (error) {
        report(error);
      }
    }),
    vscode.commands.registerCommand("tokamak.client.checkModel", async () => {
      try {
        const result = (await execute("tokamak.checkModel", {})) as Record<string, unknown>;
        const text = result.ok
          ? `model ${result.model} at ${result.endpoint} answered in ${result.latency_ms} ms`
          : `model not reachable: ${result.error}`;
        void (result.ok ? vscode.window.showInformationMessage : vscode.window.showWarningMessage)(`Tokamak: ${text}`);
      } catch (error) {
        report(error);
      }
    }),
    vscode.commands.registerCommand("tokamak.client.showLogs", () => output.show(true)),
  );
  try {
    await client.start();
  } catch (error) {
    output.appendLine(`cannot start ${command}: ${error}`);
    void vscode.window.showErrorMessage(
      `Tokamak could not start \`${command}\`: set tokamak.server.path, or put tokamak on PATH (Tokamak: Show logs)`,
    );
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
