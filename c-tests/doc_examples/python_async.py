# docs/python.md's background write: the solver's state it assumes (this rank's block of a
# 512x512 array, another buffer to advance), then its lines.
from mpi4py import MPI
import numpy as np
import h5tile

world = MPI.COMM_WORLD
shape = (512, 512)
offset, extent = h5tile.partition(shape, world)
field = np.full(extent, float(world.rank))
other_buffer = np.zeros(extent)


def advance(buffer):
    buffer += 1


# EXAMPLE
