import { basename } from 'node:path';
import type { QuarryConfig } from '../config/config.ts';
import { isQuarryError, QuarryError } from '../errors.ts';
import { createLocalEmbedder, cudaProvider } from './local.ts';
import { downloadWeights, findWeights, MODEL_NAME, weightsFileIn } from './models.ts';
import { downloadPreset, type EmbedPreset, PRESETS, pinnedSha256, presetDir, presetFor } from './presets.ts';
import { createRemoteEmbedder } from './remote.ts';
import type { Embedder } from './types.ts';
import { createWorkerEmbedder } from './worker-pool.ts';

const DEFAULT_MODELS = {
  ollama: 'nomic-embed-text',
  openai: 'text-embedding-3-small',
  gemini: 'text-embedding-004',
};
const DEFAULT_KEY_ENV = { ollama: 'OLLAMA_API_KEY', openai: 'OPENAI_API_KEY', gemini: 'GEMINI_API_KEY' };

/** A model of the user's own in ONNX (`embed.provider = "onnx"`, `embed.model_dir` with model.onnx and tokenizer.json). */
async function openCustomOnnx(config: QuarryConfig, options: OpenEmbedderOptions): Promise<Embedder> {
  const dir = config.embed.modelDir;
  const weights = dir ? weightsFileIn(dir) : undefined;
  if (!dir || !weights)
    throw new QuarryError(
      'BAD_CONFIG',
      'embed.provider = "onnx" needs embed.model_dir: a folder with model.onnx and tokenizer.json',
    );
  const threads = options.threads ?? (config.embed.threads || undefined);
  const custom = {
    dir,
    name: config.embed.model ?? basename(dir),
    ...(config.embed.queryPrefix !== undefined ? { queryPrefix: config.embed.queryPrefix } : {}),
    ...(config.embed.documentPrefix !== undefined ? { documentPrefix: config.embed.documentPrefix } : {}),
  };
  return createLocalEmbedder({ weights, custom, ...(threads ? { threads } : {}) });
}

/**
 * A preset (`embed.model = "jina-code-v2"`, …): its files from `embed.model_dir`, else from its cache folder, downloaded
 * there the first time when downloads are allowed; run with the preset's pooling, prefixes, length and dimension.
 */
async function openPreset(
  preset: EmbedPreset,
  config: QuarryConfig,
  options: OpenEmbedderOptions,
  env: NodeJS.ProcessEnv,
): Promise<Embedder> {
  if (preset.runtime === 'ollama')
    return createRemoteEmbedder({
      provider: 'ollama',
      model: preset.model,
      maxTokens: preset.maxTokens,
      ...(config.embed.baseUrl ? { baseUrl: config.embed.baseUrl } : {}),
      queryPrefix: config.embed.queryPrefix ?? preset.queryPrefix,
      documentPrefix: config.embed.documentPrefix ?? preset.documentPrefix,
    });
  let dir = config.embed.modelDir ?? presetDir(preset, env);
  let weights = weightsFileIn(dir);
  if (!weights && !config.embed.modelDir) {
    if (!config.embed.download || !preset.download)
      throw new QuarryError(
        'BAD_CONFIG',
        `${preset.name} is not installed: ${preset.download ? `allow the download (unset QUARRY_OFFLINE), or put its ONNX export in ${dir}` : preset.note}`,
      );
    options.onNotice?.(`downloading ${preset.model} (once per machine)`);
    dir = await downloadPreset(preset, { env });
    weights = weightsFileIn(dir);
  }
  if (!weights)
    throw new QuarryError(
      'BAD_CONFIG',
      `no model.onnx in ${dir}: put ${preset.model}'s ONNX export (model.onnx, tokenizer.json) there`,
    );
  const threads = options.threads ?? (config.embed.threads || undefined);
  const sha256 = pinnedSha256(preset, dir);
  return createLocalEmbedder({
    weights,
    device: config.embed.device ?? 'auto',
    ...(threads ? { threads } : {}),
    ...(options.onNotice ? { onNotice: options.onNotice } : {}),
    custom: {
      dir,
      name: preset.name,
      maxTokens: preset.maxTokens,
      queryPrefix: config.embed.queryPrefix ?? preset.queryPrefix,
      documentPrefix: config.embed.documentPrefix ?? preset.documentPrefix,
      pooling: preset.pooling,
      dimension: preset.dimension,
      ...(sha256 ? { sha256 } : {}),
    },
  });
}

/** A remote embedder; an unreachable or misconfigured service is an error (the user asked for it by name). */
function openRemote(config: QuarryConfig, env: NodeJS.ProcessEnv): Promise<Embedder> {
  const provider = config.embed.provider as 'ollama' | 'openai' | 'gemini';
  const apiKey = env[config.embed.apiKeyEnv ?? DEFAULT_KEY_ENV[provider]];
  if (!apiKey && provider !== 'ollama' && !config.embed.baseUrl)
    throw new QuarryError(
      'BAD_CONFIG',
      `embed.provider is ${provider} but ${config.embed.apiKeyEnv ?? DEFAULT_KEY_ENV[provider]} is not set: export it, or set embed.provider = "local"`,
    );
  return createRemoteEmbedder({
    provider,
    model: config.embed.model ?? DEFAULT_MODELS[provider],
    ...(config.embed.baseUrl ? { baseUrl: config.embed.baseUrl } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(config.embed.queryPrefix !== undefined ? { queryPrefix: config.embed.queryPrefix } : {}),
    ...(config.embed.documentPrefix !== undefined ? { documentPrefix: config.embed.documentPrefix } : {}),
  });
}

export type { Embedder, EmbedKind } from './types.ts';

export interface OpenEmbedderOptions {
  env?: NodeJS.ProcessEnv;
  /** Told, once, why there are no vectors and how to get them. */
  onNotice?: (message: string) => void;
  /** Progress of distilling the static table (embed.provider = "static"), the first time on a machine. */
  onDistill?: (done: number, total: number) => void;
  /** onnxruntime threads (local provider). */
  threads?: number;
  /** Run the model on background worker threads at lowered priority (for indexing). */
  background?: boolean;
}

/**
 * The embedder the config asks for, or undefined when there is none to be had: quarry then works lexically and
 * says so once.
 */
export async function openEmbedder(
  config: QuarryConfig,
  options: OpenEmbedderOptions = {},
): Promise<Embedder | undefined> {
  if (config.embed.provider === 'none') return undefined;
  const env = options.env ?? process.env;
  const preset = presetFor(config.embed.model);
  if (preset && (config.embed.provider === 'local' || config.embed.provider === 'onnx'))
    return openPreset(preset, config, options, env);
  if (config.embed.provider === 'local' && config.embed.model && config.embed.model !== MODEL_NAME)
    throw new QuarryError(
      'BAD_CONFIG',
      `embed.model = "${config.embed.model}" is no model quarry knows: use one of ${[MODEL_NAME, ...Object.keys(PRESETS)].join(', ')}, or embed.provider = "onnx" with embed.model_dir for your own export`,
    );
  if (config.embed.provider === 'onnx') return openCustomOnnx(config, options);
  if (config.embed.provider !== 'local' && config.embed.provider !== 'static') return openRemote(config, env);
  let weights = findWeights({ modelDir: config.embed.modelDir, env });
  try {
    if (!weights && config.embed.download) weights = (await downloadWeights(env)).path;
    if (!weights) {
      options.onNotice?.(
        'semantic search is off: no embedding weights are installed. Add them with `quarry model install <model.onnx>` ' +
          '(all-MiniLM-L6-v2 ONNX), or allow the download (unset QUARRY_OFFLINE)',
      );
      return undefined;
    }
    const threads = options.threads ?? (config.embed.threads || undefined);
    if (config.embed.provider === 'static') {
      // the table distilled from these weights (once per machine, kept in the model cache)
      const { verifiedWeights } = await import('./local.ts');
      const { openStaticEmbedder } = await import('./static.ts');
      const info = await verifiedWeights(weights);
      let told = false;
      return await openStaticEmbedder(weights, info.sha256, {
        env,
        ...(threads ? { threads } : {}),
        ...(config.embed.staticTable ? { table: config.embed.staticTable } : {}),
        onProgress: (done, total) => {
          if (!told)
            options.onNotice?.(`distilling the static embedding table from ${MODEL_NAME} (once per machine)`);
          told = true;
          options.onDistill?.(done, total);
        },
      });
    }
    const device = config.embed.device ?? 'auto';
    const local = await createLocalEmbedder({
      weights,
      device,
      ...(threads ? { threads } : {}),
      ...(options.onNotice ? { onNotice: options.onNotice } : {}),
    });
    // one GPU session does the work of every worker: no background workers then
    if (!options.background || (device !== 'cpu' && cudaProvider().ok)) return local;
    return createWorkerEmbedder({
      local,
      weights,
      ...(config.embed.workers ? { workers: config.embed.workers } : {}),
      ...(threads ? { threads } : {}),
    });
  } catch (err) {
    if (!isQuarryError(err)) throw err;
    options.onNotice?.(`semantic search is off: ${err.message}`);
    return undefined;
  }
}
