/**
 * The README's consumer snippets: each fenced code block right after a `<!-- consumer:NAME -->`
 * marker. NAME is a file of test/consumer/app-template (`src/app.module.ts`) or `install` (shell
 * commands the consumer test runs). Shared by the consumer test (run.js) and the unit test that
 * keeps the README and the template the same.
 */
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const README = join(__dirname, '..', '..', 'README.md');
const TEMPLATE = join(__dirname, 'app-template');

/** `[{ name, code }]` in README order. */
function readmeSnippets(markdown = readFileSync(README, 'utf8')) {
  const out = [];
  const re = /<!--\s*consumer:(\S+)\s*-->\s*\n```[\w-]*\n([\s\S]*?)\n```/g;
  for (let m; (m = re.exec(markdown));) out.push({ name: m[1], code: m[2] + '\n' });
  return out;
}

/** The `npm install …` lines of the README's `consumer:install` blocks. */
function installCommands(markdown) {
  return readmeSnippets(markdown)
    .filter((s) => s.name === 'install')
    .flatMap((s) => s.code.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.startsWith('npm install '));
}

module.exports = { README, TEMPLATE, readmeSnippets, installCommands };
