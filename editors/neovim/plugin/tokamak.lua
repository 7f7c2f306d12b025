-- Tokamak needs require("tokamak").setup{} to start; nothing happens on load.
if vim.g.loaded_tokamak then
  return
end
vim.g.loaded_tokamak = true
