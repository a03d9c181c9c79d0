import { join } from 'node:path';

/**
 * Node arguments that arm the fault suite's crash switch (test/support/crash-on-channel.js) in a
 * child process whose environment sets EO_TEST_FAULTS; none otherwise.
 */
export function faultPreload(env: Record<string, string | undefined>): string[] {
  return env.EO_TEST_FAULTS ? ['-r', join(__dirname, 'crash-on-channel.js')] : [];
}
