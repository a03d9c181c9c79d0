import { readFileSync } from 'node:fs';
import { posix } from 'node:path';

// Plain JS shared with the consumer test (test/consumer/run.js).
const { appFiles, commands, installCommands, README } = require('../consumer/readme-snippets');

/** The relative imports of a TypeScript file, as paths from the app's root. */
function relativeImports(file: string, code: string): string[] {
  const out: string[] = [];
  for (const m of code.matchAll(/from\s+'(\.{1,2}\/[^']+)'/g))
    out.push(posix.join(posix.dirname(file), m[1]) + '.ts');
  return out;
}

describe('README install section: the app the consumer test builds from it', () => {
  const markdown = readFileSync(README, 'utf8');

  it.each(['postgres', 'sqlite'])(
    'shows every file the %s app imports, and a main.ts, app.module.ts and data-source.ts',
    (kind) => {
      const files: Record<string, string> = appFiles(markdown, kind);
      for (const f of ['src/main.ts', 'src/app.module.ts', 'src/data-source.ts', 'src/database.ts'])
        expect(Object.keys(files)).toContain(f);
      const missing = Object.entries(files).flatMap(([file, code]) =>
        relativeImports(file, code).filter((p) => !(p in files)),
      );
      expect(missing).toEqual([]);
    },
  );

  it('shows the consumer, the guarded endpoint and the outbox write the feature needs', () => {
    const code = Object.values(appFiles(markdown, 'postgres') as Record<string, string>).join('\n');
    expect(code).toContain('@IdempotentConsumer()');
    expect(code).toContain('@Idempotent()');
    expect(code).toContain('this.outbox.add(');
    expect(code).toContain('noAck: false');
  });

  it("generates the user's own migration with the TypeORM CLI, after the library's", () => {
    const lines: string[] = commands(markdown, 'migrate');
    const generate = lines.findIndex((l) => l.includes('typeorm migration:generate'));
    const firstRun = lines.findIndex((l) => l.includes('typeorm migration:run'));
    expect(firstRun).toBeGreaterThanOrEqual(0);
    expect(generate).toBeGreaterThan(firstRun);
    expect(lines.slice(generate).some((l) => l.includes('typeorm migration:run'))).toBe(true);
  });

  it('installs the library, its peers, a publisher transport and the drivers the test runs on', () => {
    const packages = (installCommands(markdown) as string[])
      .filter((c) => c.startsWith('npm install '))
      .flatMap((c) => c.split(/\s+/).slice(2));
    expect(packages).toEqual(
      expect.arrayContaining([
        'nestjs-exactly-once',
        '@nestjs/typeorm',
        'typeorm',
        'nestjs-cls',
        '@nestjs-cls/transactional',
        '@nestjs-cls/transactional-adapter-typeorm',
        'amqplib',
        'amqp-connection-manager',
        'pg',
        'better-sqlite3',
      ]),
    );
    expect(packages.some((p) => p.startsWith('@nestjs/microservices'))).toBe(true);
  });

  it("allows better-sqlite3's install script (its native build) in package.json before installing it", () => {
    const lines: string[] = installCommands(markdown);
    const allow = lines.indexOf('npm pkg set allowScripts.better-sqlite3=true --json');
    const install = lines.findIndex((l) => /^npm install .*\bbetter-sqlite3\b/.test(l));
    expect(allow).toBeGreaterThanOrEqual(0);
    expect(install).toBeGreaterThan(allow);
  });
});
