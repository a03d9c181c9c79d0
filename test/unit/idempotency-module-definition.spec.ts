import type { DynamicModule, Provider } from '@nestjs/common';
import { IdempotencyModule } from '../../lib';
import { IDEMPOTENCY_RAW_OPTIONS } from '../../lib/idempotency.constants';

/** The options provider a definition registers (the options as given, extras left out). */
function rawOptions(module: DynamicModule): unknown {
  const provider = (module.providers ?? []).find(
    (p: Provider) =>
      typeof p === 'object' && 'provide' in p && p.provide === IDEMPOTENCY_RAW_OPTIONS,
  );
  return provider && 'useValue' in provider ? provider.useValue : undefined;
}

describe('IdempotencyModule definition (ConfigurableModuleBuilder)', () => {
  it('is global by default and takes no options', () => {
    const module = IdempotencyModule.forRoot();
    expect(module.module).toBe(IdempotencyModule);
    expect(module.global).toBe(true);
    expect(rawOptions(module)).toEqual({});
  });

  it('isGlobal: false makes a module local to its importer; the extra is not an option', () => {
    const module = IdempotencyModule.forRoot({ isGlobal: false, headerName: 'X-Key' });
    expect(module.global).toBe(false);
    expect(rawOptions(module)).toEqual({ headerName: 'X-Key' });
  });

  it('forRootAsync adds the extra providers beside the factory and keeps the imports', () => {
    const token = 'CONFIG';
    class Imported {}
    const module = IdempotencyModule.forRootAsync({
      imports: [Imported],
      extraProviders: [{ provide: token, useValue: { ttl: 5 } }],
      inject: [token],
      useFactory: (c: { ttl: number }) => ({ ttl: c.ttl }),
    });
    expect(module.global).toBe(true);
    expect(module.imports).toContain(Imported);
    expect(module.providers).toContainEqual({ provide: token, useValue: { ttl: 5 } });
  });

  it('forRootAsync without useFactory, useClass or useExisting fails when registered, naming the fix', () => {
    expect(() => IdempotencyModule.forRootAsync({ imports: [] })).toThrow(
      'IdempotencyModule.forRootAsync() needs useFactory, useClass or useExisting.',
    );
  });
});
