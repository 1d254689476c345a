"""mooncake.store against an HA group: setup() given master_server_addr
"etcd://..." (the reference's form) finds the leader through etcd, and after
kill -9 of the leader the same store object reads its objects back from
the new leader (mooncake-master(1), HIGH AVAILABILITY)."""
import signal

import pytest

from conftest import MooncakeDistributedStore
from ha_cluster import Etcd, HaGroup
from harness import stop, wait_until


@pytest.fixture(scope="module")
def group():
    etcd = Etcd(members=1)
    # The default cluster name, so the store needs no MC_STORE_CLUSTER_ID.
    g = HaGroup(etcd, masters=2, ttl=2, cluster="mooncake_cluster")
    g.add_store("64mb")
    assert wait_until(lambda: len(g.segments()) == 1, 20)
    yield g
    for p in g.procs + g.stores:
        if p is not None:
            stop(p)
    etcd.stop()


def test_an_etcd_master_address_follows_the_leader_through_a_failover(group):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "",
                   group.etcd.address) == 0
    values = {f"py-ha-{i}": bytes([i]) * (1000 + i) for i in range(10)}
    for k, v in values.items():
        assert s.put(k, v) == 0
    leader = group.leader()
    stop(group.procs[leader], signal.SIGKILL)
    for k, v in values.items():
        assert s.get(k) == v
    assert s.put("py-ha-after", b"x") == 0
    assert group.leader() not in (None, leader)
    s.close()
