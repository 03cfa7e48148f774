#!/usr/bin/env bash
# Cross-node detection latency: plays hang scenarios of the catalogue as 8 ranks on
# NODES simulated nodes (`ncclscope sim --nodes`), starts one `ncclscope exporter` per node on
# loopback with every other node as a peer (as under Slurm: one exporter per node), and watches the
# correlating exporter's job view (verdict-job.json in the directory of the node holding rank 0)
# with default settings. Prints per scenario the job view's headline and how long after the job's
# start it was first a suspect and first a confirmed hang. The faults strike within the first few
# steps, so these times bound the fault-to-verdict latency from above. Target: a hang across nodes
# seen (suspect) within 10 s; confirmed as the single-node watchdog confirms it (proof at once,
# else the 60 s floor).
# Usage: scripts/multinode_latency.sh [BUILD_DIR]
#   NODES="2 4" (default), TIMEOUT=75 (seconds each job may run), SCENARIOS="..." to choose
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
nodes_list=${NODES:-"2 4"}
timeout=${TIMEOUT:-75}
read -r -a scenarios <<<"${SCENARIOS:-stuck-before hang skip wrong-count wrong-peer p2p-cycle crash-sigkill early-exit}"
work=$(mktemp -d /tmp/ncclscope-mnlatency-XXXX)
trap 'rm -rf "$work"' EXIT

echo "| nodes | scenario | job view (class, comm, op, culprits) | ranks seen | suspect after | hang after |"
echo "| --- | --- | --- | --- | --- | --- |"
for nodes in $nodes_list; do
  for s in "${scenarios[@]}"; do
    python3 - "$build/bin/ncclscope" "$repo/sim/scenarios/$s.json" "$work/$s-$nodes" "$nodes" \
      "$timeout" "$repo/scripts" <<'EOF'
import os, re, signal, socket, subprocess, sys, time
bin, scenario, base, nodes, timeout, scripts = sys.argv[1:]
sys.path.insert(0, scripts)
import verdict_watch
nodes = int(nodes)

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

start = time.time()
job = subprocess.Popen([bin, "sim", "--ranks", "8", "--nodes", str(nodes), "--scenario", scenario,
                        "--dir", base, "--timeout", timeout], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, start_new_session=True, text=True)
# The sim prints each node's directory before starting the ranks.
dirs = {}
for line in job.stdout:
    m = re.search(r"node (node\d+): ranks .*, trace dir (\S+)", line)
    if m:
        dirs[m.group(1)] = m.group(2)
    if len(dirs) == nodes:
        break
ports = {h: free_port() for h in dirs}
exporters = []
for host, d in dirs.items():
    os.makedirs(d, exist_ok=True)
    peers = []
    for other, port in ports.items():
        if other != host:
            peers += ["--peers", "http://127.0.0.1:%d" % port]
    exporters.append(subprocess.Popen(
        ["env", "NCCLSCOPE_HOST=" + host, bin, "exporter", "--dir", d, "--listen",
         "127.0.0.1:%d" % ports[host]] + peers,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
first = {}
headline, seen = "no job view", "-"
path = os.path.join(dirs["node0"], "verdict-job.json")
while job.poll() is None:
    doc = verdict_watch.load(path)
    if doc is None:
        time.sleep(0.1)
        continue
    stage = doc.get("stage")
    if stage in ("suspect", "hang") and stage not in first:
        first[stage] = time.time() - start
        headline = verdict_watch.headline(doc)
        seen = "%s of %s" % (doc["input"].get("ranks_seen"), doc["input"].get("world_size"))
    if stage == "hang":
        break
    time.sleep(0.1)
for p in [job] + exporters:
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
for p in [job] + exporters:
    p.wait()
fmt = lambda k: "%.2f s" % first[k] if k in first else "-"
print("| %d | %s | %s | %s | %s | %s |" % (nodes, os.path.basename(scenario)[:-5], headline, seen,
                                           fmt("suspect"), fmt("hang")))
EOF
    rm -rf "$work/$s-$nodes"
  done
done
