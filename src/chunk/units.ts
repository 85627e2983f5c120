/**
 * Building a file's chunks: units cut along its definitions (a definition too large for one chunk split at its first
 * child), small neighbours merged up to the target size; or, without a parse, windows of lines.
 */
import type { ChunkOptions } from '../config/config.ts';
import type { Def, SymbolDef } from './definitions.ts';
import type { NameRefs } from './references.ts';
import type { SymbolKind } from './specs.ts';

/** One piece of a file as indexed: a definition, merged small neighbours, or a line window. */
export interface Chunk {
  /** 1-based, inclusive. */
  startLine: number;
  endLine: number;
  /** The chunk's main definition, if any. */
  symbol: string | null;
  kind: SymbolKind | null;
  /** The definition that encloses this chunk (a class for its methods). */
  container: string | null;
  /** Every definition that starts inside the chunk. */
  symbols: string[];
  text: string;
}

export interface ChunkedFile {
  chunks: Chunk[];
  symbols: SymbolDef[];
  /** 'tree-sitter' when definitions were found by parsing, 'lines' for the line-window fallback. */
  method: 'tree-sitter' | 'lines';
  /** Names the file's code uses (identifier nodes), with the lines they are on; empty without a parse. */
  refs: NameRefs[];
  /**
   * tree-sitter's WebAssembly memory may be broken after this file (a parse cancelled at its deadline, or a
   * `RuntimeError` while reading the tree; a reset then failed with "memory access out of bounds" on a 100,581-file
   * run): it was chunked by lines, and a parse worker that saw it is replaced (`indexing/pool.ts`).
   */
  suspect?: boolean;
  /**
   * The parse failed for a reason other than its deadline (the grammar called a function this tree-sitter runtime
   * lacks, say): a grammar that keeps doing so is given up for the rest of the run (`indexing/pool.ts`).
   */
  parseError?: boolean;
}

/** A piece of a file that merging keeps whole: a definition (or its head, or a window of it) or the lines between. */
interface Unit {
  start: number;
  end: number;
  chars: number;
  symbol: string | null;
  kind: SymbolKind | null;
  container: string | null;
  names: string[];
}

class LineText {
  readonly lines: string[];
  private readonly prefix: number[];
  constructor(text: string) {
    this.lines = text.split(/\r?\n/);
    this.prefix = new Array(this.lines.length + 1);
    this.prefix[0] = 0;
    for (let i = 0; i < this.lines.length; i++)
      this.prefix[i + 1] = this.prefix[i]! + this.lines[i]!.length + 1;
  }
  chars(start: number, end: number): number {
    return this.prefix[end + 1]! - this.prefix[start]!;
  }
  blank(start: number, end: number): boolean {
    for (let i = start; i <= end; i++) if (this.lines[i]!.trim() !== '') return false;
    return true;
  }
  slice(start: number, end: number): string {
    return this.lines.slice(start, end + 1).join('\n');
  }
}

/** Windows over rows [start, end] of at most `maxChars` characters and `maxLines` lines. */
function windows(
  lt: LineText,
  start: number,
  end: number,
  maxChars: number,
  maxLines: number,
  overlap: number,
): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let s = start;
  while (s <= end) {
    let e = s;
    while (e < end && e - s + 1 < maxLines && lt.chars(s, e + 1) <= maxChars) e++;
    out.push([s, e]);
    if (e >= end) break;
    s = Math.max(s + 1, e + 1 - overlap);
  }
  return out;
}

function trimBlank(lt: LineText, start: number, end: number): [number, number] | undefined {
  while (start <= end && lt.lines[start]!.trim() === '') start++;
  while (end >= start && lt.lines[end]!.trim() === '') end--;
  return start <= end ? [start, end] : undefined;
}

function unitsFor(
  lt: LineText,
  defs: Def[],
  from: number,
  to: number,
  container: string | null,
  o: ChunkOptions,
) {
  const units: Unit[] = [];
  const plain = (
    s: number,
    e: number,
    symbol: string | null,
    kind: SymbolKind | null,
    names: string[],
    owner: string | null = container,
  ) => {
    const t = trimBlank(lt, s, e);
    if (!t) return;
    for (const [ws, we] of windows(lt, t[0], t[1], o.maxChars, Number.MAX_SAFE_INTEGER, 0))
      units.push({
        start: ws,
        end: we,
        chars: lt.chars(ws, we),
        symbol,
        kind,
        container: owner,
        names: ws === t[0] ? names : [],
      });
  };
  let cursor = from;
  for (const d of defs) {
    const s = Math.max(d.start, cursor);
    const e = Math.min(d.end, to);
    if (s > e) continue;
    if (s > cursor) plain(cursor, s - 1, null, null, []);
    const firstChild = d.children.find((c) => c.start > s);
    const own = d.owner ?? container;
    if (lt.chars(s, e) <= o.maxChars || !firstChild) {
      plain(s, e, d.name, d.kind, [d.name], own);
    } else {
      plain(s, firstChild.start - 1, d.name, d.kind, [d.name], own);
      units.push(...unitsFor(lt, d.children, firstChild.start, e, d.name, o));
    }
    cursor = e + 1;
  }
  if (cursor <= to) plain(cursor, to, null, null, []);
  return units;
}

function mergeUnits(lt: LineText, units: Unit[], o: ChunkOptions): Chunk[] {
  const chunks: Chunk[] = [];
  let group: Unit[] = [];
  const flush = () => {
    if (!group.length) return;
    const start = group[0]!.start;
    const end = group[group.length - 1]!.end;
    // a class header merged with its first methods still reads as the class; otherwise the largest definition
    let main = group.find((u) => u.symbol && group.some((v) => v !== u && v.container === u.symbol));
    if (!main) for (const u of group) if (u.symbol && (!main || u.chars > main.chars)) main = u;
    chunks.push({
      startLine: start + 1,
      endLine: end + 1,
      symbol: main?.symbol ?? null,
      kind: main?.kind ?? null,
      container: main ? main.container : (group[0]!.container ?? null),
      symbols: [...new Set(group.flatMap((u) => u.names))],
      text: lt.slice(start, end),
    });
    group = [];
  };
  for (const u of units) {
    if (group.length) {
      const size = lt.chars(group[0]!.start, u.end);
      if (size > o.targetChars) flush();
    }
    group.push(u);
  }
  flush();
  return chunks;
}

/** The chunks of a parsed file: units along its definitions `defs`, small neighbours merged. */
export function chunksOf(text: string, defs: Def[], o: ChunkOptions): Chunk[] {
  const lt = new LineText(text);
  const units = unitsFor(lt, defs, 0, lt.lines.length - 1, null, o);
  return mergeUnits(lt, units, o);
}

/** Line windows with overlap: the fallback for text files and files that fail to parse. */
export function chunkByLines(text: string, o: ChunkOptions): ChunkedFile {
  const lt = new LineText(text);
  const t = trimBlank(lt, 0, lt.lines.length - 1);
  const chunks: Chunk[] = [];
  if (t) {
    for (const [s, e] of windows(lt, t[0], t[1], o.maxChars, o.windowLines, o.overlapLines)) {
      const tt = trimBlank(lt, s, e);
      if (!tt) continue;
      chunks.push({
        startLine: tt[0] + 1,
        endLine: tt[1] + 1,
        symbol: null,
        kind: null,
        container: null,
        symbols: [],
        text: lt.slice(tt[0], tt[1]),
      });
    }
  }
  return { chunks, symbols: [], method: 'lines', refs: [] };
}
