import { Injectable } from '@nestjs/common';
import {
  isRmqServer,
  RMQ_CLOSE_TIMED_OUT,
  type RmqServerLike,
  watchRmqServer,
} from '../internal/rmq-connection-loss';
import { RMQ_CONSUME_FAILED, RMQ_SERVER_CHANNEL_ERROR } from './inbox.messages';
import { RpcServerFollower } from './rpc-server.follower';

/**
 * Keeps the app's RabbitMQ consumers (Nest's ServerRMQ, from `connectMicroservice()` /
 * `createMicroservice()`) from ending the process when their connection is lost while the channel
 * is being set up: the failure is logged and the server sets its channel and consumer up again on
 * the next connect (see internal/rmq-connection-loss.ts). Servers come from Nest's RPC target
 * registry, which adds each one when it is created, before it starts.
 * @internal
 */
@Injectable()
export class RmqServerWatcher extends RpcServerFollower<RmqServerLike> {
  protected isServer(target: unknown): target is RmqServerLike {
    return isRmqServer(target);
  }

  protected override onServer(server: RmqServerLike): void {
    watchRmqServer(
      server,
      (e) => this.logger.warn(RMQ_SERVER_CHANNEL_ERROR(e)),
      (queue, e) => this.logger.warn(RMQ_CONSUME_FAILED(queue, e)),
      (ms) => this.logger.warn(RMQ_CLOSE_TIMED_OUT('ServerRMQ', ms)),
    );
  }
}
