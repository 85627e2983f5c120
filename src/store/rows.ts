/** Helpers every driver shares: the same file-name rules and result shapes whatever the engine. */
import type { SymbolKind } from '../chunk/specs.ts';
import type { ChunkHit, ChunkSymbol, FileRecord, StoredChunk, SymbolHit } from './types.ts';

/** A path's lower-case basename and stem (`src/Trie-Router.test.ts` → `trie-router.test.ts`, `trie-router`). */
export function fileNameParts(path: string): { basename: string; stem: string } {
  const basename = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  const dot = basename.indexOf('.', 1);
  return { basename, stem: dot > 0 ? basename.slice(0, dot) : basename };
}

/** Rows of `chunk_id, name, kind, start_line, end_line, container`, in order, as Store.chunkSymbols gives them: by chunk. */
export function groupChunkSymbols(rows: Iterable<Record<string, unknown>>): Map<number, ChunkSymbol[]> {
  const out = new Map<number, ChunkSymbol[]>();
  for (const r of rows) {
    const chunk = Number(r.chunk_id);
    const symbol = {
      name: r.name as string,
      kind: r.kind as SymbolKind,
      startLine: Number(r.start_line),
      endLine: Number(r.end_line),
      container: (r.container as string | null) ?? null,
    };
    const list = out.get(chunk);
    if (list) list.push(symbol);
    else out.set(chunk, [symbol]);
  }
  return out;
}

/**
 * Whether a path fragment matches whole path segments: `src/server` matches `src/server.ts` and `x/src/server/a.go`,
 * not `src/serverless/a.ts`. `needle` is the fragment with a leading slash.
 */
export function fragmentMatches(path: string, needle: string): boolean {
  const lp = `/${path.toLowerCase()}`;
  for (let i = lp.indexOf(needle); i >= 0; i = lp.indexOf(needle, i + 1)) {
    const next = lp[i + needle.length];
    if (next === undefined || next === '/' || next === '.') return true;
  }
  return false;
}

/** Items grouped by their path, in the order they come. */
export function groupByPath<T extends { path: string }>(items: T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const it of items) {
    const list = out.get(it.path);
    if (list) list.push(it);
    else out.set(it.path, [it]);
  }
  return out;
}

type Row = Record<string, unknown>;

/** A file row (`path, size, mtime_ms, hash, language, method`) as the seam returns it. */
export function toFile(r: Row): FileRecord {
  return {
    path: r.path as string,
    size: Number(r.size),
    mtimeMs: Number(r.mtime_ms),
    hash: r.hash as string,
    language: r.language as string,
    method: r.method as FileRecord['method'],
  };
}

/** A chunk row's position (`id, path, start_line, end_line, symbol, kind`). */
export function toChunkRef(r: Row): Omit<ChunkHit, 'score'> {
  return {
    chunkId: Number(r.id),
    path: r.path as string,
    startLine: r.start_line as number,
    endLine: r.end_line as number,
    symbol: (r.symbol as string | null) ?? null,
    kind: (r.kind as SymbolKind | null) ?? null,
  };
}

/** A chunk row with its text (`… ordinal, container, text`). */
export function toChunk(r: Row): StoredChunk {
  return {
    ...toChunkRef(r),
    ordinal: r.ordinal as number,
    container: (r.container as string | null) ?? null,
    text: r.text as string,
  };
}

/** A chunk row with a `score`. */
export function toHit(r: Row): ChunkHit {
  return { ...toChunkRef(r), score: Number(r.score) };
}

/** A symbol row (`name, kind, path, start_line, end_line, container, chunk_id`). */
export function toSymbol(r: Row): SymbolHit {
  return {
    name: r.name as string,
    kind: r.kind as SymbolKind,
    path: r.path as string,
    startLine: r.start_line as number,
    endLine: r.end_line as number,
    container: (r.container as string | null) ?? null,
    chunkId: r.chunk_id == null ? null : Number(r.chunk_id),
  };
}

/**
 * Each name of a file's references (`{"parseConfig":[3,17],…}`, as JSON.stringify wrote it) with how many lines use
 * it, read without building the line arrays: the repository map counts the uses in every file of the index, and
 * JSON.parse made 10.6 million numbers to count 2.6 million names at 100,000 files (3.8 s against 0.6 s). Text with
 * an escape in it (a name JSON had to escape) goes through JSON.parse.
 */
export function eachRefCount(json: string, visit: (name: string, count: number) => void): void {
  if (json.includes('\\')) {
    for (const [name, lines] of Object.entries(JSON.parse(json) as Record<string, number[]>))
      visit(name, lines.length);
    return;
  }
  // `{"name":[1,2],"other":[5]}`: a name between quotes, then `:[`, numbers and commas, `]`
  let at = 1;
  for (;;) {
    const open = json.indexOf('"', at);
    if (open < 0) return;
    const close = json.indexOf('"', open + 1);
    let end = close + 3;
    let count = json.charCodeAt(end) === 93 ? 0 : 1;
    for (let c = json.charCodeAt(end); c !== 93 && end < json.length; c = json.charCodeAt(++end))
      if (c === 44) count++;
    visit(json.slice(open + 1, close), count);
    at = end + 1;
  }
}
