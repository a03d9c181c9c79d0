#!/usr/bin/env bash
# CI phase 2: the library on Nest 12. A copy of the repository in a temporary directory gets every
# @nestjs package at 12.x (and @nats-io/transport-node, which Nest 12's NATS client loads), is
# built, and runs the HTTP contract, the RPC and GraphQL gates (@nestjs/graphql, apollo and
# mercurius at 14.x, their Nest 12 major), the outbox-to-broker and the inbox end-to-end suites on
# every reachable database. The repository itself (lockfile: Nest 11) is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/eo-nest12-XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "nest12: copying the repository to $work"
git ls-files -co --exclude-standard -z | tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$work"
if [ -d node_modules ]; then cp -a node_modules/. "$work/node_modules/"; fi
cd "$work"

# Every @nestjs dev dependency at ^12; their locked entries are dropped so npm resolves them again.
node -e '
const fs = require("fs");
const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
// The GraphQL packages have majors of their own: 14.x is the one for Nest 12 (13.x for Nest 11).
const NEST12_MAJOR = { "@nestjs/graphql": "^14.0.0", "@nestjs/apollo": "^14.0.0", "@nestjs/mercurius": "^14.0.0" };
for (const name of Object.keys(pkg.devDependencies))
  if (name.startsWith("@nestjs/")) pkg.devDependencies[name] = NEST12_MAJOR[name] ?? "^12.0.0";
pkg.devDependencies["@nats-io/transport-node"] = "^3.0.0";
fs.writeFileSync("package.json", JSON.stringify(pkg, null, 2));
const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
for (const key of Object.keys(lock.packages))
  if (/(^|\/)node_modules\/@nestjs\//.test(key)) delete lock.packages[key];
fs.writeFileSync("package-lock.json", JSON.stringify(lock, null, 2));
'
rm -rf node_modules/@nestjs
npm install --no-audit --no-fund --loglevel=error
node -e '
for (const name of ["@nestjs/common", "@nestjs/core", "@nestjs/microservices", "@nestjs/typeorm", "@nestjs/terminus", "@nestjs/swagger"]) {
  const v = JSON.parse(require("fs").readFileSync(`node_modules/${name}/package.json`, "utf8")).version;
  if (!v.startsWith("12.")) { console.error(`nest12: ${name} is ${v}, not 12.x`); process.exit(1); }
  console.log(`nest12: ${name} ${v}`);
}
for (const name of ["@nestjs/graphql", "@nestjs/apollo", "@nestjs/mercurius"]) {
  const v = JSON.parse(require("fs").readFileSync(`node_modules/${name}/package.json`, "utf8")).version;
  if (!v.startsWith("14.")) { console.error(`nest12: ${name} is ${v}, not 14.x`); process.exit(1); }
  console.log(`nest12: ${name} ${v}`);
}'

npx tsc -p tsconfig.build.json
npx jest -c test/nest12/jest.config.js --maxWorkers=1 \
  test/integration/http-contract.spec.ts \
  test/integration/rpc-idempotency.spec.ts \
  test/integration/graphql-idempotency.spec.ts \
  test/integration/outbox-sample-app.spec.ts \
  test/e2e/inbox-full-flow.spec.ts \
  test/e2e/rmq-connection-loss.spec.ts \
  test/unit/rmq-connection-loss.spec.ts \
  test/unit/outbox-client-proxy.publisher.spec.ts
echo "nest12: PASS (HTTP contract, @Idempotent() over NATS/RabbitMQ/TCP and on GraphQL mutations (Apollo, Mercurius), outbox to RabbitMQ/NATS, inbox end to end, RabbitMQ connection loss on Nest 12)"
