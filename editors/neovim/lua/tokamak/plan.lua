--- Tokamak's task agent in Neovim: :TokamakPlan, :TokamakRun, :TokamakImplement, the goal
--- asked with vim.ui.input (with completion from the goals of this session), and the plan
--- window — a split with one line per step, its status glyph and the running step's mode,
--- kept current from `tokamak/planUpdated`; <CR> on a step shows its role, mode, detail, note
--- and changed files.
local M = {}

--- Plans by id, as the server last described them, and the id of the latest.
M.plans = {}
M.last_plan_id = nil
--- Every `tokamak/planUpdated` received, in order (for statuslines and tests).
M.updates = {}
--- Goals given in this session, newest last (completion for the goal prompt).
M.goals = {}

local GLYPHS = {
  pending = "○",
  running = "⚡",
  done = "✓",
  failed = "✗",
  rejected = "✗",
  nothing_changed = "✗",
  not_applied = "✗",
  cancelled = "⊘",
}
local window_name = "tokamak://plan"
--- The plan window's buffer and the step id on each of its lines.
local plan_buf, line_steps = nil, {}

local function remember_goal(goal)
  for i, g in ipairs(M.goals) do
    if g == goal then
      table.remove(M.goals, i)
      break
    end
  end
  table.insert(M.goals, goal)
end

--- Completion for the goal prompt: earlier goals that start with what is typed.
function M.complete_goal(arglead)
  local out = {}
  for i = #M.goals, 1, -1 do
    if vim.startswith(M.goals[i], arglead or "") then
      table.insert(out, M.goals[i])
    end
  end
  return out
end

--- The lines of the plan window for `plan`.
function M.render(plan)
  local lines, steps = { "Goal: " .. (plan.goal or "") }, { false }
  for _, step in ipairs(plan.steps or {}) do
    local line = string.format("%s %s. %s", step.glyph or GLYPHS[step.status] or "?", step.id, step.title)
    if step.depends_on and #step.depends_on > 0 then
      line = line .. " [depends: " .. table.concat(step.depends_on, ", ") .. "]"
    end
    -- the running step's current mode, as each outcome moves it (implementation → test → qa)
    if step.status == "running" and step.mode and step.mode ~= "" then
      line = line .. " — " .. step.mode
    end
    -- a step that was not done says how (rejected, not applied …), and what replaced it
    if step.status ~= "done" and step.status ~= "running" and step.status ~= "pending" and step.status ~= "failed" then
      line = line .. " — " .. step.status:gsub("_", " ")
    end
    if step.replaced_by and #step.replaced_by > 0 then
      line = line .. " (replaced by " .. table.concat(step.replaced_by, ", ") .. ")"
    end
    table.insert(lines, line)
    table.insert(steps, step.id)
  end
  return lines, steps
end

local function current_plan()
  return M.last_plan_id and M.plans[M.last_plan_id]
end

--- What the current plan's run is doing now (its latest progress message), while it runs.
M.doing = nil

local function redraw()
  local plan = current_plan()
  if not plan or not plan_buf or not vim.api.nvim_buf_is_valid(plan_buf) then
    return
  end
  local lines
  lines, line_steps = M.render(plan)
  -- the run's progress, below the steps, while it runs
  if M.doing and M.doing ~= "" then
    table.insert(lines, "  … " .. M.doing)
  end
  vim.bo[plan_buf].modifiable = true
  -- a line a step: a title or progress message with a newline is joined, not split
  for i, line in ipairs(lines) do
    lines[i] = (line:gsub("%s*\n%s*", " · "))
  end
  vim.api.nvim_buf_set_lines(plan_buf, 0, -1, false, lines)
  vim.bo[plan_buf].modifiable = false
  for _, win in ipairs(vim.fn.win_findbuf(plan_buf)) do
    vim.api.nvim_win_set_height(win, math.min(#lines, 15))
  end
end

--- The step under the cursor in the plan window.
local function step_at_cursor()
  local plan = current_plan()
  local id = line_steps[vim.api.nvim_win_get_cursor(0)[1]]
  if not plan or not id then
    return nil
  end
  for _, step in ipairs(plan.steps or {}) do
    if step.id == id then
      return step
    end
  end
end

--- The lines <CR> shows for a step.
function M.describe(step)
  local lines = { string.format("%s %s. %s (%s)", step.glyph or "", step.id, step.title, step.status) }
  if step.role and step.role ~= "" then
    table.insert(lines, "Role: " .. step.role)
  end
  if step.mode and step.mode ~= "" then
    table.insert(lines, "Mode: " .. step.mode)
  end
  if step.status == "running" and M.doing and M.doing ~= "" then
    table.insert(lines, "Doing: " .. M.doing)
  end
  if step.detail and step.detail ~= "" then
    table.insert(lines, "")
    vim.list_extend(lines, vim.split(step.detail, "\n"))
  end
  if step.note and step.note ~= "" then
    table.insert(lines, "")
    table.insert(lines, step.note)
  end
  if step.files and #step.files > 0 then
    table.insert(lines, "")
    table.insert(lines, "Files: " .. table.concat(step.files, ", "))
  end
  return lines
end

local detail_win = nil

local function close_detail()
  if detail_win and vim.api.nvim_win_is_valid(detail_win) then
    vim.api.nvim_win_close(detail_win, true)
  end
  detail_win = nil
end

--- <CR> in the plan window: the step's detail, note and files in a float over the editor
--- (the plan window itself is too short to anchor one), closed when the cursor moves.
function M.show_step()
  local step = step_at_cursor()
  if not step then
    return
  end
  close_detail()
  -- over the editor, the cursor left in the plan window (moving it closes the float)
  detail_win = require("tokamak.ui").float(M.describe(step), "Tokamak step", { enter = false })
  vim.api.nvim_create_autocmd({ "CursorMoved", "BufLeave" }, { buffer = plan_buf, once = true, callback = close_detail })
end

--- A run's progress (`ui.on_progress`): `progress` is `{title, message}`, or nil at its end.
function M.on_progress(run_id, progress)
  local plan = current_plan()
  if plan and plan.run_id and plan.run_id ~= run_id then
    return
  end
  M.doing = progress and progress.message or nil
  redraw()
end

--- Opens (or shows again) the plan window below the current one; `opts.focus` moves the
--- cursor there (:TokamakPlanWindow), otherwise it stays where it was.
function M.open_window(opts)
  if not plan_buf or not vim.api.nvim_buf_is_valid(plan_buf) then
    plan_buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(plan_buf, window_name)
    vim.bo[plan_buf].bufhidden = "hide"
    vim.bo[plan_buf].filetype = "tokamak-plan"
    vim.keymap.set("n", "<CR>", M.show_step, { buffer = plan_buf, desc = "Show the step's detail and files" })
    vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = plan_buf, desc = "Close the plan window" })
  end
  if #vim.fn.win_findbuf(plan_buf) == 0 then
    local from = vim.api.nvim_get_current_win()
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, plan_buf)
    vim.wo.number = false
    vim.wo.winfixheight = true
    vim.api.nvim_set_current_win(from)
  end
  redraw()
  if opts and opts.focus then
    local win = vim.fn.win_findbuf(plan_buf)[1]
    if win then
      vim.api.nvim_set_current_win(win)
    end
  end
  return plan_buf
end

--- `tokamak/planUpdated`: remember the plan and redraw the window.
function M.on_plan_updated(_, plan)
  if type(plan) ~= "table" or not plan.plan_id then
    return
  end
  M.plans[plan.plan_id] = plan
  M.last_plan_id = plan.plan_id
  table.insert(M.updates, plan)
  redraw()
end

--- The goal from a command's words, or asked for with vim.ui.input; `then_(goal)` when given.
function M.with_goal(words, then_)
  if words and vim.trim(words) ~= "" then
    remember_goal(vim.trim(words))
    return then_(vim.trim(words))
  end
  vim.ui.input({
    prompt = "Tokamak goal: ",
    default = "",
    completion = "customlist,v:lua.require'tokamak.plan'.complete_goal_cmdline",
  }, function(goal)
    if goal and vim.trim(goal) ~= "" then
      remember_goal(vim.trim(goal))
      then_(vim.trim(goal))
    end
  end)
end

--- customlist completion (arglead, cmdline, cursorpos) for the goal prompt.
function M.complete_goal_cmdline(arglead)
  return M.complete_goal(arglead)
end

return M
