#!/usr/bin/env bash
# CI phase 4: the main suite and the fault suite on SQL Server's dialect (TEST_DATABASES=mssql),
# against Babelfish for PostgreSQL 4.3.0 (T-SQL over TDS, the real mssql/tedious driver) started
# from ../shared/babelfish/start.sh beside the repository. Where that script is absent (a clone
# elsewhere) the phase is skipped with one line; real SQL Server 2022 runs through docker-compose.yml
# and .github/workflows/ci.yml instead (README, "SQL Server setup").
# A Babelfish this script started is stopped on exit; one that was already running is left as it is.
# BABELFISH_DIR, and start.sh's own BBF_DATA / PGPORT / TDSPORT, pick another install or cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bbf=${BABELFISH_DIR:-../shared/babelfish}
if [ ! -f "$bbf/start.sh" ]; then
  echo "sqlserver: SKIPPED, no $bbf/start.sh beside this clone (SQL Server via docker compose: README, SQL Server setup)"
  exit 0
fi
phase_started=$(date +%s)
tds_port=${TDSPORT:-1433}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && exec 3>&- 3<&-; }

if port_open "$tds_port"; then
  echo "sqlserver: a server already listens on :$tds_port; using it and leaving it running"
else
  trap 'bash "$bbf/stop.sh" || true' EXIT
fi
log=$(mktemp "${TMPDIR:-/tmp}/eo-babelfish-XXXXXX.log")
if ! bash "$bbf/start.sh" >"$log" 2>&1; then
  cat "$log" >&2
  echo "sqlserver: FAIL, Babelfish did not start" >&2
  exit 1
fi
grep '^babelfish:' "$log" | sed 's/Bbf-[^@]*@/…@/' || true
MSSQL_URL=$(sed -n 's/^babelfish: up\. MSSQL_URL=//p' "$log" | tail -n1)
if [ -z "$MSSQL_URL" ]; then
  echo "sqlserver: FAIL, start.sh printed no MSSQL_URL" >&2
  exit 1
fi
echo "sqlserver: Babelfish up in $(($(date +%s) - phase_started)) s"

npm run build --silent

# Two Jest workers for the main suite (test/support/databases.ts rides out Babelfish's
# "tuple concurrently updated" on concurrent CREATE DATABASE); the fault suite runs one file at
# a time by its own configuration (it kills sessions and cuts connections). For CI's time budget
# the fault suite here kills 3 processes per crash point (npm test's run kills 8 per point on
# PostgreSQL and SQLite; each victim is a new app whose pool warms up on Babelfish) and cuts the
# broker for 10 s, not 30 s (a broker outage is no property of the database); FAULT_TRIALS /
# FAULT_BROKER_OUTAGE_MS set them otherwise. The storms spec sizes itself for Babelfish.
export FAULT_TRIALS=${FAULT_TRIALS:-3}
export FAULT_BROKER_OUTAGE_MS=${FAULT_BROKER_OUTAGE_MS:-10000}
summary=$(mktemp "${TMPDIR:-/tmp}/eo-sqlserver-XXXXXX.jsonl")
status=0
lines=()
for suite in "main:jest.config.js:2" "fault:jest.faults.config.js:1"; do
  IFS=: read -r name config workers <<<"$suite"
  : >"$summary"
  started=$(date +%s)
  rc=0
  TEST_DATABASES=mssql MSSQL_URL="$MSSQL_URL" EO_SUMMARY_FILE="$summary" \
    npx jest --config "$config" --maxWorkers="$workers" || rc=$?
  counts=$(node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
    const c = lines.map(JSON.parse).reduce((a, b) => ({ passed: a.passed + b.passed, failed: a.failed + b.failed }), { passed: 0, failed: 0 });
    if (process.argv[2] !== "0" && c.failed === 0) c.failed = 1; // a run that crashed before reporting
    console.log(`${c.passed} passed, ${c.failed} failed`);' "$summary" "$rc")
  lines+=("sqlserver: $name suite: $counts in $(($(date +%s) - started)) s")
  if [ "$rc" -ne 0 ]; then status=1; fi
done
rm -f "$summary" "$log"
echo
printf '%s\n' "${lines[@]}"
verdict=PASS
if [ "$status" -ne 0 ]; then verdict=FAIL; fi
echo "sqlserver: $verdict (Babelfish 4.3.0, TEST_DATABASES=mssql) in $(($(date +%s) - phase_started)) s"
exit "$status"
