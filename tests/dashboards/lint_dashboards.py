#!/usr/bin/env python3
"""Lints dashboards/grafana/*.json the way grafana/dashboard-linter does (its rule names in the
test names), plus what a user of these dashboards would otherwise find broken: overlapping
panels, undefined variables, metrics the exporter does not serve, queries Prometheus rejects.

usage: lint_dashboards.py SOURCE_DIR      (exit 0 when every check passes)
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard_model as dm  # noqa: E402

SOURCE = pathlib.Path(sys.argv.pop(1) if len(sys.argv) > 1 else ".").resolve()
GRAFANA = SOURCE / "dashboards" / "grafana"
RULES = sorted((SOURCE / "dashboards" / "prometheus").glob("*.rules.yml"))
DASHBOARDS = dm.load_dashboards(GRAFANA)
DS = {"type": "prometheus", "uid": "${datasource}"}
GRID_COLUMNS = 24
# Grafana unit ids these dashboards may use (Grafana's own list is longer; extend when needed).
UNITS = {"short", "none", "s", "ms", "bytes", "decbytes", "Bps", "binBps", "ops", "percentunit"}
PANEL_TYPES = {"timeseries", "stat", "table", "bargauge", "heatmap", "state-timeline", "row"}


def promtool():
    path = shutil.which("promtool") or ("/usr/bin/promtool" if os.access("/usr/bin/promtool", os.X_OK) else None)
    if path is None:
        raise AssertionError("promtool not found: install Debian's prometheus package "
                             "(scripts/install-deps.sh)")
    return path


class Dashboards(unittest.TestCase):
    def each(self):
        self.assertTrue(DASHBOARDS, f"no dashboards in {GRAFANA}")
        return list(DASHBOARDS.items())

    def real_panels(self, d):
        return [p for p in dm.panels(d) if p.get("type") != "row"]

    def test_model_is_classic_and_provisionable(self):
        uids = set()
        for name, d in self.each():
            self.assertEqual(d.get("schemaVersion"), 39, name)
            self.assertNotIn("__inputs", d, f"{name}: __inputs break file provisioning")
            self.assertNotIn("__requires", d, name)
            self.assertTrue(d.get("uid") and len(d["uid"]) <= 40, f"{name}: uid")
            self.assertNotIn(d["uid"], uids, f"{name}: uid used twice")
            uids.add(d["uid"])
            self.assertTrue(d.get("title"), name)
            self.assertIsNone(d.get("id"), f"{name}: id must be null (Grafana assigns it)")
            self.assertNotIn("${DS_", str(d), f"{name}: export placeholder left in")

    def test_template_datasource_rule(self):
        for name, d in self.each():
            v = {x["name"]: x for x in d["templating"]["list"]}
            self.assertIn("datasource", v, name)
            self.assertEqual(v["datasource"]["type"], "datasource", name)
            self.assertEqual(v["datasource"]["query"], "prometheus", name)

    def test_template_job_and_instance_rules(self):
        for name, d in self.each():
            v = {x["name"]: x for x in d["templating"]["list"]}
            for var, label in (("job", "job"), ("instance", "instance"), ("comm", "comm")):
                self.assertIn(var, v, f"{name}: no ${var} variable")
                x = v[var]
                self.assertEqual(x["type"], "query", f"{name} ${var}")
                self.assertEqual(x.get("datasource"), DS, f"{name} ${var}: datasource")
                q = dm.variable_query(x)
                self.assertRegex(q, rf",\s*{label}\s*\)\s*$", f"{name} ${var}: label_values(..., {label})")
                self.assertIsNotNone(dm.label_values_selector(q), f"{name} ${var}: {q}")
            for var in ("job", "instance"):
                self.assertTrue(v[var].get("multi") and v[var].get("includeAll"),
                                f"{name} ${var}: multi-value with All")
                self.assertEqual(v[var].get("allValue"), ".+", f"{name} ${var}: allValue")
            self.assertIn('job=~"$job"', dm.variable_query(v["instance"]),
                          f"{name}: $instance lists only the instances of $job")
            if v["comm"].get("includeAll"):
                self.assertEqual(v["comm"].get("allValue"), ".*",
                                 f"{name}: All communicators must match verdicts without comm")

    def test_panel_datasource_rule(self):
        for name, d in self.each():
            for p in self.real_panels(d):
                where = f"{name} panel {p.get('id')} '{p.get('title')}'"
                self.assertEqual(p.get("datasource"), DS, where)
                self.assertTrue(p.get("targets"), f"{where}: no query")
                for t in p["targets"]:
                    self.assertEqual(t.get("datasource", DS), DS, f"{where} target {t.get('refId')}")
            for a in d["annotations"]["list"]:
                if "expr" in a:
                    self.assertEqual(a.get("datasource"), DS, f"{name} annotation {a.get('name')}")

    def test_panel_title_description_rule(self):
        for name, d in self.each():
            for p in self.real_panels(d):
                self.assertTrue(p.get("title", "").strip(), f"{name} panel {p.get('id')}: title")
                desc = p.get("description", "")
                self.assertRegex(desc, r"\?", f"{name} '{p.get('title')}': the description "
                                 "states the question the panel answers")

    def test_panel_units_rule(self):
        for name, d in self.each():
            for p in self.real_panels(d):
                unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
                self.assertIn(unit, UNITS, f"{name} '{p.get('title')}': unit {unit!r}")
                for o in p["fieldConfig"].get("overrides", []):
                    for prop in o.get("properties", []):
                        if prop["id"] == "unit":
                            self.assertIn(prop["value"], UNITS, f"{name} '{p.get('title')}'")

    def test_panel_types_known(self):
        for name, d in self.each():
            for p in dm.panels(d):
                self.assertIn(p.get("type"), PANEL_TYPES, f"{name} '{p.get('title')}'")

    def test_unique_ids_and_titles(self):
        for name, d in self.each():
            ids = [p.get("id") for p in dm.panels(d)]
            self.assertTrue(all(isinstance(i, int) for i in ids), f"{name}: integer ids")
            self.assertEqual(len(ids), len(set(ids)), f"{name}: duplicate panel ids {ids}")
            titles = [p.get("title") for p in dm.panels(d)]
            dup = {t for t in titles if titles.count(t) > 1}
            self.assertFalse(dup, f"{name}: duplicate titles {dup}")
            for p in self.real_panels(d):
                refs = [t.get("refId") for t in p["targets"]]
                self.assertEqual(len(refs), len(set(refs)), f"{name} '{p['title']}': refIds")

    def test_grid_within_24_columns_without_overlap(self):
        for name, d in self.each():
            boxes = []
            for p in dm.panels(d):
                g = p.get("gridPos", {})
                where = f"{name} '{p.get('title')}' {g}"
                for k in ("x", "y", "w", "h"):
                    self.assertIsInstance(g.get(k), int, where)
                self.assertTrue(g["x"] >= 0 and g["y"] >= 0 and g["w"] >= 1 and g["h"] >= 1, where)
                self.assertLessEqual(g["x"] + g["w"], GRID_COLUMNS, where)
                for other, og in boxes:
                    overlap = (g["x"] < og["x"] + og["w"] and og["x"] < g["x"] + g["w"] and
                               g["y"] < og["y"] + og["h"] and og["y"] < g["y"] + g["h"])
                    self.assertFalse(overlap, f"{where} overlaps '{other}' {og}")
                boxes.append((p.get("title"), g))

    def test_target_rate_interval_rule(self):
        """rate, irate, increase (and any range function) over $__rate_interval, never a fixed
        window: Grafana sizes it to the scrape interval and the panel's resolution."""
        for name, d in self.each():
            for where, expr in dm.queries(d):
                windows = re.findall(r"\[([^\]]*)\]", expr)
                calls = re.findall(r"\b(?:rate|irate|increase)\s*\(", expr)
                self.assertGreaterEqual(len(windows), len(calls), f"{name} {where}: {expr}")
                for window in windows:
                    self.assertEqual(window.strip(), "$__rate_interval",
                                     f"{name} {where}: fixed window [{window}] in {expr}")

    def test_target_job_and_instance_rules(self):
        for name, d in self.each():
            for where, expr in dm.queries(d):
                if where.startswith("variable"):
                    continue  # $job itself, and $instance (checked above), may not filter on themselves
                for metric in dm.metric_names(expr):
                    for matchers in dm.selectors(expr, metric):
                        self.assertIn('job=~"$job"', matchers, f"{name} {where}: {metric}")
                        self.assertIn('instance=~"$instance"', matchers, f"{name} {where}: {metric}")

    def test_every_variable_referenced_is_defined(self):
        for name, d in self.each():
            defined = {v["name"] for v in d["templating"]["list"]} | dm.BUILTIN_VARIABLES
            texts = [(where, expr) for where, expr in dm.queries(d)]
            texts += [(f"variable ${v['name']}", dm.variable_query(v)) for v in d["templating"]["list"]]
            texts += [(f"panel '{p.get('title')}' title", p.get("title", "")) for p in dm.panels(d)]
            for where, text in texts:
                missing = dm.variables_referenced(text) - defined
                self.assertFalse(missing, f"{name} {where}: undefined {missing}")

    def test_every_metric_is_served_or_recorded(self):
        contract = dm.contract_metrics(SOURCE / "docs" / "metrics.md")
        self.assertIn("ncclscope_verdict", contract, "docs/metrics.md table not parsed")
        records, _ = dm.rule_names(RULES)
        known = contract | set(records)
        for name, d in self.each():
            for where, expr in dm.queries(d):
                unknown = dm.metric_names(expr) - known
                self.assertFalse(unknown, f"{name} {where}: not in docs/metrics.md nor recorded: {unknown}")

    def test_rules_use_only_served_or_recorded_metrics(self):
        contract = dm.contract_metrics(SOURCE / "docs" / "metrics.md")
        records, _ = dm.rule_names(RULES)
        exprs = dm.rule_exprs(RULES)
        self.assertEqual(len(exprs), len(records) + len(dm.rule_names(RULES)[1]))
        for rule, expr in exprs:
            unknown = dm.metric_names(expr) - contract - set(records)
            self.assertFalse(unknown, f"rule {rule}: {unknown}")

    def test_only_confirmed_hangs_page(self):
        """Two stages (docs/metrics.md): an alert on verdicts pages (critical) only on
        stage="hang"; one on stage="suspect" is informational. Every critical alert's
        ncclscope_verdict selector pins stage="hang"."""
        severities = dm.alert_severities(RULES)
        exprs = dict(dm.rule_exprs(RULES))
        checked = 0
        for alert, severity in severities.items():
            for matchers in dm.selectors(exprs[alert], "ncclscope_verdict"):
                stage = re.search(r'\bstage\s*(=~|!=|!~|=)\s*"([^"]*)"', matchers)
                if severity == "critical":
                    checked += 1
                    self.assertTrue(stage and stage.groups() == ("=", "hang"),
                                    f'alert {alert} pages on verdicts without stage="hang": '
                                    f"{{{matchers}}}")
                if stage and stage.group(2) == "suspect":
                    self.assertEqual(severity, "info", f"alert {alert}: a suspect never pages")
        self.assertGreater(checked, 0, "no critical verdict alert found in the rules")

    def test_dashboards_use_the_recording_rules(self):
        records, _ = dm.rule_names(RULES)
        used = set()
        for _, d in DASHBOARDS.items():
            for _, expr in dm.queries(d):
                used |= dm.metric_names(expr)
        self.assertFalse(set(records) - used, "recording rules no dashboard uses")

    def test_heatmaps_of_histograms_are_bucket_frames(self):
        for name, d in self.each():
            for p in self.real_panels(d):
                for t in p["targets"]:
                    if t.get("format") == "heatmap":
                        self.assertEqual(p["type"], "heatmap", f"{name} '{p['title']}'")
                        self.assertEqual(t.get("legendFormat"), "{{le}}", f"{name} '{p['title']}'")
                        self.assertRegex(t["expr"], r"by \(le\)", f"{name} '{p['title']}'")
                if p["type"] == "heatmap":
                    self.assertIs(p["options"].get("calculate"), False, f"{name} '{p['title']}'")

    def test_queries_parse_in_prometheus(self):
        """Each query, variables substituted, as a recording rule for `promtool check rules`."""
        lines = ["groups:", "  - name: dashboard-queries", "    rules:"]
        n = 0
        for name, d in DASHBOARDS.items():
            for where, expr in dm.queries(d):
                n += 1
                lines.append(f"      - record: dashboard_query_{n}")
                lines.append("        expr: " + _json_string(dm.substitute(expr)))
        with tempfile.TemporaryDirectory() as tmp:
            f = pathlib.Path(tmp) / "queries.yml"
            f.write_text("\n".join(lines) + "\n")
            r = subprocess.run([promtool(), "check", "rules", str(f)], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(f"SUCCESS: {n} rules found", r.stdout)

    def test_committed_json_is_what_the_generator_writes(self):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, str(GRAFANA / "generate.py"), tmp], check=True)
            for name in DASHBOARDS:
                fresh = (pathlib.Path(tmp) / name).read_text()
                self.assertEqual(fresh, (GRAFANA / name).read_text(),
                                 f"{name} differs from generate.py's output: run "
                                 "python3 dashboards/grafana/generate.py")
            self.assertEqual(sorted(p.name for p in pathlib.Path(tmp).glob("*.json")),
                             sorted(DASHBOARDS))


class Provisioning(unittest.TestCase):
    def test_dashboard_provider_points_at_file_dashboards(self):
        text = (SOURCE / "dashboards" / "provisioning" / "dashboards" / "ncclscope.yaml").read_text()
        self.assertRegex(text, r"(?m)^apiVersion:\s*1\s*$")
        self.assertRegex(text, r"(?m)^\s*type:\s*file\s*$")
        self.assertRegex(text, r"(?m)^\s*path:\s*\S+")

    def test_datasource_example_is_prometheus(self):
        text = (SOURCE / "dashboards" / "provisioning" / "datasources" / "prometheus.example.yaml").read_text()
        self.assertRegex(text, r"(?m)^apiVersion:\s*1\s*$")
        self.assertRegex(text, r"(?m)^\s*type:\s*prometheus\s*$")
        self.assertRegex(text, r"(?m)^\s*url:\s*http")


def _json_string(s):
    return json.dumps(s)


if __name__ == "__main__":
    unittest.main(verbosity=2)
