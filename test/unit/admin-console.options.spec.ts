import type { CanActivate } from '@nestjs/common';
import { IdempotencyAdminModule } from '../../lib';
import { assertConsoleGuarded } from '../../lib/maintenance/console/console.options';

const guard: CanActivate = { canActivate: () => true };

describe('the console refuses to be mounted unguarded in production', () => {
  const saved = process.env.NODE_ENV;
  afterEach(() => {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  });

  it('throws at registration with NODE_ENV=production and no guard, naming both fixes', () => {
    process.env.NODE_ENV = 'production';
    expect(() => IdempotencyAdminModule.register({ console: true })).toThrow(
      /guards: \[YourAdminGuard\], console: true.*console: \{ allowUnguarded: true \}/s,
    );
    expect(() => IdempotencyAdminModule.register({ console: { refreshSeconds: 10 } })).toThrow(
      'NODE_ENV=production',
    );
  });

  it('mounts with a guard, when told explicitly, outside production, and never without `console`', () => {
    process.env.NODE_ENV = 'production';
    expect(
      IdempotencyAdminModule.register({ console: true, guards: [guard] }).controllers,
    ).toHaveLength(2);
    expect(
      IdempotencyAdminModule.register({ console: { allowUnguarded: true } }).controllers,
    ).toHaveLength(2);
    expect(IdempotencyAdminModule.register({}).controllers).toHaveLength(1);
    expect(() => assertConsoleGuarded({ allowUnguarded: false, guards: [] })).toThrow();
    process.env.NODE_ENV = 'development';
    expect(IdempotencyAdminModule.register({ console: true }).controllers).toHaveLength(2);
  });
});
