#!/usr/bin/env python3
"""End to end with the real programs: simulated jobs write ring files, one `ncclscope exporter`
per trace directory serves them, a real Prometheus (Debian's, /usr/bin/prometheus) scrapes the
exporters every second with dashboards/prometheus/*.rules.yml loaded, and this script asks
Prometheus's HTTP API what a user would ask:

- steady (a healthy 4-rank job of ~17 s written here, all ten operation kinds): the operation
  counters equal what the ranks' plans say they call, the byte counters what their records say;
  every query of every dashboard returns data while it runs;
- hang (sim/scenarios/stuck-before.json, rank 2 never issues a dp allreduce), served by two
  exporters: one that confirms a suspect after 5 s (--confirm-floor/--confirm-ceiling 5), on
  which the hang alert fires within 30 s of the confirmation, naming rank 2 and communicator dp;
  one whose confirmation is 5 minutes away, on which the same wait stays a suspect: the
  informational suspect alert fires naming rank 2, and nothing pages or warns;
- crash (sim/scenarios/crash-sigkill.json, rank 1 is killed): the dead-rank alert fires within
  30 s naming rank 1 alone, the rank-down alert is pending or firing for it;
- straggler (sim/scenarios/compute-straggler-2x.json, the last rank computes twice as long): the
  slow rank has the highest straggler score and the only straggler verdict;
- no alert names a rank of the two healthy jobs; a real scrape passes `promtool check metrics`.

Fails, never skips, when a program is missing (the exporter subcommand included).
usage: e2e_prometheus.py --bin-dir BUILD/bin --source-dir SOURCE [--keep]
"""
import argparse
import collections
import json
import math
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard_model as dm  # noqa: E402

RANKS = 4
OPERATION_KINDS = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
                   "gather", "scatter", "send", "recv"}
DTYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "float8e4m3": 1, "float8e5m2": 1,
               "float16": 2, "half": 2, "bfloat16": 2, "int32": 4, "uint32": 4, "float32": 4,
               "float": 4, "int64": 8, "uint64": 8, "float64": 8, "double": 8}
HANG_ALERT_BUDGET_S = 30     # the requirement: a confirmed hang alerts within 30 s
CONFIRM_S = 5                # the hang exporter confirms every suspect after this long
SUSPECT_CONFIRM_S = 300      # ... the suspect exporter only after this long: never in this test
STEADY_SCENARIO = {
    "name": "dashboards-steady",
    "description": "A healthy 4-rank job of about 17 s that runs every operation kind, so that "
                   "rates and quantiles have data while the dashboards are queried.",
    "seed": 7,
    "min_ranks": 4,
    "repeat": 300,
    "compute": {"ms": 40},
    "communicators": [
        {"name": "tp", "split": {"by": "block", "size": 2}},
        {"name": "dp", "split": {"by": "stride", "stride": 2}},
    ],
    "steps": [
        {"name": "forward", "ops": [
            {"op": "allreduce", "comm": "tp", "count": 4096, "dtype": "bfloat16"},
            {"op": "pipeline", "comm": "dp", "count": 1024, "dtype": "float32"},
            {"op": "allgather", "comm": "tp", "count": 512, "dtype": "float16"},
            {"op": "alltoall", "count": 256, "dtype": "float32"},
        ]},
        {"name": "backward", "compute": {"ms": 10}, "ops": [
            {"op": "pipeline", "comm": "dp", "count": 1024, "dtype": "float32",
             "direction": "backward"},
            {"op": "reducescatter", "comm": "dp", "count": 1024, "dtype": "float32"},
            {"op": "allreduce", "count": 8192, "dtype": "float32"},
            {"op": "broadcast", "comm": "tp", "count": 128, "dtype": "int32", "root": 1},
            {"op": "reduce", "comm": "dp", "count": 128, "dtype": "float32", "root": 0},
            {"op": "gather", "count": 64, "dtype": "float32", "root": 0},
            {"op": "scatter", "count": 64, "dtype": "float32", "root": 2},
        ]},
    ],
}


class Failure(Exception):
    pass


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_until(what, fn, timeout_s, interval_s=0.25):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            got = fn()
            if got:
                return got
        except (OSError, urllib.error.URLError, ValueError) as e:
            last = e
        time.sleep(interval_s)
    raise Failure(f"timed out after {timeout_s} s waiting for {what}" + (f" ({last})" if last else ""))


class Processes:
    """Every process this test starts, ended at exit (their own process group, killed by id)."""

    def __init__(self, logs):
        self.logs = logs
        self.procs = []

    def start(self, name, argv, env=None):
        out = open(self.logs / f"{name}.log", "w")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        self.procs.append((name, p, out))
        return p

    def stop_all(self):
        for name, p, out in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=5)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait()
            out.close()


def kill_ranks(sim):
    """SIGKILLs the rank processes of a running `ncclscope sim`, which then reaps them, removes
    the job's shared memory and exits."""
    try:
        children = pathlib.Path(f"/proc/{sim.pid}/task/{sim.pid}/children").read_text().split()
    except OSError:
        children = []
    for pid in children:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr):
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            body = json.loads(http_get(url))
        except urllib.error.HTTPError as e:
            raise Failure(f"Prometheus rejected {expr!r}: {e.read().decode()}") from e
        if body.get("status") != "success":
            raise Failure(f"query {expr!r}: {body}")
        data = body["data"]
        if data["resultType"] == "vector":
            return [(s["metric"], float(s["value"][1])) for s in data["result"]]
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        raise Failure(f"query {expr!r}: unexpected result type {data['resultType']}")

    def alerts(self):
        return json.loads(http_get(f"{self.base}/api/v1/alerts"))["data"]["alerts"]


def require_program(path, what):
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise Failure(f"{what} not found at {path}")
    return path


def find_system_program(name):
    path = shutil.which(name) or f"/usr/bin/{name}"
    return require_program(path, f"{name} (Debian package prometheus, scripts/install-deps.sh)")


def plan_counts(sim_rank, scenario, nranks):
    """{(rank, comm, op): n} of the operations each rank's plan issues."""
    counts = collections.Counter()
    for rank in range(nranks):
        out = subprocess.run([sim_rank, str(scenario), "--plan", "--rank", str(rank),
                              "--nranks", str(nranks)], capture_output=True, text=True, check=True)
        for line in out.stdout.splitlines():
            call = json.loads(line)
            if call.get("type") == "call" and call.get("op") in OPERATION_KINDS:
                counts[(str(rank), call["comm"], call["op"])] += 1
    return counts


def recorded_bytes(cli, trace_dir):
    """{(rank, comm, op): bytes} from the records (`ncclscope dump --json`), in the size
    convention of docs/metrics.md."""
    out = subprocess.run([cli, "dump", str(trace_dir), "--json"], capture_output=True, text=True,
                         check=True)
    nranks = {}
    total = collections.Counter()
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        if rec.get("type") == "comm":
            nranks[(rec["rank"], rec["comm_id"])] = rec["comm_nranks"]
        elif rec.get("type") == "record" and rec.get("op") in OPERATION_KINDS:
            size = rec["count"] * DTYPE_BYTES[rec["dtype"]]
            if rec["op"] in ("allgather", "gather", "reducescatter", "scatter", "alltoall"):
                size *= nranks[(rec["rank"], rec["comm_id"])]
            total[(str(rec["rank"]), rec["comm_name"], rec["op"])] += size
    return total


def promql_regex(literal):
    """A regular expression matching `literal`, escaped for a PromQL string."""
    return re.escape(literal).replace("\\", "\\\\")


def series_by(samples, *labels):
    return {tuple(m.get(k, "") for k in labels): v for m, v in samples}


def check_counts(prom, instance, expected, what):
    got = series_by(prom.query(f'ncclscope_operations_total{{instance="{instance}"}}'),
                    "rank", "comm", "op")
    got = {k: v for k, v in got.items() if v > 0}
    if got != {k: float(v) for k, v in expected.items()}:
        diff = sorted(set(got.items()) ^ {(k, float(v)) for k, v in expected.items()})
        raise Failure(f"{what}: ncclscope_operations_total differs from the plans (got vs "
                      f"expected, symmetric difference): {diff[:12]}")
    log(f"{what}: ncclscope_operations_total matches the plans: {len(expected)} series, "
        f"{int(sum(expected.values()))} operations")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    src = pathlib.Path(args.source_dir).resolve()
    cli = require_program(os.path.join(args.bin_dir, "ncclscope"), "ncclscope")
    sim_rank = require_program(os.path.join(args.bin_dir, "ncclscope-sim-rank"), "ncclscope-sim-rank")
    prometheus_bin = find_system_program("prometheus")
    promtool = find_system_program("promtool")
    r = subprocess.run([cli, "exporter", "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"`ncclscope exporter --help` exits {r.returncode}: the exporter subcommand "
                      f"is missing from this build\n{r.stdout}{r.stderr}")

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ncclscope-dash-e2e-"))
    logs = tmp / "logs"
    logs.mkdir()
    procs = Processes(logs)
    ok = False
    try:
        ok = run(src, cli, sim_rank, prometheus_bin, promtool, tmp, procs)
    finally:
        procs.stop_all()
        if ok and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"kept {tmp} (logs in {logs})")
    return 0 if ok else 1


def run(src, cli, sim_rank, prometheus_bin, promtool, tmp, procs):
    start = time.monotonic()
    scenarios = {
        "steady": tmp / "steady.json",
        "hang": src / "sim" / "scenarios" / "stuck-before.json",
        "straggler": src / "sim" / "scenarios" / "compute-straggler-2x.json",
        "crash": src / "sim" / "scenarios" / "crash-sigkill.json",
    }
    scenarios["steady"].write_text(json.dumps(STEADY_SCENARIO, indent=1))

    # One exporter per trace directory, as one per node; the hang's directory has a second one
    # with other confirmation times (two stages, docs/metrics.md).
    exporters = {name: (name, []) for name in scenarios}
    exporters["hang"] = ("hang", ["--confirm-floor", str(CONFIRM_S),
                                  "--confirm-ceiling", str(CONFIRM_S)])
    exporters["hang-suspect"] = ("hang", ["--confirm-floor", str(SUSPECT_CONFIRM_S)])
    for name in scenarios:
        d = tmp / "traces" / name
        d.mkdir(parents=True)
        d.chmod(0o700)  # the probe refuses a trace directory other users can read
    instance = {}
    for name, (dir_name, extra) in exporters.items():
        port = free_port()
        instance[name] = f"127.0.0.1:{port}"
        procs.start(f"exporter-{name}", [cli, "exporter", "--dir", str(tmp / "traces" / dir_name),
                                         "--listen", instance[name], *extra])
    for name, inst in instance.items():
        wait_until(f"exporter {name} on {inst}", lambda i=inst: "ncclscope_build_info" in
                   http_get(f"http://{i}/metrics"), 15)

    prom_port = free_port()
    rules = sorted((src / "dashboards" / "prometheus").glob("*.rules.yml"))
    config = tmp / "prometheus.yml"
    config.write_text("\n".join([
        "global:", "  scrape_interval: 1s", "  evaluation_interval: 1s",
        "rule_files:", *[f"  - {json.dumps(str(r))}" for r in rules],
        "scrape_configs:", "  - job_name: ncclscope", "    scrape_timeout: 1s",
        "    static_configs:",
        "      - targets: [" + ", ".join(json.dumps(i) for i in instance.values()) + "]", ""]))
    procs.start("prometheus", [prometheus_bin, f"--config.file={config}",
                               f"--storage.tsdb.path={tmp / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"])
    prom = Prometheus(prom_port)
    wait_until("Prometheus ready", lambda: http_get(f"{prom.base}/-/ready") is not None, 30)
    wait_until("Prometheus scraping every exporter", lambda: len(
        [s for s in prom.query('up{job="ncclscope"} == 1')]) == len(instance), 20)
    log(f"exporters {instance}, Prometheus on 127.0.0.1:{prom_port}")

    sims = {}
    started = {}
    for name, scenario in scenarios.items():
        started[name] = time.monotonic()
        sims[name] = procs.start(f"sim-{name}", [cli, "sim", "--ranks", str(RANKS), "--scenario",
                                                 str(scenario), "--dir", str(tmp / "traces" / name),
                                                 "--timeout", "120"])

    failures = []

    def check(what, fn):
        try:
            fn()
        except Failure as e:
            failures.append(f"{what}: {e}")
            log(f"FAIL {what}: {e}")

    # The hang: stuck-before.json's rank 2 blocks before step 3's dp allreduce, a fraction of a
    # second into the job; the exporter confirms it CONFIRM_S later, and the alert must fire
    # within HANG_ALERT_BUDGET_S of that.
    def hang_alert():
        def firing():
            return [a for a in prom.alerts() if a["labels"].get("alertname") == "NcclscopeCollectiveHang"
                    and a["state"] == "firing" and a["labels"].get("instance") == instance["hang"]]
        alerts = wait_until("NcclscopeCollectiveHang firing for the hang job", firing,
                            HANG_ALERT_BUDGET_S + 15, 0.5)
        elapsed = time.monotonic() - started["hang"]
        labels = [a["labels"] for a in alerts]
        log(f"hang alert firing {elapsed:.1f} s after the hang job started: {labels}")
        culprit = [lb for lb in labels if lb.get("rank") == "2"]
        if not culprit or culprit[0].get("class") != "missing" or culprit[0].get("stage") != "hang":
            raise Failure(f"rank 2 never issued its collective: the alert must name rank 2, class "
                          f"missing, stage hang: {labels}")
        others = [lb for lb in labels if lb.get("rank") != "2"]
        if others:
            raise Failure(f"the hang alert blames victims too: {others}")
        # The alert names the communicator the correlator leads with (ncclscope analyze).
        r = subprocess.run([cli, "analyze", str(tmp / "traces" / "hang"), "--json"],
                           capture_output=True, text=True)
        verdicts = json.loads(r.stdout)["verdicts"] if r.stdout.strip() else []
        named = {(v["class"], v["comm_name"], str(c)) for v in verdicts for c in v["culprits"]}
        for lb in culprit:
            if (lb["class"], lb["comm"], lb["rank"]) not in named:
                raise Failure(f"alert {lb} is not a verdict of ncclscope analyze: {sorted(named)}")
        notes = next(a for a in alerts if a["labels"].get("rank") == "2")["annotations"]
        log(f"  summary: {notes['summary']}\n  description: {notes['description']}")
        if "rank 2" not in notes["summary"] or culprit[0]["comm"] not in notes["summary"]:
            raise Failure(f"summary does not name the culprit: {notes['summary']!r}")
        # The description looks up the culprit's sequence gauge and the verdict's age by the
        # verdict's labels: both must be found on the real exporter's series.
        for words in ("Its newest completed collective on", "The other ranks have waited"):
            if words not in notes["description"]:
                raise Failure(f"description lacks '{words} ...': {notes['description']!r}")
        if elapsed > CONFIRM_S + HANG_ALERT_BUDGET_S:
            raise Failure(f"fired {elapsed:.1f} s after the job started: more than "
                          f"{HANG_ALERT_BUDGET_S} s after the confirmation at {CONFIRM_S} s")

    check("hang alert", hang_alert)

    # The same wait through an exporter that would confirm it only after SUSPECT_CONFIRM_S: a
    # suspect, as a checkpoint would be. The informational alert names rank 2, the exporter says
    # when it would be confirmed, and nothing pages or warns.
    def suspect_alert():
        inst = instance["hang-suspect"]

        def firing():
            return [a for a in prom.alerts() if a["labels"].get("alertname") == "NcclscopeCollectiveSuspect"
                    and a["state"] == "firing" and a["labels"].get("instance") == inst]
        alerts = wait_until("NcclscopeCollectiveSuspect firing for the hang job", firing,
                            HANG_ALERT_BUDGET_S + 15, 0.5)
        labels = [a["labels"] for a in alerts]
        log(f"suspect alert firing {time.monotonic() - started['hang']:.1f} s after the hang job "
            f"started: {labels}")
        if {(lb.get("rank"), lb.get("class"), lb.get("severity")) for lb in labels} != \
                {("2", "missing", "info")}:
            raise Failure(f"the suspect alert must name rank 2 alone, class missing, severity "
                          f"info: {labels}")
        confirm = prom.query(f'ncclscope_verdict_confirm_after_seconds{{instance="{inst}"}}')
        if not confirm or min(v for _, v in confirm) < SUSPECT_CONFIRM_S:
            raise Failure(f"--confirm-floor {SUSPECT_CONFIRM_S}: the suspect must not be confirmed "
                          f"sooner: ncclscope_verdict_confirm_after_seconds {confirm}")
        paging = [a["labels"] for a in prom.alerts() if a["labels"].get("instance") == inst
                  and a["labels"].get("severity") != "info"]
        if paging:
            raise Failure(f"a suspect pages or warns: {paging}")

    check("suspect alert", suspect_alert)

    # The crash: crash-sigkill.json's rank 1 is SIGKILLed at the start of step 2; the others wait
    # for it. The dead-rank alert names it; the rank-down alert (30 s `for`) is at least pending
    # for it, with its training job's id.
    def dead_alerts():
        inst = instance["crash"]

        def firing():
            return [a for a in prom.alerts() if a["labels"].get("alertname") == "NcclscopeRankDead"
                    and a["state"] == "firing" and a["labels"].get("instance") == inst]
        alerts = wait_until("NcclscopeRankDead firing for the crashed job", firing,
                            HANG_ALERT_BUDGET_S + 15, 0.5)
        elapsed = time.monotonic() - started["crash"]
        labels = [a["labels"] for a in alerts]
        log(f"dead-rank alert firing {elapsed:.1f} s after the crash job started: {labels}")
        if {lb.get("rank") for lb in labels} != {"1"}:
            raise Failure(f"rank 1 was killed: the dead-rank alert must name it alone: {labels}")
        if elapsed > HANG_ALERT_BUDGET_S:
            raise Failure(f"fired {elapsed:.1f} s after the job started: more than "
                          f"{HANG_ALERT_BUDGET_S} s")
        job_ids = {m.get("job_id") for m, _ in prom.query(f'ncclscope_rank_info{{instance="{inst}"}}')}
        down = [a for a in prom.alerts() if a["labels"].get("alertname") == "NcclscopeRankDown"
                and a["labels"].get("instance") == inst]
        if [(a["labels"].get("rank"), a["labels"].get("job_id")) for a in down] != \
                [("1", j) for j in job_ids] or len(job_ids) != 1:
            raise Failure(f"NcclscopeRankDown should be pending or firing for rank 1 of job "
                          f"{job_ids}: {[(a['state'], a['labels']) for a in down]}")
        blamed = [a["labels"] for a in prom.alerts() if a["labels"].get("instance") == inst
                  and a["labels"].get("rank") not in (None, "1")]
        if blamed:
            raise Failure(f"alerts blame ranks that only wait for the dead one: {blamed}")

    check("dead-rank alerts", dead_alerts)

    # Every query of every dashboard, as Grafana would run it with every variable at All.
    def dashboard_queries():
        empty, n = [], 0
        for name, d in dm.load_dashboards(src / "dashboards" / "grafana").items():
            for where, expr in dm.queries(d):
                n += 1
                samples = prom.query(dm.substitute(expr, rate_interval="4s", value=".*"))
                if not samples:
                    empty.append(f"{name} {where}: {expr}")
                elif not any(math.isfinite(v) for _, v in samples):
                    empty.append(f"{name} {where}: only NaN/Inf: {samples[:3]}")
        log(f"{n} dashboard queries evaluated, {n - len(empty)} with data")
        if empty:
            raise Failure("queries without data:\n  " + "\n  ".join(empty))

    check("dashboard queries", dashboard_queries)

    # Straggler: wait for the job to end (its ring files stay), then rank by score.
    def straggler():
        rc = sims["straggler"].wait(timeout=60)
        if rc != 0:
            raise Failure(f"the straggler job exited {rc} (see sim-straggler.log)")
        # What the overview's "Slowest ranks now" panel shows for that job.
        overview = dm.load_dashboards(src / "dashboards" / "grafana")["ncclscope-job-overview.json"]
        expr = next(p["targets"][0]["expr"] for p in dm.panels(overview)
                    if p.get("title") == "Slowest ranks now")
        q = dm.substitute(expr, values={"instance": promql_regex(instance["straggler"])})

        def ranked():
            s = prom.query(q)
            return s if len(s) == RANKS else None
        scores = wait_until("straggler scores of every rank", ranked, 10)
        log("straggler scores, slowest first: " + ", ".join(f"rank {m['rank']} {v:.2f}" for m, v in scores))
        if scores[0][0].get("rank") != str(RANKS - 1):
            raise Failure(f"rank {RANKS - 1} computes twice as long, yet the highest score is "
                          f"rank {scores[0][0].get('rank')}: {scores}")
        if not scores[0][1] > 1.5 * scores[1][1]:
            raise Failure(f"the slow rank's score does not stand out (1.5x the next): {scores}")
        verdicts = prom.query(f'ncclscope_verdict{{instance="{instance["straggler"]}"}} == 1')
        named = {(m.get("class"), m.get("rank")) for m, _ in verdicts}
        if named != {("straggler", str(RANKS - 1))}:
            raise Failure(f"verdicts of the straggler job: {named}, expected only straggler rank "
                          f"{RANKS - 1}")
        check_counts(prom, instance["straggler"],
                     plan_counts(sim_rank, scenarios["straggler"], RANKS), "straggler job")

    check("straggler", straggler)

    def steady_counts():
        rc = sims["steady"].wait(timeout=90)
        if rc != 0:
            raise Failure(f"the steady job exited {rc} (see sim-steady.log)")
        inst = instance["steady"]
        wait_until("the steady job's ranks reported ended", lambda: prom.query(
            f'sum(ncclscope_rank_up{{instance="{inst}"}}) == 0'), 10)
        expected = plan_counts(sim_rank, scenarios["steady"], RANKS)
        # The last records reach Prometheus one scrape after the exporter read them: on a loaded
        # machine that is seconds, so wait for the counters to settle rather than a fixed time
        # (what is guaranteed is that they end equal to the plans, not when).
        want = {k: float(v) for k, v in expected.items()}
        try:
            wait_until("the steady job's operation counters to reach the plans", lambda: {
                k: v for k, v in series_by(prom.query(
                    f'ncclscope_operations_total{{instance="{inst}"}}'), "rank", "comm",
                    "op").items() if v > 0} == want, 30)
        except Failure:
            pass  # check_counts says what differs
        check_counts(prom, inst, expected, "steady job")
        got_bytes = series_by(prom.query(f'ncclscope_operation_bytes_total{{instance="{inst}"}}'),
                              "rank", "comm", "op")
        want_bytes = recorded_bytes(cli, tmp / "traces" / "steady")
        if {k: v for k, v in got_bytes.items() if v > 0} != {k: float(v) for k, v in want_bytes.items()}:
            raise Failure(f"ncclscope_operation_bytes_total {sorted(got_bytes.items())[:8]} differs "
                          f"from the records' sizes {sorted(want_bytes.items())[:8]}")
        # Every operation completed: the duration histogram counts each rank's operations once.
        per_op = collections.Counter()
        for (_, comm, op), n in expected.items():
            per_op[(comm, op)] += n
        got_hist = series_by(prom.query(
            f'ncclscope_operation_duration_seconds_count{{instance="{inst}"}}'), "comm", "op")
        if got_hist != {k: float(v) for k, v in per_op.items()}:
            raise Failure(f"duration histogram counts {sorted(got_hist.items())} differ from the "
                          f"plans {sorted(per_op.items())}")
        ranks = series_by(prom.query(f'ncclscope_communicator_ranks{{instance="{inst}"}}'), "comm")
        if ranks != {("world",): 4.0, ("tp",): 2.0, ("dp",): 2.0}:
            raise Failure(f"ncclscope_communicator_ranks {ranks}")
        log(f"steady job: bytes, histogram counts and communicator sizes match")

    check("steady job counts", steady_counts)

    def healthy_jobs_do_not_alert():
        healthy = {instance["steady"], instance["straggler"]}
        wrong = [a["labels"] for a in prom.alerts() if a["labels"].get("instance") in healthy
                 and a["labels"].get("alertname") != "NcclscopeStraggler"]
        if wrong:
            raise Failure(f"alerts about jobs without a fault: {wrong}")
        log("no alert about the two jobs without a hang")

    check("healthy jobs", healthy_jobs_do_not_alert)

    # Over the whole run, the suspect never paged nor warned, pending included (Prometheus's own
    # ALERTS series).
    def suspect_never_paged():
        inst = instance["hang-suspect"]
        ever = prom.query(f'max_over_time(ALERTS{{instance="{inst}",severity!="info"}}[10m])')
        if ever:
            raise Failure(f"alerts other than info about a suspect: {[m for m, _ in ever]}")
        log("the suspect raised no alert but the informational one")

    check("suspect never paged", suspect_never_paged)

    def scrape_passes_promtool():
        text = http_get(f"http://{instance['steady']}/metrics")
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"promtool check metrics: {r.stdout}{r.stderr}")
        log("a scrape of the exporter passes promtool check metrics")

    check("promtool check metrics", scrape_passes_promtool)

    for name in ("hang", "crash"):
        kill_ranks(sims[name])
        sims[name].wait(timeout=10)
    log(f"done in {time.monotonic() - start:.1f} s: {len(failures)} failure(s)")
    for f in failures:
        print("FAIL:", f)
    return not failures


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("FAIL:", e)
        sys.exit(1)
