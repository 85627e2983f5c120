import type { Embedder } from '../../embed/open.ts';
import { QuarryError } from '../../errors.ts';
import { openReranker } from '../../rerank/open.ts';
import { readHistory } from '../../search/history.ts';
import {
  denseShare,
  passesFilter,
  type SearchOptions,
  type SearchResponse,
  search,
} from '../../search/search.ts';
import type { FileRecord, SearchFilter, Store } from '../../store/types.ts';
import type { LocalProject, NearestHit, NearestQuery, NearestResponse } from '../types.ts';
import { stateOf } from './state.ts';

export interface SearchProjectOptions extends Omit<SearchOptions, 'queryVector'> {
  /** Told when the index has vectors that the installed model cannot match. */
  onNotice?: (message: string) => void;
}

/** Searches a project: hybrid when its index has vectors from the installed model, lexical otherwise. */
export async function searchProject(
  project: LocalProject,
  query: string,
  options: SearchProjectOptions = {},
): Promise<SearchResponse> {
  const { onNotice, ...rest } = options;
  const { freshness, reranker: keep } = stateOf(project);
  const tree = await freshness.catchUp();
  let queryVector: Float32Array | undefined;
  let coverage = 1;
  const indexed =
    rest.mode === 'lexical' || !project.store.vectors
      ? undefined
      : (await project.store.vectors.embedder())?.id;
  if (indexed && query.trim()) {
    const embedder = await project.queryEmbedder();
    if (embedder && embedder.id === indexed) {
      ({ vector: queryVector, coverage } = await embedQuery(embedder, query));
      // while vectors are still being made, the dense list speaks for the share of the index it covers
      coverage *= denseShare(await freshness.embeddingNow());
    } else if (embedder)
      onNotice?.(
        `the index's vectors come from ${indexed}, not ${embedder.id}: run \`quarry index\` to rebuild them`,
      );
  }
  // the LLM reranker's model is opened once per project, and kept in its state
  const reranker = await openReranker(project.config, {
    keep,
    ...(onNotice ? { onFallback: onNotice } : {}),
  });
  const res = await search(project.store, project.config, query, {
    ...rest,
    history: () => readHistory(project.root),
    ...(queryVector ? { queryVector, queryCoverage: coverage } : {}),
    ...(reranker ? { reranker, rerankTop: project.config.search.rerank.top } : {}),
  });
  if (!res.results.length && !res.files.length && rest.filter)
    await checkFilterMatches(project.store, rest.filter);
  const stale = tree?.note ?? (await freshness.staleNote(res.mode !== 'lexical' || Boolean(indexed)));
  return stale ? { ...res, stale } : res;
}

/** A filter that no indexed file passes is a mistake to name, not an empty answer (BAD_INPUT). */
export async function checkFilterMatches(
  store: Store,
  filter: SearchFilter,
  listed?: FileRecord[],
): Promise<void> {
  const { excludePaths: _ignored, ...scope } = filter;
  if (!Object.keys(scope).length) return;
  const files =
    listed ??
    (await store.listFiles(scope.pathPrefixes?.length ? { pathPrefixes: scope.pathPrefixes } : undefined));
  for (const f of files) if (passesFilter(f.path, scope, f.language)) return;
  const said = [
    scope.paths?.length ? `file ${scope.paths.join(', ')}` : '',
    scope.pathPrefixes?.length ? `path ${scope.pathPrefixes.join(', ')}` : '',
    scope.languages?.length ? `language ${scope.languages.join(', ')}` : '',
  ].filter(Boolean);
  throw new QuarryError(
    'BAD_INPUT',
    `no indexed file matches the filter (${said.join('; ')}): check it against \`quarry files\` and \`quarry status\``,
  );
}

/** The stored vectors nearest a query vector of the index's own embedder (none for another). */
export async function nearestIn(store: Store, q: NearestQuery): Promise<NearestResponse> {
  const embedder = (await store.vectors?.embedder()) ?? null;
  if (!store.vectors || !embedder || embedder.id !== q.embedder || q.vector.length !== embedder.dimension)
    return { embedder, hits: [] };
  const vector = Float32Array.from(q.vector);
  const hits: NearestHit[] =
    q.level === 'chunks'
      ? (await store.vectors.searchChunks(vector, q.limit, q.filter)).map((h) => ({
          path: h.path,
          startLine: h.startLine,
          endLine: h.endLine,
          score: h.score,
        }))
      : (await store.vectors.searchFiles(vector, q.limit, q.filter)).map((h) => ({
          path: h.path,
          startLine: 0,
          endLine: 0,
          score: h.score,
          refined: h.refined,
        }));
  return { embedder, hits };
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
