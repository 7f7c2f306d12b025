--- :checkhealth tokamak — the binary, its version, the attached client and the model.
local M = {}

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
  if client then
    health.ok("attached: client " .. client.id .. " (" .. table.concat(cmd, " ") .. ")")
  else
    health.info("not attached to any buffer yet (open a Python or TypeScript file)")
  end
  local root = vim.fs.root(0, tokamak.config.root_markers or { ".git" }) or vim.fn.getcwd()
  local check = vim.system({ binary, "model", "check" }, { text = true, cwd = root }):wait(60000)
  local out = vim.trim((check.stdout or "") .. (check.stderr or ""))
  if check.code == 0 then
    health.ok("model reachable: " .. out:gsub("\n", "; "))
  else
    health.warn("model not reachable: " .. out, { "Fixes that need no model still work; see docs/CONFIG.md [model]" })
  end
end

return M
