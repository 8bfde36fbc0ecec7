"""touch_memory.py N: touches N bytes of memory (np.ones writes every page), then exits,
freeing them: the suite's prewarm (Bench.prewarm says why), in a process of its own."""
import sys

import numpy

numpy.ones(int(sys.argv[1]), dtype=numpy.uint8)
