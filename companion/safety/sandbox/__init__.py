"""The one door a process goes through (its permit, and the admission that prepares a permitted
run) and the kernel sandbox it runs in: bubblewrap, who the command is on the host and the
launcher that attaches its trees, Landlock, seccomp, the cgroup and limits, stopping a running
sandbox while a card holds the workspace still (freeze), the raw runner, and the only runs
outside it. May use consent, jail and network."""
