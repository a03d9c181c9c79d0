import { LedgerEntry } from './ledger/ledger-entry.entity';
import { AppTables1767225600000 } from './migrations/1767225600000-app-tables';
import { Payment } from './payments/payment.entity';

/** The app's own entities and migrations, next to the library's in ./database.ts. */
export const entities = [Payment, LedgerEntry];
export const migrations = [AppTables1767225600000];
