// The Tokamak panel's webview: draws the state the extension posts (the plan on top, the
// conversation below, the composer at the bottom) and posts back what the user does. Every
// text from the model or the workspace goes in as text (textContent), never as markup.
// @ts-check
(function () {
  // @ts-ignore acquireVsCodeApi is the webview's own
  const vscode = acquireVsCodeApi();
  const app = /** @type {HTMLElement} */ (document.getElementById("app"));
  const GLYPHS = { pending: "○", running: "⚡", done: "✓", failed: "✗", rejected: "✗", nothing_changed: "✗", not_applied: "✗", cancelled: "⊘" };

  /** @param {string} tag @param {Record<string, any>} [props] @param {(Node|string|null|undefined|false)[]} [children] */
  function h(tag, props, children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(props ?? {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children ?? []) {
      if (child === null || child === undefined || child === false) continue;
      el.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return el;
  }

  // ----- the frame: toolbar, plan, log, composer (the composer is made once: what is typed stays)

  const tokens = h("span", { class: "tokens", title: "Tokens in the model's context after its latest reply" });
  const toolbar = h("div", { class: "toolbar" }, [
    h("span", { class: "title", text: "Tokamak" }),
    tokens,
    h("button", { class: "link", title: "Fold the conversation so far into one line per request", onclick: () => vscode.postMessage({ type: "compact" }), text: "Compact" }),
    h("button", { class: "link", id: "new", title: "Start a new conversation: earlier requests are forgotten", onclick: () => vscode.postMessage({ type: "newConversation" }), text: "New conversation" }),
  ]);
  const plan = h("section", { id: "plan", "aria-label": "Plan" });
  const log = h("section", { id: "log", "aria-label": "Conversation", "aria-live": "polite" });

  const input = /** @type {HTMLTextAreaElement} */ (
    h("textarea", {
      id: "input",
      rows: "3",
      "aria-label": "Ask Tokamak or describe a task",
      placeholder: "Ask a question or describe a task — @ mentions a file · Enter sends, Shift+Enter a new line",
    })
  );
  const mentions = h("div", { class: "mentions", role: "listbox", hidden: true });
  const selectionChip = /** @type {HTMLInputElement} */ (h("input", { type: "checkbox", id: "with-selection" }));
  const problemsChip = /** @type {HTMLInputElement} */ (h("input", { type: "checkbox", id: "with-problems" }));
  const selectionLabel = h("label", { for: "with-selection", title: "Send the active editor's selection with the request" }, [selectionChip, " @selection"]);
  const here = h("span", { class: "here" });
  const role = /** @type {HTMLSelectElement} */ (h("select", { id: "role", "aria-label": "Role", title: "The role the agent acts in" }));
  const approval = /** @type {HTMLSelectElement} */ (h("select", { id: "approval", "aria-label": "Approval", title: "What the agent asks before it acts" }));
  const model = /** @type {HTMLSelectElement} */ (h("select", { id: "model", "aria-label": "Model", title: "The model (tokamak.model.model)" }));
  const send = h("button", { id: "send", class: "primary", onclick: () => submit(), text: "Send" });
  const stop = h("button", { id: "stop", class: "danger", hidden: true, onclick: () => vscode.postMessage({ type: "stop" }), text: "Stop" });
  const composer = h("footer", { id: "composer" }, [
    mentions,
    input,
    h("div", { class: "chips" }, [selectionLabel, h("label", { for: "with-problems", title: "Send the problems the editor shows with the request" }, [problemsChip, " @problems"]), here]),
    h("div", { class: "row" }, [role, approval, model, h("span", { class: "grow" }), stop, send]),
  ]);
  app.append(toolbar, plan, log, composer);

  for (const [select, picker] of [[role, "role"], [approval, "approval"], [model, "model"]]) {
    const s = /** @type {HTMLSelectElement} */ (select);
    s.addEventListener("change", () => vscode.postMessage({ type: "pick", picker, value: s.value }));
  }

  /** @type {string[]} */
  let mentioned = [];
  function submit() {
    const text = input.value;
    if (!text.trim() || !stop.hidden) return;
    vscode.postMessage({ type: "send", text, mentions: mentioned, selection: selectionChip.checked, problems: problemsChip.checked });
    input.value = "";
    mentioned = [];
    selectionChip.checked = false;
    problemsChip.checked = false;
    mentions.hidden = true;
  }

  /** The `@word` being typed at the caret, if any. */
  function mentionAtCaret() {
    const before = input.value.slice(0, input.selectionStart);
    const match = /(?:^|\s)@([^\s@]*)$/.exec(before);
    return match ? match[1] : undefined;
  }

  input.addEventListener("keydown", (event) => {
    if (!mentions.hidden && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      const items = [...mentions.querySelectorAll("button")];
      if (items.length === 0) return;
      event.preventDefault();
      (event.key === "ArrowDown" ? items[0] : items[items.length - 1]).focus();
      return;
    }
    if (event.key === "Escape" && !mentions.hidden) {
      mentions.hidden = true;
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!mentions.hidden) {
        const first = mentions.querySelector("button");
        if (first) return first.click();
      }
      submit();
    }
  });
  input.addEventListener("input", () => {
    const query = mentionAtCaret();
    // the list for what was typed before is gone until the one for what is typed now comes
    mentions.hidden = true;
    if (query !== undefined) vscode.postMessage({ type: "mention", query });
  });

  /** @param {string} path */
  function takeMention(path) {
    const caret = input.selectionStart;
    const before = input.value.slice(0, caret).replace(/@([^\s@]*)$/, `@${path} `);
    input.value = before + input.value.slice(caret);
    input.selectionStart = input.selectionEnd = before.length;
    if (!mentioned.includes(path)) mentioned.push(path);
    mentions.hidden = true;
    input.focus();
  }

  /** @param {string[]} files */
  function showMentions(files) {
    mentions.replaceChildren(
      ...files.map((file, n) =>
        h(
          "button",
          {
            class: "mention",
            role: "option",
            onclick: () => takeMention(file),
            onkeydown: (/** @type {KeyboardEvent} */ event) => {
              const items = [...mentions.querySelectorAll("button")];
              if (event.key === "ArrowDown") /** @type {HTMLElement} */ (items[(n + 1) % items.length]).focus();
              else if (event.key === "ArrowUp") /** @type {HTMLElement} */ (items[(n - 1 + items.length) % items.length]).focus();
              else if (event.key === "Escape") {
                mentions.hidden = true;
                input.focus();
              } else return;
              event.preventDefault();
            },
          },
          [file],
        ),
      ),
    );
    mentions.hidden = files.length === 0 || mentionAtCaret() === undefined;
  }

  // ----- drawing the state

  /** @param {HTMLSelectElement} select @param {{id: string, name: string, description?: string}[]} options @param {string} value */
  function fill(select, options, value) {
    const key = JSON.stringify(options) + value;
    if (select.dataset.key === key) return;
    select.dataset.key = key;
    select.replaceChildren(...options.map((o) => h("option", { value: o.id, title: o.description, selected: o.id === value }, [o.name])));
    select.value = value;
  }

  /** @param {string} text */
  function prose(text) {
    // fenced code as code, the rest as paragraphs
    const parts = text.split(/```[^\n]*\n?/);
    return h(
      "div",
      { class: "prose" },
      parts.map((part, n) => (n % 2 === 1 ? h("pre", { class: "code" }, [part.replace(/\n$/, "")]) : part.trim() ? h("p", {}, [part.trim()]) : null)),
    );
  }

  /** @param {string} diff */
  function diffView(diff) {
    const lines = diff.split("\n").filter((l) => !l.startsWith("---") && !l.startsWith("+++"));
    const shown = lines.slice(0, 200);
    return h("pre", { class: "diff" }, [
      ...shown.map((line) => h("span", { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "ctx" }, [line + "\n"])),
      lines.length > shown.length ? h("span", { class: "hunk" }, [`… ${lines.length - shown.length} more line(s): open the diff\n`]) : null,
    ]);
  }

  /** @param {any} check */
  function checkView(check) {
    const found = [...(check.introduced ?? []), ...(check.warned ?? [])];
    const tests = check.tests;
    const ok = (check.introduced ?? []).length === 0 && (!tests || tests.passed || !tests.ran);
    return h("div", { class: `check ${ok ? "ok" : "bad"}` }, [
      h("div", { class: "line" }, [h("span", { class: "icon", text: ok ? "✓" : "✗" }), check.step ? `Step ${check.step} checked: ${check.summary}` : `Checked: ${check.summary}`]),
      found.length > 0 ? h("ul", {}, found.map((f) => h("li", { class: f.severity }, [`${f.path}: [${f.source}${f.code ? " " + f.code : ""}] ${f.message}`]))) : null,
      tests && tests.output ? h("details", {}, [h("summary", { text: tests.ran ? (tests.passed ? "The tests pass" : "The tests fail") : "The tests did not run" }), h("pre", { class: "output" }, [tests.output])]) : null,
    ]);
  }

  /** @param {any} item @param {any} turn */
  function itemView(item, turn) {
    switch (item.kind) {
      case "said":
        return h("div", { class: "said" }, [prose(item.text)]);
      case "thought":
        return h("details", { class: "thought" }, [h("summary", { text: "Thinking" }), h("pre", { class: "output" }, [item.text])]);
      case "error":
        return h("div", { class: "error", role: "alert" }, [item.text]);
      case "checked":
        return checkView(item);
      case "approval": {
        const waiting = item.state === "waiting";
        // what is typed survives a redraw (the run's other events keep coming)
        const typed = reasons.get(item.id);
        const reason = /** @type {HTMLInputElement} */ (h("input", { class: "reason", placeholder: "Why not? The agent reads your reason", "aria-label": "Reason for rejecting", hidden: typed === undefined }));
        reason.value = typed ?? "";
        reason.addEventListener("input", () => reasons.set(item.id, reason.value));
        reason.addEventListener("focus", () => (focusedReason = item.id));
        reason.addEventListener("blur", () => (focusedReason = focusedReason === item.id ? undefined : focusedReason));
        if (focusedReason === item.id) refocus = reason;
        const reject = () => {
          if (reason.hidden) {
            reason.hidden = false;
            reasons.set(item.id, "");
            reason.focus();
            return;
          }
          vscode.postMessage({ type: "reject", id: item.id, reason: reason.value });
        };
        reason.addEventListener("keydown", (event) => {
          if (event.key === "Enter") vscode.postMessage({ type: "reject", id: item.id, reason: reason.value });
          if (event.key === "Escape") {
            reason.hidden = true;
            reasons.delete(item.id);
          }
        });
        const said = { waiting: "Waiting for you", approved: "Approved", rejected: `Rejected${item.reason ? `: ${item.reason}` : ""}`, gone: "No longer asked (the run ended)" };
        return h("div", { class: `approval ${item.state}`, "data-id": item.id }, [
          h("div", { class: "line" }, [h("span", { class: "icon", text: waiting ? "?" : item.state === "approved" ? "✓" : "✗" }), `Tokamak wants to ${item.summary}`]),
          item.diff ? diffView(item.diff) : null,
          waiting
            ? h("div", { class: "buttons" }, [
                h("button", { class: "primary approve", onclick: () => vscode.postMessage({ type: "approve", id: item.id }), text: "Approve" }),
                h("button", { class: "reject", onclick: reject, text: "Reject…" }),
                reason,
              ])
            : h("div", { class: "answer", text: said[item.state] ?? item.state }),
        ]);
      }
      case "tool": {
        const icon = item.state === "running" ? "…" : item.state === "ok" ? "✓" : "✗";
        const files = (item.files ?? []).map((/** @type {any} */ file) =>
          h("div", { class: "file" }, [
            h(
              "button",
              {
                class: "link",
                title: file.openable ? "Open the diff" : "Open the file",
                onclick: () =>
                  file.openable
                    ? vscode.postMessage({ type: "openDiff", key: `${turn.run_id}/${item.id}/${file.path}` })
                    : vscode.postMessage({ type: "openFile", path: file.path }),
              },
              [file.path],
            ),
            h("span", { class: "stats" }, [file.created ? " new" : file.deleted ? " deleted" : "", ` +${file.added} −${file.removed}`]),
            h("details", {}, [h("summary", { text: "diff" }), diffView(file.diff)]),
          ]),
        );
        return h("div", { class: `tool ${item.state}` }, [
          h("div", { class: "line" }, [h("span", { class: "icon", text: icon }), item.title || item.tool, item.summary && item.summary !== item.title ? h("span", { class: "muted" }, [` — ${item.summary}`]) : null]),
          ...files,
          item.check ? checkView(item.check) : null,
          item.output ? h("details", {}, [h("summary", { text: "output" }), h("pre", { class: "output" }, [item.output])]) : null,
        ]);
      }
    }
    return null;
  }

  /** @param {any} turn */
  function endingView(turn) {
    const e = turn.ending;
    if (!e) return null;
    const good = e.exit_reason === "done" || e.exit_reason === "clean" || e.exit_reason === "planned";
    // a question's ending is its answer, already said above it
    const said = turn.items.filter((/** @type {any} */ i) => i.kind === "said").map((/** @type {any} */ i) => i.text).join(" ");
    const answered = e.exit_reason === "done" && !turn.plan && said.trim() !== "" && said.includes(e.summary.trim());
    return h("div", { class: `ending ${good ? "ok" : "bad"}`, "data-exit": e.exit_reason }, [
      h("div", { class: "line" }, [
        h("span", { class: "icon", text: good ? "✓" : e.exit_reason === "cancelled" ? "⊘" : "✗" }),
        h("strong", { text: answered ? "Answered." : title(e.exit_reason) }),
        answered ? null : ` ${e.summary}`,
      ]),
      e.wrap_up ? prose(e.wrap_up) : null,
      e.left && e.left.length > 0 ? h("div", { class: "left" }, [h("div", { text: "Left:" }), h("ul", {}, e.left.map((/** @type {string} */ l) => h("li", {}, [l])))]) : null,
      e.candidates && e.candidates.length > 0
        ? h("div", { class: "candidates" }, [h("div", { text: "Candidates:" }), h("ul", {}, e.candidates.map((/** @type {any} */ c) => h("li", {}, [`${c.label}: ${c.outcome}`])))])
        : null,
      e.files_changed && e.files_changed.length > 0
        ? h("div", { class: "files" }, ["Changed: ", ...e.files_changed.flatMap((/** @type {string} */ f, /** @type {number} */ n) => [n > 0 ? ", " : "", h("button", { class: "link", onclick: () => vscode.postMessage({ type: "openFile", path: f }) }, [f])])])
        : null,
      turn.plan && e.exit_reason === "planned"
        ? h("div", { class: "buttons" }, [h("button", { class: "primary", onclick: () => vscode.postMessage({ type: "implement", plan_id: turn.plan.plan_id }), text: "Carry out this plan" })])
        : null,
      e.undoable ? h("div", { class: "buttons" }, [h("button", { class: "undo", onclick: () => vscode.postMessage({ type: "undo", run_id: turn.run_id }), text: "Undo this run" })]) : null,
      e.undone ? h("div", { class: "undone muted", text: e.undone }) : null,
    ]);
  }

  /** @param {string} reason */
  function title(reason) {
    const words = {
      done: "Done.", clean: "Clean.", planned: "Planned.", tests_failing: "Tests failing.", untested: "Not tested.", unchecked: "Not checked.",
      cancelled: "Cancelled.", failed: "Not done.", refused: "Refused.", unsure: "Stopped, unsure.",
    };
    // @ts-ignore
    return words[reason] ?? `${reason.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase())}.`;
  }

  /** @param {any} p */
  function planView(p) {
    if (!p) return [];
    return [
      h("div", { class: "plan-goal", text: p.goal }),
      h(
        "ol",
        { class: "steps" },
        p.steps.map((/** @type {any} */ step) =>
          h("li", { class: `step ${step.status}`, title: [step.detail, step.note, step.role ? `Role: ${step.role}` : ""].filter(Boolean).join("\n\n") }, [
            h("span", { class: "glyph", text: step.glyph ?? GLYPHS[step.status] ?? "?" }),
            h("span", { class: "step-title" }, [`${step.id}. ${step.title}`]),
            step.status === "running" && step.mode ? h("span", { class: "mode", text: step.mode }) : null,
            step.status !== "running" && step.status !== "pending" && step.status !== "done" ? h("span", { class: "mode", text: step.status.replace(/_/g, " ") }) : null,
            step.note && step.status !== "pending" && step.status !== "running" ? h("div", { class: "note", text: step.note }) : null,
          ]),
        ),
      ),
    ];
  }

  /** Reasons being typed, by approval id; the one with the focus. */
  const reasons = new Map();
  /** @type {string | undefined} */
  let focusedReason;
  /** @type {HTMLElement | undefined} */
  let refocus;

  let stuckToBottom = true;
  log.addEventListener("scroll", () => {
    stuckToBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 24;
  });

  /** @param {any} message */
  function draw(message) {
    const { state, pickers, picked } = message;
    fill(role, pickers.roles.length > 0 ? pickers.roles : [{ id: "auto", name: "Auto" }], picked.role);
    fill(approval, pickers.approvals.length > 0 ? pickers.approvals : [{ id: "default", name: "As the settings say" }], picked.approval);
    const models = [...new Set([pickers.model, ...pickers.served].filter(Boolean))].map((m) => ({ id: m, name: m }));
    fill(model, models.length > 0 ? models : [{ id: "", name: "(the settings' model)" }], pickers.model);
    here.textContent = message.here?.selection ? `selection: ${message.here.selection}` : message.here?.file ? `in ${message.here.file}` : "";
    tokens.textContent = state.context_tokens ? `${state.context_tokens.toLocaleString()} tokens` : "";
    const running = state.running.length > 0;
    stop.hidden = !running;
    send.toggleAttribute("disabled", running);

    // the plan of the latest request that has one
    const planned = [...state.turns].reverse().find((/** @type {any} */ t) => t.plan);
    plan.replaceChildren(...planView(planned?.plan));
    plan.hidden = !planned;

    const children = [];
    if (state.earlier.length > 0) {
      children.push(
        h("details", { class: "earlier" }, [
          h("summary", { text: `${state.earlier.length} earlier request(s) in this conversation` }),
          ...state.earlier.map((/** @type {any} */ t) => h("div", { class: "earlier-turn" }, [h("div", { class: "asked", text: t.asked }), h("div", { class: "muted", text: t.answered })])),
        ]),
      );
    }
    if (state.turns.length === 0 && state.earlier.length === 0) {
      children.push(
        h("div", { class: "empty" }, [
          h("p", { text: "Ask a question about the code, or describe a change: Tokamak plans it, makes it step by step — asking before each edit unless you say otherwise — checks it and runs the tests." }),
          h("p", { class: "muted", text: "Follow-ups continue the conversation. Approvals appear here and in the diff editor's title bar." }),
        ]),
      );
    }
    for (const turn of state.turns) {
      children.push(
        h("div", { class: "turn", "data-run": turn.run_id ?? "" }, [
          h("div", { class: `asked ${turn.from}` }, [turn.from === "editor" ? h("span", { class: "muted", text: "From the editor: " }) : null, turn.goal]),
          ...turn.items.map((/** @type {any} */ item) => itemView(item, turn)),
          !turn.ending && state.running.includes(turn.run_id) ? h("div", { class: "working muted", text: turn.doing ? `Working… ${turn.doing}` : "Working…" }) : null,
          !turn.ending && !turn.run_id ? h("div", { class: "working muted", text: "Starting…" }) : null,
          endingView(turn),
        ]),
      );
    }
    // an open <details> stays open, a focused button keeps focus across a redraw when it can
    const open = new Set([...log.querySelectorAll("details[open]")].map((d) => d.dataset.key));
    log.replaceChildren(...children);
    let n = 0;
    for (const d of log.querySelectorAll("details")) {
      d.dataset.key = String(n++);
      if (open.has(d.dataset.key)) d.open = true;
    }
    if (stuckToBottom) log.scrollTop = log.scrollHeight;
    if (refocus) refocus.focus();
    refocus = undefined;
  }

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (message.type === "state") draw(message);
    // the answer to an earlier query (typing goes on while the list is found) is not shown
    else if (message.type === "mentions" && message.query === mentionAtCaret()) showMentions(message.files);
    else if (message.type === "focus") input.focus();
  });
  vscode.postMessage({ type: "ready" });
})();
