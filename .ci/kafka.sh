#!/usr/bin/env bash
# CI phase 5: the Kafka suite (jest.kafka.config.js: test/kafka) against a real 3-node Apache
# Kafka cluster in KRaft mode (replication factor 3, min.insync.replicas 2) started from
# ../shared/kafka/start.sh beside the repository (Kafka fetched with Maven, no Docker); one-line
# skip where that script is absent. The suite SIGKILLs brokers, relays and consumers (see
# test/kafka/*.spec.ts). First on PostgreSQL, then on SQL Server's dialect on a new Babelfish
# cluster (as .ci/sqlserver.sh starts one), where every broker fault (a partition leader killed
# mid-stream, the whole cluster down for 10 s) and every process crash runs. The Kafka cluster
# is stopped and wiped at the end when this script started it; one already running on
# KAFKA_PORT (9092) is used and left running.
# KAFKA_DIR picks another install of the scripts, BABELFISH_DIR another Babelfish.
set -euo pipefail
cd "$(dirname "$0")/.."
kafka_dir=$(cd "${KAFKA_DIR:-../shared/kafka}" 2>/dev/null && pwd || true)
if [ -z "$kafka_dir" ] || [ ! -f "$kafka_dir/start.sh" ]; then
  echo "kafka: SKIPPED, no ${KAFKA_DIR:-../shared/kafka}/start.sh beside this clone"
  exit 0
fi
phase_started=$(date +%s)
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && exec 3>&- 3<&-; }
free_port() {
  local p=$1
  while port_open "$p"; do p=$((p + 1)); done
  echo "$p"
}

bbf=${BABELFISH_DIR:-../shared/babelfish}
cluster=""
kafka_up=0
cleanup() {
  if [ -n "$cluster" ]; then BBF_DATA=$cluster bash "$bbf/stop.sh" --wipe >/dev/null || true; fi
  if [ "$kafka_up" = 1 ]; then KAFKA_NODES=3 bash "$kafka_dir/stop.sh" --wipe >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

started=$(date +%s)
log=$(mktemp "${TMPDIR:-/tmp}/eo-kafka-XXXXXX.log")
if port_open "${KAFKA_PORT:-9092}"; then
  echo "kafka: a cluster already answers on port ${KAFKA_PORT:-9092}: using it, and leaving it running"
else
  kafka_up=1
fi
if ! brokers=$(KAFKA_NODES=3 bash "$kafka_dir/start.sh" 2>"$log"); then
  cat "$log" >&2
  echo "kafka: FAIL, the 3-node cluster did not start" >&2
  exit 1
fi
rm -f "$log"
export "$(echo "$brokers" | grep '^KAFKA_BROKERS=' | tail -n1)"
export KAFKA_SCRIPTS="$kafka_dir"
echo "kafka: 3 nodes up ($KAFKA_BROKERS) in $(($(date +%s) - started)) s"

if [ ! -f dist/sample-app/main.js ] ||
  [ -n "$(find lib sample-app bench tsconfig.json tsconfig.build.json package-lock.json -newer dist/sample-app/main.js -print -quit 2>/dev/null)" ]; then
  npm run build --silent
fi

status=0
lines=()
started=$(date +%s)
rc=0
TEST_DATABASES=postgres npx jest --config jest.kafka.config.js || rc=$?
lines+=("kafka: PostgreSQL suite exit $rc in $(($(date +%s) - started)) s")
if [ "$rc" -ne 0 ]; then status=1; fi

if [ -f "$bbf/start.sh" ]; then
  started=$(date +%s)
  cluster=$(mktemp -d "${TMPDIR:-/tmp}/eo-babelfish-data-XXXXXX")
  log=$(mktemp "${TMPDIR:-/tmp}/eo-babelfish-XXXXXX.log")
  if BBF_DATA=$cluster TDSPORT=$(free_port 14331) PGPORT=$(free_port 54331) \
    bash "$bbf/start.sh" >"$log" 2>&1; then
    mssql_url=$(sed -n 's/^babelfish: up\. MSSQL_URL=//p' "$log" | tail -n1)
    rc=0
    TEST_DATABASES=mssql MSSQL_URL="$mssql_url" npx jest --config jest.kafka.config.js \
      test/kafka/broker-failover.spec.ts test/kafka/process-crashes.spec.ts || rc=$?
    lines+=("kafka: SQL Server (Babelfish) suite exit $rc in $(($(date +%s) - started)) s")
    if [ "$rc" -ne 0 ]; then status=1; fi
  else
    cat "$log" >&2
    lines+=("kafka: FAIL, Babelfish did not start")
    status=1
  fi
  rm -f "$log"
  BBF_DATA=$cluster bash "$bbf/stop.sh" --wipe >/dev/null || true
  cluster=""
else
  lines+=("kafka: SQL Server part SKIPPED, no $bbf/start.sh")
fi

if [ "$kafka_up" = 1 ]; then KAFKA_NODES=3 bash "$kafka_dir/stop.sh" --wipe >/dev/null 2>&1 || true; fi
kafka_up=0
echo
printf '%s\n' "${lines[@]}"
verdict=PASS
if [ "$status" -ne 0 ]; then verdict=FAIL; fi
echo "kafka: $verdict (3-node Kafka 4.1.2 KRaft) in $(($(date +%s) - phase_started)) s"
exit "$status"
