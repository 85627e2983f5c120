/**
 * A text's trigrams as words, for a trigram index that FTS5's `ascii` tokenizer can write (SQLite's `text_fts`).
 *
 * FTS5's own trigram tokenizer hands every trigram of a text to the index, each occurrence, and a file's text holds
 * each distinct trigram about eight times: writing the trigram table was half of a large run's second pass on the
 * writer thread (docs/benchmarks.md). Without positions (detail = none) only which trigrams a file holds counts, so a
 * parse worker now finds the distinct ones and sends them as short words, and the writer tokenizes a third of the
 * characters at a fraction of the cost. The same function cuts a grep's literals, so both sides agree by construction.
 *
 * A trigram is three UTF-16 units of the lower-cased text (`toLowerCase`, with the final sigma folded to σ, the one
 * mapping that depends on what follows, so that a literal cut from the middle of a word matches), as PostgreSQL's
 * `trigramsOf` cuts them. One of tab, line feed, carriage return and printable ASCII in each place (98 values) is the
 * word of four base-36 digits of its number; any other is `z` and each unit in four base-36 digits (13 characters).
 * Different lengths keep the two kinds apart, and each kind is one word per trigram.
 */

const SIMPLE = new Int8Array(128).fill(-1);
SIMPLE[9] = 0;
SIMPLE[10] = 1;
SIMPLE[13] = 2;
for (let c = 32; c < 127; c++) SIMPLE[c] = c - 29;
const BASE = 98;
const DIGITS = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz', 'latin1');

/** Seen marks for the simple trigrams of the text being cut (cleared after each text), and the order they came in. */
const seen = new Uint8Array(BASE * BASE * BASE);
let order = new Int32Array(1 << 14);

function lowered(text: string): string {
  const lower = text.toLowerCase();
  return lower.includes('\u03c2') ? lower.replaceAll('\u03c2', '\u03c3') : lower;
}

/** Writes a unit's four base-36 digits at `at`. */
function putUnit(out: Buffer, at: number, unit: number): void {
  for (let d = 3; d >= 0; d--) {
    out[at + d] = DIGITS[unit % 36]!;
    unit = Math.floor(unit / 36);
  }
}

/** The distinct trigrams of `text`, each one word, separated by spaces (empty for a text under three units). */
export function trigramTerms(text: string): string {
  const lower = lowered(text);
  let n = 0;
  let other: Set<string> | undefined;
  let k1 = -1;
  let k2 = -1;
  for (let i = 0; i < lower.length; i++) {
    const c = lower.charCodeAt(i);
    const k3 = c < 128 ? SIMPLE[c]! : -1;
    if (i >= 2) {
      if ((k1 | k2 | k3) >= 0) {
        const k = (k1 * BASE + k2) * BASE + k3;
        if (!seen[k]) {
          seen[k] = 1;
          if (n === order.length) {
            const grown = new Int32Array(n * 2);
            grown.set(order);
            order = grown;
          }
          order[n++] = k;
        }
      } else {
        other ??= new Set();
        other.add(lower.slice(i - 2, i + 1));
      }
    }
    k1 = k2;
    k2 = k3;
  }
  const out = Buffer.allocUnsafe(n * 5 + (other?.size ?? 0) * 14);
  let p = 0;
  for (let j = 0; j < n; j++) {
    const k = order[j]!;
    seen[k] = 0;
    putUnit(out, p, k);
    out[p + 4] = 32;
    p += 5;
  }
  for (const t of other ?? []) {
    out[p] = 122; // z
    for (let u = 0; u < 3; u++) putUnit(out, p + 1 + u * 4, t.charCodeAt(u));
    out[p + 13] = 32;
    p += 14;
  }
  return out.toString('latin1', 0, Math.max(0, p - 1));
}

/** The words of a literal's trigrams (what a text holding the literal, in any case, holds every one of). */
export function literalTerms(literal: string): string[] {
  const terms = trigramTerms(literal);
  return terms ? terms.split(' ') : [];
}
