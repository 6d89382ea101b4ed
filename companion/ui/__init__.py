"""The window (PySide6): `app` wires the core to the window and its rooms. `face`, `settings`,
`cards`, `dialogs` and `desktop` are packages of their own; the window's own parts (the
transcript, the banners, the pill, the theme) sit here. Only ui/ and the command line import Qt."""
