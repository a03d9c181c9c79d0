// The problem+json kernel every feature answers its errors with (RFC 9457).
export { PROBLEM_TYPES, isRetryableProblem } from './problem-types';
export {
  ProblemException,
  problem,
  serviceUnavailable,
  misconfigured,
  type ProblemDetails,
} from './problem.exception';
export { problemAnswer, sendProblem } from './problem-answer';
export { ProblemDetailsFilter } from './problem-details.filter';
