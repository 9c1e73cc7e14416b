"""Test parameterization decorators bind their cases to the test's parameters
(reflint/analysis/cases.py, api.TEST_CASE_DECORATORS): the forms of absl's
``parameters`` / ``named_parameters`` / ``product`` and pytest's ``parametrize``, what stays
unknown, and REF018 on a kernel returning such a parameter (JAX's pallas_test.py)."""

import libcst as cst
import pytest

from reflint.analysis import ModuleAnalysis
from reflint.engine import lint_source
from reflint.settings import Settings

ABSL = "from absl.testing import parameterized\nimport pytest\n\n"


def cases(src):
    """Function name -> {parameter: [(label, expression text)]} for every function with cases."""
    module = cst.parse_module(src)
    analysis = ModuleAnalysis(module, "t.py")
    return {f.name: {k: [(label, analysis.module.code_for_node(e)) for label, e in v]
                     for k, v in f.cases.items()}
            for f in analysis.functions.values() if f.cases}


def method(decorator, params="self, a, b=7"):
    return ABSL + f"class T(parameterized.TestCase):\n    @{decorator}\n" \
                  f"    def test_x({params}):\n        pass\n"


@pytest.mark.parametrize("decorator, expected", [
    # named tuples: the first element names the case, the rest are positional arguments
    ('parameterized.named_parameters(("one", 1, 2), ("two", 3))',
     {"a": [("one", "1"), ("two", "3")], "b": [("one", "2"), ("two", "7")]}),
    # dicts and dict(...) with testcase_name: keyword arguments
    ('parameterized.named_parameters(dict(testcase_name="x", a=0), {"testcase_name": "y", '
     '"a": (), "b": None})',
     {"a": [("x", "0"), ("y", "()")], "b": [("x", "7"), ("y", "None")]}),
    # one list of cases
    ('parameterized.named_parameters([("p", 5), ("q", 6)])', {"a": [("p", "5"), ("q", "6")]}),
    # single values, tuples, lists and dicts as cases
    ("parameterized.parameters(0, (1, 2), [3], dict(b=4, a=5))",
     {"a": [("", "0"), ("", "1"), ("", "3"), ("", "5")],
      "b": [("", "7"), ("", "2"), ("", "7"), ("", "4")]}),
    ("parameterized.parameters([1, 2])", {"a": [("", "1"), ("", "2")]}),
    ("parameterized.parameters((1, 2))", {"a": [("", "1")], "b": [("", "2")]}),
    # product: each keyword's values, and lists of dicts
    ("parameterized.product(a=[0, None], b=(1,))",
     {"a": [("", "0"), ("", "None")], "b": [("", "1")]}),
    ("parameterized.product([dict(a=1), dict(a=2)], b=[3])",
     {"a": [("", "1"), ("", "2")], "b": [("", "3")]}),
    # pytest: names in a string or a list, pytest.param and ids
    ('pytest.mark.parametrize("a, b", [(1, 2), pytest.param(3, 4, id="p")])',
     {"a": [("", "1"), ("p", "3")], "b": [("", "2"), ("p", "4")]}),
    ('pytest.mark.parametrize(["a"], [(1, 2)], ids=["pair"])', {"a": [("pair", "(1, 2)")]}),
    ('pytest.mark.parametrize("a", [1], indirect=False)', {"a": [("", "1")]}),
])
def test_forms(decorator, expected):
    assert cases(method(decorator)) == {"test_x": expected}


@pytest.mark.parametrize("decorator", [
    "parameterized.parameters(*CASES)",              # cases the decorator's text does not show
    "parameterized.parameters(CASES)",
    "parameterized.parameters(0)",                    # absl rejects a single non-iterable
    "parameterized.parameters(x)",                    # a name: unpacked or not, unknown
    "parameterized.parameters((1, 2, 3))",            # more positional values than parameters
    "parameterized.parameters(dict(c=1))",            # no such parameter
    "parameterized.named_parameters((name, 1))",      # a name that is not a string
    "parameterized.named_parameters(dict(a=1))",      # no testcase_name
    "parameterized.product(a=VALUES)",
    "parameterized.product([dict(a=1), dict(b=2)])",  # dicts with different keys
    'pytest.mark.parametrize("a", [1, 2], indirect=True)',  # values go to fixtures
    'pytest.mark.parametrize("a", VALUES)',
    'pytest.mark.parametrize("a, b", [(1, 2), (3,)])',      # a row of the wrong length
    'pytest.mark.parametrize("a, b", [row])',
    'pytest.mark.parametrize(names, [1])',
])
def test_unknown_forms(decorator):
    assert cases(method(decorator)) == {}


def test_a_parameter_bound_twice_is_unknown_and_other_names_stay():
    src = ABSL + ('@pytest.mark.parametrize("a", [1])\n@pytest.mark.parametrize("a", [2])\n'
                  '@pytest.mark.parametrize("b", [3, 4])\ndef test_x(a, b):\n    pass\n')
    assert cases(src) == {"test_x": {"b": [("", "3"), ("", "4")]}}


def test_only_the_test_libraries_decorators():
    src = ("def parameters(*cases):\n    return lambda f: f\n\n"
           "@parameters(0)\ndef check(returns):\n    pass\n"
           "import absl.testing.parameterized as p\n\n"
           "@p.parameters(1)\ndef f(a):\n    pass\n"
           "@p.parameters([1])\ndef g(a):\n    pass\n")
    assert cases(src) == {"g": {"a": [("", "1")]}}


KERNEL = ABSL + (
    "import jax.numpy as jnp\nimport numpy as np\nfrom jax.experimental import pallas as pl\n"
    "class ApiErrorTest(parameterized.TestCase):\n"
    "  @{decorator}\n"
    "  def test_kernel_returns_something(self, returns):\n"
    "    a = np.arange(256, dtype=np.int32)\n"
    "{before}"
    "    def my_kernel(x_ref, o1_ref, o2_ref):\n"
    "      return returns\n"
    "    f = pl.pallas_call(my_kernel, out_shape=(a, a))\n"
    "    f(a)\n")


def ref018(decorator, before=""):
    src = KERNEL.format(decorator=decorator, before=before)
    return [(d.line, d.message) for d in lint_source(src, "t.py", Settings()).diagnostics]


def test_kernel_returning_a_test_parameter():
    # JAX's tests/pallas/pallas_test.py test_pallas_call_error_kernel_returns_something.
    (found,) = ref018('parameterized.named_parameters(("array", 0), ("empty_tuple", ()))')
    assert found[0] == 12  # `return returns`
    assert '(`returns` is `0` in test case "array")' in found[1]
    # Only the case that gives a value is named; a case without a name is "one of them".
    (found,) = ref018('parameterized.parameters(None, (False,))')
    assert "(`returns` is `False` in one of its test cases)" in found[1]
    (found,) = ref018('pytest.mark.parametrize("returns", [None, jnp.zeros(3)])')
    assert "`returns` is `jnp.zeros(3)`" in found[1]


@pytest.mark.parametrize("decorator, before", [
    ('parameterized.named_parameters(("none", None), ("also", None))', ""),
    ("parameterized.parameters(0, 1)", "    returns = None\n"),      # rebound before
    ("parameterized.parameters(*CASES)", ""),                        # cases unknown
    ('pytest.mark.parametrize("returns", [1], indirect=True)', ""),  # a fixture's value
    ("parameterized.parameters(0, 1)", "    returns = helper(returns)\n"),
])
def test_kernel_returning_a_test_parameter_negatives(decorator, before):
    assert ref018(decorator, before) == []


def test_a_static_method_has_no_self():
    src = ABSL + ("class T(parameterized.TestCase):\n    @staticmethod\n"
                  "    @parameterized.parameters((1, 2))\n    def f(a, b):\n        pass\n")
    assert cases(src) == {"f": {"a": [("", "1")], "b": [("", "2")]}}


@pytest.mark.parametrize("decorator", [
    "parameterized.parameters()", "parameterized.named_parameters()",
    "parameterized.product()", "pytest.mark.parametrize()", 'pytest.mark.parametrize("a", [])',
    'parameterized.named_parameters((b"x", 1))', "parameterized.parameters(dict(**kw))",
    'parameterized.parameters({**kw, "a": 1})', "parameterized.parameters({1: 2})",
    'pytest.mark.parametrize("", [1])', 'pytest.mark.parametrize("a b", [1])',
    'pytest.mark.parametrize("a", [pytest.param(*xs)])', "parameterized.product(**grid)",
])
def test_malformed_decorators_are_unknown(decorator):
    assert cases(method(decorator)) == {}
