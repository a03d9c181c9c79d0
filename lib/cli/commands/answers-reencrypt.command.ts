import { DataSource } from 'typeorm';
import { dataSourceOptionsFromUrl } from '../database-url';
import { keysFromEnv, KeyRing } from '../../encryption/key-ring';
import {
  emptyReencryptReport,
  reencryptStoredAnswers,
  type ReencryptReport,
} from '../../encryption/reencrypt-stored-answers';
import {
  REENCRYPT_BAD_ARG,
  REENCRYPT_BAD_NUMBER,
  REENCRYPT_FAILED,
  REENCRYPT_LEFT,
  REENCRYPT_NO_KEYS,
  REENCRYPT_NO_URL,
  REENCRYPT_PROGRESS,
  REENCRYPT_USAGE,
} from './answers-reencrypt.messages';

interface ReencryptArgs {
  url: string;
  batchSize?: number;
  maxBatches?: number;
  after?: string;
  schema?: string;
  table?: string;
  acceptPlaintext: boolean;
}

/**
 * `nestjs-exactly-once answers reencrypt --url URL`: the re-encryption job from the command
 * line, with the ring from `IDEMPOTENCY_ENCRYPTION_KEYS`. Prints one progress line per batch on
 * stderr and the report (JSON) on stdout; resolves to the exit code.
 */
export const answersReencryptCommand = {
  name: 'answers reencrypt',
  usage: REENCRYPT_USAGE,
  run: async (args: string[]): Promise<number> => {
    let parsed: ReencryptArgs;
    let ring: KeyRing;
    try {
      if (args.includes('--help') || args.includes('-h')) {
        process.stdout.write(`${REENCRYPT_USAGE}\n`);
        return 0;
      }
      parsed = parseArgs(args);
      const keys = keysFromEnv(process.env.IDEMPOTENCY_ENCRYPTION_KEYS);
      if (!keys) throw new Error(REENCRYPT_NO_KEYS);
      ring = KeyRing.from({ keys, acceptPlaintext: parsed.acceptPlaintext });
    } catch (e) {
      process.stderr.write(`${(e as Error).message}\n`);
      return 2;
    }
    const dataSource = new DataSource(dataSourceOptionsFromUrl(parsed.url, '--url'));
    try {
      await dataSource.initialize();
    } catch (e) {
      process.stderr.write(`answers reencrypt: cannot connect: ${(e as Error).message}\n`);
      return 2;
    }
    const total = emptyReencryptReport(parsed.after);
    try {
      await runInBatches(dataSource, ring, parsed, total);
      process.stdout.write(`${JSON.stringify(total)}\n`);
      if (total.unreadable > 0 || total.plaintextLeft > 0) {
        process.stderr.write(
          `${REENCRYPT_LEFT(total.missingKeyIds, total.unreadable, total.plaintextLeft)}\n`,
        );
        return 1;
      }
      return 0;
    } catch (e) {
      process.stderr.write(`${REENCRYPT_FAILED((e as Error).message, total.cursor)}\n`);
      return 2;
    } finally {
      await dataSource.destroy();
    }
  },
};

/** One batch per call, a progress line after each, the counts added up in `total`. */
async function runInBatches(
  dataSource: DataSource,
  ring: KeyRing,
  a: ReencryptArgs,
  total: ReencryptReport,
): Promise<void> {
  const missing = new Set<string>();
  for (let batch = 0; a.maxBatches === undefined || batch < a.maxBatches; batch++) {
    const r = await reencryptStoredAnswers(dataSource, ring, {
      batchSize: a.batchSize,
      after: total.cursor,
      maxBatches: 1,
      schema: a.schema,
      table: a.table,
    });
    for (const k of [
      'scanned',
      'rewritten',
      'current',
      'changedMeanwhile',
      'plaintextLeft',
      'unreadable',
    ] as const) {
      total[k] += r[k];
    }
    r.missingKeyIds.forEach((k) => missing.add(k));
    total.cursor = r.cursor;
    total.done = r.done;
    process.stderr.write(`${REENCRYPT_PROGRESS(total.rewritten, total.scanned, total.cursor)}\n`);
    if (r.done) break;
  }
  total.missingKeyIds = [...missing].sort();
}

function parseArgs(args: string[]): ReencryptArgs {
  const out: ReencryptArgs = { url: '', acceptPlaintext: false };
  const count = (name: string, v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(REENCRYPT_BAD_NUMBER(name, v));
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--accept-plaintext') {
      out.acceptPlaintext = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === '') throw new Error(REENCRYPT_BAD_ARG(arg));
    switch (name) {
      case '--url':
        out.url = value;
        break;
      case '--batch-size':
        out.batchSize = count(name, value);
        break;
      case '--max-batches':
        out.maxBatches = count(name, value);
        break;
      case '--after':
        if (!/^\d{1,19}$/.test(value)) throw new Error(REENCRYPT_BAD_NUMBER(name, value));
        out.after = value;
        break;
      case '--schema':
        out.schema = value;
        break;
      case '--table':
        out.table = value;
        break;
      default:
        throw new Error(REENCRYPT_BAD_ARG(arg));
    }
  }
  if (!out.url) throw new Error(REENCRYPT_NO_URL);
  dataSourceOptionsFromUrl(out.url, '--url');
  return out;
}
