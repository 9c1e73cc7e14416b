-- Drive reflint server from Neovim's built-in LSP client (headless), writing a transcript.
local out = assert(io.open(os.getenv("TRANSCRIPT") or "transcript.txt", "w"))
local function say(fmt, ...)
  out:write(string.format(fmt, ...) .. "\n")
  out:flush()
end

local reflint = os.getenv("REFLINT") or "reflint"
vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    local id = vim.lsp.start_client({
      name = "reflint",
      cmd = { reflint, "server" },
      root_dir = vim.fn.getcwd(),
    })
    vim.lsp.buf_attach_client(args.buf, id)
    local v = vim.version()
    say("[nvim %d.%d.%d] started `%s server` (client id %d), attached to %s",
        v.major, v.minor, v.patch, reflint, id, vim.api.nvim_buf_get_name(args.buf))
  end,
})

-- Log every publishDiagnostics the server sends.
local orig = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
  say("<- textDocument/publishDiagnostics version=%s, %d diagnostic(s)", tostring(result.version), #result.diagnostics)
  for _, d in ipairs(result.diagnostics) do
    say("     %d:%d %s %s", d.range.start.line + 1, d.range.start.character + 1, d.code, d.message)
    if d.codeDescription then say("       docs: %s", d.codeDescription.href) end
  end
  return orig(err, result, ctx, config)
end

local function diags()
  return vim.diagnostic.get(0)
end

local function run()
  local buf = vim.api.nvim_get_current_buf()
  say("opened %s (%d lines)", vim.api.nvim_buf_get_name(buf), vim.api.nvim_buf_line_count(buf))
  assert(vim.wait(20000, function() return #diags() > 0 end, 20), "no diagnostics")
  local all = diags()
  table.sort(all, function(a, b) return a.lnum < b.lnum end)
  local d = all[1]
  say("vim.diagnostic.get(0): %d diagnostic(s); first at %d:%d", #diags(), d.lnum + 1, d.col + 1)
  -- Put the cursor on the first finding and ask for code actions, as <leader>ca would.
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col })
  say("cursor on line %d: %s", d.lnum + 1, vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1])
  local hover = vim.lsp.buf_request_sync(buf, "textDocument/hover", vim.lsp.util.make_position_params(), 5000)
  for _, r in pairs(hover or {}) do
    if r.result then
      local first = vim.split(r.result.contents.value, "\n")
      say("hover: %s", first[1])
      for i = 2, math.min(#first, 6) do say("       %s", first[i]) end
    end
  end
  local chosen
  vim.ui.select = function(items, opts, on_choice)
    say("code actions offered:")
    for _, item in ipairs(items) do
      say("  - %s [%s]%s", item[2].title, item[2].kind or "", item[2].isPreferred and " (preferred)" or "")
    end
    for _, item in ipairs(items) do
      if item[2].title == "Read the ref with [...]" then
        chosen = item
      end
    end
    say("choosing: %s", chosen[2].title)
    on_choice(chosen)
  end
  vim.lsp.buf.code_action()
  local before = #diags()
  assert(vim.wait(10000, function()
    return vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]:find("[...]", 1, true) ~= nil
      and chosen ~= nil
  end, 20), "the quick fix was not applied")
  say("after the quick fix, line %d: %s", d.lnum + 1, vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1])
  assert(vim.wait(20000, function() return #diags() == before - 1 end, 20), "the diagnostic did not go away")
  say("vim.diagnostic.get(0): %d diagnostic(s) left", #diags())
  -- Fix all the rest with the source.fixAll.reflint action.
  vim.ui.select = function(items, opts, on_choice)
    for _, item in ipairs(items) do
      if item[2].kind == "source.fixAll.reflint" then
        say("choosing: %s [%s]", item[2].title, item[2].kind)
        return on_choice(item)
      end
    end
  end
  vim.lsp.buf.code_action({ only = { "source.fixAll" } })
  assert(vim.wait(20000, function() return #diags() == 0 end, 20), "fix-all did not clean the file")
  say("vim.diagnostic.get(0): %d diagnostic(s) left", #diags())
  vim.cmd("write")
  say("wrote %s", vim.api.nvim_buf_get_name(buf))
  vim.lsp.stop_client(vim.lsp.get_active_clients())
  vim.wait(500)
  out:close()
  vim.cmd("qa!")
end

vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    local ok, err = pcall(run)
    if not ok then
      say("FAILED: %s", err)
      out:close()
      vim.cmd("cquit 1")
    end
  end,
})
