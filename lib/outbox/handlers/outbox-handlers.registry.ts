import { Injectable } from '@nestjs/common';
import type { OutboxHandlerEntry } from './outbox-handler.interface';
import { HANDLER_NAME_TWICE } from '../outbox.messages';

/** The `@OnOutboxMessage()` handlers of the app, by message type (filled at boot by the explorer). */
@Injectable()
export class OutboxHandlersRegistry {
  private readonly byType = new Map<string, OutboxHandlerEntry[]>();
  private readonly names = new Map<string, string>();

  /** @internal */
  add(type: string, entry: OutboxHandlerEntry, owner: string): void {
    const known = this.names.get(entry.name);
    if (known !== undefined && known !== owner) throw new Error(HANDLER_NAME_TWICE(entry.name));
    this.names.set(entry.name, owner);
    const list = this.byType.get(type) ?? [];
    list.push(entry);
    this.byType.set(type, list);
  }

  /** The handlers of a message type, in discovery order (empty when none). */
  handlersOf(type: string): readonly OutboxHandlerEntry[] {
    return this.byType.get(type) ?? [];
  }

  /** The handled types. */
  types(): string[] {
    return [...this.byType.keys()];
  }

  /** Every handler's name. */
  handlerNames(): string[] {
    return [...this.names.keys()];
  }
}
