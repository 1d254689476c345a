"""The examples next to the package run against a real cluster."""
import json
import os
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "src", "python", "examples")


def run_example(name, env):
    full = dict(os.environ)
    full.update(env)
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], env=full,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert p.returncode == 0, p.stdout.decode()[-3000:]
    return p.stdout.decode()


def test_lmcache_style_example(cluster, tmp_path):
    cfg = json.load(open(os.path.join(EXAMPLES, "mooncake.json")))
    cfg["metadata_server"] = f"http://127.0.0.1:{cluster.meta_port}/metadata"
    cfg["master_server_address"] = f"127.0.0.1:{cluster.rpc_port}"
    cfg["global_segment_size"] = "64mb"
    path = tmp_path / "mooncake.json"
    path.write_text(json.dumps(cfg))
    out = run_example("lmcache_style.py", {"MOONCAKE_CONFIG_PATH": str(path)})
    assert "stored and read back 8 chunks" in out


def test_sglang_style_example(cluster):
    out = run_example("sglang_style.py", {
        "MOONCAKE_MASTER": f"127.0.0.1:{cluster.rpc_port}",
        "MOONCAKE_TE_META_DATA_SERVER": f"http://127.0.0.1:{cluster.meta_port}/metadata",
        "MOONCAKE_GLOBAL_SEGMENT_SIZE": "64mb"})
    assert "wrote and read 64 pages" in out
