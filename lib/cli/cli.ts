import type { CliCommand } from './cli-command';
import { CliFailure, CliUsageError } from './cli-command';
import { UNKNOWN_COMMAND } from './cli.messages';
import { answersReencryptCommand } from './commands/answers-reencrypt.command';
import { schemaMigrateCommand } from './commands/schema-migrate.command';
import { schemaSqlCommand } from './commands/schema-sql.command';
import { schemaStatusCommand } from './commands/schema-status.command';

/** Every command of the CLI: one file each under commands/, one line each here. */
export const COMMANDS: readonly CliCommand[] = [
  schemaSqlCommand,
  schemaStatusCommand,
  schemaMigrateCommand,
  answersReencryptCommand,
];

const PROGRAM = 'nestjs-exactly-once';

function help(commands: readonly CliCommand[]): string {
  return [
    `Usage: ${PROGRAM} <command> [options]`,
    '',
    ...commands.map((c) => `${PROGRAM} ${c.usage}\n`),
    `Exit codes: 0 done, 1 the check failed, 2 bad usage or the database cannot be reached.`,
    '',
  ].join('\n');
}

/**
 * Runs the command named by the first words of `argv` (the arguments after the program) and
 * resolves to the process' exit code. Never throws: errors become a message on stderr.
 */
export async function runCli(
  argv: string[],
  commands: readonly CliCommand[] = COMMANDS,
): Promise<number> {
  const command = [...commands]
    .sort((a, b) => b.name.split(' ').length - a.name.split(' ').length)
    .find((c) => {
      const words = c.name.split(' ');
      return words.every((w, i) => argv[i] === w);
    });
  if (!command) {
    if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
      process.stdout.write(help(commands));
      return argv.length === 0 ? 2 : 0;
    }
    const given = argv
      .filter((a) => !a.startsWith('-'))
      .slice(0, 2)
      .join(' ');
    process.stderr.write(
      `${PROGRAM}: ${UNKNOWN_COMMAND(
        given,
        commands.map((c) => c.name),
      )}\n`,
    );
    return 2;
  }
  const args = argv.slice(command.name.split(' ').length);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`Usage: ${PROGRAM} ${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(args);
  } catch (e) {
    if (e instanceof CliUsageError) {
      process.stderr.write(
        `${PROGRAM} ${command.name}: ${e.message}\n\nUsage: ${PROGRAM} ${command.usage}\n`,
      );
      return 2;
    }
    if (e instanceof CliFailure) {
      process.stderr.write(`${PROGRAM} ${command.name}: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(`${PROGRAM} ${command.name}: ${(e as Error).message ?? String(e)}\n`);
    return 1;
  }
}
