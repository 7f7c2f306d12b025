-- End-to-end checks of editors/neovim in a real headless Neovim, driven by
-- tests/it/editor_neovim.rs. Reads TOKAMAK_E2E (which check), TOKAMAK_BIN, TOKAMAK_E2E_FILE,
-- TOKAMAK_E2E_OUT; writes a JSON report to TOKAMAK_E2E_OUT and exits 0, or exits 1 with the
-- reason in the report.
local out_path = assert(os.getenv("TOKAMAK_E2E_OUT"))
local report = { steps = {} }

local function finish(ok, why)
  report.ok = ok
  report.why = why
  local file = assert(io.open(out_path, "w"))
  file:write(vim.json.encode(report))
  file:close()
  vim.cmd(ok and "qall!" or "cquit! 1")
end

local function step(name, value)
  table.insert(report.steps, name)
  report[name] = value
end

local function wait(ms, what, predicate)
  if not vim.wait(ms, predicate, 50) then
    finish(false, "timed out waiting for " .. what)
    error("stop")
  end
end

-- Python's filetype plugin asks `has('python3')`, which starts each python3 on PATH to find
-- a host for Neovim's Python plugins (through pyenv's shims, dozens of processes a Python file
-- opened): the plugin uses none, so the provider is off, as `:help provider-python` says.
vim.g.loaded_python3_provider = 0

vim.opt.runtimepath:prepend(os.getenv("TOKAMAK_PLUGIN"))
local tokamak = require("tokamak")
local check = os.getenv("TOKAMAK_E2E")
local bin = os.getenv("TOKAMAK_BIN")
local model_url = os.getenv("TOKAMAK_E2E_MODEL")

local trusted = os.getenv("TOKAMAK_E2E_TRUSTED")
local asks = check == "approve" or check == "scenario"
local settings = {
  -- the agent's checks act without asking; the approval and scenario checks ask (medium,
  -- the default)
  approval = asks and vim.NIL or "low",
  checkers = { enable = {} },
  model = { base_url = model_url, model = "scripted", max_retries = 0 },
}
-- more settings from the test (the project's test command, say)
local extra = os.getenv("TOKAMAK_E2E_SETTINGS")
if extra and extra ~= "" then
  settings = vim.tbl_deep_extend("force", settings, vim.json.decode(extra))
end
tokamak.setup({
  cmd = { bin, "lsp" },
  trusted = trusted == "1" or (trusted == "0" and false) or nil,
  settings = settings,
})

--- The lines and window of the floating window open, if any.
local function float_lines()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= "" then
      return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), w
    end
  end
end

-- every message Neovim's own vim.notify shows (it echoes), recorded as shown
local echoed = {}
if check == "polish" then
  local echo, err_writeln = vim.api.nvim_echo, vim.api.nvim_err_writeln
  vim.api.nvim_echo = function(chunks, history, opts)
    local text = ""
    for _, chunk in ipairs(chunks) do text = text .. chunk[1] end
    table.insert(echoed, text)
    return echo(chunks, history, opts)
  end
  vim.api.nvim_err_writeln = function(message)
    table.insert(echoed, message)
    return err_writeln(message)
  end
end

local ok, err = pcall(function()
  if check == "health" then
    vim.cmd("checkhealth tokamak")
    local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    step("health", table.concat(lines, "\n"))
    return finish(true)
  end

  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("TOKAMAK_E2E_FILE")))
  local bufnr = vim.api.nvim_get_current_buf()
  wait(20000, "tokamak to attach", function() return tokamak.client(bufnr) ~= nil end)
  local client = tokamak.client(bufnr)
  step("attached", client.name)
  local status = client:request_sync("workspace/executeCommand", { command = "tokamak.status", arguments = { {} } }, 5000, bufnr)
  step("trusted", status and status.result and status.result.trusted)

  if check == "forward" then
    -- a second, real language server: ruff's
    vim.lsp.start({ name = "ruff", cmd = { os.getenv("TOKAMAK_E2E_RUFF"), "server" }, root_dir = vim.fn.getcwd() }, { bufnr = bufnr })
    wait(20000, "ruff's diagnostics", function()
      for _, d in ipairs(vim.diagnostic.get(bufnr)) do
        if (d.source or ""):lower():find("ruff") then return true end
      end
      return false
    end)
    local seen
    wait(20000, "Tokamak to hear of ruff's diagnostics", function()
      local answer = client:request_sync("workspace/executeCommand", {
        command = "tokamak.diagnostics", arguments = { { uri = vim.uri_from_bufnr(bufnr) } },
      }, 5000, bufnr)
      seen = answer and answer.result and answer.result.diagnostics or {}
      for _, d in ipairs(seen) do
        if (d.source or ""):lower():find("ruff") then return true end
      end
      return false
    end)
    step("observed", seen)
    return finish(true)
  end

  if check == "polish" then
    local ui = require("tokamak.ui")
    local broken = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n"
    vim.cmd("TokamakFix")
    -- while it runs: the progress float and the statusline say so
    local float_text
    wait(20000, "the progress float", function()
      local lines = float_lines()
      if lines and lines[1] and lines[1]:find("⚡", 1, true) then float_text = lines[1] return true end
      return tokamak.last_run ~= nil
    end)
    step("progress_float", float_text or vim.NIL)
    step("statusline", ui.statusline())
    wait(60000, "the fix's end", function() return tokamak.last_run ~= nil end)
    local fix = tokamak.last_run
    step("run", fix)
    vim.wait(500)
    step("float_after", float_lines() ~= nil)
    step("fixed", table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n")
    step("modified", vim.bo[bufnr].modified)
    -- :TokamakRollback: the checkpoint picked from the list, restored through the unsaved buffer
    vim.ui.select = function(items, opts, on_choice)
      local shown = {}
      for _, item in ipairs(items) do table.insert(shown, opts.format_item(item)) end
      report.picker = { prompt = opts.prompt, items = shown }
      on_choice(items[1])
    end
    tokamak.last_run = nil
    vim.cmd("TokamakRollback")
    wait(30000, "the rollback's end", function() return tokamak.last_run ~= nil end)
    step("rollback", tokamak.last_run)
    wait(10000, "the buffer restored", function()
      return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n" == broken
    end)
    step("restored", true)
    -- :TokamakStatus, a float
    vim.cmd("TokamakStatus")
    local status_lines
    wait(10000, "the status float", function()
      local lines = float_lines()
      if lines and lines[1] and lines[1]:find("Model:", 1, true) then status_lines = lines return true end
      return false
    end)
    step("status", status_lines)
    vim.cmd("close")
    -- :TokamakPlanWindow goes there
    vim.cmd("TokamakPlanWindow")
    step("plan_window_focused", vim.api.nvim_buf_get_name(0):find("tokamak://plan", 1, true) ~= nil)
    vim.cmd("wincmd p")
    step("echoed", echoed)
    step("echospace", vim.v.echospace)
    step("columns", vim.o.columns)
    -- :checkhealth asks the running server
    vim.cmd("checkhealth tokamak")
    step("health", table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"))
    return finish(true)
  end

  if check == "scenario" then
    -- seed 000's scenario as a user runs it: :TokamakRun, every question approved with `a` in
    -- its floating diff, the edits left unsaved in the buffers
    local approval = require("tokamak.approval")
    local plan = require("tokamak.plan")
    vim.cmd("TokamakRun " .. os.getenv("TOKAMAK_E2E_GOAL"))
    local questions = {}
    local deadline = vim.uv.now() + 120000
    while tokamak.last_run == nil do
      if vim.uv.now() > deadline then return finish(false, "timed out waiting for the run to finish") end
      vim.wait(200, function()
        return tokamak.last_run ~= nil or (#approval.order > 0 and float_lines() ~= nil)
      end, 20)
      local lines, win = float_lines()
      if tokamak.last_run == nil and #approval.order > 0 and win then
        table.insert(questions, table.concat(lines, "\n"))
        local answered = #approval.answers
        vim.api.nvim_set_current_win(win)
        vim.api.nvim_feedkeys("a", "x", false)
        wait(10000, "the answer to question " .. #questions, function() return #approval.answers > answered end)
        vim.cmd("wincmd p")
      end
    end
    step("questions", questions)
    step("answers", approval.answers)
    step("run", tokamak.last_run)
    local last = plan.updates[#plan.updates] or {}
    local notes = {}
    for _, s in ipairs(last.steps or {}) do table.insert(notes, s.note or vim.NIL) end
    step("notes", notes)
    local plan_buf = vim.fn.bufnr("tokamak://plan")
    step("window", vim.api.nvim_buf_get_lines(plan_buf, 0, -1, false))
    step("text", table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n")
    step("modified", vim.bo[bufnr].modified)
    return finish(true)
  end

  if check == "approve" then
    local approval = require("tokamak.approval")
    local function wait_question(n)
      wait(30000, "approval question " .. n, function() return #approval.order > 0 and float_lines() ~= nil end)
      local lines, win = float_lines()
      step("question" .. n, { id = approval.order[1], lines = lines })
      vim.api.nvim_set_current_win(win)
      return approval.order[1]
    end
    vim.cmd("TokamakRun " .. os.getenv("TOKAMAK_E2E_GOAL"))
    -- 1: the edit of the buffer, approved with `a` in the floating diff
    wait_question(1)
    local status = client:request_sync("workspace/executeCommand", { command = "tokamak.status", arguments = { {} } }, 5000, bufnr)
    step("waiting", status and status.result and status.result.approvals)
    step("text_before", table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n")
    vim.api.nvim_feedkeys("a", "x", false)
    wait(10000, "the answer to question 1", function() return #approval.answers == 1 end)
    -- 2: creating NOTES.md, rejected with `r` and a reason
    wait_question(2)
    vim.ui.input = function(_, on_confirm) on_confirm("put the notes in docs/NOTES.md") end
    vim.api.nvim_feedkeys("r", "x", false)
    wait(10000, "the answer to question 2", function() return #approval.answers == 2 end)
    -- 3: docs/NOTES.md, approved with :TokamakApprove from the file's window
    wait_question(3)
    vim.cmd("wincmd p")
    vim.cmd("TokamakApprove")
    wait(30000, "the run to finish", function() return tokamak.last_run ~= nil end)
    step("answers", approval.answers)
    step("run", tokamak.last_run)
    step("text", table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n")
    step("float_after", float_lines() ~= nil)
    return finish(true)
  end

  if check == "plan" then
    local plan = require("tokamak.plan")
    -- every first-step line the plan window was drawn with, in order (repeats folded): the
    -- running step's mode as the outcomes move it
    local drawn = {}
    local render = plan.render
    plan.render = function(p)
      local lines, steps = render(p)
      if lines[2] and drawn[#drawn] ~= lines[2] then table.insert(drawn, lines[2]) end
      return lines, steps
    end
    -- :TokamakRun with the goal: the plan window opens and follows the steps
    vim.cmd("TokamakRun " .. os.getenv("TOKAMAK_E2E_GOAL"))
    wait(30000, "the run to finish", function() return tokamak.last_run ~= nil end)
    plan.render = render
    step("drawn", drawn)
    step("run", tokamak.last_run)
    local statuses = {}
    for _, update in ipairs(plan.updates) do
      for _, s in ipairs(update.steps) do
        statuses[s.id] = statuses[s.id] or {}
        local list = statuses[s.id]
        if list[#list] ~= s.glyph then table.insert(list, s.glyph) end
      end
    end
    step("statuses", statuses)
    local plan_buf = vim.fn.bufnr("tokamak://plan")
    step("window_open", #vim.fn.win_findbuf(plan_buf) > 0)
    step("window", vim.api.nvim_buf_get_lines(plan_buf, 0, -1, false))
    step("text", table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n")
    -- <CR> on the first step shows its detail and files
    local win = vim.fn.win_findbuf(plan_buf)[1]
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_cursor(win, { 2, 0 })
    vim.cmd.normal(vim.keycode("<CR>"))
    local shown
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(w).relative ~= "" then
        shown = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false)
      end
    end
    step("detail", shown)
    vim.cmd("wincmd p")
    -- "Plan with Tokamak…" from the code-action menu asks for the goal (vim.ui.input)
    local asked
    vim.ui.input = function(opts, on_confirm)
      asked = opts
      on_confirm("write notes")
    end
    local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
    params.context = { diagnostics = {}, triggerKind = 1 }
    local answer = client:request_sync("textDocument/codeAction", params, 10000, bufnr)
    local action
    for _, a in ipairs(answer.result or {}) do
      if a.title == "Plan with Tokamak…" then action = a end
    end
    if not action then return finish(false, "no Plan with Tokamak… action") end
    local before = plan.last_plan_id
    client:exec_cmd(action.command, { bufnr = bufnr })
    wait(30000, "the second plan", function() return plan.last_plan_id ~= before end)
    step("asked", asked and asked.prompt)
    step("completion", plan.complete_goal("wr"))
    step("second_plan", plan.plans[plan.last_plan_id])
    -- :TokamakImplement carries the latest plan out
    tokamak.last_run = nil
    vim.cmd("TokamakImplement")
    wait(30000, "the second run to finish", function() return tokamak.last_run ~= nil end)
    step("second_run", tokamak.last_run)
    step("window_after", vim.api.nvim_buf_get_lines(plan_buf, 0, -1, false))
    return finish(true)
  end

  -- check == "fix": Tokamak's syntax diagnostic, its code action, the fix, a clean buffer
  local ns = vim.lsp.diagnostic.get_namespace(client.id, false)
  wait(20000, "Tokamak's diagnostics", function() return #vim.diagnostic.get(bufnr, { namespace = ns }) > 0 end)
  local diagnostic = vim.diagnostic.get(bufnr, { namespace = ns })[1]
  step("diagnostic", diagnostic.message)
  local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
  params.range = diagnostic.user_data.lsp.range
  params.context = { diagnostics = { diagnostic.user_data.lsp } }
  local answer = client:request_sync("textDocument/codeAction", params, 10000, bufnr)
  local titles, action = {}, nil
  for _, a in ipairs(answer.result or {}) do
    table.insert(titles, a.title)
    if a.title:find("^Fix with Tokamak") then action = a end
  end
  step("actions", titles)
  if not action then return finish(false, "no Fix with Tokamak action") end
  -- run it the way the code-action menu does
  client:exec_cmd(action.command, { bufnr = bufnr })
  wait(30000, "the run to finish", function() return tokamak.last_run ~= nil end)
  step("run", tokamak.last_run)
  wait(20000, "the diagnostics to clear", function() return #vim.diagnostic.get(bufnr, { namespace = ns }) == 0 end)
  step("text", table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n")
  -- an edit for an older version than the buffer's is refused, not silently dropped
  local stale = tokamak.apply_edit_handler(nil, {
    edit = { documentChanges = { { textDocument = { uri = vim.uri_from_bufnr(bufnr), version = 0 }, edits = {} } } },
  }, { client_id = client.id })
  step("stale", stale)
  finish(true)
end)
if not ok and tostring(err):find("stop") == nil then
  finish(false, tostring(err))
end
