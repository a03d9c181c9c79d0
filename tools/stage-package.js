#!/usr/bin/env node
/**
 * Stages the published package in dist/package (run by `npm run package`, after the build):
 * the manifest without what only this repository uses (scripts, devDependencies, overrides,
 * allowScripts, private), dist/lib, LICENSE, and the README with its relative links made
 * absolute to the repository (the registry page has no docs/ next to it). Publish with
 * `npm publish dist/package` (the root package.json is private, so the unstaged manifest cannot
 * be published by mistake); `npm pack dist/package` gives the tarball the consumer test installs.
 */
const {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} = require('node:fs');
const { join, relative } = require('node:path');

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

/** Relative README links → absolute links into the repository at its default branch. */
function absoluteLinks(markdown, repoUrl) {
  return markdown.replace(/\]\((?!https?:|mailto:|#)([^)\s]+)\)/g, (_, target) => {
    const path = target.replace(/^\.\//, '');
    return `](${repoUrl}/blob/main/${path})`;
  });
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
// Nothing test-only may ship: the fault suite's crash switch lives under test/.
for (const f of files(lib)) {
  if (/[\\/]testing[\\/]/.test(f) || readFileSync(f, 'utf8').includes('EO_TEST_FAULTS'))
    fail(`test-only code in the build: ${relative(root, f)}`);
}

const repoUrl = (pkg.repository?.url ?? '').replace(/^git\+/, '').replace(/\.git$/, '');
if (!repoUrl) fail('package.json has no repository.url');

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'dist'), { recursive: true });
cpSync(lib, join(out, 'dist', 'lib'), { recursive: true });
cpSync(join(root, 'LICENSE'), join(out, 'LICENSE'));
writeFileSync(
  join(out, 'README.md'),
  absoluteLinks(readFileSync(join(root, 'README.md'), 'utf8'), repoUrl),
);

const manifest = {};
for (const key of PUBLISHED) if (pkg[key] !== undefined) manifest[key] = pkg[key];
writeFileSync(join(out, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');

process.stdout.write(
  `stage-package: ${relative(root, out)} is ready (npm pack ${relative(root, out)} / npm publish ${relative(root, out)})\n`,
);
