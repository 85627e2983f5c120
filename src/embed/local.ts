import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Tokenizer } from '@huggingface/tokenizers';
import { QuarryError } from '../errors.ts';
import {
  bundledModelDir,
  KNOWN_WEIGHTS,
  MODEL_NAME,
  sha256File,
  verifyWeights,
  type WeightsInfo,
} from './models.ts';
import { type Embedder, type EmbedKind, l2normalize } from './types.ts';

export interface LocalEmbedderOptions {
  /** The ONNX weights file (checked against the pinned hashes). */
  weights: string;
  /** onnxruntime intra-op threads. Default: one per core, at most 4. */
  threads?: number;
  /** Texts per forward pass. Default 8 on the CPU, 64 on a GPU. */
  batchSize?: number;
  /** Where the model runs: `auto` (CUDA when its files are installed, else the CPU), `cpu`, or `cuda`. */
  device?: EmbedDevice;
  /** Told once when the model runs elsewhere than asked (CUDA asked for, the CPU used), and why. */
  onNotice?: (message: string) => void;
  /**
   * A model of the user's own instead of all-MiniLM-L6-v2 (a code model exported to ONNX, say): its folder holds
   * `tokenizer.json` and `tokenizer_config.json`; its weights are the user's choice, so no pinned hash applies.
   */
  custom?: {
    dir: string;
    name: string;
    maxTokens?: number;
    queryPrefix?: string;
    documentPrefix?: string;
    /** Mean over the attention mask (default), or the first token's vector (BERT's [CLS], bge, CodeRankEmbed). */
    pooling?: 'mean' | 'cls';
    /** The dimension the model must produce (a preset's); a model that differs is refused. */
    dimension?: number;
    /** The weights' sha256 they must have (pinned when a preset's weights were downloaded). */
    sha256?: string;
  };
}

const MINILM_MAX_TOKENS = 256; // all-MiniLM-L6-v2 was trained on 256 word pieces
const CHARS_PER_TOKEN_CAP = 8; // text past maxTokens × 8 characters cannot fit; don't tokenise it

export type EmbedDevice = 'auto' | 'cpu' | 'cuda';

/**
 * Whether onnxruntime-node's CUDA execution provider is installed: its provider library present and not the empty
 * placeholder quarry's preinstall leaves so that installs work offline (`ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild
 * onnxruntime-node` installs the real one). Only linux-x64 builds of onnxruntime-node carry CUDA.
 */
export function cudaProvider(): { ok: boolean; reason: string } {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    return {
      ok: false,
      reason: `onnxruntime-node has no CUDA build for ${process.platform}-${process.arch}`,
    };
  try {
    const require = createRequire(import.meta.url);
    const lib = join(
      require.resolve('onnxruntime-node/package.json'),
      '..',
      'bin',
      'napi-v6',
      'linux',
      'x64',
      'libonnxruntime_providers_cuda.so',
    );
    if (!existsSync(lib) || statSync(lib).size === 0)
      return {
        ok: false,
        reason:
          'its files are not installed (ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild -g onnxruntime-node installs them)',
      };
    return { ok: true, reason: '' };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

/** Verifies weights once per file version: a sidecar remembers the hash for this size and mtime. */
export async function verifiedWeights(path: string): Promise<WeightsInfo> {
  const st = statSync(path);
  const sidecar = `${path}.verified.json`;
  try {
    const seen = JSON.parse(readFileSync(sidecar, 'utf8')) as {
      size: number;
      mtimeMs: number;
      sha256: string;
    };
    const known = KNOWN_WEIGHTS[seen.sha256];
    if (known && seen.size === st.size && seen.mtimeMs === st.mtimeMs)
      return { path, sha256: seen.sha256, variant: known.variant, source: known.source };
  } catch {
    // not verified yet
  }
  const info = await verifyWeights(path);
  try {
    writeFileSync(sidecar, JSON.stringify({ size: st.size, mtimeMs: st.mtimeMs, sha256: info.sha256 }));
  } catch {
    // a read-only model folder: verify again next time
  }
  return info;
}

/**
 * all-MiniLM-L6-v2 on onnxruntime-node: WordPiece tokens (the model's own tokenizer.json), mean pooling over the
 * attention mask, L2-normalised, 384 dimensions. Texts are batched by token length so that little goes to padding.
 */
/** The local embedder, plus what distilling the static tier needs: raw token-id batches and the weights' hash. */
export interface LocalEmbedder extends Embedder {
  /** Runs sequences of token ids as they are (no tokenising, no truncation): one pooled vector each. */
  embedIds(batch: number[][]): Promise<Float32Array[]>;
  /** The token ids a text is embedded as (its kind's prefix, cut to the model's length), for embedding elsewhere. */
  encode(text: string, kind: EmbedKind): number[];
  readonly weightsSha256: string;
}

/**
 * onnxruntime's telemetry, off before its first session: on Linux its telemetry SDK left an empty
 * /tmp/mat-debug-<pid>.log behind every process that opened a session (issue 65), and a local tool sends nothing.
 * The runtime reads ORT_DISABLE_TELEMETRY from the process's environment, which only the main thread sets (a worker's
 * `process.env` is its own copy): the worker pool calls this before its workers start.
 */
export function quietOnnxRuntime(): void {
  process.env.ORT_DISABLE_TELEMETRY ??= '1';
}

export async function createLocalEmbedder(options: LocalEmbedderOptions): Promise<LocalEmbedder> {
  const custom = options.custom;
  const info = await checkedWeights(options);
  quietOnnxRuntime();
  const ort = await import('onnxruntime-node');
  const dir = custom?.dir ?? bundledModelDir();
  // loaded here, not with the module: a lexical command that imports this one never pays for it
  const { Tokenizer } = await import('@huggingface/tokenizers');
  const { tokenizer, maxTokens: MAX_TOKENS } = loadTokenizer(Tokenizer, dir, custom);
  const prefix = { query: custom?.queryPrefix ?? '', document: custom?.documentPrefix ?? '' };
  const sepId = tokenizer.encode('').ids.at(-1)!;
  const sessions = lazySession(ort, info.path, options);
  // 8 is as fast as 32 on CPU and needs a third of the memory (activations grow with batch × length²); a GPU wants
  // wide batches
  const batchSize = options.batchSize ?? (sessions.onGpu() ? 64 : 8);

  const encode = (text: string): number[] => {
    const ids = tokenizer.encode(text.slice(0, MAX_TOKENS * CHARS_PER_TOKEN_CAP)).ids;
    if (ids.length <= MAX_TOKENS) return ids;
    const cut = ids.slice(0, MAX_TOKENS);
    cut[MAX_TOKENS - 1] = sepId;
    return cut;
  };

  const pooling = custom?.pooling ?? 'mean';
  const runBatch = (batch: number[][]) => runIds(ort, sessions.session, batch, pooling);

  // all-MiniLM-L6-v2 has 384 dimensions; a custom model says how many by embedding one text
  const dimension = custom ? (await runBatch([encode('dimension probe')]))[0]!.length : 384;
  if (custom?.dimension && dimension !== custom.dimension)
    throw new QuarryError(
      'BAD_CONFIG',
      `${info.path} gives ${dimension}-dimensional vectors, but ${custom.name} has ${custom.dimension}: the folder holds another model`,
    );
  return {
    id: custom
      ? `onnx:${custom.name}@${info.sha256.slice(0, 8)}`
      : `local:${MODEL_NAME}/${info.variant}@${info.sha256.slice(0, 8)}`,
    dimension,
    maxTokens: MAX_TOKENS,
    weightsSha256: info.sha256,
    embedIds: runBatch,
    encode: (text, kind) => encode(prefix[kind] + text),
    countTokens: (text) => encode(text).length,
    async embed(texts: string[], kind: EmbedKind): Promise<Float32Array[]> {
      const p = prefix[kind];
      return embedByLength(
        texts.map((t) => encode(p + t)),
        batchSize,
        runBatch,
      );
    },
    close: () => sessions.close(),
  };
}

/** The weights' hash and variant: the pinned all-MiniLM-L6-v2 verified, or a custom model's checked against its pin. */
async function checkedWeights(options: LocalEmbedderOptions): Promise<WeightsInfo> {
  const custom = options.custom;
  const info: WeightsInfo = custom
    ? {
        path: options.weights,
        sha256: await sha256File(options.weights),
        variant: 'custom',
        source: custom.dir,
      }
    : await verifiedWeights(options.weights);
  if (custom?.sha256 && info.sha256 !== custom.sha256)
    throw new QuarryError(
      'BAD_INPUT',
      `${options.weights} changed since it was downloaded (sha256 ${info.sha256.slice(0, 12)}…, pinned ${custom.sha256.slice(0, 12)}…): delete the folder and let quarry download it again`,
    );
  return info;
}

/** The model's tokenizer from its folder, and the most tokens it takes. */
function loadTokenizer(
  Tokenizer: typeof import('@huggingface/tokenizers').Tokenizer,
  dir: string,
  custom: LocalEmbedderOptions['custom'],
): { tokenizer: Tokenizer; maxTokens: number } {
  let tokenizerConfig: { model_max_length?: number } = {};
  try {
    tokenizerConfig = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
  } catch {
    if (!custom) throw new QuarryError('IO', `the tokenizer files are missing from ${dir}: reinstall quarry`);
  }
  const maxTokens = custom
    ? Math.min(8192, custom.maxTokens ?? tokenizerConfig.model_max_length ?? 512)
    : MINILM_MAX_TOKENS;
  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')), tokenizerConfig);
  } catch (err) {
    throw new QuarryError(
      'BAD_CONFIG',
      `no usable tokenizer.json in ${dir}: export the model with its tokenizer`,
      {
        cause: err,
      },
    );
  }
  return { tokenizer, maxTokens };
}

type Ort = typeof import('onnxruntime-node');
type OrtSession = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

/**
 * The onnxruntime session, on CUDA when asked for (or `auto`) and installed, else the CPU; a CUDA session that fails
 * to start falls back to the CPU once.
 */
function lazySession(
  ort: Ort,
  path: string,
  options: LocalEmbedderOptions,
): { session: () => Promise<OrtSession>; onGpu: () => boolean; close: () => Promise<void> } {
  // the session starts on first use: an embedder that only names the model (or counts tokens) costs no weights
  let sessionReady: Promise<OrtSession> | undefined;
  const device = options.device ?? 'auto';
  const cuda = cudaProvider();
  let onGpu = device !== 'cpu' && cuda.ok;
  if (device === 'cuda' && !cuda.ok)
    options.onNotice?.(`embedding on the CPU: CUDA was asked for, but ${cuda.reason}`);
  const create = (gpu: boolean) =>
    ort.InferenceSession.create(path, {
      intraOpNumThreads: options.threads ?? Math.max(1, Math.min(4, availableParallelism())),
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      ...(gpu ? { executionProviders: ['cuda', 'cpu'] } : {}),
    });
  const session = async () => {
    sessionReady ??= create(onGpu)
      .catch((err: Error) => {
        if (!onGpu) throw err;
        // the CUDA files are there but the driver or the GPU is not: once, then the CPU
        onGpu = false;
        options.onNotice?.(`embedding on the CPU: the CUDA session failed (${err.message.split('\n')[0]})`);
        return create(false);
      })
      .catch((err: Error) => {
        throw new QuarryError('IO', `cannot load ${path}: ${err.message.split('\n')[0]}`, {
          cause: err,
        });
      });
    return sessionReady;
  };
  return {
    session,
    onGpu: () => onGpu,
    async close() {
      if (sessionReady) await (await sessionReady).release();
    },
  };
}

/** One forward pass over sequences of token ids (padded to the longest): one pooled, normalised vector each. */
async function runIds(
  ort: Ort,
  session: () => Promise<OrtSession>,
  batch: number[][],
  pooling: 'mean' | 'cls',
): Promise<Float32Array[]> {
  const s = await session();
  const wantsTypes = s.inputNames.includes('token_type_ids');
  const output = s.outputNames[0]!;
  const b = batch.length;
  const len = Math.max(...batch.map((ids) => ids.length));
  const ids = new BigInt64Array(b * len);
  const mask = new BigInt64Array(b * len);
  batch.forEach((seq, i) => {
    for (let j = 0; j < seq.length; j++) {
      ids[i * len + j] = BigInt(seq[j]!);
      mask[i * len + j] = 1n;
    }
  });
  const feeds: Record<string, InstanceType<typeof ort.Tensor>> = {
    input_ids: new ort.Tensor('int64', ids, [b, len]),
    attention_mask: new ort.Tensor('int64', mask, [b, len]),
  };
  if (wantsTypes) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(b * len), [b, len]);
  const result = await s.run(feeds);
  const hidden = result[output]!;
  return poolHidden(hidden.data as Float32Array, hidden.dims[2] as number, len, batch, pooling);
}

/** Pools the last hidden state: the first token's vector (`cls`) or the mean over each sequence's tokens. */
function poolHidden(
  data: Float32Array,
  dim: number,
  len: number,
  batch: number[][],
  pooling: 'mean' | 'cls',
): Float32Array[] {
  if (pooling === 'cls')
    return batch.map((_, i) =>
      l2normalize(Float32Array.from(data.subarray(i * len * dim, i * len * dim + dim))),
    );
  return batch.map((seq, i) => {
    const v = new Float32Array(dim);
    for (let j = 0; j < seq.length; j++) {
      const base = (i * len + j) * dim;
      for (let d = 0; d < dim; d++) v[d]! += data[base + d] as number;
    }
    for (let d = 0; d < dim; d++) v[d]! /= seq.length;
    return l2normalize(v);
  });
}

/** Embeds encoded texts in batches of similar length; the vectors come back in the texts' order. */
async function embedByLength(
  encodedTexts: number[][],
  batchSize: number,
  runBatch: (batch: number[][]) => Promise<Float32Array[]>,
): Promise<Float32Array[]> {
  const encoded = encodedTexts.map((ids, i) => ({ i, ids }));
  // similar lengths together: padding is wasted work
  encoded.sort((a, b) => a.ids.length - b.ids.length);
  const out = new Array<Float32Array>(encoded.length);
  for (let s = 0; s < encoded.length; s += batchSize) {
    const slice = encoded.slice(s, s + batchSize);
    const vecs = await runBatch(slice.map((e) => e.ids));
    slice.forEach((e, k) => {
      out[e.i] = vecs[k]!;
    });
  }
  return out;
}
