import { Controller, HttpCode, INestApplication, Patch, Post, Put } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiProperty,
  DocumentBuilder,
  SwaggerModule,
  type OpenAPIObject,
} from '@nestjs/swagger';
import { Idempotent } from '../../lib';
import { startAppOnDatabase, stopAppOnDatabase } from '../support/app-on-database';
import { createTestDatabase, type TestDatabase } from '../support/databases';
import { startOpsApp } from '../support/ops-fixture';
import { startSampleApp, type Platform } from '../support/sample-app';

class OrderDto {
  @ApiProperty()
  id!: string;
}

@Controller('orders')
class OrdersController {
  // @Idempotent() applied before @Post() (decorators run bottom-up).
  @Post()
  @Idempotent()
  create() {
    return {};
  }

  // @Idempotent() applied after @Post() and @HttpCode().
  @Idempotent({
    required: false,
    mismatchStatus: 409,
    headerName: 'X-Request-Key',
    maxKeyLength: 64,
  })
  @Post('optional')
  @HttpCode(202)
  optional() {
    return {};
  }

  @Post('typed')
  @Idempotent({ oversizedResponse: 'store-status-only' })
  @ApiCreatedResponse({ type: OrderDto, description: 'Created order' })
  typed() {
    return {};
  }

  @Put(':id')
  @Idempotent()
  @ApiConflictResponse({ description: 'Business conflict' })
  replace() {
    return {};
  }
}

@Idempotent()
@Controller('class-level')
class ClassLevelController {
  @Post()
  a() {
    return {};
  }

  @Patch()
  b() {
    return {};
  }
}

const PROBLEM_REF = '#/components/schemas/IdempotencyProblemDetails';

const headerParam = (op: any, name: string) =>
  (op.parameters ?? []).find((p: any) => p.in === 'header' && p.name === name);
const problemRef = (response: any) => response?.content?.['application/problem+json']?.schema?.$ref;

describe('OpenAPI documentation of @Idempotent()', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let doc: OpenAPIObject;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    app = await startOpsApp(
      db.url,
      { outbox: { relayEnabled: false }, cleanup: { enabled: false } },
      { controllers: [OrdersController, ClassLevelController] },
    );
    doc = SwaggerModule.createDocument(app, new DocumentBuilder().setTitle('t').build());
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('documents the key header as a required request parameter, with its length limit', () => {
    const op = doc.paths['/orders'].post as any;
    expect(headerParam(op, 'Idempotency-Key')).toMatchObject({
      in: 'header',
      required: true,
      schema: { type: 'string', maxLength: 255 },
    });
  });

  it('puts Idempotency-Replayed on the success response as a response header (not a request parameter)', () => {
    const op = doc.paths['/orders'].post as any;
    expect(headerParam(op, 'Idempotency-Replayed')).toBeUndefined();
    expect(op.responses['201']).toBeDefined();
    expect(op.responses['201'].headers['Idempotency-Replayed']).toMatchObject({
      schema: { type: 'string', enum: ['true'] },
    });
  });

  it('answers 400, 409 (with Retry-After) and 422 with problem+json bodies referencing one schema component', () => {
    const op = doc.paths['/orders'].post as any;
    for (const status of ['400', '409', '422']) {
      expect(problemRef(op.responses[status])).toBe(PROBLEM_REF);
    }
    expect(op.responses['409'].headers['Retry-After']).toMatchObject({
      schema: { type: 'integer' },
    });
    expect(op.responses['400'].headers?.['Idempotency-Replayed']).toBeUndefined();
    const schema = (doc.components?.schemas as any).IdempotencyProblemDetails;
    expect(schema.type).toBe('object');
    expect(Object.keys(schema.properties).sort()).toEqual(['detail', 'status', 'title', 'type']);
    expect(schema.required).toEqual(expect.arrayContaining(['type', 'title', 'status', 'detail']));
  });

  it('honours required: false, the header name, the key length, @HttpCode() and mismatchStatus 409', () => {
    const op = doc.paths['/orders/optional'].post as any;
    expect(headerParam(op, 'X-Request-Key')).toMatchObject({
      required: false,
      schema: { maxLength: 64 },
    });
    expect(headerParam(op, 'Idempotency-Key')).toBeUndefined();
    expect(op.responses['201']).toBeUndefined();
    expect(op.responses['202'].headers['Idempotency-Replayed']).toBeDefined();
    expect(op.responses['422']).toBeUndefined();
    expect(problemRef(op.responses['409'])).toBe(PROBLEM_REF);
    expect(op.responses['409'].description).toMatch(/in progress/);
    expect(op.responses['409'].description).toMatch(/different request/);
  });

  it("keeps the app's own responses and adds the replay headers to them", () => {
    const typed = doc.paths['/orders/typed'].post as any;
    expect(typed.responses['201'].description).toBe('Created order');
    expect(typed.responses['201'].content['application/json'].schema.$ref).toBe(
      '#/components/schemas/OrderDto',
    );
    expect(typed.responses['201'].headers['Idempotency-Replayed']).toBeDefined();
    expect(typed.responses['201'].headers['Idempotency-Replay-Body-Omitted']).toBeDefined();

    const put = doc.paths['/orders/{id}'].put as any;
    expect(put.responses['409'].description).toBe('Business conflict');
    expect(put.responses['200'].headers['Idempotency-Replayed']).toBeDefined();
  });

  it('documents every route of a controller decorated at class level', () => {
    const post = doc.paths['/class-level'].post as any;
    const patch = doc.paths['/class-level'].patch as any;
    expect(headerParam(post, 'Idempotency-Key')).toMatchObject({ required: true });
    expect(headerParam(patch, 'Idempotency-Key')).toMatchObject({ required: true });
    expect(post.responses['201'].headers['Idempotency-Replayed']).toBeDefined();
    expect(patch.responses['200'].headers['Idempotency-Replayed']).toBeDefined();
    expect(problemRef(patch.responses['422'])).toBe(PROBLEM_REF);
  });
});

describe.each<Platform>(['express', 'fastify'])('sample app OpenAPI document on %s', (platform) => {
  let db: TestDatabase;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    ({ db, app, url } = await startAppOnDatabase('sqlite', (dbUrl) =>
      startSampleApp(dbUrl, platform),
    ));
  });

  afterAll(() => stopAppOnDatabase({ app, db }));

  it('serves the document at /docs and /docs-json with POST /payments documented', async () => {
    for (const path of ['/docs', '/docs-json']) {
      const r = await fetch(`${url}${path}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toContain('application/json');
      const doc = (await r.json()) as any;
      expect(doc.openapi).toMatch(/^3\./);
      const op = doc.paths['/payments'].post;
      expect(headerParam(op, 'Idempotency-Key')).toMatchObject({ required: true });
      expect(op.responses['201'].headers['Idempotency-Replayed']).toBeDefined();
      expect(problemRef(op.responses['409'])).toBe(PROBLEM_REF);
      expect(problemRef(op.responses['422'])).toBe(PROBLEM_REF);
      expect(doc.components.schemas.IdempotencyProblemDetails).toBeDefined();
    }
  });

  if (platform === 'express') {
    it('sends a browser to Swagger UI', async () => {
      const r = await fetch(`${url}/docs`, {
        headers: { accept: 'text/html' },
        redirect: 'manual',
      });
      expect(r.status).toBe(302);
      expect(r.headers.get('location')).toBe('/docs/ui');
      const ui = await fetch(`${url}/docs/ui`);
      expect(ui.status).toBe(200);
      expect(await ui.text()).toContain('swagger-ui');
    });
  }
});
