import { countTokens } from '../llm/tokens.ts';
import type { MapEntry, RepoMap } from '../project/types.ts';
import type { ReferenceGraph, Store } from '../store/types.ts';
import { type FileRole, fileRole } from '../workspace/roles.ts';

export type { MapEntry, RepoMap } from '../project/types.ts';

export interface RepoMapOptions {
  /** Tokens the map may use. */
  budget: number;
  /** Files the ranking leans towards (named in the question, in the context): Aider's personalisation. */
  focus?: string[];
  /** Definitions listed per file. Default 12. */
  defsPerFile?: number;
}

const DAMPING = 0.85;
/**
 * How much a file counts in the map by what it is for: a map shows where the code lives, so tests, examples, docs
 * and data are kept (a question may be about them) but rank below the code they exercise. Their uses of the code's
 * names still count, at a third: a large test suite otherwise decides which code looks central.
 */
const MAP_ROLE: Record<FileRole | 'aside', number> = {
  code: 1,
  test: 0.15,
  docs: 0.2,
  data: 0.2,
  aside: 0.2,
};
const FROM_ROLE: Record<FileRole | 'aside', number> = {
  code: 1,
  test: 0.33,
  docs: 0.33,
  data: 0.33,
  aside: 0.33,
};
/** Names too generic to say which definition a use means (on top of Aider's "defined in more than 5 files"). */
const GENERIC = new Set(
  'get set run init main new create update delete remove add handle handler call apply process start stop open close read write load save parse render build make value data name key type id item items list map options config index test setup default self this window document global globalthis console require module exports'.split(
    ' ',
  ),
);
/** Examples, demos, benchmarks and fixtures (vite's playground/), and generated code (protobuf, gRPC stubs). */
const EXAMPLE_DIR = /(^|\/)(examples?|samples?|demos?|playground|benchmarks?|bench)\//i;
const GENERATED =
  /(\.pb\.go|_pb2(_grpc)?\.py|\.pb\.(cc|h)|_grpc\.pb\.go|\.generated\.[a-z]+|\.g\.dart|_gen\.go)$/i;

/** What a file is for, as the map sees it: the search's roles, with examples and generated code set apart. */
function mapRole(path: string): FileRole | 'aside' {
  if (EXAMPLE_DIR.test(path) || GENERATED.test(path)) return 'aside';
  return fileRole(path);
}
const ITERATIONS = 40;
const MAX_DEFINERS = 50;

/**
 * Ranks files and their definitions by how much the rest of the code refers to them: PageRank over the graph whose
 * edges run from a file that uses a name to the files that define it (Aider's repository map). Edge weights follow
 * Aider: √(uses), ×10 for long compound names, ×0.1 for private names and for names defined in more than 5 files.
 */
export function rankDefinitions(graph: ReferenceGraph, focus: string[] = []): MapEntry[] {
  const definers = new Map<string, Set<string>>();
  for (const d of graph.defs) {
    let set = definers.get(d.name);
    if (!set) {
      set = new Set();
      definers.set(d.name, set);
    }
    set.add(d.path);
  }
  const nodes = new Set<string>(graph.defs.map((d) => d.path));
  for (const r of graph.refs) nodes.add(r.path);
  const ids = new Map([...nodes].map((p, i) => [p, i]));
  const n = ids.size;
  if (!n) return [];

  // edges (from → to, weight), and for each, which name they carry so that rank can flow to definitions
  const edges: Array<{ from: number; to: number; w: number; name: string }> = [];
  const outWeight = new Float64Array(n);
  const role = mapRole;
  for (const r of graph.refs) {
    const defs = definers.get(r.name);
    // a name that 50 files define (get, run, init) says nothing about which one a use means
    if (!defs || defs.size > MAX_DEFINERS) continue;
    let mul = FROM_ROLE[role(r.path)];
    if (r.name.length >= 8 && /[a-z][A-Z]|_[a-z]/.test(r.name)) mul *= 10;
    if (r.name.startsWith('_')) mul *= 0.1;
    if (defs.size > 5) mul *= 0.1;
    if (r.name.length <= 2 || GENERIC.has(r.name.toLowerCase())) mul *= 0.1;
    const from = ids.get(r.path)!;
    for (const dp of defs) {
      if (dp === r.path) continue;
      const w = mul * Math.sqrt(r.count);
      edges.push({ from, to: ids.get(dp)!, w, name: r.name });
      outWeight[from]! += w;
    }
  }

  // the random surfer restarts at the question's files when there are any (Aider's personalisation), else anywhere,
  // leaning toward code
  const personal = new Float64Array(n);
  const focused = focus.filter((p) => ids.has(p));
  if (focused.length) for (const p of focused) personal[ids.get(p)!] = 1 / focused.length;
  else {
    let total = 0;
    for (const [p, i] of ids) total += personal[i] = MAP_ROLE[role(p)];
    for (let i = 0; i < n; i++) personal[i]! /= total;
  }

  let rank = new Float64Array(n).fill(1 / n);
  for (let it = 0; it < ITERATIONS; it++) {
    const next = new Float64Array(n);
    let dangling = 0;
    for (let i = 0; i < n; i++) if (outWeight[i] === 0) dangling += rank[i]!;
    for (const e of edges) next[e.to]! += (DAMPING * rank[e.from]! * e.w) / outWeight[e.from]!;
    for (let i = 0; i < n; i++) next[i]! += (DAMPING * dangling + (1 - DAMPING)) * personal[i]!;
    rank = next;
  }

  // a file's rank flows to the definitions it uses, in proportion to the edge weights
  const defRank = new Map<string, number>();
  for (const e of edges) {
    const key = `${e.to}\u0000${e.name}`;
    defRank.set(key, (defRank.get(key) ?? 0) + (rank[e.from]! * e.w) / outWeight[e.from]!);
  }
  const byFile = new Map<string, MapEntry>();
  for (const d of graph.defs) {
    const id = ids.get(d.path)!;
    let entry = byFile.get(d.path);
    if (!entry) {
      entry = { path: d.path, rank: rank[id]! * MAP_ROLE[role(d.path)], defs: [] };
      byFile.set(d.path, entry);
    }
    entry.defs.push({
      name: d.name,
      kind: d.kind,
      line: d.line,
      container: d.container,
      rank: defRank.get(`${id}\u0000${d.name}`) ?? 0,
    });
  }
  const entries = [...byFile.values()];
  for (const e of entries) e.defs.sort((a, b) => b.rank - a.rank || a.line - b.line);
  return entries.sort((a, b) => b.rank - a.rank || a.path.localeCompare(b.path));
}

function renderEntry(e: MapEntry, defsPerFile: number): string {
  const shown = e.defs.slice(0, defsPerFile).sort((a, b) => a.line - b.line);
  const lines = shown.map((d) => `  ${d.line}: ${d.kind} ${d.container ? `${d.container}.` : ''}${d.name}`);
  const more = e.defs.length - shown.length;
  if (more > 0) lines.push(`  … ${more} more`);
  return `${e.path}\n${lines.join('\n')}\n`;
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

/** The repository map within a token budget: the best-ranked files first, each with its top definitions. */
export async function buildRepoMap(store: Store, options: RepoMapOptions): Promise<RepoMap> {
  const entries = rankDefinitions(await referenceGraph(store), options.focus);
  const per = options.defsPerFile ?? 12;
  const kept: MapEntry[] = [];
  let text = '';
  let tokens = 0;
  for (const e of entries) {
    const block = renderEntry(e, per);
    const t = countTokens(block);
    if (tokens + t > options.budget) continue;
    kept.push(e);
    text += block;
    tokens += t;
  }
  return { entries: kept, text, tokens, omitted: entries.length - kept.length };
}
