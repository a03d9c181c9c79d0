import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiOkResponse, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { IdempotencyHealthIndicator } from '../../lib';

/**
 * `GET /health` through @nestjs/terminus: 200 `{ status: 'ok', info, error, details }` while the
 * outbox relay of this process polls and the oldest pending message is younger than the
 * threshold; 503 with the same body (status `error`) otherwise.
 */
@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly outbox: IdempotencyHealthIndicator,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  @Get()
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiOkResponse({ description: 'Healthy' })
  @ApiServiceUnavailableResponse({ description: 'Unhealthy: see error and details' })
  async check(@Res({ passthrough: true }) res: unknown) {
    try {
      return await this.health.check([() => this.outbox.isHealthy('outbox')]);
    } catch (e) {
      if (!(e instanceof ServiceUnavailableException)) throw e;
      // Keep terminus' body (which check failed and why) instead of a bare problem document.
      this.adapterHost.httpAdapter.status(res, 503);
      return e.getResponse();
    }
  }
}
