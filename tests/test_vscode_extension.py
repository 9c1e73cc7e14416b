"""The VS Code extension (editors/vscode/): its manifest, the command line it starts the server
with (a real ``reflint server`` started from it answers ``initialize``), its activation with
VS Code stubbed out, and, behind the ``slow`` marker, the ``.vsix`` that build.sh makes (npm
registry needed; .ci/run builds it once and passes it in ``REFLINT_VSIX``).

Needs node (skipped with the reason when it is missing); VS Code itself is not run here."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXT = ROOT / "editors" / "vscode"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (the VS Code "
                                                     "extension is JavaScript)")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def manifest() -> dict:
    return json.loads((EXT / "package.json").read_text(encoding="utf-8"))


def node(*args: str, cwd=EXT) -> str:
    out = subprocess.run([NODE, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def command_line(settings: dict, folder) -> list:
    return json.loads(node("server-command.js", json.dumps(settings), str(folder)))


# -- the manifest -----------------------------------------------------------------------------

def test_manifest_activates_on_python_and_notebooks_and_runs_extension_js():
    m = manifest()
    assert set(m["activationEvents"]) == {"onLanguage:python", "onNotebook:jupyter-notebook"}
    assert (EXT / m["main"]).is_file()
    assert m["engines"]["vscode"].startswith("^1.")
    assert [c["command"] for c in m["contributes"]["commands"]] == ["reflint.restart"]


def test_manifest_version_is_reflints():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert manifest()["version"] == project["version"]


def test_setting_defaults_are_the_ones_server_command_js_uses():
    props = manifest()["contributes"]["configuration"]["properties"]
    defaults = json.loads(node("-p", "JSON.stringify(require('./server-command.js').DEFAULTS)"))
    assert {k: props[f"reflint.{k}"]["default"] for k in defaults} == defaults
    assert props["reflint.enable"]["default"] is True


def test_dependencies_are_pinned_and_locked():
    m = manifest()
    lock = json.loads((EXT / "package-lock.json").read_text(encoding="utf-8"))
    for name, version in {**m["dependencies"], **m["devDependencies"]}.items():
        assert version[0].isdigit(), (name, version)  # exact versions, no ranges
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    assert set(m["dependencies"]) == {"vscode-languageclient"}


@pytest.mark.parametrize("doc", ["README.md", "docs/integrations/vscode.md",
                                 "editors/vscode/README.md"])
def test_install_docs_name_the_vsix_build_sh_makes(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    assert "code --install-extension " in text
    assert f"reflint-{manifest()['version']}.vsix" in text


# -- the server command line -----------------------------------------------------------------

def test_default_command_line_is_reflint_server_on_path(tmp_path):
    assert command_line({}, tmp_path) == ["reflint", "server"]


def test_default_command_line_prefers_the_workspace_venv(tmp_path):
    exe = tmp_path / ".venv" / "bin" / "reflint"
    exe.parent.mkdir(parents=True)
    exe.write_text("")
    assert command_line({}, tmp_path) == [str(exe), "server"]


def test_path_and_args_settings(tmp_path):
    got = command_line({"path": "${workspaceFolder}/env/bin/reflint",
                        "args": ["--workers", "2"]}, tmp_path)
    assert got == [f"{tmp_path}/env/bin/reflint", "server", "--workers", "2"]


def _workspace_with_reflint(tmp_path) -> pathlib.Path:
    """A workspace whose ``.venv/bin/reflint`` is this interpreter's reflint (the extension's
    default command line finds it there)."""
    exe = tmp_path / ".venv" / "bin" / "reflint"
    exe.parent.mkdir(parents=True)
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -m reflint \"$@\"\n")
    exe.chmod(0o755)
    return exe


@pytest.mark.asyncio(loop_scope="function")
async def test_the_default_command_line_starts_a_server_that_answers_initialize(tmp_path):
    pytest.importorskip("pygls")
    pytest.importorskip("pytest_lsp")
    from lsprotocol import types
    from pygls.uris import from_fs_path

    from lsp_helpers import capabilities, make_client

    exe = _workspace_with_reflint(tmp_path)
    cmd = command_line({}, tmp_path)
    assert cmd == [str(exe), "server"]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    client = make_client()
    await client.start_io(cmd[0], *cmd[1:], env=env, cwd=str(tmp_path))
    try:
        result = await client.initialize_session(types.InitializeParams(
            capabilities=capabilities(), root_uri=from_fs_path(str(tmp_path))))
        assert result.server_info.name == "reflint"
        assert result.capabilities.code_action_provider
        assert result.capabilities.hover_provider
    finally:
        await client.shutdown_session()


def test_activate_starts_one_client_with_that_command_and_the_python_selectors(tmp_path):
    summary = json.loads(node("test/activate.test.js", str(tmp_path)))
    assert summary["command"] == ["reflint", "server"]
    assert summary["cwd"] == str(tmp_path)
    assert {"scheme": "file", "language": "python"} in summary["selectors"]
    assert {"notebook": "*", "language": "python"} in summary["selectors"]
    assert summary["commands"] == ["reflint.restart"]


# -- the .vsix ---------------------------------------------------------------------------------

def check_vsix(path) -> dict:
    """The checks a built .vsix must pass; returns its package.json."""
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        for required in ("extension.vsixmanifest", "extension/package.json",
                         "extension/extension.js", "extension/server-command.js",
                         "extension/node_modules/vscode-languageclient/node.js",
                         "extension/node_modules/vscode-languageclient/package.json"):
            assert required in names, required
        assert not any(n.startswith("extension/node_modules/@vscode/vsce") for n in names)
        assert not any(n.startswith("extension/test/") for n in names)
        packaged = json.loads(z.read("extension/package.json"))
        assert z.read("extension/extension.js") == (EXT / "extension.js").read_bytes()
        assert z.read("extension/server-command.js") == (EXT / "server-command.js").read_bytes()
        vsixmanifest = z.read("extension.vsixmanifest").decode()
    assert packaged["activationEvents"] == manifest()["activationEvents"]
    assert packaged["contributes"] == manifest()["contributes"]
    assert f'Version="{manifest()["version"]}"' in vsixmanifest
    return packaged


@pytest.mark.slow
def test_build_sh_makes_an_installable_vsix(tmp_path):
    vsix = os.environ.get("REFLINT_VSIX")
    if not vsix and os.environ.get("REFLINT_VSIX_UNAVAILABLE"):
        pytest.skip(os.environ["REFLINT_VSIX_UNAVAILABLE"])
    if not vsix:
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed (build.sh needs it)")
        out = subprocess.run([str(EXT / "build.sh"), str(tmp_path)], capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        vsix = out.stdout.strip().splitlines()[-1]
    assert os.path.basename(vsix) == f"reflint-{manifest()['version']}.vsix"
    check_vsix(vsix)
