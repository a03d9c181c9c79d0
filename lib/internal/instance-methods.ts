import type { MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';

/** A method of a discovered instance: where the bootstrap explorers read a handler's metadata. */
export interface InstanceMethod {
  /** The instance's class. */
  metatype: NonNullable<InstanceWrapper['metatype']>;
  name: string;
  /** The method as its class's prototype has it. */
  handler: any;
}

/**
 * The methods of the discovered instances (controllers or providers) that have a class: each
 * method MetadataScanner lists on the instance's prototype, in its order.
 */
export function* instanceMethods(
  wrappers: readonly InstanceWrapper[],
  scanner: MetadataScanner,
): Generator<InstanceMethod> {
  for (const { instance, metatype } of wrappers) {
    if (!instance || typeof instance !== 'object' || !metatype) continue;
    const proto = Object.getPrototypeOf(instance);
    if (!proto) continue;
    for (const name of scanner.getAllMethodNames(proto)) {
      const handler = proto[name];
      if (typeof handler === 'function') yield { metatype, name, handler };
    }
  }
}
