/**
 * A text's trigrams as words, for a trigram index that FTS5's `ascii` tokenizer can write (SQLite's `trigram_fts`).
 *
 * FTS5's own trigram tokenizer hands every trigram of a text to the index, each occurrence, and a file's text holds
 * each distinct trigram about eight times: writing the trigram table was half of a large run's second pass on the
 * writer thread (docs/benchmarks.md). Without positions (detail = none) only which trigrams a file holds counts, so a
 * parse worker now finds the distinct ones and sends them as short words, and the writer tokenizes a third of the
 * characters at a fraction of the cost. The same function cuts a grep's literals, so both sides agree by construction.
 *
 * A trigram is three UTF-16 units of the case-folded text (`foldCase`), as PostgreSQL's `trigramsOf` cuts them. One
 * of tab, line feed, carriage return and printable ASCII in each place (98 values) is the word of four base-36 digits
 * of its number; any other is `z` and each unit in four base-36 digits (13 characters). Different lengths keep the two
 * kinds apart, and each kind is one word per trigram. What is stored follows the running Node's `toLowerCase` (its
 * Unicode version) for letters a newer Unicode gives a case; the fold below is fixed.
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

/**
 * The letters `toLowerCase` leaves as another letter than the one a case-insensitive match equates them with (RE2's
 * simple case folding: `(?i)static` matches `ſtatic`, `(?i)μs` matches `µs`), each to that letter; and the final
 * sigma, the one lower-casing that depends on what follows (`ΟΔΥΣ` lower-cases to `οδυς`, the same letters within a
 * longer text to `οδυσ`), to σ. test/trigram-terms.test.ts checks every letter of RE2's case groups.
 */
const FOLD: Record<string, string> = {
  '\u00b5': '\u03bc', // micro sign: mu
  '\u017f': 's', // long s
  '\u0345': '\u03b9', // combining ypogegrammeni: iota
  '\u1fbe': '\u03b9', // prosgegrammeni: iota
  '\u03c2': '\u03c3', // final sigma: sigma
  '\u03d0': '\u03b2', // beta symbol
  '\u03d1': '\u03b8', // theta symbol
  '\u03d5': '\u03c6', // phi symbol
  '\u03d6': '\u03c0', // pi symbol
  '\u03f0': '\u03ba', // kappa symbol
  '\u03f1': '\u03c1', // rho symbol
  '\u03f5': '\u03b5', // lunate epsilon
  '\u1c80': '\u0432', // Cyrillic rounded ve
  '\u1c81': '\u0434', // long-legged de
  '\u1c82': '\u043e', // narrow o
  '\u1c83': '\u0441', // wide es
  '\u1c84': '\u0442', // tall te
  '\u1c85': '\u0442', // three-legged te
  '\u1c86': '\u044a', // tall hard sign
  '\u1c87': '\u0463', // tall yat
  '\u1c88': '\ua64b', // unblended uk
  '\u1e9b': '\u1e61', // long s with dot above: s with dot above
  '\u1fd3': '\u0390', // iota with dialytika and oxia: with tonos
  '\u1fe3': '\u03b0', // upsilon with dialytika and oxia: with tonos
  '\ufb05': '\ufb06', // ligature long s t: s t
};
const FOLDED = new RegExp(`[${Object.keys(FOLD).join('')}]`);
const FOLDED_ALL = new RegExp(FOLDED.source, 'g');

/**
 * A text lower-cased and folded as a case-insensitive match folds it: what trigrams are cut from, and what grep's line
 * filter compares literals with. One unit becomes one unit, except what `toLowerCase` itself lengthens (`İ`).
 */
export function foldCase(text: string): string {
  const lower = text.toLowerCase();
  return FOLDED.test(lower) ? lower.replace(FOLDED_ALL, (c) => FOLD[c]!) : lower;
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
  const lower = foldCase(text);
  let n = 0;
  let other: Set<string> | undefined;
  try {
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
      putUnit(out, p, order[j]!);
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
  } finally {
    // the marks are shared by every text this thread cuts: none may stay set, even after a throw
    for (let j = 0; j < n; j++) seen[order[j]!] = 0;
  }
}

/** The words of a literal's trigrams (what a text holding the literal, in any case, holds every one of). */
export function literalTerms(literal: string): string[] {
  const terms = trigramTerms(literal);
  return terms ? terms.split(' ') : [];
}
