"""NNX base classes that the other modules subclass or build."""

from flax import nnx


class Base(nnx.Module):
    def named(self):
        return [k for k, _ in nnx.iter_graph(self)]


class Counter(nnx.Variable):
    pass


class Stack(nnx.List):
    pass


class NotNnx:
    pass


class Twice(nnx.Module):
    pass


class Twice:  # defined twice: which one an importer gets is not known
    pass
