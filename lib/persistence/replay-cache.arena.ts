import type { CachedRecord } from './replay-cache.store';

/**
 * Where the replay cache keeps its entries: one byte ring outside the JavaScript heap, and an
 * index from a 30-bit hash of each entry's id to its offset (a Map of small integers).
 *
 * Why bytes and not objects: every first execution stores an entry and most are never read again.
 * Kept as objects (an entry, its record, the id string, a buffer and its views), each one survived
 * the young generation's collections, was copied twice and then marked and swept in the old one:
 * measured in a Nest app on PostgreSQL (`perf`, 2-core VM), the cache on cost about 30-50 µs of
 * CPU more per first execution than the cache off, most of it in V8's scavenger. Written into the
 * ring, an entry is a few bytes copied; the collector never visits it.
 *
 * An entry is decoded into a `CachedRecord` each time it is read; from its second read on, that
 * object is kept (counted in the budget) until the entry goes, so that a key retried again and
 * again is answered from the same object (the gate keeps the decoded answer beside it).
 *
 * Order and room: entries are written at the head of the ring; room is made by dropping the
 * oldest at the tail, whatever their state. A hit on an entry in the older half of the ring (more
 * bytes written since it than half of what the ring holds) writes it again at the head, so an
 * entry is dropped only when it has not been read since half the ring was written after it.
 * `delete` and expired entries leave a dead entry that the tail passes over.
 *
 * Budget: the ring's allocated bytes, plus `INDEX_SLOT_BYTES` per indexed entry, never exceed
 * `RING_SHARE` of `maxBytes`, and the decoded records the rest (the first decoded go first: their
 * entries stay in the ring). The ring grows by doubling, up to its share.
 * @internal
 */
export class ReplayArena {
  private ring = EMPTY;
  /** Physical offsets: where the next entry goes, and the oldest entry (live or dead). */
  private head = 0;
  private tail = 0;
  /** When the data wraps (head is before tail), where it stops before the end of the ring. */
  private end = 0;
  private wrapped = false;
  /** Bytes from the tail to the head in ring order (entries live and dead, and a wrap's gap). */
  private used = 0;
  /** Bytes written so far (wrap gaps included): an entry's position in the order. */
  private written = 0;
  private readonly index = new Map<number, number>();
  private readonly decoded = new Map<number, { id: string; record: CachedRecord; bytes: number }>();
  private decodedBytes = 0;
  private scratch = Buffer.allocUnsafeSlow(2048);

  /** The budget's share of the ring and its index, and of the decoded records. */
  private readonly ringBudget: number;
  private readonly decodedBudget: number;

  constructor(maxBytes: number) {
    this.ringBudget = Math.floor(maxBytes * RING_SHARE);
    this.decodedBudget = maxBytes - this.ringBudget;
  }

  /** Bytes held: the ring as allocated, the index's slots and the decoded records. */
  get size(): number {
    return this.ring.length + this.index.size * INDEX_SLOT_BYTES + this.decodedBytes;
  }

  /** Live entries. */
  get count(): number {
    return this.index.size;
  }

  /**
   * The live entry of `id`, decoded, or undefined (none, or past `now`: then it is dropped).
   */
  get(id: string, now: number): CachedRecord | undefined {
    if (this.index.size === 0) return undefined;
    const hash = hashOf(id);
    const at = this.index.get(hash);
    if (at === undefined) return undefined;
    const ring = this.ring;
    const known = this.decoded.get(at);
    if (known ? known.id !== id : !this.holds(at, id)) return undefined;
    if (now >= ring.readDoubleLE(at + UNTIL)) {
      this.kill(at, hash);
      return undefined;
    }
    let offset: number | undefined = at;
    if (this.written - ring.readDoubleLE(at + POSITION) > this.used / 2) {
      offset = this.move(at, hash);
    }
    if (known) return known.record;
    // Not written again (no room even in an empty ring: not expected), the bytes at `at` are
    // still the entry's, which is gone: decoded, not kept.
    return this.decode(offset ?? at, id, offset !== undefined);
  }

  /**
   * Stores `record` under `id` until `until` (a `performance.now()` time), replacing any entry
   * of `id`. Nothing is stored when the entry alone would not fit the budget.
   */
  set(id: string, record: CachedRecord, until: number): void {
    const idBytes = 2 * id.length;
    const headersBytes = record.headers === null ? 0 : Buffer.byteLength(record.headers);
    const hashBytes = record.requestHash.length;
    const bodyBytes = record.body?.length ?? 0;
    if (hashBytes > 255) return;
    const length = align(HEADER + idBytes + hashBytes + headersBytes + bodyBytes);
    if (length + INDEX_SLOT_BYTES > this.ringBudget) return;
    const hash = hashOf(id);
    const old = this.index.get(hash);
    if (old !== undefined) this.kill(old, hash);
    const at = this.reserve(length);
    if (at === undefined) return;
    const ring = this.ring;
    ring.writeUInt32LE(length, at);
    ring[at + STATE] = LIVE;
    ring[at + HASH_LENGTH] = hashBytes;
    ring.writeUInt16LE(record.status, at + STATUS);
    ring.writeDoubleLE(until, at + UNTIL);
    ring.writeDoubleLE(this.written, at + POSITION);
    ring.writeUInt32LE(hash, at + KEY_HASH);
    ring.writeUInt32LE(idBytes, at + ID_LENGTH);
    ring.writeUInt32LE(record.headers === null ? NONE : headersBytes, at + HEADERS_LENGTH);
    ring.writeUInt32LE(record.body === null ? NONE : bodyBytes, at + BODY_LENGTH);
    let p = at + HEADER;
    p += ring.write(id, p, 'utf16le');
    p += record.requestHash.copy(ring, p);
    if (record.headers !== null) p += ring.write(record.headers, p, 'utf8');
    if (record.body) record.body.copy(ring, p);
    this.index.set(hash, at);
    this.advanceHead(length);
  }

  /** Drops the entry of `id`, if any. */
  delete(id: string): void {
    const hash = hashOf(id);
    const at = this.index.get(hash);
    if (at === undefined) return;
    const known = this.decoded.get(at);
    if (known ? known.id === id : this.holds(at, id)) this.kill(at, hash);
  }

  /** Drops every entry past `now`. */
  prune(now: number): void {
    for (const [hash, at] of this.index) {
      if (now >= this.ring.readDoubleLE(at + UNTIL)) this.kill(at, hash);
    }
    while (this.used > 0 && this.ring[this.tail + STATE] === DEAD) this.dropTail();
  }

  /** Drops everything, and the ring with it. */
  clear(): void {
    this.ring = EMPTY;
    this.head = this.tail = this.end = this.used = 0;
    this.wrapped = false;
    this.index.clear();
    this.decoded.clear();
    this.decodedBytes = 0;
  }

  /**
   * Whether the entry at `at` is live and its id is `id`, compared code unit by code unit (the id
   * is stored as UTF-16: UTF-8 would turn any lone surrogate into the same replacement bytes).
   */
  private holds(at: number, id: string): boolean {
    const ring = this.ring;
    if (ring[at + STATE] === DEAD) return false;
    const idBytes = ring.readUInt32LE(at + ID_LENGTH);
    if (idBytes !== 2 * id.length) return false;
    if (this.scratch.length < idBytes) this.scratch = Buffer.allocUnsafeSlow(idBytes);
    this.scratch.write(id, 0, 'utf16le');
    return ring.compare(this.scratch, 0, idBytes, at + HEADER, at + HEADER + idBytes) === 0;
  }

  /**
   * The record of the entry at `at`, copied out of the ring; kept while the entry lives when
   * `keep` and the entry has been read before.
   */
  private decode(at: number, id: string, keep: boolean): CachedRecord {
    const ring = this.ring;
    const hashBytes = ring[at + HASH_LENGTH];
    const headersLength = ring.readUInt32LE(at + HEADERS_LENGTH);
    const bodyLength = ring.readUInt32LE(at + BODY_LENGTH);
    let p = at + HEADER + ring.readUInt32LE(at + ID_LENGTH);
    const headersBytes = headersLength === NONE ? 0 : headersLength;
    const bodyBytes = bodyLength === NONE ? 0 : bodyLength;
    // One buffer of its own for the hash and the body (not a view of Node's shared pool blocks).
    const own = Buffer.allocUnsafeSlow(hashBytes + bodyBytes);
    ring.copy(own, 0, p, p + hashBytes);
    p += hashBytes;
    const headers = headersLength === NONE ? null : ring.toString('utf8', p, p + headersBytes);
    p += headersBytes;
    ring.copy(own, hashBytes, p, p + bodyBytes);
    const record: CachedRecord = {
      requestHash: own.subarray(0, hashBytes),
      status: ring.readUInt16LE(at + STATUS),
      headers,
      body: bodyLength === NONE ? null : own.subarray(hashBytes),
    };
    if (!keep) return record;
    // A first read (most keys are retried once, if at all) keeps nothing but a mark.
    if (ring[at + STATE] === LIVE) {
      ring[at + STATE] = READ;
      return record;
    }
    const bytes = DECODED_OVERHEAD_BYTES + 2 * id.length + own.length + 2 * (headers?.length ?? 0);
    if (bytes > this.decodedBudget) return record;
    // Within their share of the budget: the records decoded first go (their entries stay).
    for (const [offset, known] of this.decoded) {
      if (this.decodedBytes + bytes <= this.decodedBudget) break;
      this.decoded.delete(offset);
      this.decodedBytes -= known.bytes;
    }
    this.decoded.set(at, { id, record, bytes });
    this.decodedBytes += bytes;
    return record;
  }

  /** Writes the live entry at `at` again at the head; returns its new offset (undefined: gone). */
  private move(at: number, hash: number): number | undefined {
    const length = this.ring.readUInt32LE(at);
    const copy = Buffer.from(this.ring.subarray(at, at + length));
    const known = this.decoded.get(at);
    this.kill(at, hash);
    const to = this.reserve(length);
    if (to === undefined) return undefined;
    copy.copy(this.ring, to);
    this.ring.writeDoubleLE(this.written, to + POSITION);
    this.index.set(hash, to);
    if (known) {
      this.decoded.set(to, known);
      this.decodedBytes += known.bytes;
    }
    this.advanceHead(length);
    return to;
  }

  /** Marks the entry at `at` dead and forgets it (its bytes go when the tail passes). */
  private kill(at: number, hash: number): void {
    this.ring[at + STATE] = DEAD;
    if (this.index.get(hash) === at) this.index.delete(hash);
    const known = this.decoded.get(at);
    if (known) {
      this.decoded.delete(at);
      this.decodedBytes -= known.bytes;
    }
  }

  /**
   * The offset where an entry of `length` bytes can be written at the head, after making room
   * (growing the ring, or dropping the oldest entries); undefined when it cannot fit.
   */
  private reserve(length: number): number | undefined {
    // Larger than the ring can ever be made: nothing is dropped for it.
    if (length > this.ring.length && (this.wrapped || !this.grow(length))) return undefined;
    for (;;) {
      const slots = (this.index.size + 1) * INDEX_SLOT_BYTES;
      if (!this.wrapped) {
        if (this.head + length <= this.ring.length && this.ring.length + slots <= this.ringBudget) {
          return this.head;
        }
        if (this.head + length > this.ring.length && this.grow(length)) continue;
        if (this.ring.length + slots > this.ringBudget || this.tail === this.head) {
          if (this.used === 0) {
            if (this.ring.length + slots > this.ringBudget || length > this.ring.length) {
              return undefined;
            }
            this.head = this.tail = 0;
            continue;
          }
          this.dropTail();
          continue;
        }
        // Wrap: the rest of the ring after the head is a gap the tail will pass.
        this.end = this.head;
        this.used += this.ring.length - this.head;
        this.written += this.ring.length - this.head;
        this.head = 0;
        this.wrapped = true;
        continue;
      }
      if (this.head + length <= this.tail && this.ring.length + slots <= this.ringBudget) {
        return this.head;
      }
      this.dropTail();
    }
  }

  /**
   * Doubles the ring, or grows it to its share of the budget, when it is not wrapped (entries keep
   * their offsets). Its share leaves room for the index slots of as many entries as it will hold,
   * at the size of those it holds (or of the one to store, when it holds none).
   */
  private grow(length: number): boolean {
    const current = this.ring.length;
    const entryBytes = this.index.size > 0 ? Math.max(this.used / this.index.size, 8) : length;
    const share = align(
      Math.floor((this.ringBudget * entryBytes) / (entryBytes + INDEX_SLOT_BYTES)) - 7,
    );
    let next = Math.max(current * 2, MIN_RING_BYTES);
    while (next < this.head + length) next *= 2;
    next = Math.min(next, share);
    if (next < this.head + length || next <= current) return false;
    const ring = Buffer.allocUnsafeSlow(next);
    this.ring.copy(ring, 0, 0, this.head);
    this.ring = ring;
    return true;
  }

  private advanceHead(length: number): void {
    this.head += length;
    this.used += length;
    this.written += length;
  }

  /** Drops the entry at the tail (live or dead), and a wrap gap behind it. */
  private dropTail(): void {
    const at = this.tail;
    const length = this.ring.readUInt32LE(at);
    if (this.ring[at + STATE] !== DEAD) this.kill(at, this.ring.readUInt32LE(at + KEY_HASH));
    this.tail += length;
    this.used -= length;
    if (this.wrapped && this.tail >= this.end) {
      this.used -= this.ring.length - this.end;
      this.tail = 0;
      this.wrapped = false;
    }
    if (this.used === 0) this.head = this.tail = 0;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * The ring and its index take this share of the budget; the records decoded for keys read more
 * than once take the rest (2 MiB of the default 16 MiB: some 1,500 answers of a few hundred bytes).
 */
const RING_SHARE = 7 / 8;
const MIN_RING_BYTES = 64 * 1024;

/**
 * Memory per indexed entry beyond its bytes in the ring: its slot in the index (an ordered hash
 * table of two small integers per entry, at most half full after it grows). Measured on Node 20
 * with 10,000 entries: 74 bytes each; rounded up.
 */
const INDEX_SLOT_BYTES = 80;

/**
 * Memory per decoded record beyond its strings (two bytes a character) and bytes: the record and
 * its wrapper, the buffer's views and backing store, and the decoded answer the gate keeps beside
 * it (measured on Node 20: about 500 bytes; rounded up).
 */
const DECODED_OVERHEAD_BYTES = 600;

const DEAD = 0;
const LIVE = 1;
/** Live, and read once already: the next read keeps its decoded record. */
const READ = 2;
const NONE = 0xffffffff;

// An entry: a header, then the id (UTF-16LE), the request hash, the headers (UTF-8) and the body.
const STATE = 4; // u8 (after the entry's u32 length at 0)
const HASH_LENGTH = 5; // u8
const STATUS = 6; // u16
const UNTIL = 8; // f64, performance.now() time
const POSITION = 16; // f64, bytes written before it
const KEY_HASH = 24; // u32, hashOf(id)
const ID_LENGTH = 28; // u32, bytes (two per UTF-16 code unit)
const HEADERS_LENGTH = 32; // u32, NONE for null
const BODY_LENGTH = 36; // u32, NONE for null
const HEADER = 40;

const align = (n: number): number => (n + 7) & ~7;

/**
 * FNV-1a over the id's UTF-16 code units, cut to 30 bits (a small integer on every V8 build).
 * Two ids of one hash share a slot: the later one's entry replaces the earlier's.
 */
export function hashOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h >>> 0) & 0x3fffffff;
}
