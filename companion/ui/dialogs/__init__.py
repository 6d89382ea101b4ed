"""The window's other dialogs: conversations, her notes, the personality editor."""
