import { resolveConfig } from '../config/config.ts';
import { QuarryError } from '../errors.ts';
import { openRemoteProject, remoteRepos } from '../project/remote.ts';
import type { Project, ProjectSearchOptions } from '../project/types.ts';
import type { GrepLine, GrepQuery } from '../search/grep.ts';
import type { SearchResponse, SearchResult } from '../search/search.ts';
import type { RepoInfo, SearchFilter } from '../store/types.ts';
import type { LiveProject } from '../watch/live.ts';
import { languageIds, typeLanguages } from '../workspace/languages.ts';
import type { Grant } from './tokens.ts';

/**
 * The repositories a server offers: its own checkout (kept fresh, re-indexable), every other repository of its
 * store (read from the store, no checkout needed), or those of another quarry it relays. A grant narrows it to
 * what one token may see.
 */
export interface ProjectSet {
  list(): Promise<RepoInfo[]>;
  /**
   * One repository by name, or the default one, as every face shows it: secrets in its snippets and file views
   * redacted (unless its settings say not to). Unknown and not-allowed names are the same NOT_FOUND.
   */
  get(name?: string): Promise<Project>;
  /**
   * One search over the repositories a call names: the default one, one by name, several, or every one this set may
   * show (`*`); several are searched each on its own and interleaved by rank. Snippets come redacted.
   */
  search(query: string, options?: SetSearchOptions): Promise<SetSearchResponse>;
  /** The checkout this server keeps fresh, if any. */
  readonly live: LiveProject | null;
  close(): Promise<void>;
}

export interface SetSearchOptions extends ProjectSearchOptions {
  /** Which repositories: none for the default one, names, or `*` for every one the set may show. */
  repos?: string[];
}

export type SetSearchResponse = SearchResponse & { repos?: string[] };

/** The filter a face's options describe, or undefined when they narrow nothing. */
export function searchFilter(options: {
  paths?: string[] | undefined;
  pathPrefixes?: string[] | undefined;
  languages?: string[] | undefined;
  excludePaths?: string[] | undefined;
}): SearchFilter | undefined {
  const filter: SearchFilter = {};
  for (const key of ['paths', 'pathPrefixes', 'languages', 'excludePaths'] as const) {
    const values = options[key]?.filter((v) => typeof v === 'string');
    // a language may be named as grep's -t names it (`ts`, `py`, `rs`): one vocabulary on every face, and a name
    // that is neither is BAD_INPUT as grep says it, with the names it knows (not an empty answer)
    if (values?.length)
      filter[key] =
        key === 'languages' ? [...new Set(values.flatMap((v) => typeLanguages(v, languageIds())))] : values;
  }
  return Object.keys(filter).length ? filter : undefined;
}

const redactedViews = new WeakMap<Project, Project>();
const underlying = new WeakMap<Project, Project>();

/** The project behind a face's view of it (the view itself is a new object). */
export function unwrap(project: Project): Project {
  return underlying.get(project) ?? project;
}

/**
 * Texts redacted in one pass and split back, for grep's lines and a search's snippets: secretlint's set-up is most of
 * a short text's cost (one call per grep line cost ~17 ms each: 3,000 lines took 50 s; ten snippets one by one took
 * 23–34 ms in a fresh process, joined 12–19 ms). Redaction keeps the line count, so the joined text splits back at
 * each text's own line count; where it did not, each text is redacted alone.
 */
async function cleanTexts(texts: string[], clean: (text: string) => Promise<string>): Promise<string[]> {
  if (!texts.length) return [];
  const counts = texts.map((t) => t.split('\n').length);
  const lines = (await clean(texts.join('\n'))).split('\n');
  if (lines.length !== counts.reduce((a, b) => a + b, 0)) return Promise.all(texts.map(clean));
  let at = 0;
  return counts.map((n) => {
    const from = at;
    at += n;
    return lines.slice(from, at).join('\n');
  });
}

/**
 * Every result's snippet, redacted as one text (cleanTexts), except where a private key's BEGIN line is among them:
 * a block would run on to an END line in a later snippet and blank the snippets between, so each is redacted alone.
 */
async function cleanSnippets(
  results: SearchResult[],
  clean: (text: string) => Promise<string>,
): Promise<SearchResult[]> {
  const snippets = results.map((r) => r.snippet);
  const cleaned = snippets.some((t) => /-----BEGIN [A-Z0-9 ]*PRIVATE KEY/.test(t))
    ? await Promise.all(snippets.map(clean))
    : await cleanTexts(snippets, clean);
  return results.map((r, i) => ({ ...r, snippet: cleaned[i]! }));
}

/**
 * The project as a face shows it: secrets in search snippets and in file views, replaced line for line
 * (context is redacted where it is assembled). Its settings may turn this off (`context.redact_secrets = false`).
 * What it redacts says so (`redacted`); an answer that another quarry redacted and says so is shown as it comes.
 */
export function redacting(project: Project): Project {
  if (project.config.context.redactSecrets === false) return project;
  let view = redactedViews.get(project);
  if (view) return view;
  // secretlint loads with the first text to redact
  const clean = async (text: string) => (await (await import('../chunk/redact.ts')).redactSecrets(text)).text;
  view = Object.assign(Object.create(project) as Project, {
    search: async (query: string, options?: ProjectSearchOptions) => {
      const res = await project.search(query, options);
      // another quarry's answer that it redacted itself (its faces redact as these do) is shown as it comes
      if (res.redacted) return res;
      return { ...res, results: await cleanSnippets(res.results, clean), redacted: true };
    },
    grep: async (query: GrepQuery) => {
      const res = await project.grep(query);
      // every line of the answer redacted in one pass, then handed back in the order it was taken
      const texts: string[] = [];
      for (const m of res.matches)
        texts.push(m.text, ...m.before.map((l) => l.text), ...m.after.map((l) => l.text));
      const redacted = await cleanTexts(texts, clean);
      let at = 0;
      const next = () => redacted[at++]!;
      const lines = (ls: GrepLine[]) => ls.map((l) => ({ ...l, text: next() }));
      const matches = res.matches.map((m) => {
        const text = next();
        // a redacted line keeps the match ranges that still fit it
        const ranges = text === m.text ? m.ranges : m.ranges.filter(([, e]) => e <= text.length);
        return { ...m, text, ranges, before: lines(m.before), after: lines(m.after) };
      });
      return { ...res, matches };
    },
    readFile: async (path: string, range?: { start?: number; end?: number }) => {
      const slice = await project.readFile(path, range);
      if (slice.redacted) return slice;
      return { ...slice, lines: (await clean(slice.lines.join('\n'))).split('\n'), redacted: true };
    },
  });
  redactedViews.set(project, view);
  underlying.set(view, project);
  return view;
}

/** The one search of a set: the names resolved (`*` expanded to what the set may show), one or many searched. */
async function searchIn(
  set: Pick<ProjectSet, 'list' | 'get'>,
  query: string,
  options: SetSearchOptions = {},
): Promise<SetSearchResponse> {
  const { repos = [], ...rest } = options;
  let names = repos.filter(Boolean);
  const every = names.includes('*');
  if (every) names = (await set.list()).map((r) => r.name);
  // several, or "every one" however many there are: each result labelled with its repository
  if (names.length > 1 || every)
    return searchMany(await Promise.all(names.map((n) => set.get(n))), query, rest);
  return (await set.get(names[0])).search(query, rest);
}

/** A set with its search: every set is built from list and get, and searches the same way. */
function withSearch(base: Omit<ProjectSet, 'search'>): ProjectSet {
  const set: ProjectSet = { ...base, search: (query, options) => searchIn(set, query, options) };
  return set;
}

/**
 * The set of projects a command has already opened (the CLI: the checkout, a store's repositories, a remote): the
 * first is the default; names it does not hold are NOT_FOUND.
 */
export function openedSet(projects: Project[]): ProjectSet {
  return withSearch({
    live: null,
    list: async () => {
      const infos = await Promise.all(
        projects.map(async (p) => (await p.repos()).find((r) => r.name === p.name)),
      );
      return infos.filter((r): r is RepoInfo => r !== undefined);
    },
    async get(name) {
      const found = name === undefined ? projects[0] : projects.find((p) => p.name === name);
      if (!found) throw notHere(name ?? '');
      return redacting(found);
    },
    async close() {
      for (const p of projects) await p.close();
    },
  });
}

function notHere(name: string): QuarryError {
  return new QuarryError('NOT_FOUND', `no repository "${name}" here: list them with \`quarry repos\``);
}

/** The repository a request that names none gets: the server's own checkout, else the only one; else none. */
export function defaultRepo(names: string[], live: string | undefined): string | undefined {
  if (live && names.includes(live)) return live;
  if (names.length === 1) return names[0]!;
  return undefined;
}

function chooseDefault(names: string[], live: string | undefined): string {
  const chosen = defaultRepo(names, live);
  if (chosen) return chosen;
  if (!names.length)
    throw new QuarryError('NOT_FOUND', 'no repository is indexed here yet: run `quarry index`');
  throw new QuarryError(
    'BAD_INPUT',
    `this server holds ${names.length} repositories: name one with repo (${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''})`,
  );
}

export interface ServedSetOptions {
  live?: LiveProject | null;
  /** Where settings come from when there is no checkout. */
  cwd?: string;
  /** Relay another quarry (its HTTP API) instead of a store. */
  remote?: { url: string; token?: string; overlayRoot?: string };
  /**
   * A linked git worktree of an indexed main tree (project/worktree.ts): served as its overlay on the main index,
   * brought up to date with the tree before each search (at most every 2 s) instead of by a watcher.
   */
  worktree?: { root: string; main: string };
}

/** Opens each repository once, on first use; a failed open is forgotten, so the next request tries again. */
function openOnce(open: (name: string) => Promise<Project>) {
  const opened = new Map<string, Promise<Project>>();
  return {
    get(name: string): Promise<Project> {
      let p = opened.get(name);
      if (!p) {
        p = open(name);
        opened.set(name, p);
        p.catch(() => opened.delete(name));
      }
      return p;
    },
    async closeAll(): Promise<void> {
      for (const p of opened.values()) await (await p.catch(() => null))?.close();
    },
  };
}

/** The set a server (or `quarry mcp`) serves. */
export async function openServedSet(options: ServedSetOptions): Promise<ProjectSet> {
  const live = options.live ?? null;
  const cwd = options.cwd ?? process.cwd();

  if (options.remote) {
    const { url, token, overlayRoot } = options.remote;
    const opened = openOnce(async (repo) => {
      const base = await openRemoteProject({ url, repo, ...(token ? { token } : {}) });
      if (!overlayRoot) return base;
      // this checkout's changes over the repository it is a checkout of (the others' commits are not here)
      const { openOverlay } = await import('../project/overlay.ts');
      const log = (m: string) => process.stderr.write(`quarry: ${m}\n`);
      return (
        (await openOverlay(base, { root: overlayRoot, onNotice: log }).catch((err: Error) => {
          log(
            `no overlay of this checkout's changes (${err.message}); relaying ${repo ?? 'the default repository'} as it is`,
          );
          return undefined;
        })) ?? base
      );
    });
    // the remote answers now or the server does not start: a wrong URL or token is a start-up error
    const names = (await remoteRepos(url, token)).map((r) => r.name);
    return withSearch({
      live: null,
      list: () => remoteRepos(url, token),
      get: async (name) => redacting(await opened.get(name ?? chooseDefault(names, undefined))),
      close: () => opened.closeAll(),
    });
  }

  if (options.worktree) {
    const { openWorktree } = await import('../project/worktree.ts');
    const log = (m: string) => process.stderr.write(`quarry: ${m}\n`);
    const { root, main } = options.worktree;
    const project = await openWorktree(root, { main, onNotice: log });
    if (!project) throw new QuarryError('NO_INDEX', `${root} is no worktree of an indexed repository`);
    return withSearch({
      live: null,
      list: () => project.repos(),
      async get(name) {
        if (name !== undefined && name !== project.name) throw notHere(name);
        return redacting(project);
      },
      close: () => project.close(),
    });
  }

  const { openRegistry } = await import('../store/open.ts');
  const { openProject } = await import('../project/local/index.ts');
  const registry = live ? undefined : await openRegistry(resolveConfig({ root: cwd }), cwd);
  if (!live && !registry)
    throw new QuarryError(
      'NO_ROOT',
      `no quarry project in ${cwd} and no server store to serve: run it in a project, or pass --store postgres://…`,
    );
  const opened = openOnce(
    (repo) => openProject({ ...(live ? { root: live.project.root } : { cwd }), repo }) as Promise<Project>,
  );
  // the list is asked on most requests that name a repository: a few seconds old is fresh enough (a repository
  // indexed meanwhile shows up on the next look)
  let listed: { at: number; repos: Promise<RepoInfo[]> } | undefined;
  const list = async (): Promise<RepoInfo[]> => {
    if (!listed || performance.now() - listed.at > 2000) {
      const repos = live ? live.project.repos() : (registry as NonNullable<typeof registry>).list();
      listed = { at: performance.now(), repos };
      repos.catch(() => {
        listed = undefined;
      });
    }
    return listed.repos;
  };
  return withSearch({
    live,
    list,
    async get(name) {
      // the server's own checkout needs no look at the list
      if (live && (name === undefined || name === live.project.name)) return redacting(live.project);
      const names = (await list()).map((r) => r.name);
      const key = name ?? chooseDefault(names, live?.project.name);
      if (!names.includes(key)) throw notHere(key);
      return redacting(await opened.get(key));
    },
    async close() {
      await opened.closeAll();
      await registry?.close();
    },
  });
}

/** The part of a set one token may see: others are NOT_FOUND, as if they did not exist. */
export function scopedSet(set: ProjectSet, allowed: (repo: string) => boolean): ProjectSet {
  return withSearch({
    live: set.live && allowed(set.live.project.name) ? set.live : null,
    list: async () => (await set.list()).filter((r) => allowed(r.name)),
    async get(name) {
      if (name !== undefined) {
        if (!allowed(name)) throw notHere(name);
        return set.get(name);
      }
      if (set.live && allowed(set.live.project.name)) return redacting(set.live.project);
      const names = (await set.list()).map((r) => r.name).filter(allowed);
      return set.get(chooseDefault(names, set.live?.project.name));
    },
    close: () => set.close(),
  });
}

/**
 * The set a grant sees: the repositories it may read, and where each was indexed from (the checkout's path and the
 * machine's name) only when it may also re-index; a reader learns nothing about the server's disk.
 */
export function grantedSet(set: ProjectSet, grant: Grant): ProjectSet {
  const { repos } = grant;
  const scoped = repos === '*' ? set : scopedSet(set, (r) => repos.has(r));
  if (grant.reindex) return scoped;
  return { ...scoped, list: async () => (await scoped.list()).map((r) => ({ ...r, source: null })) };
}

/**
 * One search over several repositories: each searched on its own, then interleaved by rank (every repository's
 * first result before any second one; among equal ranks, the higher score first), each result labelled with its
 * repository. Scores are not comparable across indexes (their BM25 statistics differ), ranks are.
 */
export async function searchMany(
  projects: Project[],
  query: string,
  options: ProjectSearchOptions = {},
): Promise<SearchResponse & { repos: string[] }> {
  const started = performance.now();
  const responses = await Promise.all(projects.map((p) => p.search(query, options)));
  const k = options.topK ?? projects[0]?.config.search.topK ?? 10;
  const interleave = <T extends { score: number }>(lists: Array<{ repo: string; items: T[] }>) =>
    lists
      .flatMap(({ repo, items }) => items.map((item, rank) => ({ ...item, repo, rank })))
      .sort((a, b) => a.rank - b.rank || b.score - a.score)
      .map(({ rank: _rank, ...item }) => item);
  const results = interleave(responses.map((r, i) => ({ repo: projects[i]!.name, items: r.results }))).slice(
    0,
    k,
  );
  const files = interleave(responses.map((r, i) => ({ repo: projects[i]!.name, items: r.files }))).slice(
    0,
    options.topFiles ?? Math.max(k, 10),
  );
  return {
    query,
    mode: responses[0]?.mode ?? 'lexical',
    results,
    files,
    tookMs: performance.now() - started,
    repos: projects.map((p) => p.name),
    ...staleOf(responses, projects),
    ...(responses.every((r) => r.redacted) ? { redacted: true } : {}),
  };
}

/** The stale notes of several repositories' answers, each named, in one line. */
function staleOf(responses: SearchResponse[], projects: Project[]): { stale?: string } {
  const notes = responses.flatMap((r, i) => (r.stale ? [`${projects[i]!.name}: ${r.stale}`] : []));
  return notes.length ? { stale: notes.join('; ') } : {};
}
