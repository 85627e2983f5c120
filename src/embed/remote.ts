import { QuarryError } from '../errors.ts';
import { apiUrl } from '../net/api-url.ts';
import { fetchWithRetry } from '../net/fetch-retry.ts';
import { CODE_QUERY } from './presets.ts';
import { type Embedder, type EmbedKind, l2normalize } from './types.ts';

export type RemoteProvider = 'ollama' | 'openai' | 'gemini';

export interface RemoteEmbedderOptions {
  provider: RemoteProvider;
  model: string;
  /** Server root, with or without the API's prefix (`/api`, `/v1`, `/v1beta`: never doubled, net/api-url.ts).
   * Defaults: ollama http://127.0.0.1:11434, openai https://api.openai.com, gemini
   * https://generativelanguage.googleapis.com */
  baseUrl?: string;
  /** The API key (taken from the environment by the caller; never from a file in the project). */
  apiKey?: string;
  /** Texts per request. Defaults: ollama 32, openai 96, gemini 96. */
  batchSize?: number;
  /** Per-request timeout, ms. Default 60000. */
  timeoutMs?: number;
  /** Retries on 429, 5xx and network errors, with exponential backoff. Default 4. */
  retries?: number;
  /** Longest input in tokens; longer text is cut (by an estimate of 4 characters a token). Default 2048. */
  maxTokens?: number;
  /** Prepended to queries / documents, for models trained with them (nomic: `search_query: `). */
  queryPrefix?: string;
  documentPrefix?: string;
  /** Base delay of the backoff, ms. Default 500. */
  backoffMs?: number;
}

const DEFAULT_URLS: Record<RemoteProvider, string> = {
  ollama: 'http://127.0.0.1:11434',
  openai: 'https://api.openai.com',
  gemini: 'https://generativelanguage.googleapis.com',
};

const KEY_HINT: Record<RemoteProvider, string> = {
  ollama: 'check embed.base_url',
  openai: 'set OPENAI_API_KEY (or embed.api_key_env)',
  gemini: 'set GEMINI_API_KEY (or embed.api_key_env)',
};

/** Prefixes that known models expect; the config can always set its own. */
export function defaultPrefixes(model: string): { query: string; document: string } {
  // nomic-embed-code (and CodeRankEmbed) were trained with one query instruction and bare code
  if (/nomic-embed-code|coderank/i.test(model)) return { query: CODE_QUERY, document: '' };
  if (/nomic-embed/i.test(model)) return { query: 'search_query: ', document: 'search_document: ' };
  return { query: '', document: '' };
}

interface Request {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  parse: (json: unknown) => number[][];
}

function request(
  o: Required<Pick<RemoteEmbedderOptions, 'provider' | 'model'>> & RemoteEmbedderOptions,
  base: string,
  texts: string[],
  kind: EmbedKind,
): Request {
  const auth: Record<string, string> = o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {};
  switch (o.provider) {
    case 'ollama':
      return {
        url: apiUrl(base, 'api', 'embed'),
        headers: auth,
        body: { model: o.model, input: texts, truncate: true },
        parse: (j) => (j as { embeddings: number[][] }).embeddings,
      };
    case 'openai':
      return {
        url: apiUrl(base, 'v1', 'embeddings'),
        headers: auth,
        body: { model: o.model, input: texts },
        parse: (j) =>
          [...(j as { data: Array<{ index: number; embedding: number[] }> }).data]
            .sort((a, b) => a.index - b.index)
            .map((d) => d.embedding),
      };
    case 'gemini': {
      const name = o.model.startsWith('models/') ? o.model : `models/${o.model}`;
      return {
        url: apiUrl(base, 'v1beta', `${name}:batchEmbedContents`),
        headers: o.apiKey ? { 'x-goog-api-key': o.apiKey } : {},
        body: {
          requests: texts.map((text) => ({
            model: name,
            content: { parts: [{ text }] },
            taskType: kind === 'query' ? 'RETRIEVAL_QUERY' : 'RETRIEVAL_DOCUMENT',
          })),
        },
        parse: (j) => (j as { embeddings: Array<{ values: number[] }> }).embeddings.map((e) => e.values),
      };
    }
  }
}

/**
 * An embedding service over HTTP: Ollama (`/api/embed`), any OpenAI-compatible server (`/v1/embeddings`: OpenAI,
 * LM Studio, vLLM, llama.cpp, TEI) or Gemini (`batchEmbedContents`). Batches requests, retries 429 and 5xx with
 * exponential backoff (honouring Retry-After), times out, and says what to fix when the service is unreachable or
 * refuses the key. The first call probes the service for the vector size.
 */
export async function createRemoteEmbedder(options: RemoteEmbedderOptions): Promise<Embedder> {
  const o = { ...options };
  const base = (o.baseUrl ?? DEFAULT_URLS[o.provider]).replace(/\/+$/, '');
  const batchSize = o.batchSize ?? (o.provider === 'ollama' ? 32 : 96);
  const timeoutMs = o.timeoutMs ?? 60_000;
  const retries = o.retries ?? 4;
  const backoff = o.backoffMs ?? 500;
  const maxTokens = o.maxTokens ?? 2048;
  const prefixes = defaultPrefixes(o.model);
  const queryPrefix = o.queryPrefix ?? prefixes.query;
  const documentPrefix = o.documentPrefix ?? prefixes.document;
  const label = `${o.provider} at ${base}`;

  const call = async (texts: string[], kind: EmbedKind): Promise<number[][]> => {
    const req = request({ ...o, provider: o.provider, model: o.model }, base, texts, kind);
    let res: Response;
    try {
      res = await fetchWithRetry(
        req.url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...req.headers },
          body: JSON.stringify(req.body),
        },
        { retries, backoffMs: backoff, timeoutMs },
      );
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
      throw new QuarryError(
        'IO',
        `cannot reach ${label} (${cause}): ${o.provider === 'ollama' ? 'start it with `ollama serve`, or ' : ''}check embed.base_url`,
        { cause: err },
      );
    }
    if (res.ok) {
      const vectors = req.parse(await res.json());
      if (!Array.isArray(vectors) || vectors.length !== texts.length)
        throw new QuarryError(
          'IO',
          `${label} answered ${vectors?.length ?? 'no'} vectors for ${texts.length} texts`,
        );
      return vectors;
    }
    const detail = (await res.text()).replace(/\s+/g, ' ').slice(0, 200);
    if (res.status === 401 || res.status === 403)
      throw new QuarryError(
        'BAD_CONFIG',
        `${label} refused the request (${res.status}): ${KEY_HINT[o.provider]}`,
      );
    if (res.status === 404)
      throw new QuarryError(
        'BAD_CONFIG',
        `${label} has no model "${o.model}" (404${detail ? `: ${detail}` : ''}): ${o.provider === 'ollama' ? `run \`ollama pull ${o.model}\`` : 'check embed.model'}`,
      );
    throw new QuarryError('IO', `${label} failed with HTTP ${res.status}${detail ? `: ${detail}` : ''}`);
  };

  const cut = (t: string) => t.slice(0, maxTokens * 4);
  const embed = async (texts: string[], kind: EmbedKind): Promise<Float32Array[]> => {
    const prefix = kind === 'query' ? queryPrefix : documentPrefix;
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += batchSize) {
      const vectors = await call(
        texts.slice(i, i + batchSize).map((t) => prefix + cut(t)),
        kind,
      );
      for (const v of vectors) out.push(l2normalize(Float32Array.from(v)));
    }
    return out;
  };

  const [probe] = await embed(['dimension probe'], 'document');
  return {
    id: `${o.provider}:${o.model}`,
    dimension: probe!.length,
    maxTokens,
    countTokens: (t) => Math.min(maxTokens, Math.ceil(t.length / 4)),
    embed,
    close: async () => {},
  };
}
