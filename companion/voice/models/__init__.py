"""The model files (installed pack, setting or download, verified by SHA-256) and the
threads the models run on. The bottom of voice/: imports nothing else of it."""
