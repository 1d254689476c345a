"""The Kubernetes manifests (packaging/kubernetes/), checked offline: every
document parses and validates against the Kubernetes API schema (the
OpenAPI-generated models of python3-kubernetes: no unknown field, every
type and required field right), the ConfigMap's mooncake.toml is accepted
by the binary, and kinds, ports, probes and references agree with it and
with each other. Needs Debian's python3-yaml and python3-kubernetes
(scripts/setup.sh installs them), so meson runs it with /usr/bin/python3."""
import glob
import os
import re
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from harness import SRC, check, finish, run, tempdir  # noqa: E402

try:
    import kubernetes.client
    import yaml
except ImportError as e:
    check(False, f"python3-yaml and python3-kubernetes are importable ({e}; "
          f"{sys.executable}; scripts/setup.sh installs them)")
    finish()

K8S = os.path.join(SRC, "packaging", "kubernetes")
VERSION = re.search(r"^\s*version: '([^']+)'", open(os.path.join(SRC, "meson.build")).read(),
                    re.M).group(1)

# ---- schema: walk each document against the API's generated models ----
api_client = kubernetes.client.ApiClient()


def schema_errors(value, type_name, path):
    """Fields the schema does not know, and values of the wrong type."""
    if value is None:
        return []
    m = re.fullmatch(r"list\[(.+)\]", type_name)
    if m:
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [e for i, v in enumerate(value) for e in schema_errors(v, m.group(1), f"{path}[{i}]")]
    m = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if m:
        if not isinstance(value, dict):
            return [f"{path}: expected a map"]
        return [e for k, v in value.items() for e in schema_errors(v, m.group(1), f"{path}.{k}")]
    scalars = {"str": str, "int": int, "bool": bool, "float": (int, float)}
    if type_name in scalars:
        ok = isinstance(value, scalars[type_name]) and not (
            type_name == "int" and isinstance(value, bool))
        return [] if ok else [f"{path}: expected {type_name}, got {value!r}"]
    if type_name in ("object", "datetime", "date"):
        return []  # int-or-string, quantities typed object, free-form
    model = getattr(kubernetes.client, type_name)
    if not isinstance(value, dict):
        return [f"{path}: expected a {type_name} object"]
    by_json = {json: attr for attr, json in model.attribute_map.items()}
    errors = []
    for key, v in value.items():
        if key not in by_json:
            errors.append(f"{path}.{key}: not a field of {type_name}")
            continue
        errors += schema_errors(v, model.openapi_types[by_json[key]], f"{path}.{key}")
    return errors


def validate(doc, where):
    """Schema errors of one manifest, including required fields (the models'
    constructors refuse a missing one)."""
    group_version = doc.get("apiVersion", "")
    version = group_version.split("/")[-1]
    model_name = version[0].upper() + version[1:] + doc.get("kind", "")
    if not hasattr(kubernetes.client, model_name):
        return [f"{where}: unknown apiVersion/kind {group_version} {doc.get('kind')}"]
    errors = schema_errors(doc, model_name, where)
    if not errors:
        try:
            api_client._ApiClient__deserialize(doc, model_name)
        except (ValueError, TypeError) as e:
            errors.append(f"{where}: {e}")
    return errors


# The checker itself: a typo, a wrong type and a missing required field
# must each be refused, or passing below would mean nothing.
bad = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "x"},
       "spec": {"replica": 1, "serviceName": "x", "selector": {"matchLabels": {"a": "b"}},
                "template": {"spec": {"containers": [{"image": "i", "ports": [
                    {"containerPort": "80"}]}]}}}}
bad_errors = validate(bad, "bad")
check(any("replica: not a field" in e for e in bad_errors) and
      any("containerPort: expected int" in e for e in bad_errors),
      f"the schema check refuses an unknown field and a wrong type {bad_errors}")
del bad["spec"]["replica"]
bad["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = 80
check(any("name" in e for e in validate(bad, "bad")),
      "the schema check refuses a container without its required name")

# ---- load every document ----
docs = []
files = sorted(glob.glob(os.path.join(K8S, "*.yaml")))
for path in files:
    name = os.path.basename(path)
    try:
        loaded = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    except yaml.YAMLError as e:
        check(False, f"{name} parses ({e})")
        continue
    check(bool(loaded), f"{name} parses ({len(loaded)} documents)")
    for d in loaded:
        docs.append((name, d))

kustomization = [d for n, d in docs if d.get("kind") == "Kustomization"]
resources = [(n, d) for n, d in docs if d.get("kind") != "Kustomization"]
if check(len(kustomization) == 1, "one kustomization.yaml"):
    listed = sorted(kustomization[0].get("resources", []))
    on_disk = sorted({n for n, _ in resources})
    check(listed == on_disk, f"kustomization lists every manifest file {listed} vs {on_disk}")

for name, d in resources:
    where = f"{name}: {d.get('kind')}/{d.get('metadata', {}).get('name')}"
    errors = validate(d, where)
    check(not errors, f"{where} validates against the Kubernetes API schema {errors[:3]}")

by_kind = {}
for _, d in resources:
    by_kind.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
keys = [(d["kind"], d["metadata"]["name"]) for _, d in resources]
check(len(keys) == len(set(keys)), "no two manifests share a kind and name")


def get(kind, name):
    obj = by_kind.get(kind, {}).get(name)
    check(obj is not None, f"{kind} {name} exists")
    return obj or {}


master = get("StatefulSet", "mooncake-master")
store = get("DaemonSet", "mooncake-store")
engines = list(by_kind.get("Deployment", {}).values())
check(len(engines) == 1, "one example engine Deployment")
configmap = get("ConfigMap", "mooncake-config")
workloads = [w for w in (master, store, *engines) if w]

# ---- the config: the binary accepts it; its ports are the truth ----
work = tempdir("mooncake-k8s-")
toml_text = configmap.get("data", {}).get("mooncake.toml", "")
toml_path = os.path.join(work, "mooncake.toml")
with open(toml_path, "w") as f:
    f.write(toml_text)
effective = {}
for role in ("master", "store"):
    r = run([role, "--config", toml_path, "--print-config"])
    check(r.returncode == 0, f"mooncake {role} accepts the ConfigMap's mooncake.toml "
          f"{r.stderr.decode()[:300]}")
    effective[role] = tomllib.loads(r.stdout.decode()) if r.returncode == 0 else {}
mcfg = effective["master"].get("master", {})
scfg = effective["store"].get("store", {})
ccfg = effective["store"].get("cluster", {})


def containers(workload):
    return workload.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])


def port_number(container, port):
    """A probe's or Service's port, by name or number, in `container`."""
    for p in container.get("ports", []):
        if port in (p.get("name"), p.get("containerPort")):
            return p["containerPort"]
    return None


def images_and_config(w):
    for c in containers(w):
        if c["image"].startswith("mooncake:"):
            check(c["image"] == f"mooncake:{VERSION}", f"{w['metadata']['name']} runs mooncake:{VERSION}")
            cmd = c.get("command", [])
            check("--config" in cmd and cmd[cmd.index("--config") + 1] ==
                  "/etc/mooncake/mooncake.toml", f"{w['metadata']['name']} reads /etc/mooncake/mooncake.toml")
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            vols = {v["name"]: v for v in w["spec"]["template"]["spec"].get("volumes", [])}
            vol = vols.get(mounts.get("/etc/mooncake"), {})
            check(vol.get("configMap", {}).get("name") == "mooncake-config",
                  f"{w['metadata']['name']} mounts the ConfigMap at /etc/mooncake")


for w in (master, store):
    if w:
        images_and_config(w)

# ---- the master: persistent state, probes on /health ----
mc = (containers(master) or [{}])[0]
claims = [t["metadata"]["name"] for t in master.get("spec", {}).get("volumeClaimTemplates", [])]
state_mounts = [m for m in mc.get("volumeMounts", []) if m["name"] in claims]
check(any(m["mountPath"] == mcfg.get("data_dir") for m in state_mounts),
      f"the master's persistent volume is mounted at its data_dir {mcfg.get('data_dir')}")
check(master.get("spec", {}).get("replicas") == 1, "one master replica (its state is one file)")
for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
    get_ = mc.get(probe, {}).get("httpGet", {})
    check(get_.get("path") == "/health" and port_number(mc, get_.get("port")) == mcfg.get("metrics_port"),
          f"master {probe} is GET /health on the metrics port {mcfg.get('metrics_port')}")
headless = by_kind.get("Service", {}).get(master.get("spec", {}).get("serviceName"), {})
check(headless.get("spec", {}).get("clusterIP") == "None",
      "the StatefulSet's serviceName is a headless Service")

# ---- the stores: huge pages for the whole segment ----
sc = (containers(store) or [{}])[0]
res = sc.get("resources", {})
huge = res.get("requests", {}).get("hugepages-2Mi")
check(huge is not None and huge == res.get("limits", {}).get("hugepages-2Mi"),
      f"stores request hugepages-2Mi, limits equal ({huge})")
units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)", huge or "")
huge_bytes = int(m.group(1)) * units[m.group(2)] if m else 0
check(huge_bytes >= scfg.get("global_segment_size", 1 << 62),
      f"the huge pages hold the segment ({huge_bytes} >= {scfg.get('global_segment_size')})")
check("memory" in res.get("requests", {}), "stores request memory beside huge pages (required)")
check(scfg.get("hugepages") is True, "the stores' config asks for huge pages")
for probe in ("readinessProbe", "livenessProbe"):
    port = sc.get(probe, {}).get("tcpSocket", {}).get("port")
    check(port_number(sc, port) == scfg.get("port") and scfg.get("port", 0) > 0,
          f"store {probe} checks the data port {scfg.get('port')}")
env = {e["name"]: e for e in sc.get("env", [])}
check(env.get("MOONCAKE_LOCAL_HOSTNAME", {}).get("valueFrom", {}).get("fieldRef", {})
      .get("fieldPath") == "status.podIP", "stores announce their pod IP")

# ---- Services: select pods that have the port; ports agree with the config ----
want_ports = {"mooncake-master": mcfg.get("rpc_port"),
              "mooncake-metadata": mcfg.get("http_metadata_server_port"),
              "mooncake-metrics": mcfg.get("metrics_port")}
check(mcfg.get("enable_http_metadata_server") is True, "the master runs the metadata service")
for name, number in want_ports.items():
    svc = get("Service", name)
    ports = svc.get("spec", {}).get("ports", [])
    check([p.get("port") for p in ports] == [number], f"Service {name} serves port {number}")
for svc_name, svc in by_kind.get("Service", {}).items():
    selector = svc.get("spec", {}).get("selector", {})
    selected = [w for w in workloads if selector and selector.items() <=
                w["spec"]["template"]["metadata"].get("labels", {}).items()]
    check(bool(selected), f"Service {svc_name} selects pods")
    for p in svc.get("spec", {}).get("ports", []):
        target = p.get("targetPort", p.get("port"))
        found = [port_number(c, target) for w in selected for c in containers(w)]
        check(any(n is not None for n in found),
              f"Service {svc_name} port {p.get('name')} targets a container port ({target})")

# ---- every reference resolves ----
refs = []
for w in workloads:
    spec = w["spec"]["template"]["spec"]
    refs += [v["configMap"]["name"] for v in spec.get("volumes", []) if "configMap" in v]
    for c in spec.get("containers", []):
        refs += [e["configMapRef"]["name"] for e in c.get("envFrom", []) if "configMapRef" in e]
        refs += [e["valueFrom"]["configMapKeyRef"]["name"] for e in c.get("env", [])
                 if "configMapKeyRef" in e.get("valueFrom", {})]
for ref in refs:
    check(ref in by_kind.get("ConfigMap", {}), f"referenced ConfigMap {ref} exists")


def service_port_exists(address, what):
    """host:port or http://host:port/... names a Service with that port."""
    m = re.match(r"(?:\w+://)?([a-z0-9-]+):(\d+)", address or "")
    svc = by_kind.get("Service", {}).get(m.group(1)) if m else None
    ok = svc is not None and int(m.group(2)) in [p["port"] for p in svc["spec"]["ports"]]
    check(ok, f"{what} ({address}) is a Service and one of its ports")


service_port_exists(ccfg.get("master"), "the config's [cluster] master")
service_port_exists(ccfg.get("metadata_server"), "the config's [cluster] metadata_server")

# ---- the engine: the variables the client reads ----
documented = set(re.findall(r"\bMOONCAKE_[A-Z_]+", open(os.path.join(SRC, "packaging",
                                                                   "mooncake.toml")).read()))
for w in engines:
    ec = (containers(w) or [{}])[0]
    env = {e["name"]: e.get("value") for e in ec.get("env", [])}
    used = {n for n in env if n.startswith("MOONCAKE_")}
    check({"MOONCAKE_MASTER", "MOONCAKE_TE_META_DATA_SERVER", "MOONCAKE_GLOBAL_SEGMENT_SIZE",
           "MOONCAKE_LOCAL_BUFFER_SIZE", "MOONCAKE_PROTOCOL"} <= used,
          f"the engine sets the client's variables {sorted(used)}")
    check(used <= documented, f"every MOONCAKE_ variable is one mooncake reads {sorted(used - documented)}")
    check(env.get("MOONCAKE_GLOBAL_SEGMENT_SIZE") == "0", "the engine is a pure client (segment 0)")
    service_port_exists(env.get("MOONCAKE_MASTER"), "the engine's MOONCAKE_MASTER")
    service_port_exists(env.get("MOONCAKE_TE_META_DATA_SERVER"), "the engine's MOONCAKE_TE_META_DATA_SERVER")
    # The engine's values must be ones mooncake accepts: a client with them
    # resolves its config (it fails later, at connecting, not at parsing).
    client_env = {k: v for k, v in env.items() if k.startswith("MOONCAKE_") and v is not None}
    r = run(["store", "--print-config"], env=client_env)
    check(r.returncode == 0, f"mooncake accepts the engine's variables {r.stderr.decode()[:200]}")
finish()
