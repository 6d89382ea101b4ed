"""companion: a voice-first desktop companion."""

import os

# numpy's BLAS starts its helper threads when numpy is imported, at the window's priority,
# not at her models' lower one: while Whisper computed its features they took a third of a
# core from the thread that paints her face (frame p99 22-25 ms instead of 20). Her arrays
# are small; one thread does them as fast. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
