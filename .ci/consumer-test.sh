#!/usr/bin/env bash
# CI phase 3: the consumer test (test/consumer/run.js). The library packed as it is published,
# installed into a fresh `nest new` app wired exactly as the README shows, with a short
# end-to-end on PostgreSQL and SQLite against RabbitMQ. Ends with `consumer test: PASS (…)`.
set -euo pipefail
cd "$(dirname "$0")/.."
node test/consumer/run.js
