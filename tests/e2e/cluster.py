"""Starting a local mooncake cluster (master + stores) for end-to-end tests."""
import os
import re
import time

from harness import free_port, start, stop, tempdir, wait_http, wait_until, http


class Cluster:
    """A master (with its embedded metadata server) and N stores on loopback."""

    def __init__(self, stores=1, segment="256mb", extra_master=(), extra_store=(),
                 token=None, logdir=None, data_dir="none"):
        self.logdir = logdir or tempdir("mooncake-e2e-")
        self.rpc_port = free_port()
        self.metrics_port = free_port()
        self.meta_port = free_port()
        self.token = token
        self.segment = segment
        self.extra_store = list(extra_store)
        self.master = None
        self.stores = []
        self.master_args = ["master", "--port", str(self.rpc_port),
                            "--metrics-port", str(self.metrics_port),
                            "--enable-http-metadata-server",
                            "--http-metadata-server-port", str(self.meta_port),
                            "--http-metadata-server-host", "127.0.0.1",
                            "--rpc-address", "127.0.0.1",
                            "--data-dir", data_dir] + list(extra_master)
        self.start_master()
        for _ in range(stores):
            self.add_store()

    @property
    def env(self):
        e = {"MOONCAKE_MASTER": f"127.0.0.1:{self.rpc_port}",
             "MOONCAKE_TE_META_DATA_SERVER": f"http://127.0.0.1:{self.meta_port}/metadata"}
        if self.token:
            e["MOONCAKE_AUTH_TOKEN"] = self.token
        return e

    def admin(self, path):
        return http("GET", f"http://127.0.0.1:{self.metrics_port}{path}")

    def start_master(self):
        log = os.path.join(self.logdir, f"master-{time.time_ns()}.log")
        self.master = start(self.master_args, env=self.env, log_name=log)
        self.master_log = log
        if not wait_http(f"http://127.0.0.1:{self.metrics_port}/health", 20):
            raise RuntimeError("master did not come up; log: " + open(log).read()[-2000:])

    def segments(self):
        status, body = self.admin("/get_all_segments")
        return [l for l in body.decode().splitlines() if l.strip()] if status == 200 else []

    def add_store(self, segment=None, extra=()):
        n = len(self.segments())
        log = os.path.join(self.logdir, f"store-{len(self.stores)}-{time.time_ns()}.log")
        p = start(["store", "--segment", segment or self.segment] + self.extra_store + list(extra),
                  env=self.env, log_name=log)
        p.log_path = log
        self.stores.append(p)
        if wait_until(lambda: len(self.segments()) > n or p.poll() is not None, 20) \
                and p.poll() is None:
            return p
        raise RuntimeError("store did not mount; log: " + open(log).read()[-2000:])

    def stop(self):
        for s in self.stores:
            stop(s)
        if self.master:
            stop(self.master)
