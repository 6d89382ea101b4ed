"""Tools: one module each, collected by the registry."""
