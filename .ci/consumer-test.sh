#!/usr/bin/env bash
# CI phase 3: the consumer test (test/consumer/run.js). The library packed as it is published,
# installed into a fresh `nest new` app whose src/ is the README's code blocks and nothing else,
# its own migration generated with the TypeORM CLI, with an end-to-end on PostgreSQL and SQLite
# against RabbitMQ that ends with 0 unacknowledged messages. Ends with `consumer test: PASS (…)`.
set -euo pipefail
cd "$(dirname "$0")/.."
node test/consumer/run.js
