import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { QuarryError } from '../errors.ts';
import { modelsCacheDir } from './models.ts';

/**
 * Code and retrieval models for machines that can download weights (`embed.model = "<preset>"`): what each needs to
 * embed as it was trained (pooling, prefixes, length) and where its files come from. The default stays
 * all-MiniLM-L6-v2, whose weights a registry package ships; none of these can be fetched or measured on a machine
 * that reaches only package registries.
 */
export interface EmbedPreset {
  name: string;
  /** The model it runs. */
  model: string;
  /** `onnx`: run here on onnxruntime; `ollama`: an Ollama server runs it. */
  runtime: 'onnx' | 'ollama';
  /** How the token vectors become one: the mean over the attention mask, or the first ([CLS]) token's. */
  pooling: 'mean' | 'cls';
  queryPrefix: string;
  documentPrefix: string;
  /** Word pieces read per text (longer text is cut). */
  maxTokens: number;
  dimension: number;
  /**
   * Where the ONNX files come from: a Hugging Face repository and revision, and the weights' path in it. Absent when
   * the model's own repository ships no ONNX export (then `embed.model_dir` must hold one).
   */
  download?: { repo: string; revision: string; weights: string };
  /** The weights' sha256 when quarry ships it; otherwise the hub's own LFS hash is checked and pinned on first use. */
  sha256?: string;
  /** Embedding cost per chunk relative to all-MiniLM-L6-v2 on a CPU (layers × hidden², from the architectures). */
  relativeCost: number;
  /** One line on what it is and how to get it. */
  note: string;
}

/** The query instruction nomic-embed-code and CodeRankEmbed were trained with (documents go bare). */
export const CODE_QUERY = 'Represent this query for searching relevant code: ';

export const PRESETS: Record<string, EmbedPreset> = {
  'jina-code-v2': {
    name: 'jina-code-v2',
    model: 'jinaai/jina-embeddings-v2-base-code',
    runtime: 'onnx',
    pooling: 'mean',
    queryPrefix: '',
    documentPrefix: '',
    // trained to 8,192; quarry's chunks are at most 2,000 characters, so more would only cost memory
    maxTokens: 1024,
    dimension: 768,
    download: { repo: 'jinaai/jina-embeddings-v2-base-code', revision: 'main', weights: 'onnx/model.onnx' },
    relativeCost: 8,
    note: '161M parameters, 30 programming languages; ONNX export in its repository',
  },
  coderankembed: {
    name: 'coderankembed',
    model: 'nomic-ai/CodeRankEmbed',
    runtime: 'onnx',
    pooling: 'cls',
    queryPrefix: CODE_QUERY,
    documentPrefix: '',
    maxTokens: 1024,
    dimension: 768,
    relativeCost: 8,
    note:
      '137M parameters, the best published retrieval-only localizer on SWE-bench Lite; its repository has no ONNX: ' +
      'export one (`optimum-cli export onnx --model nomic-ai/CodeRankEmbed --trust-remote-code DIR`) and set embed.model_dir = DIR',
  },
  'bge-small-en': {
    name: 'bge-small-en',
    model: 'BAAI/bge-small-en-v1.5',
    runtime: 'onnx',
    pooling: 'cls',
    queryPrefix: 'Represent this sentence for searching relevant passages: ',
    documentPrefix: '',
    maxTokens: 512,
    dimension: 384,
    download: { repo: 'BAAI/bge-small-en-v1.5', revision: 'main', weights: 'onnx/model.onnx' },
    relativeCost: 2,
    note: '33M parameters, a general retrieval model twice MiniLM-L6 deep; ONNX export in its repository',
  },
  'ollama:nomic-embed-code': {
    name: 'ollama:nomic-embed-code',
    model: 'nomic-embed-code',
    runtime: 'ollama',
    pooling: 'mean',
    queryPrefix: CODE_QUERY,
    documentPrefix: '',
    maxTokens: 2048,
    dimension: 3584,
    relativeCost: 300,
    note: '7B parameters, served by Ollama (`ollama pull nomic-embed-code`); a GPU is all but required',
  },
};

/** The preset `embed.model` names, if it names one. */
export function presetFor(model: string | undefined): EmbedPreset | undefined {
  return model ? PRESETS[model] : undefined;
}

/** `~/.cache/quarry/models/<preset>` (or under `$XDG_CACHE_HOME`). */
export function presetDir(preset: EmbedPreset, env: NodeJS.ProcessEnv = process.env): string {
  return join(modelsCacheDir(env), preset.name.replace(/[^\w.-]+/g, '_'));
}

/** The files a preset's folder holds. */
export const PRESET_FILES = ['model.onnx', 'tokenizer.json', 'tokenizer_config.json'] as const;

/** Where each hashes are pinned: written once, when the weights first arrive; checked on every later load. */
const PIN_FILE = 'quarry-pin.json';

export interface PresetPin {
  sha256: string;
  source: string;
}

export function readPin(dir: string): PresetPin | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, PIN_FILE), 'utf8')) as PresetPin;
  } catch {
    return undefined;
  }
}

/** The sha256 a preset's weights in `dir` must have: pinned there at download, else shipped with quarry. */
export function pinnedSha256(preset: EmbedPreset, dir: string): string | undefined {
  return readPin(dir)?.sha256 ?? preset.sha256;
}

/**
 * Downloads a preset's ONNX weights and tokenizer into its cache folder. The weights are checked against the
 * preset's pinned sha256 when quarry ships one, else against the hash the hub publishes for the file (its LFS
 * `x-linked-etag`), and the hash is pinned in the folder: a later load of different bytes is refused.
 */
export async function downloadPreset(
  preset: EmbedPreset,
  options: {
    env?: NodeJS.ProcessEnv;
    /** Hub root (tests point it at a server on 127.0.0.1). Default https://huggingface.co. */
    hub?: string;
    onProgress?: (file: string, bytes: number, total: number) => void;
  } = {},
): Promise<string> {
  const d = preset.download;
  if (!d) throw new QuarryError('BAD_CONFIG', `${preset.name} has no ONNX download: ${preset.note}`);
  const dir = presetDir(preset, options.env);
  mkdirSync(dir, { recursive: true });
  const hub = (options.hub ?? options.env?.QUARRY_HUB_URL ?? 'https://huggingface.co').replace(/\/+$/, '');
  const url = (file: string) => `${hub}/${d.repo}/resolve/${d.revision}/${file}`;
  /** Streams a file to `dest` while hashing it; `check` sees its hash before it lands (a throw leaves nothing). */
  const fetchTo = async (
    file: string,
    dest: string,
    check?: (sha256: string, published: string | undefined) => void,
  ): Promise<string> => {
    const res = await fetch(url(file), { signal: AbortSignal.timeout(600_000) });
    if (!res.ok || !res.body) throw new Error(`${file}: HTTP ${res.status}`);
    const total = Number(res.headers.get('content-length') ?? 0);
    const etag = (res.headers.get('x-linked-etag') ?? '').replace(/^W\//, '').replace(/"/g, '');
    const hash = createHash('sha256');
    const body = res.body as unknown as AsyncIterable<Uint8Array>;
    async function* hashed() {
      let bytes = 0;
      for await (const part of body) {
        hash.update(part);
        bytes += part.length;
        options.onProgress?.(file, bytes, total);
        yield part;
      }
    }
    const tmp = `${dest}.${process.pid}.download`;
    try {
      await writeFile(tmp, hashed());
      const sha256 = hash.digest('hex');
      check?.(sha256, /^[0-9a-f]{64}$/.test(etag) ? etag : undefined);
      renameSync(tmp, dest);
      return sha256;
    } finally {
      if (existsSync(tmp)) unlinkSync(tmp);
    }
  };
  try {
    await fetchTo('tokenizer.json', join(dir, 'tokenizer.json'));
    await fetchTo('tokenizer_config.json', join(dir, 'tokenizer_config.json'));
    const sha256 = await fetchTo(d.weights, join(dir, 'model.onnx'), (got, published) => {
      const expected = preset.sha256 ?? published;
      if (!expected)
        throw new Error(
          `the hub published no sha256 for ${d.weights}, so the download cannot be checked; download it yourself and set embed.model_dir`,
        );
      if (got !== expected)
        throw new Error(`${d.weights} has sha256 ${got.slice(0, 12)}…, not ${expected.slice(0, 12)}…`);
    });
    writeFileSync(join(dir, PIN_FILE), JSON.stringify({ sha256, source: url(d.weights) }));
    return dir;
  } catch (err) {
    throw new QuarryError(
      'IO',
      `could not download ${preset.name} (${(err as Error).message}): put its model.onnx, tokenizer.json and tokenizer_config.json in a folder and set embed.model_dir`,
      { cause: err },
    );
  }
}
