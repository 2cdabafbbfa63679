"""Where the ranks of a scaling run go, and the command that puts them there.

  local    this machine: kolorun -np N --oversubscribe (mpirun when kolorun is not built)
  netns    namespace hosts node0..nodeH-1 (tools/cluster/netns-up.sh), ranks spread evenly
           over min(N, H) hosts, traffic between hosts on veth links that shape.sh can
           slow to a given rate: KOLO_MPIRUN=<wrapper> kolorun -np N -H node0:a,node1:b
  slurm    a SLURM cluster of H nodes (tools/cluster/slurm-up.sh): salloc -N n -n N kolorun
           (srun -N n -n N when kolorun is not built)

A placement that needs a cluster brings it up when entered and tears it down when left
(a `with` block), so an interrupted experiment leaves no daemons or namespaces behind.
"""
import os
import subprocess
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_TOOLS = os.path.join(REPO, "tools", "cluster")
SKIP = 77  # the cluster scripts' "this machine cannot do it"


class PlacementUnavailable(Exception):
    """The machine cannot host this placement (not root, no namespaces, no slurm)."""


def spread(ranks, hosts):
    """Ranks per host, as even as possible over min(ranks, hosts) hosts: 5 over 2 -> [3, 2]."""
    used = min(ranks, hosts)
    return [ranks // used + (1 if i < ranks % used else 0) for i in range(used)]


def _cluster_script(name, *args):
    result = subprocess.run([os.path.join(CLUSTER_TOOLS, name), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=900)
    if result.returncode == SKIP:
        raise PlacementUnavailable(result.stdout.strip().splitlines()[-1])
    if result.returncode != 0:
        raise RuntimeError(f"{name} failed (exit {result.returncode}):\n{result.stdout}")
    return result.stdout


def _root_flags():
    return ["--allow-run-as-root"] if os.geteuid() == 0 else []


class Local:
    name = "local"

    def __init__(self, build):
        self.kolorun = os.path.join(build, "launcher", "kolorun")
        if not os.access(self.kolorun, os.X_OK):
            self.kolorun = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def nodes(self, ranks):
        return 1

    def command(self, ranks, argv):
        if self.kolorun:
            # A scaling run may put more ranks on this machine than it has cores.
            return [self.kolorun, "-np", str(ranks), "--oversubscribe", *argv], {}
        return ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", *_root_flags(), *argv], {}

    def shape(self, rate, delay):
        if rate or delay:
            raise ValueError("link shaping needs the netns placement (local ranks talk through shared memory)")


class Cluster:
    """A placement on a cluster that tools/cluster/ makes for it: UP_SCRIPT when entered,
    DOWN_SCRIPT when left, its state in a fresh folder under /tmp (short: sockets go there)."""
    up_script = down_script = ""

    def __init__(self, build, hosts, slots):
        self.local = Local(build)
        self.hosts, self.slots = hosts, slots
        self.state = None

    def __enter__(self):
        self.state = tempfile.mkdtemp(prefix=f"kolo-{self.name}-", dir="/tmp")
        _cluster_script(self.up_script, "--hosts", str(self.hosts), "--slots", str(self.slots), self.state)
        return self

    def __exit__(self, *exc):
        if self.state:
            _cluster_script(self.down_script, self.state)
        return False

    def nodes(self, ranks):
        return min(ranks, self.hosts)


class NamespaceHosts(Cluster):
    name = "netns"
    up_script, down_script = "netns-up.sh", "netns-down.sh"

    def command(self, ranks, argv):
        host_list = ",".join(f"node{i}:{n}" for i, n in enumerate(spread(ranks, self.hosts)))
        wrapper = os.path.join(self.state, "mpirun")
        if self.local.kolorun:
            return [self.local.kolorun, "-np", str(ranks), "-H", host_list, *argv], {"KOLO_MPIRUN": wrapper}
        return [wrapper, "-np", str(ranks), "-H", host_list, "--bind-to", "none", *argv], {}

    def shape(self, rate, delay):
        if not rate and not delay:
            _cluster_script("shape.sh", self.state, "--clear")
            return
        args = (["--rate", rate] if rate else []) + (["--delay", delay] if delay else [])
        _cluster_script("shape.sh", self.state, *args)


class Slurm(Cluster):
    name = "slurm"
    up_script, down_script = "slurm-up.sh", "slurm-down.sh"

    def command(self, ranks, argv):
        if ranks > self.hosts * self.slots:
            raise ValueError(f"np {ranks} does not fit on {self.hosts} SLURM nodes of {self.slots} CPUs")
        env = {"SLURM_CONF": os.path.join(self.state, "slurm.conf")}
        place = ["-N", str(self.nodes(ranks)), "-n", str(ranks)]
        if self.local.kolorun:
            return ["salloc", "--quiet", *place, self.local.kolorun, "-np", str(ranks), *argv], env
        return ["srun", "--mpi=pmix", *place, *argv], env

    def shape(self, rate, delay):
        if rate or delay:
            raise ValueError("link shaping needs the netns placement (SLURM nodes here share the loopback)")


def make(name, build, hosts, slots):
    if name == "local":
        return Local(build)
    if name == "netns":
        return NamespaceHosts(build, hosts, slots)
    if name == "slurm":
        return Slurm(build, hosts, slots)
    raise ValueError(f"unknown placement '{name}' (local, netns or slurm)")
