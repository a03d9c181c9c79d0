import { PROBLEM_TYPES, ProblemException } from '../http/idempotency.errors';

/** `type` of the 400 answer to an If-Match / If-None-Match header that cannot be parsed or is not supported. */
export const PRECONDITION_INVALID_TYPE =
  'urn:nestjs-exactly-once:problem:precondition-header-invalid';

/** 412: the precondition is false; nothing was written. */
export const preconditionFailed = (detail: string) =>
  new ProblemException({
    type: PROBLEM_TYPES.preconditionFailed,
    title: 'Precondition Failed',
    status: 412,
    detail,
  });

/** 428: the endpoint requires a conditional request. */
export const preconditionRequired = () =>
  new ProblemException({
    type: PROBLEM_TYPES.preconditionRequired,
    title: 'Precondition Required',
    status: 428,
    detail:
      'This endpoint requires a conditional request: send If-Match with the ETag of the version you read (or If-Match: * to replace any existing version), or If-None-Match: * to create.',
  });

/** 400: the header cannot be parsed, or its form is not supported for this method. */
export const invalidPreconditionHeader = (header: string, why: string) =>
  new ProblemException({
    type: PRECONDITION_INVALID_TYPE,
    title: `Invalid ${header} header`,
    status: 400,
    detail: `The ${header} header is invalid: ${why}.`,
  });
