import { ExactlyOnceError } from '../errors/exactly-once.error';

/**
 * One command of the `nestjs-exactly-once` CLI, in its own file under cli/commands/ and listed
 * once in cli.ts. `run` gets the arguments after the command's words and resolves to the exit
 * code: 0 done, 1 the check failed (e.g. `schema status` found differences), 2 bad usage or the
 * database could not be reached.
 */
export interface CliCommand {
  /** The words that select it, e.g. `schema sql`. */
  readonly name: string;
  /** Its synopsis and options, printed by `--help`. */
  readonly usage: string;
  run(args: string[]): Promise<number>;
}

/** Bad usage: the dispatcher prints the message and the command's usage, exit code 2. */
export class CliUsageError extends ExactlyOnceError {
  readonly code = 'CLI_USAGE';
}

/** The command could not do its work (e.g. the database cannot be reached): exit code 2. */
export class CliFailure extends ExactlyOnceError {
  readonly code = 'CLI_FAILURE';
}
