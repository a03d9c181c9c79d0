/** Nest microservices' metadata keys (read by value: `@nestjs/microservices` is an optional peer). */
export const PATTERN_METADATA = 'microservices:pattern';
export const PATTERN_HANDLER_METADATA = 'microservices:handler_type';
/** `PatternHandler.EVENT` of `@nestjs/microservices`: a handler declared with `@EventPattern()`. */
export const EVENT_HANDLER = 2;
/** `PatternHandler.MESSAGE`: a handler declared with `@MessagePattern()` (a request, with a reply). */
export const MESSAGE_HANDLER = 1;
