"""A master, a standalone client and a metadata server started as the
reference's `mooncake_master`, `mooncake_client` and
`mooncake_http_metadata_server` are: through links of those names, with
gflags spellings, their tuning flags and the master's JSON config file
(mooncake-master(1), REFERENCE FLAGS; mooncake-client(1);
mooncake-metadata-server(1))."""
import json
import os
import subprocess

import harness
from harness import BIN, check, finish, free_port, http, run, start, stop, tempdir, wait_http

tmp = tempdir("mc_e2e_refmaster_")
link = os.path.join(tmp, "mooncake_master")
os.symlink(os.path.abspath(BIN), link)
client_link = os.path.join(tmp, "mooncake_client")
os.symlink(os.path.abspath(BIN), client_link)


def master_link(args, log_name=None):
    """Starts the link in the background (stopped by pid at exit)."""
    log = open(log_name or os.devnull, "wb")
    p = subprocess.Popen([link] + list(args), env=harness._child_env(None), stdout=log,
                         stderr=subprocess.STDOUT)
    harness._procs.append(p)
    return p


def run_link(args):
    return subprocess.run([link] + list(args), env=harness._child_env(None),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


# --- a reference command line serves ---------------------------------------
port, admin = free_port(), free_port()
log = os.path.join(tmp, "master.log")
p = master_link([f"-port={port}", "-v=1", f"--metrics_port={admin}", "--rpc_thread_num=8",
                 "--enable_kv_events=false", "--noenable_cxl", "--memory_allocator=offset",
                 "--enable_snapshot=true", f"--data_dir={tmp}/data", "--rpc_address=127.0.0.1"],
                log)
up = wait_http(f"http://127.0.0.1:{admin}/health")
check(up, "mooncake_master -port=P -v=1 --rpc_thread_num=8 ... serves /health")
r = run(["ls", "--master", f"127.0.0.1:{port}"])
check(r.returncode == 0, f"mooncake ls reaches it on -port={port} (exit {r.returncode})")
stop(p)
text = open(log, errors="replace").read()
check("--rpc_thread_num=8: accepted for compatibility with the reference's mooncake_master; "
      "no effect here" in text, "the start-up log says --rpc_thread_num has no effect")
check("--enable_snapshot=true: accepted" in text and "journals every change" in text,
      "the start-up log says why --enable_snapshot changes nothing")
r = run_link(["-v=1", "--print-config"])
check(r.returncode == 0 and 'level = "debug"' in r.stdout.decode(), "-v=1 sets the debug log level")
r = run_link(["--minloglevel=1", "--print-config"])
check(r.returncode == 0 and 'level = "warn"' in r.stdout.decode(),
      "--minloglevel=1 sets the warn log level")

# --- the admin port on its own address (--metrics_host) ---------------------
port, admin = free_port(), free_port()
p = master_link([f"--rpc_port={port}", f"--metrics_port={admin}", "--metrics_host=127.0.0.1",
                 "--rpc_address=0.0.0.0", "--data_dir=none"])
check(wait_http(f"http://127.0.0.1:{admin}/health"),
      "--metrics_host 127.0.0.1 binds the admin port")
status, _ = http("GET", f"http://127.0.0.1:{admin}/metrics")
check(status == 200, "/metrics answers on --metrics_host")
stop(p)

# --- the reference's config file --------------------------------------------
port, admin = free_port(), free_port()
conf = os.path.join(tmp, "master.json")
with open(conf, "w") as f:
    json.dump({"rpc_port": port, "metrics_port": admin, "rpc_thread_num": 16,
               "rpc_address": "127.0.0.1", "eviction_ratio": 0.1, "client_live_ttl_sec": 60,
               "enable_ha": False, "etcd_endpoints": "http://localhost:2379",
               "memory_allocator": "offset", "enable_kv_events": False}, f)
r = run_link(["--config_path", conf, "--print-config", "--data_dir", "none"])
out = r.stdout.decode()
check(r.returncode == 0 and f"rpc_port = {port}" in out and "eviction_ratio = 0.1" in out
      and 'client_ttl = "1m"' in out and 'etcd = ""' in out,
      "--config_path master.json: its values, client_live_ttl_sec as client_ttl, no HA "
      f"without enable_ha (exit {r.returncode})")
p = master_link(["--config_path", conf, "--data_dir", "none"])
check(wait_http(f"http://127.0.0.1:{admin}/health"), "a master on the reference's JSON serves")
stop(p)

# --- the reference's own smoke test (test_cli.py): master, then a client ------
port, admin, cport = free_port(), free_port(), free_port()
p = master_link([f"--port={port}", "--max_threads=2", f"--metrics_port={admin}",
                 "--data_dir=none", "--rpc_address=127.0.0.1"])
check(wait_http(f"http://127.0.0.1:{admin}/health"),
      "mooncake_master --port=P --max_threads=2 --metrics_port=M serves")
clog = os.path.join(tmp, "client.log")
c = subprocess.Popen([client_link, f"--master_server_address=127.0.0.1:{port}", f"-port={cport}",
                      "--global_segment_size=64mb", "--tenant_id=default", "--enable_offload",
                      "--threads=2", f"--data_port={free_port()}"],
                     env=harness._child_env(None), stdout=open(clog, "wb"),
                     stderr=subprocess.STDOUT)
harness._procs.append(c)
ready = harness.wait_until(lambda: c.poll() is not None or "client ready" in open(clog).read(), 20)
check(ready and c.poll() is None,
      "mooncake_client --master_server_address=H:P -port=Q attaches and stays up")
check("--enable_offload=true: accepted for compatibility" in open(clog).read(),
      "the client's start-up log says --enable_offload has no effect")
stop(c)
stop(p)
r = subprocess.run([client_link, "--tenant_id=tenant-a", "--print-config"],
                   env=harness._child_env(None), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   timeout=30)
check(r.returncode == 2 and b"--tenant_id=tenant-a: multi-tenant namespaces are not built here"
      in r.stderr, f"mooncake_client --tenant_id=tenant-a is refused ({r.stderr[-120:]!r})")

# --- the reference's Python metadata server's command line --------------------
meta_link = os.path.join(tmp, "mooncake_http_metadata_server")
os.symlink(os.path.abspath(BIN), meta_link)
mport = free_port()
m = subprocess.Popen([meta_link, "--port", str(mport), "--host", "127.0.0.1", "--log-level",
                      "WARNING"], env=harness._child_env(None), stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
harness._procs.append(m)
base = f"http://127.0.0.1:{mport}/metadata?key=mooncake%2Fram%2Fseg"
check(wait_http(f"http://127.0.0.1:{mport}/health"),
      "mooncake_http_metadata_server --port P --host H --log-level WARNING serves")
status, _ = http("PUT", base, b'{"a":1}')
got = http("GET", base)
check(status == 200 and got == (200, b'{"a":1}'), f"its PUT and GET answer ({status}, {got})")
stop(m)
r = subprocess.run([meta_link, "--log-level=CRITICAL", "--print-config"],
                   env=harness._child_env(None), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   timeout=30)
check(r.returncode == 0 and b'level = "error"' in r.stdout,
      "--log-level=CRITICAL (Python's name) is the error level")

# --- refused, naming the flag ------------------------------------------------
for args, needle in [(["--enable_kv_events=true"], "--enable_kv_events=true: KV cache events"),
                     (["--root_fs_dir=/mnt/3fs"], "--root_fs_dir=/mnt/3fs: the shared-file"),
                     (["--ha_backend_type=redis"], "--ha_backend_type=redis: only etcd"),
                     (["-rpc_thread_num=lots"], "--rpc_thread_num=lots: not a whole number")]:
    r = run_link(args + ["--data_dir", "none"])
    err = r.stderr.decode().strip()
    check(r.returncode == 2 and len(err.splitlines()) == 1 and needle in err,
          f"{args[0]}: exit 2, one line naming it (got {r.returncode}: {err!r})")
bad = os.path.join(tmp, "bad.json")
with open(bad, "w") as f:
    f.write('{"rpc_port": 1, "enable_gc": true}')
r = run_link(["--config_path", bad])
check(r.returncode == 2 and "unknown key enable_gc" in r.stderr.decode(),
      "a key of neither kind in --config_path is refused, naming it")
r = run(["store", "--rpc_thread_num=8"])
check(r.returncode == 2, "the store does not take the master's reference flags")
finish()
