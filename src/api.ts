import { resolve } from 'node:path';
import { type QuarryConfig, resolveConfig, type UserConfig } from './config/config.ts';
import { type Embedder, openEmbedder } from './embed/index.ts';
import { QuarryError } from './errors.ts';
import { type IndexOptions, type IndexReport, indexRepository } from './index/indexer.ts';
import { createHttpReranker } from './rerank/rerank.ts';
import { type SearchOptions, type SearchResponse, search } from './search/search.ts';
import { openStore } from './store/open.ts';
import {
  type EmbeddingStatus,
  embeddingStatusOf,
  type FileRecord,
  type Store,
  type StoreStats,
} from './store/types.ts';
import { findProjectRoot, isDirectory } from './workspace/root.ts';
import { walk } from './workspace/walk.ts';

/** An opened project: its root, resolved config and index store. Close it when done. */
export interface Project {
  root: string;
  config: QuarryConfig;
  store: Store;
  /** The embedder for queries (opened on first use, in this thread); undefined when there is none. */
  queryEmbedder(): Promise<Embedder | undefined>;
  close(): Promise<void>;
}

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
}

export async function openProject(options: OpenProjectOptions = {}): Promise<Project> {
  const cwd = resolve(options.cwd ?? process.cwd());
  let root: string;
  if (options.root) {
    root = resolve(cwd, options.root);
    if (!isDirectory(root))
      throw new QuarryError('BAD_INPUT', `${root} is not a directory: pass the project folder`);
  } else {
    const found = findProjectRoot(cwd);
    if (!found && !options.create)
      throw new QuarryError(
        'NO_ROOT',
        `no quarry index or git repository above ${cwd}: run \`quarry index\` here`,
      );
    root = found ?? cwd;
  }
  const config = resolveConfig({
    root,
    ...(options.overrides ? { overrides: options.overrides } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.userConfig === false ? { userConfig: false } : {}),
  });
  const store = await openStore(config, root, { create: options.create ?? false });
  let embedder: Promise<Embedder | undefined> | undefined;
  return {
    root,
    config,
    store,
    queryEmbedder() {
      // a search never downloads weights; one query needs one thread
      embedder ??= openEmbedder({ ...config, embed: { ...config.embed, download: false } }, { threads: 1 });
      return embedder;
    },
    async close() {
      await (await embedder)?.close();
      await store.close();
    },
  };
}

export type IndexProjectOptions = Omit<IndexOptions, 'root' | 'config' | 'store' | 'embedder'> & {
  /** Embed after the lexical phase (the configured embedder, on background workers). Default true. */
  embed?: boolean;
  /** Told once when there are no vectors to be had, and why. */
  onNotice?: (message: string) => void;
};

/** Index (or bring up to date) an opened project: lexical rows first, then vectors when an embedder is there. */
export async function indexProject(
  project: Project,
  options: IndexProjectOptions = {},
): Promise<IndexReport> {
  const { embed = true, onNotice, ...rest } = options;
  const embedder =
    embed && project.store.vectors
      ? await openEmbedder(project.config, { background: true, ...(onNotice ? { onNotice } : {}) })
      : undefined;
  try {
    return await indexRepository({
      ...rest,
      root: project.root,
      config: project.config,
      store: project.store,
      ...(embedder ? { embedder } : {}),
    });
  } finally {
    await embedder?.close();
  }
}

export interface SearchProjectOptions extends Omit<SearchOptions, 'queryVector'> {
  /** Told when the index has vectors that the installed model cannot match. */
  onNotice?: (message: string) => void;
}

/** Searches a project: hybrid when its index has vectors from the installed model, lexical otherwise. */
export async function searchProject(
  project: Project,
  query: string,
  options: SearchProjectOptions = {},
): Promise<SearchResponse> {
  const { onNotice, ...rest } = options;
  let queryVector: Float32Array | undefined;
  let coverage = 1;
  const indexed =
    rest.mode === 'lexical' || !project.store.vectors
      ? undefined
      : (await project.store.vectors.embedder())?.id;
  if (indexed && query.trim()) {
    const embedder = await project.queryEmbedder();
    if (embedder && embedder.id === indexed)
      ({ vector: queryVector, coverage } = await embedQuery(embedder, query));
    else if (embedder)
      onNotice?.(
        `the index's vectors come from ${indexed}, not ${embedder.id}: run \`quarry index\` to rebuild them`,
      );
  }
  const rr = project.config.search.rerank;
  const reranker =
    rr.protocol !== 'none' && rr.url
      ? createHttpReranker({
          protocol: rr.protocol,
          baseUrl: rr.url,
          ...(rr.model ? { model: rr.model } : {}),
        })
      : undefined;
  return search(project.store, project.config, query, {
    ...rest,
    ...(queryVector ? { queryVector, queryCoverage: coverage } : {}),
    ...(reranker ? { reranker, rerankTop: rr.top } : {}),
  });
}

/** What the index holds and how far it has come; no look at the files on disk. */
export interface IndexStatus extends StoreStats {
  root: string;
  index: string;
  lastIndexedAt: string | null;
  /** The index run in progress, or the last one that did not finish. */
  run: { state: 'idle' | 'running' | 'interrupted'; pid?: number };
  skippedFiles: number;
  /** Vectors: which embedder, and how far phase 1 (a vector per file) and phase 2 (per chunk) have come. */
  embedding: EmbeddingStatus;
}

export interface StatusReport extends IndexStatus {
  /** Files on disk that differ from the index (a walk and a stat of each file, nothing read). */
  pending: { added: number; modified: number; deleted: number };
}

/** The index's own state, cheap enough to ask every few seconds (a running watcher knows what is pending). */
export async function indexStatus(project: Project, files?: FileRecord[]): Promise<IndexStatus> {
  const { store, root } = project;
  const stats = await store.stats();
  const last = await store.getMeta('last_indexed_at');
  const run = JSON.parse((await store.getMeta('run')) ?? '{}') as { startedAt?: number; finishedAt?: number };
  const writer = await store.activeWriter();
  const lock = writer ? (writer.pid ?? 0) : undefined;
  let state: StatusReport['run']['state'] = 'idle';
  if (lock !== undefined) state = 'running';
  else if (run.startedAt && !run.finishedAt) state = 'interrupted';
  let skippedFiles = 0;
  for (const f of files ?? (await store.listFiles())) if (f.method === 'skipped') skippedFiles++;
  return {
    ...stats,
    root,
    index: store.location,
    lastIndexedAt: last ? new Date(Number(last)).toISOString() : null,
    run: lock !== undefined ? { state, pid: lock } : { state },
    skippedFiles,
    embedding: await embeddingStatusOf(store),
  };
}

/** The index's state and what is pending on disk (a walk that stats every file). */
export async function projectStatus(project: Project): Promise<StatusReport> {
  const { store, root, config } = project;
  const files = await store.listFiles();
  const known = new Map(files.map((f) => [f.path, f]));
  const walked = walk(root, config);
  let added = 0;
  let modified = 0;
  const present = new Set<string>();
  for (const f of walked.files) {
    present.add(f.path);
    const k = known.get(f.path);
    if (!k) added++;
    else if (k.size !== f.size || k.mtimeMs !== f.mtimeMs) modified++;
  }
  let deleted = 0;
  for (const p of known.keys()) if (!present.has(p)) deleted++;
  return { ...(await indexStatus(project, files)), pending: { added, modified, deleted } };
}

/**
 * Embeds a query, and says how much of it the model read. A query longer than the model's window (a pasted bug
 * report, a stack trace) is cut to its first `maxTokens` word pieces; the dense list then speaks for only that share
 * of the question, and fusion weighs it so. (Averaging the vectors of pieces that each fit was tried, and made dense
 * retrieval worse on SWE-bench Lite dev: MRR 0.438 against 0.498 — see docs/retrieval.md.)
 */
export async function embedQuery(
  embedder: Embedder,
  query: string,
): Promise<{ vector: Float32Array; coverage: number }> {
  const [vector] = await embedder.embed([query], 'query');
  // countTokens is capped at the window: below it, the model read the whole query
  if (embedder.countTokens(query) < embedder.maxTokens) return { vector: vector!, coverage: 1 };
  // the tokenizer's fixed cost ([CLS], [SEP]) is paid once per text, not per word
  const overhead = embedder.countTokens('');
  const room = embedder.maxTokens - overhead;
  let total = 0;
  for (const w of query.split(/\s+/)) if (w) total += Math.max(1, embedder.countTokens(w) - overhead);
  return { vector: vector!, coverage: total <= room ? 1 : room / total };
}
