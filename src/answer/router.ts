import { topLevelVariables } from '../chunk/chunker.ts';
import { QuarryError } from '../errors.ts';
import type { IndexedProject as Project, RouteResult } from '../project/types.ts';
import type { RefHit, SymbolHit } from '../store/types.ts';
import { grammarFor } from '../workspace/languages.ts';
import {
  DEFINITIONS_SHOWN,
  formatDefinitions,
  formatReferences,
  formatSymbols,
  REFERENCE_FILES_SHOWN,
} from './format.ts';

export type { RoutedAnswer, RouteResult } from '../project/types.ts';

const KIND_WORDS: Array<[RegExp, string[] | 'variables']> = [
  [/global variables?|globals|top-level variables?|variables?|constants?|consts?/, 'variables'],
  [/functions?|funcs?/, ['function']],
  [/methods?/, ['method']],
  [
    /classes|class|types?|structs?|interfaces?|enums?|traits?/,
    ['class', 'interface', 'struct', 'enum', 'trait', 'type', 'object'],
  ],
  [/symbols?|definitions?|defs|declarations?/, []],
];

const FILE_RE = /(?:in|of|from|inside|does)\s+`?([\w./-]+\.[A-Za-z0-9]{1,8})`?/i;
const NAME = '`?([A-Za-z_$][\\w$]*(?:(?:\\.|::|#)[A-Za-z_$][\\w$]*)*)`?';

/** The last segment of a qualified name (`Indexer.run` → `run`). */
function leaf(name: string): string {
  return name.split(/\.|::|#/).pop()!;
}

/** The most rows of one name a lookup reads (the commonest name of a 100,000-file corpus has ~5,000). */
const NAME_ROWS_MAX = 50_000;

/**
 * Definitions of `name`, in path order, at most `limit` (DEFINITIONS_SHOWN when it is absent): exact case first;
 * `Class.method` narrows to methods of that class. The store matches the name without case, so it is asked for every
 * row of the name (up to NAME_ROWS_MAX) and the choice is made here, before the limit: cutting first would leave a
 * common name with fewer definitions than the limit while more exist.
 */
export async function findDefinitions(
  project: Project,
  name: string,
  options: { limit?: number } = {},
): Promise<SymbolHit[]> {
  const parts = name.split(/\.|::|#/);
  const hits = await project.store.findSymbols([leaf(name)], { limit: NAME_ROWS_MAX });
  const container = parts.length > 1 ? parts[parts.length - 2]! : null;
  const narrowed = container ? hits.filter((h) => h.container === container) : hits;
  const pool = narrowed.length ? narrowed : hits;
  const exact = pool.filter((h) => h.name === leaf(name));
  const chosen = exact.length ? exact : pool;
  return chosen.slice(0, options.limit ?? DEFINITIONS_SHOWN);
}

/**
 * Files that use `name` (identifier occurrences), in path order, at most `limit` (REFERENCE_FILES_SHOWN when it is
 * absent), the definitions' own lines left out. A file whose only occurrences are definitions is dropped, so the
 * store is asked for as many more files as there are files with a definition: the list then holds `limit` files
 * whenever that many use the name.
 */
export async function findReferences(
  project: Project,
  name: string,
  options: { limit?: number } = {},
): Promise<RefHit[]> {
  const n = leaf(name);
  const limit = options.limit ?? REFERENCE_FILES_SHOWN;
  // only an identifier can be a reference (and be looked up in the names index)
  if (!/^[\p{L}\p{N}_$]+$/u.test(n) || !project.store.references || limit < 1) return [];
  const defs = (await project.store.findSymbols([n], { limit: NAME_ROWS_MAX })).filter((d) => d.name === n);
  const defLines = new Set(defs.map((d) => `${d.path}:${d.startLine}`));
  const defFiles = new Set(defs.map((d) => d.path)).size;
  return (await project.store.references.find(n, { limit: limit + defFiles }))
    .map((r) => ({ ...r, lines: r.lines.filter((l) => !defLines.has(`${r.path}:${l}`)) }))
    .filter((r) => r.lines.length > 0)
    .slice(0, limit);
}

export async function fileVariables(project: Project, path: string) {
  const lines = (await project.readLines([path])).get(path);
  if (!lines) throw new QuarryError('NOT_FOUND', `${path} cannot be read: re-index`);
  const text = lines.join('\n');
  return topLevelVariables(text, grammarFor(path, text));
}

/**
 * Gollora's router: questions about the structure of a named file or symbol ("list the functions in src/x.ts",
 * "where is `parseConfig` defined", "what calls `Indexer.run`") are answered from the symbol index. When the file or
 * symbol is not in the index the caller falls back to retrieval, and says so.
 */
export async function routeQuestion(project: Project, question: string): Promise<RouteResult> {
  const q = question.trim();

  // "list the functions in src/x.ts", "what classes does app.py define", "global variables in cmd/main.go"
  const file = FILE_RE.exec(q);
  const listy = /^(list|show|what|which|give|enumerate|name)\b|\b(symbols|definitions|outline)\b/i.test(q);
  if (file && listy) {
    const kindEntry = KIND_WORDS.find(([re]) => re.test(q.toLowerCase()));
    if (kindEntry) {
      const wanted = file[1]!.replace(/^\.\//, '');
      // the file by its path, else by its name (one question to the store, not a list of every file)
      const exact = await project.store.getFile(wanted);
      const base = wanted.slice(wanted.lastIndexOf('/') + 1).toLowerCase();
      const named = exact
        ? []
        : (await project.store.findFilesByName({ basenames: [base], stems: [], fragments: [] }))
            .map((h) => ({ path: h.path }))
            .sort((x, y) => (x.path < y.path ? -1 : 1));
      const match =
        exact ??
        named.find((f) => f.path.endsWith(`/${wanted}`)) ??
        named.find((f) => f.path.toLowerCase().endsWith(wanted.toLowerCase()));
      if (!match) return { fallback: `no file ${wanted} in the index` };
      if (kindEntry[1] === 'variables') {
        const variables = await fileVariables(project, match.path);
        const text = variables.length
          ? `${match.path}\n${variables.map((v) => `  ${v.line}  ${v.kind} ${v.name}`).join('\n')}`
          : `${match.path}: no top-level variables or constants`;
        return { answer: { kind: 'variables', subject: match.path, text, variables } };
      }
      const kinds = kindEntry[1];
      const all = (await project.store.listSymbols([match.path])).get(match.path) ?? [];
      const symbols = kinds.length ? all.filter((s) => kinds.includes(s.kind)) : all;
      return {
        answer: { kind: 'symbols', subject: match.path, text: formatSymbols(match.path, symbols), symbols },
      };
    }
  }

  // "where is parseConfig defined", "definition of Store", "where does `Indexer` live"
  const def =
    new RegExp(
      `^where\\s+(?:is|are|does)\\s+${NAME}\\s+(?:defined|declared|implemented|live)\\??$`,
      'i',
    ).exec(q) ?? new RegExp(`^(?:find\\s+)?(?:the\\s+)?definition\\s+of\\s+${NAME}\\??$`, 'i').exec(q);
  if (def) {
    const name = def[1]!;
    const found = await findDefinitions(project, name, { limit: DEFINITIONS_SHOWN + 1 });
    if (!found.length) return { fallback: `no definition named ${name} in the index` };
    const defs = found.slice(0, DEFINITIONS_SHOWN);
    const more = found.length > defs.length ? 'more exist: `quarry def --limit`' : undefined;
    return {
      answer: { kind: 'definition', subject: name, text: formatDefinitions(name, defs, more), symbols: defs },
    };
  }

  // "what calls Indexer.run", "who uses parseConfig", "references to Store", "where is X used"
  const ref =
    new RegExp(`^(?:what|who|which\\s+\\w+)\\s+(?:calls|uses|references|imports)\\s+${NAME}\\??$`, 'i').exec(
      q,
    ) ??
    new RegExp(
      `^(?:find\\s+)?(?:the\\s+)?(?:references|callers|usages|uses)\\s+(?:to|of)\\s+${NAME}\\??$`,
      'i',
    ).exec(q) ??
    new RegExp(`^where\\s+is\\s+${NAME}\\s+(?:used|called|referenced)\\??$`, 'i').exec(q);
  if (ref) {
    const name = ref[1]!;
    const found = await findReferences(project, name, { limit: REFERENCE_FILES_SHOWN + 1 });
    if (!found.length) return { fallback: `nothing in the index uses ${name}` };
    const refs = found.slice(0, REFERENCE_FILES_SHOWN);
    const more = found.length > refs.length ? 'more files use it: `quarry refs --limit`' : undefined;
    return {
      answer: {
        kind: 'references',
        subject: name,
        text: formatReferences(name, refs, more),
        references: refs,
      },
    };
  }
  return null;
}
