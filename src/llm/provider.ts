import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { type LanguageModel, streamText } from 'ai';
import { createOllama } from 'ollama-ai-provider-v2';
import type { LlmOptions } from '../config/config.ts';
import { QuarryError } from '../errors.ts';
import { apiRoot } from '../net/api-url.ts';
import { contextWindow, knownWindow } from './tokens.ts';
import type { LlmProvider } from './types.ts';

export type { ChatMessage, GenerateOptions, LlmProvider } from './types.ts';

// the SDK's warnings (unknown model names, compatibility modes) are for its developers, not quarry's users
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

interface ProviderSpec {
  /** Where it listens when the config says nothing. */
  baseUrl?: string;
  /** The path its API is served under, added to a base URL given as the bare server (`apiRootOf`). */
  prefix: string;
  /** The environment variable with its key; `optional` when local servers need none. */
  keyEnv?: string;
  keyOptional?: boolean;
  make(model: string, baseURL: string | undefined, apiKey: string | undefined): LanguageModel;
}

const compat =
  (name: string) =>
  (model: string, baseURL: string | undefined, apiKey: string | undefined): LanguageModel =>
    createOpenAICompatible({ name, baseURL: baseURL!, ...(apiKey ? { apiKey } : {}) }).chatModel(model);

const PROVIDERS: Record<string, ProviderSpec> = {
  openai: {
    prefix: 'v1',
    keyEnv: 'OPENAI_API_KEY',
    make: (model, baseURL, apiKey) =>
      createOpenAI({ ...(baseURL ? { baseURL } : {}), ...(apiKey ? { apiKey } : {}) }).chat(model),
  },
  anthropic: {
    prefix: 'v1',
    keyEnv: 'ANTHROPIC_API_KEY',
    make: (model, baseURL, apiKey) =>
      createAnthropic({ ...(baseURL ? { baseURL } : {}), ...(apiKey ? { apiKey } : {}) })(model),
  },
  gemini: {
    prefix: 'v1beta',
    keyEnv: 'GEMINI_API_KEY',
    make: (model, baseURL, apiKey) =>
      createGoogleGenerativeAI({ ...(baseURL ? { baseURL } : {}), ...(apiKey ? { apiKey } : {}) })(model),
  },
  ollama: {
    baseUrl: 'http://127.0.0.1:11434/api',
    prefix: 'api',
    make: (model, baseURL) => createOllama({ ...(baseURL ? { baseURL } : {}) })(model),
  },
  lmstudio: {
    baseUrl: 'http://127.0.0.1:1234/v1',
    prefix: 'v1',
    keyOptional: true,
    make: compat('lmstudio'),
  },
  vllm: { baseUrl: 'http://127.0.0.1:8000/v1', prefix: 'v1', keyOptional: true, make: compat('vllm') },
  llamacpp: {
    baseUrl: 'http://127.0.0.1:8080/v1',
    prefix: 'v1',
    keyOptional: true,
    make: compat('llamacpp'),
  },
  compat: { prefix: 'v1', keyOptional: true, keyEnv: 'OPENAI_API_KEY', make: compat('openai-compatible') },
};
PROVIDERS.google = PROVIDERS.gemini!;

export const PROVIDER_NAMES = [...Object.keys(PROVIDERS), 'gguf'];

/**
 * The API root a provider's SDK appends its endpoints to (`/chat/completions`, `/chat`, `/messages`): a base URL
 * given as the bare server (`http://127.0.0.1:8080`) gets the provider's prefix (`/v1`; Ollama's `/api`, Gemini's
 * `/v1beta`), so that it does not 404; a base with a path (`…/v1`, `…/v1beta/openai`) is the API root as given.
 * One rule with the embedders' and the reranker's URLs (net/api-url.ts).
 */
export function apiRootOf(provider: string, base: string | undefined): string | undefined {
  const prefix = Object.hasOwn(PROVIDERS, provider) ? PROVIDERS[provider]?.prefix : undefined;
  return base && prefix ? apiRoot(base, prefix, { onlyBare: true }) : base;
}

/**
 * The HTTP server a configured model lives on, when it is a local one (ollama, LM Studio, vLLM, llama.cpp, a compat
 * base URL) that `quarry doctor` can ask; undefined for cloud providers and in-process models.
 */
export function modelServerUrl(llm: LlmOptions): string | undefined {
  if (!llm.model) return undefined;
  const i = llm.model.indexOf(':');
  const provider = i > 0 ? llm.model.slice(0, i).toLowerCase() : '';
  if (provider === 'gguf') return undefined;
  const local = ['ollama', 'lmstudio', 'vllm', 'llamacpp', 'compat'];
  if (!local.includes(provider) && !llm.baseUrl) return undefined;
  const base = apiRootOf(
    provider,
    llm.baseUrl ?? (Object.hasOwn(PROVIDERS, provider) ? PROVIDERS[provider]?.baseUrl : undefined),
  );
  if (!base) return undefined;
  // ollama's API root answers /api/tags; OpenAI-compatible servers answer /models
  return provider === 'ollama' ? `${base.replace(/\/$/, '')}/tags` : `${base.replace(/\/$/, '')}/models`;
}

/** Splits `provider:model` (the model may itself hold colons: `ollama:qwen2.5-coder:7b`). */
export function parseModelSpec(spec: string): { provider: string; model: string } {
  const i = spec.indexOf(':');
  if (i <= 0 || i === spec.length - 1)
    throw new QuarryError(
      'BAD_INPUT',
      `model "${spec}" needs a provider: write provider:name, e.g. ollama:qwen2.5-coder or openai:gpt-4o-mini (providers: ${PROVIDER_NAMES.join(', ')})`,
    );
  return { provider: spec.slice(0, i).toLowerCase(), model: spec.slice(i + 1) };
}

/** Opens the configured (or named) model. Fails with a one-line error that says what to set. */
export async function openLlm(
  llm: LlmOptions,
  spec = llm.model,
  env: NodeJS.ProcessEnv = process.env,
): Promise<LlmProvider> {
  if (!spec)
    throw new QuarryError(
      'BAD_CONFIG',
      'no model configured: pass --model provider:name (e.g. ollama:qwen2.5-coder), set QUARRY_MODEL, or [llm] model in quarry.toml; --dry-run prints the prompt without one',
    );
  const { provider, model } = parseModelSpec(spec);
  const window = contextWindow(model, llm.contextWindow);
  if (provider === 'gguf') {
    const { openGguf } = await import('./gguf.ts');
    return openGguf(model, llm);
  }
  // own keys only: `constructor:x` must be an unknown provider, not Object's constructor
  const p = Object.hasOwn(PROVIDERS, provider) ? PROVIDERS[provider] : undefined;
  if (!p)
    throw new QuarryError(
      'BAD_INPUT',
      `unknown model provider "${provider}": use one of ${PROVIDER_NAMES.join(', ')}`,
    );
  const baseURL = apiRootOf(provider, llm.baseUrl ?? p.baseUrl);
  if (provider === 'compat' && !baseURL)
    throw new QuarryError('BAD_CONFIG', 'compat: models need a server: set llm.base_url or QUARRY_LLM_URL');
  const keyEnv = llm.apiKeyEnv ?? p.keyEnv;
  const apiKey = llm.apiKey ?? (keyEnv ? env[keyEnv] : undefined);
  if (keyEnv && !apiKey && !p.keyOptional && !llm.baseUrl)
    throw new QuarryError(
      'BAD_CONFIG',
      `${provider} needs an API key: set ${keyEnv} (or llm.api_key in ~/.config/quarry/config.toml)`,
    );
  const languageModel = p.make(model, baseURL, apiKey ?? (llm.baseUrl ? 'quarry-local' : undefined));
  return {
    id: `${provider}:${model}`,
    contextWindow: window,
    ...(!llm.contextWindow && !knownWindow(model) ? { windowGuessed: true } : {}),
    async *stream(messages, options = {}) {
      const system = messages
        .filter((m) => m.role === 'system')
        .map((m) => m.content)
        .join('\n\n');
      const rest = messages.filter((m) => m.role !== 'system') as Array<{
        role: 'user' | 'assistant';
        content: string;
      }>;
      const result = streamText({
        model: languageModel,
        ...(system ? { system } : {}),
        messages: rest,
        temperature: options.temperature ?? llm.temperature,
        ...(options.maxOutputTokens ? { maxOutputTokens: options.maxOutputTokens } : {}),
        maxRetries: llm.retries,
        timeout: llm.timeoutMs,
        ...(options.signal ? { abortSignal: options.signal } : {}),
        // errors arrive in the stream and are thrown from there; the SDK's default logs them to the console
        onError: () => {},
      });
      try {
        for await (const part of result.fullStream) {
          if (part.type === 'text-delta') yield part.text;
          else if (part.type === 'error') throw part.error;
        }
      } catch (err) {
        throw llmError(provider, model, baseURL, err);
      }
    },
  };
}

/** One line that says what went wrong with the model server and what to do. */
export function llmError(
  provider: string,
  model: string,
  baseURL: string | undefined,
  err: unknown,
): QuarryError {
  if (err instanceof QuarryError) return err;
  const e = err as {
    name?: string;
    message?: string;
    statusCode?: number;
    lastError?: unknown;
    cause?: { code?: string };
    reason?: string;
  };
  const last = (e.lastError as typeof e | undefined) ?? e;
  const status = last.statusCode;
  const where = baseURL ?? provider;
  if (e.name === 'AbortError' || /abort|timeout/i.test(last.message ?? ''))
    return new QuarryError(
      'LLM',
      `${provider}:${model} did not answer in time: retry, or raise llm.timeout_ms`,
      {
        cause: err,
      },
    );
  if (status === 401 || status === 403)
    return new QuarryError(
      'LLM',
      `${provider} refused the API key (${status}): check the key in its environment variable`,
      {
        cause: err,
      },
    );
  if (status === 404) {
    // a 404 that names no model is a wrong address, not a wrong model
    const body = `${last.message ?? ''} ${(last as { responseBody?: string }).responseBody ?? ''}`;
    if (!/model/i.test(body) && baseURL)
      return new QuarryError(
        'LLM',
        `${provider} has no chat API at ${baseURL} (404): check llm.base_url (OpenAI-compatible servers serve under /v1)`,
        { cause: err },
      );
    return new QuarryError(
      'LLM',
      `${provider} does not know model "${model}" (404): check the name (for ollama: ollama pull ${model})`,
      {
        cause: err,
      },
    );
  }
  if (status === 429)
    return new QuarryError(
      'LLM',
      `${provider} is rate-limiting (429) after retries: wait and try again, or raise llm.retries`,
      {
        cause: err,
      },
    );
  if (status)
    return new QuarryError('LLM', `${provider} answered ${status}: ${(last.message ?? '').split('\n')[0]}`, {
      cause: err,
    });
  const msg = `${last.message ?? err}`;
  if (
    /ECONNREFUSED|fetch failed|Cannot connect|ENOTFOUND|connect/i.test(msg) ||
    last.cause?.code === 'ECONNREFUSED'
  )
    return new QuarryError(
      'LLM',
      `cannot reach ${provider} at ${where}: start the server or set llm.base_url`,
      {
        cause: err,
      },
    );
  return new QuarryError('LLM', `${provider}:${model} failed: ${msg.split('\n')[0]}`, { cause: err });
}
