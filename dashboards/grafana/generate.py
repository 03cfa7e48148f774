#!/usr/bin/env python3
"""Writes the Grafana dashboards of this folder (classic JSON model, schemaVersion 39).

The JSON files are the product and are committed; this script is how they are edited, so that
every panel has the same datasource, selectors, units and layout rules. After a change run
    python3 dashboards/grafana/generate.py
and commit both. tests/dashboards checks that the committed files are what this script writes,
and lints them independently of it.
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'job=~"$job", instance=~"$instance"'
SELC = SEL + ', comm=~"$comm"'
GRID_COLUMNS = 24


def target(expr, legend="", instant=False, fmt="time_series", ref=None):
    t = {"datasource": DS, "expr": expr, "legendFormat": legend, "format": fmt,
         "range": not instant, "instant": instant, "refId": ref or "A"}
    return t


def panel(kind, title, description, unit, targets, w, h, options=None, custom=None,
          overrides=None, transformations=None, decimals=None, min_max=None, mappings=None):
    for i, t in enumerate(targets):
        t["refId"] = chr(ord("A") + i)
    defaults = {"unit": unit}
    if custom is not None:
        defaults["custom"] = custom
    if decimals is not None:
        defaults["decimals"] = decimals
    if min_max is not None:
        defaults["min"], defaults["max"] = min_max
    if mappings is not None:
        defaults["mappings"] = mappings
    p = {"type": kind, "title": title, "description": description, "datasource": DS,
         "gridPos": {"w": w, "h": h}, "fieldConfig": {"defaults": defaults,
                                                       "overrides": overrides or []},
         "options": options or {}, "targets": targets}
    if transformations:
        p["transformations"] = transformations
    return p


def row(title):
    return {"type": "row", "title": title, "collapsed": False, "panels": [],
            "gridPos": {"w": GRID_COLUMNS, "h": 1}}


LINE = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 0, "showPoints": "never",
        "spanNulls": False}
STEPS = {"drawStyle": "line", "lineInterpolation": "stepAfter", "lineWidth": 1,
         "fillOpacity": 0, "showPoints": "never", "spanNulls": False}
LEGEND_TABLE = {"legend": {"displayMode": "table", "placement": "right",
                           "calcs": ["lastNotNull", "max"], "showLegend": True},
                "tooltip": {"mode": "multi", "sort": "desc"}}
LEGEND_LIST = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
               "tooltip": {"mode": "multi", "sort": "desc"}}
STAT = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        "colorMode": "value", "graphMode": "none", "textMode": "auto", "justifyMode": "auto",
        "orientation": "auto"}
BARS = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        "orientation": "horizontal", "displayMode": "gradient", "showUnfilled": True,
        "valueMode": "color"}
TABLE = {"showHeader": True, "cellHeight": "sm", "footer": {"show": False}}


def bucket_heatmap(unit, scheme):
    """Options of a heatmap of a Prometheus histogram's buckets (one row per `le`)."""
    return {"calculate": False, "cellGap": 1, "showValue": "never",
            "yAxis": {"axisPlacement": "left", "unit": unit},
            "rowsFrame": {"layout": "le"},
            "color": {"mode": "scheme", "scheme": scheme, "fill": "dark",
                      "scale": "exponential", "exponent": 0.5, "steps": 64, "reverse": False},
            "tooltip": {"show": True, "yHistogram": False},
            "legend": {"show": True}, "filterValues": {"le": 1e-9}}


def hide_columns(*names, order=()):
    return [{"id": "organize", "options": {
        "excludeByName": {n: True for n in names},
        "indexByName": {n: i for i, n in enumerate(order)}}}]


def column_units(units):
    return [{"matcher": {"id": "byName", "options": name},
             "properties": [{"id": "unit", "value": unit}, {"id": "displayName", "value": label}]}
            for name, (unit, label) in units.items()]


def layout(items):
    """Places panels left to right, wrapping at 24 columns; a row starts a new line."""
    x = y = line_h = 0
    for p in items:
        g = p["gridPos"]
        if p["type"] == "row" or x + g["w"] > GRID_COLUMNS:
            x, y, line_h = 0, y + line_h, 0
        g["x"], g["y"] = x, y
        x += g["w"]
        line_h = max(line_h, g["h"])
        if p["type"] == "row":
            x, y, line_h = 0, y + g["h"], 0
    for i, p in enumerate(items, start=1):
        p["id"] = i
    return items


def variables(with_comm_multi):
    def query_var(name, label, query, multi=True, all_value=".+"):
        return {"name": name, "label": label, "type": "query", "datasource": DS,
                "query": query, "definition": query, "refresh": 2, "sort": 1,
                "multi": multi, "includeAll": multi, "allValue": all_value if multi else None,
                "current": {}, "options": [], "hide": 0, "regex": ""}
    return [
        {"name": "datasource", "label": "Data source", "type": "datasource",
         "query": "prometheus", "current": {}, "options": [], "hide": 0, "refresh": 1,
         "regex": ""},
        query_var("job", "Job", "label_values(ncclscope_build_info, job)"),
        query_var("instance", "Instance", 'label_values(ncclscope_build_info{job=~"$job"}, instance)'),
        query_var("comm", "Communicator",
                  'label_values(ncclscope_communicator_ranks{job=~"$job", instance=~"$instance"}, comm)',
                  # All must also match no comm label: a verdict about a process has none.
                  multi=with_comm_multi, all_value=".*"),
    ]


def annotations():
    return [
        {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
         "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
         "name": "Annotations & Alerts", "type": "dashboard"},
        {"name": "Verdicts", "datasource": DS, "enable": True, "iconColor": "red",
         "expr": f"ncclscope_verdict{{{SELC}}} == 1", "step": "10s",
         "titleFormat": "{{class}} ({{stage}}): rank {{rank}} on {{comm}}",
         "textFormat": "exporter {{instance}}", "tagKeys": "stage,class,comm,rank",
         "useValueForTime": False},
    ]


def dashboard(uid, title, description, panels, comm_multi):
    return {
        "uid": uid, "title": title, "description": description, "id": None,
        "tags": ["ncclscope", "nccl"], "timezone": "browser", "editable": True,
        "graphTooltip": 1, "time": {"from": "now-30m", "to": "now"}, "refresh": "10s",
        "schemaVersion": 39, "version": 1, "fiscalYearStartMonth": 0, "liveNow": False,
        "weekStart": "",
        "links": [{"title": "ncclscope dashboards", "type": "dashboards", "tags": ["ncclscope"],
                   "asDropdown": False, "includeVars": True, "keepTime": True,
                   "targetBlank": False, "icon": "external link", "tooltip": "", "url": ""}],
        "annotations": {"list": annotations()},
        "templating": {"list": variables(comm_multi)},
        "panels": layout(panels),
    }


def rate_sum(rule, by="comm, op"):
    return f"sum by ({by}) (job_instance_comm_op:{rule}:rate1m{{{SELC}}})"


def quantile(q):
    return (f"histogram_quantile({q}, sum by (comm, op, le) "
            f"(job_instance_comm_op_le:ncclscope_operation_duration_seconds_bucket:rate1m{{{SELC}}}))")


def size_rate_sum(rule):
    return (f"sum by (comm, op, size) "
            f"(job_instance_comm_op_size:ncclscope_operation_duration_by_size_seconds_{rule}:rate1m{{{SELC}}})")


def size_quantile(q):
    return (f"histogram_quantile({q}, sum by (comm, op, size, le) "
            f"(job_instance_comm_op_size_le:ncclscope_operation_duration_by_size_seconds_bucket:rate1m{{{SELC}}}))")


VERDICT_TABLE = hide_columns("Time", "Value", "__name__",
                             order=("stage", "class", "comm", "rank", "instance", "job"))
BARS_OVER_TIME = {"drawStyle": "bars", "lineWidth": 1, "fillOpacity": 80, "showPoints": "never",
                  "spanNulls": False}


def culprits_by_stage(description):
    """A stat of the culprit ranks of the current verdicts, one value per stage (docs/metrics.md,
    "Two stages"): only `hang` pages."""
    return panel("stat", "Culprit ranks", description, "short",
                 [target(f'count(ncclscope_verdict{{{SELC}, stage="{stage}"}} == 1) or vector(0)',
                         stage) for stage in ("hang", "suspect", "straggler", "numerics")],
                 4, 4, options=STAT)


def job_overview():
    return dashboard(
        "ncclscope-job-overview", "ncclscope / Job overview",
        "Throughput, bandwidth, latency, per-rank progress, stragglers and hang verdicts of the "
        "NCCL jobs that ncclscope exporters report.",
        [
            row("Health"),
            culprits_by_stage(
                "Is anything wrong right now? Culprit ranks named by the current verdicts, by "
                "stage: hang (confirmed hang, deadlock, desync, dead: pages), suspect (a wait "
                "not confirmed yet: a checkpoint looks the same), straggler, numerics (a NaN's "
                "origin or a corrupt output, NCCLSCOPE_NUMERICS: the job runs on, computing "
                "wrong numbers); 0 when healthy."),
            panel("stat", "Ranks up / seen",
                  "Are all ranks alive? Ranks whose process is running, and ranks whose ring "
                  "file the exporters read (ended ones included).",
                  "short", [target(f"sum(ncclscope_rank_up{{{SEL}}})", "up"),
                            target(f"count(ncclscope_rank_up{{{SEL}}})", "seen")],
                  4, 4, options=STAT),
            panel("stat", "Records lost",
                  "Does the trace miss anything? Records and communicators the probes could not "
                  "keep since the ranks started (dropped, overwritten by the ring, untracked).",
                  "short", [target(f"sum(ncclscope_records_lost_total{{{SEL}}}) or vector(0)")],
                  4, 4, options=STAT),
            panel("bargauge", "How long the victims have waited",
                  "Since when is the job stuck? Age of each current verdict, per class, "
                  "communicator and stage.",
                  "s", [target("max by (class, comm, stage) "
                               f"(ncclscope_verdict_age_seconds{{{SELC}}})",
                               "{{class}} on {{comm}} ({{stage}})", instant=True)],
                  12, 4, options=BARS),

            panel("table", "Active verdicts",
                  "Which communicator and which rank is to blame, and why? One row per culprit "
                  "rank of each current verdict with its stage (hang: confirmed, pages; "
                  "suspect: not confirmed yet); run `ncclscope analyze` for the operation, the "
                  "evidence and what the culprit is doing.",
                  "none", [target(f"ncclscope_verdict{{{SELC}}} == 1", instant=True, fmt="table")],
                  24, 8, options=TABLE, transformations=VERDICT_TABLE),
            panel("bargauge", "Time until a suspect is confirmed",
                  "Will this wait page? For each current suspect, per class and communicator, "
                  "how much longer it may last before it becomes a confirmed hang (the wait "
                  "the correlator allows minus the wait so far); no data when there is no "
                  "suspect.",
                  "s", [target("max by (class, comm) "
                               f"(ncclscope_verdict_confirm_after_seconds{{{SELC}}}) - max by "
                               f'(class, comm) (ncclscope_verdict_age_seconds{{{SELC}, '
                               'stage="suspect"})', "{{class}} on {{comm}}", instant=True)],
                  12, 6, options=BARS),
            panel("timeseries", "Incidents",
                  "How often does the job pause long enough to be suspected, and how many of "
                  "those were hangs? Per interval: suspects that resolved by themselves "
                  "(checkpoints, evaluations), hangs confirmed, confirmed hangs that went away.",
                  "short", [target("sum by (stage, outcome) (increase(ncclscope_incidents_total"
                                   f"{{{SEL}}}[$__rate_interval]))", "{{stage}} {{outcome}}")],
                  12, 6, options=LEGEND_LIST, custom=BARS_OVER_TIME, decimals=0),

            row("Throughput and bandwidth"),
            panel("timeseries", "Operations per second",
                  "How busy is each communicator? Operations issued per second by all ranks, per "
                  "communicator and operation (recording rule, 1m window).",
                  "ops", [target(rate_sum("ncclscope_operations"), "{{comm}} {{op}}")],
                  8, 8, options=LEGEND_LIST, custom=LINE),
            panel("timeseries", "Algorithm bandwidth",
                  "How fast does each operation move its data? Bytes (nccl-tests size convention) "
                  "divided by the time spent in completed operations.",
                  "Bps", [target(f"{rate_sum('ncclscope_operation_bytes')} / "
                                 f"{rate_sum('ncclscope_operation_duration_seconds_sum')}",
                                 "{{comm}} {{op}}")],
                  8, 8, options=LEGEND_LIST, custom=LINE),
            panel("timeseries", "Bus bandwidth",
                  "How close are the links to their peak? Algorithm bandwidth times nccl-tests' "
                  "bus factor (2(n-1)/n allreduce, (n-1)/n allgather, reducescatter, alltoall, "
                  "1 otherwise): comparable to nccl-tests' busbw and across job sizes.",
                  "Bps", [target(f"{rate_sum('ncclscope_operation_bus_bytes')} / "
                                 f"{rate_sum('ncclscope_operation_duration_seconds_sum')}",
                                 "{{comm}} {{op}}")],
                  8, 8, options=LEGEND_LIST, custom=LINE),

            row("Latency"),
            panel("timeseries", "Latency p50 / p90 / p99",
                  "How long does each operation take, enqueue to device completion, and how "
                  "heavy is the tail? Quantiles of the duration histogram per communicator and "
                  "operation.",
                  "s", [target(quantile(0.5), "p50 {{comm}} {{op}}"),
                        target(quantile(0.9), "p90 {{comm}} {{op}}"),
                        target(quantile(0.99), "p99 {{comm}} {{op}}")],
                  12, 8, options=LEGEND_TABLE, custom=LINE),
            panel("heatmap", "Latency distribution",
                  "Are operation durations spread, bimodal, drifting? Completed operations per "
                  "duration bucket over time, all selected communicators together.",
                  "s", [target("sum by (le) (rate(ncclscope_operation_duration_seconds_bucket"
                               f"{{{SELC}}}[$__rate_interval]))", "{{le}}", fmt="heatmap")],
                  12, 8, options=bucket_heatmap("s", "Oranges")),

            row("Per-rank progress"),
            panel("timeseries", "Last completed collective per rank",
                  "Is every rank moving forward, and where did a rank stop? The newest "
                  "collective sequence number completed on the device, per rank and "
                  "communicator: a flat line while others climb is a stuck rank.",
                  "none", [target(f"max by (rank, comm) (ncclscope_last_completed_sequence{{{SELC}}})",
                                  "rank {{rank}} {{comm}}")],
                  8, 8, options=LEGEND_LIST, custom=STEPS, decimals=0),
            panel("timeseries", "Operations in flight per rank",
                  "Which ranks wait inside NCCL? Operations issued and not yet completed on the "
                  "device, per rank: a rank stuck with work in flight is waiting for a peer or "
                  "its device.",
                  "short", [target(f"sum by (rank) (ncclscope_inflight_operations{{{SELC}}})",
                                   "rank {{rank}}")],
                  8, 8, options=LEGEND_LIST, custom=STEPS, decimals=0),
            panel("timeseries", "Time since the last device completion",
                  "How long has each rank made no progress at all? Seconds since the rank's "
                  "newest completed operation (ended ranks keep growing: see the panel below).",
                  "s", [target(f"time() - max by (rank) (ncclscope_last_progress_timestamp_seconds{{{SEL}}})",
                               "rank {{rank}}")],
                  8, 8, options=LEGEND_LIST, custom=LINE),
            panel("state-timeline", "Rank processes",
                  "When did a rank's process end? Up while the process that writes the ring "
                  "lives, ended afterwards; a rank that ends before the others crashed or left.",
                  "none", [target(f"max by (rank) (ncclscope_rank_up{{{SEL}}})", "rank {{rank}}")],
                  24, 6, options={"showValue": "never", "mergeValues": True, "rowHeight": 0.9,
                                  "alignValue": "left",
                                  "legend": {"displayMode": "list", "placement": "bottom",
                                             "showLegend": False}},
                  mappings=[{"type": "value", "options": {
                      "0": {"text": "ended", "color": "red", "index": 0},
                      "1": {"text": "up", "color": "green", "index": 1}}}]),

            row("Stragglers"),
            panel("heatmap", "Straggler score, rank x time",
                  "Which rank keeps the others waiting, and since when? Per rank, its arrival "
                  "lateness as a fraction of the communicator's median collective time (0 on "
                  "time, 1 = late by a whole collective or more), averaged over the rank's "
                  "communicators: a straggler is late in all of them, a rank that only waits for "
                  "it in one of its groups arrives late in another.",
                  "percentunit", [target(f"avg by (rank) (ncclscope_straggler_score{{{SELC}}})",
                                         "rank {{rank}}")],
                  16, 9, options={
                      "calculate": False, "cellGap": 1, "showValue": "never",
                      "yAxis": {"axisPlacement": "left"},
                      "rowsFrame": {"layout": "auto"},
                      "color": {"mode": "scheme", "scheme": "Reds", "fill": "dark",
                                "scale": "linear", "min": 0, "max": 1, "steps": 32,
                                "reverse": False},
                      "tooltip": {"show": True, "yHistogram": False},
                      "legend": {"show": True}}),
            panel("bargauge", "Slowest ranks now",
                  "Which rank is the straggler? The ten ranks with the highest straggler score "
                  "averaged over their communicators, slowest first.",
                  "percentunit",
                  [target(f"sort_desc(topk(10, avg by (rank) (ncclscope_straggler_score{{{SELC}}})))",
                          "rank {{rank}}", instant=True)],
                  8, 9, options=BARS, min_max=(0, 1)),

            row("Training phases (NVTX)"),
            panel("timeseries", "Time in operations per phase",
                  "Which part of the training step spends its time in NCCL? Per rank, the "
                  "seconds per second its operations took (enqueue to device completion) in each "
                  "NVTX phase its code opened (forward, backward, optimizer; none: outside any), "
                  "averaged over the ranks. Empty when the job runs without the NVTX injection "
                  "(docs/nvtx.md).",
                  "percentunit",
                  [target("avg by (phase) (sum by (instance, rank, phase) (rate("
                          f"ncclscope_phase_operation_seconds_total{{{SELC}}}[$__rate_interval])))",
                          "{{phase}}")],
                  16, 8, options=LEGEND_LIST, custom=LINE),
            panel("timeseries", "Training step per rank",
                  "Is every rank in the same step? The NVTX step of each rank's newest "
                  "operation: a rank whose line stops while the others climb is behind; the "
                  "verdicts name its step and phase.",
                  "none", [target(f"max by (rank) (ncclscope_rank_step{{{SEL}}})", "rank {{rank}}")],
                  8, 8, options=LEGEND_LIST, custom=STEPS, decimals=0),

            row("Trace completeness"),
            panel("timeseries", "Records lost per interval",
                  "Is the probe losing records, where and why? Records lost per rank and reason "
                  "in each interval (overwritten: the ring wrapped; dropped, dropped_comm, "
                  "untracked_completion, unknown_comm: see docs/metrics.md).",
                  "short", [target("sum by (rank, reason) (increase(ncclscope_records_lost_total"
                                   f"{{{SEL}}}[$__rate_interval]))", "rank {{rank}} {{reason}}")],
                  16, 6, options=LEGEND_TABLE, custom=LINE),
            panel("timeseries", "Records the exporters missed",
                  "Do the metrics undercount? Records an exporter never read in each interval: "
                  "overwritten when a ring wraps between two scrapes (scrape more often or raise "
                  "NCCLSCOPE_RING_RECORDS), torn when a writer died mid-record.",
                  "short", [target("sum by (instance, reason) (increase("
                                   f"ncclscope_exporter_records_missed_total{{{SEL}}}[$__rate_interval]))",
                                   "{{instance}} {{reason}}")],
                  8, 6, options=LEGEND_LIST, custom=LINE),
        ],
        comm_multi=True)


def merged_table(title, description, columns, w, h, first_columns):
    """One instant query per column, merged into one row per label set."""
    targets = [target(expr, instant=True, fmt="table") for expr, _, _ in columns]
    units = {f"Value #{chr(ord('A') + i)}": (unit, label)
             for i, (_, unit, label) in enumerate(columns)}
    return panel("table", title, description, "short", targets, w, h, options=TABLE,
                 overrides=column_units(units),
                 transformations=[{"id": "merge", "options": {}}] +
                 hide_columns("Time", order=first_columns))


def communicator():
    per_op = [
        (rate_sum("ncclscope_operations"), "ops", "operations/s"),
        (f"{rate_sum('ncclscope_operation_size_bytes_sum')} / "
         f"{rate_sum('ncclscope_operation_size_bytes_count')}", "bytes", "mean size"),
        (f"{rate_sum('ncclscope_operation_duration_seconds_sum')} / "
         f"{rate_sum('ncclscope_operation_duration_seconds_count')}", "s", "mean latency"),
        (quantile(0.99), "s", "p99 latency"),
        (f"{rate_sum('ncclscope_operation_bytes')} / "
         f"{rate_sum('ncclscope_operation_duration_seconds_sum')}", "Bps", "algorithm bandwidth"),
        (f"{rate_sum('ncclscope_operation_bus_bytes')} / "
         f"{rate_sum('ncclscope_operation_duration_seconds_sum')}", "Bps", "bus bandwidth"),
    ]
    per_size = [
        (size_rate_sum("count"), "ops", "operations/s"),
        (f"{size_rate_sum('sum')} / {size_rate_sum('count')}", "s", "mean latency"),
        (size_quantile(0.5), "s", "p50 latency"),
        (size_quantile(0.99), "s", "p99 latency"),
    ]
    per_rank = [
        (f"max by (rank) (ncclscope_last_issued_sequence{{{SELC}}})", "none", "last issued #"),
        (f"max by (rank) (ncclscope_last_completed_sequence{{{SELC}}})", "none", "last completed #"),
        (f"sum by (rank) (ncclscope_inflight_operations{{{SELC}}})", "short", "in flight"),
        (f"max by (rank) (ncclscope_arrival_lateness_seconds{{{SELC}}})", "s", "arrival lateness"),
    ]
    return dashboard(
        "ncclscope-communicator", "ncclscope / Communicator",
        "One communicator in detail: what it runs, at which sizes and latencies, and how each of "
        "its ranks keeps up.",
        [
            row("What runs on this communicator"),
            panel("stat", "Ranks",
                  "How big is this communicator? Its number of ranks (the n of the bus-bandwidth "
                  "factor).",
                  "short", [target(f"max(job_instance_comm:ncclscope_communicator_ranks:max{{{SELC}}})")],
                  4, 4, options=STAT),
            culprits_by_stage(
                "Is this communicator hung, deadlocked, desynchronized or slowed down? Culprit "
                "ranks of its current verdicts, by stage (hang: confirmed, pages; suspect: not "
                "confirmed yet; straggler; numerics: a NaN's origin or a corrupt output); 0 when "
                "healthy."),
            panel("table", "Verdicts on this communicator",
                  "Which of its ranks is to blame, and why? One row per culprit rank.",
                  "none", [target(f"ncclscope_verdict{{{SELC}}} == 1", instant=True, fmt="table")],
                  16, 4, options=TABLE, transformations=VERDICT_TABLE),

            merged_table("Operations: size, latency, bandwidth",
                         "What does each operation of this communicator cost? Per operation: "
                         "rate, mean size, mean and p99 latency, algorithm and bus bandwidth over "
                         "the last minute, all sizes together (per size: the table below).",
                         per_op, 24, 8, first_columns=("comm", "op")),
            panel("timeseries", "Calls on ncclscope's kernels vs NCCL",
                  "Which calls did ncclscope's own kernels run (NCCLSCOPE_ACCEL=1), and which "
                  "went to NCCL? Operations per second by engine and operation; `ncclscope "
                  "accel-plan` says why a call goes to NCCL.",
                  "ops", [target(rate_sum("ncclscope_accelerated_operations"), "ncclscope {{op}}"),
                          target(f"{rate_sum('ncclscope_operations')} - "
                                 f"{rate_sum('ncclscope_accelerated_operations')}",
                                 "nccl {{op}}")],
                  24, 6, options=LEGEND_TABLE, custom=LINE),

            row("Latency and size"),
            merged_table("Latency by message size",
                         "How does latency grow with message size, and which size got slower? "
                         "Per operation and size class (<=64KiB ... >256MiB, nccl-tests size "
                         "convention): rate, mean, p50 and p99 latency over the last minute. "
                         "Quantiles interpolate within buckets a factor of 4 apart; the mean is "
                         "exact.",
                         per_size, 12, 8, first_columns=("comm", "op", "size")),
            panel("timeseries", "p50 / p99 latency by message size",
                  "Does one message size get slower over time? Median (solid) and p99 (dashed) "
                  "latency per operation and size class.",
                  "s", [target(size_quantile(0.5), "p50 {{op}} {{size}}"),
                        target(size_quantile(0.99), "p99 {{op}} {{size}}")],
                  12, 8, options=LEGEND_TABLE, custom=LINE,
                  overrides=[{"matcher": {"id": "byRegexp", "options": "^p99 .*"},
                              "properties": [{"id": "custom.lineStyle",
                                              "value": {"fill": "dash", "dash": [10, 10]}}]}]),
            panel("timeseries", "Mean latency per operation",
                  "Does an operation get slower over time? Mean enqueue-to-completion time per "
                  "operation, with its p99 dashed.",
                  "s", [target(f"{rate_sum('ncclscope_operation_duration_seconds_sum')} / "
                               f"{rate_sum('ncclscope_operation_duration_seconds_count')}",
                               "mean {{comm}} {{op}}"),
                        target(quantile(0.99), "p99 {{comm}} {{op}}")],
                  12, 8, options=LEGEND_TABLE, custom=LINE,
                  overrides=[{"matcher": {"id": "byRegexp", "options": "^p99 .*"},
                              "properties": [{"id": "custom.lineStyle",
                                              "value": {"fill": "dash", "dash": [10, 10]}}]}]),
            panel("timeseries", "Mean operation size",
                  "At which sizes does this communicator work? Mean bytes per operation (nccl-"
                  "tests size convention), per operation.",
                  "bytes", [target(f"{rate_sum('ncclscope_operation_size_bytes_sum')} / "
                                   f"{rate_sum('ncclscope_operation_size_bytes_count')}",
                                   "{{comm}} {{op}}")],
                  6, 8, options=LEGEND_LIST, custom=LINE),
            panel("heatmap", "Size distribution",
                  "How are operation sizes spread? Operations per size bucket over time.",
                  "bytes", [target("sum by (le) (rate(ncclscope_operation_size_bytes_bucket"
                                   f"{{{SELC}}}[$__rate_interval]))", "{{le}}", fmt="heatmap")],
                  6, 8, options=bucket_heatmap("bytes", "Blues")),

            row("Per rank"),
            panel("timeseries", "Arrival lateness per rank",
                  "Who arrives late at this communicator's collectives? Per rank, the median of "
                  "how much later it arrived than the others over the newest 64 collectives (0 "
                  "on time).",
                  "s", [target(f"max by (rank) (ncclscope_arrival_lateness_seconds{{{SELC}}})",
                               "rank {{rank}}")],
                  12, 8, options=LEGEND_TABLE, custom=LINE),
            panel("bargauge", "Straggler score per rank",
                  "Which rank does this communicator wait for? Lateness as a fraction of the "
                  "median collective time, slowest first (averaged when several communicators "
                  "are selected).",
                  "percentunit",
                  [target(f"sort_desc(topk(10, avg by (rank) (ncclscope_straggler_score{{{SELC}}})))",
                          "rank {{rank}}", instant=True)],
                  12, 8, options=BARS, min_max=(0, 1)),
            panel("timeseries", "Last issued and completed collective per rank",
                  "Where is each rank in the sequence of collectives? Issued runs ahead of "
                  "completed while work is in flight; a rank whose issued number stops below "
                  "the others never called the next collective.",
                  "none", [target(f"max by (rank) (ncclscope_last_issued_sequence{{{SELC}}})",
                                  "issued rank {{rank}}"),
                           target(f"max by (rank) (ncclscope_last_completed_sequence{{{SELC}}})",
                                  "completed rank {{rank}}")],
                  12, 8, options=LEGEND_TABLE, custom=STEPS, decimals=0),
            merged_table("Ranks now",
                         "Which rank is behind right now? Per rank: newest issued and completed "
                         "sequence numbers, operations in flight, arrival lateness.",
                         per_rank, 12, 8, first_columns=("rank",)),
        ],
        comm_multi=False)


DASHBOARDS = {"ncclscope-job-overview.json": job_overview,
              "ncclscope-communicator.json": communicator}


def render(make):
    return json.dumps(make(), indent=2, sort_keys=False) + "\n"


def main(argv):
    out = pathlib.Path(argv[1]) if len(argv) > 1 else HERE
    for name, make in DASHBOARDS.items():
        (out / name).write_text(render(make))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
