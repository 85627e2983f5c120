import type { QuarryConfig } from '../config/config.ts';
import type { LlmProvider } from '../llm/provider.ts';
import { createHttpReranker, type Reranker } from './rerank.ts';

export type { Reranker } from './rerank.ts';

/**
 * What an owner of rerankers (an opened project) keeps between searches: the chat model its LLM reranker ranks with,
 * opened once (an in-process model loads its weights once) and opened again only when the spec it was opened for
 * changes.
 */
export interface RerankerKeep {
  llm?: { spec: string | undefined; llm: LlmProvider };
}

export interface OpenRerankerOptions {
  /** Where the LLM reranker's model is kept between searches (see RerankerKeep). */
  keep: RerankerKeep;
  /** Told when the LLM's ranking could not be used, and why (the fused order then stands). */
  onFallback?: (reason: string) => void;
}

/**
 * The reranker `search.rerank` asks for, or undefined for none: the configured chat model (or search.rerank.model)
 * ranking the first candidates listwise, or a cross-encoder behind an HTTP server (`tei`, `v1`) when a URL is set.
 */
export async function openReranker(
  config: QuarryConfig,
  options: OpenRerankerOptions,
): Promise<Reranker | undefined> {
  const rr = config.search.rerank;
  if (rr.protocol === 'llm') {
    const spec = rr.model ?? config.llm.model;
    let kept = options.keep.llm;
    if (!kept || kept.spec !== spec) {
      const { openLlm } = await import('../llm/provider.ts');
      kept = { spec, llm: await openLlm(config.llm, spec) };
      options.keep.llm = kept;
    }
    const { createLlmReranker } = await import('./llm.ts');
    return createLlmReranker(kept.llm, {
      ...(rr.budget ? { budget: rr.budget } : {}),
      ...(rr.timeoutMs ? { timeoutMs: rr.timeoutMs } : {}),
      ...(options.onFallback ? { onFallback: options.onFallback } : {}),
    });
  }
  if (rr.protocol !== 'none' && rr.url)
    return createHttpReranker({
      protocol: rr.protocol,
      baseUrl: rr.url,
      ...(rr.model ? { model: rr.model } : {}),
    });
  return undefined;
}
