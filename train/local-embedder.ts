import { basename } from 'node:path';
import { createLocalEmbedder, type LocalEmbedder } from '../src/embed/local.ts';
import { findWeights, weightsFileIn } from '../src/embed/models.ts';

/**
 * quarry's all-MiniLM-L6-v2, or a model of one's own in ONNX (`modelDir` with model.onnx and tokenizer.json, run as
 * `embed.provider = "onnx"` runs it): the embedder whose token ids and cache id the GPU path uses.
 */
export async function openLocalEmbedder(modelDir?: string, model?: string): Promise<LocalEmbedder> {
  const weights = modelDir ? weightsFileIn(modelDir) : findWeights();
  if (!weights) throw new Error('no model weights: run scripts/setup.sh, or pass a --model-dir with model.onnx');
  return createLocalEmbedder(
    modelDir ? { weights, custom: { dir: modelDir, name: model ?? basename(modelDir) } } : { weights },
  );
}
