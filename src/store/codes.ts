/**
 * Quantised chunk vectors for the embedded store's dense search past an exact scan's reach (docs/stores.md has the
 * measurements): one sign bit per dimension, scanned in memory by Hamming distance, and an int8 copy of each vector
 * that re-scores the first candidates by cosine.
 *
 * Why not sqlite-vec's own `bit[]` and `int8[]` columns: measured on 200k real vectors, its bit KNN costs 21 ms at
 * k = 100 and 117 ms at k = 400 (its top-k grows with k), and a point lookup in a `vec0` table reads the whole
 * 1,024-vector block (0.15 ms a vector), so a re-score of 400 candidates costs 60 ms. The codes here: a popcount scan
 * of packed words (12 ms at 200k) and a re-score of 400 rows by primary key (under 1 ms).
 */

import type Database from 'better-sqlite3';

/** 32-bit words of sign bits for a vector of `dim` dimensions (the last word zero-padded). */
export const codeWords = (dim: number) => Math.ceil(dim / 32);

/** Sign bits: bit d set when dimension d is positive. */
export function signCode(v: Float32Array): Uint32Array {
  const out = new Uint32Array(codeWords(v.length));
  for (let d = 0; d < v.length; d++) if (v[d]! > 0) out[d >>> 5]! |= 1 << (d & 31);
  return out;
}

/** An int8 copy of a vector, scaled so that its largest magnitude is 127 (cosine does not see the scale). */
export function int8Copy(v: Float32Array): Int8Array {
  let top = 0;
  for (const x of v) top = Math.max(top, Math.abs(x));
  const scale = top > 0 ? 127 / top : 0;
  return Int8Array.from(v, (x) => Math.round(x * scale));
}

export const asBlob = (a: Uint32Array | Int8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** Cosine similarity between a float query and an int8 copy (a blob from `int8Copy`). */
export function int8Cosine(query: Float32Array, blob: Uint8Array): number {
  const q8 = new Int8Array(blob.buffer, blob.byteOffset, blob.byteLength);
  let dot = 0;
  let qq = 0;
  let vv = 0;
  for (let d = 0; d < q8.length; d++) {
    const x = q8[d]!;
    const y = query[d]!;
    dot += x * y;
    qq += y * y;
    vv += x * x;
  }
  return qq > 0 && vv > 0 ? dot / Math.sqrt(qq * vv) : 0;
}

const popcount = (x: number) => {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
};

/** Packed sign codes of many vectors, held in memory, answering "the n nearest by Hamming distance". */
export class CodeScan {
  private ids: Float64Array;
  private codes: Uint32Array;
  private count = 0;

  constructor(
    readonly dim: number,
    capacity = 1024,
  ) {
    this.ids = new Float64Array(capacity);
    this.codes = new Uint32Array(capacity * codeWords(dim));
  }

  get size(): number {
    return this.count;
  }

  /** Adds one vector's code (a blob from `signCode`). */
  add(id: number, code: Uint8Array): void {
    const w = codeWords(this.dim);
    if (this.count === this.ids.length) {
      const ids = new Float64Array(this.ids.length * 2);
      ids.set(this.ids);
      const codes = new Uint32Array(ids.length * w);
      codes.set(this.codes);
      this.ids = ids;
      this.codes = codes;
    }
    new Uint8Array(this.codes.buffer, this.count * w * 4, w * 4).set(code.subarray(0, w * 4));
    this.ids[this.count++] = id;
  }

  /**
   * The ids of at least `n` codes nearest to `query` by Hamming distance (all those tied at the cut-off distance
   * too, up to 2n), in no particular order.
   */
  nearest(query: Float32Array, n: number): number[] {
    const w = codeWords(this.dim);
    const q = signCode(query);
    const dist = new Uint16Array(this.count);
    const hist = new Uint32Array(w * 32 + 1);
    const codes = this.codes;
    for (let j = 0, o = 0; j < this.count; j++, o += w) {
      let s = 0;
      for (let k = 0; k < w; k++) s += popcount(codes[o + k]! ^ q[k]!);
      dist[j] = s;
      hist[s]!++;
    }
    let cut = 0;
    let below = 0;
    while (cut < hist.length - 1 && below + hist[cut]! < n) below += hist[cut++]!;
    const out: number[] = [];
    const max = 2 * n;
    for (let j = 0; j < this.count; j++) if (dist[j]! < cut) out.push(this.ids[j]!);
    for (let j = 0; j < this.count && out.length < max; j++) if (dist[j] === cut) out.push(this.ids[j]!);
    return out;
  }
}

/**
 * Reads up to `n` codes of chunks above `after` from `chunk_codes` into `scan`, and says the last id read (undefined
 * when there were none). One row per page, not per code: SQLite concatenates them (0.5 s for a million codes, against
 * 1.6 s row by row).
 */
export function readCodePage(
  db: Database.Database,
  scan: CodeScan,
  after: number,
  n: number,
): number | undefined {
  const [ids, hex] = db
    .prepare(
      `SELECT group_concat(chunk_id), group_concat(hex(bits), '')
       FROM (SELECT chunk_id, bits FROM chunk_codes WHERE chunk_id > ? ORDER BY chunk_id LIMIT ?)`,
    )
    .raw()
    .get(after, n) as [string | null, string | null];
  if (!ids || !hex) return undefined;
  const bytes = Buffer.from(hex, 'hex');
  const size = codeWords(scan.dim) * 4;
  const list = ids.split(',');
  // codes of another dimension (the embedder changed under the read) are not split into wrong ones
  if (bytes.length !== list.length * size)
    throw new Error(`codes of ${bytes.length / list.length} bytes where ${size} were expected`);
  let last = after;
  // both lists come from one pass over the rows, so they agree; the next page starts after the largest id read,
  // whatever order the aggregate saw the rows in
  for (const [i, id] of list.entries()) {
    scan.add(Number(id), bytes.subarray(i * size, (i + 1) * size));
    last = Math.max(last, Number(id));
  }
  return last;
}
