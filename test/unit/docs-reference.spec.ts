import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Plain JS, also run by hand: `node tools/check-doc-links.js`.
const { brokenLinks, markdownFiles, slug } = require('../../tools/check-doc-links');

const ROOT = join(__dirname, '..', '..');

/**
 * TEMPORARY allow-list (issue 55): public exports whose files another branch is rewriting
 * (house55b: the module definition, the per-feature options, the error base class), so their
 * doc comments are written there. The lead empties this list after merging both branches;
 * TypeDoc warns about a name listed here that is documented or gone, so it cannot go stale.
 */
const NOT_YET_DOCUMENTED: string[] = [];

/** TypeDoc over the public entry points (typedoc.json), validation only, no output written. */
function runTypeDoc(): { status: number | null; output: string } {
  // typedoc's package.json exports no ./bin path, so the file is named where npm installs it.
  const typedoc = join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc');
  const r = spawnSync(
    process.execPath,
    [
      typedoc,
      '--options',
      join(ROOT, 'typedoc.json'),
      '--emit',
      'none',
      '--treatValidationWarningsAsErrors',
      ...NOT_YET_DOCUMENTED.flatMap((name) => ['--intentionallyNotDocumented', name]),
    ],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
  );
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('API reference (TypeDoc over lib/index.ts, lib/client/index.ts, lib/testing/index.ts)', () => {
  it('documents every public export: classes, interfaces, functions, constants, types, methods, accessors', () => {
    const { status, output } = runTypeDoc();
    const undocumented = output
      .split('\n')
      .filter((line) => line.includes('does not have any documentation'))
      .map((line) =>
        line
          .replace(/^.*\] /, '')
          .replace(/, defined in [^/]+\//, ' in ')
          .replace(/, does not have any documentation.*$/, ''),
      );
    expect(undocumented).toEqual([]);
    // Any other validation warning (a broken {@link}, an allow-listed name that is documented
    // now) fails too, with TypeDoc's own words.
    expect({ status, output: status === 0 ? '' : output }).toEqual({ status: 0, output: '' });
  }, 300_000);
});

describe('typedoc.json', () => {
  it('documents every entry point package.json exports (a new subpath joins the reference)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, string | { types?: string }>;
    };
    const fromExports = Object.values(pkg.exports)
      .map((e) => (typeof e === 'string' ? e : e.types))
      .filter((t): t is string => !!t && t.endsWith('.d.ts'))
      .map((t) => t.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts'))
      .sort();
    const config = JSON.parse(readFileSync(join(ROOT, 'typedoc.json'), 'utf8')) as {
      entryPoints: string[];
    };
    expect([...config.entryPoints].sort()).toEqual(fromExports);
  });
});

describe('links of README.md and docs/ (tools/check-doc-links.js)', () => {
  it('every relative link names a file of the repository and every #anchor a heading of its page', () => {
    expect(brokenLinks()).toEqual([]);
  });

  it('checks README.md and every page under docs/', () => {
    const files = (markdownFiles() as string[]).map((f) => f.slice(ROOT.length + 1));
    expect(files).toEqual(
      expect.arrayContaining(['README.md', 'docs/getting-started.md', 'docs/testing.md']),
    );
  });

  it('slugs headings as GitHub does', () => {
    expect(slug('Round trips of a first execution (issue #19)')).toBe(
      'round-trips-of-a-first-execution-issue-19',
    );
    expect(slug('problem+json errors (`problemDetailsFilter`)')).toBe(
      'problemjson-errors-problemdetailsfilter',
    );
    expect(slug('Microservice requests (`@MessagePattern`)')).toBe(
      'microservice-requests-messagepattern',
    );
    expect(slug('The demo: `npm run demo`')).toBe('the-demo-npm-run-demo');
  });

  it('reports a missing file, a missing anchor and a repeated heading past its count, not code', () => {
    const root = mkdtempSync(join(tmpdir(), 'eo-doc-links-'));
    try {
      mkdirSync(join(root, 'docs'));
      writeFileSync(
        join(root, 'README.md'),
        [
          '# Title',
          '[ok](docs/a.md#setup) [ok too](docs/a.md#setup-1) [here](#title)',
          '[gone](docs/missing.md) [no anchor](docs/a.md#nowhere) [third](docs/a.md#setup-2)',
          '`[in code](docs/missing.md)` [site](https://example.com/x)',
          '```',
          '[in a block](docs/missing.md)',
          '```',
        ].join('\n'),
      );
      writeFileSync(
        join(root, 'docs', 'a.md'),
        '# A\n\n## Setup\n\n## Setup\n\n[back](../README.md#title)\n',
      );
      const broken = brokenLinks(markdownFiles(root), root).map(
        (b: { file: string; line: number; target: string }) => `${b.file}:${b.line} ${b.target}`,
      );
      expect(broken).toEqual([
        'README.md:3 docs/missing.md',
        'README.md:3 docs/a.md#nowhere',
        'README.md:3 docs/a.md#setup-2',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
