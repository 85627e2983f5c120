import type { QuarryConfig } from '../config/config.ts';
import type { ChunkHit, FileHit, SearchFilter, Store } from '../store/types.ts';
import { cutByPlace } from './cut.ts';
import { exactHits } from './exact-evidence.ts';
import { queryShape, symbolNames } from './features.ts';
import { inScope } from './filter.ts';
import type { AnalyzedQuery } from './query.ts';

// The first stage of a search: every list the store answers for one query (chunk and whole-file BM25, file-name and
// symbol hints, the definitions a symbol query names, verbatim evidence, dense chunks and files), as `Gathered`.

/** A file-name hint at least this strong (a name with its extension or a path, matching at most two files). */
const NAMED_MIN = 0.5;
/** Lexical candidates fetched per result wanted. */
const CANDIDATES_PER_RESULT = 20;
const MIN_CANDIDATES = 200;
/** Whole-file BM25 candidates. */
const FILE_CANDIDATES = 100;
/** Dense candidates: chunks by their own vectors, and files by their coarse vector. */
const DENSE_CANDIDATES = 100;
const DENSE_FILE_CANDIDATES = 50;

/** Terms in more than this share of the documents are dropped from a lexical query (the rarest one stays). */
const COMMON_TERM_SHARE = 0.5;
/** Below this many documents, every term is kept. */
const COMMON_TERM_MIN_DOCS = 100;

/**
 * Drops terms that occur in more than half of the documents, keeping at least the rarest: their BM25 weight is next
 * to nothing, but each costs a scan of most of the index.
 */
export async function informativeTerms(
  store: Store,
  terms: string[],
  scope: 'chunks' | 'files',
): Promise<string[]> {
  const unique = [...new Set(terms)].filter((t) => t.length > 0);
  if (unique.length < 2 || !store.lexical) return unique;
  const { total, df } = await store.lexical.termStats(unique, scope);
  if (total < COMMON_TERM_MIN_DOCS) return unique;
  const kept = unique.filter((t) => (df.get(t) ?? 0) <= total * COMMON_TERM_SHARE);
  if (kept.length) return kept;
  return [unique.reduce((a, b) => ((df.get(a) ?? 0) <= (df.get(b) ?? 0) ? a : b))];
}

/** What each retriever found for one query: the input of fusion, with no store needed past this point. */
export interface Gathered {
  /** Chunk BM25 hits, best first. */
  lexical: ChunkHit[];
  /** Chunk BM25 hits within files the main list did not reach (hinted files, strong whole files). */
  extraLexical: ChunkHit[];
  /** Whole-file BM25 hits. */
  fileLexical: FileHit[];
  /** File-name hint strength per file, and the files the query names outright. */
  fileHints: Map<string, number>;
  namedFiles: Map<string, number>;
  /** Symbol hint strength per chunk. */
  symbolHints: Map<number, number>;
  /** Chunks that contain text the query quotes (or an error message it pastes) verbatim, with how much of it. */
  exactHits: Map<number, number>;
  /** Files defining the name a symbol query spells (`type`: as a class, struct, interface, trait or enum). */
  definitions: Map<string, { type: boolean }>;
  /** The chunks where those definitions start. */
  definitionChunks: Set<number>;
  /** Chunks only hints reached (a hinted file's first chunk, a hinted definition's chunk). */
  hinted: Array<Omit<ChunkHit, 'score'>>;
  /** Dense hits: chunks by their vectors, files by their coarse vector. */
  denseChunks: ChunkHit[];
  denseFiles: Array<FileHit & { refined: boolean }>;
}

/** Asks the store everything one search needs, in as few round trips as the lists allow (most run together). */
export async function gather(
  store: Store,
  config: QuarryConfig,
  q: AnalyzedQuery,
  options: { topK: number; topFiles: number; filter?: SearchFilter; vector?: Float32Array },
): Promise<Gathered> {
  const { topK, topFiles, filter, vector } = options;
  const weights = config.search.weights;
  const limit = Math.max(MIN_CANDIDATES, topK * CANDIDATES_PER_RESULT);
  const lexical = store.lexical;
  const vectors = store.vectors;

  // dense lists start first: on a large index they run on another core (or server) while the lexical queries run
  const denseLists =
    vector && vectors
      ? Promise.all([
          cutByPlace((n) => vectors.searchChunks(vector, n, filter), Math.max(DENSE_CANDIDATES, topK * 10)),
          cutByPlace(
            (n) => vectors.searchFiles(vector, n, filter),
            Math.max(DENSE_FILE_CANDIDATES, topFiles * 3),
          ),
        ])
      : undefined;
  const [chunkTerms, fileTerms] = lexical
    ? await Promise.all([
        informativeTerms(store, q.terms, 'chunks'),
        informativeTerms(store, q.terms, 'files'),
      ])
    : [[], []];
  // the whole-file list is asked first: a store may answer it elsewhere (SQLite's reader worker) meanwhile
  const fileList =
    lexical && fileTerms.length
      ? cutByPlace(
          (n) => lexical.searchFiles({ terms: fileTerms, limit: n, weights, ...(filter ? { filter } : {}) }),
          Math.max(FILE_CANDIDATES, topFiles * 5),
        )
      : [];
  const [lexHits, fileHits, hinted, sHints, exact, defs] = await Promise.all([
    lexical && chunkTerms.length
      ? cutByPlace(
          (n) =>
            lexical.searchChunks({ terms: chunkTerms, limit: n, weights, ...(filter ? { filter } : {}) }),
          limit,
        )
      : [],
    fileList,
    fileHints(store, q, filter),
    symbolHints(store, q, filter),
    config.search.exactWeight > 0 ? exactHits(store, config, q, filter) : { strength: new Map(), chunks: [] },
    definitionsOf(store, q, filter),
  ]);

  // hinted files, and files strong as a whole, that the chunk search did not reach: take their best chunks
  const seenFiles = new Set(lexHits.map((h) => h.path));
  const missing = [
    ...new Set([
      ...[...hinted.all.keys()].filter((p) => !seenFiles.has(p)).slice(0, 50),
      ...fileHits
        .slice(0, topFiles * 3)
        .map((h) => h.path)
        .filter((p) => !seenFiles.has(p)),
    ]),
  ];
  let extra: ChunkHit[] = [];
  const hintedChunks: Array<Omit<ChunkHit, 'score'>> = [];
  if (missing.length) {
    extra =
      lexical && chunkTerms.length
        ? await cutByPlace(
            (n) =>
              lexical.searchChunks({
                terms: chunkTerms,
                limit: n,
                weights,
                filter: { ...filter, paths: missing },
              }),
            missing.length * 3,
          )
        : [];
    const covered = new Set(extra.map((h) => h.path));
    const uncovered = missing.filter((p) => !covered.has(p) && hinted.all.has(p));
    if (uncovered.length) {
      const chunksOf = await store.getFilesChunks(uncovered);
      for (const p of uncovered) {
        const first = chunksOf.get(p)?.[0];
        if (first) hintedChunks.push(first);
      }
    }
  }
  const known = new Set([...lexHits, ...extra, ...hintedChunks].map((h) => h.chunkId));
  for (const c of exact.chunks)
    if (!known.has(c.chunkId)) {
      hintedChunks.push(c);
      known.add(c.chunkId);
    }
  const unseen = [...new Set([...sHints.keys(), ...defs.chunks])].filter((id) => !known.has(id));
  hintedChunks.push(...(await store.getChunks(unseen)));
  const [denseChunks, denseFiles] = denseLists ? await denseLists : [[], []];
  return {
    lexical: lexHits,
    extraLexical: extra,
    fileLexical: fileHits,
    fileHints: hinted.all,
    namedFiles: hinted.named,
    symbolHints: sHints,
    exactHits: exact.strength,
    definitions: defs.files,
    definitionChunks: new Set(defs.chunks),
    hinted: hintedChunks,
    denseChunks,
    denseFiles,
  };
}

/**
 * Hint strength per file from the names the query mentions, damped when a name matches many files; and the files the
 * query names outright (`jsonrep.py`, `src/server/index.ts`, matching at most two files).
 */
async function fileHints(
  store: Store,
  q: AnalyzedQuery,
  filter?: SearchFilter,
): Promise<{ all: Map<string, number>; named: Map<string, number> }> {
  const out = new Map<string, number>();
  const named = new Map<string, number>();
  const { query, strength } = q.fileNames;
  if (!query.basenames.length && !query.stems.length && !query.fragments.length) return { all: out, named };
  const hits = await store.findFilesByName(query);
  const perName = new Map<string, number>();
  for (const h of hits) perName.set(`${h.match}:${h.name}`, (perName.get(`${h.match}:${h.name}`) ?? 0) + 1);
  // a hint never reaches past the filter: a scoped search returns only files in its scope
  const scoped = new Set(await inScope(store, [...new Set(hits.map((h) => h.path))], filter));
  for (const h of hits) {
    if (!scoped.has(h.path)) continue;
    const n = perName.get(`${h.match}:${h.name}`) ?? 1;
    const s = (strength.get(h.name) ?? 0.3) / (1 + Math.log2(n));
    out.set(h.path, Math.max(out.get(h.path) ?? 0, s));
    // a file name with its extension, or a path, written in the query: the user named this file
    if (h.match !== 'stem' && s >= NAMED_MIN) named.set(h.path, Math.max(named.get(h.path) ?? 0, s));
  }
  return { all: out, named };
}

/** Hint strength per chunk from identifiers in the query that a file defines, damped by how common they are. */
async function symbolHints(
  store: Store,
  q: AnalyzedQuery,
  filter?: SearchFilter,
): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const names = [...q.identifiers.keys()];
  if (!names.length) return out;
  const counts = await store.countSymbolFiles(names);
  // a name defined in very many files says little about which one is meant
  const useful = names.filter((n) => (counts.get(n) ?? 0) > 0 && (counts.get(n) ?? 0) <= 50);
  if (!useful.length) return out;
  const syms = await store.findSymbols(useful, { limit: 500, ...(filter ? { filter } : {}) });
  for (const s of syms) {
    // a module-level variable (`project = …` in a Sphinx conf.py) is no definition the question points at
    if (s.chunkId == null || s.kind === 'variable') continue;
    const lower = s.name.toLowerCase();
    const strength = (q.identifiers.get(lower) ?? 0) / (1 + Math.log2(counts.get(lower) ?? 1));
    out.set(s.chunkId, Math.max(out.get(s.chunkId) ?? 0, strength));
  }
  return out;
}

const TYPE_KINDS = new Set(['class', 'interface', 'struct', 'enum', 'trait', 'type', 'object']);
/** Definitions of a symbol query's name read at most (a name defined in more files points nowhere in particular). */
const DEFINITIONS_MAX = 100;

/**
 * The files that define the name a symbol query spells (`createServer`, `Session.flush`, `View`), looked up in the
 * symbol table however many files use the name, with each definition's chunk: a bare common name's definition is
 * what the question asks for even when its uses fill every list.
 */
async function definitionsOf(
  store: Store,
  q: AnalyzedQuery,
  filter?: SearchFilter,
): Promise<{ files: Map<string, { type: boolean }>; chunks: number[] }> {
  const files = new Map<string, { type: boolean }>();
  const chunks: number[] = [];
  if (!queryShape(q, false).symbol) return { files, chunks };
  const names = new Set(symbolNames(q));
  const defs = await store.findSymbols([...names], { limit: DEFINITIONS_MAX, ...(filter ? { filter } : {}) });
  for (const d of defs) {
    if (d.kind === 'variable' || !names.has(d.name.toLowerCase())) continue;
    files.set(d.path, { type: (files.get(d.path)?.type ?? false) || TYPE_KINDS.has(d.kind) });
    if (d.chunkId != null) chunks.push(d.chunkId);
  }
  return { files, chunks };
}
