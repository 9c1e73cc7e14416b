'use strict';
// Smoke test of extension.js without VS Code: `vscode` and `vscode-languageclient/node` are
// replaced by recording stubs; activate() must start one client with the server command of
// server-command.js, the Python file/notebook selectors and the restart command.
// Run: node test/activate.test.js [WORKSPACE_FOLDER]   (prints a JSON summary; exit 1 on failure)

const Module = require('module');
const assert = require('assert');
const path = require('path');

const folder = process.argv[2] || process.cwd();
const record = { clients: [], commands: [], started: 0, stopped: 0 };
let configuration = {};

const vscodeStub = {
  workspace: {
    workspaceFolders: [{ uri: { fsPath: folder } }],
    getConfiguration: () => ({ get: (key, dflt) => (key in configuration ? configuration[key] : dflt) }),
    onDidChangeConfiguration: (fn) => { record.onConfig = fn; return { dispose() {} }; },
  },
  window: {
    createOutputChannel: () => ({ appendLine() {}, dispose() {} }),
    showErrorMessage: () => Promise.resolve(undefined),
  },
  commands: {
    registerCommand: (name, fn) => { record.commands.push(name); record[name] = fn; return { dispose() {} }; },
    executeCommand: () => Promise.resolve(),
  },
};

class LanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    record.clients.push({ id, name, serverOptions, selectors: clientOptions.documentSelector });
  }
  start() { record.started += 1; return Promise.resolve(); }
  stop() { record.stopped += 1; return Promise.resolve(); }
}
const clientStub = { LanguageClient, RevealOutputChannelOn: { Never: 4 } };

const realLoad = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === 'vscode') return vscodeStub;
  if (request === 'vscode-languageclient/node') return clientStub;
  return realLoad.call(this, request, parent, isMain);
};

(async () => {
  const ext = require(path.join(__dirname, '..', 'extension.js'));
  const context = { subscriptions: [] };
  await ext.activate(context);
  assert.strictEqual(record.clients.length, 1);
  assert.strictEqual(record.started, 1);
  assert.deepStrictEqual(record.commands, ['reflint.restart']);
  const first = record.clients[0];
  const languages = first.selectors.map((s) => s.language);
  assert.ok(languages.every((l) => l === 'python'));
  assert.ok(first.selectors.some((s) => s.notebook));
  // A settings change restarts the server with the new command line.
  configuration = { path: '/opt/reflint/bin/reflint', args: ['--workers', '1'] };
  record.onConfig({ affectsConfiguration: (s) => s === 'reflint' });
  await new Promise((r) => setTimeout(r, 50));
  assert.strictEqual(record.stopped, 1);
  assert.strictEqual(record.clients.length, 2);
  const second = record.clients[1].serverOptions;
  assert.deepStrictEqual([second.command, ...second.args],
    ['/opt/reflint/bin/reflint', 'server', '--workers', '1']);
  configuration = { enable: false };
  await record['reflint.restart']();
  assert.strictEqual(record.clients.length, 2);  // disabled: stopped, not started again
  await ext.deactivate();
  process.stdout.write(JSON.stringify({
    command: [first.serverOptions.command, ...first.serverOptions.args],
    cwd: first.serverOptions.options.cwd,
    selectors: first.selectors,
    commands: record.commands,
    subscriptions: context.subscriptions.length,
  }) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
