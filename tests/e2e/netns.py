"""A private test network: a hub namespace with a bridge and one namespace
per node, joined by veth pairs, on an address range that exists only inside
these namespaces. Tests that cut or slow links (test_partition.py,
test_ha_partition.py) build it, run processes inside it with `start_in`, and
delete every namespace they made in `finally` with `remove`.
"""
import os
import subprocess

import harness


def sh(*args, ok=True, input=None, timeout=20):
    """Runs one command; raises with its stderr if it fails and `ok` is set."""
    p = subprocess.run(list(args), input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    if ok and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.decode().strip()}")
    return p


class Network:
    """Namespaces named `<prefix>-<node>`; `addrs` maps node to its /24
    address on the bridge, `hub_addr` (optional) gives the bridge one too."""

    def __init__(self, prefix, addrs, hub_addr=None):
        self.prefix = prefix
        self.addrs = dict(addrs)
        self.hub_addr = hub_addr
        self.hub = self.ns("hub")
        self.created = []

    def ns(self, node):
        return f"{self.prefix}-{node}"

    def build(self, rulesets=None):
        """Creates the hub and every node; `rulesets` maps a node to an nft
        ruleset (text) loaded inside its namespace."""
        sh("ip", "netns", "add", self.hub)
        self.created.append(self.hub)
        sh("ip", "-n", self.hub, "link", "set", "dev", "lo", "up")
        sh("ip", "-n", self.hub, "link", "add", "name", "br0", "type", "bridge")
        if self.hub_addr:
            sh("ip", "-n", self.hub, "addr", "add", f"{self.hub_addr}/24", "dev", "br0")
        sh("ip", "-n", self.hub, "link", "set", "dev", "br0", "up")
        for node, addr in self.addrs.items():
            name = self.ns(node)
            sh("ip", "netns", "add", name)
            self.created.append(name)
            sh("ip", "-n", self.hub, "link", "add", "name", f"v{node}", "type", "veth",
               "peer", "name", "eth0", "netns", name)
            sh("ip", "-n", self.hub, "link", "set", "dev", f"v{node}", "master", "br0")
            sh("ip", "-n", self.hub, "link", "set", "dev", f"v{node}", "up")
            sh("ip", "-n", name, "addr", "add", f"{addr}/24", "dev", "eth0")
            sh("ip", "-n", name, "link", "set", "dev", "eth0", "up")
            sh("ip", "-n", name, "link", "set", "dev", "lo", "up")
        for node, ruleset in (rulesets or {}).items():
            sh("ip", "netns", "exec", self.ns(node), "nft", "-f", "-", input=ruleset.encode())

    def remove(self):
        for name in reversed(self.created):
            sh("ip", "netns", "del", name, ok=False)
        self.created.clear()

    def leftovers(self):
        """Namespaces of this prefix that still exist."""
        listing = sh("ip", "netns", "list").stdout.decode().splitlines()
        return [l for l in listing if l.startswith(self.prefix)]

    def start_in(self, node, argv, log_path, env):
        """Starts argv in a node's namespace; `ip netns exec` execs the
        program itself, so the pid is the program's own and stopping it by
        pid works. The process is registered with the harness."""
        log = open(log_path, "wb")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(node)] + list(argv),
                             env=harness._child_env(env), stdout=log, stderr=subprocess.STDOUT)
        harness._procs.append(p)
        p.log_path = log.name
        return p
