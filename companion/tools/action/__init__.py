"""Tools that act on the user's machine. Registering one means listing it in ACTION_TOOLS.

An import failure here stops the app from starting: never half a toolset.
"""

from companion.tools.action import (
    execute_code,
    patch,
    read_file,
    search_files,
    shell,
    write_file,
)

ACTION_TOOLS = [read_file, write_file, patch, search_files, shell, execute_code]
