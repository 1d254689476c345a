"""The Debian packages: scripts/package.sh builds them (mooncake,
libmooncake0, libmooncake-dev and python3-mooncake, from the release build
of this folder, --prebuilt), lintian finds no errors and only the warnings
listed below, and they install into a throwaway root, mooncake runs from
there, the library, header and Python module are where Debian looks for
them (the module imports from the unpacked root), and purging leaves only
what policy says stays.

Needs root (dpkg --root, chroot) and dpkg-dev, debhelper and lintian
(scripts/setup.sh installs them): a missing tool fails the test; not being
root skips it, saying so."""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from harness import BIN, SRC, check, finish, tempdir  # noqa: E402

# Lintian warnings we keep, each with its reason (README, "Install and run
# as a service"). None today.
KEPT_WARNINGS = {}

if os.geteuid() != 0:
    print("SKIP: the package test installs into a throwaway root with dpkg --root and "
          "chroot, which needs root")
    sys.exit(77)
if os.environ.get("MOONCAKE_EXPECT_STATIC") == "0":
    print("SKIP: this build links dynamically (sanitizers); the package ships the static "
          "binary of the release build, which e2e_package tests there")
    sys.exit(77)
for tool in ("dpkg-buildpackage", "dh", "lintian", "dpkg", "dpkg-deb", "chroot"):
    check(shutil.which(tool) is not None, f"{tool} is installed")

version = re.search(r"^\s*version: '([^']+)'", open(os.path.join(SRC, "meson.build")).read(),
                    re.M).group(1)
out = tempdir("mooncake-package-")
started = time.monotonic()
p = subprocess.run(["bash", os.path.join(SRC, "scripts", "package.sh"), "--prebuilt", BIN],
                   env=dict(os.environ, OUT_DIR=out), stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=600)
log = p.stderr.decode()
print(log)
check(p.returncode == 0, f"scripts/package.sh --prebuilt builds the package, lintian finds no "
      f"errors ({time.monotonic() - started:.0f} s)")
warnings = sorted(set(re.findall(r"^W: \S+ (\S+)", log, re.M)))
check(set(warnings) <= set(KEPT_WARNINGS), f"lintian warns only of what we keep {warnings}")
arch = subprocess.run(["dpkg", "--print-architecture"], stdout=subprocess.PIPE).stdout.decode().strip()
packages = ["mooncake", "libmooncake0", "libmooncake-dev", "python3-mooncake"]
debs = {p: os.path.join(out, f"{p}_{version}_{arch}.deb") for p in packages}
built = [p for p in packages if os.path.exists(debs[p])]
if not check(built == packages, f"all four packages built {built}"):
    finish()
deb = debs["mooncake"]


def deb_files(path):
    listing = subprocess.run(["dpkg-deb", "-c", path], stdout=subprocess.PIPE).stdout.decode()
    return set(re.findall(r"\s\.(/\S+?)(?: -> \S+)?$", listing, re.M))


multiarch = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"],
                           stdout=subprocess.PIPE).stdout.decode().strip()
libdir = f"/usr/lib/{multiarch}"
pydir = "/usr/lib/python3/dist-packages/mooncake"
ext = "_store" + subprocess.run(
    ["/usr/bin/python3", "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
    stdout=subprocess.PIPE).stdout.decode().strip()
expected_in = {
    "libmooncake0": [f"{libdir}/libmooncake.so.{version}", f"{libdir}/libmooncake.so.0"],
    "libmooncake-dev": ["/usr/include/mooncake/client.h", f"{libdir}/libmooncake.so",
                        f"{libdir}/libmooncake.a", f"{libdir}/pkgconfig/mooncake.pc"],
    "python3-mooncake": [f"{pydir}/__init__.py", f"{pydir}/store.py", f"{pydir}/{ext}",
                         f"{pydir}/tensor_methods.py", f"{pydir}/tensor_format.py",
                         "/usr/share/man/man3/mooncake-python.3.gz"],
}
for p, want in expected_in.items():
    have = deb_files(debs[p])
    missing = [f for f in want if f not in have]
    check(not missing, f"{p} holds {', '.join(os.path.basename(f) for f in want)} {missing}")
soname = subprocess.run(["dpkg-deb", "-I", debs["libmooncake0"], "shlibs"],
                        stdout=subprocess.PIPE).stdout.decode().split()
check(soname[:3] == ["libmooncake", "0", "libmooncake0"],
      f"libmooncake0 has a shlibs file for libmooncake.so.0 {soname}")

contents = subprocess.run(["dpkg-deb", "-c", deb], stdout=subprocess.PIPE).stdout.decode()
files = set(re.findall(r"\s\.(/\S+)$", contents, re.M))
expected = ["/usr/bin/mooncake", "/etc/mooncake/mooncake.toml",
            "/usr/share/man/man1/mooncake.1.gz", "/usr/share/man/man5/mooncake.toml.5.gz",
            "/usr/share/man/man7/mooncake-protocol.7.gz", "/usr/share/man/man7/mooncake-security.7.gz",
            "/usr/share/bash-completion/completions/mooncake",
            "/usr/share/zsh/vendor-completions/_mooncake", "/usr/lib/sysusers.d/mooncake.conf"]
expected += [f"/lib/systemd/system/mooncake-{u}.service"
             for u in ("master", "store", "store@", "metadata-server")]
expected += ["/usr/share/doc/mooncake/examples/kubernetes/master.yaml",
             "/usr/share/doc/mooncake/examples/monitoring/mooncake-alerts.yml",
             "/usr/share/doc/mooncake/examples/monitoring/mooncake-dashboard.json"]
expected += [f"/usr/share/man/man1/mooncake-{c}.1.gz" for c in
             ("master", "store", "metadata-server", "put", "get", "ls", "rm", "exists", "bench")]
missing = [f for f in expected if f not in files]
check(not missing, f"the package holds the binary, man pages, config, units, completion {missing}")
for name in ("mooncake_master", "mooncake_client", "mooncake_http_metadata_server"):
    check(re.search(rf"\s\./usr/bin/{name} -> (/usr/bin/)?mooncake$", contents, re.M),
          f"the package links {name} (the reference's binary name) to mooncake")
conffiles = subprocess.run(["dpkg-deb", "--ctrl-tarfile", deb], stdout=subprocess.PIPE).stdout
listing = subprocess.run(["tar", "-xOf", "-", "./conffiles"], input=conffiles,
                         stdout=subprocess.PIPE).stdout.decode().split()
check(listing == ["/etc/mooncake/mooncake.toml"], f"the config is the one conffile {listing}")

# A throwaway root: just a dpkg database, and the folders a real system has
# from other packages (systemd's /var/lib/systemd). Maintainer scripts run
# outside it (--force-script-chrootless, DPKG_ROOT set) with the host's
# tools; --force-depends because the root has no systemd package (the host's
# systemd-sysusers --root creates the user).
root = tempdir("mooncake-root-")
for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "etc",
          "var/lib/systemd"):
    os.makedirs(os.path.join(root, d))
open(os.path.join(root, "var/lib/dpkg/status"), "w").close()
before = set()
for dirpath, dirnames, filenames in os.walk(root):
    before.update(os.path.relpath(os.path.join(dirpath, n), root) for n in dirnames + filenames)


def dpkg(*args):
    r = subprocess.run(["dpkg", f"--root={root}", "--force-script-chrootless", "--log=/dev/null"]
                       + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    print("  " + r.stdout.decode().replace("\n", "\n  "))
    return r.returncode


check(dpkg("--force-depends", "-i", *debs.values()) == 0, "dpkg --root installs the packages")
r = subprocess.run(["chroot", root, "/usr/bin/mooncake", "version"], stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, timeout=30)
check(r.returncode == 0 and r.stdout.decode().startswith(f"mooncake {version}"),
      f"mooncake version runs inside the root, static, nothing else there ({r.stdout[:80]!r})")
r = subprocess.run(["chroot", root, "/usr/bin/mooncake_master", "--print-config", "-port=50061"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
check(r.returncode == 0 and b"rpc_port = 50061" in r.stdout,
      f"mooncake_master -port=50061 runs as mooncake master ({r.stdout[-80:]!r})")
passwd = open(os.path.join(root, "etc/passwd")).read()
check(re.search(r"^mooncake:x:\d+:\d+:[^:]*:/var/lib/mooncake:/usr/sbin/nologin$", passwd, re.M),
      "the mooncake system user exists, home /var/lib/mooncake, no login shell")
installed = open(os.path.join(root, "usr/share/bash-completion/completions/mooncake")).read()
ours = subprocess.run([BIN, "completion", "bash"], stdout=subprocess.PIPE).stdout.decode()
check(installed == ours, "the installed bash completion is the binary's own")
for f in (f"{libdir}/libmooncake.so.0", f"{libdir}/libmooncake.so", "/usr/include/mooncake/client.h",
          f"{libdir}/pkgconfig/mooncake.pc"):
    check(os.path.exists(root + f), f"{f} is installed (and resolves)")
pc = open(root + f"{libdir}/pkgconfig/mooncake.pc").read()
check(f"libdir=${{prefix}}/lib/{multiarch}" in pc and "prefix=/usr\n" in pc,
      "mooncake.pc points at /usr and the multiarch folder")
# The root has no python3: import the module from the unpacked root with the
# host's Debian python3, the interpreter it was built for.
r = subprocess.run(["/usr/bin/python3", "-c",
                    "import mooncake.store, mooncake._store; "
                    "from mooncake.store import MooncakeDistributedStore; "
                    "print(mooncake._store.__file__)"],
                   env=dict(os.environ, PYTHONPATH=root + "/usr/lib/python3/dist-packages",
                            PYTHONDONTWRITEBYTECODE="1"),
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
check(r.returncode == 0 and r.stdout.decode().strip() == root + f"{pydir}/{ext}",
      f"mooncake.store imports from the installed package ({r.stdout.decode().strip()[-200:]!r})")
# What importing as root leaves: byte code, which removal takes too.
os.makedirs(root + pydir + "/__pycache__")
open(root + pydir + "/__pycache__/store.cpython-311.pyc", "w").close()

# What a running system adds: the master's state, an operator's edit.
state = os.path.join(root, "var/lib/mooncake")
os.makedirs(state)
open(os.path.join(state, "master.db"), "w").close()
conf = os.path.join(root, "etc/mooncake/mooncake.toml")
with open(conf, "a") as f:
    f.write("# edited by the operator\n")
check(dpkg("--remove", "mooncake") == 0, "dpkg --remove removes the package")
check(not os.path.exists(os.path.join(root, "usr/bin/mooncake")), "remove takes the binary")
check(os.path.exists(conf), "remove keeps the edited conffile")
check(dpkg("--purge", "mooncake") == 0, "dpkg --purge purges it")
check(dpkg("--purge", "python3-mooncake", "libmooncake-dev", "libmooncake0") == 0,
      "dpkg --purge purges the library and module packages")

after = set()
for dirpath, dirnames, filenames in os.walk(root):
    after.update(os.path.relpath(os.path.join(dirpath, n), root) for n in dirnames + filenames)
# Policy 9.2.2: a package does not remove the system user it created
# (files elsewhere may still be owned by its uid).
stays = {"etc/passwd", "etc/group", "etc/shadow", "etc/gshadow", "etc/.pwd.lock",
         "etc/passwd-", "etc/group-", "etc/shadow-", "etc/gshadow-"}
left = sorted(f for f in after - before if f not in stays and not f.startswith("var/lib/dpkg/"))
check(not left, f"purge leaves nothing but the system user and dpkg's database {left}")
check(not os.path.exists(root + "/usr/lib") and not os.path.exists(root + "/usr/include"),
      "purge takes the library, header and module with their folders")
check(not os.path.exists(conf) and not os.path.exists(state),
      "purge removes the conffile and the services' state in /var/lib/mooncake")
print(f"package test took {time.monotonic() - started:.0f} s")
finish()
