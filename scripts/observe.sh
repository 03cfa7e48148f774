#!/usr/bin/env bash
# The monitoring picture in one command: builds ncclscope, runs a simulated job on the CPU emulator,
# `ncclscope exporter` on its trace directory, Prometheus (scraping every 5 s, with the recording and
# alert rules of dashboards/prometheus/) and, when Grafana is installed, Grafana with the data source
# and the dashboards provisioned. Prints the URLs and keeps everything up until Ctrl-C.
#
# usage: scripts/observe.sh [--scenario FILE] [--ranks N] [--timeout S] [--build DIR]
#                           [--exporter-port P] [--prometheus-port P] [--grafana-port P]
# Defaults: sim/scenarios/demo.json at 8 ranks (rank 5 hangs in its second iteration: the suspect
# alert, severity info, fires within about 20 s; the critical hang alert once the exporter confirms
# it, after its 60 s floor), the job killed after 600 s, build dir build/, ports 9478, 9090, 3000.
# Everything listens on 127.0.0.1 only; state lives in a temporary directory removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scenario=sim/scenarios/demo.json
ranks=8
timeout=600
build=build
exporter_port=9478
prometheus_port=9090
grafana_port=3000
while [ $# -gt 0 ]; do
  case $1 in
    --scenario) scenario=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --exporter-port) exporter_port=$2; shift 2 ;;
    --prometheus-port) prometheus_port=$2; shift 2 ;;
    --grafana-port) grafana_port=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "observe.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh >/dev/null
cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build" -j"$(nproc)" --target ncclscope ncclscope_probe ncclscope_sim_rank
cli=$root/$build/bin/ncclscope

work=$(mktemp -d /tmp/ncclscope-observe-XXXXXX)
pids=()
sim_pid=""
cleanup() {
  # The job's ranks first (a hung rank never exits by itself); ncclscope sim then reaps them and
  # removes the job's shared memory.
  if [ -n "$sim_pid" ]; then
    for rank in $(cat "/proc/$sim_pid/task/$sim_pid/children" 2>/dev/null); do
      kill -KILL "$rank" 2>/dev/null || true
    done
    wait "$sim_pid" 2>/dev/null || true
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_http() {  # URL WHAT: waits up to 30 s for URL to answer 200
  for _ in $(seq 1 120); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.25
  done
  echo "observe.sh: $2 did not come up at $1 (logs in $work)" >&2
  exit 1
}

traces=$work/traces
mkdir -p "$traces"
chmod 700 "$traces"  # the probe refuses a trace directory other users can read
"$cli" exporter --dir "$traces" --listen "127.0.0.1:$exporter_port" >"$work/exporter.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$exporter_port/metrics" "ncclscope exporter"

cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 5s
  evaluation_interval: 5s
rule_files:
  - $root/dashboards/prometheus/ncclscope-recording.rules.yml
  - $root/dashboards/prometheus/ncclscope-alerts.rules.yml
scrape_configs:
  - job_name: ncclscope
    static_configs:
      - targets: ["127.0.0.1:$exporter_port"]
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prometheus_port" --log.level=warn >"$work/prometheus.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$prometheus_port/-/ready" "Prometheus"

grafana_url=""
grafana_bin=$(command -v grafana || command -v grafana-server || true)
if [ -n "$grafana_bin" ]; then
  prov=$work/grafana/provisioning
  mkdir -p "$prov/dashboards" "$prov/datasources" "$prov/plugins" "$prov/alerting" "$prov/notifiers"
  sed "s#url: http://localhost:9090#url: http://127.0.0.1:$prometheus_port#" \
    dashboards/provisioning/datasources/prometheus.example.yaml >"$prov/datasources/prometheus.yaml"
  sed "s#path: .*#path: $root/dashboards/grafana#" \
    dashboards/provisioning/dashboards/ncclscope.yaml >"$prov/dashboards/ncclscope.yaml"
  home=${GRAFANA_HOME:-/usr/share/grafana}
  args=(--homepath "$home")
  [ "$(basename "$grafana_bin")" = grafana ] && args=(server "${args[@]}")
  GF_PATHS_DATA=$work/grafana/data GF_PATHS_LOGS=$work/grafana/logs GF_PATHS_PROVISIONING=$prov \
    GF_SERVER_HTTP_ADDR=127.0.0.1 GF_SERVER_HTTP_PORT=$grafana_port \
    GF_AUTH_ANONYMOUS_ENABLED=true GF_AUTH_ANONYMOUS_ORG_ROLE=Admin \
    GF_ANALYTICS_REPORTING_ENABLED=false GF_ANALYTICS_CHECK_FOR_UPDATES=false \
    "$grafana_bin" "${args[@]}" >"$work/grafana.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$grafana_port/api/health" "Grafana"
  grafana_url="http://127.0.0.1:$grafana_port/d/ncclscope-job-overview"
fi

echo
echo "== ncclscope sim --ranks $ranks --scenario $scenario --dir $traces --timeout $timeout"
"$cli" sim --ranks "$ranks" --scenario "$scenario" --dir "$traces" --timeout "$timeout" \
  >"$work/sim.log" 2>&1 &
sim_pid=$!

cat <<EOF

  metrics     http://127.0.0.1:$exporter_port/metrics
  Prometheus  http://127.0.0.1:$prometheus_port/alerts   (rules: dashboards/prometheus/)
              http://127.0.0.1:$prometheus_port/graph?g0.expr=ncclscope_verdict
EOF
if [ -n "$grafana_url" ]; then
  echo "  Grafana     $grafana_url   (communicator drill-down: /d/ncclscope-communicator)"
else
  echo "  Grafana     not installed (no grafana-server): import dashboards/grafana/*.json into"
  echo "              yours, data source = the Prometheus above (see README, Dashboards and alerts)"
fi
cat <<EOF

  job output: $work/sim.log   trace directory: $traces
  Ctrl-C stops everything and removes $work.
EOF

# Report alerts as they fire, until interrupted.
seen=""
while true; do
  sleep 5
  firing=$(curl -fsS "http://127.0.0.1:$prometheus_port/api/v1/alerts" 2>/dev/null |
    python3 -c 'import json,sys
for a in json.load(sys.stdin)["data"]["alerts"]:
    if a["state"] == "firing":
        print(a["labels"]["alertname"] + ": " + a["annotations"].get("summary", ""))' || true)
  if [ -n "$firing" ] && [ "$firing" != "$seen" ]; then
    echo
    echo "== firing alerts ($(date +%T))"
    echo "$firing"
    seen=$firing
  fi
done
