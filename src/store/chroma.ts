import { randomUUID } from 'node:crypto';
import { ChromaClient, type Collection, type Metadata, type Where } from 'chromadb';
import { QuarryError } from '../errors.ts';
import { chunkGetsVector } from '../workspace/roles.ts';
import { underPrefix } from '../workspace/scope.ts';
import { forward } from './shared/compose.ts';
import { openSqliteStore, sqliteIndexExists } from './sqlite/index.ts';
import type {
  ChunkHit,
  EmbeddingStatus,
  FileHit,
  PendingFile,
  SearchFilter,
  Store,
  StoreCore,
  VectorIndex,
  VectorLedger,
} from './types.ts';

/**
 * A composite driver: vectors in a Chroma server, everything else (files, chunks, the lexical index, symbols,
 * references, the embedding cache, the writer lock) in the project's SQLite file beside it.
 *
 * Chroma has no BM25, no symbols and no references; its full-text filter (`where_document: {$contains}`) matches
 * substrings and does not rank, so the lexical side stays in SQLite (measured in docs/stores.md).
 *
 * Soundness without transactions across the two engines: each local index has an id (SQLite meta) that names its
 * collections, so no two indexes ever share vectors. Vectors are written to Chroma first and marked in SQLite after
 * (a kill in between re-embeds those files from the cache and upserts the same ids); a changed or deleted file's
 * vectors are deleted from Chroma before its rows change in SQLite (a kill in between leaves the file to be
 * re-indexed, since its stat no longer matches). Every hit is checked against SQLite — the chunk must exist in the
 * same file with the same content hash — so a stale vector is never returned.
 */

export interface ChromaStoreOptions {
  /** `chroma://host:port`, `chroma+https://host:port`. */
  url: string;
  repo: string;
  /** The SQLite file that keeps the rest of the index. */
  sqlitePath: string;
  create: boolean;
  root: string;
}

/** The Chroma server's address from a store URL. */
export function chromaAddress(url: string): {
  host: string;
  port: number;
  ssl: boolean;
  tenant?: string;
  database?: string;
} {
  const m = /^chroma(\+https?)?:\/\/([^/:]+)(?::(\d+))?(\/.*)?$/i.exec(url.trim());
  if (!m)
    throw new QuarryError(
      'BAD_CONFIG',
      `cannot read the Chroma URL "${url}": write it as chroma://host:port`,
    );
  const ssl = m[1]?.toLowerCase() === '+https';
  const [tenant, database] = (m[4] ?? '').split('/').filter(Boolean);
  return {
    host: m[2]!,
    port: m[3] ? Number(m[3]) : ssl ? 443 : 8000,
    ssl,
    ...(tenant ? { tenant } : {}),
    ...(database ? { database } : {}),
  };
}

function chromaError(err: unknown, url: string, doing: string): QuarryError {
  if (err instanceof QuarryError) return err;
  const e = err as Error;
  const msg = String(e?.message ?? err).split('\n')[0] ?? '';
  if (e?.name === 'ChromaConnectionError' || /fetch failed|ECONNREFUSED|Failed to connect/i.test(msg))
    return new QuarryError(
      'IO',
      `cannot reach the Chroma server at ${url} while ${doing}: start it (chroma run), or fix --store / [store] url; what was committed stays, the next run resumes`,
      { cause: err },
    );
  if (/dimension/i.test(msg))
    return new QuarryError(
      'BAD_INPUT',
      `a vector does not fit the Chroma collection (${msg.replace(/^.*status: /, '')}): run \`quarry index\` to rebuild`,
      { cause: err },
    );
  if (e?.name === 'ChromaUnauthorizedError' || e?.name === 'ChromaForbiddenError')
    return new QuarryError(
      'BAD_CONFIG',
      `the Chroma server at ${url} refused access: check its credentials`,
      {
        cause: err,
      },
    );
  return new QuarryError('IO', `the Chroma server at ${url} failed while ${doing}: ${msg}`, { cause: err });
}

/** A collection name Chroma accepts: 3–512 of [A-Za-z0-9._-], starting and ending alphanumeric. */
function collectionName(repo: string, indexId: string, kind: 'chunks' | 'files'): string {
  const slug = repo
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '')
    .slice(0, 200);
  return `quarry-${slug || 'repo'}-${indexId.slice(0, 8)}-${kind}`;
}

const EMBEDDER_KEY = 'quarry_embedder';
const DIMENSION_KEY = 'quarry_dimension';
/** Meta key (in the SQLite file): the local index's id, which names its collections. */
const INDEX_ID_KEY = 'chroma_index_id';

/** Chroma filters what it can (`$in`, `$nin` on path and language); path prefixes are checked here. */
function chromaWhere(filter: SearchFilter | undefined): Where | undefined {
  if (!filter) return undefined;
  const parts: Where[] = [];
  if (filter.paths) parts.push({ path: { $in: filter.paths.length ? filter.paths : ['\u0000'] } });
  if (filter.excludePaths?.length) parts.push({ path: { $nin: filter.excludePaths } });
  if (filter.languages?.length) parts.push({ language: { $in: filter.languages } });
  if (!parts.length) return undefined;
  return parts.length === 1 ? parts[0] : { $and: parts };
}

function prefixOk(filter: SearchFilter | undefined, path: string): boolean {
  return !filter?.pathPrefixes?.length || filter.pathPrefixes.some((p) => underPrefix(path, p));
}

/** What the Chroma side reads of the store that keeps the rest: its meta values and chunks, and its vector ledger. */
export type ChromaLocal = Pick<StoreCore, 'getMeta' | 'setMeta' | 'getChunks'> & { ledger: VectorLedger };

export class ChromaStore implements VectorIndex {
  private readonly client: ChromaClient;
  private cols: { chunks: Collection; files: Collection } | undefined;
  private readonly ledger: VectorLedger;

  constructor(
    private readonly local: ChromaLocal,
    private readonly url: string,
    private readonly repo: string,
  ) {
    this.ledger = local.ledger;
    const a = chromaAddress(url);
    this.client = new ChromaClient({
      host: a.host,
      port: a.port,
      ssl: a.ssl,
      ...(a.tenant ? { tenant: a.tenant } : {}),
      ...(a.database ? { database: a.database } : {}),
    });
  }

  private async call<T>(doing: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw chromaError(err, this.url, doing);
    }
  }

  private async indexId(): Promise<string> {
    let id = await this.local.getMeta(INDEX_ID_KEY);
    if (!id) {
      id = randomUUID();
      await this.local.setMeta(INDEX_ID_KEY, id);
    }
    return id;
  }

  /**
   * Vectors against the phase marks in SQLite: every chunk of a file marked embedded has its record (but a data
   * file's tail, which gets none by design), every file
   * marked with a coarse vector has one, and no record speaks of a chunk that is gone or of another file. (Records
   * of files not yet marked are expected after a kill between Chroma's write and the mark: the next run rewrites
   * them.)
   */
  async check(): Promise<string[]> {
    const cols = await this.collections();
    if (!cols) return [];
    const problems: string[] = [];
    const rows = await this.ledger.phaseRows();
    const all = async (col: Collection) => {
      const out = new Map<string, string>();
      for (let offset = 0; ; offset += 1000) {
        const page = await this.call('checking vectors', () =>
          col.get({ limit: 1000, offset, include: ['metadatas'] as never }),
        );
        page.ids.forEach((id, i) => {
          out.set(id, String((page.metadatas[i] as { path?: string } | null)?.path ?? ''));
        });
        if (page.ids.length < 1000) return out;
      }
    };
    const chunkRecords = await all(cols.chunks);
    let missing = 0;
    let stray = 0;
    for (const [id, c] of rows.chunks)
      if (c.phase === 2 && chunkGetsVector(c.path, c.ordinal) && !chunkRecords.has(id)) missing++;
    for (const [id, path] of chunkRecords) if (rows.chunks.get(id)?.path !== path) stray++;
    if (missing) problems.push(`Chroma lacks ${missing} vectors of chunks marked embedded`);
    if (stray) problems.push(`Chroma holds ${stray} chunk vectors of no chunk (or of another file)`);
    const fileRecords = await all(cols.files);
    let coarse = 0;
    for (const [path, phase] of rows.files) if (phase >= 1 && !fileRecords.has(path)) coarse++;
    const strayFiles = [...fileRecords.keys()].filter((p) => !rows.files.has(p)).length;
    if (coarse) problems.push(`Chroma lacks ${coarse} file vectors of files marked with one`);
    if (strayFiles) problems.push(`Chroma holds ${strayFiles} file vectors of no file`);
    return problems;
  }

  async ping(): Promise<void> {
    await this.call('connecting', () => this.client.heartbeat());
  }

  /** The collections of the recorded embedder, checked against it; undefined when there are none yet. */
  private async collections(): Promise<typeof this.cols> {
    if (this.cols) return this.cols;
    const recorded = await this.ledger.recordedEmbedder();
    if (!recorded) return undefined;
    const indexId = await this.indexId();
    const get = async (kind: 'chunks' | 'files') => {
      const name = collectionName(this.repo, indexId, kind);
      try {
        return await this.client.getCollection({ name, embeddingFunction: null as never });
      } catch (err) {
        if ((err as Error)?.name === 'ChromaNotFoundError') return undefined;
        throw chromaError(err, this.url, 'opening the collections');
      }
    };
    const [chunks, files] = await Promise.all([get('chunks'), get('files')]);
    if (!chunks || !files) return undefined;
    for (const c of [chunks, files]) this.checkOwner(c, recorded.id, recorded.dimension);
    this.cols = { chunks, files };
    return this.cols;
  }

  /** A collection another embedder (or another program) made is refused, never mixed. */
  private checkOwner(c: Collection, id: string, dim: number): void {
    const meta = (c.metadata ?? {}) as Metadata;
    if (meta[EMBEDDER_KEY] === undefined)
      throw new QuarryError(
        'BAD_CONFIG',
        `the Chroma collection "${c.name}" was not made by quarry: delete it, or pick another name with --repo`,
      );
    if (meta[EMBEDDER_KEY] !== id || Number(meta[DIMENSION_KEY]) !== dim)
      throw new QuarryError(
        'BAD_CONFIG',
        `the Chroma collection "${c.name}" holds vectors of ${String(meta[EMBEDDER_KEY])} (${String(meta[DIMENSION_KEY])} dimensions), not ${id}: run \`quarry index\` to rebuild it`,
      );
  }

  async embedder(): Promise<{ id: string; dimension: number } | undefined> {
    const cols = await this.collections();
    if (!cols) return undefined;
    return this.ledger.recordedEmbedder();
  }

  async useEmbedder(id: string, dimension: number): Promise<{ reset: boolean }> {
    const dim = Math.floor(dimension);
    if (!(dim > 0))
      throw new QuarryError('BAD_INPUT', `embedding dimension must be positive, got ${dimension}`);
    const recorded = await this.ledger.recordedEmbedder();
    let existing: typeof this.cols;
    try {
      existing = await this.collections();
    } catch (err) {
      // collections of another embedder are replaced below, as in every driver; another program's are refused
      if (!(err instanceof QuarryError && /holds vectors of/.test(err.message))) throw err;
    }
    if (existing && recorded?.id === id && recorded.dimension === dim) return { reset: false };
    const indexId = await this.indexId();
    const reset = Boolean(recorded);
    await this.call('preparing the collections', async () => {
      for (const kind of ['chunks', 'files'] as const) {
        const name = collectionName(this.repo, indexId, kind);
        try {
          const old = await this.client.getCollection({ name, embeddingFunction: null as never });
          if ((old.metadata as Metadata | null)?.[EMBEDDER_KEY] === undefined)
            throw new QuarryError(
              'BAD_CONFIG',
              `the Chroma collection "${name}" was not made by quarry: delete it, or pick another name with --repo`,
            );
          await this.client.deleteCollection({ name });
        } catch (err) {
          if ((err as Error)?.name !== 'ChromaNotFoundError') throw err;
        }
      }
    });
    this.cols = undefined;
    await this.ledger.resetVectorPhases();
    await this.ledger.recordEmbedder(id, dim);
    await this.call('creating the collections', async () => {
      const make = (kind: 'chunks' | 'files') =>
        this.client.createCollection({
          name: collectionName(this.repo, indexId, kind),
          metadata: { [EMBEDDER_KEY]: id, [DIMENSION_KEY]: dim, quarry_repo: this.repo },
          configuration: { hnsw: { space: 'cosine' } },
          embeddingFunction: null as never,
        });
      this.cols = { chunks: await make('chunks'), files: await make('files') };
    });
    return { reset };
  }

  private async requireCollections() {
    const c = await this.collections();
    if (!c) throw new QuarryError('INTERNAL', 'vectors written before useEmbedder() was called');
    return c;
  }

  async putFileVectors(items: Array<{ path: string; hash: string; vector: Float32Array }>): Promise<void> {
    if (!items.length) return;
    const { files } = await this.requireCollections();
    const current = await this.ledger.filesByPath(items.map((i) => i.path));
    const kept = items.filter((i) => current.get(i.path)?.hash === i.hash);
    if (!kept.length) return;
    await this.call('storing vectors', () =>
      files.upsert({
        ids: kept.map((i) => i.path),
        embeddings: kept.map((i) => Array.from(i.vector)),
        metadatas: kept.map((i) => ({ path: i.path, hash: i.hash, language: current.get(i.path)!.language })),
      }),
    );
    await this.ledger.markVectors(kept, 1);
  }

  async putChunkVectors(
    items: Array<{ path: string; hash: string; vectors: Array<{ chunkId: number; vector: Float32Array }> }>,
  ): Promise<void> {
    if (!items.length) return;
    const { chunks } = await this.requireCollections();
    const current = await this.ledger.filesByPath(items.map((i) => i.path));
    const kept = items.filter((i) => current.get(i.path)?.hash === i.hash);
    if (!kept.length) return;
    const rows = kept.flatMap((i) =>
      i.vectors.map((v) => ({
        id: String(v.chunkId),
        vector: Array.from(v.vector),
        meta: { path: i.path, hash: i.hash, language: current.get(i.path)!.language },
      })),
    );
    for (let k = 0; k < rows.length; k += 1000) {
      const slice = rows.slice(k, k + 1000);
      await this.call('storing vectors', () =>
        chunks.upsert({
          ids: slice.map((r) => r.id),
          embeddings: slice.map((r) => r.vector),
          metadatas: slice.map((r) => r.meta),
        }),
      );
    }
    await this.ledger.markVectors(kept, 2);
  }

  /** Deletes the vectors of these files (before their rows change in SQLite). */
  async forget(paths: string[]): Promise<void> {
    if (!paths.length) return;
    const cols = await this.collections();
    if (!cols) return;
    for (let k = 0; k < paths.length; k += 500) {
      const where: Where = { path: { $in: paths.slice(k, k + 500) } };
      await this.call('removing vectors', async () => {
        await cols.chunks.delete({ where });
        await cols.files.delete({ where });
      });
    }
  }

  private async query(col: Collection, vector: Float32Array, n: number, filter?: SearchFilter) {
    const where = chromaWhere(filter);
    const total = await this.call('searching vectors', () => col.count());
    if (!total) return [];
    const r = await this.call('searching vectors', () =>
      col.query({
        queryEmbeddings: [Array.from(vector)],
        nResults: Math.min(total, n),
        ...(where ? { where } : {}),
        include: ['metadatas', 'distances'] as never,
      }),
    );
    const ids = r.ids[0] ?? [];
    return ids.map((id, i) => ({
      id,
      distance: Number(r.distances?.[0]?.[i] ?? 1),
      meta: (r.metadatas?.[0]?.[i] ?? {}) as { path?: string; hash?: string },
    }));
  }

  async searchChunks(vector: Float32Array, limit: number, filter?: SearchFilter): Promise<ChunkHit[]> {
    const cols = await this.collections();
    if (!cols || limit <= 0) return [];
    const over = filter?.pathPrefixes?.length ? limit * 4 : limit + 20;
    const raw = await this.query(cols.chunks, vector, Math.min(4096, over), filter);
    const chunks = new Map(
      (await this.local.getChunks(raw.map((r) => Number(r.id)))).map((c) => [c.chunkId, c]),
    );
    const files = await this.ledger.filesByPath([...new Set(raw.map((r) => r.meta.path ?? ''))]);
    const out: ChunkHit[] = [];
    for (const r of raw) {
      const c = chunks.get(Number(r.id));
      // a stale vector (its chunk gone, moved to another file, or of older content) never comes back
      if (!c || c.path !== r.meta.path || files.get(c.path)?.hash !== r.meta.hash) continue;
      if (!prefixOk(filter, c.path)) continue;
      out.push({
        chunkId: c.chunkId,
        path: c.path,
        startLine: c.startLine,
        endLine: c.endLine,
        symbol: c.symbol,
        kind: c.kind,
        score: 1 - r.distance,
      });
    }
    return out.sort((a, b) => b.score - a.score || a.chunkId - b.chunkId).slice(0, limit);
  }

  async searchFiles(
    vector: Float32Array,
    limit: number,
    filter?: SearchFilter,
  ): Promise<Array<FileHit & { refined: boolean }>> {
    const cols = await this.collections();
    if (!cols || limit <= 0) return [];
    const over = filter?.pathPrefixes?.length ? limit * 4 : limit;
    const raw = await this.query(cols.files, vector, Math.min(4096, over), filter);
    const files = await this.ledger.filesByPath(raw.map((r) => r.id));
    const out: Array<FileHit & { refined: boolean }> = [];
    for (const r of raw) {
      const f = files.get(r.id);
      if (!f || f.hash !== r.meta.hash || f.phase < 1 || !prefixOk(filter, r.id)) continue;
      out.push({ path: r.id, score: 1 - r.distance, refined: f.phase === 2 });
    }
    return out.sort((a, b) => b.score - a.score || (a.path < b.path ? -1 : 1)).slice(0, limit);
  }

  async status(): Promise<EmbeddingStatus> {
    const cols = await this.collections();
    const counts = await this.ledger.phaseCounts();
    const chunkVectors = cols ? await this.call('counting vectors', () => cols.chunks.count()) : 0;
    return { embedder: (await this.embedder()) ?? null, ...counts, chunkVectors };
  }

  pendingFiles(phase: 1 | 2, limit: number): Promise<PendingFile[]> {
    return this.ledger.pendingFiles(phase, limit);
  }
}

/**
 * The core methods the composite takes from its SQLite store as they are. Not these: replaceFiles and deleteFiles
 * (Chroma forgets the files' vectors first), settle and check (Chroma's own check joins SQLite's), and writeBehind
 * (its thread would write past Chroma's forget; without it, the indexer writes through replaceFiles).
 */
const CORE_AS_IT_IS = [
  'acquireWriter',
  'activeWriter',
  'getMeta',
  'setMeta',
  'listFiles',
  'getFile',
  'touchFiles',
  'getChunks',
  'getFilesChunks',
  'findFilesByName',
  'findSymbols',
  'countSymbolFiles',
  'listSymbols',
  'chunkSymbols',
  'allDefinitions',
  'stats',
  'close',
] as const satisfies ReadonlyArray<keyof StoreCore>;

/** Every method of VectorIndex, answered by ChromaStore. */
const VECTOR_METHODS = [
  'embedder',
  'useEmbedder',
  'pendingFiles',
  'putFileVectors',
  'putChunkVectors',
  'searchChunks',
  'searchFiles',
  'status',
] as const satisfies ReadonlyArray<keyof VectorIndex>;

/** The composite store: the SQLite store's core and capabilities, with Chroma's vectors. */
export async function openChromaStore(options: ChromaStoreOptions): Promise<Store> {
  if (!options.create && !sqliteIndexExists(options.sqlitePath))
    throw new QuarryError('NO_INDEX', `no index in ${options.root}: run \`quarry index\` there first`);
  const sqlite = openSqliteStore(options.sqlitePath, { vectors: false });
  const chroma = new ChromaStore(sqlite, options.url, options.repo);
  try {
    await chroma.ping();
  } catch (err) {
    await sqlite.close();
    throw err;
  }
  const core: StoreCore = sqlite;
  return {
    ...forward(core, CORE_AS_IT_IS),
    kind: 'chroma',
    location: `${options.url} (vectors) + ${options.sqlitePath}`,
    lexical: sqlite.lexical,
    cache: sqlite.cache,
    references: sqlite.references,
    exact: sqlite.exact,
    ledger: sqlite.ledger,
    vectors: forward(chroma, VECTOR_METHODS),
    replaceFiles: async (updates) => {
      await chroma.forget(updates.map((u) => u.file.path));
      await core.replaceFiles(updates);
    },
    deleteFiles: async (paths) => {
      await chroma.forget(paths);
      await core.deleteFiles(paths);
    },
    settle: async () => {
      await core.settle?.();
    },
    check: async () => [...(await core.check()), ...(await chroma.check())],
  };
}
