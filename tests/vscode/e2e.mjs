// End to end in a real VS Code: code-server serves it on 127.0.0.1, headless Chromium
// (Debian's, driven by playwright-core) opens a broken file, runs "Tokamak: Fix file" from
// the command palette and reads the editor's text; then drives the Tokamak panel: a goal typed
// in, approvals answered in it, a follow-up question, "Undo this run"; screenshots kept. Driven by tests/it/editor_vscode.rs, which
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

// Runs `title` from the command palette, once the palette's focused row is that command (a
// loaded machine filters late, and Enter would run whatever was on top).
async function palette(page, title) {
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget input", { timeout: 20000 });
  await page.keyboard.type(title);
  await page.waitForFunction(
    (wanted) => {
      const row = document.querySelector(".quick-input-list .monaco-list-row.focused");
      return row !== null && (row.getAttribute("aria-label") ?? row.textContent ?? "").includes(wanted);
    },
    title,
    { timeout: 20000 },
  );
  await page.keyboard.press("Enter");
}

// The panel's webview: code-server nests it in two iframes.
function panelFrame(page) {
  return page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
}

// Answers the approval waiting in the panel as E2E_ANSWERS says for the `n`-th question:
// `approve` (its button), `reject:<reason>` (its button, the reason typed inline, Enter) or
// `palette` ("Tokamak: Approve" from the command palette). Records what was shown.
async function answerInPanel(page, frame, card, n) {
  const answers = (process.env.E2E_ANSWERS ?? "").split(",");
  const answer = answers[n] ?? "approve";
  const message = (await card.locator(".line").first().innerText()).trim();
  const diff = page.locator(".monaco-diff-editor").first();
  let modified = "";
  // the diff editor opens beside the question
  for (let i = 0; i < 20 && !modified; i++) {
    if (await diff.isVisible()) modified = (await diff.locator(".editor.modified .view-lines").first().innerText()).replace(/\u00a0/g, " ");
    if (!modified) await page.waitForTimeout(100);
  }
  const tab = await page.locator(".tabs-container .tab.active").first().getAttribute("aria-label");
  report.approvals.push({ message, diff_editor: modified !== "", modified, tab, answer, inline_diff: await card.locator("pre.diff").count() });
  if (answer === "palette") {
    await palette(page, "Tokamak: Approve");
  } else if (answer === "approve") {
    await card.locator("button.approve").click();
  } else {
    await card.locator("button.reject").click();
    const reason = card.locator("input.reason");
    await reason.waitFor({ timeout: 5000 });
    await reason.fill(answer.slice("reject:".length));
    await reason.press("Enter");
  }
}

// The seed scenario typed into the Tokamak panel: the goal goes in the panel's input; the
// plan on top follows the steps; each approval is answered in the panel; the ending says done
// and the edit is in the editor. Then a follow-up question in the same conversation, and
// "Undo this run".
async function panelRun(page, goal) {
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
  await palette(page, "Tokamak: Open agent panel");
  const frame = panelFrame(page);
  const input = frame.locator("#input");
  await input.waitFor({ timeout: 30000 });
  report.steps.push("panel");
  await input.click();
  await input.fill(goal);
  const typedAt = Date.now();
  await input.press("Enter");
  report.steps.push("goal");
  const seen = [];
  const status = [];
  report.approvals = [];
  const answered = new Set();
  const expected = process.env.E2E_PLAN_EXPECTED;
  const deadline = Date.now() + 90000;
  let finished = false;
  let text = "";
  let shot = false;
  while (Date.now() < deadline) {
    // the waiting cards' ids read at once: a card answered a moment ago (from the palette, say)
    // stops waiting between a count and a read of its nth, and a read then waits for a card
    // that is gone
    const ids = await frame.locator(".approval.waiting").evaluateAll((cards) => cards.map((card) => card.getAttribute("data-id")));
    for (const id of ids) {
      if (id && !answered.has(id)) {
        const card = frame.locator(`.approval.waiting[data-id="${id}"]`);
        answered.add(id);
        if (!shot) {
          // the panel as a user sees it: the plan running, a question waiting
          await page.screenshot({ path: process.env.E2E_PANEL_SHOT_APPROVAL });
          shot = true;
        }
        await answerInPanel(page, frame, card, answered.size - 1);
      }
    }
    const rows = (await frame.locator("#plan .step").allInnerTexts()).map((r) => r.split("\n")[0].replace(/\s+/g, " ").trim());
    if (rows.length > 0 && report.first_plan_line_ms === undefined) report.first_plan_line_ms = Date.now() - typedAt;
    for (const row of rows) {
      if (/^[○⚡✓✗] ?\d+\./u.test(row) && !seen.includes(row)) seen.push(row);
    }
    for (const item of await page.locator(".statusbar-item").allInnerTexts()) {
      const said = item.trim();
      if (said.includes("Tokamak") && !status.includes(said)) status.push(said);
    }
    text = (await page.locator(".monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");
    const ending = frame.locator(".turn").last().locator(".ending");
    if ((await ending.count()) > 0 && text.includes(expected)) {
      report.ending = (await ending.innerText()).trim();
      report.exit = await ending.getAttribute("data-exit");
      finished = true;
      break;
    }
    await page.waitForTimeout(100);
  }
  // the plan as the ending left it
  for (const row of (await frame.locator("#plan .step").allInnerTexts()).map((r) => r.split("\n")[0].replace(/\s+/g, " ").trim())) {
    if (!seen.includes(row)) seen.push(row);
  }
  report.plan_rows = seen;
  report.plan_text = text;
  report.status_bar = status;
  report.said = (await frame.locator(".turn").last().locator(".said").allInnerTexts()).join("\n");
  report.tools = await frame.locator(".turn").last().locator(".tool .line").allInnerTexts();
  if (!finished) {
    await page.screenshot({ path: process.env.E2E_SCREENSHOT ?? "e2e.png" });
    done(false, "the panel never showed the run's ending with the edit in the editor");
  }
  report.steps.push("planned and done");
  report.toasts_left = await page.locator(".notifications-toasts .notification-toast", { hasText: "wants to" }).count();
  await page.screenshot({ path: process.env.E2E_PANEL_SHOT });

  // a follow-up in the same conversation: a question, answered without a plan
  const question = process.env.E2E_FOLLOW_UP;
  if (question) {
    // typed as a person types it, an @-mention taken from the list with Enter
    await input.click();
    const at = question.indexOf("@");
    await input.pressSequentially(at >= 0 ? question.slice(0, question.indexOf(" ", at) < 0 ? undefined : question.indexOf(" ", at)) : question, { delay: 20 });
    if (at >= 0) {
      const word = question.slice(at + 1, question.indexOf(" ", at) < 0 ? undefined : question.indexOf(" ", at));
      const option = frame.locator(".mentions:not([hidden]) button").first();
      await option.waitFor({ timeout: 20000 });
      // the list for the whole word typed, not for its first letters
      for (let i = 0; i < 100 && !(await option.innerText()).includes(word); i++) await page.waitForTimeout(100);
      report.mention_offered = await option.innerText();
      await input.press("Enter");
      const rest = question.indexOf(" ", at) < 0 ? "" : question.slice(question.indexOf(" ", at) + 1);
      if (rest) await input.pressSequentially(rest, { delay: 20 });
      report.typed = await input.inputValue();
    }
    await input.press("Enter");
    const turn = frame.locator(".turn").nth(2);
    await turn.locator(".ending").waitFor({ timeout: 60000 });
    report.follow_up = {
      asked: (await turn.locator(".asked").innerText()).trim(),
      said: (await turn.locator(".said").allInnerTexts()).join("\n"),
      ending: (await turn.locator(".ending").innerText()).trim(),
    };
    report.steps.push("follow-up");
  }
  // undo the task run from its ending
  const undo = frame.locator(".turn").nth(1).locator("button.undo");
  if ((await undo.count()) > 0) {
    await undo.click();
    const undone = frame.locator(".turn").nth(1).locator(".undone");
    await undone.waitFor({ timeout: 30000 });
    report.undone = (await undone.innerText()).trim();
    await page.waitForTimeout(500);
    report.after_undo = (await page.locator(".monaco-editor .view-lines").first().innerText()).replace(/\u00a0/g, " ");
    report.steps.push("undone");
  }
  await page.screenshot({ path: process.env.E2E_PANEL_SHOT_END });
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
  await palette(page, "Tokamak: Fix file");
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
  const finished = page.locator(".notifications-toasts .notification-toast", { hasText: "Tokamak clean: mean.py" });
  try {
    await finished.first().waitFor({ timeout: 20000 });
    report.fix_message = await finished.first().innerText();
  } catch {
    report.fix_message = null;
  }
  const goal = process.env.E2E_GOAL;
  if (goal) await panelRun(page, goal);
  done(true);
} catch (error) {
  done(false, String(error));
} finally {
  await browser.close();
}
