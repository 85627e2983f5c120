import type { ChangeHistory } from '../search/history.ts';
import type { Store } from '../store/types.ts';
import { type FileRole, fileRole } from '../workspace/roles.ts';

// The order vectors are made in. On 2 CPU cores MiniLM embeds ~70 chunks a second, so a 100k-file repository needs
// hours of transformer time, and hybrid search is partly lexical until it ends: the files embedded first should be
// those a question most likely wants. In order of weight: files someone just searched for or opened, source code
// before tests, prose and data, files changed recently in git, and files whose names many other files use. The
// measured gain (hybrid MRR after 10%, 25% and 50% of the embedding time against walk order) is in
// docs/benchmarks.md; `bench/embed-order.ts` reproduces it.

/** What a file's kind is worth: implementation first, as a search prefers it. */
const ROLE_WEIGHT: Record<FileRole, number> = { code: 3, docs: 1, test: 1, data: 0 };
/** A file changed in the newest commit (recency 1) is worth this much; older changes decay (search/history.ts). */
const RECENCY_WEIGHT = 2;
/** The file whose names most other files use is worth this much; the rest in proportion to log(1 + users). */
const CENTRALITY_WEIGHT = 1;
/** A file someone asked for outranks every other signal. */
const PREFERRED_WEIGHT = 100;
/** Names shorter than this, or defined in several files, say little about which file is central. */
const MIN_NAME = 4;

export interface PriorityInputs {
  /** The repository's git history (recency of each file). */
  history?: ChangeHistory | undefined;
  /** Files someone searched for or opened: first of all. */
  preferred?: ReadonlySet<string>;
  /** Per file, 0..1: how many other files use the names it defines (log-scaled to the most used). */
  centrality?: ReadonlyMap<string, number>;
}

/** How early a file's vectors should come: higher first. */
export function embedPriority(path: string, inputs: PriorityInputs): number {
  return (
    ROLE_WEIGHT[fileRole(path)] +
    RECENCY_WEIGHT * (inputs.history?.recency(path) ?? 0) +
    CENTRALITY_WEIGHT * (inputs.centrality?.get(path) ?? 0) +
    (inputs.preferred?.has(path) ? PREFERRED_WEIGHT : 0)
  );
}

/** Sorts paths by priority, highest first; equal ones keep their order (the walk's). */
export function byPriority<T extends { path: string }>(items: T[], inputs: PriorityInputs): T[] {
  const score = new Map(items.map((i) => [i.path, embedPriority(i.path, inputs)]));
  return items
    .map((item, i) => ({ item, i }))
    .sort((a, b) => score.get(b.item.path)! - score.get(a.item.path)! || a.i - b.i)
    .map((x) => x.item);
}

/**
 * In-degree in the reference graph: for each file, how many other files use a name it alone defines (functions,
 * classes, methods: not variables), log-scaled to 0..1. Undefined when the store keeps no references.
 */
export async function centralityOf(store: Store): Promise<Map<string, number> | undefined> {
  if (!store.references) return undefined;
  const definedIn = new Map<string, string | null>();
  for (const d of await store.allDefinitions()) {
    if (d.kind === 'variable' || d.name.length < MIN_NAME) continue;
    const seen = definedIn.get(d.name);
    // a name defined in two files points at neither
    definedIn.set(d.name, seen === undefined || seen === d.path ? d.path : null);
  }
  const names = [...definedIn].filter(([, p]) => p !== null).map(([n]) => n);
  if (!names.length) return new Map();
  const users = new Map<string, Set<string>>();
  for (const r of await store.references.useCounts(names)) {
    const home = definedIn.get(r.name);
    if (!home || home === r.path) continue;
    const set = users.get(home) ?? new Set<string>();
    users.set(home, set);
    set.add(r.path);
  }
  let most = 0;
  for (const s of users.values()) most = Math.max(most, s.size);
  const out = new Map<string, number>();
  for (const [path, s] of users) out.set(path, Math.log1p(s.size) / Math.log1p(most));
  return out;
}
