--- :checkhealth tokamak — the binary and its version, then what the running server says of
--- its own session (the model it uses and whether it answers, the folder's trust, the
--- approval level, the sandbox, the checkers it found): the same settings and trust as your
--- runs, not a separate process's. Without an attached server, the binary's `model check`.
local M = {}

--- A request to the client, waited for (at most `ms`); the result, or nil and why not.
local function ask(client, command, ms)
  local params = { command = command, arguments = { vim.empty_dict() } }
  local response, err
  if vim.fn.has("nvim-0.11") == 1 then
    response, err = client:request_sync("workspace/executeCommand", params, ms)
  else
    response, err = client.request_sync("workspace/executeCommand", params, ms)
  end
  if not response then
    return nil, err or "no answer"
  end
  if response.err then
    return nil, response.err.message or vim.inspect(response.err)
  end
  return response.result
end

function M.check()
  local tokamak = require("tokamak")
  local health = vim.health
  health.start("tokamak")
  local cmd = tokamak.config.cmd or { "tokamak", "lsp" }
  local binary = cmd[1]
  if vim.fn.executable(binary) ~= 1 then
    health.error(binary .. " not found", { "Install it (cargo install --path .) or set cmd in require('tokamak').setup{}" })
    return
  end
  health.ok("binary: " .. vim.fn.exepath(binary))
  local version = vim.system({ binary, "--version" }, { text = true }):wait(10000)
  if version.code == 0 then
    health.ok("version: " .. vim.trim(version.stdout))
  else
    health.error("`" .. binary .. " --version` failed: " .. vim.trim(version.stderr or ""))
  end
  local client = tokamak.client()
  if not client then
    health.info("not attached to any buffer yet (open a Python or TypeScript file): checking the model from the command line")
    local root = vim.fs.root(0, tokamak.config.root_markers or { ".git" }) or vim.fn.getcwd()
    local check = vim.system({ binary, "model", "check" }, { text = true, cwd = root }):wait(60000)
    local out = vim.trim((check.stdout or "") .. (check.stderr or ""))
    if check.code == 0 then
      health.ok("model reachable: " .. out:gsub("\n", "; "))
    else
      health.warn("model not reachable: " .. out, { "Fixes that need no model still work; see docs/CONFIG.md [model]" })
    end
    return
  end
  health.ok("attached: client " .. client.id .. " (" .. table.concat(cmd, " ") .. ")")
  local status, why = ask(client, "tokamak.status", 10000)
  if not status then
    health.error("the running server did not answer tokamak.status: " .. tostring(why))
    return
  end
  health.start("tokamak: the running session")
  local model = status.model or {}
  local check = ask(client, "tokamak.checkModel", 30000)
  if model.error then
    health.warn("model: not set up: " .. model.error, { "Set settings.model in require('tokamak').setup{} or [model] in tokamak.toml" })
  elseif check and check.ok then
    health.ok(string.format("model reachable: %s at %s answered in %d ms", check.model, check.endpoint, check.latency_ms or 0))
  else
    health.warn(
      string.format("model %s at %s not reachable: %s", model.name or "?", model.endpoint or "?", check and check.error or "no answer"),
      { "Fixes that need no model still work; see docs/CONFIG.md [model]" }
    )
  end
  if status.trusted then
    health.ok("folder trusted (" .. (status.trust or "") .. ")")
  else
    health.warn("folder not trusted (" .. (status.trust or "") .. "): its tokamak.toml commands, model URLs and programs are not used", {
      "Trust it with `tokamak trust`, or setup{ trusted = true }",
    })
  end
  health.info("approval: " .. (status.approval or "?"))
  if status.sandbox then
    if status.sandbox:find("not isolated", 1, true) then
      health.warn("sandbox: " .. status.sandbox, { "Install bubblewrap, or see `tokamak sandbox`" })
    else
      health.ok("sandbox: " .. status.sandbox)
    end
  end
  for _, line in ipairs(status.checkers or {}) do
    health.info("checker " .. line)
  end
end

return M
