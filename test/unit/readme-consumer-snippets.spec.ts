import { readFileSync } from 'node:fs';
import { posix } from 'node:path';

// Plain JS shared with the consumer test (test/consumer/run.js).
const { appFiles, commands, installCommands, TUTORIAL } = require('../consumer/readme-snippets');

/** The relative import specifiers of a TypeScript file, as written. */
const specifiers = (code: string) =>
  [...code.matchAll(/from\s+'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]);

/** The relative imports of a TypeScript file, as paths from the app's root (`./x.js` is x.ts). */
function relativeImports(file: string, code: string): string[] {
  return specifiers(code).map((s) =>
    posix.join(posix.dirname(file), s.replace(/\.js$/, '')).concat('.ts'),
  );
}

describe('docs/getting-started.md: the app the consumer test builds from it', () => {
  const markdown = readFileSync(TUTORIAL, 'utf8');

  it.each(['postgres', 'sqlite', 'mssql'])(
    'shows every file the %s app imports, and a main.ts, app.module.ts and data-source.ts',
    (kind) => {
      const files: Record<string, string> = appFiles(markdown, kind);
      for (const f of [
        'src/main.ts',
        'src/app.module.ts',
        'src/data-source.ts',
        'src/database.ts',
      ]) {
        expect(Object.keys(files)).toContain(f);
      }
      const missing = Object.entries(files).flatMap(([file, code]) =>
        relativeImports(file, code).filter((p) => !(p in files)),
      );
      expect(missing).toEqual([]);
    },
  );

  it('is code an ESM app (nodenext) and a CommonJS app both compile and run', () => {
    const files: Record<string, string> = {
      ...appFiles(markdown, 'postgres'),
      ...appFiles(markdown, 'sqlite'),
      ...appFiles(markdown, 'mssql'),
    };
    // nodenext in an ES module requires the extension; TypeScript maps .js to .ts in both.
    const withoutJs = Object.entries(files).flatMap(([file, code]) =>
      specifiers(code)
        .filter((s) => !s.endsWith('.js'))
        .map((s) => `${file}: ${s}`),
    );
    expect(withoutJs).toEqual([]);
    // CommonJS-only globals are a ReferenceError in an ES module; import.meta does not compile
    // to CommonJS.
    for (const [file, code] of Object.entries(files)) {
      expect({
        file,
        found: /\b(__dirname|__filename|require\(|import\.meta)/.exec(code)?.[0],
      }).toEqual({
        file,
        found: undefined,
      });
    }
  });

  it('installs with commands that resolve in a Nest 11 and a Nest 12 app (no major written in)', () => {
    const lines: string[] = installCommands(markdown);
    expect(lines.filter((l) => /@nestjs\/[\w-]+@\d/.test(l))).toEqual([]);
    expect(lines.some((l) => l.includes("require('@nestjs/core/package.json')"))).toBe(true);
  });

  it('connects to SQL Server from the environment, TLS per environment, with large TDS packets', () => {
    const code = appFiles(markdown, 'mssql')['src/database.ts'] as string;
    expect(code).toContain("type: 'mssql'");
    expect(code).toMatch(/port: Number\(process\.env\.DB_PORT/);
    expect(code).toMatch(/encrypt: process\.env\.DB_ENCRYPT/);
    expect(code).toMatch(/trustServerCertificate: process\.env\.DB_TRUST_SERVER_CERTIFICATE/);
    expect(code).toContain('packetSize: 32767');
  });

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
      // `@nestjs/x@$(node -p "…")` (the app's Nest major) is one package: its version dropped
      .map((c) => c.replace(/@\$\(node -p "[^"]*"\)/g, ''))
      .flatMap((c) => c.split(/\s+/).slice(2));
    expect(packages).toEqual(
      expect.arrayContaining([
        'nestjs-exactly-once',
        '@nestjs/typeorm',
        '@nestjs/microservices',
        'typeorm',
        'nestjs-cls',
        '@nestjs-cls/transactional',
        '@nestjs-cls/transactional-adapter-typeorm',
        'amqplib',
        'amqp-connection-manager',
        'pg',
        'better-sqlite3',
        'mssql',
      ]),
    );
  });

  it("allows better-sqlite3's install script (its native build) in package.json before installing it", () => {
    const lines: string[] = installCommands(markdown);
    const allow = lines.indexOf('npm pkg set allowScripts.better-sqlite3=true --json');
    const install = lines.findIndex((l) => /^npm install .*\bbetter-sqlite3\b/.test(l));
    expect(allow).toBeGreaterThanOrEqual(0);
    expect(install).toBeGreaterThan(allow);
  });
});
