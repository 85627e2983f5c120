import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { QuarryConfig } from '../config/config.ts';
import type { EmbeddingCache, Store } from '../store/types.ts';

/**
 * The user's embedding cache, shared by every index on this machine, whatever its store: vectors by (embedder, sha256
 * of the text), so a second clone, a worktree, a copy of a repository, or the same repository moved to PostgreSQL or
 * Chroma re-embeds only what differs. Safe to delete at any time.
 */
export function userCachePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.QUARRY_SHARED_CACHE_PATH) return env.QUARRY_SHARED_CACHE_PATH;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'quarry', 'embeddings.db');
}

export interface UserCache extends EmbeddingCache {
  close(): void;
}

export function openUserCache(path = userCachePath()): UserCache {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // several indexers may share it: WAL, and wait for each other's short write transactions
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 10000');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE IF NOT EXISTS vectors (
    embedder TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (embedder, hash)
  ) WITHOUT ROWID`);
  const get = db.prepare(
    `SELECT hash, vector FROM vectors WHERE embedder = ? AND hash IN (SELECT value FROM json_each(?))`,
  );
  const put = db.prepare(`INSERT OR REPLACE INTO vectors (embedder, hash, vector) VALUES (?, ?, ?)`);
  return {
    async get(embedder, hashes) {
      const out = new Map<string, Float32Array>();
      if (!hashes.length) return out;
      for (const r of get.all(embedder, JSON.stringify(hashes)) as Array<{ hash: string; vector: Buffer }>)
        out.set(r.hash, new Float32Array(new Uint8Array(r.vector).buffer));
      return out;
    },
    async put(embedder, entries) {
      if (!entries.length) return;
      db.transaction(() => {
        for (const e of entries)
          put.run(embedder, e.hash, Buffer.from(e.vector.buffer, e.vector.byteOffset, e.vector.byteLength));
      }).immediate();
    },
    close: () => db.close(),
  };
}

/** The store's cache first, then the user's; what the user's cache had is copied into the store's. */
export function tieredCache(first: EmbeddingCache | undefined, second: EmbeddingCache): EmbeddingCache {
  return {
    async get(embedder, hashes) {
      const out = first ? await first.get(embedder, hashes) : new Map<string, Float32Array>();
      const rest = hashes.filter((h) => !out.has(h));
      if (rest.length) {
        const more = await second.get(embedder, rest);
        if (more.size) {
          const entries = [...more].map(([hash, vector]) => ({ hash, vector }));
          await first?.put(embedder, entries);
          for (const e of entries) out.set(e.hash, e.vector);
        }
      }
      return out;
    },
    async put(embedder, entries) {
      await first?.put(embedder, entries);
      await second.put(embedder, entries);
    },
  };
}

/**
 * The cache an index run uses: with `embed.shared_cache` on (the default), the store's own first, then the user's
 * (what the user's cache had is copied into the store's). A server store's own cache is shared by everyone who uses
 * it; the user's still holds what this machine embedded for its other indexes (regression: indexing into PostgreSQL
 * re-embedded 2,683 of 2,704 texts that this machine's cache held).
 */
export function cacheFor(
  store: Store,
  config: QuarryConfig,
  env: NodeJS.ProcessEnv = process.env,
): { cache: EmbeddingCache | undefined; close(): void } {
  if (config.embed.sharedCache === false) return { cache: store.cache, close() {} };
  try {
    const user = openUserCache(userCachePath(env));
    return { cache: tieredCache(store.cache, user), close: () => user.close() };
  } catch {
    // an unwritable cache folder costs the saving, never the index
    return { cache: store.cache, close() {} };
  }
}
