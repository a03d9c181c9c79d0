import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `--ablate`: the floor of a guarded first execution on PostgreSQL, measured in the same run.
 *
 * The installed tarball is unpacked a second time and, in that copy only, the PostgreSQL
 * ledger's two statements of a first execution in transactional mode are removed: the claim (the
 * key's advisory lock and its record, sent with START TRANSACTION) answers "free, no record"
 * without a statement, and the completed record's INSERT (sent with COMMIT) answers "written"
 * without one. Everything else the gate does stays: the interceptor, the key, the fingerprint,
 * the response capture and snapshot, the replay cache, the after-commit hooks, the span. The
 * copy runs as the second library app (where PEERS_BEFORE_TARBALL's build would), on
 * `/payments` only, so one run gives:
 *   (a-tx), the library, and the library without its two statements,
 * and with them what the two statements cost and what the rest of the gate costs, each as a
 * share of (a-tx). It is a diagnosis, not a configuration: the copy keeps no record and guards
 * nothing, and it is never installed anywhere else.
 */

/** The compiled dialect file the copy is patched in, relative to the package's root. */
const DIALECT = join('dist', 'lib', 'persistence', 'dialects', 'postgres', 'idempotency.sql.js');

/** Each statement's call in the compiled dialect, and what the copy answers instead. */
const CUTS: ReadonlyArray<{ call: RegExp; answer: string; what: string }> = [
  {
    what: 'the claim',
    call: /const \{ rows \} = await exec\(sql\.claim,/g,
    answer: 'return { locked: false, row: undefined };',
  },
  {
    what: "the completed record's INSERT",
    call: /const \{ rows \} = await exec\(sql\.insertCompleted,/g,
    answer: 'return true;',
  },
];

/**
 * Removes the two statements in the unpacked package at `packageDir`. Throws, naming what it did
 * not find, when the compiled code does not have the shape this patch expects (another build's
 * dialect): an ablation that silently removed nothing would read as a measurement.
 */
export function removeLedgerStatements(packageDir: string): void {
  const file = join(packageDir, DIALECT);
  if (!existsSync(file)) {
    throw new Error(`--ablate: ${file} is missing (not a build of this library?)`);
  }
  let code = readFileSync(file, 'utf8');
  for (const cut of CUTS) {
    const found = code.match(cut.call)?.length ?? 0;
    if (found !== 1) {
      throw new Error(
        `--ablate: ${cut.what} is called ${found} times in ${file}, expected once; this build's PostgreSQL dialect has another shape`,
      );
    }
    code = code.replace(cut.call, (call) => `${cut.answer} ${call}`);
  }
  writeFileSync(file, code);
}
