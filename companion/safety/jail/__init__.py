"""The file jail: a path the model gave turned into a real one inside the workspace, files opened
beneath it without races, her own files known by identity, and where the workspace's git
repositories are. Uses nothing else of safety/."""
