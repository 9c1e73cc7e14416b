from flax.nnx.nn.linear import Linear

from . import Base


class Mid(Base):  # an nnx.Module through `models.Base` (a re-export)
    pass


class MyLinear(Linear):  # flax's own layer under its module name (read from installed flax)
    pass
