#!/usr/bin/env bash
# CI phase 4: the main suite and the fault suite on SQL Server's dialect (TEST_DATABASES=mssql),
# against Babelfish for PostgreSQL 4.3.0 (T-SQL over TDS, the real mssql/tedious driver) started
# from ../shared/babelfish/start.sh beside the repository. Where that script is absent (a clone
# elsewhere) the phase is skipped with one line; real SQL Server 2022 runs through docker-compose.yml
# and .github/workflows/ci.yml instead (docs/sql-server.md, "SQL Server setup").
#
# Each suite gets its own throw-away cluster (a new data directory and free ports, about 1 s to
# create), wiped when the suite ends. A long-lived cluster that earlier runs had filled with
# thousands of created and dropped test databases grew slower run after run: on 2026-11-26 the
# fault suite's storms took 732 s on such a cluster and 90 s, same sizes, on a new one. CI must not
# depend on what a session left running either.
# BABELFISH_DIR picks another install.
set -euo pipefail
cd "$(dirname "$0")/.."
bbf=${BABELFISH_DIR:-../shared/babelfish}
if [ ! -f "$bbf/start.sh" ]; then
  echo "sqlserver: SKIPPED, no $bbf/start.sh beside this clone (SQL Server via docker compose: docs/sql-server.md, SQL Server setup)"
  exit 0
fi
phase_started=$(date +%s)
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && exec 3>&- 3<&-; }
free_port() {
  local p=$1
  while port_open "$p"; do p=$((p + 1)); done
  echo "$p"
}

cluster=""
stop_cluster() {
  if [ -n "$cluster" ]; then
    BBF_DATA=$cluster bash "$bbf/stop.sh" --wipe >/dev/null || true
    cluster=""
  fi
}
trap stop_cluster EXIT

# Starts a new cluster and sets MSSQL_URL to it.
start_cluster() {
  local started log
  started=$(date +%s)
  cluster=$(mktemp -d "${TMPDIR:-/tmp}/eo-babelfish-data-XXXXXX")
  log=$(mktemp "${TMPDIR:-/tmp}/eo-babelfish-XXXXXX.log")
  if ! BBF_DATA=$cluster TDSPORT=$(free_port 14331) PGPORT=$(free_port 54331) \
    bash "$bbf/start.sh" >"$log" 2>&1; then
    cat "$log" >&2
    echo "sqlserver: FAIL, Babelfish did not start" >&2
    exit 1
  fi
  MSSQL_URL=$(sed -n 's/^babelfish: up\. MSSQL_URL=//p' "$log" | tail -n1)
  rm -f "$log"
  if [ -z "$MSSQL_URL" ]; then
    echo "sqlserver: FAIL, start.sh printed no MSSQL_URL" >&2
    exit 1
  fi
  echo "sqlserver: a new Babelfish cluster on ${MSSQL_URL##*@} in $(($(date +%s) - started)) s"
}

# dist/ as the suites run it (spawned sample apps): built again unless it is newer than every
# source it is built from (in .ci/run the earlier phases have just built it from this checkout).
if [ ! -f dist/sample-app/main.js ] ||
  [ -n "$(find lib sample-app bench tsconfig.json tsconfig.build.json package-lock.json -newer dist/sample-app/main.js -print -quit 2>/dev/null)" ]; then
  npm run build --silent
else
  echo "sqlserver: dist/ is newer than every source, not built again"
fi

# Two Jest workers for the main suite (test/support/databases.ts rides out Babelfish's
# "tuple concurrently updated" on concurrent CREATE DATABASE); the fault suite one file at a
# time, although npm test runs it two at a time: on Babelfish both would wait on the server's
# CPU (measured 2026-11-29 on a 2-core VM: 323 s one at a time, 289 s two at a time, with the
# crash points stretched from 144 s to 287 s), and a slower VM would push the storms' cold
# backends past the driver's time-outs, which is what failed them on 2026-11-27. The fault suite kills
# 4 processes per crash point (FAULT_TRIALS), each mode on Express and on Fastify once; npm test's
# run kills 8 per point on PostgreSQL. On Babelfish a crash trial is a new process whose pooled
# connections are new backends that warm their T-SQL parser first (test/faults/support/
# fault-cluster.ts): 8 per point took 500 s of the phase on a 2-core VM (2026-11-27), which is
# spent proving the dialect's statements under kills, and 4 prove them as well. It cuts the broker
# for 10 s, not 30 s (a broker outage is no property of the database; FAULT_BROKER_OUTAGE_MS). The
# storms spec sizes itself for Babelfish.
export FAULT_TRIALS=${FAULT_TRIALS:-4}
export FAULT_BROKER_OUTAGE_MS=${FAULT_BROKER_OUTAGE_MS:-10000}
# The main suite's files that run once per database: they read TEST_DATABASES through the
# helpers of test/support/databases.ts and test/support/app-on-database.ts, named here (a new
# per-database helper must be added to this list, or its specs never run on SQL Server). The
# others, the unit tests and the browser test of the operator's console on SQLite, do not touch
# SQL Server and already ran in npm test: on Babelfish they would only take time from the phase.
per_database_helpers='databaseKinds|describeEachDatabase|createTestDatabase|openTestDatabase|databasePlatformCases|startAppOnDatabase'
mapfile -t per_database < <(grep -lE "$per_database_helpers" test/integration/*.spec.ts test/e2e/*.spec.ts)
echo "sqlserver: main suite on ${#per_database[@]} spec files that run once per database"
summary=$(mktemp "${TMPDIR:-/tmp}/eo-sqlserver-XXXXXX.jsonl")
status=0
lines=()
for name in main fault; do
  if [ "$name" = main ]; then
    config=jest.config.js workers=2 files=("${per_database[@]}")
  else
    config=jest.faults.config.js workers=1 files=()
  fi
  start_cluster
  : >"$summary"
  started=$(date +%s)
  rc=0
  TEST_DATABASES=mssql MSSQL_URL="$MSSQL_URL" EO_SUMMARY_FILE="$summary" \
    npx jest --config "$config" --maxWorkers="$workers" "${files[@]}" || rc=$?
  stop_cluster
  counts=$(node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
    const c = lines.map(JSON.parse).reduce((a, b) => ({ passed: a.passed + b.passed, failed: a.failed + b.failed }), { passed: 0, failed: 0 });
    if (process.argv[2] !== "0" && c.failed === 0) c.failed = 1; // a run that crashed before reporting
    console.log(`${c.passed} passed, ${c.failed} failed`);' "$summary" "$rc")
  lines+=("sqlserver: $name suite: $counts in $(($(date +%s) - started)) s")
  if [ "$rc" -ne 0 ]; then status=1; fi
done
rm -f "$summary"
echo
printf '%s\n' "${lines[@]}"
verdict=PASS
if [ "$status" -ne 0 ]; then verdict=FAIL; fi
echo "sqlserver: $verdict (Babelfish 4.3.0, new clusters, TEST_DATABASES=mssql) in $(($(date +%s) - phase_started)) s"
exit "$status"
