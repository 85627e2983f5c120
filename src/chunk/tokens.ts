/**
 * Code-aware tokens shared by the index and the query side. SQLite's FTS5 cannot run a JavaScript tokenizer, so
 * quarry turns text into a stream of lower-case tokens itself and hands FTS5 (and any other store) the result:
 * every identifier is kept whole and, when it is compound, also split at camelCase, PascalCase, snake_case,
 * kebab-case and digit boundaries. `parseConfigFile` → `parseconfigfile parse config file`.
 */

const WORD = /[\p{L}_$][\p{L}\p{N}_$]*|\p{N}+/gu;
const CAMEL = /\p{Lu}+(?!\p{Ll})|\p{Lu}?\p{Ll}+|\p{N}+|\p{Lo}+/gu;

/** Split one identifier into its lower-case parts (`HTTPServer2` → `http server 2`). */
export function identifierParts(word: string): string[] {
  const parts: string[] = [];
  for (const piece of word.split(/[_$-]+/)) {
    if (!piece) continue;
    const sub = piece.match(CAMEL);
    if (sub) for (const s of sub) parts.push(s.toLowerCase());
  }
  return parts;
}

/** Append the code-aware tokens of `text` to `out`: `codeTokenText`'s, which no token holds a space in. */
export function pushCodeTokens(text: string, out: string[]): void {
  const stream = codeTokenText(text);
  if (stream) for (const token of stream.split(' ')) out.push(token);
}

/** 1 for an ASCII letter, digit, `_` or `$`. */
const WORD_CHAR = new Uint8Array(128);
for (let c = 0; c < 128; c++) WORD_CHAR[c] = /[A-Za-z0-9_$]/.test(String.fromCharCode(c)) ? 1 : 0;

const isDigit = (c: number) => c >= 48 && c <= 57;
const isUpper = (c: number) => c >= 65 && c <= 90;
const isLower = (c: number) => c >= 97 && c <= 122;
const isJoin = (c: number) => c === 95 || c === 36; // `_` `$`

/** The regular expressions' tokens of `text`: the reference for any text, used where it is not all ASCII. */
export function pushUnicodeTokens(text: string, out: string[]): void {
  for (const m of text.matchAll(WORD)) {
    const raw = m[0];
    const trimmed = raw.replace(/^[_$]+|[_$]+$/g, '');
    if (trimmed.length < 2) continue;
    const whole = trimmed.toLowerCase();
    out.push(whole);
    if (/[_$]|\p{Ll}\p{Lu}|\p{Lu}\p{Lu}\p{Ll}|\p{L}\p{N}|\p{N}\p{L}/u.test(trimmed)) {
      for (const p of identifierParts(trimmed)) if (p.length > 1 && p !== whole) out.push(p);
    }
  }
}

/**
 * The code-aware token stream of `text`, space-separated, ready for an FTS column. ASCII words are scanned by hand
 * (most of a source file, several times faster than the regular expressions) and lower-cased byte by byte into one
 * buffer, not a string a token and a join (on the 100k corpus a parse worker's tokens took a fifth of its first pass,
 * docs/benchmarks.md). A run of word characters that holds any other character is left to the regular expressions,
 * which know Unicode's letters and digits, and its tokens go between the buffer's pieces. No word crosses an ASCII
 * character that is not a letter, digit, `_` or `$`, so each run is tokenised alone exactly as the whole text would
 * be; a test holds the stream equal to `pushUnicodeTokens`' on random and real text.
 */
export function codeTokenText(text: string): string {
  const n = text.length;
  let buf = scratch;
  if (buf.length < 3 * n + 16) {
    buf = Buffer.allocUnsafe(3 * n + 16);
    if (buf.length <= SCRATCH_KEPT) scratch = buf;
  }
  /** Pieces before the buffer's, where a run held a character other than ASCII. */
  let pieces: string[] | undefined;
  let p = 0;
  let i = 0;
  while (i < n) {
    let c = text.charCodeAt(i);
    if (!(c >= 128 || WORD_CHAR[c] === 1)) {
      i++;
      continue;
    }
    const start = i;
    let ascii = true;
    while (i < n) {
      c = text.charCodeAt(i);
      if (c >= 128) ascii = false;
      else if (WORD_CHAR[c] !== 1) break;
      i++;
    }
    if (ascii) p = putAsciiRun(text, start, i, buf, p);
    else {
      const tokens: string[] = [];
      pushUnicodeTokens(text.slice(start, i), tokens);
      if (!tokens.length) continue;
      pieces ??= [];
      if (p) pieces.push(buf.toString('latin1', 0, p));
      p = 0;
      pieces.push(`${tokens.join(' ')} `);
    }
  }
  if (!pieces) return p ? buf.toString('latin1', 0, p - 1) : '';
  if (p) pieces.push(buf.toString('latin1', 0, p));
  return pieces.join('').slice(0, -1);
}

/**
 * The buffer a text's ASCII tokens are written into: a word of n characters gives at most 2.5n + 1 bytes (itself, a
 * space, parts of two or more characters that do not overlap, a space each), so three bytes a character bound it.
 * Kept between calls up to SCRATCH_KEPT bytes; a larger text gets a buffer of its own.
 */
let scratch = Buffer.allocUnsafe(1 << 16);
const SCRATCH_KEPT = 8 * 2 ** 20;

/**
 * The tokens of text[start, end), all ASCII letters, digits, `_` and `$` (what `WORD` would match there, each word
 * and its `identifierParts`), into the buffer at p, each followed by a space; returns the position after them.
 */
function putAsciiRun(text: string, start: number, end: number, buf: Buffer, p: number): number {
  let k = start;
  while (k < end) {
    const s = k;
    if (isDigit(text.charCodeAt(k))) while (k < end && isDigit(text.charCodeAt(k))) k++;
    else k = end;
    let a = s;
    let b = k;
    while (a < b && isJoin(text.charCodeAt(a))) a++;
    while (b > a && isJoin(text.charCodeAt(b - 1))) b--;
    if (b - a < 2) continue;
    // the word lower-cased and a space, and whether it is compound (what `pushUnicodeTokens` splits), in one pass
    let compound = false;
    let c1 = -1; // the character before, and the one before that
    let c2 = -1;
    for (let j = a; j < b; j++) {
      const c = text.charCodeAt(j);
      buf[p++] = isUpper(c) ? c + 32 : c;
      if (!compound && c1 >= 0) {
        const letter = isLower(c) || isUpper(c);
        if (
          isJoin(c1) ||
          (isLower(c1) && isUpper(c)) ||
          (c2 >= 0 && isUpper(c2) && isUpper(c1) && isLower(c)) ||
          ((isLower(c1) || isUpper(c1)) && isDigit(c)) ||
          (isDigit(c1) && letter)
        )
          compound = true;
      }
      c2 = c1;
      c1 = c;
    }
    buf[p++] = 32;
    // (a trimmed word neither starts nor ends with a joiner: one before its last character is seen as c1 above)
    if (compound) p = putAsciiParts(text, a, b, buf, p);
  }
  return p;
}

/** Writes text[a, b) lower-cased and a space at p; returns the position after them. */
function putLower(text: string, a: number, b: number, buf: Buffer, p: number): number {
  for (let j = a; j < b; j++) {
    const c = text.charCodeAt(j);
    buf[p++] = isUpper(c) ? c + 32 : c;
  }
  buf[p++] = 32;
  return p;
}

/** `identifierParts` for ASCII (`CAMEL` in each piece between `_` and `$`): each part of two or more characters that is
 * not the whole word. */
function putAsciiParts(text: string, a: number, b: number, buf: Buffer, p: number): number {
  let i = a;
  while (i < b) {
    const c = text.charCodeAt(i);
    if (isJoin(c)) {
      i++;
      continue;
    }
    const s = i;
    if (isUpper(c)) {
      let j = i + 1;
      while (j < b && isUpper(text.charCodeAt(j))) j++;
      if (j < b && isLower(text.charCodeAt(j))) {
        if (j - i >= 2) i = j - 1;
        else {
          i = j;
          while (i < b && isLower(text.charCodeAt(i))) i++;
        }
      } else i = j;
    } else if (isLower(c)) while (i < b && isLower(text.charCodeAt(i))) i++;
    else while (i < b && isDigit(text.charCodeAt(i))) i++;
    // a part is a piece of the word: it equals the word only when it spans all of it
    if (i - s > 1 && i - s !== b - a) p = putLower(text, s, i, buf, p);
  }
  return p;
}

/** Tokens of a repository path: every segment, the file's stem, and their identifier parts. */
export function pathTokenText(path: string): string {
  return codeTokenText(path.replace(/[/.-]+/g, ' '));
}
