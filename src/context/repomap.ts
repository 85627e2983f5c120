import { redactSecrets } from '../chunk/redact.ts';
import { countTokens } from '../llm/tokens.ts';
import type { MapEntry, RepoMap } from '../project/types.ts';
import type { CompactGraph, ReferenceGraph, Store } from '../store/types.ts';
import { fileRole } from '../workspace/roles.ts';
import { type Ranked, rankGraph } from './map-rank.ts';
import {
  SIGNATURE_SCAN,
  SIGNATURE_SPAN,
  type Signature,
  type SignatureRow,
  signatureAt,
} from './signatures.ts';

export type { MapEntry, RepoMap } from '../project/types.ts';
export type { CompactGraph } from '../store/types.ts';

export interface RepoMapOptions {
  /** Tokens the map may use. */
  budget: number;
  /** Files the ranking leans towards (those already in the context): the random surfer restarts at them too. */
  focus?: string[];
  /**
   * Definitions listed per file. Default 3: measured on the practice sets, a 1,000-token map showed a gold file for
   * 49% of the questions with 3 (14 files), 34% with 6, 17% with 12 (docs/context.md).
   */
  defsPerFile?: number;
  /**
   * Words of the question (`questionMentions`): the files whose path or definitions hold them lead the ranking
   * (Aider's personalisation, weighed by how rare each word is), and so do a file's definitions that spell them.
   */
  mentions?: string[];
  /** Each definition's signature line with its enclosing scope (default), or only `line: kind name`. */
  signatures?: boolean;
}

/**
 * The words of a question that may name a definition or a file: identifiers of 3+ characters (`acquireWriter`,
 * `parse_config`, the parts of `Session.flush` and of `src/store/sqlite.ts`), lower-case words included.
 */
export function questionMentions(question: string): string[] {
  const out = new Set<string>();
  for (const w of question.split(/[^A-Za-z0-9_$]+/)) if (w.length >= 3 && !/^\d/.test(w)) out.add(w);
  return [...out];
}

/** A ReferenceGraph (objects, from any store) in columns. */
export function compactGraph(graph: ReferenceGraph): CompactGraph {
  const files = new Map<string, number>();
  const names = new Map<string, number>();
  const number = (m: Map<string, number>, key: string) => {
    const known = m.get(key);
    if (known !== undefined) return known;
    m.set(key, m.size);
    return m.size - 1;
  };
  const defs = graph.defs.filter((d) => d.kind !== 'variable');
  const defFile = new Int32Array(defs.length);
  const defName = new Int32Array(defs.length);
  const defConstant = new Uint8Array(defs.length);
  defs.forEach((d, i) => {
    defFile[i] = number(files, d.path);
    defName[i] = number(names, d.name);
    defConstant[i] = d.kind === 'constant' ? 1 : 0;
  });
  const uses = graph.refs.filter((r) => names.has(r.name));
  const useFile = new Int32Array(uses.length);
  const useName = new Int32Array(uses.length);
  const useCount = new Int32Array(uses.length);
  uses.forEach((r, i) => {
    useFile[i] = number(files, r.path);
    useName[i] = names.get(r.name)!;
    useCount[i] = r.count;
  });
  return {
    paths: [...files.keys()],
    names: [...names.keys()],
    defFile,
    defName,
    defConstant,
    useFile,
    useName,
    useCount,
  };
}

/**
 * The map's entries, ranked: a group of build-tag or platform twins is one entry, its leader's, which the graph
 * ranked as one file and which lists the others (`twins`).
 */
interface Groups {
  /** Leaders and files with no twin, best first; equal ranks by path. */
  order: number[];
  twins: (file: number) => string[];
}

function grouped(g: CompactGraph, ranked: Ranked, files: Iterable<number>): Groups {
  const { leader, fileRank } = ranked;
  const members = new Map<number, string[]>();
  const entries = new Set<number>();
  for (const f of files) {
    const l = leader[f]! < 0 ? f : leader[f]!;
    entries.add(l);
    if (l === f) continue;
    const list = members.get(l);
    if (list) list.push(g.paths[f]!);
    else members.set(l, [g.paths[f]!]);
  }
  const order = [...entries].sort(
    (a, b) => fileRank[b]! - fileRank[a]! || g.paths[a]!.localeCompare(g.paths[b]!),
  );
  return { order, twins: (f) => (members.get(f) ?? []).sort() };
}

/**
 * Ranks files and their definitions by how much the rest of the code refers to them (`rankGraph`): every file that
 * defines something, with all its definitions, best first; twins folded into one entry (`twins`).
 */
export function rankDefinitions(
  graph: ReferenceGraph,
  focus: string[] = [],
  mentions: string[] = [],
): MapEntry[] {
  const g = compactGraph(graph);
  if (!g.paths.length) return [];
  const ranked = rankGraph(g, { focus, mentions });
  const names = new Map(g.names.map((name, k) => [name, k]));
  const ids = new Map(g.paths.map((p, i) => [p, i]));
  const defsOf = new Map<number, ReferenceGraph['defs']>();
  for (const d of graph.defs) {
    if (d.kind === 'variable') continue;
    const id = ids.get(d.path)!;
    const list = defsOf.get(id);
    if (list) list.push(d);
    else defsOf.set(id, [d]);
  }
  const groups = grouped(g, ranked, defsOf.keys());
  return groups.order.map((id) => {
    const twins = groups.twins(id);
    const defs = defsOf.get(id)!.map((d) => ({
      name: d.name,
      kind: d.kind,
      line: d.line,
      container: d.container,
      rank: ranked.defRank(id, names.get(d.name)!),
    }));
    defs.sort((a, b) => b.rank - a.rank || a.line - b.line);
    return { path: g.paths[id]!, rank: ranked.fileRank[id]!, defs, ...(twins.length ? { twins } : {}) };
  });
}

/** The definitions a file's block shows: its best few, one per name and scope (a property's getter, not its setter). */
function shownDefs(e: MapEntry, defsPerFile: number): MapEntry['defs'] {
  const seen = new Set<string>();
  const shown: MapEntry['defs'] = [];
  for (const d of e.defs) {
    if (shown.length >= defsPerFile) break;
    const key = `${d.container ?? ''}\0${d.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    shown.push(d);
  }
  return shown;
}

/** A file's name in the map, with its twins': `codec/json/json.go (also in go_json.go, jsoniter.go, sonic.go)`. */
function header(e: MapEntry): string {
  if (!e.twins?.length) return e.path;
  const names = e.twins.map((t) => t.slice(t.lastIndexOf('/') + 1));
  const listed = names.length > 4 ? [...names.slice(0, 3), `${names.length - 3} more`] : names;
  return `${e.path} (also in ${listed.join(', ')})`;
}

function renderEntry(e: MapEntry, defsPerFile: number): string {
  const shown = shownDefs(e, defsPerFile).sort((a, b) => a.line - b.line);
  const lines = shown.map((d) => `  ${d.line}: ${d.kind} ${d.container ? `${d.container}.` : ''}${d.name}`);
  const more = e.defs.length - shown.length;
  if (more > 0) lines.push(`  … ${more} more`);
  return `${header(e)}\n${lines.join('\n')}\n`;
}

/** Definitions a file shows in the map by default (more files, each with its best few, beat fewer files in full). */
const DEFS_PER_FILE = 3;

type SignatureOf = (d: MapEntry['defs'][number]) => Signature | undefined;

/**
 * A file's block as signatures (Aider's map, as a tree-sitter context view): each shown definition's signature,
 * numbered, its decorators above it, after the signature of its enclosing definition (the class of a method) when
 * that is not shown itself; `⋮` where lines are left out.
 */
function renderSignatures(e: MapEntry, defsPerFile: number, signatureOf: SignatureOf): string {
  const shown = shownDefs(e, defsPerFile);
  const rows = new Map<number, SignatureRow>();
  const put = (sig: Signature) => {
    for (const row of [...sig.decorators, sig]) if (!rows.has(row.line)) rows.set(row.line, row);
  };
  for (const d of shown) {
    const sig = signatureOf(d);
    if (sig === undefined) continue;
    put(sig);
    // the enclosing scope: the nearest definition above that contains this one, by name
    const scope = d.container ? e.defs.find((o) => o.name === d.container && o.line < d.line) : undefined;
    const outer = scope ? signatureOf(scope) : undefined;
    if (outer && !rows.has(outer.line)) put({ ...outer, decorators: [] });
  }
  if (!rows.size) return renderEntry(e, defsPerFile);
  const width = String(Math.max(...rows.keys())).length;
  const out: string[] = [`${header(e)}:`];
  let last = 0;
  for (const line of [...rows.keys()].sort((a, b) => a - b)) {
    const row = rows.get(line)!;
    if (line <= last) continue; // inside a signature joined from several lines
    if (last && line > last + 1) out.push(`${' '.repeat(width)}⋮`);
    out.push(`${String(line).padStart(width)}│${row.text.trimEnd()}`);
    last = row.end;
  }
  const more = e.defs.length - shown.length;
  if (more > 0) out.push(`${' '.repeat(width)}⋮ ${more} more`);
  return `${out.join('\n')}\n`;
}

/** Entries worth a map's tokens: named definitions, and no constants of test files (fixtures, expected values). */
function worthShowing(e: MapEntry): MapEntry | undefined {
  const test = fileRole(e.path) === 'test';
  const defs = e.defs.filter(
    (d) => d.name.trim() && !(test && (d.kind === 'constant' || d.kind === 'variable')),
  );
  return defs.length ? { ...e, defs } : undefined;
}

/**
 * Definitions, and the uses of defined names per file: only a name that something defines can link two files, so
 * the store is asked about those names alone.
 */
export async function referenceGraph(store: Store): Promise<ReferenceGraph> {
  // module-level variables (`app`, `router`, `config`) are symbols for `def`, but too many and too generic to map
  const defs = (await store.allDefinitions()).filter((d) => d.kind !== 'variable');
  if (!store.references) return { defs, refs: [] };
  return { defs, refs: await store.references.useCounts([...new Set(defs.map((d) => d.name))]) };
}

/** Files with a definition worth a map's tokens (worthShowing, from the columns: a name, and no test constants). */
function worthFiles(g: CompactGraph): Set<number> {
  const worth = new Set<number>();
  const test = new Int8Array(g.paths.length).fill(-1); // a file's role, asked once: 1 for a test file
  for (let i = 0; i < g.defFile.length; i++) {
    const file = g.defFile[i]!;
    if (worth.has(file) || !g.names[g.defName[i]!]!.trim()) continue;
    if (g.defConstant[i] && test[file] === -1) test[file] = fileRole(g.paths[file]!) === 'test' ? 1 : 0;
    if (!g.defConstant[i] || test[file] === 0) worth.add(file);
  }
  return worth;
}

/**
 * The repository map within a token budget: the best-ranked files first, each with its top definitions. The graph is
 * ranked in columns; a file's definitions are read (with their kinds and lines) only when its turn comes.
 */
export async function buildRepoMap(store: Store, options: RepoMapOptions): Promise<RepoMap> {
  const g = store.references?.compactGraph
    ? await store.references.compactGraph()
    : compactGraph(await referenceGraph(store));
  const ranked = rankGraph(g, { focus: options.focus ?? [], mentions: options.mentions ?? [] });
  const groups = grouped(g, ranked, worthFiles(g));
  const { order } = groups;
  const names = new Map(g.names.map((name, k) => [name, k]));
  /** A file's entry: its definitions (variables left out) from the store, ranked as the graph ranks them. */
  const entriesOf = async (files: number[]): Promise<MapEntry[]> => {
    const symbols = await store.listSymbols(files.map((id) => g.paths[id]!));
    return files.flatMap((id) => {
      const path = g.paths[id]!;
      const defs = (symbols.get(path) ?? [])
        .filter((s) => s.kind !== 'variable')
        .map((s) => ({
          name: s.name,
          kind: s.kind,
          line: s.startLine,
          container: s.container,
          rank: names.has(s.name) ? ranked.defRank(id, names.get(s.name)!) : 0,
        }))
        .sort((a, b) => b.rank - a.rank || a.line - b.line);
      const twins = groups.twins(id);
      const entry = worthShowing({
        path,
        rank: ranked.fileRank[id]!,
        defs,
        ...(twins.length ? { twins } : {}),
      });
      return entry ? [entry] : [];
    });
  };
  const per = options.defsPerFile ?? DEFS_PER_FILE;
  const signatures = options.signatures !== false;
  const kept: MapEntry[] = [];
  let text = '';
  let tokens = 0;
  let omitted = order.length;
  // files are read a few at a time, in rank order, until the budget is spent (a map shows tens of files)
  const BATCH = 16;
  for (let i = 0; i < order.length; i += BATCH) {
    const files = order.slice(i, i + BATCH);
    const batch = await entriesOf(files);
    omitted -= files.length - batch.length; // (none: the columns chose the same files)
    const lines = signatures ? await definitionLines(store, batch, per) : undefined;
    for (const e of batch) {
      // a signature line is code as written: a secret in a definition (`AWS_KEY = "AKIA…"`) is redacted, on every
      // face and in every prompt, as retrieved code is
      const block = lines
        ? (
            await redactSecrets(
              renderSignatures(e, per, (d) => signatureAt(lines.get(e.path), d.line, d.name, d.kind, e.path)),
              { path: e.path },
            )
          ).text
        : renderEntry(e, per);
      const t = countTokens(block);
      if (tokens + t > options.budget) continue;
      kept.push(e);
      text += block;
      tokens += t;
    }
    if (options.budget - tokens < 20) {
      // nothing more fits: the rest are omitted without reading them
      return { entries: kept, text, tokens, omitted: omitted - kept.length };
    }
  }
  return { entries: kept, text, tokens, omitted: omitted - kept.length };
}

/** The text of each entry's definition lines, from the index's chunks (by line number, per path). */
async function definitionLines(
  store: Store,
  entries: MapEntry[],
  defsPerFile: number,
): Promise<Map<string, Map<number, string>>> {
  const chunks = await store.getFilesChunks(entries.map((e) => e.path));
  const out = new Map<string, Map<number, string>>();
  for (const e of entries) {
    // the lines from each shown definition's first (and its enclosing scope's) to where its signature may be
    const wanted = new Set<number>();
    const shown = shownDefs(e, defsPerFile);
    const containers = new Set(shown.map((d) => d.container).filter(Boolean));
    for (const d of e.defs)
      if (shown.includes(d) || containers.has(d.name))
        for (let n = d.line; n <= d.line + SIGNATURE_SCAN + SIGNATURE_SPAN; n++) wanted.add(n);
    const got = new Map<number, string>();
    for (const c of chunks.get(e.path) ?? []) {
      const text = c.text.split('\n');
      for (let k = 0; k < text.length; k++) {
        const line = c.startLine + k;
        if (wanted.has(line) && !got.has(line)) got.set(line, text[k] as string);
      }
    }
    out.set(e.path, got);
  }
  return out;
}
