"""setup() as the reference release has it: seven positional arguments, the
release's keywords (engine, enable_ssd_offload, ssd_offload_path,
tenant_id, enable_client_http_server, client_http_port), or one dict; a
wrong type is a TypeError naming the argument; the metadata services
engines name (P2PHANDSHAKE, etcd://, redis://) start quietly."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import MooncakeDistributedStore, setup_args

SGLANG_KW = dict(enable_ssd_offload=False, ssd_offload_path="", tenant_id="default",
                 enable_client_http_server=False, client_http_port=9300)


def test_setup_takes_sglangs_eight_positional_arguments_and_keywords(cluster):
    s = MooncakeDistributedStore()
    assert s.setup(*setup_args(cluster), None, **SGLANG_KW) == 0
    assert s.put("sglang-shape", b"v") == 0
    assert s.close() == 0


def test_setup_keyword_names_are_the_references(cluster):
    a = setup_args(cluster)
    names = ["local_hostname", "metadata_server", "global_segment_size", "local_buffer_size",
             "protocol", "rdma_devices", "master_server_addr"]
    s = MooncakeDistributedStore()
    assert s.setup(**dict(zip(names, a)), engine=None, tenant_id="default") == 0
    assert s.close() == 0
    doc = MooncakeDistributedStore.setup.__doc__
    for n in names + list(SGLANG_KW) + ["engine"]:
        assert n in doc, n


def test_setup_needs_all_seven_positional_arguments(cluster):
    with pytest.raises(TypeError):
        MooncakeDistributedStore().setup(*setup_args(cluster)[:6])


@pytest.mark.parametrize("index,name,bad", [
    (0, "local_hostname", 5), (1, "metadata_server", None), (2, "global_segment_size", [1]),
    (2, "global_segment_size", True), (3, "local_buffer_size", 1.5), (4, "protocol", b"tcp"),
    (5, "rdma_devices", 0), (6, "master_server_addr", ("h", 1))])
def test_a_wrong_positional_type_is_a_type_error_naming_it(cluster, index, name, bad):
    a = list(setup_args(cluster))
    a[index] = bad
    with pytest.raises(TypeError, match=name):
        MooncakeDistributedStore().setup(*a)


@pytest.mark.parametrize("name,bad", [
    ("enable_ssd_offload", "yes"), ("ssd_offload_path", 3), ("tenant_id", None),
    ("enable_client_http_server", 1), ("client_http_port", "9300")])
def test_a_wrong_keyword_type_is_a_type_error_naming_it(cluster, name, bad):
    with pytest.raises(TypeError, match=name):
        MooncakeDistributedStore().setup(*setup_args(cluster), **{name: bad})


def test_the_dict_form_takes_the_same_keys(cluster):
    a = setup_args(cluster)
    s = MooncakeDistributedStore()
    assert s.setup({"local_hostname": a[0], "metadata_server": a[1],
                    "global_segment_size": a[2], "local_buffer_size": a[3],
                    "protocol": a[4], "rdma_devices": a[5], "master_server_addr": a[6],
                    "enable_ssd_offload": False, "ssd_offload_path": "",
                    "tenant_id": "default", "enable_client_http_server": False,
                    "client_http_port": 9300}) == 0
    assert s.put("dict-shape", b"v") == 0
    assert s.close() == 0
    with pytest.raises(TypeError, match="global_segment_size"):
        MooncakeDistributedStore().setup({"global_segment_size": [1]})
    with pytest.raises(TypeError, match="enable_ssd_offload"):
        MooncakeDistributedStore().setup({"enable_ssd_offload": 2.5})


def run_child(cluster, body):
    """Runs `body` in a fresh interpreter (the once-per-process log state is
    fresh there) and returns its stderr."""
    a = setup_args(cluster)
    code = "from mooncake.store import MooncakeDistributedStore\nA = %r\n" % (a,)
    code += textwrap.dedent(body)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return r.stderr.decode()


def test_keywords_not_built_yet_are_accepted_and_logged_once_at_info(cluster):
    err = run_child(cluster, """
        for _ in range(2):
            s = MooncakeDistributedStore()
            assert s.setup(*A, None, False, "", "tenant-a", True, 0) == 0
            assert s.put("planned-" + str(_), b"v") == 0
            s.close()
    """)
    for kw in ["tenant_id"]:
        lines = [l for l in err.splitlines() if f"setup: {kw}=" in l]
        assert len(lines) == 1, (kw, err)
        assert "INFO" in lines[0] and "not built yet" in lines[0]
    # The client HTTP port is built: each setup starts it (port 0: any free one).
    assert "setup: enable_client_http_server=" not in err
    assert len([l for l in err.splitlines() if "client HTTP API on 0.0.0.0:" in l]) == 2, err
    assert "WARN" not in err and "ERROR" not in err, err


def test_default_keywords_log_nothing(cluster):
    err = run_child(cluster, """
        s = MooncakeDistributedStore()
        assert s.setup(*A, None, False, "", "default", False, 9300) == 0
        s.close()
    """)
    assert "not built yet" not in err, err


@pytest.mark.parametrize("meta", ["P2PHANDSHAKE", "etcd://127.0.0.1:2379",
                                  "redis://127.0.0.1:6379"])
def test_engines_metadata_servers_start_quietly(cluster, meta):
    err = run_child(cluster, f"""
        A = list(A); A[1] = {meta!r}; A[2] = 32 << 20   # contributes a segment
        for _ in range(2):
            s = MooncakeDistributedStore()
            assert s.setup(*A) == 0
            assert s.put("quiet-" + str(_) + {meta[:4]!r}, b"v") == 0
            s.close()
    """)
    assert "WARN" not in err and "ERROR" not in err, err
    assert sum("not published" in l for l in err.splitlines()) <= 1, err


def test_a_metadata_url_of_no_known_kind_still_warns(cluster):
    err = run_child(cluster, """
        A = list(A); A[1] = "ftp://nowhere"; A[2] = 32 << 20
        s = MooncakeDistributedStore()
        assert s.setup(*A) == 0
        s.close()
    """)
    assert "WARN" in err and "ftp://nowhere" in err, err


def test_an_engines_segment_port_is_in_the_references_range(engine):
    host, port = engine.get_hostname().rsplit(":", 1)
    assert host == "127.0.0.1" and 12300 <= int(port) <= 14300


def test_a_port_in_local_hostname_names_the_segment(cluster):
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    a = list(setup_args(cluster, 32 << 20))
    a[0] = f"127.0.0.1:{port}"
    s = MooncakeDistributedStore()
    assert s.setup(*a) == 0
    assert s.get_hostname() == f"127.0.0.1:{port}"
    assert any(f"127.0.0.1:{port}" in line for line in cluster.segments())
    assert s.close() == 0


def test_a_port_in_local_hostname_that_is_in_use_gives_way_to_a_free_one(cluster):
    """The reference's tests give two stores of one process the same
    "host:port" (its transfer engine does not listen there): the second
    segment takes a free port in the reference's range, is named after it,
    and says so; both serve."""
    err = run_child(cluster, """
        import socket
        A = list(A); A[2] = 32 << 20
        with socket.socket() as held:          # another process's port, say
            held.bind(("127.0.0.1", 0)); held.listen()
            port = held.getsockname()[1]
            A[0] = f"127.0.0.1:{port}"
            a = MooncakeDistributedStore()
            assert a.setup(*A) == 0
            name = a.get_hostname()
            host, p = name.rsplit(":", 1)
            assert host == "127.0.0.1" and int(p) != port and 12300 <= int(p) <= 14300, name
        free = socket.socket(); free.bind(("127.0.0.1", 0)); port = free.getsockname()[1]
        free.close()
        A[0] = f"127.0.0.1:{port}"
        b, c = MooncakeDistributedStore(), MooncakeDistributedStore()
        assert b.setup(*A) == 0 and b.get_hostname() == f"127.0.0.1:{port}"
        assert c.setup(*A) == 0 and c.get_hostname() not in (b.get_hostname(), name)
        from mooncake.store import ReplicateConfig
        for s in (a, b, c):   # each segment serves: a put placed on it reads back
            cfg = ReplicateConfig(); cfg.preferred_segment = s.get_hostname()
            k = "busy-port-" + s.get_hostname()
            assert s.put(k, b"x" * 5000, cfg) == 0
            assert [r.get_memory_descriptor().buffer_descriptor.transport_endpoint
                    for r in a.get_replica_desc(k)] == [s.get_hostname()], k
            assert b.get(k) == b"x" * 5000
        for s in (a, b, c):
            assert s.close() == 0
    """)
    assert err.count("is in use, so the segment serves on another port") == 2, err


def test_enable_ssd_offload_gives_the_segment_a_disk_tier_at_ssd_offload_path(cluster, tmp_path):
    ssd = tmp_path / "ssd"
    # A file a crashed earlier run left half written: the tier deletes it.
    (ssd / "objects").mkdir(parents=True)
    (ssd / "objects" / "00000000000000aa.tmp").write_bytes(b"partial")
    err = run_child(cluster, f"""
        A = list(A); A[2] = 32 << 20   # contributes a segment, which gets the tier
        s = MooncakeDistributedStore()
        assert s.setup(*A, None, enable_ssd_offload=True, ssd_offload_path={str(ssd)!r}) == 0
        assert s.put("with-tier", b"v") == 0
        s.close()
    """)
    assert f"disk tier {ssd}: 0 objects" in err, err
    assert "1 unfinished or torn files deleted" in err, err
    assert not (ssd / "objects" / "00000000000000aa.tmp").exists()
    assert "setup: enable_ssd_offload" not in err, err


def test_enable_ssd_offload_without_a_path_is_refused(cluster):
    s = MooncakeDistributedStore()
    assert s.setup(*setup_args(cluster, 32 << 20), None, enable_ssd_offload=True) != 0
