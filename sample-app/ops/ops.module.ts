import { Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { IdempotencyAdminModule } from '../../lib';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';
import { shutdownTracing } from './tracing';

/** Exports the spans still buffered when the app shuts down. */
@Injectable()
class TracingShutdown implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await shutdownTracing();
  }
}

/**
 * Operations endpoints of the sample app: `GET /health` (terminus + the library's indicator),
 * `GET /metrics` (Prometheus text), the library's admin API under `/admin` and its operator's
 * console at `/admin/console`. The sample app leaves /admin open for demonstration; a real app
 * passes `guards` to protect it. The library refuses to mount an unguarded console with
 * NODE_ENV=production (the boot error names the fix), so the sample app, which has no admin
 * guard, leaves the console out in production and keeps starting as it always did.
 */
@Module({
  imports: [
    TerminusModule.forRoot(),
    IdempotencyAdminModule.register({
      path: 'admin',
      console: process.env.NODE_ENV !== 'production',
    }),
  ],
  controllers: [HealthController, MetricsController],
  providers: [TracingShutdown],
})
export class OpsModule {}
