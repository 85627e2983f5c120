import type { SymbolKind } from '../../chunk/specs.ts';
import { eachRefCount } from '../rows.ts';
import type { CompactGraph, ReferenceGraph, ReferenceIndex, RefHit, SearchFilter } from '../types.ts';
import { dataVersion, type Row, type SqliteContext } from './context.ts';
import { filterSql, ftsQuote } from './sql.ts';

/** Where each file uses each name: `file_refs` (name → lines, JSON) and `refs_fts`, one document of names a file. */
export function referenceIndex(ctx: SqliteContext): ReferenceIndex {
  return {
    find: (name, options) => findReferences(ctx, name, options),
    useCounts: (names) => useCounts(ctx, names),
    compactGraph: () => compactGraph(ctx),
  };
}

async function findReferences(
  ctx: SqliteContext,
  name: string,
  options: { limit?: number; filter?: SearchFilter } = {},
): Promise<RefHit[]> {
  const { sql: where, params } = filterSql(options.filter);
  const rows = ctx.db
    .prepare(
      `SELECT f.path, r.refs FROM refs_fts JOIN file_refs r ON r.file_id = refs_fts.rowid
         JOIN files f ON f.id = r.file_id WHERE refs_fts MATCH ? ${where} ORDER BY f.path`,
    )
    .all(ftsQuote(name), ...params) as Row[];
  const out: RefHit[] = [];
  for (const r of rows) {
    // the lexical index matched without case: keep the files that use this exact name
    const lines = (JSON.parse(r.refs as string) as Record<string, number[]>)[name];
    if (lines) out.push({ name, path: r.path as string, lines });
    if (out.length >= (options.limit ?? 500)) break;
  }
  return out;
}

export async function allDefinitions(ctx: SqliteContext): Promise<ReferenceGraph['defs']> {
  return (
    ctx.db
      .prepare(
        `SELECT s.name, f.path, s.kind, s.start_line, s.container FROM symbols s JOIN files f ON f.id = s.file_id
           ORDER BY f.path, s.start_line`,
      )
      .all() as Row[]
  ).map((r) => ({
    name: r.name as string,
    path: r.path as string,
    kind: r.kind as SymbolKind,
    line: r.start_line as number,
    container: (r.container as string | null) ?? null,
  }));
}

/**
 * The reference graph in columns: one pass over the definitions, one over the files' references (eachRefCount);
 * kept until the index changes, so a process that maps again (a chat, a server) ranks without reading it again.
 */
async function compactGraph(ctx: SqliteContext): Promise<CompactGraph> {
  const version = dataVersion(ctx);
  if (ctx.caches.graph?.version === version) return ctx.caches.graph.graph;
  const graph = readCompactGraph(ctx);
  ctx.caches.graph = { version, graph };
  return graph;
}

function readCompactGraph(ctx: SqliteContext): CompactGraph {
  const files = new Map<number, number>();
  const paths: string[] = [];
  const pathOf = new Map<number, string>();
  for (const [id, path] of ctx.db.prepare(`SELECT id, path FROM files`).raw().iterate() as Iterable<
    [number, string]
  >)
    pathOf.set(id, path);
  const fileNumber = (id: number) => {
    const known = files.get(id);
    if (known !== undefined) return known;
    files.set(id, paths.length);
    paths.push(pathOf.get(id)!);
    return paths.length - 1;
  };
  const names = new Map<string, number>();
  const defFile: number[] = [];
  const defName: number[] = [];
  const defConstant: number[] = [];
  // (all at once: iterating 533k rows one by one cost a third more than the rows themselves)
  const defs = ctx.db
    .prepare(`SELECT file_id, name, kind = 'constant' FROM symbols WHERE kind != 'variable'`)
    .raw()
    .all() as Array<[number, string, number]>;
  for (const [file, name, constant] of defs) {
    let k = names.get(name);
    if (k === undefined) {
      k = names.size;
      names.set(name, k);
    }
    defFile.push(fileNumber(file));
    defName.push(k);
    defConstant.push(constant);
  }
  const useFile: number[] = [];
  const useName: number[] = [];
  const useCount: number[] = [];
  for (const [file, refs] of ctx.db
    .prepare(`SELECT file_id, refs FROM file_refs`)
    .raw()
    .iterate() as Iterable<[number, string]>) {
    let n: number | undefined;
    eachRefCount(refs, (name, count) => {
      const k = names.get(name);
      if (k === undefined) return;
      n ??= fileNumber(file);
      useFile.push(n);
      useName.push(k);
      useCount.push(count);
    });
  }
  return {
    paths,
    names: [...names.keys()],
    defFile: Int32Array.from(defFile),
    defName: Int32Array.from(defName),
    defConstant: Uint8Array.from(defConstant),
    useFile: Int32Array.from(useFile),
    useName: Int32Array.from(useName),
    useCount: Int32Array.from(useCount),
  };
}

async function useCounts(ctx: SqliteContext, names: string[]): Promise<ReferenceGraph['refs']> {
  const wanted = new Set(names);
  const refs: ReferenceGraph['refs'] = [];
  if (!wanted.size) return refs;
  for (const r of ctx.db
    .prepare(`SELECT f.path, r.refs FROM file_refs r JOIN files f ON f.id = r.file_id ORDER BY f.path`)
    .iterate() as Iterable<Row>) {
    const path = r.path as string;
    eachRefCount(r.refs as string, (name, count) => {
      if (wanted.has(name)) refs.push({ name, path, count });
    });
  }
  return refs;
}
