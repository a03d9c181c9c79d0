import { join } from 'node:path';
import * as ts from 'typescript';

/**
 * The complete test of docs/testing-kit.md, run here as it is written (its imports of
 * `nestjs-exactly-once` and `nestjs-exactly-once/testing` point at lib/): the consumer test runs
 * it in a generated app from the packed package (test/consumer/testing-kit.case.js); this spec
 * keeps it true in every CI run of the main suite.
 */
const { testingKitSnippet } = require('../consumer/testing-kit.case.js') as {
  testingKitSnippet: () => { path: string; code: string };
};

const { code } = testingKitSnippet();
const js = ts.transpileModule(code, {
  compilerOptions: {
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    esModuleInterop: true,
  },
}).outputText;
const lib = join(__dirname, '..', '..', 'lib');
const load = (name: string): unknown =>
  name === 'nestjs-exactly-once'
    ? require(lib)
    : name === 'nestjs-exactly-once/testing'
      ? require(join(lib, 'testing'))
      : require(name);
const snippetModule = { exports: {} };
new Function('require', 'module', 'exports', js)(load, snippetModule, snippetModule.exports);
