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
 * `GET /metrics` (Prometheus text), and the library's admin API under `/admin`. The sample app
 * leaves /admin open for demonstration; a real app passes `guards` to protect it.
 */
@Module({
  imports: [TerminusModule.forRoot(), IdempotencyAdminModule.register({ path: 'admin' })],
  controllers: [HealthController, MetricsController],
  providers: [TracingShutdown],
})
export class OpsModule {}
