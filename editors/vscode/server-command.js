'use strict';
// The command line that starts the reflint language server, from the extension's settings.
// Kept free of the `vscode` module so that tests can run it with plain node
// (tests/test_vscode_extension.py starts the server it describes and sends `initialize`).

const path = require('path');

// The settings' defaults: the same values as package.json's contributes.configuration.
const DEFAULTS = Object.freeze({ path: '', args: [] });

// The reflint executables tried when `reflint.path` is empty, first found wins: a virtual
// environment in the workspace folder, then `reflint` on PATH.
function candidates(workspaceFolder, platform) {
  const win = (platform || process.platform) === 'win32';
  const exe = win ? path.join('Scripts', 'reflint.exe') : path.join('bin', 'reflint');
  const out = [];
  if (workspaceFolder) {
    for (const venv of ['.venv', 'venv']) {
      out.push(path.join(workspaceFolder, venv, exe));
    }
  }
  out.push('reflint');
  return out;
}

// ${workspaceFolder}, ${userHome} and ~ in a setting, as VS Code users write them.
function expand(value, workspaceFolder) {
  const home = process.env.HOME || process.env.USERPROFILE || '';
  let v = String(value);
  if (v === '~' || v.startsWith('~/')) v = home + v.slice(1);
  return v.replace(/\$\{workspaceFolder\}/g, workspaceFolder || '')
          .replace(/\$\{userHome\}/g, home);
}

// { command, args } for `reflint server`: `settings.path` (an executable) or the first
// existing candidate; `settings.args` are appended after `server` (e.g. ["--workers", "2"]).
// `exists` is injectable for tests (default: fs.existsSync).
function serverCommand(settings, workspaceFolder, exists) {
  const s = Object.assign({}, DEFAULTS, settings || {});
  const isFile = exists || require('fs').existsSync;
  let command = s.path ? expand(s.path, workspaceFolder) : '';
  if (!command) {
    command = candidates(workspaceFolder).find((c) => c === 'reflint' || isFile(c));
  }
  const extra = Array.isArray(s.args) ? s.args.map((a) => expand(a, workspaceFolder)) : [];
  return { command, args: ['server', ...extra] };
}

module.exports = { DEFAULTS, candidates, expand, serverCommand };

if (require.main === module) {
  // node server-command.js [SETTINGS_JSON [WORKSPACE_FOLDER]]: print the command line as JSON.
  const settings = process.argv[2] ? JSON.parse(process.argv[2]) : {};
  const r = serverCommand(settings, process.argv[3] || process.cwd());
  process.stdout.write(JSON.stringify([r.command, ...r.args]) + '\n');
}
