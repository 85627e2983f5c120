import { existsSync, rmSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { checkRepoName, driverOfUrl, type QuarryConfig, type StoreDriver } from '../config/config.ts';
import { QuarryError } from '../errors.ts';
import { ensureIndexDir, gitRemote, indexPaths } from '../workspace/root.ts';
import { acquireWriterLock } from './lock.ts';
import type { RepositoryRegistry, Store } from './types.ts';

export interface OpenStoreOptions {
  /** Create the index when there is none (indexing). Default false: a missing index is NO_INDEX. */
  create?: boolean;
}

/** The driver and where its data lives, resolved from the `[store]` settings and the project root. */
export type StoreTarget =
  /** A SQLite file holds one repository. */
  | { driver: 'sqlite'; url: string }
  /** A server URL, and the repository's key in the store it shares with others. */
  | { driver: Exclude<StoreDriver, 'sqlite'>; url: string; repo: string };

/** A folder's or a remote's name as a valid repository name (`my project` → `my-project`). */
function nameOf(raw: string): string {
  const name = raw
    .split('/')
    .map((part) =>
      part
        .replace(/[^A-Za-z0-9._-]+/g, '-')
        .replace(/^[^A-Za-z0-9]+/, '')
        .replace(/\.+$/, ''),
    )
    .filter(Boolean)
    .join('/')
    .slice(0, 100);
  return name || 'default';
}

/** The repository key a project gets by default: `owner/name` of its `origin` remote, else the folder's name. */
export function defaultRepoKey(root: string): string {
  // the origin remote as `host/owner/name` (gitRemote normalises every URL form): its last two parts
  const parts = gitRemote(root)?.split('/') ?? [];
  if (parts.length >= 3) return nameOf(parts.slice(-2).join('/'));
  return nameOf(basename(resolve(root)));
}

/**
 * What a store target can do, so that code outside store/ asks a question instead of branching on a driver's name.
 */
export interface StoreTraits {
  /** One file on this machine holds the whole index (and nothing but this project): its path. */
  file: string | undefined;
  /** The store holds many repositories under keys (a server store, or Chroma's collections). */
  keyed: boolean;
  /** The store can list and remove its repositories without opening one (a server with no checkout can serve it). */
  registry: boolean;
  /** How a person names this index: its file, or its key in its store. */
  where: string;
  /** Said after a reset, when deleting leaves something to know. */
  resetNote: string;
}

export function storeTraits(target: StoreTarget): StoreTraits {
  switch (target.driver) {
    case 'sqlite':
      return {
        file: target.url,
        keyed: false,
        registry: false,
        where: target.url,
        resetNote: '',
      };
    case 'postgres':
      return {
        file: undefined,
        keyed: true,
        registry: true,
        where: `${target.repo} in postgres`,
        resetNote: '',
      };
    case 'chroma':
      return {
        file: undefined,
        keyed: true,
        registry: false,
        where: `${target.repo} in chroma`,
        resetNote: ' (its Chroma collections are replaced at the next index)',
      };
  }
}

/**
 * Deletes a project's index, under its writer lock (a running index, watcher or server keeps it: LOCKED, naming the
 * holder). A local index (SQLite's file, or Chroma's SQLite side, whose collections are replaced at the next index)
 * is never opened, so a corrupt one can still be removed; a server store drops the repository's rows. Returns false
 * when there was no index.
 */
export async function resetIndex(config: QuarryConfig, root: string): Promise<boolean> {
  const target = storeTarget(config, root);
  const traits = storeTraits(target);
  if (traits.registry && 'repo' in target) {
    let store: Store;
    try {
      store = await openStore(config, root);
    } catch (err) {
      if (err instanceof QuarryError && err.code === 'NO_INDEX') return false;
      throw err;
    }
    try {
      // remove takes the repository's writer lock itself (LOCKED while an indexer holds it)
      await store.repositories?.remove(target.repo);
    } finally {
      await store.close();
    }
    return true;
  }
  const base = traits.file ?? chromaSqlitePath(config, root, 'repo' in target ? target.repo : '');
  if (!existsSync(base)) return false;
  const lock = await acquireWriterLock(join(dirname(base), 'index.lock'));
  try {
    for (const f of [base, `${base}-wal`, `${base}-shm`]) rmSync(f, { force: true });
  } finally {
    lock.release();
  }
  return true;
}

export function storeTarget(config: QuarryConfig, root: string): StoreTarget {
  const { url, repo } = config.store;
  const driver = (url ? driverOfUrl(url) : undefined) ?? config.store.driver;
  if (driver === 'sqlite') {
    // no repository key: asking git for one would cost every command a process for nothing
    const file = url ? url.replace(/^(sqlite|file):\/\//i, '') : indexPaths(root).db;
    return { driver, url: isAbsolute(file) ? file : join(root, file) };
  }
  if (!url)
    throw new QuarryError(
      'BAD_CONFIG',
      `store.driver is "${driver}" but no store URL is set: pass --store ${driver === 'postgres' ? 'postgres://user@host:5432/db' : 'chroma://host:8000'} or set [store] url`,
    );
  return { driver, url, repo: repo === undefined ? defaultRepoKey(root) : checkRepoName(repo) };
}

/**
 * Opens the project's store with the driver its settings name. Each driver owns its lifecycle: whether the index
 * exists, creating it, migrations, the writer lock and the embedder record.
 */
export async function openStore(
  config: QuarryConfig,
  root: string,
  options: OpenStoreOptions = {},
): Promise<Store> {
  const target = storeTarget(config, root);
  // `.quarry/` holds the local side of every driver (the SQLite file or lock, chat and edit history)
  if (options.create) ensureIndexDir(root);
  switch (target.driver) {
    case 'sqlite': {
      const { openSqliteStore, sqliteIndexExists, sqliteIndexSize } = await import('./sqlite/index.ts');
      if (!options.create && !sqliteIndexExists(target.url))
        throw new QuarryError('NO_INDEX', `no index in ${root}: run \`quarry index\` there first`);
      // a file quarry made is never empty (its schema is written with it): 0 bytes is a truncated index, not an
      // empty one, and reading it would answer "no matches" to everything
      if (!options.create && sqliteIndexSize(target.url) === 0)
        throw new QuarryError(
          'IO',
          `the index ${target.url} is empty (0 bytes): it was truncated; run \`quarry reset\`, then \`quarry index\``,
        );
      return openSqliteStore(target.url);
    }
    case 'postgres': {
      const { openPostgresStore } = await import('./postgres/index.ts');
      return openPostgresStore({ url: target.url, repo: target.repo, create: options.create ?? false });
    }
    case 'chroma': {
      const { openChromaStore } = await import('./chroma.ts');
      return openChromaStore({
        url: target.url,
        repo: target.repo,
        // its own file: the SQLite driver's phase marks speak of sqlite-vec's vectors, these of Chroma's
        sqlitePath: chromaSqlitePath(config, root, target.repo),
        create: options.create ?? false,
        root,
      });
    }
  }
}

/**
 * The SQLite side of a Chroma index, one file per key: `chroma.db` for the checkout's own key, `chroma@owner+name.db`
 * for another (`--repo`). One shared file let `--repo other` search this checkout's lexical rows beside the other
 * key's vectors, and indexing under a second key orphaned the first key's collections.
 */
function chromaSqlitePath(config: QuarryConfig, root: string, repo: string): string {
  // a key not given is the default one: asking git again would cost every command a process
  const own = config.store.repo === undefined || repo === defaultRepoKey(root);
  return join(indexPaths(root).dir, own ? 'chroma.db' : `chroma@${repo.replace(/\//g, '+')}.db`);
}

/**
 * The repositories of the configured store, without opening one: a server store lists what it holds; a SQLite or
 * Chroma index holds one repository, so there is nothing to list without its folder (undefined).
 */
export async function openRegistry(
  config: QuarryConfig,
  root: string,
): Promise<(RepositoryRegistry & { location: string; close(): Promise<void> }) | undefined> {
  const target = storeTarget(config, root);
  if (!storeTraits(target).registry) return undefined;
  const { openPostgresRegistry } = await import('./postgres/index.ts');
  return openPostgresRegistry(target.url);
}
