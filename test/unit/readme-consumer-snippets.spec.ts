import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// Plain JS shared with the consumer test (test/consumer/run.js).
const {
  installCommands,
  readmeSnippets,
  README,
  TEMPLATE,
} = require('../consumer/readme-snippets');

/** The template files the README shows: the wiring a user copies (not the demo handlers). */
const WIRING = [
  'src/app.module.ts',
  'src/main.ts',
  'src/messaging.module.ts',
  'src/data-source.ts',
  'src/database.postgres.ts',
  'src/database.sqlite.ts',
];

describe('README install section and the consumer test app (test/consumer/app-template)', () => {
  const markdown = readFileSync(README, 'utf8');
  const snippets: Array<{ name: string; code: string }> = readmeSnippets(markdown);

  it.each(WIRING)('shows %s exactly as the template app has it', (file) => {
    const shown = snippets.filter((s) => s.name === file);
    expect(shown).toHaveLength(1);
    expect(shown[0].code).toBe(readFileSync(join(TEMPLATE, file), 'utf8'));
  });

  it('marks only files the template has', () => {
    const files = snippets.map((s) => s.name).filter((n) => n !== 'install');
    expect(files.sort()).toEqual([...WIRING].sort());
  });

  it('installs the library, its peers, a publisher transport and the drivers the test runs on', () => {
    const commands: string[] = installCommands(markdown);
    const packages = commands.flatMap((c) => c.split(/\s+/).slice(2));
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
});
