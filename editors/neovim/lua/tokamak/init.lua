--- Tokamak for Neovim: starts the `tokamak` language server on Python, TypeScript and
--- JavaScript buffers, forwards other sources' diagnostics to it, and adds :TokamakFix,
--- :TokamakPlan, :TokamakRun, :TokamakImplement, :TokamakPlanWindow, :TokamakCancel,
--- :TokamakRollback and :TokamakStatus (the task agent's side lives in tokamak/plan.lua), and
--- :TokamakApprove / :TokamakReject with a floating diff for each approval
--- (tokamak/approval.lua). A run's progress shows in a one-line float and `statusline()`;
--- each ending is said once with vim.notify, one line with Neovim's own (tokamak/ui.lua).
local plan = require("tokamak.plan")
local approval = require("tokamak.approval")
local ui = require("tokamak.ui")

local M = {}

M.name = "tokamak"

local defaults = {
  cmd = { "tokamak", "lsp" },
  filetypes = { "python", "typescript", "typescriptreact", "javascript", "javascriptreact" },
  root_markers = { "tokamak.toml", "pyproject.toml", "package.json", "tsconfig.json", ".git" },
  -- sent as initializationOptions (same structure as tokamak.toml)
  settings = {},
  -- whether the workspace's own settings (tokamak.toml) and programs may be used:
  -- true / false, or nil to ask Neovim's trust database (vim.secure) about its tokamak.toml
  -- (and, without one, to leave it to `tokamak trust` and the user's settings file)
  trusted = nil,
  -- forward other sources' diagnostics (vim.diagnostic) to Tokamak
  forward_diagnostics = true,
  debounce_ms = 200,
  -- a run's progress in a one-line float at the bottom right (false: only `statusline()`)
  progress = true,
}

M.config = vim.deepcopy(defaults)
--- The last `tokamak/runFinished` received (for statuslines and tests).
M.last_run = nil

local has_011 = vim.fn.has("nvim-0.11") == 1

--- client:request works from 0.11; 0.10 has client.request.
local function request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- The UTF-16 index of byte `col` in `line`.
local function utf16(line, col)
  if has_011 then
    return vim.str_utfindex(line, "utf-16", col, false)
  end
  local _, units = vim.str_utfindex(line, col)
  return units
end

local function notify_server(client, method, params)
  if has_011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

--- The Tokamak client attached to `bufnr` (or any, when nil).
function M.client(bufnr)
  local clients = vim.lsp.get_clients({ name = M.name, bufnr = bufnr })
  return clients[1]
end

--- The runs that ended in this session, newest last (for :TokamakStatus).
M.finished = {}

local function on_run_finished(_, result)
  if type(result) ~= "table" then
    return
  end
  M.last_run = result
  table.insert(M.finished, result)
  if #M.finished > 10 then
    table.remove(M.finished, 1)
  end
  if result.run_id then
    approval.on_run_finished(result.run_id)
    ui.on_run_finished(result.run_id)
  end
  local fine = result.exit_reason == "clean" or result.exit_reason == "done" or result.exit_reason == "cancelled"
  local level = fine and vim.log.levels.INFO or vim.log.levels.WARN
  -- the one message of an ending (the server says none of its own to this client), the
  -- reason first so a cut line still has it
  ui.say(string.format("Tokamak %s: %s", result.exit_reason:gsub("_", " "), result.summary or ""), level)
end

--- `window/showMessage` from Tokamak: one line, said once, never a hit-enter prompt.
local function on_show_message(_, result)
  if type(result) ~= "table" or type(result.message) ~= "string" then
    return
  end
  local levels = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }
  local message = result.message
  if not vim.startswith(message, "Tokamak") then
    message = "Tokamak: " .. message
  end
  ui.say(message, levels[result.type] or vim.log.levels.INFO)
end

--- Runs a tokamak.* command; `on_result(err, result)` is called with the answer.
function M.command(command, arguments, bufnr, on_result)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    -- a buffer Tokamak is not attached to (an approval's diff, the plan window, a Markdown
    -- file): any Tokamak client will do
    client = M.client()
    bufnr = client and next(client.attached_buffers) or bufnr
  end
  if not client then
    ui.say("Tokamak is not attached to this buffer (see :checkhealth tokamak)", vim.log.levels.ERROR)
    return
  end
  request(client, "workspace/executeCommand", { command = command, arguments = { arguments } }, function(err, result)
    if on_result then
      on_result(err, result)
    elseif err then
      ui.say("Tokamak: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end, bufnr)
end

--- :TokamakFix — the whole file, or the lines of a range.
function M.fix(opts)
  local bufnr = vim.api.nvim_get_current_buf()
  local args = { uri = vim.uri_from_bufnr(bufnr) }
  if opts and opts.range and opts.range > 0 then
    local last = vim.api.nvim_buf_get_lines(bufnr, opts.line2 - 1, opts.line2, false)[1] or ""
    args.range = {
      start = { line = opts.line1 - 1, character = 0 },
      ["end"] = { line = opts.line2 - 1, character = utf16(last, #last) },
    }
  end
  M.command("tokamak.fix", args, bufnr, function(err, result)
    if err then
      ui.say("Tokamak: " .. (err.message or vim.inspect(err)), vim.log.levels.WARN)
    elseif result and result.run_id then
      ui.say("Tokamak: fixing (" .. result.run_id .. ")", vim.log.levels.INFO)
    end
  end)
end

--- The uri and range of a command's [range] (whole lines), or of the current buffer.
local function where(opts)
  local bufnr = vim.api.nvim_get_current_buf()
  local args = { uri = vim.uri_from_bufnr(bufnr) }
  if opts and opts.range and opts.range > 0 then
    local last = vim.api.nvim_buf_get_lines(bufnr, opts.line2 - 1, opts.line2, false)[1] or ""
    args.range = {
      start = { line = opts.line1 - 1, character = 0 },
      ["end"] = { line = opts.line2 - 1, character = utf16(last, #last) },
    }
  end
  return args, bufnr
end

local function report_error(err)
  ui.say("Tokamak: " .. (err.message or vim.inspect(err)), vim.log.levels.WARN)
end

--- Asks the server for a plan for `goal` (at `args`' place) and shows it in the plan window.
local function make_plan(goal, args, bufnr)
  args.goal = goal
  ui.say("Tokamak: planning…", vim.log.levels.INFO)
  M.command("tokamak.plan", args, bufnr, function(err, result)
    if err then
      return report_error(err)
    end
    plan.on_plan_updated(nil, result)
    plan.open_window()
    ui.say("Tokamak: plan " .. result.plan_id .. " made; :TokamakImplement carries it out", vim.log.levels.INFO)
  end)
end

--- :[range]TokamakPlan [goal] — a plan for the goal (asked for when not given).
function M.plan(opts)
  local args, bufnr = where(opts)
  plan.with_goal(opts and opts.args, function(goal)
    make_plan(goal, args, bufnr)
  end)
end

--- :[range]TokamakRun [goal] — plan the goal and carry the plan out.
function M.run(opts)
  local args, bufnr = where(opts)
  plan.with_goal(opts and opts.args, function(goal)
    args.goal = goal
    M.command("tokamak.run", args, bufnr, function(err, result)
      if err then
        return report_error(err)
      end
      plan.open_window()
      ui.say("Tokamak: running (" .. result.run_id .. ")", vim.log.levels.INFO)
    end)
  end)
end

--- :TokamakImplement [plan_id] — carry out a plan (the latest by default).
function M.implement(opts)
  local id = opts and opts.args ~= "" and opts.args or plan.last_plan_id
  if not id then
    return ui.say("Tokamak: no plan yet; make one with :TokamakPlan", vim.log.levels.WARN)
  end
  M.command("tokamak.implement", { plan_id = id }, nil, function(err, result)
    if err then
      return report_error(err)
    end
    plan.open_window()
    ui.say("Tokamak: implementing " .. id .. " (" .. result.run_id .. ")", vim.log.levels.INFO)
  end)
end

--- The code action "Plan with Tokamak…": ask for the goal, then plan at the action's place.
local function ask_goal(command, ctx)
  local args = vim.deepcopy((command.arguments or {})[1] or {})
  plan.with_goal(nil, function(goal)
    make_plan(goal, args, ctx and ctx.bufnr)
  end)
end

function M.cancel()
  M.command("tokamak.cancel", vim.empty_dict(), nil, function(err, result)
    if err then
      return report_error(err)
    end
    local cancelled = result.cancelled or {}
    ui.say(#cancelled > 0 and ("Tokamak: cancelling " .. table.concat(cancelled, ", ")) or "Tokamak: no run is going on")
  end)
end

--- The lines :TokamakStatus shows: the model, trust, approval and sandbox, the runs going on
--- and those that ended, and the last messages.
function M.status_lines(status)
  local lines = {}
  local model = status.model or {}
  if model.error then
    table.insert(lines, "Model:    not set up: " .. model.error)
  else
    table.insert(lines, string.format("Model:    %s (%s at %s)", model.name or "?", model.provider or "?", model.endpoint or "?"))
  end
  table.insert(lines, "Trust:    " .. (status.trusted and "trusted" or "not trusted") .. (status.trust and (" (" .. status.trust .. ")") or ""))
  table.insert(lines, "Approval: " .. (status.approval or "?"))
  if status.sandbox then
    table.insert(lines, "Sandbox:  " .. status.sandbox)
  end
  table.insert(lines, "")
  local runs = status.runs or {}
  if #runs == 0 then
    table.insert(lines, "No run is going on.")
  end
  for _, run in ipairs(runs) do
    local line = "⚡ " .. run.run_id .. (run.mode and (" — " .. run.mode) or "")
    local doing = ui.running[run.run_id]
    if doing and doing.message then
      line = line .. ": " .. doing.message
    end
    table.insert(lines, line)
    for _, c in ipairs(run.confidence or {}) do
      table.insert(lines, string.format("   confidence in %s: %d (%s)", c.file, c.confidence, c.why))
    end
  end
  local recent = status.recentRuns or {}
  if #recent > 0 then
    table.insert(lines, "")
    table.insert(lines, "Ended:")
    for _, run in ipairs(recent) do
      table.insert(lines, string.format("  %s %s: %s", run.run_id, (run.exit_reason or ""):gsub("_", " "), run.summary or ""))
    end
  end
  if #(status.approvals or {}) > 0 then
    table.insert(lines, "")
    table.insert(lines, #status.approvals .. " approval(s) waiting (:TokamakApprove / :TokamakReject)")
  end
  if #ui.history > 0 then
    table.insert(lines, "")
    table.insert(lines, "Last messages:")
    for i = math.max(1, #ui.history - 4), #ui.history do
      table.insert(lines, "  " .. ui.history[i]:gsub("\n", " "))
    end
  end
  return lines
end

--- :TokamakStatus — a float saying the model, the runs going on and those that ended.
function M.status()
  M.command("tokamak.status", vim.empty_dict(), nil, function(err, result)
    if err then
      return report_error(err)
    end
    M.last_status = result
    ui.float(M.status_lines(result), "Tokamak status")
  end)
end

--- :TokamakRollback [checkpoint] — undo a run: the latest, the one named, or one picked from
--- the workspace's checkpoints. Its files go back through the buffers, unsaved ones included.
function M.rollback(opts)
  local function roll(checkpoint)
    M.command("tokamak.rollback", { checkpoint = checkpoint }, nil, function(err, result)
      if err then
        return report_error(err)
      end
      ui.say("Tokamak: rolling back " .. checkpoint .. " (" .. result.run_id .. ")")
    end)
  end
  if opts and opts.args and opts.args ~= "" then
    return roll(opts.args)
  end
  M.command("tokamak.checkpoints", vim.empty_dict(), nil, function(err, list)
    if err then
      return report_error(err)
    end
    if type(list) ~= "table" or #list == 0 then
      return ui.say("Tokamak: no run has left a checkpoint in this workspace yet")
    end
    vim.ui.select(list, {
      prompt = "Roll back which Tokamak run?",
      format_item = function(c)
        local files = c.files or {}
        return string.format("%s  %s  %s (%d file(s)%s)", (c.time or ""):gsub("T", " "), c.run_id, c.goal or "", #files, c.complete and "" or ", incomplete")
      end,
    }, function(choice)
      if choice then
        roll(choice.run_id)
      end
    end)
  end)
end

--- An LSP diagnostic for a vim.diagnostic entry (positions in UTF-16, as Tokamak's client
--- offers). Entries that came from a language server keep that server's own diagnostic.
local function to_lsp(bufnr, d)
  local original = d.user_data and d.user_data.lsp
  local function position(lnum, col)
    local line = vim.api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1] or ""
    col = math.min(col or 0, #line)
    return { line = lnum, character = utf16(line, col) }
  end
  return {
    range = (original and original.range) or {
      start = position(d.lnum, d.col),
      ["end"] = position(d.end_lnum or d.lnum, d.end_col or d.col),
    },
    severity = d.severity,
    source = d.source or (original and original.source),
    code = d.code or (original and original.code),
    message = d.message,
  }
end

local pending = {}

--- Sends `bufnr`'s diagnostics from every namespace but Tokamak's own.
function M.forward(bufnr)
  local client = M.client(bufnr)
  if not client or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local own = {}
  for _, pull in ipairs({ false, true }) do
    local ok, ns = pcall(vim.lsp.diagnostic.get_namespace, client.id, pull)
    if ok and ns then
      own[ns] = true
    end
  end
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if not own[d.namespace] then
      table.insert(diagnostics, to_lsp(bufnr, d))
    end
  end
  notify_server(client, "tokamak/clientDiagnostics", {
    uri = vim.uri_from_bufnr(bufnr),
    version = vim.lsp.util.buf_versions[bufnr],
    diagnostics = diagnostics,
  })
end

local function schedule_forward(bufnr)
  if pending[bufnr] then
    pending[bufnr]:stop()
  end
  local timer = vim.uv.new_timer()
  pending[bufnr] = timer
  timer:start(M.config.debounce_ms, 0, vim.schedule_wrap(function()
    timer:close()
    if pending[bufnr] == timer then
      pending[bufnr] = nil
    end
    M.forward(bufnr)
  end))
end

--- workspace/applyEdit that refuses an edit made for an older version of a buffer. Neovim's
--- own handler skips such an edit but answers `applied = true`; answering `false` lets
--- Tokamak re-ground the edit on your newer text and send it again.
function M.apply_edit_handler(err, params, ctx)
  for _, change in ipairs((params and params.edit and params.edit.documentChanges) or {}) do
    local document = change.textDocument
    if document and document.version and document.uri then
      local bufnr = vim.uri_to_bufnr(document.uri)
      local current = vim.lsp.util.buf_versions[bufnr]
      if current and current > document.version then
        return {
          applied = false,
          failureReason = string.format("version %d of %s is stale: the buffer is at %d", document.version, document.uri, current),
        }
      end
    end
  end
  return vim.lsp.handlers["workspace/applyEdit"](err, params, ctx)
end

--- Whether the workspace at `root` is trusted: the `trusted` option, else vim.secure's answer
--- about its tokamak.toml (Neovim asks the user once and remembers), else nil (no word: the
--- server goes by the user's settings file).
function M.trusted(root)
  if M.config.trusted ~= nil then
    return M.config.trusted
  end
  if not root or not vim.secure or not vim.secure.read then
    return nil
  end
  local file = vim.fs.joinpath(root, "tokamak.toml")
  if not vim.uv.fs_stat(file) then
    return nil
  end
  local ok, contents = pcall(vim.secure.read, file)
  return ok and contents ~= nil
end

local function init_options(root)
  local options = vim.deepcopy(M.config.settings)
  local trusted = M.trusted(root)
  if trusted ~= nil then
    options.trusted = trusted
  end
  return options
end

local function lsp_config()
  return {
    cmd = M.config.cmd,
    filetypes = M.config.filetypes,
    root_markers = M.config.root_markers,
    init_options = M.config.settings,
    before_init = function(params, config)
      params.initializationOptions = init_options(config.root_dir)
    end,
    settings = { tokamak = M.config.settings },
    -- approvals are shown here (tokamak/approval.lua), not as window/showMessageRequest;
    -- an ending is said here once, from tokamak/runFinished
    capabilities = vim.tbl_deep_extend("force", vim.lsp.protocol.make_client_capabilities(), {
      experimental = { tokamak = { approvals = true, endings = true } },
    }),
    handlers = {
      ["tokamak/approvalRequested"] = approval.on_approval_requested,
      ["tokamak/runFinished"] = on_run_finished,
      ["window/showMessage"] = on_show_message,
      ["tokamak/planUpdated"] = plan.on_plan_updated,
      ["workspace/applyEdit"] = M.apply_edit_handler,
    },
  }
end

--- require("tokamak").setup{ cmd = …, settings = … }
function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  local config = lsp_config()
  if has_011 and vim.lsp.config then
    vim.lsp.config(M.name, config)
    vim.lsp.enable(M.name)
  else
    vim.api.nvim_create_autocmd("FileType", {
      group = vim.api.nvim_create_augroup("tokamak-start", { clear = true }),
      pattern = M.config.filetypes,
      callback = function(args)
        local root = vim.fs.root(args.buf, M.config.root_markers)
        vim.lsp.start(vim.tbl_extend("force", config, { name = M.name, root_dir = root }), { bufnr = args.buf })
      end,
    })
  end
  if M.config.forward_diagnostics then
    vim.api.nvim_create_autocmd("DiagnosticChanged", {
      group = vim.api.nvim_create_augroup("tokamak-forward", { clear = true }),
      callback = function(args)
        local client = M.client(args.buf)
        if not client then
          return
        end
        -- Tokamak's own publishes change diagnostics too; forwarding them back is skipped in
        -- M.forward, and only a change in another namespace needs a forward at all
        schedule_forward(args.buf)
      end,
    })
  end
  -- a run's progress: Tokamak's $/progress, shown in the float and the plan window
  vim.api.nvim_create_autocmd("LspProgress", {
    group = vim.api.nvim_create_augroup("tokamak-progress", { clear = true }),
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data and args.data.client_id or -1)
      local params = args.data and args.data.params
      if client and client.name == M.name and params and params.token then
        ui.on_progress(tostring(params.token), params.value)
      end
    end,
  })
  vim.api.nvim_create_user_command("TokamakFix", M.fix, { range = true, desc = "Fix the file (or the lines) with Tokamak" })
  local goal = { nargs = "*", range = true, complete = plan.complete_goal_cmdline }
  vim.api.nvim_create_user_command("TokamakPlan", M.plan, vim.tbl_extend("force", goal, { desc = "Make a plan for a goal" }))
  vim.api.nvim_create_user_command("TokamakRun", M.run, vim.tbl_extend("force", goal, { desc = "Plan a goal and carry it out" }))
  vim.api.nvim_create_user_command("TokamakImplement", M.implement, { nargs = "?", desc = "Carry out the latest plan" })
  vim.api.nvim_create_user_command("TokamakPlanWindow", function()
    plan.open_window({ focus = true })
  end, { desc = "Show the plan window and go there" })
  vim.api.nvim_create_user_command("TokamakRollback", M.rollback, { nargs = "?", desc = "Undo a Tokamak run (picked from its checkpoints)" })
  vim.lsp.commands["tokamak.askGoal"] = ask_goal
  vim.api.nvim_create_user_command("TokamakCancel", M.cancel, { desc = "Cancel Tokamak's runs" })
  vim.api.nvim_create_user_command("TokamakStatus", M.status, { desc = "Show Tokamak's status" })
  vim.api.nvim_create_user_command("TokamakApprove", approval.approve_command, { nargs = "?", desc = "Approve what Tokamak asks" })
  vim.api.nvim_create_user_command("TokamakReject", approval.reject_command, { nargs = "*", desc = "Reject what Tokamak asks, saying why" })
end

return M
