import type { ProxyStats } from './flaky-proxy';
import type { StormStats } from './storm';

/** Everything the view shows, read at each redraw. */
export interface DemoSnapshot {
  /** One or two short lines (kept under 100 columns: a wrapped line would break the redraw). */
  title: string[];
  elapsedMs: number;
  phase: string;
  intended: number;
  storm: StormStats;
  proxy: ProxyStats;
  /** Rows in the database now (undefined until the first read). */
  paymentsCreated?: number;
  ledgerEntries?: number;
}

const ESC = '\x1b[';
const bold = (s: string, tty: boolean) => (tty ? `${ESC}1m${s}${ESC}22m` : s);
const color = (s: string, code: number, tty: boolean) => (tty ? `${ESC}${code}m${s}${ESC}39m` : s);

export function bar(value: number, total: number, width = 28): string {
  const ratio = total > 0 ? Math.max(0, Math.min(1, value / total)) : 0;
  const full = Math.round(ratio * width);
  return '█'.repeat(full) + '░'.repeat(width - full);
}

/** The table, one string per line. */
export function renderLines(s: DemoSnapshot, tty: boolean): string[] {
  const st = s.storm;
  const p = s.proxy;
  const r = st.retries;
  const retries = r['network-error'] + r.timeout + r['in-progress'] + r.status;
  const created = s.paymentsCreated;
  const ledger = s.ledgerEntries;
  const match = (v: number | undefined) =>
    v === undefined
      ? '…'
      : v === s.intended
        ? color(`${v} = intended`, 32, tty)
        : v > s.intended
          ? color(`${v} > intended (duplicates!)`, 31, tty)
          : `${v}`;
  return [
    ...s.title.map((t, i) => (i === 0 ? bold(t, tty) : t)),
    `${s.phase.padEnd(44)} ${(s.elapsedMs / 1000).toFixed(1).padStart(6)} s`,
    '',
    `  logical payments  ${bar(st.done, s.intended)} ${st.done} / ${s.intended} answered` +
      (st.gaveUp ? color(` (${st.gaveUp} gave up)`, 31, tty) : ''),
    `  attempts          ${st.attempts} sent, ${retries} retried: ${r.timeout} time-outs, ` +
      `${r['network-error']} network errors, ${r['in-progress']} × 409, ${r.status} × 5xx/429`,
    `  flaky link        ${p.requests} requests: ${p.faults.reset} reset, ${p.faults.cut} cut, ` +
      `${p.faults.drop} dropped, ${p.faults.delay} delayed`,
    `  server answered   ${p.upstream.created} new, ${p.upstream.replayed} replayed, ` +
      `${p.upstream.inProgress} × 409 in progress, ${p.upstream.other} other`,
    `  clients got       ${st.answered.size} payments, ${st.replayedAnswers} as a replay`,
    '',
    `  payments created  ${bar(created ?? 0, s.intended)} ${match(created)}`,
    `  ledger entries    ${bar(ledger ?? 0, s.intended)} ${match(ledger)}`,
  ];
}

/** Redraws in place on a terminal; prints a plain line now and then otherwise. */
export class LiveView {
  private drawn = 0;
  private lastPlain = 0;
  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly tty = Boolean(out.isTTY) && process.env.TERM !== 'dumb',
  ) {}

  draw(s: DemoSnapshot, force = false): void {
    if (this.tty) {
      const lines = renderLines(s, true);
      let text = this.drawn ? `${ESC}${this.drawn}A` : `${ESC}?25l`;
      for (const line of lines) text += `${ESC}2K${line}\n`;
      this.out.write(text);
      this.drawn = lines.length;
      return;
    }
    if (!force && s.elapsedMs - this.lastPlain < 2000) return;
    this.lastPlain = s.elapsedMs;
    const st = s.storm;
    this.out.write(
      `[${(s.elapsedMs / 1000).toFixed(1)} s] ${s.phase}: answered ${st.done}/${s.intended}, ` +
        `attempts ${st.attempts}, time-outs ${st.retries.timeout}, network errors ${st.retries['network-error']}, ` +
        `409 ${st.retries['in-progress']}, replayed answers ${st.replayedAnswers}, ` +
        `payments ${s.paymentsCreated ?? '?'}, ledger ${s.ledgerEntries ?? '?'}\n`,
    );
  }

  /** Shows the cursor again (also on Ctrl-C). */
  end(): void {
    if (this.tty) this.out.write(`${ESC}?25h`);
  }
}
