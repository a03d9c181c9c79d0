import { channel } from 'node:diagnostics_channel';

/**
 * The sample app's own `node:diagnostics_channel` channels, beside the library's
 * (DIAGNOSTICS_CHANNELS). The fault suite's preload (test/support/crash-on-channel.js) kills the
 * process on them; nothing listens otherwise, and an unheard channel costs nothing.
 */
export const SAMPLE_CHANNELS = {
  /** The payment and its outbox event are written, the transaction has not committed. `{ paymentId }` */
  paymentsInHandler: channel('sample-app:payments.in-handler'),
  /** The ledger entry is written, the inbox transaction has not committed. `{ messageId }` */
  ledgerInHandler: channel('sample-app:ledger.in-handler'),
};
