import { answerAfterPoll } from '../../lib/gate/answer-after-poll';

/** The gate's answers from memory reach Nest after the event loop's poll phase, not at once. */
describe('answerAfterPoll', () => {
  const nextCheckPhase = () => new Promise((resolve) => setImmediate(resolve));

  it('hands the same answer over as an error, after the microtasks queued with it', async () => {
    const answer = { replay: true };
    const seen: string[] = [];
    let delivered: unknown;
    answerAfterPoll(answer).subscribe({
      next: () => seen.push('next'),
      complete: () => seen.push('complete'),
      error: (e) => {
        delivered = e;
        seen.push('answer');
      },
    });
    seen.push('subscribed');
    await Promise.resolve();
    await Promise.resolve();
    seen.push('microtasks');
    expect(delivered).toBeUndefined();
    await nextCheckPhase();
    expect(seen).toEqual(['subscribed', 'microtasks', 'answer']);
    expect(delivered).toBe(answer);
  });

  it('answers in the order asked, all in the same turn of the loop', async () => {
    const order: number[] = [];
    for (const n of [1, 2, 3]) answerAfterPoll(n).subscribe({ error: (e) => order.push(e) });
    expect(order).toEqual([]);
    await nextCheckPhase();
    expect(order).toEqual([1, 2, 3]);
  });

  it('an unsubscription before the answer drops it', async () => {
    const error = jest.fn();
    answerAfterPoll('late').subscribe({ error }).unsubscribe();
    await nextCheckPhase();
    await nextCheckPhase();
    expect(error).not.toHaveBeenCalled();
  });
});
