import { hostname } from 'node:os';
import { basename, resolve } from 'node:path';
import { type QuarryConfig, resolveConfig, type UserConfig } from '../../config/config.ts';
import { type Embedder, openEmbedder } from '../../embed/open.ts';
import { QuarryError } from '../../errors.ts';
import { redactionOf } from '../../indexing/process-file.ts';
import { openStore, storeTarget, storeTraits } from '../../store/open.ts';
import type { Store } from '../../store/types.ts';
import { findProjectRoot, isDirectory } from '../../workspace/root.ts';
import type { LocalProject } from '../types.ts';
import { grepProject } from './grep.ts';
import { indexedPath, readInside, readProjectLines } from './lines.ts';
import { nearestIn, searchProject } from './search.ts';
import { stateOf } from './state.ts';
import { indexStatus, repositoriesOf } from './status.ts';
import { definitionsIn, outlineIn, referencesIn, repoMapIn } from './symbols.ts';

export interface OpenProjectOptions {
  /** The project root. Default: found from `cwd` by walking up to `.quarry/` or `.git`. */
  root?: string;
  cwd?: string;
  /** Create the index if there is none (for indexing). Default false: a missing index is an error. */
  create?: boolean;
  overrides?: UserConfig;
  env?: NodeJS.ProcessEnv;
  /** Read the user's `~/.config/quarry/config.toml`. Default true. */
  userConfig?: boolean;
  /**
   * Open this repository of a store that holds many (a team server serving repositories it has no checkout of):
   * `root` is then only where settings are read from, and file text comes from the store.
   */
  repo?: string;
  /** Puts something in front of the opened store (a local overlay's vectors in front of a shared index's). */
  wrapStore?: (store: Store) => Store;
}

/** Files a search marks as wanted (its first files), and how many wanted files are remembered. */
const WANTED_PER_SEARCH = 5;
const WANTED_MAX = 500;

export async function openProject(options: OpenProjectOptions = {}): Promise<LocalProject> {
  const cwd = resolve(options.cwd ?? process.cwd());
  let root: string;
  if (options.root) {
    root = resolve(cwd, options.root);
    if (!isDirectory(root))
      throw new QuarryError('BAD_INPUT', `${root} is not a directory: pass the project folder`);
  } else {
    const found = findProjectRoot(cwd);
    if (!found && !options.create && !options.repo)
      throw new QuarryError(
        'NO_ROOT',
        `no quarry index or git repository above ${cwd}: run \`quarry index\` here`,
      );
    root = found ?? cwd;
  }
  const overrides: UserConfig | undefined = options.repo
    ? { ...options.overrides, store: { ...options.overrides?.store, repo: options.repo } }
    : options.overrides;
  const config = resolveConfig({
    root,
    ...(overrides ? { overrides } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.userConfig === false ? { userConfig: false } : {}),
  });
  const target = storeTarget(config, root);
  if (options.repo && !storeTraits(target).keyed)
    throw new QuarryError(
      'BAD_INPUT',
      `a SQLite index holds one repository: pass --store postgres://… to open "${options.repo}"`,
    );
  const opened = await openStore(config, root, { create: options.create ?? false });
  const store = options.wrapStore ? options.wrapStore(opened) : opened;
  await rememberedSecrets(store, config, options.overrides, root);
  const name = 'repo' in target ? target.repo : basename(root);
  // a store-only repository (served, not checked out here) is read from the store alone
  const diskRoot = options.repo ? null : root;
  let embedder: Promise<Embedder | undefined> | undefined;
  // files searched for or opened lately: a background embedding makes their vectors first (indexing/priority.ts)
  const wanted = new Set<string>();
  const want = (path: string) => {
    wanted.delete(path);
    wanted.add(path);
    if (wanted.size > WANTED_MAX) wanted.delete(wanted.values().next().value!);
  };
  const project: LocalProject = {
    name,
    location: diskRoot ?? store.location,
    remote: false,
    root,
    config,
    store,
    queryEmbedder() {
      // a search never downloads weights; one query needs one thread
      embedder ??= openEmbedder({ ...config, embed: { ...config.embed, download: false } }, { threads: 1 });
      return embedder;
    },
    readLines: (paths) => readProjectLines(store, config, diskRoot, paths),
    search: async (query, o) => {
      const res = await searchProject(project, query, o);
      for (const f of res.files.slice(0, WANTED_PER_SEARCH)) want(f.path);
      return res;
    },
    wanted: () => wanted,
    context: async (question, o) =>
      (await import('../../context/assemble.ts')).assembleContext(project, question, o),
    route: async (question) => (await import('../../answer/router.ts')).routeQuestion(project, question),
    grep: (q) => grepProject(project, q),
    // the symbol answers catch up with the working tree first, as a search does (symbols.ts)
    definitions: (n, o) => definitionsIn(project, n, o),
    references: (n, o) => referencesIn(project, n, o),
    outline: (path) => outlineIn(project, path),
    async readFile(path, range = {}) {
      const rel = indexedPath(path);
      // only files the index holds: never an arbitrary path
      if (!(await store.getFile(rel)))
        throw new QuarryError(
          'NOT_FOUND',
          `${rel} is not an indexed file: use search to find the right path`,
        );
      want(rel);
      const lines = (await project.readLines([rel])).get(rel);
      if (!lines) {
        if (diskRoot && readInside(diskRoot, rel) === null)
          throw new QuarryError('AUTH', `${rel} is a symbolic link or leads out of the project: not served`);
        throw new QuarryError('NOT_FOUND', `${rel} is gone from disk: re-index`);
      }
      const start = Math.max(1, Math.floor(range.start ?? 1) || 1);
      if (start > Math.max(1, lines.length))
        throw new QuarryError(
          'BAD_INPUT',
          `${rel} has ${lines.length} line${lines.length === 1 ? '' : 's'}: start at a line from 1 to ${lines.length}`,
        );
      const end = Math.min(lines.length, Math.floor(range.end ?? lines.length) || lines.length);
      const slice = { path: rel, start, end, total: lines.length, lines: lines.slice(start - 1, end) };
      // read from disk and redacted whole (readProjectLines): a face need not redact the slice again
      return redactionOf(config) !== 'off' && !store.content ? { ...slice, redacted: true } : slice;
    },
    repoMap: (o) => repoMapIn(project, o),
    status: () => indexStatus(project),
    nearest: (q) => nearestIn(store, q),
    repos: () => repositoriesOf(project),
    async close() {
      await (await embedder)?.close();
      await store.close();
    },
  };
  // the project holds its own state from the start: its freshness verdicts, its watcher, its reranker's model
  stateOf(project);
  return project;
}

/**
 * `index --include-secrets` (the flag, given here) is remembered by the index: every later run (a watcher's, a
 * search's catch-up) keeps those files and their secrets, until `index --no-include-secrets`. Only for the index this
 * checkout built on this machine: an index that came with the repository (`.quarry/` committed) turns nothing off.
 */
async function rememberedSecrets(
  store: Store,
  config: QuarryConfig,
  overrides: UserConfig | undefined,
  root: string,
): Promise<void> {
  if (overrides?.includeSecrets !== undefined) {
    await store.setMeta('include_secrets', overrides.includeSecrets ? '1' : '0');
    return;
  }
  if (config.includeSecrets || (await store.getMeta('include_secrets')) !== '1') return;
  try {
    const source = JSON.parse((await store.getMeta('source')) ?? '{}') as { root?: string; host?: string };
    if (source.root === root && source.host === hostname()) config.includeSecrets = true;
    // another checkout's, or another machine's: forgotten, so that this one's next run does not take it as its own
    else await store.setMeta('include_secrets', '0');
  } catch {
    // a damaged record remembers nothing
  }
}
