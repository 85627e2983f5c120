import { redactSecrets } from '../chunk/redact.ts';
import { countTokens } from '../llm/tokens.ts';
import type { MapEntry, RepoMap } from '../project/types.ts';
import type { CompactGraph, ReferenceGraph, Store } from '../store/types.ts';
import { type FileRole, fileRole } from '../workspace/roles.ts';

export type { MapEntry, RepoMap } from '../project/types.ts';
export type { CompactGraph } from '../store/types.ts';

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

/** Each file's rank (weighed by what the file is for), and what a file's definition of a name receives. */
interface Ranked {
  fileRank: Float64Array;
  defRank(file: number, name: number): number;
}

/**
 * PageRank over the graph whose edges run from a file that uses a name to the files that define it (Aider's
 * repository map). Edge weights follow Aider: √(uses), ×10 for long compound names, ×0.1 for private names and for
 * names defined in more than 5 files.
 *
 * The edges are never listed one by one: a use of a name sends the same weight to each of the name's definers (all
 * but the using file itself), so each iteration sums what every use of a name sends (`sent`, one pass over the uses)
 * and hands each definer that sum, less its own use. The work is the uses plus the definitions, not their product:
 * 1.7 million uses of names defined in up to 50 files each took 35 s and 1.6 GB as edge objects at 100,000 files.
 */
function rankGraph(g: CompactGraph, focus: string[], mentions: string[]): Ranked {
  const mentioned = new Set(mentions.map((m) => m.toLowerCase()));
  const n = g.paths.length;
  const roles = g.paths.map(mapRole);
  const nameCount = g.names.length;
  // each name's definers, once each (a file may define a name twice: a class and its constructor), by name
  const definerSets: Array<Set<number>> = Array.from({ length: nameCount }, () => new Set());
  for (let i = 0; i < g.defFile.length; i++) definerSets[g.defName[i]!]!.add(g.defFile[i]!);
  // names that link files: defined by at most MAX_DEFINERS files; what the name alone does to a use's weight
  const linking = new Uint8Array(nameCount);
  const nameMul = new Float64Array(nameCount);
  for (let k = 0; k < nameCount; k++) {
    const name = g.names[k]!;
    const definers = definerSets[k]!.size;
    if (!definers || definers > MAX_DEFINERS) continue;
    linking[k] = 1;
    let mul = 1;
    if (name.length >= 8 && /[a-z][A-Z]|_[a-z]/.test(name)) mul *= 10;
    if (name.startsWith('_')) mul *= 0.1;
    if (definers > 5) mul *= 0.1;
    if (name.length <= 2 || GENERIC.has(name.toLowerCase())) mul *= 0.1;
    if (mentioned.has(name.toLowerCase())) mul *= 10;
    nameMul[k] = mul;
  }
  // definer slots of each linking name, flattened, and the use (or -1) each slot's own file makes of the name
  const slotStart = new Int32Array(nameCount + 1);
  for (let k = 0; k < nameCount; k++)
    slotStart[k + 1] = slotStart[k]! + (linking[k] ? definerSets[k]!.size : 0);
  const slotFile = new Int32Array(slotStart[nameCount]!);
  for (let k = 0; k < nameCount; k++) if (linking[k]) slotFile.set([...definerSets[k]!], slotStart[k]!);
  const slotOwn = new Int32Array(slotFile.length).fill(-1);
  const slotOf = (file: number, k: number) => {
    for (let slot = slotStart[k]!; slot < slotStart[k + 1]!; slot++) if (slotFile[slot] === file) return slot;
    return -1;
  };

  // the uses that carry rank: from a file, of a name, with a weight, to every definer of the name but the file itself
  const uses: number[] = [];
  const outWeight = new Float64Array(n);
  const weight = new Float64Array(g.useFile.length);
  for (let i = 0; i < g.useFile.length; i++) {
    const k = g.useName[i]!;
    if (!linking[k]) continue;
    const from = g.useFile[i]!;
    const own = slotOf(from, k);
    const targets = slotStart[k + 1]! - slotStart[k]! - (own >= 0 ? 1 : 0);
    if (!targets) continue;
    const w = FROM_ROLE[roles[from]!] * nameMul[k]! * Math.sqrt(g.useCount[i]!);
    if (own >= 0) slotOwn[own] = i;
    uses.push(i);
    weight[i] = w;
    outWeight[from]! += w * targets;
  }
  // what one unit of a file's rank sends along each of its uses
  const share = new Float64Array(g.useFile.length);
  for (const i of uses) share[i] = weight[i]! / outWeight[g.useFile[i]!]!;

  // the random surfer restarts at the question's files when there are any (Aider's personalisation), else anywhere,
  // leaning toward code
  const personal = new Float64Array(n);
  const ids = new Map(g.paths.map((p, i) => [p, i]));
  const focused = new Set(focus.flatMap((p) => (ids.has(p) ? [ids.get(p)!] : [])));
  // files that define a name the question spells, or whose path holds one of its words, are the question's too
  if (mentioned.size) {
    for (let i = 0; i < g.defFile.length; i++)
      if (mentioned.has(g.names[g.defName[i]!]!.toLowerCase())) focused.add(g.defFile[i]!);
    g.paths.forEach((p, i) => {
      if (
        p
          .toLowerCase()
          .split(/[^a-z0-9_$]+/)
          .some((part) => part.length >= 3 && mentioned.has(part))
      )
        focused.add(i);
    });
  }
  if (focused.size) for (const i of focused) personal[i] = 1 / focused.size;
  else {
    let total = 0;
    for (let i = 0; i < n; i++) total += personal[i] = MAP_ROLE[roles[i]!];
    for (let i = 0; i < n; i++) personal[i]! /= total;
  }

  /** What each name's uses send, given the files' ranks, into `sentBy` (per use) and `sent` (per name). */
  const sentBy = new Float64Array(g.useFile.length);
  const sent = new Float64Array(nameCount);
  const send = (rank: Float64Array) => {
    sent.fill(0);
    for (const i of uses) {
      const v = rank[g.useFile[i]!]! * share[i]!;
      sentBy[i] = v;
      sent[g.useName[i]!]! += v;
    }
  };
  /** What the definer in `slot` receives: every use of the name but its own. */
  const received = (slot: number, k: number) => {
    const own = slotOwn[slot]!;
    return own < 0 ? sent[k]! : Math.max(0, sent[k]! - sentBy[own]!);
  };

  let rank = new Float64Array(n).fill(1 / n);
  for (let it = 0; it < ITERATIONS; it++) {
    const next = new Float64Array(n);
    let dangling = 0;
    for (let i = 0; i < n; i++) if (outWeight[i] === 0) dangling += rank[i]!;
    send(rank);
    for (let k = 0; k < nameCount; k++)
      for (let slot = slotStart[k]!; slot < slotStart[k + 1]!; slot++)
        next[slotFile[slot]!]! += DAMPING * received(slot, k);
    for (let i = 0; i < n; i++) next[i]! += (DAMPING * dangling + (1 - DAMPING)) * personal[i]!;
    rank = next;
  }

  // a file's rank flows to the definitions it uses, in proportion to the edge weights
  send(rank);
  const fileRank = new Float64Array(n);
  for (let i = 0; i < n; i++) fileRank[i] = sure(rank[i]! * MAP_ROLE[roles[i]!]);
  return {
    fileRank,
    defRank: (file, k) => {
      const slot = linking[k] ? slotOf(file, k) : -1;
      return slot < 0 ? 0 : sure(received(slot, k));
    },
  };
}

/** Files best first; equal ranks by path. */
function byRank(g: CompactGraph, ranked: Ranked, files: Iterable<number>): number[] {
  return [...files].sort(
    (a, b) => ranked.fileRank[b]! - ranked.fileRank[a]! || g.paths[a]!.localeCompare(g.paths[b]!),
  );
}

/**
 * Ranks files and their definitions by how much the rest of the code refers to them (`rankGraph`): every file that
 * defines something, with all its definitions, best first.
 */
export function rankDefinitions(
  graph: ReferenceGraph,
  focus: string[] = [],
  mentions: string[] = [],
): MapEntry[] {
  const g = compactGraph(graph);
  if (!g.paths.length) return [];
  const ranked = rankGraph(g, focus, mentions);
  const names = new Map(g.names.map((name, k) => [name, k]));
  const ids = new Map(g.paths.map((p, i) => [p, i]));
  const byFile = new Map<number, MapEntry>();
  for (const d of graph.defs) {
    if (d.kind === 'variable') continue;
    const id = ids.get(d.path)!;
    let entry = byFile.get(id);
    if (!entry) {
      entry = { path: d.path, rank: ranked.fileRank[id]!, defs: [] };
      byFile.set(id, entry);
    }
    entry.defs.push({
      name: d.name,
      kind: d.kind,
      line: d.line,
      container: d.container,
      rank: ranked.defRank(id, names.get(d.name)!),
    });
  }
  return byRank(g, ranked, byFile.keys()).map((id) => {
    const entry = byFile.get(id)!;
    entry.defs.sort((a, b) => b.rank - a.rank || a.line - b.line);
    return entry;
  });
}

/**
 * A rank to 12 significant digits: ranks equal but for the last digits of a float sum (a file and its copy, summed
 * in another order) are a tie, broken by line or path, whatever order the sums ran in.
 */
function sure(x: number): number {
  return x === 0 ? 0 : Number(x.toPrecision(12));
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
  signatureOf: (line: number, name: string) => { line: number; text: string } | undefined,
): string {
  const shown = e.defs.slice(0, defsPerFile);
  const rows = new Map<number, string>();
  for (const d of shown) {
    const sig = signatureOf(d.line, d.name);
    if (sig === undefined) continue;
    rows.set(sig.line, sig.text);
    // the enclosing scope: the nearest definition above that contains this one, by name
    const scope = d.container ? e.defs.find((o) => o.name === d.container && o.line < d.line) : undefined;
    const outer = scope ? signatureOf(scope.line, scope.name) : undefined;
    if (outer && !rows.has(outer.line)) rows.set(outer.line, outer.text);
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

/**
 * The repository map within a token budget: the best-ranked files first, each with its top definitions. The graph is
 * ranked in columns; a file's definitions are read (with their kinds and lines) only when its turn comes.
 */
export async function buildRepoMap(store: Store, options: RepoMapOptions): Promise<RepoMap> {
  const g = store.references?.compactGraph
    ? await store.references.compactGraph()
    : compactGraph(await referenceGraph(store));
  const ranked = rankGraph(g, options.focus ?? [], options.mentions ?? []);
  // files with a definition worth a map's tokens (worthShowing, from the columns: a name, and no test constants)
  const worth = new Set<number>();
  const test = new Int8Array(g.paths.length).fill(-1); // a file's role, asked once: 1 for a test file
  for (let i = 0; i < g.defFile.length; i++) {
    const file = g.defFile[i]!;
    if (worth.has(file) || !g.names[g.defName[i]!]!.trim()) continue;
    if (g.defConstant[i] && test[file] === -1) test[file] = fileRole(g.paths[file]!) === 'test' ? 1 : 0;
    if (!g.defConstant[i] || test[file] === 0) worth.add(file);
  }
  const order = byRank(g, ranked, worth);
  const names = new Map(g.names.map((name, k) => [name, k]));
  const ids = new Map(order.map((id) => [g.paths[id]!, id]));
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
          rank: names.has(s.name) ? ranked.defRank(ids.get(path)!, names.get(s.name)!) : 0,
        }))
        .sort((a, b) => b.rank - a.rank || a.line - b.line);
      const entry = worthShowing({ path, rank: ranked.fileRank[id]!, defs });
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
              renderSignatures(e, per, (n, name) => signatureLine(lines.get(e.path), n, name)),
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

/** Lines after a definition's first that may hold its name (a doc comment, a template or attribute line above it). */
const SIGNATURE_SCAN = 24;

/** A line that is only a comment, or a comment's continuation (`//`, `#`, `--`, `/*`, ` * `, a docstring's quotes). */
const COMMENT_LINE = /^\s*(?:\/\/|\/\*|\*(?!\w)|#(?![[!]|include|define|if|pragma)|--|"""|'''|<!--)/;

/**
 * A definition's signature line: a definition's first line may be the doc comment the chunker joined to it (C++'s
 * `// Specifies whether…` above `template <typename S>` and `struct is_string`), so the first line within a few
 * that names the definition and is not a comment, else its first line that is not a comment, else its first line.
 */
function signatureLine(
  lines: Map<number, string> | undefined,
  start: number,
  name: string,
): { line: number; text: string } | undefined {
  const first = lines?.get(start);
  if (!lines || first === undefined) return undefined;
  let code: { line: number; text: string } | undefined;
  for (let n = start; n <= start + SIGNATURE_SCAN; n++) {
    const text = lines.get(n);
    if (text === undefined) break;
    if (!text.trim() || COMMENT_LINE.test(text)) continue;
    code ??= { line: n, text };
    if (!name || namesWord(text, name)) return { line: n, text };
  }
  return code ?? { line: start, text: first };
}

/** Does `text` hold `name` as a whole word (no identifier character on either side)? */
function namesWord(text: string, name: string): boolean {
  const word = (c: string | undefined) => c !== undefined && /[\w$]/.test(c);
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1))
    if (!word(text[at - 1]) && !word(text[at + name.length])) return true;
  return false;
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
    const shown = e.defs.slice(0, defsPerFile);
    const containers = new Set(shown.map((d) => d.container).filter(Boolean));
    for (const d of e.defs)
      if (shown.includes(d) || containers.has(d.name))
        for (let n = d.line; n <= d.line + SIGNATURE_SCAN; n++) wanted.add(n);
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
