"""The Settings dialog and its tabs: it edits a copy of the settings and applies it on Save
(settings.keeper holds the settings in use). May use ui's small shared widgets."""
