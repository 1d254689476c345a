"""The monitoring files (packaging/monitoring/): promtool finds the alert
rules and the Prometheus config clean and the rules' unit tests pass, the
Grafana dashboard is well-formed, and every metric a rule or a panel uses
is one a live master exports on /metrics (a single master with a journal,
and an HA master on an etcd of one member started here, for master_ha_*).
Needs promtool (package prometheus) and etcd (etcd-server); scripts/setup.sh
installs both."""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from harness import SRC, check, finish, free_port, start, stop, tempdir, wait_http  # noqa: E402

MON = os.path.join(SRC, "packaging", "monitoring")
# Series Prometheus makes itself for every target, not read from /metrics.
SYNTHETIC = {"up"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan"}

promtool = shutil.which("promtool")
if not check(promtool is not None, "promtool is installed"):
    finish()


def promtool_ok(args, what):
    r = subprocess.run([promtool] + args, cwd=MON, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    out = r.stdout.decode()
    check(r.returncode == 0 and "WARNING" not in out.upper(), f"{what}\n  " +
          out.strip().replace("\n", "\n  "))


promtool_ok(["check", "rules", "--lint=all", "--lint-fatal", "mooncake-alerts.yml"],
            "promtool check rules --lint=all: the alert rules are clean")
promtool_ok(["check", "config", "prometheus.yml"], "promtool check config: prometheus.yml is valid")
promtool_ok(["test", "rules", "mooncake-alerts.test.yml"],
            "promtool test rules: the alerts fire when they should and only then")


def metric_names(expr):
    """The metric names a PromQL expression reads."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        word = m.group(0)
        if e[m.end():].lstrip().startswith("(") or word.lower() in KEYWORDS:
            continue  # a function or an aggregation, or an operator
        names.add(word)
    return names


example = 'sum without (instance) (rate(a_total{job="x"}[5m])) / on (job) group_left b > 1e-3'
check(metric_names(example) == {"a_total", "b"}, f"the expression reader finds the metrics of "
      f"{example}: {sorted(metric_names(example))}")

# ---- what the rules and the dashboard use ----
rules_text = open(os.path.join(MON, "mooncake-alerts.yml")).read()
rule_exprs = []
try:
    import yaml  # python3-yaml; only to read exprs, promtool has validated the file
    for group in yaml.safe_load(rules_text)["groups"]:
        rule_exprs += [(r.get("alert") or r.get("record"), r["expr"]) for r in group["rules"]]
except ImportError:
    check(False, "python3-yaml is importable (scripts/setup.sh installs it)")
check(len(rule_exprs) >= 5, f"{len(rule_exprs)} alert rules")
alerts = {name for name, _ in rule_exprs}
for topic, alert in (("master down", "MooncakeMasterDown"),
                     ("pool above the high watermark", "MooncakePoolAboveHighWatermark"),
                     ("eviction failures", "MooncakeEvictionFailing"),
                     ("stores lost", "MooncakeStoresLost"),
                     ("journal commit latency", "MooncakeJournalCommitSlow")):
    check(alert in alerts, f"an alert for {topic}: {alert}")

dashboard = json.load(open(os.path.join(MON, "mooncake-dashboard.json")))
panels = dashboard.get("panels", [])
ids = [p.get("id") for p in panels]
check(len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids), "panel ids are unique")
panel_exprs = []
for p in panels:
    if p.get("type") == "row":
        continue
    g = p.get("gridPos", {})
    check(g.get("x", 99) + g.get("w", 99) <= 24 and g.get("h", 0) > 0,
          f"panel '{p.get('title')}' fits the 24-column grid")
    targets = p.get("targets", [])
    check(targets and all(t.get("expr") for t in targets), f"panel '{p.get('title')}' has queries")
    panel_exprs += [(p.get("title"), t["expr"]) for t in targets]
for var in dashboard.get("templating", {}).get("list", []):
    q = var.get("query")
    q = q.get("query", "") if isinstance(q, dict) else q or ""
    m = re.match(r"label_values\((.+),\s*\w+\)$", q)
    if m:
        panel_exprs.append((f"variable {var['name']}", m.group(1)))
check(len(panel_exprs) >= 10, f"{len(panel_exprs)} dashboard queries")

# ---- a live master's /metrics, with a state directory so the journal's
# metrics are there too ----
work = tempdir("mooncake-monitoring-")
rpc_port, metrics_port = free_port(), free_port()
master = start(["master", "--rpc-address", "127.0.0.1", "--rpc-port", str(rpc_port),
                "--metrics-port", str(metrics_port), "--data-dir", os.path.join(work, "state")],
               log_name=os.path.join(work, "master.log"))
exported = set()
if check(wait_http(f"http://127.0.0.1:{metrics_port}/health", 20), "the master serves"):
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
    text = text.decode()
    exported = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? ", text, re.M))
    r = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    check(r.returncode == 0, f"promtool check metrics finds the live /metrics clean "
          f"{r.stdout.decode()[:400]}")
check(stop(master) == 0, "the master stops cleanly")
check(len(exported) >= 20, f"the master exports {len(exported)} metrics")

# ---- and an HA master's (on an etcd of one member started here): the
# master_ha_* metrics exist only with --ha-etcd ----
from ha_cluster import ETCD, Etcd, HaGroup  # noqa: E402
if check(os.path.exists(ETCD), f"etcd is installed ({ETCD}; scripts/setup.sh installs etcd-server)"):
    etcd = Etcd(members=1, logdir=work)
    group = HaGroup(etcd, masters=1, cluster="monitoring", logdir=work)
    try:
        if check(group.leader(20) == 0, "the HA master leads"):
            status, body = group.admin(0, "/metrics")
            text = body.decode()
            ha = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? ", text, re.M))
            check(any(n.startswith("master_ha_") for n in ha),
                  f"the HA master exports master_ha_* metrics ({len(ha)} in all)")
            exported |= ha
            r = subprocess.run([promtool, "check", "metrics"], input=body,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            check(r.returncode == 0, f"promtool check metrics finds the HA master's /metrics clean "
                  f"{r.stdout.decode()[:400]}")
    finally:
        for p in group.procs:
            if p is not None:
                check(stop(p) == 0, "the HA master stops cleanly")
        etcd.stop()

used = {}
for where, expr in [(f"rule {n}", e) for n, e in rule_exprs] + \
        [(f"panel '{t}'", e) for t, e in panel_exprs]:
    for name in metric_names(expr):
        used.setdefault(name, []).append(where)
check(len(used) >= 15, f"rules and panels use {len(used)} metrics")
for name, where in sorted(used.items()):
    check(name in exported or name in SYNTHETIC,
          f"{name} exists on a live master's /metrics (used by {len(where)}: {where[0]})")
unused = sorted(exported - set(used))
print(f"exported but on no panel or rule: {unused}")
finish()
