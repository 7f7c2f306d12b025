--- Approvals: each `tokamak/approvalRequested` is shown in a floating window with the diff
--- of what the agent wants to do. In it, `a` approves, `r` rejects with a reason (asked
--- with vim.ui.input) and `q` closes the window, leaving the question waiting.
--- :TokamakApprove [id] and :TokamakReject [id] [reason] answer from anywhere (without an id:
--- the question shown, else the oldest). The plugin tells the server it shows approvals
--- itself (the experimental capability tokamak.approvals), so no other prompt appears.
local M = {}

--- The questions waiting, by id, and their order of arrival.
M.pending = {}
M.order = {}
--- Every answer given, in order (for statuslines and tests): { id, answer, reason }.
M.answers = {}

local shown = { win = nil, buf = nil, id = nil }

local function tokamak()
  return require("tokamak")
end

local function forget(id)
  M.pending[id] = nil
  for i, other in ipairs(M.order) do
    if other == id then
      table.remove(M.order, i)
      break
    end
  end
end

local function close()
  if shown.win and vim.api.nvim_win_is_valid(shown.win) then
    vim.api.nvim_win_close(shown.win, true)
  end
  shown.win, shown.buf, shown.id = nil, nil, nil
end

--- The id meant by a command: `id` when given, else the question shown, else the oldest.
local function chosen(id)
  if id and id ~= "" then
    return id
  end
  return shown.id or M.order[1]
end

--- Answers question `id` ("approve", or "reject" with `reason`).
function M.answer(id, answer, reason)
  id = chosen(id)
  if not id then
    return require("tokamak.ui").say("Tokamak: no approval is waiting", vim.log.levels.WARN)
  end
  local command = answer == "approve" and "tokamak.approve" or "tokamak.reject"
  local args = { id = id }
  if answer ~= "approve" then
    args.reason = reason
  end
  tokamak().command(command, args, nil, function(err, _)
    if err then
      require("tokamak.ui").say("Tokamak: " .. (err.message or vim.inspect(err)), vim.log.levels.WARN)
      -- a question the server no longer has (its run ended, the server restarted) is gone
      if not (err.message or ""):find("no approval " .. id .. " is waiting", 1, true) then
        return
      end
    else
      table.insert(M.answers, { id = id, answer = answer, reason = reason })
    end
    forget(id)
    if shown.id == id then
      close()
    end
    M.show_next()
  end)
end

--- Rejects `id`, asking why (an empty answer is a plain no; <Esc> asks nothing).
function M.reject_asking(id)
  id = chosen(id)
  vim.ui.input({ prompt = "Tokamak: why not? " }, function(reason)
    if reason == nil then
      return
    end
    M.answer(id, "reject", reason ~= "" and reason or nil)
  end)
end

local function lines_of(params)
  local lines = {
    string.format("Tokamak (%s) wants to %s.", params.run_id or "?", params.summary or params.action or "act"),
    "",
  }
  local diff = params.diff or ""
  if diff ~= "" then
    vim.list_extend(lines, vim.split(diff, "\n", { plain = true, trimempty = true }))
    table.insert(lines, "")
  end
  table.insert(lines, "a approve · r reject (with a reason) · q later (:TokamakApprove, :TokamakReject)")
  return lines
end

--- Shows question `id` in the floating window.
function M.show(id)
  local params = M.pending[id]
  if not params then
    return
  end
  close()
  local lines = lines_of(params)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 4))
  local height = math.min(#lines, math.max(3, vim.o.lines - 4))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    row = math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    width = width,
    height = height,
    style = "minimal",
    border = "rounded",
    title = " Tokamak approval " .. id .. " ",
  })
  shown.win, shown.buf, shown.id = win, buf, id
  local function map(key, fn, desc)
    vim.keymap.set("n", key, fn, { buffer = buf, nowait = true, desc = desc })
  end
  map("a", function() M.answer(id, "approve") end, "Approve")
  map("r", function() M.reject_asking(id) end, "Reject with a reason")
  map("q", close, "Answer later")
end

--- Shows the oldest question waiting, if no window is open.
function M.show_next()
  if shown.win and vim.api.nvim_win_is_valid(shown.win) then
    return
  end
  if M.order[1] then
    M.show(M.order[1])
  end
end

--- The `tokamak/approvalRequested` handler.
function M.on_approval_requested(_, params)
  if type(params) ~= "table" or not params.id then
    return
  end
  M.pending[params.id] = params
  table.insert(M.order, params.id)
  vim.schedule(M.show_next)
end

--- A run ended: its questions are no longer waiting.
function M.on_run_finished(run_id)
  for _, id in ipairs(vim.deepcopy(M.order)) do
    if M.pending[id] and M.pending[id].run_id == run_id then
      forget(id)
      if shown.id == id then
        close()
      end
    end
  end
  -- another run's question may wait behind the closed one
  vim.schedule(M.show_next)
end

--- :TokamakApprove [id]
function M.approve_command(opts)
  M.answer(opts and opts.args ~= "" and opts.args or nil, "approve")
end

--- :TokamakReject [id] [reason] — without a reason, it is asked for.
function M.reject_command(opts)
  local words = opts and opts.args or ""
  local id, reason = words:match("^(a%d+)%s*(.*)$")
  if not id then
    reason = words
  end
  if reason == "" then
    return M.reject_asking(id)
  end
  M.answer(id, "reject", reason)
end

return M
