"""Her presence on the desktop beyond the window: the tray, the compact face, the global
push-to-talk key, the launcher's autostart and one companion at a time."""
