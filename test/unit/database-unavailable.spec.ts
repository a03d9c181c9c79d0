import BetterSqlite3 from 'better-sqlite3';
import { DatabaseError } from 'pg-protocol';
import { RequestError as TediousRequestError } from 'tedious';
import { QueryFailedError, QueryRunnerAlreadyReleasedError } from 'typeorm';
import {
  isDatabaseConnectionLost,
  isDatabaseUnavailable,
} from '../../lib/persistence/database-unavailable';

// mssql ships no type declarations (the library reaches it only through TypeORM).
const mssql = require('mssql') as {
  RequestError: new (message: string | Error, code?: string) => Error;
  ConnectionError: new (message: string, code?: string) => Error;
};

/** Errors built with the drivers' own classes, the way each driver builds them. */
const pg = (code: string, message: string) => {
  const e = new DatabaseError(message, message.length, 'error');
  e.code = code;
  return new QueryFailedError('SELECT 1', [], e);
};
const mysql = (code: string, errno: number | undefined, sqlState: string | undefined) => {
  const e = Object.assign(new Error(code), { code, errno, sqlState, fatal: errno === undefined });
  return new QueryFailedError('SELECT 1', [], e);
};
const tedious = (number: number, message: string) => {
  const t = Object.assign(new TediousRequestError(message, 'EREQUEST'), { number });
  return new QueryFailedError('SELECT 1', [], new mssql.RequestError(t, 'EREQUEST'));
};
/** What tedious answers a request made on a connection in `state` (Connection#makeRequest). */
const tediousState = (state: string) => {
  const t = new TediousRequestError(
    `Requests can only be made in the LoggedIn state, not the ${state} state`,
    'EINVALIDSTATE',
  );
  return new QueryFailedError('INSERT', [], new mssql.RequestError(t, 'EINVALIDSTATE'));
};
/** What mssql gave for a session killed mid-statement (Babelfish, loaded): only the socket's text. */
const mssqlSocketText = () =>
  new QueryFailedError('INSERT', [], new mssql.RequestError('Error: read ECONNRESET', 'EREQUEST'));
const sqlite = (code: string) =>
  new QueryFailedError('INSERT', [], new BetterSqlite3.SqliteError('sqlite says no', code));

describe('isDatabaseUnavailable', () => {
  it.each([
    [
      'pg: administrator shutdown (57P01)',
      pg('57P01', 'terminating connection due to administrator command'),
    ],
    ['pg: connection failure (08006)', pg('08006', 'connection failure')],
    ['pg: too many connections (53300)', pg('53300', 'sorry, too many clients already')],
    ['pg: deadlock (40P01)', pg('40P01', 'deadlock detected')],
    ['pg: serialization failure (40001)', pg('40001', 'could not serialize access')],
    ['pg: lock time-out (55P03)', pg('55P03', 'canceling statement due to lock timeout')],
    [
      'pg: socket closed',
      new QueryFailedError('SELECT 1', [], new Error('Connection terminated unexpectedly')),
    ],
    ['pg pool: connect time-out', new Error('timeout exceeded when trying to connect')],
    [
      'socket: ECONNREFUSED',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    ],
    ['mysql2: connection lost', mysql('PROTOCOL_CONNECTION_LOST', undefined, undefined)],
    ['mysql2: deadlock (1213)', mysql('ER_LOCK_DEADLOCK', 1213, '40001')],
    ['mysql2: lock wait time-out (1205)', mysql('ER_LOCK_WAIT_TIMEOUT', 1205, 'HY000')],
    ['mysql2: server gone (2006)', mysql('CR_SERVER_GONE_ERROR', 2006, 'HY000')],
    ['mssql: deadlock victim (1205)', tedious(1205, 'Transaction (Process ID 52) was deadlocked')],
    [
      'mssql: lock request time-out (1222)',
      tedious(1222, 'Lock request time out period exceeded.'),
    ],
    [
      'mssql: Azure SQL database unavailable (40613)',
      tedious(40613, 'Database is not currently available.'),
    ],
    [
      'mssql: connection lost',
      new mssql.ConnectionError('Connection lost - read ECONNRESET', 'ESOCKET'),
    ],
    [
      'mssql: statement on a connection the server ended (session killed mid-transaction)',
      tediousState('Final'),
    ],
    ['mssql: a reset socket reported by its text (EREQUEST)', mssqlSocketText()],
    ['sqlite: database busy', sqlite('SQLITE_BUSY')],
    ['typeorm: released query runner', new QueryRunnerAlreadyReleasedError()],
  ])('%s: unavailable', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['pg: unique violation (23505)', pg('23505', 'duplicate key value violates unique constraint')],
    ['pg: syntax error (42601)', pg('42601', 'syntax error at or near "SELEC"')],
    ['pg: value too long (22001)', pg('22001', 'value too long for type character varying(3)')],
    ['mysql2: duplicate entry (1062)', mysql('ER_DUP_ENTRY', 1062, '23000')],
    ['mssql: duplicate key (2627)', tedious(2627, 'Violation of PRIMARY KEY constraint')],
    [
      'mssql: cannot open database (4060)',
      tedious(4060, 'Cannot open database "x" requested by the login.'),
    ],
    [
      'mssql: request while another runs on the same connection (a fault of the code)',
      tediousState('SentClientRequest'),
    ],
    ['sqlite: constraint', sqlite('SQLITE_CONSTRAINT_UNIQUE')],
    ['a plain error', new Error('boom')],
    ['not an error', 'boom'],
    ['nothing', undefined],
  ])('%s: not unavailable', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it('stops on a cyclic cause chain', () => {
    const a: any = new Error('a');
    const b: any = new Error('b');
    a.cause = b;
    b.cause = a;
    expect(isDatabaseUnavailable(a)).toBe(false);
  });
});

describe('isDatabaseConnectionLost', () => {
  it.each([
    [
      'pg: administrator shutdown (57P01)',
      pg('57P01', 'terminating connection due to administrator command'),
    ],
    [
      'pg: socket closed',
      new QueryFailedError('SELECT 1', [], new Error('Connection terminated unexpectedly')),
    ],
    ['mysql2: connection lost', mysql('PROTOCOL_CONNECTION_LOST', undefined, undefined)],
    ['mysql2: server gone (2006)', mysql('CR_SERVER_GONE_ERROR', 2006, 'HY000')],
    ['mssql: statement on a connection the server ended (session killed)', tediousState('Final')],
    [
      'mssql: connection reset under a statement',
      new QueryFailedError(
        'INSERT',
        [],
        new mssql.RequestError(
          Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
          'ECONNRESET',
        ),
      ),
    ],
    ['mssql: a reset socket reported by its text (EREQUEST)', mssqlSocketText()],
    ['typeorm: released query runner', new QueryRunnerAlreadyReleasedError()],
  ])('%s: lost', (_name, error) => {
    expect(isDatabaseConnectionLost(error)).toBe(true);
  });

  it.each([
    // Unavailable for now, but the connection (and a transaction on it) is still there.
    ['pg: deadlock (40P01)', pg('40P01', 'deadlock detected')],
    ['mssql: deadlock victim (1205)', tedious(1205, 'Transaction (Process ID 52) was deadlocked')],
    [
      'mssql: lock request time-out (1222)',
      tedious(1222, 'Lock request time out period exceeded.'),
    ],
    ['mssql: request while another runs (a fault of the code)', tediousState('SentClientRequest')],
    ['sqlite: database busy', sqlite('SQLITE_BUSY')],
    // Not a statement of the database: a handler's own HTTP call that was reset.
    [
      'a socket error of another client',
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
    ],
    ['a plain error', new Error('boom')],
    ['nothing', undefined],
  ])('%s: not lost', (_name, error) => {
    expect(isDatabaseConnectionLost(error)).toBe(false);
  });
});
