import { pushCodeTokens } from '../chunk/tokens.ts';
import type { ChunkSymbol, Store, StoredChunk } from '../store/types.ts';
import { type Candidate, round } from './candidates.ts';
import type { SearchResult } from './modes.ts';

// The last stage of a search: the shown chunks as results, each with its stored text's snippet, where the query's
// words are densest in it, the label of the definition it names, and its signals.

/** The shown chunks as results: their stored text's snippet and place, and each signal. */
export async function presentResults(
  store: Store,
  top: Candidate[],
  terms: string[],
): Promise<SearchResult[]> {
  const ids = top.map((c) => c.hit.chunkId);
  const [chunks, symbols] = await Promise.all([store.getChunks(ids), store.chunkSymbols(ids)]);
  const texts = new Map(chunks.map((c) => [c.chunkId, c]));
  const termSet = new Set(terms);
  // scores as printed never rise down the list: after diversification a result keeps at most the score above it
  let ceiling = Number.POSITIVE_INFINITY;
  return top.map((c) => {
    const stored = texts.get(c.hit.chunkId) as StoredChunk | undefined;
    const startLine = stored?.startLine ?? c.hit.startLine;
    const snip = stored ? makeSnippet(stored.text, termSet) : { text: '', offset: 0, line: 0, column: 0 };
    ceiling = Math.min(ceiling, round(c.final));
    return {
      path: c.hit.path,
      startLine,
      endLine: stored?.endLine ?? c.hit.endLine,
      ...matchedSymbol(
        {
          symbol: stored?.symbol ?? c.hit.symbol,
          kind: stored?.kind ?? c.hit.kind,
          container: stored?.container ?? null,
        },
        symbols.get(c.hit.chunkId) ?? [],
        termSet,
      ),
      score: ceiling,
      snippet: snip.text,
      snippetLine: startLine + snip.offset,
      line: startLine + snip.line,
      column: snip.column + 1,
      signals: {
        lexical: round(c.lexical),
        fileLexical: round(c.fileLexical),
        fileHint: round(c.fileHint),
        symbolHint: round(c.symbolHint),
        exact: round(c.exact),
        dense: round(c.dense),
      },
      chunkId: c.hit.chunkId,
    };
  });
}

/**
 * The label of a shown chunk: the definition in it that the query's words name, where the chunk holds several
 * definitions side by side (small definitions merged into one chunk are labelled by their largest; `acquireWriter`
 * asked for is named, not the `schemaVersion` above it), else the chunk's own; with its container (`DigestAuth` of
 * `_build_auth_header`). Only an outermost definition of the chunk can name it: a function nested in the method the
 * chunk is (`digest` in `_build_auth_header`), or a method of the class the chunk holds whole, is part of it.
 */
function matchedSymbol(
  own: { symbol: string | null; kind: string | null; container: string | null },
  symbols: ChunkSymbol[],
  terms: ReadonlySet<string>,
): { symbol: string | null; kind: string | null; container?: string } {
  let best: ChunkSymbol | undefined;
  // the chunk's own label wins a tie: it is the definition the chunk was cut for
  let bestScore = own.symbol ? nameScore(own.symbol, terms) : 0;
  const inside = (s: ChunkSymbol) =>
    symbols.some(
      (t) =>
        t !== s &&
        t.startLine <= s.startLine &&
        t.endLine >= s.endLine &&
        (t.startLine < s.startLine || t.endLine > s.endLine),
    );
  for (const s of symbols) {
    if (inside(s)) continue;
    const score = nameScore(s.name, terms);
    if (score > bestScore) {
      best = s;
      bestScore = score;
    }
  }
  const label = best ? { symbol: best.name, kind: best.kind, container: best.container } : own;
  return {
    symbol: label.symbol,
    kind: label.kind,
    ...(label.symbol && label.container ? { container: label.container } : {}),
  };
}

/** How well a name matches the query's words: 2 for the whole name, 1 for each of its words (camelCase, snake_case). */
function nameScore(name: string, terms: ReadonlySet<string>): number {
  const words = new Set(
    name
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .toLowerCase()
      .split(/[^a-z0-9]+/),
  );
  let score = terms.has(name.toLowerCase()) ? 2 : 0;
  for (const t of terms) if (words.has(t)) score++;
  return score;
}

/** Where in a chunk the query's words are densest: the line (0-based), and the column (0-based) of the first one. */
export function bestLine(text: string, terms: ReadonlySet<string>): { line: number; column: number } {
  const lines = text.split('\n');
  let best = 0;
  let bestScore = -1;
  for (let i = 0; i < lines.length; i++) {
    const toks: string[] = [];
    pushCodeTokens(lines[i]!, toks);
    let s = 0;
    for (const t of toks) if (terms.has(t)) s++;
    if (s > bestScore) {
      bestScore = s;
      best = i;
    }
  }
  if (bestScore <= 0) return { line: 0, column: 0 };
  const lower = lines[best]!.toLowerCase();
  let column = -1;
  for (const t of terms) {
    const at = lower.indexOf(t);
    if (at >= 0 && (column < 0 || at < column)) column = at;
  }
  return { line: best, column: Math.max(0, column) };
}

/** A few lines of the chunk around where the query's words are densest, and the offset of its first line. */
export function makeSnippet(
  text: string,
  terms: ReadonlySet<string>,
  maxLines = 4,
  maxChars = 320,
): { text: string; offset: number; line: number; column: number } {
  const lines = text.split('\n');
  const best = bestLine(text, terms);
  const start = Math.max(0, Math.min(best.line - 1, lines.length - maxLines));
  let snippet = lines
    .slice(start, start + maxLines)
    .map((l) => l.replace(/\s+$/, ''))
    .join('\n');
  if (snippet.length > maxChars) snippet = snippet.slice(0, maxChars - 1) + '…';
  return { text: snippet, offset: start, ...best };
}
