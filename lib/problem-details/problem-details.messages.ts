/** Boot warning: `problemDetailsFilter: false` and no `ProblemDetailsFilter` among the app's global filters. */
export const PROBLEM_FILTER_MISSING = () =>
  "problemDetailsFilter is false and no ProblemDetailsFilter is among the app's global filters: " +
  'errors outside guarded routes (a 413 of the body parser, an unguarded 500, an HttpException) ' +
  "will not be application/problem+json as the library's contract says. Fix: " +
  '`app.useGlobalFilters(new ProblemDetailsFilter())` (or a subclass of it, for your own mapping), ' +
  "or remove `problemDetailsFilter: false` from IdempotencyModule's options.";
