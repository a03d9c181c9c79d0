import { ExactlyOnceError } from '../errors/exactly-once.error';

/**
 * Entity tags (RFC 9110 §8.8.3): `"opaque"` (strong) or `W/"opaque"` (weak), and the two
 * comparison functions of §8.8.3.2.
 */
export interface EntityTag {
  weak: boolean;
  /** The characters between the quotes. */
  opaque: string;
}

/** A parsed If-Match / If-None-Match value: `*` or a list of entity tags. */
export type EntityTagCondition = '*' | EntityTag[];

/** Thrown by the parser with a reason fit for a 400 answer. */
export class EntityTagSyntaxError extends ExactlyOnceError {
  readonly code = 'ENTITY_TAG_SYNTAX';
}

/** etagc = %x21 / %x23-7E / obs-text (%x80-FF). */
const isEtagc = (code: number) =>
  code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);
const isOws = (ch: string) => ch === ' ' || ch === '\t';

/** `"opaque"` or `W/"opaque"`. */
export function formatEntityTag(tag: EntityTag): string {
  return `${tag.weak ? 'W/' : ''}"${tag.opaque}"`;
}

/** Strong comparison: both strong and the same opaque tag (If-Match). */
export const strongMatch = (a: EntityTag, b: EntityTag): boolean =>
  !a.weak && !b.weak && a.opaque === b.opaque;

/** Weak comparison: the same opaque tag, weak or not (If-None-Match). */
export const weakMatch = (a: EntityTag, b: EntityTag): boolean => a.opaque === b.opaque;

/** Parses one entity tag (the whole string), or returns undefined when it is not one. */
export function parseEntityTag(value: string): EntityTag | undefined {
  try {
    const list = parseEntityTagCondition([value], Number.MAX_SAFE_INTEGER);
    return list !== undefined && list !== '*' && list.length === 1 ? list[0] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Parses the field values of If-Match or If-None-Match (`"*" / #entity-tag`). Several field
 * lines are one comma-separated list; empty list elements are ignored (RFC 9110 §5.6.1).
 * Returns undefined when the header is absent (no field lines).
 */
export function parseEntityTagCondition(
  values: string[],
  maxTags: number,
): EntityTagCondition | undefined {
  if (values.length === 0) return undefined;
  const text = values.join(',');
  const tags: EntityTag[] = [];
  let star = false;
  let i = 0;
  const skipOws = () => {
    while (i < text.length && isOws(text[i])) i++;
  };
  for (;;) {
    skipOws();
    if (i >= text.length) break;
    if (text[i] === ',') {
      i++;
      continue;
    }
    if (text[i] === '*') {
      star = true;
      i++;
    } else {
      let weak = false;
      if (text.startsWith('W/', i)) {
        weak = true;
        i += 2;
      }
      if (text[i] !== '"') {
        throw new EntityTagSyntaxError(
          'an entity tag must be a quoted string such as "abc" or W/"abc"',
        );
      }
      const start = ++i;
      while (i < text.length && isEtagc(text.charCodeAt(i))) i++;
      if (text[i] !== '"') {
        throw new EntityTagSyntaxError(
          'an entity tag is not terminated by a double quote, or contains a character not allowed in one',
        );
      }
      tags.push({ weak, opaque: text.slice(start, i) });
      i++;
    }
    skipOws();
    if (i < text.length && text[i] !== ',') {
      throw new EntityTagSyntaxError('entity tags must be separated by commas');
    }
  }
  if (star) {
    if (tags.length > 0) throw new EntityTagSyntaxError('"*" cannot be combined with entity tags');
    return '*';
  }
  if (tags.length === 0) throw new EntityTagSyntaxError('the header is empty');
  if (tags.length > maxTags) throw new EntityTagSyntaxError(`more than ${maxTags} entity tags`);
  return tags;
}
