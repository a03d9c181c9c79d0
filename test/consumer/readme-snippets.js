/**
 * The tutorial's app (docs/getting-started.md), as the consumer test builds it: each fenced code
 * block right after a `<!-- consumer:NAME -->` marker. NAME is a file of the user's app (`src/app.module.ts`;
 * `src/database.<kind>.ts` is the `src/database.ts` of that database), `install` (the
 * `npm install` and `npm pkg set` lines) or `migrate` (the build and TypeORM CLI lines). Nothing
 * else goes into the app: the unit test (test/unit/readme-consumer-snippets.spec.ts) checks that
 * every file an app file imports is shown.
 */
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

/** The page the tutorial's code blocks are read from. */
const TUTORIAL = join(__dirname, '..', '..', 'docs', 'getting-started.md');

/** `[{ name, code }]` in the page's order. */
function readmeSnippets(markdown = readFileSync(TUTORIAL, 'utf8')) {
  const out = [];
  const re = /<!--\s*consumer:(\S+)\s*-->\s*\n```[\w-]*\n([\s\S]*?)\n```/g;
  for (let m; (m = re.exec(markdown));) out.push({ name: m[1], code: m[2] + '\n' });
  return out;
}

/** The shell lines of the tutorial's `consumer:<name>` blocks, comments dropped. */
function commands(markdown, name) {
  return readmeSnippets(markdown)
    .filter((s) => s.name === name)
    .flatMap((s) => s.code.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line && !line.startsWith('#'));
}

/**
 * The npm lines of the tutorial's `consumer:install` blocks, in order: `npm install …`, and
 * `npm pkg set …` (what the app's package.json must say before an install, e.g. an allowed
 * install script).
 */
function installCommands(markdown) {
  return commands(markdown, 'install').filter(
    (line) => line.startsWith('npm install ') || line.startsWith('npm pkg set '),
  );
}

const DATABASE_VARIANT = /^src\/database\.(\w+)\.ts$/;

/**
 * The app's files for one database: `{ path: code }`, with `src/database.<kind>.ts` as
 * `src/database.ts` and the other variants left out.
 */
function appFiles(markdown, kind) {
  const files = {};
  for (const { name, code } of readmeSnippets(markdown)) {
    if (!name.startsWith('src/')) continue;
    const variant = DATABASE_VARIANT.exec(name);
    if (variant) {
      if (variant[1] === kind) files['src/database.ts'] = code;
    } else files[name] = code;
  }
  return files;
}

module.exports = { TUTORIAL, readmeSnippets, commands, installCommands, appFiles };
