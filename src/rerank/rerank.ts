import { QuarryError } from '../errors.ts';
import { apiUrl } from '../net/api-url.ts';
import { fetchWithRetry } from '../net/fetch-retry.ts';

/** A second-stage scorer: reads the query and each candidate together (a cross-encoder) and scores them. */
export interface Reranker {
  readonly id: string;
  /**
   * One score per text, higher is better, in input order. `labels` name each text (`path:start-end`) for rerankers
   * that read them (the LLM's listwise prompt); cross-encoders read the text alone. Undefined: no opinion (the
   * reranker fell back), and the fused order stands untouched.
   */
  rerank(query: string, texts: string[], labels?: string[]): Promise<number[] | undefined>;
}

export type RerankProtocol = 'tei' | 'v1';

export interface HttpRerankerOptions {
  /** `tei`: Text Embeddings Inference `POST /rerank`; `v1`: the Jina/Cohere-style `POST /v1/rerank` that llama.cpp
   * server, vLLM and LocalAI also speak. */
  protocol: RerankProtocol;
  baseUrl: string;
  model?: string;
  apiKey?: string;
  timeoutMs?: number;
  retries?: number;
  backoffMs?: number;
}

/** A cross-encoder behind an HTTP server. Retries 429/5xx; says what to fix when the server is away. */
export function createHttpReranker(options: HttpRerankerOptions): Reranker {
  const base = options.baseUrl.replace(/\/+$/, '');
  const retries = options.retries ?? 3;
  const backoff = options.backoffMs ?? 300;
  return {
    id: `${options.protocol}:${options.model ?? base}`,
    async rerank(query, texts) {
      if (!texts.length) return [];
      const [url, body] =
        options.protocol === 'tei'
          ? [`${base}/rerank`, { query, texts, truncate: true }]
          : [
              apiUrl(base, 'v1', 'rerank'),
              { model: options.model, query, documents: texts, top_n: texts.length },
            ];
      let res: Response;
      try {
        res = await fetchWithRetry(
          url,
          {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
            },
            body: JSON.stringify(body),
          },
          { retries, backoffMs: backoff, timeoutMs: options.timeoutMs ?? 30_000 },
        );
      } catch (err) {
        const code = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
        throw new QuarryError(
          'IO',
          `cannot reach the reranker at ${base} (${code}): start it, or set search.rerank = "none"`,
          { cause: err },
        );
      }
      if (!res.ok) {
        const detail = (await res.text()).replace(/\s+/g, ' ').slice(0, 200);
        throw new QuarryError(
          'IO',
          `the reranker at ${base} failed with HTTP ${res.status}${detail ? `: ${detail}` : ''}`,
        );
      }
      const json = (await res.json()) as unknown;
      const rows =
        options.protocol === 'tei'
          ? (json as Array<{ index: number; score: number }>)
          : (json as { results: Array<{ index: number; relevance_score: number }> }).results.map((r) => ({
              index: r.index,
              score: r.relevance_score,
            }));
      const scores = new Array<number>(texts.length).fill(Number.NEGATIVE_INFINITY);
      for (const r of rows) if (r.index >= 0 && r.index < texts.length) scores[r.index] = r.score;
      return scores;
    },
  };
}
