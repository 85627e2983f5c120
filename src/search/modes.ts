import { QuarryError } from '../errors.ts';

// The words of a search that faces print and check (the modes, a result's JSON), apart from the search itself, so
// that a face that only prints another quarry's answer loads none of the ranking code.

/** The retrieval modes, in the order they are offered (every face's choices come from this list). */
export const SEARCH_MODES = ['hybrid', 'lexical', 'dense'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

/** A mode a person or an agent typed, checked (BAD_INPUT names the choices). */
export function searchMode(raw: string): SearchMode {
  if ((SEARCH_MODES as readonly string[]).includes(raw)) return raw as SearchMode;
  throw new QuarryError(
    'BAD_INPUT',
    `mode must be ${SEARCH_MODES.slice(0, -1).join(', ')} or ${SEARCH_MODES.at(-1)}`,
  );
}

/** A result as the JSON contract prints it (`quarry search --json`, the HTTP API, MCP `search_code`). */
export function resultJson(r: SearchResult) {
  const {
    repo,
    side,
    path,
    startLine,
    endLine,
    symbol,
    container,
    kind,
    score,
    snippet,
    snippetLine,
    line,
    column,
  } = r;
  return {
    ...(repo ? { repo } : {}),
    ...(side ? { side } : {}),
    path,
    startLine,
    endLine,
    symbol,
    ...(container ? { container } : {}),
    ...(symbol ? { label: resultLabel(r) } : {}),
    kind,
    score,
    snippet,
    snippetLine,
    line,
    column,
  };
}

/** One result of a search (its JSON, as every face prints it, is `resultJson`'s). */
export interface SearchResult {
  path: string;
  startLine: number;
  endLine: number;
  symbol: string | null;
  kind: string | null;
  /** The definition that holds the labelled one (`DigestAuth` of `_build_auth_header`), when there is one. */
  container?: string;
  score: number;
  snippet: string;
  /** The file line the snippet starts at. */
  snippetLine: number;
  /** The line where the query's words are densest (the chunk's first line when none occurs), and the 1-based column
   * of the first of them on it (1 when none): what `--vimgrep` prints. */
  line: number;
  column: number;
  /** Why it ranked: which signals contributed. */
  signals: {
    lexical: number;
    fileLexical: number;
    fileHint: number;
    symbolHint: number;
    /** Quoted text or a pasted error message found verbatim in the chunk. */
    exact?: number;
    dense: number;
  };
  chunkId: number;
  /** The repository, when results come from several. */
  repo?: string;
  /**
   * With a local overlay on a shared index: `local` for a file that differs from the commit the shared index was
   * built at (read from this working tree), `shared` for one as the shared index holds it.
   */
  side?: 'local' | 'shared';
}

/**
 * A result's label as every face prints it: its definition with the container that holds it
 * (`DigestAuth._build_auth_header`, `RouterGroup.Group`); a container that is not a plain name (a Rust `impl Trait for
 * Type`) is left out.
 */
export function resultLabel(r: Pick<SearchResult, 'symbol' | 'container'>): string | null {
  if (!r.symbol) return null;
  return r.container && /^[\p{L}\p{N}_$]+$/u.test(r.container) ? `${r.container}.${r.symbol}` : r.symbol;
}
