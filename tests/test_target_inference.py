"""The target JAX version, when not given, is inferred: the project's declared JAX requirement
(its lowest allowed version), else the installed JAX, else the newest measured; and
``--show-settings`` says which and why."""

from __future__ import annotations

import textwrap

import pytest

from reflint import jaxversion
from reflint.cli import main
from reflint.config import Overrides, Resolver
from reflint.settings import DEFAULT_TARGET_JAX_VERSION, parse_version


@pytest.fixture(autouse=True)
def _fresh_caches(monkeypatch):
    monkeypatch.delenv("REFLINT_NO_INFER_TARGET", raising=False)
    jaxversion.declared.cache_clear()
    jaxversion.installed.cache_clear()
    declared, installed = jaxversion.declared, jaxversion.installed
    yield
    declared.cache_clear()
    installed.cache_clear()


@pytest.mark.parametrize("spec,expected", [
    (">=0.8.0", (0, 8, 0)),
    ("==0.10.2", (0, 10, 2)),
    ("~=0.9.0", (0, 9, 0)),
    (">=0.7.2,<0.11", (0, 7, 2)),
    ("<0.11", (0, 10, 2)),  # newest measured below the bound
    ("<=0.9.0", (0, 9, 0)),
    ("^0.8", (0, 8, 0)),  # Poetry
    ("==0.12.0.1", (0, 12, 0, 1)),
    (">=0.10.2rc1", (0, 10, 2)),
    ("!=0.9.0", None),
    ("", None),
])
def test_lowest_allowed(spec, expected):
    assert jaxversion.lowest_allowed(spec) == expected


def _project(tmp_path, deps, extra=""):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [project]
        name = "demo"
        dependencies = {deps!r}
        {extra}
        """).replace("'", '"'))
    return tmp_path


def test_declared_in_pyproject_dependencies(tmp_path):
    _project(tmp_path, ["numpy>=2", "jaxlib==0.12.0.1", "jaxtyping", "jax[cuda12]>=0.8.0"])
    (tmp_path / "src").mkdir()
    version, why = jaxversion.infer(str(tmp_path / "src"))
    assert version == (0, 8, 0)
    assert "jax[cuda12]>=0.8.0" in why and "pyproject.toml" in why


def test_declared_in_requirements_txt(tmp_path):
    (tmp_path / "requirements.txt").write_text("# pinned\nnumpy\njax==0.9.0  # cpu\n")
    version, why = jaxversion.infer(str(tmp_path))
    assert version == (0, 9, 0)
    assert "requirements.txt" in why


def test_a_pyproject_without_dependencies_is_not_parsed(tmp_path, monkeypatch):
    """A pyproject.toml that declares no dependencies (JAX's own: tool settings only) is not
    given to the TOML parser; the requirements files next to it still count."""
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nfilterwarnings = ["x"]\n')
    (tmp_path / "requirements.txt").write_text("jax>=0.9.0\n")

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(jaxversion.tomllib, "loads", no_parse)
    version, why = jaxversion.infer(str(tmp_path))
    assert version == (0, 9, 0) and "requirements.txt" in why


def test_declared_in_poetry(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry.dependencies]\npython = "^3.11"\njax = { version = "^0.10.2" }\n')
    assert jaxversion.infer(str(tmp_path))[0] == (0, 10, 2)


def test_installed_jax_when_nothing_declared(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()  # the project root: the search stops here
    monkeypatch.setattr(jaxversion, "installed", lambda: ((0, 11, 2), "jax 0.11.2 installed"))
    version, why = jaxversion.infer(str(tmp_path))
    assert version == (0, 11, 2)
    assert why.startswith("inferred from the environment")


def test_default_when_nothing_declared_or_installed(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.setattr(jaxversion, "installed", lambda: None)
    version, why = jaxversion.infer(str(tmp_path))
    assert version == parse_version(DEFAULT_TARGET_JAX_VERSION)
    assert why.startswith("default")


def test_installed_reads_metadata_without_importing_jax(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "jax", raising=False)
    found = jaxversion.installed()
    assert "jax" not in sys.modules
    try:
        from importlib.metadata import version
        expected = version("jax")
    except Exception:  # noqa: BLE001
        assert found is None
    else:
        assert found is not None and expected in found[1]


def test_installed_reads_the_first_dist_info_on_the_path(tmp_path, monkeypatch):
    # The fast path reads `jax-*.dist-info/METADATA` itself, the first one along sys.path
    # (as importlib.metadata finds it); jaxlib's is not jax's; without one, importlib decides.
    import sys

    first, second = tmp_path / "a", tmp_path / "b"
    for d, name, v in ((first, "jaxlib", "0.9.0"), (first, "jax", "0.11.2"),
                       (second, "jax", "0.8.1")):
        info = d / f"{name}-{v}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {v}\n\n"
                                       f"Version: 9.9.9 (the body, not a header)\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(first), str(second)])
    assert jaxversion._dist_info_version("jax") == "0.11.2"
    assert jaxversion.installed()[0] == (0, 11, 2)
    monkeypatch.setattr(sys, "path", [str(second)])
    assert jaxversion._dist_info_version("jax") == "0.8.1"
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing")])
    assert jaxversion._dist_info_version("jax") is None


def test_flag_and_config_win_over_inference(tmp_path):
    _project(tmp_path, ["jax>=0.8.0"], '[tool.reflint]\ntarget-jax-version = "0.9.0"')
    s = Resolver().for_dir(str(tmp_path))
    assert s.target_jax_version == (0, 9, 0) and "[tool.reflint]" in s.target_jax_source
    s = Resolver(Overrides(target_jax_version="0.7.2")).for_dir(str(tmp_path))
    assert s.target_jax_version == (0, 7, 2)
    assert s.target_jax_source == "from --target-jax-version"


def test_each_project_gets_its_own_inferred_version(tmp_path):
    (tmp_path / "a").mkdir()
    a = _project(tmp_path / "a", ["jax>=0.8.0"])
    b = tmp_path / "b"
    b.mkdir()
    (b / "requirements.txt").write_text("jax==0.10.2\n")
    r = Resolver()
    assert r.for_dir(str(a)).target_jax_version == (0, 8, 0)
    assert r.for_dir(str(b)).target_jax_version == (0, 10, 2)


# What the issue reported: the environment runs JAX 0.10.2, reflint assumed 0.12.0.1 and
# `optimization_barrier` on a ref passed the check and crashed on run.
BARRIER = """\
import jax

x_ref = jax.new_ref(1.0)
y = jax.lax.optimization_barrier(x_ref)
"""


def test_declared_version_changes_the_verdict_and_show_settings_says_why(tmp_path, capsys):
    _project(tmp_path, ["jax==0.10.2"])
    (tmp_path / "m.py").write_text(BARRIER)
    assert main(["check", "--no-cache", str(tmp_path / "m.py")]) == 1
    assert "REF007" in capsys.readouterr().out  # jax 0.10.2 rejects a ref there
    assert main(["check", "--no-cache", "--target-jax-version", "0.12.0.1",
                 str(tmp_path / "m.py")]) == 0
    capsys.readouterr()
    assert main(["check", "--show-settings", str(tmp_path / "m.py")]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("target-jax-version"))
    assert line.startswith("target-jax-version = 0.10.2  # inferred from the project's "
                           "requirement: jax==0.10.2 in ")


def test_opt_out_variable(tmp_path, monkeypatch):
    _project(tmp_path, ["jax==0.8.0"])
    monkeypatch.setenv("REFLINT_NO_INFER_TARGET", "1")
    s = Resolver().for_dir(str(tmp_path))
    assert s.target_jax_version == parse_version(DEFAULT_TARGET_JAX_VERSION)


def test_nearest_project_declaration_under_a_configured_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.reflint]\nextend-exclude = ["x"]\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "s"\ndependencies = ["jax==0.9.0"]\n')
    r = Resolver()
    s = r.for_dir(str(sub))
    assert s.target_jax_version == (0, 9, 0)
    assert s.config_file == str(tmp_path / "pyproject.toml")  # still the root's settings
    assert s.extend_exclude == ("x",)
