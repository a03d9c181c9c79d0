#!/usr/bin/env bash
# CI phase 3: the consumer test (test/consumer/run.js). The library packed as it is published,
# installed into two fresh `nest new` apps, an ESM Nest 12 one (@nestjs/cli@latest) and a
# CommonJS Nest 11 one (@nestjs/cli@11), whose src/ is docs/getting-started.md's code blocks and
# nothing else, its own migration generated with the TypeORM CLI, with an end-to-end against
# RabbitMQ that ends with 0 unacknowledged messages: ESM on PostgreSQL and on SQL Server's dialect
# (a throw-away Babelfish from ../shared/babelfish/start.sh, skipped with one line where that script
# is absent; BABELFISH_DIR picks another install), CommonJS on SQLite. Ends with
# `consumer test: PASS (…)`.
set -euo pipefail
cd "$(dirname "$0")/.."
node test/consumer/run.js
