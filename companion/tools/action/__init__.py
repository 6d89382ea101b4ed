"""Tools that act on the user's machine. Registering one means listing it in ACTION_TOOLS.

An import failure here stops the app from starting: never half a toolset.
"""

from companion.tools.action import patch, read_file, search_files, write_file

ACTION_TOOLS = [read_file, write_file, patch, search_files]
