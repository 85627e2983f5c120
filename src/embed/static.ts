import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { endianness } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { QuarryError } from '../errors.ts';
import { createLocalEmbedder } from './local.ts';
import { bundledModelDir, cacheModelDir, MODEL_NAME } from './models.ts';
import { type Embedder, type EmbedKind, l2normalize } from './types.ts';

/**
 * The static tier: a table of one vector per vocabulary token, distilled from the transformer quarry already has
 * (the model2vec method), so that a text's vector is a weighted mean of its tokens' rows: no transformer at index
 * or query time, thousands of chunks a second.
 *
 * Distilling: every token of the WordPiece vocabulary goes through all-MiniLM-L6-v2 once, alone between [CLS] and
 * [SEP] (mean pooling, as the model embeds sentences); the 384-dimensional outputs are reduced to `dims` by PCA
 * (ml-pca), and each row is weighted by the token's rarity (SIF over a Zipf estimate of frequency from the
 * vocabulary's order, which for this vocabulary is by frequency: "the" comes first among words). The table is kept
 * in the model cache beside the weights, named by their sha256, so that it is made once per machine.
 */
export const STATIC_DIMS = 256;
const SIF = 1e-4;
/** Tokens per model run while distilling: the inputs are three tokens long, so large batches cost little. */
const DISTILL_BATCH = 512;

export interface StaticTable {
  /** Rows of `dims` floats, one per vocabulary id (zero rows for ids that never contribute). */
  vectors: Float32Array;
  dims: number;
  vocabSize: number;
  /** The transformer weights it was distilled from. */
  sourceSha256: string;
  /**
   * The table's own vocabulary, piece by id (a table trained with a vocabulary learned from code:
   * train/train_static_v2.py). Absent: the rows are all-MiniLM-L6-v2's WordPiece ids.
   */
  vocab?: string[];
}

/** Where the table for these weights lives: the model cache, named by the weights' hash. */
export function staticTablePath(sourceSha256: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(
    cacheModelDir(env),
    'static',
    `${MODEL_NAME}-static${STATIC_DIMS}-${sourceSha256.slice(0, 16)}.bin`,
  );
}

/** The model's WordPiece vocabulary (token → id), from its tokenizer file. */
function loadVocab(): Map<string, number> {
  const json = JSON.parse(readFileSync(join(bundledModelDir(), 'tokenizer.json'), 'utf8')) as {
    model: { vocab: Record<string, number> };
  };
  return new Map(Object.entries(json.model.vocab));
}

/** Token ids that carry meaning: not padding, [UNK], [CLS], [SEP], [MASK] or the [unused…] slots. */
function contentIds(vocab: Map<string, number>): number[] {
  const ids: number[] = [];
  for (const [token, id] of vocab) if (!/^\[.*\]$/.test(token)) ids.push(id);
  return ids.sort((a, b) => a - b);
}

/**
 * Distils the table from the transformer weights at `weights` (a one-time step: tens of seconds on two cores).
 * `onProgress(done, total)` follows the model runs.
 */
export async function distillStaticTable(
  weights: string,
  options: {
    onProgress?: (done: number, total: number) => void;
    threads?: number;
    /** Distil only the first this many content tokens (tests); the others keep zero rows. */
    limit?: number;
  } = {},
): Promise<StaticTable> {
  const vocab = loadVocab();
  const ids = contentIds(vocab).slice(0, options.limit);
  const model = await createLocalEmbedder({
    weights,
    batchSize: DISTILL_BATCH,
    ...(options.threads ? { threads: options.threads } : {}),
  });
  const sourceSha256 = model.weightsSha256;
  const full = new Array<Float32Array>(ids.length);
  try {
    for (let s = 0; s < ids.length; s += DISTILL_BATCH) {
      const slice = ids.slice(s, s + DISTILL_BATCH);
      const vecs = await model.embedIds(slice.map((id) => [CLS, id, SEP]));
      vecs.forEach((v, k) => {
        full[s + k] = v;
      });
      options.onProgress?.(Math.min(ids.length, s + DISTILL_BATCH), ids.length);
    }
  } finally {
    await model.close();
  }
  const { PCA } = await import('ml-pca');
  const data = full.map((v) => Array.from(v));
  const pca = new PCA(data, { method: 'covarianceMatrix', center: true, scale: false });
  const reduced = pca.predict(data, { nComponents: STATIC_DIMS }).to2DArray();
  const vocabSize = Math.max(...vocab.values()) + 1;
  const vectors = new Float32Array(vocabSize * STATIC_DIMS);
  // SIF: weight = a / (a + p(token)), p from Zipf over the content tokens in vocabulary order
  let harmonic = 0;
  for (let r = 1; r <= ids.length; r++) harmonic += 1 / r;
  ids.forEach((id, rank) => {
    const p = 1 / (rank + 1) / harmonic;
    const w = SIF / (SIF + p);
    const row = reduced[rank]!;
    for (let d = 0; d < STATIC_DIMS; d++) vectors[id * STATIC_DIMS + d] = row[d]! * w;
  });
  return { vectors, dims: STATIC_DIMS, vocabSize, sourceSha256 };
}

const CLS = 101;
const SEP = 102;

const MAGIC = 'QSTATIC1';

export function writeStaticTable(path: string, table: StaticTable): void {
  mkdirSync(join(path, '..'), { recursive: true });
  const header = Buffer.from(
    `${MAGIC}${JSON.stringify({ dims: table.dims, vocabSize: table.vocabSize, source: table.sourceSha256, ...(table.vocab ? { vocab: table.vocab } : {}) })}\n`,
  );
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(
    tmp,
    Buffer.concat([
      header,
      Buffer.from(table.vectors.buffer, table.vectors.byteOffset, table.vectors.byteLength),
    ]),
  );
  renameSync(tmp, path);
}

export function readStaticTable(path: string): StaticTable {
  const buf = readFileSync(path);
  const nl = buf.indexOf(10);
  const head = buf.subarray(0, nl).toString('utf8');
  if (!head.startsWith(MAGIC)) throw new QuarryError('IO', `${path} is not a quarry static table: delete it`);
  const meta = JSON.parse(head.slice(MAGIC.length)) as {
    dims: number;
    vocabSize: number;
    source: string;
    /** float32 (what quarry writes; the default) or float16 (a trained table, train/train_static.py). */
    dtype?: 'float32' | 'float16';
    /** The table's own vocabulary, one piece per row. */
    vocab?: unknown;
  };
  const vocab = meta.vocab;
  if (
    vocab !== undefined &&
    (!Array.isArray(vocab) ||
      vocab.length !== meta.vocabSize ||
      !vocab.every((t) => typeof t === 'string') ||
      !vocab.includes('[UNK]'))
  )
    throw new QuarryError('IO', `${path} has a vocabulary that does not fit its rows: rebuild the table`);
  const half = meta.dtype === 'float16';
  const body = buf.subarray(nl + 1);
  if (body.byteLength !== meta.dims * meta.vocabSize * (half ? 2 : 4))
    throw new QuarryError('IO', `${path} is cut short: delete it, and the next use distils it again`);
  const vectors = new Float32Array(meta.dims * meta.vocabSize);
  if (!half) new Uint8Array(vectors.buffer).set(body);
  else {
    // one look-up per value (a 65,536-entry table of every half's float): converting each value with arithmetic
    // took 1.3 s of a one-shot search's start for a 68k-row table, the look-up ~40 ms
    const halves = new Uint16Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
    if (endianness() === 'BE') for (let i = 0; i < halves.length; i++) halves[i] = body.readUInt16LE(2 * i);
    const lut = halfTable();
    for (let i = 0; i < vectors.length; i++) vectors[i] = lut[halves[i]!]!;
  }
  return {
    vectors,
    dims: meta.dims,
    vocabSize: meta.vocabSize,
    sourceSha256: meta.source,
    ...(vocab ? { vocab: vocab as string[] } : {}),
  };
}

let halfLut: Float32Array | undefined;

/** Every IEEE 754 half-precision value as a float, by its bits. */
function halfTable(): Float32Array {
  if (!halfLut) {
    halfLut = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfLut[h] = halfToFloat(h);
  }
  return halfLut;
}

/** An IEEE 754 half-precision value as a number (Node 20 has no Float16Array). */
function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/**
 * Code words as the vocabulary knows them: `parseConfig`, `parse_config` and `HTTPServer` become "parse config"
 * and "http server" (the tokenizer lower-cases), so that an identifier's parts find their own rows.
 */
export function splitCodeWords(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/[_$]+/g, ' ');
}

/**
 * The vocabulary's word pieces for each word of a text: what BERT's tokenizer gives for its words, without the
 * punctuation (whose rows weigh next to nothing after SIF), and memoised per word. The tokenizer library re-splits
 * every occurrence and cost a microsecond a character, nine tenths of the tier's time; code repeats its words.
 * test/static.test.ts checks the ids against the library's.
 */
export function wordPieces(vocab: Map<string, number>): (text: string) => number[] {
  const unk = vocab.get('[UNK]') ?? 100;
  const cache = new Map<string, number[]>();
  const piece = (word: string): number[] => {
    const known = cache.get(word);
    if (known) return known;
    const ids: number[] = [];
    if (word.length > 100) ids.push(unk);
    else
      for (let start = 0; start < word.length; ) {
        let end = word.length;
        let id: number | undefined;
        for (; end > start; end--) {
          id = vocab.get(start > 0 ? `##${word.slice(start, end)}` : word.slice(start, end));
          if (id !== undefined) break;
        }
        if (id === undefined) {
          // greedy longest match failed: the whole word is unknown, as in BERT
          ids.length = 0;
          ids.push(unk);
          break;
        }
        ids.push(id);
        start = end;
      }
    if (cache.size < 200_000) cache.set(word, ids);
    return ids;
  };
  return (text: string) => {
    const out: number[] = [];
    const lower = splitCodeWords(text).toLowerCase();
    // most code is ASCII: no accents to strip, no Han to space out, and a plain class finds its words (4× faster)
    const words = /[^\x00-\x7f]/.test(lower)
      ? lower
          .normalize('NFD')
          .replace(/\p{Mn}/gu, '')
          .replace(/(\p{Script=Han})/gu, ' $1 ')
          .match(/[\p{L}\p{N}]+/gu)
      : lower.match(/[a-z0-9]+/g);
    // ([UNK] has no row of its own: a word the vocabulary cannot spell adds nothing)
    if (words) for (const w of words) for (const id of piece(w)) if (id !== unk) out.push(id);
    return out;
  };
}

/** An embedder over a static table: a text's vector is the mean of its tokens' rows, L2-normalised. */
export function createStaticEmbedder(table: StaticTable, name?: string): Embedder {
  // a table trained with its own vocabulary spells words with it; otherwise the rows are MiniLM's WordPiece ids
  const vocab = table.vocab ? new Map(table.vocab.map((t, i) => [t, i])) : loadVocab();
  const { dims, vectors, vocabSize } = table;
  const MAX_CHARS = 64_000;
  const pieces = wordPieces(vocab);
  const encode = (text: string) => pieces(text.slice(0, MAX_CHARS));
  return {
    id: name ?? `static:${MODEL_NAME}-distilled-${dims}/words@${table.sourceSha256.slice(0, 8)}`,
    dimension: dims,
    maxTokens: 16_384,
    cheap: true,
    countTokens: (text) => encode(text).length,
    async embed(texts: string[], _kind: EmbedKind): Promise<Float32Array[]> {
      return texts.map((text) => {
        const v = new Float32Array(dims);
        for (const id of encode(text)) {
          if (id >= vocabSize) continue;
          const base = id * dims;
          for (let d = 0; d < dims; d++) v[d]! += vectors[base + d] as number;
        }
        // a text with no word (empty, or punctuation only) gets one fixed unit vector, as every embedder gives one
        if (v.every((x) => x === 0)) v[0] = 1;
        return l2normalize(v);
      });
    },
    async close() {},
  };
}

/**
 * Tables that ship in the package (`embed.static_table = "code-v1"`), their sha256 pinned. code-v1: the distilled
 * MiniLM table trained contrastively on (commit message or docstring → code) pairs mined from 69 public histories
 * (train/train_static.py; docs/retrieval.md has its figures), float16, 15.6 MB.
 */
export const SHIPPED_TABLES: Record<string, { file: string; sha256: string }> = {
  'code-v1': {
    file: 'code-v1.bin',
    sha256: 'a7dfed5f6014461a25870b40a723aa7437eb2a2f01061ea5b9b79aafaf3bfa04',
  },
};

function shippedTableDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'models', 'static');
}

/**
 * The static embedder for these transformer weights: the table from the cache, or distilled now and kept there
 * (`onDistill` reports the one-time step). `table` (the `embed.static_table` setting) names a table file to use
 * instead, such as one trained for code (train/train_static.py); its id carries the file's hash, so that an index
 * built with another table is re-embedded.
 */
export async function openStaticEmbedder(
  weights: string,
  sourceSha256: string,
  options: {
    env?: NodeJS.ProcessEnv;
    onProgress?: (done: number, total: number) => void;
    threads?: number;
    table?: string;
  } = {},
): Promise<Embedder> {
  if (options.table) {
    const shipped = SHIPPED_TABLES[options.table];
    const file = shipped ? join(shippedTableDir(), shipped.file) : options.table;
    if (!existsSync(file))
      throw new QuarryError(
        'BAD_CONFIG',
        `embed.static_table = "${options.table}": no such file (a path, or ${Object.keys(SHIPPED_TABLES).join(', ')})`,
      );
    const bytes = readFileSync(file);
    const hash = createHash('sha256').update(bytes).digest('hex');
    if (shipped && hash !== shipped.sha256)
      throw new QuarryError('IO', `${file} is damaged (its sha256 is not the shipped one): reinstall quarry`);
    const table = readStaticTable(file);
    return createStaticEmbedder(
      table,
      `static:${basename(file).replace(/\.bin$/, '')}-${table.dims}/words@${hash.slice(0, 8)}`,
    );
  }
  const path = staticTablePath(sourceSha256, options.env);
  let table: StaticTable | undefined;
  if (existsSync(path)) {
    try {
      table = readStaticTable(path);
      if (table.sourceSha256 !== sourceSha256) table = undefined;
    } catch {
      table = undefined;
    }
  }
  if (!table) {
    table = await distillStaticTable(weights, {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.threads ? { threads: options.threads } : {}),
    });
    writeStaticTable(path, table);
  }
  return createStaticEmbedder(table);
}
