import { countTokens } from '../llm/tokens.ts';
import type { MapEntry, RepoMap } from '../project/types.ts';
import type { ReferenceGraph, Store } from '../store/types.ts';
import { type FileRole, fileRole } from '../workspace/roles.ts';
import { redactSecrets } from './redact.ts';

export type { MapEntry, RepoMap } from '../project/types.ts';

export interface RepoMapOptions {
  /** Tokens the map may use. */
  budget: number;
  /** Files the ranking leans towards (named in the question, in the context): Aider's personalisation. */
  focus?: string[];
  /**
   * Definitions listed per file. Default 3: measured on the practice sets, a 1,000-token map showed a gold file for
   * 49% of the questions with 3 (14 files), 34% with 6, 17% with 12 (docs/context.md).
   */
  defsPerFile?: number;
  /**
   * Words of the question (`questionMentions`): a definition whose name the question spells, and the files that
   * define it or whose path holds it, lead the ranking (Aider's personalisation by mentioned identifiers).
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
export function rankDefinitions(
  graph: ReferenceGraph,
  focus: string[] = [],
  mentions: string[] = [],
): MapEntry[] {
  const mentioned = new Set(mentions.map((m) => m.toLowerCase()));
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
    if (mentioned.has(r.name.toLowerCase())) mul *= 10;
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
  const focused = new Set(focus.filter((p) => ids.has(p)));
  // files that define a name the question spells, or whose path holds one of its words, are the question's too
  if (mentioned.size) {
    for (const d of graph.defs) if (mentioned.has(d.name.toLowerCase())) focused.add(d.path);
    for (const p of ids.keys())
      if (
        p
          .toLowerCase()
          .split(/[^a-z0-9_$]+/)
          .some((part) => part.length >= 3 && mentioned.has(part))
      )
        focused.add(p);
  }
  if (focused.size) for (const p of focused) personal[ids.get(p)!] = 1 / focused.size;
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

/** Definitions a file shows in the map by default (more files, each with its best few, beat fewer files in full). */
const DEFS_PER_FILE = 3;

/** Longest signature line shown, in characters. */
const SIGNATURE_CHARS = 160;

/**
 * A file's block as signatures (Aider's map, as a tree-sitter context view): each shown definition's first line as
 * written, numbered, after the line of its enclosing definition (the class of a method) when that is not shown
 * itself; `⋮` where lines are left out.
 */
function renderSignatures(
  e: MapEntry,
  defsPerFile: number,
  lineOf: (line: number) => string | undefined,
): string {
  const shown = e.defs.slice(0, defsPerFile);
  const rows = new Map<number, string>();
  for (const d of shown) {
    const text = lineOf(d.line);
    if (text === undefined) continue;
    rows.set(d.line, text);
    // the enclosing scope: the nearest definition above that contains this one, by name
    const scope = d.container ? e.defs.find((o) => o.name === d.container && o.line < d.line) : undefined;
    if (scope && !rows.has(scope.line)) {
      const t = lineOf(scope.line);
      if (t !== undefined) rows.set(scope.line, t);
    }
  }
  if (!rows.size) return renderEntry(e, defsPerFile);
  const width = String(Math.max(...rows.keys())).length;
  const out: string[] = [`${e.path}:`];
  let last = 0;
  for (const line of [...rows.keys()].sort((a, b) => a - b)) {
    if (last && line > last + 1) out.push(`${' '.repeat(width)}⋮`);
    const text = rows.get(line)!.trimEnd();
    out.push(
      `${String(line).padStart(width)}│${text.length > SIGNATURE_CHARS ? `${text.slice(0, SIGNATURE_CHARS)}…` : text}`,
    );
    last = line;
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

/** The repository map within a token budget: the best-ranked files first, each with its top definitions. */
export async function buildRepoMap(store: Store, options: RepoMapOptions): Promise<RepoMap> {
  const entries = rankDefinitions(await referenceGraph(store), options.focus, options.mentions)
    .map(worthShowing)
    .filter((e): e is MapEntry => e !== undefined);
  const per = options.defsPerFile ?? DEFS_PER_FILE;
  const signatures = options.signatures !== false;
  const kept: MapEntry[] = [];
  let text = '';
  let tokens = 0;
  // files are read a few at a time, in rank order, until the budget is spent (a map shows tens of files)
  const BATCH = 16;
  for (let i = 0; i < entries.length; i += BATCH) {
    const batch = entries.slice(i, i + BATCH);
    const lines = signatures ? await definitionLines(store, batch) : undefined;
    for (const e of batch) {
      // a signature line is code as written: a secret in a definition (`AWS_KEY = "AKIA…"`) is redacted, on every
      // face and in every prompt, as retrieved code is
      const block = lines
        ? (await redactSecrets(renderSignatures(e, per, (n) => lines.get(e.path)?.get(n)))).text
        : renderEntry(e, per);
      const t = countTokens(block);
      if (tokens + t > options.budget) continue;
      kept.push(e);
      text += block;
      tokens += t;
    }
    if (options.budget - tokens < 20) {
      // nothing more fits: the rest are omitted without reading them
      return { entries: kept, text, tokens, omitted: entries.length - kept.length };
    }
  }
  return { entries: kept, text, tokens, omitted: entries.length - kept.length };
}

/** The text of each entry's definition lines, from the index's chunks (by line number, per path). */
async function definitionLines(store: Store, entries: MapEntry[]): Promise<Map<string, Map<number, string>>> {
  const chunks = await store.getFilesChunks(entries.map((e) => e.path));
  const out = new Map<string, Map<number, string>>();
  for (const e of entries) {
    const wanted = new Set(e.defs.map((d) => d.line));
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
