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

/** Append the code-aware tokens of `text` to `out`. Tokens of one character are dropped (noise in code). */
export function pushCodeTokens(text: string, out: string[]): void {
  // ASCII words are scanned by hand (most of a source file, several times faster than the regular expressions);
  // a run of word characters that holds any other character is left to the regular expressions, which know
  // Unicode's letters and digits. No word crosses an ASCII character that is not a letter, digit, `_` or `$`, so
  // each run is tokenised alone exactly as the whole text would be.
  const n = text.length;
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
    if (ascii) pushAsciiRun(text, start, i, out);
    else pushUnicodeTokens(text.slice(start, i), out);
  }
}

/** 1 for an ASCII letter, digit, `_` or `$`. */
const WORD_CHAR = new Uint8Array(128);
for (let c = 0; c < 128; c++) WORD_CHAR[c] = /[A-Za-z0-9_$]/.test(String.fromCharCode(c)) ? 1 : 0;

const isDigit = (c: number) => c >= 48 && c <= 57;
const isUpper = (c: number) => c >= 65 && c <= 90;
const isLower = (c: number) => c >= 97 && c <= 122;
const isJoin = (c: number) => c === 95 || c === 36; // `_` `$`

/** The tokens of text[start, end), all ASCII letters, digits, `_` and `$`: what `WORD` would match there. */
function pushAsciiRun(text: string, start: number, end: number, out: string[]): void {
  let i = start;
  while (i < end) {
    const s = i;
    // a word starting with a digit is its digits (`\p{N}+`); any other runs to the end of the run
    if (isDigit(text.charCodeAt(i))) while (i < end && isDigit(text.charCodeAt(i))) i++;
    else i = end;
    let a = s;
    let b = i;
    while (a < b && isJoin(text.charCodeAt(a))) a++;
    while (b > a && isJoin(text.charCodeAt(b - 1))) b--;
    if (b - a < 2) continue;
    const whole = text.slice(a, b).toLowerCase();
    out.push(whole);
    if (asciiCompound(text, a, b)) pushAsciiParts(text, a, b, whole, out);
  }
}

/** `[_$]|\p{Ll}\p{Lu}|\p{Lu}\p{Lu}\p{Ll}|\p{L}\p{N}|\p{N}\p{L}` for ASCII. */
function asciiCompound(text: string, a: number, b: number): boolean {
  for (let j = a; j < b; j++) {
    const c = text.charCodeAt(j);
    if (isJoin(c)) return true;
    if (j + 1 >= b) break;
    const d = text.charCodeAt(j + 1);
    if (isLower(c) && isUpper(d)) return true;
    if (isUpper(c) && isUpper(d) && j + 2 < b && isLower(text.charCodeAt(j + 2))) return true;
    if ((isLower(c) || isUpper(c)) && isDigit(d)) return true;
    if (isDigit(c) && (isLower(d) || isUpper(d))) return true;
  }
  return false;
}

/** `identifierParts` for ASCII (`CAMEL` in each piece between `_` and `$`), pushing parts longer than one character. */
function pushAsciiParts(text: string, a: number, b: number, whole: string, out: string[]): void {
  let i = a;
  while (i < b) {
    const c = text.charCodeAt(i);
    if (isJoin(c)) {
      i++;
      continue;
    }
    const s = i;
    if (isUpper(c)) {
      // `\p{Lu}+(?!\p{Ll})`, else `\p{Lu}?\p{Ll}+`
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
    if (i - s > 1) {
      // `whole` is text[a, b) lower-cased, character for character
      const p = whole.slice(s - a, i - a);
      if (p !== whole) out.push(p);
    }
  }
}

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

/** The code-aware token stream of `text`, space-separated, ready for an FTS column. */
export function codeTokenText(text: string): string {
  const out: string[] = [];
  pushCodeTokens(text, out);
  return out.join(' ');
}

/** Tokens of a repository path: every segment, the file's stem, and their identifier parts. */
export function pathTokenText(path: string): string {
  return codeTokenText(path.replace(/[/.-]+/g, ' '));
}
