"""The network: a sandbox's own namespace behind slirp4netns with this computer and the local
network fenced off, and fetching a web page without being turned against the user's own
network. Uses nothing else of safety/."""
