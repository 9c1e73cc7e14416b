'use strict';
// reflint for VS Code: a language client that starts `reflint server` (stdio) for Python
// files and notebook cells. Findings, quick fixes, "Fix all" (source.fixAll.reflint) and hover
// come from the server; this file only starts, restarts and stops it.

const vscode = require('vscode');
const { LanguageClient, RevealOutputChannelOn } = require('vscode-languageclient/node');
const { serverCommand } = require('./server-command');

let client;
let output;

function settings() {
  const c = vscode.workspace.getConfiguration('reflint');
  return { path: c.get('path', ''), args: c.get('args', []), enable: c.get('enable', true) };
}

function workspaceFolder() {
  const folders = vscode.workspace.workspaceFolders;
  return folders && folders.length ? folders[0].uri.fsPath : undefined;
}

async function start() {
  const s = settings();
  if (!s.enable) return;
  const folder = workspaceFolder();
  const { command, args } = serverCommand(s, folder);
  output.appendLine(`Starting: ${command} ${args.join(' ')}`);
  const serverOptions = { command, args, options: { cwd: folder } };
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'python' },
      { scheme: 'untitled', language: 'python' },
      { notebook: '*', language: 'python' },
    ],
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
  };
  client = new LanguageClient('reflint', 'reflint', serverOptions, clientOptions);
  try {
    await client.start();
  } catch (err) {
    const msg = `reflint: could not start "${command} ${args.join(' ')}" (${err && err.message}). ` +
      'Install it with `python -m pip install "jax-reflint[server]"` or set reflint.path.';
    output.appendLine(msg);
    vscode.window.showErrorMessage(msg, 'Open settings').then((pick) => {
      if (pick) vscode.commands.executeCommand('workbench.action.openSettings', 'reflint.');
    });
    client = undefined;
  }
}

async function stop() {
  if (client) {
    const c = client;
    client = undefined;
    try { await c.stop(); } catch (_) { /* already gone */ }
  }
}

async function restart() {
  await stop();
  await start();
}

async function activate(context) {
  output = vscode.window.createOutputChannel('reflint');
  context.subscriptions.push(output);
  context.subscriptions.push(vscode.commands.registerCommand('reflint.restart', restart));
  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration('reflint')) restart();
  }));
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
