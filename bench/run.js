#!/usr/bin/env node
'use strict';
/*
 * Benchmark runner: `npm run bench` (every suite) or `npm run bench -- <suite> [<suite>...] [suite args]`.
 *
 * A suite is a folder bench/<name>/ with an index.ts that default-exports a BenchSuite
 * (bench/support/bench-suite.ts); `npm run build` compiles it to dist/bench/<name>/index.js.
 * Each suite runs in its own child process (this script with --child), bounded by the suite's
 * maxDurationMs. The runner prints one table per suite result and writes the results as JSON
 * into .bench-results/ (<suite>-<timestamp>.json and <suite>-latest.json).
 *
 * Options: --list (list suites), --quick (short smoke runs, figures not meaningful),
 * --strict (exit 1 when a target check fails). Any other --flag=value is passed to the suites.
 */
const { fork, execFileSync } = require('node:child_process');
const { existsSync, mkdirSync, readdirSync, writeFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const BENCH = __dirname;
const DIST_BENCH = path.join(ROOT, 'dist', 'bench');
const RESULTS = path.join(ROOT, '.bench-results');
const NOT_SUITES = new Set(['support', 'node_modules']);

/** Suite folders: bench/<name>/index.ts (compiled into dist/bench/<name>/index.js). */
function discoverSuites() {
  return readdirSync(BENCH, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !NOT_SUITES.has(d.name) && !d.name.startsWith('.'))
    .filter((d) => existsSync(path.join(BENCH, d.name, 'index.ts')))
    .map((d) => d.name)
    .sort();
}

function suiteEntry(name) {
  return path.join(DIST_BENCH, name, 'index.js');
}

function loadSuite(name) {
  const entry = suiteEntry(name);
  if (!existsSync(entry))
    throw new Error(`${entry} does not exist: run "npm run build" first (npm run bench does).`);
  const mod = require(entry);
  const suite = mod.default ?? mod.suite;
  if (!suite || typeof suite.run !== 'function')
    throw new Error(
      `${entry} must default-export a BenchSuite ({ description, maxDurationMs, run(ctx) }).`,
    );
  return suite;
}

// ---------------------------------------------------------------------------------------------
// Child: runs one suite and sends its report to the parent.

async function child(name, args, quick) {
  const suite = loadSuite(name);
  const cleanups = [];
  let cleaning;
  const runCleanups = () =>
    (cleaning ??= (async () => {
      for (const fn of cleanups.reverse()) {
        try {
          await fn();
        } catch (e) {
          process.stderr.write(`[${name}] cleanup failed: ${e && e.message}\n`);
        }
      }
    })());
  // Stopped by the runner (time limit) or by Ctrl-C: stop servers and drop scratch databases first.
  process.once('SIGTERM', () => runCleanups().finally(() => process.exit(143)));
  process.once('SIGINT', () => runCleanups().finally(() => process.exit(130)));
  const outDir = path.join(RESULTS, name);
  mkdirSync(outDir, { recursive: true });
  const ctx = {
    args,
    quick,
    outDir,
    log: (m) => process.stderr.write(`[${name}] ${m}\n`),
    onCleanup: (fn) => cleanups.push(fn),
  };
  try {
    const report = await suite.run(ctx);
    await runCleanups();
    process.send({ ok: true, report });
  } catch (e) {
    await runCleanups();
    process.send({ ok: false, error: (e && e.stack) || String(e) });
  }
  process.disconnect();
}

// ---------------------------------------------------------------------------------------------
// Parent: picks suites, runs each in a child, prints and stores results.

let interrupted = false;

function runInChild(name, args, quick, maxDurationMs) {
  return new Promise((resolve) => {
    const started = Date.now();
    const cp = fork(__filename, ['--child', name, ...(quick ? ['--quick'] : []), ...args], {
      stdio: 'inherit',
    });
    let message;
    cp.on('message', (m) => (message = m));
    // Ctrl-C reaches the suite's process too, which cleans up and exits: wait for it.
    const onInterrupt = () => {
      interrupted = true;
      process.stderr.write(`[${name}] interrupted: cleaning up\n`);
    };
    const onTerminate = () => cp.kill('SIGTERM');
    process.on('SIGINT', onInterrupt);
    process.on('SIGTERM', onTerminate);
    const limit = maxDurationMs + 30_000;
    const timer = setTimeout(() => {
      process.stderr.write(`[${name}] exceeded ${Math.round(limit / 1000)} s: stopping it\n`);
      cp.kill('SIGTERM');
      setTimeout(() => cp.kill('SIGKILL'), 15_000).unref();
    }, limit);
    cp.on('exit', (code, signal) => {
      clearTimeout(timer);
      process.off('SIGINT', onInterrupt);
      process.off('SIGTERM', onTerminate);
      const seconds = (Date.now() - started) / 1000;
      if (message) resolve({ ...message, seconds });
      else
        resolve({
          ok: false,
          error: `suite process exited (${signal ?? code}) without a report`,
          seconds,
        });
    });
  });
}

function printTable(t) {
  const cells = [t.columns, ...t.rows].map((r) => r.map((c) => String(c)));
  const widths = t.columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const numeric = t.columns.map(
    (_, i) => t.rows.length > 0 && t.rows.every((r) => /^-?[\d.]+%?$|^-$/.test(String(r[i]))),
  );
  const line = (r) =>
    r.map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
  const out = [
    `\n${t.title}`,
    line(cells[0]),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...cells.slice(1).map(line),
  ];
  process.stdout.write(out.join('\n') + '\n');
}

function printReport(name, result) {
  process.stdout.write(`\n=== ${name} (${result.seconds.toFixed(0)} s) ===\n`);
  if (!result.ok) {
    process.stdout.write(`FAILED: ${result.error}\n`);
    return;
  }
  const { tables = [], checks = [], notes = [] } = result.report;
  for (const t of tables) printTable(t);
  if (checks.length) {
    printTable({
      title: 'Targets',
      columns: ['check', 'target', 'measured', ''],
      rows: checks.map((c) => [
        c.name,
        c.target,
        c.actual,
        c.informative ? (c.ok ? '(met)' : '(below)') : c.ok ? 'ok' : 'MISSED',
      ]),
    });
  }
  if (notes.length) process.stdout.write('\n' + notes.map((n) => `- ${n}`).join('\n') + '\n');
}

function gitCommit() {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

async function parent(argv) {
  const all = discoverSuites();
  if (argv.includes('--list')) {
    for (const name of all) {
      let description = '(not built: npm run build)';
      try {
        description = loadSuite(name).description;
      } catch {
        // not built
      }
      process.stdout.write(`${name.padEnd(24)} ${description}\n`);
    }
    return 0;
  }
  const quick = argv.includes('--quick');
  const strict = argv.includes('--strict');
  const names = argv.filter((a) => !a.startsWith('--'));
  const suiteArgs = argv.filter((a) => a.startsWith('--') && !['--quick', '--strict'].includes(a));
  const unknown = names.filter((n) => !all.includes(n));
  if (unknown.length) {
    process.stderr.write(
      `unknown suite(s): ${unknown.join(', ')}; available: ${all.join(', ') || '(none)'}\n`,
    );
    return 2;
  }
  const selected = names.length ? names : all;
  mkdirSync(RESULTS, { recursive: true });
  let failed = false;
  for (const name of selected) {
    let suite;
    try {
      suite = loadSuite(name);
    } catch (e) {
      printReport(name, { ok: false, error: e.message, seconds: 0 });
      failed = true;
      continue;
    }
    process.stderr.write(`\n[${name}] ${suite.description}\n`);
    const startedAt = new Date();
    const result = await runInChild(name, suiteArgs, quick, suite.maxDurationMs);
    printReport(name, result);
    const record = {
      suite: name,
      startedAt: startedAt.toISOString(),
      seconds: result.seconds,
      ok: result.ok,
      quick,
      args: suiteArgs,
      commit: gitCommit(),
      machine: {
        cores: os.cpus().length,
        cpu: os.cpus()[0] && os.cpus()[0].model.trim(),
        memoryMb: Math.round(os.totalmem() / 2 ** 20),
        node: process.version,
        platform: `${os.platform()} ${os.release()}`,
      },
      ...(result.ok ? result.report : { error: result.error }),
    };
    const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
    const file = path.join(RESULTS, `${name}-${stamp}.json`);
    writeFileSync(file, JSON.stringify(record, null, 2));
    writeFileSync(path.join(RESULTS, `${name}-latest.json`), JSON.stringify(record, null, 2));
    process.stdout.write(`\nresults: ${path.relative(ROOT, file)}\n`);
    if (!result.ok) failed = true;
    if (interrupted) break;
    if (strict && result.ok && (result.report.checks || []).some((c) => !c.ok && !c.informative))
      failed = true;
  }
  return failed ? 1 : 0;
}

const argv = process.argv.slice(2);
if (argv[0] === '--child') {
  const rest = argv.slice(2);
  child(
    argv[1],
    rest.filter((a) => a !== '--quick'),
    rest.includes('--quick'),
  ).catch((e) => {
    process.stderr.write(String((e && e.stack) || e) + '\n');
    process.exit(1);
  });
} else {
  parent(argv).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(String((e && e.stack) || e) + '\n');
      process.exit(1);
    },
  );
}
