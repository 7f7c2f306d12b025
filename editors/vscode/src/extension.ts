// Tokamak for VS Code: starts the `tokamak` language server, forwards the diagnostics of
// other extensions to it, sends `tokamak.*` settings, and adds palette commands. Code
// actions ("Fix with Tokamak") and progress come from the server and appear natively.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";
import {
  Debouncer,
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
  client.onNotification("tokamak/runFinished", (result: { exit_reason: string; summary: string }) => {
    output.appendLine(`run finished: ${result.exit_reason}: ${result.summary}`);
  });

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
