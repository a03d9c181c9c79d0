#!/usr/bin/env node
/**
 * Checks the relative links of README.md and docs/ (`node tools/check-doc-links.js`): every
 * `[text](target)` whose target is a file of this repository must name a file or folder that
 * exists, and every `#anchor` (in the same page or another Markdown page) a heading of that page,
 * slugged as GitHub slugs it. Links to other sites are not fetched (CI runs offline). Code blocks
 * and inline code are skipped. Run by test/unit/docs-reference.spec.ts inside `npm test`.
 */
const { existsSync, readdirSync, readFileSync, statSync } = require('node:fs');
const { dirname, join, relative, resolve } = require('node:path');

const ROOT = join(__dirname, '..');

/** The Markdown files checked: README.md and every .md under docs/. */
function markdownFiles(root = ROOT) {
  const out = [join(root, 'README.md')];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.md')) out.push(p);
    }
  };
  walk(join(root, 'docs'));
  return out;
}

/** The text with fenced code blocks and inline code blanked out (line numbers kept). */
function withoutCode(markdown) {
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));
}

/** GitHub's anchor for a heading's text (lower case, punctuation dropped, spaces to hyphens). */
function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/[*`]/g, '') // emphasis and code marks
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors of a Markdown page: its headings' slugs (repeats numbered -1, -2…) and explicit ids. */
function anchorsOf(markdown) {
  const seen = new Map();
  const anchors = new Set();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  return anchors;
}

/** `[{ file, line, target, problem }]` for every relative link that does not resolve. */
function brokenLinks(files = markdownFiles(), root = ROOT) {
  const anchorCache = new Map();
  const anchors = (file) => {
    if (!anchorCache.has(file)) anchorCache.set(file, anchorsOf(readFileSync(file, 'utf8')));
    return anchorCache.get(file);
  };
  const broken = [];
  for (const file of files) {
    const text = withoutCode(readFileSync(file, 'utf8'));
    for (const m of text.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      const line = text.slice(0, m.index).split('\n').length;
      const report = (problem) =>
        broken.push({ file: relative(root, file), line, target, problem });
      const [pathPart, anchor] = target.split('#', 2);
      const path = pathPart ? resolve(dirname(file), decodeURI(pathPart)) : file;
      if (!existsSync(path)) {
        report('no such file');
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      if (!path.endsWith('.md')) continue; // an anchor into source code (#L12) is GitHub's
      if (!anchors(path).has(decodeURIComponent(anchor).toLowerCase()))
        report(`no heading #${anchor} in ${relative(root, path)}`);
    }
  }
  return broken;
}

module.exports = { markdownFiles, brokenLinks, anchorsOf, slug };

if (require.main === module) {
  const broken = brokenLinks();
  for (const b of broken) process.stdout.write(`${b.file}:${b.line}: ${b.target} (${b.problem})\n`);
  process.stdout.write(`check-doc-links: ${broken.length} broken link(s)\n`);
  process.exit(broken.length ? 1 : 0);
}
