// Conditional requests (ETag / If-Match): public API of the feature.
export { ConditionalUpdate } from './conditional-update.decorator';
export { ConditionalRead } from './conditional-read.decorator';
export { ConditionalInterceptor } from './conditional.interceptor';
export type { ConditionalUpdateOptions } from './conditional.interceptor';
export { ConditionalWriter } from './conditional-writer.service';
export type { ConditionalWriteResult, VersionedResult } from './conditional-writer.service';
export { ConditionalContext } from './conditional-context';
export { Preconditions, readPreconditions } from './preconditions';
export type { EntityId } from './versioned-entity';
export {
  formatEntityTag,
  parseEntityTag,
  parseEntityTagCondition,
  strongMatch,
  weakMatch,
} from './entity-tag';
export type { EntityTag, EntityTagCondition } from './entity-tag';
export { versionToETag } from './version-tag';
export { RowVersionColumn, allowRowVersionColumns } from './row-version';
export {
  preconditionFailed,
  preconditionRequired,
  PRECONDITION_INVALID_TYPE,
} from './conditional.errors';
