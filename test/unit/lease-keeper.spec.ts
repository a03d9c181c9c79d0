import { LeaseKeeper } from '../../lib/gate/lease-keeper';

describe('LeaseKeeper', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** Lets the keeper's timer fire and its renewal promise settle. */
  const third = async () => {
    await jest.advanceTimersByTimeAsync(1000);
  };

  it('renews every third of the lease until stopped', async () => {
    const renew = jest.fn(async () => true);
    const keeper = new LeaseKeeper(renew, 3000, () => undefined).start();
    await third();
    await third();
    await third();
    expect(renew).toHaveBeenCalledTimes(3);
    keeper.stop();
    await third();
    expect(renew).toHaveBeenCalledTimes(3);
  });

  it('stops by itself once the record is no longer ours', async () => {
    let calls = 0;
    const renew = jest.fn(async () => ++calls < 2);
    new LeaseKeeper(renew, 3000, () => undefined).start();
    for (let i = 0; i < 5; i++) await third();
    expect(renew).toHaveBeenCalledTimes(2);
  });

  it('keeps renewing after a failed renewal (reported), so one database hiccup does not let the lease lapse', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const renew = jest.fn(async () => {
      calls++;
      if (calls === 1 || calls === 2) throw new Error(`hiccup ${calls}`);
      return true;
    });
    const keeper = new LeaseKeeper(renew, 3000, (e) => errors.push(e)).start();
    for (let i = 0; i < 4; i++) await third();
    // Before: the keeper gave up at the first error and the lease lapsed one lease later.
    expect(renew).toHaveBeenCalledTimes(4);
    expect(errors.map((e) => (e as Error).message)).toEqual(['hiccup 1', 'hiccup 2']);
    keeper.stop();
  });

  it('starts renewals a third of the lease apart even when each statement is slow', async () => {
    const starts: number[] = [];
    const renew = jest.fn(async () => {
      starts.push(Date.now());
      await new Promise((r) => setTimeout(r, 600)); // a slow statement (loaded server)
      return true;
    });
    const t0 = Date.now();
    const keeper = new LeaseKeeper(renew, 3000, () => undefined).start();
    await jest.advanceTimersByTimeAsync(4000);
    keeper.stop();
    // Before: the next renewal was scheduled after the previous one ENDED (1000 + 600 apart).
    expect(starts.map((s) => s - t0)).toEqual([1000, 2000, 3000, 4000]);
  });
});
