#!/usr/bin/env python3
"""The dashboard lint must fail on the defects it exists for: each case breaks one thing in a copy
of the dashboards and expects exactly the lint rule for it to fail.

usage: lint_catches_defects.py SOURCE_DIR
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = pathlib.Path(sys.argv.pop(1) if len(sys.argv) > 1 else ".").resolve()
LINT = pathlib.Path(__file__).resolve().parent / "lint_dashboards.py"
OVERVIEW = "ncclscope-job-overview.json"
ALERTS = "ncclscope-alerts.rules.yml"


def first_panel(d, kind):
    return next(p for p in d["panels"] if p["type"] == kind)


def first_target_expr(d, needle):
    return next(t for p in d["panels"] for t in p.get("targets", []) if needle in t["expr"])


class LintCatchesDefects(unittest.TestCase):
    def lint_broken(self, break_it, rule, break_alerts=None):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            shutil.copytree(SOURCE / "dashboards", root / "dashboards")
            (root / "docs").mkdir()
            shutil.copy(SOURCE / "docs" / "metrics.md", root / "docs" / "metrics.md")
            f = root / "dashboards" / "grafana" / OVERVIEW
            d = json.loads(f.read_text())
            break_it(d)
            f.write_text(json.dumps(d, indent=2) + "\n")
            if break_alerts is not None:
                alerts = root / "dashboards" / "prometheus" / ALERTS
                broken = break_alerts(alerts.read_text())
                self.assertNotEqual(broken, alerts.read_text(), "the defect was not introduced")
                alerts.write_text(broken)
            r = subprocess.run([sys.executable, str(LINT), str(root)], capture_output=True, text=True)
        out = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, f"lint passed a dashboard broken for {rule}")
        failed = set(re.findall(r"^(?:FAIL|ERROR): (test_\w+)", out, re.M))
        self.assertIn(rule, failed, out[-3000:])
        # Only that rule and the generator check (the JSON no longer matches generate.py).
        self.assertLessEqual(failed - {rule, "test_committed_json_is_what_the_generator_writes"},
                             set(), out[-3000:])

    def test_fixed_window(self):
        def b(d):
            t = first_target_expr(d, "$__rate_interval")
            t["expr"] = t["expr"].replace("$__rate_interval", "5m")
        self.lint_broken(b, "test_target_rate_interval_rule")

    def test_missing_unit(self):
        self.lint_broken(lambda d: first_panel(d, "timeseries")["fieldConfig"]["defaults"].pop("unit"),
                         "test_panel_units_rule")

    def test_hard_coded_datasource(self):
        def b(d):
            first_panel(d, "timeseries")["datasource"] = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}
        self.lint_broken(b, "test_panel_datasource_rule")

    def test_overlapping_panels(self):
        def b(d):
            ts = [p for p in d["panels"] if p["type"] == "timeseries"]
            ts[1]["gridPos"]["x"] = ts[0]["gridPos"]["x"] + 1
            ts[1]["gridPos"]["y"] = ts[0]["gridPos"]["y"]
        self.lint_broken(b, "test_grid_within_24_columns_without_overlap")

    def test_wider_than_the_grid(self):
        self.lint_broken(lambda d: first_panel(d, "heatmap")["gridPos"].update(w=20),
                         "test_grid_within_24_columns_without_overlap")

    def test_undefined_variable(self):
        def b(d):
            t = first_target_expr(d, 'comm=~"$comm"')
            t["expr"] = t["expr"].replace('comm=~"$comm"', 'comm=~"$communicator"', 1)
        self.lint_broken(b, "test_every_variable_referenced_is_defined")

    def test_metric_not_in_the_contract(self):
        def b(d):
            t = first_target_expr(d, "ncclscope_inflight_operations")
            t["expr"] = t["expr"].replace("ncclscope_inflight_operations", "ncclscope_inflight_ops")
        self.lint_broken(b, "test_every_metric_is_served_or_recorded")

    def test_selector_without_job(self):
        def b(d):
            t = first_target_expr(d, "ncclscope_inflight_operations")
            t["expr"] = t["expr"].replace('job=~"$job", ', "")
        self.lint_broken(b, "test_target_job_and_instance_rules")

    def test_duplicate_panel_id(self):
        def b(d):
            d["panels"][2]["id"] = d["panels"][1]["id"]
        self.lint_broken(b, "test_unique_ids_and_titles")

    def test_query_prometheus_rejects(self):
        def b(d):
            t = first_target_expr(d, "ncclscope_inflight_operations")
            t["expr"] = t["expr"] + ")"
        self.lint_broken(b, "test_queries_parse_in_prometheus")

    def test_export_inputs(self):
        self.lint_broken(lambda d: d.update(__inputs=[{"name": "DS_PROMETHEUS", "type": "datasource"}]),
                         "test_model_is_classic_and_provisionable")

    def test_critical_alert_on_a_suspect(self):
        # The pre-two-stage hang alert: any verdict of the class pages, suspects included.
        self.lint_broken(lambda d: None, "test_only_confirmed_hangs_page",
                         break_alerts=lambda text: text.replace(
                             '"missing|device-stall|frozen|init-hang", stage="hang", scope!="node"}',
                             '"missing|device-stall|frozen|init-hang", scope!="node"}'))

    def test_suspect_alert_that_pages(self):
        self.lint_broken(lambda d: None, "test_only_confirmed_hangs_page",
                         break_alerts=lambda text: re.sub(
                             r"(alert: NcclscopeCollectiveSuspect\n(?:.*\n)*?\s*severity: )info",
                             r"\1critical", text, count=1))

    def test_no_description(self):
        self.lint_broken(lambda d: first_panel(d, "stat").update(description=""),
                         "test_panel_title_description_rule")


if __name__ == "__main__":
    unittest.main(verbosity=2)
