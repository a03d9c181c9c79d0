import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { OpenAPIObject } from '@nestjs/swagger';

/**
 * Serves the sample app's OpenAPI document:
 * - `GET /docs`: the document as JSON, or (a browser asking for text/html, Express) a redirect to the UI
 * - `GET /docs-json`: the document as JSON
 * - `GET /docs/ui`: Swagger UI (Express; Fastify would need @fastify/static)
 */
export function setupDocs(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('nestjs-exactly-once sample app')
    .setDescription(
      'Payments with HTTP idempotency keys (Idempotency-Key), a transactional outbox, an inbox and operations endpoints.',
    )
    .setVersion('0.1.0')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  const adapter = app.getHttpAdapter();
  const express = adapter.getType() === 'express';
  SwaggerModule.setup('docs/ui', app, document, {
    jsonDocumentUrl: 'docs-json',
    yamlDocumentUrl: 'docs-yaml',
    ui: express,
  });
  const json = JSON.stringify(document);
  adapter.get('/docs', (req: any, res: any) => {
    const accept = String(req.headers?.accept ?? '');
    if (express && /text\/html/.test(accept)) return adapter.redirect(res, 302, '/docs/ui');
    adapter.setHeader(res, 'Content-Type', 'application/json; charset=utf-8');
    return adapter.reply(res, json, 200);
  });
  return document;
}
