"""A BlockSpec of the project's own, taking the index map first (as ejkernel's
PatchBlockSpec does); ops.py builds its specs with it."""
from jax.experimental.pallas import BlockSpec


class PatchBlockSpec(BlockSpec):
    def __init__(self, index_map, block_shape):
        super().__init__(block_shape=block_shape, index_map=index_map)
