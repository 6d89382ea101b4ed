"""The window (PySide6): `app` wires the core to the window and its rooms (`app_lifecycle`: its
start and end). `face`, `settings`, `cards`, `dialogs` and `desktop` are packages of their own;
the window's own parts (the transcript, the banners, the pill, the theme) sit here. Only ui/ and
the command line import Qt."""
