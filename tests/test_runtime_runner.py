"""``python -m reflint.runtime`` on the JAX Ref doc's examples, results on/off, plugin."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from conftest import SEED_EXAMPLE_CODES

import reflint.runtime as rt

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "tests" / "runtime_examples"
CODE_RE = re.compile(r"^(REF\d{3}) [a-z-]+: ", re.M)

EXPECTED = SEED_EXAMPLE_CODES
CLEAN = ["ok_foreach.py", "ok_stash_grads.py", "ok_sin_inplace.py", "ok_vmap_dist.py",
         "ok_intro.py"]


def run_checked(*args, env=None):
    e = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "reflint.runtime", *map(str, args)],
                          capture_output=True, text=True, env=e, timeout=300)


@pytest.fixture(scope="module")
def example_runs():
    from concurrent.futures import ThreadPoolExecutor

    names = sorted(EXPECTED) + CLEAN
    pool = ThreadPoolExecutor(2)  # futures: each test waits for its own run (progress)
    try:
        yield {n: pool.submit(run_checked, EXAMPLES / n) for n in names}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_doc_error_examples_fail_with_code(example_runs, name):
    p = example_runs[name].result()
    assert p.returncode == 1, p.stderr
    codes = CODE_RE.findall(p.stderr)
    assert codes and codes[0] == EXPECTED[name], p.stderr
    assert p.stdout == ""
    # the traceback points at the user's file, not at reflint or JAX internals
    assert name in p.stderr and "reflint/runtime" not in p.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", CLEAN)
def test_doc_working_examples_run_clean(example_runs, name):
    p = example_runs[name].result()
    assert p.returncode == 0, p.stderr
    assert not CODE_RE.search(p.stderr)


def test_argv_main_and_exit_code(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys
        assert __name__ == "__main__"
        print(" ".join(sys.argv[1:]))
        sys.exit(int(sys.argv[1]))
    """))
    p = run_checked(script, "3", "x")
    assert p.returncode == 3 and p.stdout == "3 x\n" and p.stderr == ""


def test_verbose_prints_device_on_stderr_only(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("print('hi')\n")
    p = run_checked(script, env={"REFLINT_RUNTIME_VERBOSE": "1"})
    assert p.returncode == 0 and p.stdout == "hi\n"
    assert "default device" in p.stderr


def test_other_exceptions_exit_1_with_traceback(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("raise KeyError('boom')\n")
    p = run_checked(script)
    assert p.returncode == 1 and "KeyError: 'boom'" in p.stderr
    assert not CODE_RE.search(p.stderr)


def test_main_in_process_usage_errors(capsys):
    assert rt.main([]) == 2
    assert rt.main(["/nonexistent/script.py"]) == 2
    assert not rt.is_installed()


def test_main_in_process(tmp_path, capsys):
    script = tmp_path / "prog.py"
    script.write_text("import jax\nr = jax.new_ref(0.)\njax.freeze(r)\nr[...] = 1.\n")
    assert rt.main([str(script)]) == 1
    assert CODE_RE.search(capsys.readouterr().err).group(1) == "REF010"
    assert not rt.is_installed() and jax.new_ref is rt._api.new_ref


# ---------------------------------------------------------------- identical results on/off

def _program():
    out = {}
    x_ref = jax.new_ref(jnp.zeros(3))

    @jax.jit
    def f():
        x_ref[1] += 1.
    f()
    f()
    out["closure"] = x_ref[...]

    @jax.jit
    def pure(x):
        r = jax.new_ref(x)
        r[...] = r[...] * r[...]
        return jax.freeze(r)
    out["grad"] = jax.grad(pure)(3.)
    out["vmap_grad"] = jax.vmap(jax.grad(pure))(jnp.arange(3.))

    acc = jax.new_ref(0.)

    def body(c, x):
        acc[...] += x
        return c + x, c * x
    out["scan"] = jax.lax.scan(body, 0., jnp.arange(5.))
    out["acc"] = acc[...]

    def dist(x, y, o):
        o[...] = jnp.sum((x - y) ** 2)
    vecs = jnp.arange(12.).reshape(3, 4)
    o = jax.new_ref(jnp.zeros((3, 3)))
    jax.vmap(jax.vmap(dist, (0, None, 0)), (None, 0, 0))(vecs, vecs, o)
    out["dist"] = o[...]
    out["ckpt"] = jax.grad(jax.checkpoint(lambda x: jnp.sin(x) * 2))(1.)
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a).tolist(), out)


def test_results_identical_with_checks_on_and_off():
    off = _program()
    with rt.checks():
        on = _program()
    assert on == off


# ---------------------------------------------------------------- pytest plugin

@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_pytest_plugin_fixture_and_option(tmp_path):
    (tmp_path / "test_x.py").write_text(textwrap.dedent("""
        import jax, pytest

        def test_fixture(reflint_checks):
            r = jax.new_ref(0.)
            with pytest.raises(reflint_checks.FreezeOutsideCreationScope):
                jax.jit(lambda r: jax.freeze(r))(r)

        def test_option_or_not():
            import reflint.runtime as rt
            print("INSTALLED", rt.is_installed())
    """))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
           "-p", "reflint.runtime.pytest_plugin", str(tmp_path / "test_x.py")]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0 and "INSTALLED False" in p.stdout, p.stdout + p.stderr
    p = subprocess.run(cmd + ["--reflint-checks"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
    assert p.returncode == 0 and "INSTALLED True" in p.stdout, p.stdout + p.stderr
