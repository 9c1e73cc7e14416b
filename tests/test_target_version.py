"""Findings and messages follow --target-jax-version / Settings.target_jax_version."""

import json
import textwrap

import pytest

from reflint import api
from reflint.engine import lint_source
from reflint.settings import Settings, parse_version


def lint(source, version="0.10.2", select=None):
    settings = Settings(target_jax_version=parse_version(version))
    if select:
        settings.select = frozenset(select)
    return lint_source(textwrap.dedent(source), "t.py", settings).diagnostics


NEW_API = """\
    import jax
    from jax import freeze

    r = jax.new_ref(1.0, kind="no_grad_no_remat")
    out = jax.freeze(r)
    e = jax.empty_ref
"""

OLD_API = """\
    import jax

    r = jax.array_ref(1.0)
    T = jax.ArrayRef
    v = jax.ref.freeze(r)
"""


def codes_at(diags, code="REF015"):
    return sorted((d.line, d.column) for d in diags if d.code == code)


def test_new_api_is_clean_on_0_10_2_and_reported_on_older_versions():
    assert codes_at(lint(NEW_API, "0.10.2")) == []
    on_071 = lint(NEW_API, "0.7.1", {"REF015"})
    lines = sorted(d.line for d in on_071)
    # from jax import freeze, jax.new_ref, kind=, jax.freeze, jax.empty_ref
    assert lines == [2, 4, 4, 5, 6]
    assert all("0.7.1" in d.message for d in on_071)
    on_080 = lint(NEW_API, "0.8.0", {"REF015"})
    assert sorted(d.line for d in on_080) == [4, 6]  # kind= and empty_ref only
    assert "jax.freeze" not in " ".join(d.message for d in on_080)


def test_old_api_is_clean_on_0_7_1_deprecated_on_0_8_removed_on_0_9():
    assert codes_at(lint(OLD_API, "0.7.1")) == []
    deprecated = lint(OLD_API, "0.8.0", {"REF015"})
    assert [d.line for d in deprecated] == [3, 4]
    assert all("deprecated" in d.message for d in deprecated)
    removed = lint(OLD_API, "0.9.0", {"REF015"})
    assert [d.line for d in removed] == [3, 4]
    assert all("does not exist in JAX 0.9.0" in d.message for d in removed)
    assert "use jax.new_ref" in removed[0].message


def test_unmeasured_version_between_disagreeing_points_is_not_reported():
    # jax.freeze: absent in 0.7.2, present in 0.8.0; reflint has no data for 0.7.5.
    assert lint("import jax\nf = jax.freeze\n", "0.7.5", {"REF015"}) == []
    # jax.array_ref: present in 0.7.1 and 0.7.2, so also in 0.7.1.5-like versions between them.
    assert api.availability("jax.array_ref", (0, 7, 1))[0] == api.YES
    assert api.availability("jax.empty_ref", (0, 9, 5))[0] is None
    assert api.availability("jax.empty_ref", (0, 11, 0))[0] == api.YES


CUSTOM_VJP = """\
    import jax

    @jax.custom_vjp
    def f(x):
        return x

    def fwd(x):
        return x, jax.new_ref(x)

    def bwd(res, g):
        return (g,)

    f.defvjp(fwd, bwd)
"""


def test_ref011_message_depends_on_version():
    new = [d for d in lint(CUSTOM_VJP, "0.10.2") if d.code == "REF011"]
    old = [d for d in lint(CUSTOM_VJP, "0.7.1") if d.code == "REF011"]
    assert len(new) == len(old) == 1
    assert "JAX raises" in new[0].message and "0.7.1 does not raise" not in new[0].message
    assert "0.7.1 does not raise" in old[0].message


FREEZE_ARG = """\
    import jax

    @jax.jit
    def f(r):
        y = jax.freeze(r)
        r[...] = 1.0
        return y

    f(jax.new_ref(0.0))
"""


def test_ref010_message_for_a_jit_argument_depends_on_version():
    new = [d for d in lint(FREEZE_ARG, "0.10.2") if d.code == "REF010"]
    old = [d for d in lint(FREEZE_ARG, "0.9.0") if d.code == "REF010"]
    assert [d.line for d in new] == [6] and [d.line for d in old] == [6]
    assert "accepts this silently" in new[0].message
    assert "IndexError" in old[0].message


@pytest.mark.parametrize("version", ["0.7.1", "0.8.0", "0.10.2"])
def test_ref008_is_reported_on_every_version(version):
    src = """\
        import jax

        def loss(x, r):
            r[...] = x
            return x

        jax.grad(loss)(1.0, jax.new_ref(0.0))
    """
    assert [d.line for d in lint(src, version) if d.code == "REF008"] == [4]


def test_cli_flag_changes_the_findings(tmp_path, reflint):
    p = tmp_path / "t.py"
    p.write_text(textwrap.dedent(NEW_API))
    new = reflint("check", "--select", "REF015", "--format", "json", str(p))
    assert new.returncode == 0, new.stdout + new.stderr
    old = reflint("check", "--select", "REF015", "--format", "json",
                  "--target-jax-version", "0.7.1", str(p))
    assert old.returncode == 1
    assert all("0.7.1" in d["message"] for d in json.loads(old.stdout))


def test_default_target_is_the_newest_measured_version():
    from reflint.settings import DEFAULT_TARGET_JAX_VERSION, SUPPORTED_JAX_VERSIONS

    newest = ".".join(map(str, api.MEASURED_VERSIONS[-1]))
    assert DEFAULT_TARGET_JAX_VERSION == newest == "0.12.0.1"
    assert SUPPORTED_JAX_VERSIONS == tuple(".".join(map(str, v)) for v in api.MEASURED_VERSIONS)
    assert Settings().target_jax_version == (0, 12, 0, 1)
    assert all(len(s) == len(api.MEASURED_VERSIONS) for s in api.AVAILABILITY.values())
    assert all(len(s) == len(api.MEASURED_VERSIONS) for s in api.KWARG_AVAILABILITY.values())


PIN_AND_AD = """\
    import jax

    r = jax.new_ref(1.0, pin=True)
    k = jax.ad.GradRef
"""


def test_jax_011_012_inventory():
    """Measured on 0.11.2 / 0.12.0.1: new_ref(pin=) is new in 0.11; jax.ad.GradRef since 0.10."""
    assert lint(PIN_AND_AD, "0.12.0.1", {"REF015"}) == []
    assert lint(PIN_AND_AD, "0.11.2", {"REF015"}) == []
    on_0102 = lint(PIN_AND_AD, "0.10.2", {"REF015"})
    assert [d.line for d in on_0102] == [3]
    assert "0.11.2 and later" in on_0102[0].message
    assert [d.line for d in lint(PIN_AND_AD, "0.9.0", {"REF015"})] == [3, 4]
    # between 0.11.2 and 0.12.0.1 the two measured points agree
    assert api.kwarg_availability(api.NEW_REF, "pin", (0, 12, 0))[0] == api.YES
