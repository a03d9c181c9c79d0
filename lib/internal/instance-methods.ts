import { Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
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

/**
 * The methods of the app's controllers and of its providers, for the explorers that check
 * handlers at bootstrap.
 * @internal
 */
@Injectable()
export class DiscoveredMethods {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  /** The methods of the app's controllers. */
  ofControllers(): Generator<InstanceMethod> {
    return instanceMethods(this.discovery.getControllers(), this.scanner);
  }

  /** The methods of the app's providers. */
  ofProviders(): Generator<InstanceMethod> {
    return instanceMethods(this.discovery.getProviders(), this.scanner);
  }
}
