import { problem, PROBLEM_TYPES } from '../problem-details';

/** `type` of the 400 answer to an If-Match / If-None-Match header that cannot be parsed or is not supported. */
export const PRECONDITION_INVALID_TYPE = PROBLEM_TYPES.preconditionInvalid;

/** 412: the precondition is false; nothing was written. */
export const preconditionFailed = (detail: string) =>
  problem(412, PROBLEM_TYPES.preconditionFailed, 'Precondition Failed', detail);

/** 428: the endpoint requires a conditional request. */
export const preconditionRequired = () =>
  problem(
    428,
    PROBLEM_TYPES.preconditionRequired,
    'Precondition Required',
    'This endpoint requires a conditional request: send If-Match with the ETag of the version you read (or If-Match: * to replace any existing version), or If-None-Match: * to create.',
  );

/** 400: the header cannot be parsed, or its form is not supported for this method. */
export const invalidPreconditionHeader = (header: string, why: string) =>
  problem(
    400,
    PROBLEM_TYPES.preconditionInvalid,
    `Invalid ${header} header`,
    `The ${header} header is invalid: ${why}.`,
  );
