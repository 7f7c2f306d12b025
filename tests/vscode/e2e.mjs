// End to end in a real VS Code: code-server serves it on 127.0.0.1, headless Chromium
// (Debian's, driven by playwright-core) opens a broken file, runs "Tokamak: Fix file" from
// the command palette and reads the editor's text. Driven by tests/it/editor_vscode.rs, which
// passes everything in the environment and reads the JSON report this prints last.
import { createRequire } from "module";

const require = createRequire(process.env.E2E_PLAYWRIGHT);
const { chromium } = require("playwright-core");

const url = process.env.E2E_URL;
const file = process.env.E2E_FILE;
const expected = process.env.E2E_EXPECTED;
const report = { steps: [] };

function done(ok, why) {
  report.ok = ok;
  report.why = why;
  console.log(JSON.stringify(report));
  process.exit(ok ? 0 : 1);
}

// Answers the approval toast `toast` as E2E_ANSWERS says for the `n`-th question: `approve`
// (its button), `reject:<reason>` (its button, then the reason typed into the input box) or
// `palette` ("Tokamak: Approve" from the command palette). Records what was shown.
async function answerApproval(page, toast, n) {
  const answers = (process.env.E2E_ANSWERS ?? "").split(",");
  const answer = answers[n] ?? "approve";
  const message = await toast.locator(".notification-list-item-message").first().innerText();
  const diff = page.locator(".monaco-diff-editor").first();
  let modified = "";
  if (await diff.isVisible()) {
    modified = (await diff.locator(".editor.modified .view-lines").first().innerText()).replace(/\u00a0/g, " ");
  }
  const tab = await page.locator(".tabs-container .tab.active").first().getAttribute("aria-label");
  report.approvals.push({ message, diff_editor: modified !== "", modified, tab, answer });
  if (answer === "palette") {
    await page.keyboard.press("F1");
    await page.waitForSelector(".quick-input-widget input", { timeout: 20000 });
    await page.keyboard.type("Tokamak: Approve");
    await page.waitForTimeout(1000);
    await page.keyboard.press("Enter");
  } else {
    const button = answer === "approve" ? "Approve" : "Reject";
    await toast.locator(".monaco-button", { hasText: button }).first().click();
    if (answer.startsWith("reject:")) {
      await page.waitForSelector(".quick-input-widget input", { timeout: 20000 });
      await page.waitForTimeout(300);
      await page.keyboard.type(answer.slice("reject:".length));
      await page.keyboard.press("Enter");
    }
  }
}

// "Tokamak: Run…" from the palette on E2E_PLAN_FILE with the goal typed into the input box;
// each approval is answered (answerApproval); the *Tokamak Plan* view shows the steps as
// their statuses change, and the edit lands in the editor.
async function planAndRun(page, goal) {
  const file = process.env.E2E_PLAN_FILE;
  const entry = page.locator(`.explorer-folders-view .monaco-list-row[aria-label="${file}"]`).first();
  await entry.waitFor({ timeout: 30000 });
  await entry.click();
  await page.waitForFunction(
    (name) => document.querySelector(".tabs-container .tab.active")?.getAttribute("aria-label")?.startsWith(name),
    file,
    { timeout: 20000 },
  );
  report.steps.push("plan file");
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget input", { timeout: 20000 });
  await page.keyboard.type("Tokamak: Run…");
  await page.waitForTimeout(1000);
  await page.keyboard.press("Enter");
  // the goal's input box
  await page.waitForSelector(".quick-input-widget input", { timeout: 20000 });
  await page.waitForTimeout(500);
  await page.keyboard.type(goal);
  await page.keyboard.press("Enter");
  report.steps.push("goal");
  const seen = [];
  report.approvals = [];
  const answered = new Set();
  const expected = process.env.E2E_PLAN_EXPECTED;
  const deadline = Date.now() + 90000;
  let finished = false;
  let text = "";
  while (Date.now() < deadline) {
    const toasts = page.locator(".notifications-toasts .notification-toast", { hasText: "Tokamak wants to" });
    for (let i = 0; i < (await toasts.count()); i++) {
      const toast = toasts.nth(i);
      const id = /\((a\d+)\)/.exec(await toast.innerText())?.[1];
      if (id && !answered.has(id)) {
        answered.add(id);
        await answerApproval(page, toast, answered.size - 1);
      }
    }
    const rows = await page.locator('[role="treeitem"]').allInnerTexts();
    for (const row of rows.map((r) => r.split("\n")[0].trim())) {
      if (/^[○⚡✓✗] \d+\./u.test(row) && seen[seen.length - 1] !== row && !seen.includes(row)) seen.push(row);
    }
    text = (await page.locator(".monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");
    const done = rows.filter((r) => r.startsWith("✓ ")).length;
    if (done >= Number(process.env.E2E_PLAN_STEPS) && text.includes(expected)) {
      finished = true;
      break;
    }
    await page.waitForTimeout(100);
  }
  report.plan_rows = seen;
  report.plan_text = text;
  if (!finished) {
    await page.screenshot({ path: process.env.E2E_SCREENSHOT ?? "e2e.png" });
    done(false, "the plan view never showed every step done with the edit in the editor");
  }
  report.steps.push("planned and done");
}

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector(".monaco-workbench", { timeout: 60000 });
  report.steps.push("workbench");
  // open the file from the explorer
  const entry = page.locator(`.explorer-folders-view .monaco-list-row[aria-label="${file}"]`).first();
  try {
    await entry.waitFor({ timeout: 30000 });
  } catch (error) {
    await page.screenshot({ path: process.env.E2E_SCREENSHOT ?? "e2e.png" });
    throw error;
  }
  await entry.click();
  await page.waitForSelector(".monaco-editor .view-lines", { timeout: 20000 });
  report.steps.push("opened");
  const text = async () =>
    (await page.locator(".monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");
  // the server is up when its diagnostic shows
  await page.waitForSelector(".monaco-editor .squiggly-error", { timeout: 60000 });
  report.steps.push("diagnostic");
  // the command palette
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget input", { timeout: 20000 });
  await page.keyboard.type("Tokamak: Fix file");
  await page.waitForTimeout(1000);
  await page.keyboard.press("Enter");
  report.steps.push("command");
  const deadline = Date.now() + 60000;
  let last = "";
  while (Date.now() < deadline) {
    last = await text();
    if (last.includes(expected)) break;
    await page.waitForTimeout(250);
  }
  report.text = last;
  if (!last.includes(expected)) done(false, "the editor never showed the fix");
  // and the squiggle goes away
  await page.waitForSelector(".monaco-editor .squiggly-error", { state: "detached", timeout: 30000 });
  report.steps.push("clean");
  // the run's summary, as the notification that ends it says
  const finished = page.locator(".notifications-toasts .notification-toast", { hasText: "Tokamak: mean.py" });
  try {
    await finished.first().waitFor({ timeout: 20000 });
    report.fix_message = await finished.first().innerText();
  } catch {
    report.fix_message = null;
  }
  const goal = process.env.E2E_GOAL;
  if (goal) await planAndRun(page, goal);
  done(true);
} catch (error) {
  done(false, String(error));
} finally {
  await browser.close();
}
