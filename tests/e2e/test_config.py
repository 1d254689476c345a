"""Configuration: sources and their order, --print-config, validation errors,
the reference file and the man page, through the real binary."""
import json
import os
import re
import subprocess
import tempfile
import tomllib

from harness import SRC, check, finish, run

SERVER_SECTIONS = {"master": ["cluster", "master", "ha", "log", "tls"],
                   "store": ["cluster", "store", "client", "log", "tls"]}

tmp = tempfile.TemporaryDirectory(prefix="mc_e2e_config_")


def write(name, text):
    path = os.path.join(tmp.name, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def printed(cmd, args=(), env=None):
    """Runs CMD --print-config; returns (exit code, parsed TOML or None, stderr)."""
    r = run([cmd, "--print-config", *args], env=env)
    try:
        doc = tomllib.loads(r.stdout.decode())
    except tomllib.TOMLDecodeError:
        doc = None
    return r.returncode, doc, r.stderr.decode()


def fails_with(args, needle, env=None, what=""):
    """The command exits 2 with exactly one stderr line containing needle."""
    r = run(args, env=env)
    err = r.stderr.decode().strip()
    ok = r.returncode == 2 and len(err.splitlines()) == 1 and needle in err
    check(ok, f"{what or needle}: exit 2, one line naming it" +
          ("" if ok else f" (got {r.returncode}: {err!r})"))


# --- sizes from the environment, and flags beating it ----------------------
rc, doc, _ = printed("store", env={"MOONCAKE_GLOBAL_SEGMENT_SIZE": "50gb"})
check(rc == 0 and doc and doc["store"]["global_segment_size"] == 53687091200,
      "MOONCAKE_GLOBAL_SEGMENT_SIZE=50gb store --print-config shows 53687091200")
rc, doc, _ = printed("store", ["--segment", "1gb"], env={"MOONCAKE_GLOBAL_SEGMENT_SIZE": "50gb"})
check(rc == 0 and doc and doc["store"]["global_segment_size"] == 1 << 30,
      "--segment 1gb beats MOONCAKE_GLOBAL_SEGMENT_SIZE")
rc, doc, _ = printed("store", ["--global_segment_size", "1.5 GB"])
check(rc == 0 and doc and doc["store"]["global_segment_size"] == 3 << 29,
      "--global_segment_size '1.5 GB' (underscore spelling)")

for cmd, sections in SERVER_SECTIONS.items():
    rc, doc, _ = printed(cmd)
    check(rc == 0 and doc is not None and sorted(doc) == sorted(sections),
          f"{cmd} --print-config prints sections {sections} as valid TOML")

# --- TOML < mooncake.json < environment < flags ----------------------------
toml_path = write("mooncake.toml", """
[cluster]
master = "toml:1"
local_hostname = "toml-host"
protocol = "rdma"
metadata_server = "http://toml/metadata"
[master]
default_kv_lease_ttl = 2500
client_ttl = 20
eviction_ratio = 0.25
[store]
global_segment_size = "2gb"
""")
json_path = write("mooncake.json", json.dumps({
    "master_server_address": "json:2", "local_hostname": "json-host",
    "metadata_server": "http://json/metadata", "global_segment_size": 3355443200,
    "local_buffer_size": "512mb", "protocol": "tcp", "device_name": "mlx5_0"}))
env = {"MOONCAKE_CONFIG_PATH": json_path, "MOONCAKE_MASTER": "env:3"}
rc, doc, err = printed("store", ["--config", toml_path], env=env)
check(rc == 0 and doc is not None, "store --config FILE with json and env resolves" + err)
if doc:
    check(doc["cluster"]["metadata_server"] == "http://json/metadata", "json beats the TOML file")
    check(doc["cluster"]["protocol"] == "tcp", "json protocol beats the TOML file")
    check(doc["cluster"]["master"] == "env:3", "environment beats json")
    check(doc["store"]["global_segment_size"] == 3355443200, "json size as a number")
    check(doc["client"]["local_buffer_size"] == 512 << 20, "json size as a string")
    check(doc["cluster"]["device_name"] == "mlx5_0", "json device_name")
rc, doc, _ = printed("store", ["--config", toml_path, "--master", "flag:4",
                               "--local-hostname", "flag-host"], env=env)
check(rc == 0 and doc and doc["cluster"]["master"] == "flag:4" and
      doc["cluster"]["local_hostname"] == "flag-host", "flags beat the environment and json")
rc, doc, _ = printed("master", ["--config", toml_path])
check(rc == 0 and doc and doc["master"]["default_kv_lease_ttl"] == "2500ms" and
      doc["master"]["client_ttl"] == "20s" and doc["master"]["eviction_ratio"] == 0.25,
      "TOML plain durations use the key's unit (lease ms, client_ttl s)")
rc, doc, _ = printed("master", ["--rpc_port", "6000", "--port", "6001",
                                "--default-kv-lease-ttl", "1500", "--enable-http-metadata-server",
                                "--no-shm", "--log-level", "debug"])
check(rc == 0 and doc and doc["master"]["rpc_port"] == 6001 and
      doc["master"]["default_kv_lease_ttl"] == "1500ms" and
      doc["master"]["enable_http_metadata_server"] is True and doc["cluster"]["shm"] is False and
      doc["log"]["level"] == "debug", "master flags, aliases and the last spelling winning")

# --- what --print-config prints loads back unchanged ------------------------
for cmd in SERVER_SECTIONS:
    r = run([cmd, "--print-config", "--config", toml_path], env=env)
    again = write(f"printed_{cmd}.toml", r.stdout.decode())
    r2 = run([cmd, "--print-config", "--config", again])
    check(r2.returncode == 0 and r2.stdout == r.stdout, f"{cmd}: printed config loads back equal")

# --- the reference file: accepted, and equal to the defaults ----------------
ref = os.path.join(SRC, "packaging", "mooncake.toml")
for cmd in SERVER_SECTIONS:
    a = run([cmd, "--print-config", "--config", ref])
    b = run([cmd, "--print-config"])
    check(a.returncode == 0 and a.stdout == b.stdout,
          f"packaging/mooncake.toml loads in {cmd} and equals the defaults")

# --- validation: one line naming source and reason, exit 2 -----------------
bad_ratio = write("ratio.toml", "[master]\n\n# comment\neviction_ratio = 1.5\n")
fails_with(["master", "--config", bad_ratio],
           f"{bad_ratio}:4: [master] eviction_ratio: 1.5 is outside 0..1", what="TOML ratio 1.5")
fails_with(["master", "--config", write("unknown_key.toml", "[master]\nrpc_prot = 1\n")],
           "unknown_key.toml:2: [master] rpc_prot: unknown key", what="TOML unknown key")
fails_with(["store", "--config", write("unknown_sec.toml", "[mastr]\n")],
           "unknown_sec.toml:1: unknown section [mastr]", what="TOML unknown section")
fails_with(["master", "--config", write("type.toml", "[master]\nrpc_port = \"x\"\n")],
           "type.toml:2: [master] rpc_port: expected an integer port", what="TOML wrong type")
fails_with(["master", "--config", write("syntax.toml", "[master]\nrpc_port = = 1\n")],
           "syntax.toml:2:", what="TOML syntax error")
fails_with(["master", "--config", write("port.toml", "[master]\nrpc_port = 70000\n")],
           "port.toml:2: [master] rpc_port: '70000'", what="TOML port out of range")
fails_with(["master", "--config", write("dur.toml", "[master]\nclient_ttl = \"5 fortnights\"\n")],
           "dur.toml:2: [master] client_ttl:", what="TOML bad duration")
fails_with(["master", "--config", os.path.join(tmp.name, "missing.toml")],
           "missing.toml: cannot read", what="missing --config file")
fails_with(["store", "--print-config"], "MOONCAKE_GLOBAL_SEGMENT_SIZE: '12xb': unknown size suffix",
           env={"MOONCAKE_GLOBAL_SEGMENT_SIZE": "12xb"}, what="bad size in the environment")
fails_with(["store", "--print-config"], "MOONCAKE_PROTOCOL: 'udp': unknown protocol",
           env={"MOONCAKE_PROTOCOL": "udp"}, what="unknown protocol in the environment")
fails_with(["store", "--print-config", "--segment", "12xb"], "--segment: '12xb': unknown size suffix",
           what="bad size flag")
fails_with(["store", "--print-config", "--segment", "-1gb"], "--segment: '-1gb': size must not be negative",
           what="negative size flag")
fails_with(["master", "--print-config", "--eviction-ratio", "2"], "--eviction-ratio: 2 is outside 0..1",
           what="ratio flag out of range")
fails_with(["master", "--print-config", "--log-level", "loud"], "--log-level: 'loud': unknown level",
           what="unknown log level")
fails_with(["master", "--print-config", "--fsync", "never"],
           "--fsync: 'never': unknown fsync (use one of always,everysec)", what="unknown fsync mode")
fails_with(["master", "--config", write("fsync.toml", "[master]\nfsync = \"no\"\n")],
           "fsync.toml:2: [master] fsync: 'no': unknown fsync", what="TOML unknown fsync mode")
fails_with(["master", "--print-config", "--eviction-policy", "lfu"],
           "--eviction-policy: 'lfu': unknown eviction_policy (use one of probation,adaptive,lru)",
           what="unknown eviction policy")
fails_with(["master", "--print-config", "--rpc-port", "0"], "--rpc-port: '0': port 0 is not allowed",
           what="port 0 where it does not pick")
bad_json = write("bad.json", json.dumps({"global_segment_size": "12xb"}))
fails_with(["store", "--print-config"], f"{bad_json}: global_segment_size: '12xb'",
           env={"MOONCAKE_CONFIG_PATH": bad_json}, what="bad size in mooncake.json")
fails_with(["store", "--print-config"], "MOONCAKE_CONFIG_PATH:",
           env={"MOONCAKE_CONFIG_PATH": os.path.join(tmp.name, "nope.json")},
           what="missing mooncake.json")

# --- help shows defaults and units ------------------------------------------
h = run(["master", "--help"]).stdout.decode()
check(re.search(r"--rpc-port PORT=50051", h) is not None, "master --help shows --rpc-port default")
check(re.search(r"--default-kv-lease-ttl DURATION=10s\s+.*plain number in ms", h) is not None,
      "master --help shows the lease default and its plain unit")
h = run(["store", "--help"]).stdout.decode()
check("--global-segment-size SIZE=1gb" in h and "--segment" in h,
      "store --help shows the segment size default and --segment")

# --- the man page documents every key and is clean roff ---------------------
man = os.path.join(SRC, "man", "mooncake.toml.5")
g = subprocess.run(["groff", "-man", "-ww", "-z", man], stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT)
check(g.returncode == 0 and g.stdout == b"", "groff -man -ww -z man/mooncake.toml.5 prints nothing"
      + g.stdout.decode()[:300])
with open(man) as f:
    page = f.read()
with open(ref, "rb") as f:
    reference = tomllib.load(f)  # the unit test ties this file to the registry
missing = []
for section, keys in reference.items():
    start = page.find(f'.SH "SECTION [{section}]"')
    end = page.find("\n.SH ", start + 1)
    body = page[start:end] if start >= 0 else ""
    for key in keys:
        if f"\n.B {key}\n" not in body:
            missing.append(f"[{section}] {key}")
check(not missing, "the man page documents every key in its section" +
      (f" (missing {missing})" if missing else ""))
for var in ["MOONCAKE_MASTER", "MOONCAKE_TE_META_DATA_SERVER", "MOONCAKE_LOCAL_HOSTNAME",
            "MOONCAKE_GLOBAL_SEGMENT_SIZE", "MOONCAKE_LOCAL_BUFFER_SIZE", "MOONCAKE_PROTOCOL",
            "MOONCAKE_DEVICE", "MOONCAKE_AUTH_TOKEN", "MOONCAKE_CONFIG_PATH"]:
    check(var in page, f"the man page documents {var}")

tmp.cleanup()
finish()
