#!/usr/bin/env python3
"""Every alert and every recording rule of dashboards/prometheus/*.rules.yml has a promtool unit
test: each alert is expected to fire in at least one alert_rule_test, each recording rule is the
subject of at least one promql_expr_test.

usage: check_rules_coverage.py SOURCE_DIR
"""
import os
import pathlib
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard_model as dm  # noqa: E402


def fired_alerts(test_text):
    """Alert names some alert_rule_test expects to fire (a non-empty exp_alerts)."""
    fired = set()
    lines = test_text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*alertname\s*:\s*(\S+)\s*$", line)
        if not m:
            continue
        for j in range(i + 1, len(lines)):
            e = re.match(r"\s*exp_alerts\s*:\s*(.*)$", lines[j])
            if e:
                rest = e.group(1).strip()
                nxt = next((x for x in lines[j + 1:] if x.strip()), "")
                if rest != "[]" and re.match(r"\s*-\s*exp_labels\s*:", nxt):
                    fired.add(m.group(1))
                break
    return fired


def tested_exprs(test_text):
    """The text of every promql_expr_test expr (one line or a `|` block)."""
    out, lines = [], test_text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"(\s*)-\s*expr\s*:\s*(.*)$", line)
        if not m:
            continue
        if m.group(2).strip() in ("|", "|-", ">", ">-"):
            indent = len(m.group(1))
            block = [x for x in lines[i + 1:]]
            body = []
            for x in block:
                if x.strip() and len(x) - len(x.lstrip()) <= indent + 2:
                    break
                body.append(x.strip())
            out.append(" ".join(body))
        else:
            out.append(m.group(2))
    return out


def main():
    source = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    folder = source / "dashboards" / "prometheus"
    rules = sorted(folder.glob("*.rules.yml"))
    tests = sorted(folder.glob("*.test.yml"))
    records, alerts = dm.rule_names(rules)
    text = "\n".join(t.read_text() for t in tests)
    problems = []
    if not records or not alerts or not tests:
        problems.append(f"found {len(records)} recording rules, {len(alerts)} alerts, "
                        f"{len(tests)} test files in {folder}")
    for a in sorted(set(alerts) - fired_alerts(text)):
        problems.append(f"alert {a}: no promtool test expects it to fire")
    exprs = tested_exprs(text)
    for r in records:
        if not any(r in dm.metric_names(e) for e in exprs):
            problems.append(f"recording rule {r}: no promql_expr_test evaluates it")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(alerts)} alerts, {len(records)} recording rules, {len(problems)} untested")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
