#!/usr/bin/env node
/**
 * Stages the published package in dist/package (run by `npm run package`, after the build):
 * the manifest without what only this repository uses (scripts, devDependencies, overrides,
 * allowScripts, private), dist/lib, LICENSE, docs/ and the README. Relative links in the README
 * and docs/ stay relative when their target ships in the package (docs/…, LICENSE), so they
 * resolve in node_modules and in the unpacked tarball; a link to a file that does not ship (a
 * test, a source file) becomes its text alone. Publish with
 * `npm publish ./dist/package` (the root package.json is private, so the unstaged manifest cannot
 * be published by mistake); `npm pack ./dist/package` gives the tarball the consumer test installs.
 */
const {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} = require('node:fs');
const { dirname, join, relative } = require('node:path');

const root = join(__dirname, '..');
const out = join(root, 'dist', 'package');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** Fields of the published manifest, in this order; everything else stays in the repository. */
const PUBLISHED = [
  'name',
  'version',
  'description',
  'license',
  'keywords',
  'author',
  'repository',
  'homepage',
  'bugs',
  'main',
  'types',
  'bin',
  'exports',
  'typesVersions',
  'files',
  'engines',
  'dependencies',
  'peerDependencies',
  'peerDependenciesMeta',
  'publishConfig',
];

function fail(message) {
  process.stderr.write(`stage-package: ${message}\n`);
  process.exit(1);
}

/**
 * Relative links of a staged Markdown file: kept when the target ships in the package, else
 * replaced by their text. `dir` is the file's folder inside the package.
 */
function packageLinks(markdown, dir) {
  return markdown.replace(
    /\[([^\]]*)\]\((?!https?:|mailto:|#)([^)\s]+)\)/g,
    (link, text, target) => {
      const path = decodeURI(target.split('#')[0]);
      return path && existsSync(join(dir, path)) ? link : text;
    },
  );
}

/** The relative links of a staged Markdown file that do not resolve (none, after packageLinks). */
function brokenLinks(markdown, dir) {
  const out = [];
  for (const m of markdown.matchAll(/\[[^\]]*\]\((?!https?:|mailto:|#)([^)\s]+)\)/g)) {
    const path = decodeURI(m[1].split('#')[0]);
    if (path && !existsSync(join(dir, path))) out.push(m[1]);
  }
  return out;
}

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* files(p);
    else yield p;
  }
}

const lib = join(root, 'dist', 'lib');
if (!existsSync(join(lib, 'index.js')))
  fail('dist/lib/index.js is missing: run `npm run build` first');
// Nothing of this repository's tests may ship: the fault suite's crash switch lives under test/.
// The one `testing` folder that ships is the testing kit (`nestjs-exactly-once/testing`).
const kit = join(lib, 'testing');
for (const f of files(lib)) {
  const inKit = f.startsWith(kit + '/') || f.startsWith(kit + '\\');
  if ((!inKit && /[\\/]testing[\\/]/.test(f)) || readFileSync(f, 'utf8').includes('EO_TEST_FAULTS'))
    fail(`test-only code in the build: ${relative(root, f)}`);
}

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'dist'), { recursive: true });
cpSync(lib, join(out, 'dist', 'lib'), { recursive: true });
cpSync(join(root, 'LICENSE'), join(out, 'LICENSE'));
cpSync(join(root, 'docs'), join(out, 'docs'), { recursive: true });
cpSync(join(root, 'README.md'), join(out, 'README.md'));
const markdown = [
  join(out, 'README.md'),
  ...[...files(join(out, 'docs'))].filter((f) => f.endsWith('.md')),
];
for (const f of markdown) writeFileSync(f, packageLinks(readFileSync(f, 'utf8'), dirname(f)));
for (const f of markdown) {
  const broken = brokenLinks(readFileSync(f, 'utf8'), dirname(f));
  if (broken.length)
    fail(`${relative(out, f)} links to what the package does not hold: ${broken.join(', ')}`);
}

// The executables (package.json `bin`): there, with their shebang, and executable in the tarball.
for (const target of Object.values(pkg.bin ?? {})) {
  const file = join(out, target);
  if (!existsSync(file)) fail(`bin ${target} is missing: run \`npm run build\` first`);
  if (!readFileSync(file, 'utf8').startsWith('#!/usr/bin/env node'))
    fail(`bin ${target} does not start with #!/usr/bin/env node`);
  chmodSync(file, 0o755);
}

const manifest = {};
for (const key of PUBLISHED) if (pkg[key] !== undefined) manifest[key] = pkg[key];
writeFileSync(join(out, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');

process.stdout.write(
  `stage-package: ${relative(root, out)} is ready (npm pack ./${relative(root, out)} / npm publish ./${relative(root, out)})\n`,
);
