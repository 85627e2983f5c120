import { resolveConfig } from '../config/config.ts';
import { verifiedWeights } from '../embed/local.ts';
import { bundledModelDir, cacheModelDir, findWeights, installWeights } from '../embed/models.ts';

// `quarry model`: the local embedding model's weights, where they are and whether they check out, and installing
// them from a file a person already has.

/** The embedding settings of the project at `root` (or here), and the weights they find, verified. */
export async function modelStatus(root: string | undefined) {
  const config = resolveConfig(root ? { root } : {});
  const path = findWeights({ modelDir: config.embed.modelDir });
  const info = path ? await verifiedWeights(path) : undefined;
  return {
    provider: config.embed.provider,
    model: 'all-MiniLM-L6-v2',
    weights: info ?? null,
    cache: cacheModelDir(),
    tokenizer: bundledModelDir(),
    /** Where quarry looks for weights. */
    weightsDir: config.embed.modelDir ?? cacheModelDir(),
    /** Whether the next index run may download them. */
    download: config.embed.download,
  };
}

/** Installs weights from a local .onnx file or a folder holding one, checked against the pinned hashes. */
export const installModelWeights = installWeights;
