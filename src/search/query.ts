import { identifierParts, pushCodeTokens } from '../chunk/tokens.ts';
import type { FileNameQuery } from '../store/types.ts';

/** English words that carry no meaning for code search. Code keywords are kept: BM25 weighs them itself. */
export const STOPWORDS = new Set(
  `a about above after again against all am an and any are aren as at be because been before being below between
  both but by can cannot could did didn do does doesn doing don down during each few for from further had has have
  having he her here hers herself him himself his how however i if in into is isn it its itself just let me more most
  my myself no nor not now of off on once only or other ought our ours ourselves out over own same she should so some
  such than that the their theirs them themselves then there these they this those through to too under until up
  upon us very was wasn we were weren what when where which while who whom why will with won would you your yours
  yourself yourselves also via etc e.g i.e eg ie get got see seem seems like using use used way want make made
  thing things something anything`
    .split(/\s+/)
    .filter(Boolean),
);

export interface AnalyzedQuery {
  raw: string;
  /** Code-aware tokens for BM25, stopwords removed, first occurrence order, no duplicates. */
  terms: string[];
  /** Words that may name a definition, lower-cased, each with how strongly it looks like one (0..1). */
  identifiers: Map<string, number>;
  /** File names the query may mention, each with how strongly (0..1). */
  fileNames: { query: FileNameQuery; strength: Map<string, number> };
  /**
   * Text the code may contain verbatim: strings the query quotes and error messages it pastes (`ValueError: …`,
   * `panic: …`), each of two words or more.
   */
  literals: string[];
  /**
   * The whole query when it is a piece of code pasted as it is (`c.req.param(`, `std::vector<int>`, `user.id ==`):
   * looked up verbatim (the trigram index), since its tokens alone match every file that mentions `param`.
   */
  code: string | null;
}

const MAX_TERMS = 64;
const EXT = /\.([a-z0-9]{1,10})$/i;

function looksLikeIdentifier(word: string): boolean {
  return /[a-z][A-Z]|[A-Z]{2,}[a-z]|_|\w\.\w|[a-z]\d/.test(word);
}

/** Splits a question into the pieces each retriever uses. */
export function analyzeQuery(raw: string): AnalyzedQuery {
  const tokens: string[] = [];
  pushCodeTokens(raw, tokens);
  const terms = [...new Set(tokens.filter((t) => !STOPWORDS.has(t)))].slice(0, MAX_TERMS);

  const identifiers = new Map<string, number>();
  const strength = new Map<string, number>();
  const basenames = new Set<string>();
  const stems = new Set<string>();
  const fragments = new Set<string>();
  const note = (map: Map<string, number>, key: string, s: number) =>
    map.set(key, Math.max(map.get(key) ?? 0, s));

  // backticked or called names (`parseConfig`, parse_config()) are code for sure
  const codeSpans = new Set<string>();
  // (a name starts only where a word does: from anywhere inside a long word, the scan was quadratic)
  for (const m of raw.matchAll(/`([^`\n]{1,120})`|(?<![\w$])([A-Za-z_$][\w$]*)\(\)/g))
    codeSpans.add((m[1] ?? m[2])!.trim());

  // words keep dots, slashes and dashes so that `registry.py`, `src/server` and `trie-router` survive
  for (const m of raw.matchAll(/[A-Za-z0-9_$][\w$./-]*[\w$]|[A-Za-z0-9_$]/g)) {
    const word = m[0].replace(/^\.\//, '');
    const lower = word.toLowerCase();
    const inCode = codeSpans.has(word) || [...codeSpans].some((c) => c.includes(word));
    if (word.includes('/')) {
      const frag = lower.replace(/\/+$/, '');
      const segments = frag.split('/').filter(Boolean);
      if (segments.length >= 2) {
        const last = segments[segments.length - 1]!;
        if (EXT.test(last)) {
          basenames.add(last);
          note(strength, last, 1);
        }
        const noExt = frag.replace(EXT, '');
        fragments.add(noExt);
        note(strength, noExt, 1);
      }
      continue;
    }
    const ext = EXT.exec(word);
    if (ext && !/^\d+$/.test(ext[1]!) && word.indexOf('.') > 0) {
      // `registry.py`, but also `config.load` (a member access): both are worth a look
      basenames.add(lower);
      note(strength, lower, 1);
      const stem = lower.slice(0, lower.indexOf('.'));
      if (stem.length >= 3) {
        stems.add(stem);
        note(strength, stem, 0.6);
      }
      for (const part of word.split('.')) if (part.length >= 3) note(identifiers, part.toLowerCase(), 0.8);
      continue;
    }
    if (lower.length < 3 || STOPWORDS.has(lower) || /^\d+$/.test(lower)) continue;
    const compound = looksLikeIdentifier(word) || word.includes('-');
    const s = inCode ? 1 : compound ? 0.8 : 0.35;
    const parts = identifierParts(word);
    const variants = new Set([lower]);
    if (parts.length > 1) {
      variants.add(parts.join('-'));
      variants.add(parts.join('_'));
      variants.add(parts.join(''));
    }
    for (const v of variants) {
      stems.add(v);
      note(strength, v, s);
    }
    if (!word.includes('-')) note(identifiers, lower, s);
  }
  // a stack trace's frames name functions for sure (`File "a.py", line 3, in load`, `at load (src/a.ts:3:5)`)
  for (const fn of frameFunctions(raw)) note(identifiers, fn.toLowerCase(), 1);
  return {
    raw,
    terms,
    identifiers,
    literals: quotedLiterals(raw),
    code: codeFragment(raw),
    fileNames: {
      query: { basenames: [...basenames], stems: [...stems], fragments: [...fragments] },
      strength,
    },
  };
}

/**
 * The query, when it reads as code rather than words: 4–200 characters with code punctuation between identifiers
 * (`.` `(` `::` `->` `=` `[` `<`), and at most three spaces (a sentence about code is no code).
 */
export function codeFragment(raw: string): string | null {
  const text = raw.trim();
  if (text.length < 4 || text.length > 200 || /[\u0000-\u001f]/.test(text)) return null;
  if ((text.match(/ /g)?.length ?? 0) > 3) return null;
  if (!/[A-Za-z_$]/.test(text)) return null;
  // punctuation that prose does not put between identifiers: a call, a member, a path, an index, a comparison
  if (!/[A-Za-z_$\d][.([<]|::|->|=>|[=!]=|\)\s*[.;{]|\w\(/.test(text)) return null;
  // "v2.0", "e.g.", a file name: not code to paste
  if (/^[\w-]+\.[a-z0-9]{1,5}$/i.test(text) || /^[\d.]+$/.test(text)) return null;
  return text;
}

const MAX_LITERALS = 8;
/** A quoted string: after no word character (an apostrophe inside a word is no quote), 10–200 characters. */
const QUOTED = /(?<![\w\\])"([^"\n]{10,200})"(?!\w)|(?<![\w\\])'([^'\n]{10,200})'(?!\w)/g;
/** The message of an error line a traceback or a log ends with: `KeyError: …`, `error[E0308]: …`, `panic: …`. */
const ERROR_LINE =
  /^[ \t>]*(?:[\w.]+\.)?(?:[A-Z]\w*(?:Error|Exception|Warning|Fault)|error(?:\[\w+\])?|panic|fatal|FATAL|ERROR)\s*:\s*(.{10,200}?)\s*$/gm;

/** Strings the query quotes and error messages it pastes, of two words or more (one word is an identifier's job). */
export function quotedLiterals(raw: string): string[] {
  const out = new Set<string>();
  const keep = (s: string | undefined) => {
    const text = s?.trim().replace(/\s+/g, ' ');
    if (text?.includes(' ') && /[A-Za-z]{2}/.test(text)) out.add(text);
  };
  for (const m of raw.matchAll(QUOTED)) keep(m[1] ?? m[2]);
  for (const m of raw.matchAll(ERROR_LINE)) keep(m[1]);
  return [...out].slice(0, MAX_LITERALS);
}

/**
 * Python's `File "…", line N, in name`, V8's `at name (file:line:col)` / `at Class.name (…)`, and the JVM's
 * `at pkg.Class.name(File.java:12)`.
 */
const FRAME =
  /\bFile "[^"\n]+", line \d+, in ([A-Za-z_]\w*)|^\s*at (?:async )?(?:[\w$.]+\.)?([A-Za-z_$][\w$]*) \(|^\s*at (?:[\w$]+\.)+([A-Za-z_$][\w$]*)\([\w$]+\.\w+:\d+\)/gm;

/** The functions a pasted stack trace's frames name. */
export function frameFunctions(raw: string): string[] {
  const out = new Set<string>();
  for (const m of raw.matchAll(FRAME)) {
    const name = m[1] ?? m[2] ?? m[3];
    if (name && name.length >= 3) out.add(name);
  }
  return [...out];
}
