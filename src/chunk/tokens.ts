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
