import type { QuarryConfig } from '../config/config.ts';
import { isQuarryError } from '../errors.ts';
import { createLocalEmbedder } from './local.ts';
import { downloadWeights, findWeights } from './models.ts';
import type { Embedder } from './types.ts';
import { createWorkerEmbedder } from './worker-pool.ts';

export type { Embedder, EmbedKind } from './types.ts';

export interface OpenEmbedderOptions {
  env?: NodeJS.ProcessEnv;
  /** Told, once, why there are no vectors and how to get them. */
  onNotice?: (message: string) => void;
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
    const local = await createLocalEmbedder({ weights, ...(threads ? { threads } : {}) });
    if (!options.background) return local;
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
