/**
 * Jest transform for the Nest 12 phase (.ci/nest12.sh): Nest 12 ships ES modules, which Node 20
 * loads from CommonJS (`require(esm)`) but Jest 29's module registry cannot. This compiles the ES
 * modules of node_modules to CommonJS with TypeScript (`import.meta.*` and a module-local
 * `require` mapped to their CommonJS equivalents); CommonJS files pass through unchanged, and
 * the repository's .ts files still go through ts-jest. Test tooling only.
 */
const { createHash } = require('node:crypto');
const { existsSync, readFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const ts = require('typescript');

const SELF = readFileSync(__filename);
const typeOfDir = new Map();

/** Whether `filename` is an ES module by Node's rules (.mjs, or the nearest package.json says type module). */
function isEsm(filename) {
  if (filename.endsWith('.mjs')) return true;
  if (filename.endsWith('.cjs')) return false;
  for (let dir = dirname(filename); ; dir = dirname(dir)) {
    if (typeOfDir.has(dir)) return typeOfDir.get(dir);
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      let type;
      try {
        type = JSON.parse(readFileSync(manifest, 'utf8')).type;
      } catch {
        type = undefined;
      }
      const esm = type === 'module';
      typeOfDir.set(dir, esm);
      return esm;
    }
    if (dirname(dir) === dir) return false;
  }
}

module.exports = {
  getCacheKey(src, filename) {
    return createHash('sha1').update(SELF).update(filename).update(src).digest('hex');
  },
  process(src, filename) {
    if (!isEsm(filename)) return { code: src };
    const code = src
      // An ES module's own `const require = createRequire(import.meta.url)` would clash with
      // CommonJS' `require`: rename it, and make it Jest's require (one module registry).
      .replace(/(?<![\w$.\-/])require(?![\w$-])/g, '__esmRequire')
      .replace(/\bcreateRequire\(\s*import\.meta\.url\s*\)/g, 'require')
      .replace(/\bimport\.meta\.url\b/g, "require('node:url').pathToFileURL(__filename).href")
      .replace(/\bimport\.meta\.dirname\b/g, '__dirname')
      .replace(/\bimport\.meta\.filename\b/g, '__filename')
      .replace(/\bimport\.meta\.resolve\b/g, 'require.resolve');
    const out = ts.transpileModule(code, {
      fileName: filename,
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        allowJs: true,
        esModuleInterop: true,
      },
    });
    return { code: out.outputText };
  },
};
