"""What the dashboard tests read: the dashboards' queries, the metric contract (docs/metrics.md)
and the names the rules files define. Standard library only."""
import json
import pathlib
import re

# Grafana's built-in variables a query may use without defining them.
BUILTIN_VARIABLES = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s",
                     "__range_ms", "__dashboard", "__from", "__to", "__name", "__org", "__user",
                     "timeFilter", "__timeFilter"}

PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                   "group_right", "offset", "bool", "inf", "nan", "atan2", "le"}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_VARIABLE = re.compile(r"\$(?:\{(\w+)(?::\w+)?\}|(\w+))")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*([A-Za-z_]\w*)\s*\)\s*$", re.S)


def load_dashboards(folder):
    """{file name: parsed JSON} of every *.json in folder, sorted by name."""
    return {p.name: json.loads(p.read_text()) for p in sorted(pathlib.Path(folder).glob("*.json"))}


def panels(dashboard):
    """Every panel, those nested in collapsed rows included; rows themselves too."""
    for p in dashboard.get("panels", []):
        yield p
        for inner in p.get("panels", []):
            yield inner


def queries(dashboard):
    """(where, expr) for every PromQL expression of a dashboard: panel targets, annotations, and
    the series selector of label_values() variables."""
    for p in panels(dashboard):
        for t in p.get("targets", []):
            yield f"panel {p.get('id')} '{p.get('title')}' target {t.get('refId')}", t.get("expr", "")
    for a in dashboard.get("annotations", {}).get("list", []):
        if "expr" in a:
            yield f"annotation '{a.get('name')}'", a["expr"]
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            selector = label_values_selector(variable_query(v))
            if selector is not None:
                yield f"variable ${v['name']}", selector


def variable_query(variable):
    q = variable.get("query", "")
    return q.get("query", "") if isinstance(q, dict) else q


def label_values_selector(query):
    """The series selector of `label_values(selector, label)`, None for other queries."""
    m = _LABEL_VALUES.match(query)
    return m.group(1) if m else None


def variables_referenced(text):
    return {a or b for a, b in _VARIABLE.findall(text)}


def substitute(expr, rate_interval="4s", value=".*", values=None):
    """A dashboard query as Prometheus can run it: Grafana's interval variables replaced by a
    duration, template variables by `values[name]`, the others by `value` (the queries match
    variables with =~, so a value is a regular expression)."""
    expr = re.sub(r"\$(?:\{__rate_interval\}|__rate_interval\b)", rate_interval, expr)
    expr = re.sub(r"\$(?:\{__interval\}|__interval\b)", rate_interval, expr)
    expr = re.sub(r"\$(?:\{__range\}|__range\b)", "1h", expr)
    values = values or {}
    return _VARIABLE.sub(lambda m: values.get(m.group(1) or m.group(2), value), expr)


def metric_names(expr):
    """Metric names a PromQL expression selects (identifiers that are neither functions, keywords,
    label names nor numbers)."""
    s = _STRING.sub('""', expr)
    s = _MATCHERS.sub(" ", s)
    s = _RANGE.sub(" ", s)
    s = _LABEL_LIST.sub(" ", s)
    names = set()
    for m in _IDENT.finditer(s):
        word = m.group(0)
        before = s[m.start() - 1] if m.start() > 0 else " "
        if before.isdigit() or before in ".$":
            continue  # an exponent (1e-9) or a variable
        if s[m.end():].lstrip().startswith("("):
            continue  # a function or an aggregation
        if word.lower() in PROMQL_KEYWORDS:
            continue
        names.add(word)
    return names


def selectors(expr, name):
    """The matcher text of every occurrence of metric `name` in expr ('' when it has none)."""
    found = []
    for m in re.finditer(r"(?<![\w:$])" + re.escape(name) + r"(?![\w:])(\s*\{([^}]*)\})?", expr):
        if expr[m.end():].lstrip().startswith("(") and not m.group(1):
            continue
        found.append(m.group(2) or "")
    return found


def contract_metrics(metrics_md):
    """Series names docs/metrics.md promises: every name of its Metrics table, with _bucket, _sum
    and _count for histograms."""
    names = set()
    for line in pathlib.Path(metrics_md).read_text().splitlines():
        m = re.match(r"\|\s*`(ncclscope_\w+)`\s*\|\s*(\w+)\s*\|", line)
        if not m:
            continue
        name, kind = m.groups()
        names.add(name)
        if kind == "histogram":
            names.update(name + suffix for suffix in ("_bucket", "_sum", "_count"))
    return names


def rule_names(rules_files):
    """(recording rule names, alert names) defined by the rules files."""
    records, alerts = [], []
    for f in rules_files:
        for line in pathlib.Path(f).read_text().splitlines():
            m = re.match(r"\s*-\s*(record|alert)\s*:\s*(\S+)\s*$", line)
            if m:
                (records if m.group(1) == "record" else alerts).append(m.group(2))
    return records, alerts


def rule_exprs(rules_files):
    """(rule name, expr) of every rule; exprs are either one line or a `|` block."""
    out = []
    for f in rules_files:
        lines = pathlib.Path(f).read_text().splitlines()
        name = None
        i = 0
        while i < len(lines):
            line = lines[i]
            m = re.match(r"\s*-\s*(?:record|alert)\s*:\s*(\S+)\s*$", line)
            if m:
                name = m.group(1)
            m = re.match(r"(\s*)expr\s*:\s*(.*)$", line)
            if m and name:
                indent, rest = len(m.group(1)), m.group(2).strip()
                if rest in ("|", "|-", ">", ">-"):
                    block = []
                    i += 1
                    while i < len(lines) and (not lines[i].strip() or
                                              len(lines[i]) - len(lines[i].lstrip()) > indent):
                        block.append(lines[i].strip())
                        i += 1
                    out.append((name, " ".join(block)))
                    continue
                out.append((name, rest))
            i += 1
    return out


def alert_severities(rules_files):
    """{alert name: its `severity` label} of every alert of the rules files ('' when none)."""
    out = {}
    for f in rules_files:
        alert = None
        for line in pathlib.Path(f).read_text().splitlines():
            m = re.match(r"\s*-\s*(record|alert)\s*:\s*(\S+)\s*$", line)
            if m:
                alert = m.group(2) if m.group(1) == "alert" else None
                if alert:
                    out[alert] = ""
            m = re.match(r"\s*severity\s*:\s*(\S+)\s*$", line)
            if m and alert:
                out[alert] = m.group(1).strip("'\"")
    return out
