"""What the latency scripts read of a verdict document (verdict.json, verdict-job.json) while the
watchdog or the correlating exporter rewrites it."""
import json


def load(path):
    """The document at path, or None while it is absent or being replaced."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def headline(doc):
    """'class comm op #seq culprits a,b (tie)' of the document's first verdict."""
    v = doc["verdicts"][0]
    return "%s %s %s #%s culprits %s%s" % (
        v["class"], v.get("comm_name", ""), v.get("op", ""), v.get("seq", ""),
        ",".join(map(str, v["culprits"])) or "-", " (tie)" if v.get("tie") else "")
