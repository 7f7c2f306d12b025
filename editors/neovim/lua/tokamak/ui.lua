--- What Tokamak says in Neovim, without stopping you: messages (one line each with Neovim's
--- own vim.notify, so no "Press ENTER" prompt ever interrupts a run; whole to a vim.notify
--- that a plugin such as nvim-notify, fidget or noice replaced), the progress of a run (a
--- one-line float at the bottom right, and `statusline()` for your statusline), and the last
--- messages for :TokamakStatus.
local M = {}

--- The last messages said, newest last, whole.
M.history = {}
--- What the running runs are doing: run id → { title, message }.
M.running = {}

local progress_win, progress_buf = nil, nil

--- Whether vim.notify is Neovim's own (which shows a long or multi-line message with a
--- hit-enter prompt).
local function builtin_notify()
  local info = debug.getinfo(vim.notify, "S")
  return info ~= nil and info.source ~= nil and info.source:find("vim/_editor", 1, true) ~= nil
end

--- `message` as one line that fits the command line without a prompt.
function M.one_line(message)
  local line = (message:gsub("%s*\n%s*", " · "))
  local room = math.max(20, (vim.v.echospace or vim.o.columns - 12) - 1)
  if vim.fn.strdisplaywidth(line) > room then
    -- by screen cells, not characters: a Korean character takes two
    local cut = math.min(vim.fn.strchars(line), room - 1)
    while cut > 0 and vim.fn.strdisplaywidth(vim.fn.strcharpart(line, 0, cut)) > room - 1 do
      cut = cut - 1
    end
    line = vim.fn.strcharpart(line, 0, cut) .. "…"
  end
  return line
end

--- `lines` with each line that holds newlines split (a buffer's lines cannot hold them).
function M.lines(lines)
  local out = {}
  for _, line in ipairs(lines) do
    vim.list_extend(out, vim.split(tostring(line), "\n", { plain = true }))
  end
  return out
end

--- Says `message` once: whole to a replaced vim.notify, one line to Neovim's own.
function M.say(message, level)
  table.insert(M.history, message)
  if #M.history > 50 then
    table.remove(M.history, 1)
  end
  if builtin_notify() then
    vim.notify(M.one_line(message), level)
  else
    vim.notify(message, level, { title = "Tokamak" })
  end
end

--- The progress float's text: each running run's title and latest message.
local function progress_text()
  local parts = {}
  for _, p in pairs(M.running) do
    local text = (p.title or ""):gsub("^Tokamak:%s*", "")
    if p.message and p.message ~= "" then
      text = text ~= "" and (text .. ": " .. p.message) or p.message
    end
    table.insert(parts, text)
  end
  return table.concat(parts, " | ")
end

--- For your statusline: `%{v:lua.require'tokamak.ui'.statusline()}` — what Tokamak is doing,
--- or an empty string.
function M.statusline()
  local text = progress_text()
  return text ~= "" and ("⚡ Tokamak: " .. text) or ""
end

local function close_float()
  if progress_win and vim.api.nvim_win_is_valid(progress_win) then
    vim.api.nvim_win_close(progress_win, true)
  end
  progress_win = nil
end

local function draw_float()
  local text = progress_text()
  if text == "" or not require("tokamak").config.progress then
    return close_float()
  end
  local line = "⚡ " .. M.one_line(text)
  local width = math.min(vim.fn.strdisplaywidth(line) + 1, math.max(20, vim.o.columns - 4))
  if not progress_buf or not vim.api.nvim_buf_is_valid(progress_buf) then
    progress_buf = vim.api.nvim_create_buf(false, true)
    vim.bo[progress_buf].bufhidden = "hide"
  end
  vim.api.nvim_buf_set_lines(progress_buf, 0, -1, false, { line })
  local config = {
    relative = "editor",
    anchor = "SE",
    row = vim.o.lines - vim.o.cmdheight - 1,
    col = vim.o.columns,
    width = width,
    height = 1,
    style = "minimal",
    focusable = false,
    zindex = 45,
    noautocmd = true,
  }
  if progress_win and vim.api.nvim_win_is_valid(progress_win) then
    config.noautocmd = nil
    vim.api.nvim_win_set_config(progress_win, config)
  else
    progress_win = vim.api.nvim_open_win(progress_buf, false, config)
    vim.wo[progress_win].winhighlight = "Normal:Comment"
  end
end

--- A run's work-done progress (`$/progress` from Tokamak: begin, report, end).
function M.on_progress(run_id, value)
  if type(value) ~= "table" then
    return
  end
  if value.kind == "end" then
    M.running[run_id] = nil
  else
    local p = M.running[run_id] or {}
    p.title = value.title or p.title
    p.message = value.message or p.message
    M.running[run_id] = p
  end
  draw_float()
  require("tokamak.plan").on_progress(run_id, M.running[run_id])
  vim.cmd("redrawstatus")
end

--- A run ended: its progress goes.
function M.on_run_finished(run_id)
  M.running[run_id] = nil
  draw_float()
  require("tokamak.plan").on_progress(run_id, nil)
end

--- A float with `lines` (`title` on its border) in the middle of the editor, closed with q or
--- <Esc>; focused unless `opts.enter` is false.
function M.float(lines, title, opts)
  local enter = not (opts and opts.enter == false)
  lines = M.lines(lines)
  local width = 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 1, math.max(20, vim.o.columns - 6))
  local height = math.max(1, math.min(#lines, vim.o.lines - 6))
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  local win = vim.api.nvim_open_win(buf, enter, {
    relative = "editor",
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    width = width,
    height = height,
    style = "minimal",
    border = "rounded",
    title = " " .. title .. " ",
  })
  vim.wo[win].wrap = true
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, "<cmd>close<cr>", { buffer = buf, nowait = true })
  end
  return win, buf
end

return M
