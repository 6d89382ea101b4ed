"""The model files (files: installed pack, setting or download; checksums: verified by SHA-256;
download: fetched with progress) and the threads the models run on. The bottom of voice/:
imports nothing else of it."""
